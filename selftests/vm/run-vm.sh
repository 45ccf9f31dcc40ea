#!/usr/bin/env bash
# Boot one of Debian's test kernels under qemu (TCG) with a busybox
# initramfs, run a command in it as root, and report.
#
#   selftests/vm/run-vm.sh [--arch arm64] --kernel SERIES --payload DIR [--payload DIR2 ...]
#       [--module FILE] [--host-file PATH ...] [--kmod NAME ...]
#       [--cmd "sh /payload/x/guest.sh"] [--append "kernel args"]
#       [--smp 2] [--mem 1G] [--timeout S] [--out HOSTDIR] [--log FILE]
#       [--result FILE] [--quiet] [--nmi-every MS]
#
# SERIES: 5.10, 6.1 or 6.12 (Debian's, scripts/fetch-kernels.sh), or debug
# (scripts/build-debug-kernel.sh's KASAN/lockdep kernel, built beforehand).
#
# --arch arm64 (or EMBER_VM_ARCH=arm64): Debian's arm64 6.1 or 6.12 under
# qemu-system-aarch64 -M virt -cpu max (TCG), console on ttyAMA0, with the
# static busybox and Debian programs of scripts/fetch-arm64-guest.sh. The
# closure of an ELF is then read with readelf (the host's ldd cannot run
# aarch64 programs) and looked up in the arm64 guest root, the arm64
# sysroot and the cross toolchain's libc; --host-file PATH names a file of
# the guest root (e.g. /usr/bin/xz), or a host file when it has none. /out
# needs the virtio disk (virt has no second serial port).
#
# EMBER_ARM64_GUEST_SET=bench: the arm64 guest root with bpftrace too
# (scripts/fetch-arm64-guest.sh --set bench; bench/bpf-floor.sh --arm64-vm).
#
# EMBER_VM_LOCK=FILE: flock FILE while qemu runs (one VM at a time on a
# shared machine; the initramfs is built outside the lock).
#
# Guest: each payload DIR appears as /payload/<basename of DIR>, with the
# shared-library closure (ldd) of every ELF in it; --module FILE appears as
# /payload/ember.ko; --host-file PATH copies a host file (plus closure) to the
# same path in the guest (e.g. /usr/bin/bash, /usr/sbin/bpftool); --kmod NAME
# loads that module of the booted image (and its dependencies) before the
# command. See selftests/vm/README.md for the guest environment.
#
# --nmi-every MS: from when the guest's console shows "ember-nmi: ready"
# until it shows "ember-nmi: done", inject an NMI into every vCPU each MS
# milliseconds through the qemu monitor (TCG has no PMU, so this is how
# the NMI sampling path is run: selftests/kmod/guest-nmi.sh).
#
# Output: the command's output on stdout (the console log with kernel
# messages goes to --log, default a temporary file that is kept and named
# on failure); files the guest leaves in /out are copied to --out HOSTDIR
# (a raw tar on a virtio disk; base64 on ttyS1 as the fallback).
#
# Exit status: the command's exit status when the kernel log is clean;
#   124  timeout (the VM was killed)
#   125  harness or boot failure (no exit status came back, e.g. a panic)
#   126  kernel problem in the guest log (WARNING, BUG:, Oops, ...), even
#        when the command succeeded
# Every failure reason is also printed on stderr as "run-vm: ..." and, with
# --result FILE, as key=value lines (status, exit, timeout, kernel_problems,
# boot_s, total_s) so callers can report each aspect as its own test.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
FETCH=$TOP/scripts/fetch-kernels.sh

# EMBER_VM_APPEND: kernel arguments for every guest (e.g. kfence.sample_interval=1)
nmi_every=""
series="" cmd="" append="${EMBER_VM_APPEND:+ $EMBER_VM_APPEND}" smp=2 mem=1G timeout_s=120 out_dir="" log="" result="" quiet=0
module=""
arch=${EMBER_VM_ARCH:-x86_64}
payloads=() host_files=() kmods=()

die() { echo "run-vm: $*" >&2; exit 125; }
usage() { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) series=$2; shift 2 ;;
	--arch) arch=$2; shift 2 ;;
	--payload) payloads+=("$2"); shift 2 ;;
	--module) module=$2; shift 2 ;;
	--host-file) host_files+=("$2"); shift 2 ;;
	--kmod) kmods+=("$2"); shift 2 ;;
	--cmd) cmd=$2; shift 2 ;;
	--append) append="$append $2"; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--out) out_dir=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--result) result=$2; shift 2 ;;
	--quiet) quiet=1; shift ;;
	--nmi-every) nmi_every=$2; shift 2 ;;
	-h | --help) usage 0 ;;
	*) echo "run-vm: unknown argument '$1'" >&2; usage 125 >&2 ;;
	esac
done
[ -n "$series" ] || die "--kernel SERIES is required (5.10, 6.1, 6.12 or debug)"
fetch=("$FETCH")
case $arch in
x86_64 | amd64 | x86) arch=x86_64 ;;
arm64 | aarch64)
	arch=arm64
	fetch=("$FETCH" --arch arm64)
	case $series in
	6.1 | 6.12 | 6.12-rt) ;;
	*) die "--arch arm64: --kernel 6.1, 6.12 or 6.12-rt (Debian's arm64 kernels)" ;;
	esac
	[ -z "$nmi_every" ] || die "--nmi-every: x86-64 only (the qemu monitor's nmi)"
	[ "${EMBER_VM_OUT_VIA:-disk}" != serial ] || die "EMBER_VM_OUT_VIA=serial: x86-64 only (virt has one serial port)"
	;;
*) die "unknown --arch '$arch' (x86_64 or arm64)" ;;
esac
# "debug": the KASAN/lockdep/kmemleak/UBSAN 6.12 that
# scripts/build-debug-kernel.sh built (same query options; never built here)
case $series in
debug) fetch=("$TOP/scripts/build-debug-kernel.sh") ;;
# the same with PREEMPT_RT (EMBER_DEBUG_KERNEL_VARIANT=rt)
debug-rt) export EMBER_DEBUG_KERNEL_VARIANT=rt; fetch=("$TOP/scripts/build-debug-kernel.sh") ;;
esac
[ ${#payloads[@]} -gt 0 ] || [ -n "$cmd" ] || die "--payload DIR or --cmd is required"
for p in "${payloads[@]}"; do [ -d "$p" ] || die "payload $p is not a directory"; done
[ -z "$module" ] || [ -f "$module" ] || die "module $module not found"
if [ -z "$cmd" ]; then
	cmd="sh /payload/$(basename "$(cd "${payloads[0]}" && pwd)")/guest.sh"
fi
QEMU=qemu-system-x86_64
[ "$arch" = x86_64 ] || QEMU=qemu-system-aarch64
command -v $QEMU >/dev/null || die "$QEMU missing: run scripts/install-deps.sh"
command -v cpio >/dev/null || die "cpio missing: run scripts/install-deps.sh"
if [ "$arch" = arm64 ]; then
	# the guest's user space: Debian's arm64 busybox-static and programs
	# EMBER_ARM64_GUEST_SET=bench: the root with bpftrace (bench/)
	GUEST_ROOT=$("$TOP/scripts/fetch-arm64-guest.sh" \
		${EMBER_ARM64_GUEST_SET:+--set "$EMBER_ARM64_GUEST_SET"} --path) ||
		die "cannot fetch the arm64 guest user space (scripts/fetch-arm64-guest.sh)"
	BUSYBOX=$GUEST_ROOT/bin/busybox
	SYSROOT=${EMBER_CACHE:-$TOP/.cache}/sysroot-arm64
	# where an aarch64 ELF's libraries are looked up, in this order
	LIB_ROOTS=("$GUEST_ROOT" "$SYSROOT" /usr/aarch64-linux-gnu)
else
	BUSYBOX=$(command -v busybox || true)
	if [ -z "$BUSYBOX" ] || ! file -L "$BUSYBOX" | grep -q 'statically linked'; then
		die "a static busybox is needed: run scripts/install-deps.sh (busybox-static)"
	fi
fi

# The uncompressed ELF boots through PVH and skips the in-guest
# decompression, seconds under TCG; the bzImage is the fallback. arm64:
# Debian's vmlinuz is already an uncompressed Image that qemu loads as is.
vmlinuz=${EMBER_VM_VMLINUZ:-}
[ -n "$vmlinuz" ] || [ "$arch" != x86_64 ] || vmlinuz=$("${fetch[@]}" --vmlinux "$series" 2>/dev/null) || true
[ -n "$vmlinuz" ] || vmlinuz=$("${fetch[@]}" --vmlinuz "$series") || die "cannot fetch kernel $series"
moddir=$("${fetch[@]}" --modules-dir "$series")
release=$("${fetch[@]}" --version "$series")

work=$(mktemp -d "${TMPDIR:-/tmp}/ember-vm.XXXXXX")
keep_log=0
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	rm -rf "$work"
}
trap cleanup EXIT
[ -n "$log" ] || { log=$(mktemp "${TMPDIR:-/tmp}/ember-vm-$series${arch/x86_64/}.XXXXXX.log"); keep_log=1; }
mkdir -p "$(dirname "$log")"

# ------------------------------------------------------------ initramfs
root=$work/root
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,root,home/user,out,payload,lib/modules}
cp "$BUSYBOX" "$root/bin/busybox"

# Copy a host file to the same path in the guest (following symlinks). The
# modification time stays: python checks its .pyc files against it.
copy_to_guest() {
	local src=$1 dst=$root$1
	[ -e "$dst" ] && return 0
	mkdir -p "$(dirname "$dst")"
	cp -L --preserve=timestamps "$src" "$dst"
}

# The shared libraries an ELF needs, as absolute host paths (none when it
# is static or not a dynamic executable/library, e.g. a .ko).
elf_closure() {
	if [ "$arch" = arm64 ]; then
		a64_closure "$1"
		return
	fi
	ldd "$1" 2>/dev/null | sed -nE 's/^\s*(\S+ => )?(\/\S+) \(0x[0-9a-f]+\)$/\2/p' || true
}

# arm64: a file of the guest's user space, by its guest path, found in the
# guest root, the sysroot or the cross toolchain (its lib/ is the guest's
# /lib/aarch64-linux-gnu): the host path, or nothing.
a64_find() {
	local p=$1 r c
	for r in "${LIB_ROOTS[@]}"; do
		# Debian 12's packages still ship /bin and /lib (merged at install)
		for c in "$r$p" "$r/usr$p" "$r${p#/usr}" "$r/lib/${p##*/}"; do
			[ -e "$c" ] && { echo "$c"; return 0; }
		done
	done
	return 1
}
# arm64: the interpreter and every DT_NEEDED library, recursively, as
# "GUESTPATH HOSTPATH" lines. Libraries go to /lib/aarch64-linux-gnu (a
# default directory of Debian's arm64 ld.so), RUNPATH/$ORIGIN ones are
# the payload's own and are already in place.
a64_closure() {
	local todo=("$1") seen=" " f lib host interp
	interp=$(readelf -lW "$1" 2>/dev/null | sed -nE 's/.*Requesting program interpreter: ([^]]+)\]/\1/p')
	if [ -n "$interp" ]; then
		host=$(a64_find "$interp") || die "arm64: interpreter $interp of $1 not found in ${LIB_ROOTS[*]}"
		echo "$interp $host"
	fi
	while [ ${#todo[@]} -gt 0 ]; do
		f=${todo[0]}
		todo=("${todo[@]:1}")
		while IFS= read -r lib; do
			[[ $seen == *" $lib "* ]] && continue
			seen="$seen$lib "
			# the payload's own libraries (RUNPATH $ORIGIN) travel with it
			[ ! -e "$(dirname "$1")/$lib" ] || continue
			host=$(a64_find "/lib/aarch64-linux-gnu/$lib") ||
				host=$(a64_find "/usr/lib/aarch64-linux-gnu/$lib") ||
				die "arm64: library $lib (needed by $f) not found in ${LIB_ROOTS[*]}"
			echo "/lib/aarch64-linux-gnu/$lib $host"
			todo+=("$host")
		done < <(readelf -dW "$f" 2>/dev/null | sed -nE 's/.*\(NEEDED\).*\[([^]]+)\]/\1/p')
	done
}

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = "177ELF" ]; }

add_closure_of() {
	local f=$1 lib
	is_elf "$f" || return 0
	if [ "$arch" = arm64 ]; then
		local gp hp
		a64_closure "$f" >"$work/closure" || exit 125
		while read -r gp hp; do
			[ -e "$root$gp" ] && continue
			mkdir -p "$(dirname "$root$gp")"
			cp -L --preserve=timestamps "$hp" "$root$gp"
		done <"$work/closure"
		return 0
	fi
	while IFS= read -r lib; do
		[ -n "$lib" ] && copy_to_guest "$lib"
	done < <(elf_closure "$f")
}

for p in "${payloads[@]}"; do
	name=$(basename "$(cd "$p" && pwd)")
	[ ! -e "$root/payload/$name" ] || die "two payloads named $name"
	cp -rL "$p" "$root/payload/$name"
	while IFS= read -r -d '' f; do
		add_closure_of "$f"
	done < <(find "$root/payload/$name" -type f -print0)
done
[ -z "$module" ] || cp "$module" "$root/payload/ember.ko"
for f in "${host_files[@]}"; do
	if [ "$arch" = arm64 ] && hf=$(a64_find "$f"); then
		# the arm64 guest root's file (e.g. /usr/bin/xz), not the host's
		if [ ! -e "$root$f" ]; then
			mkdir -p "$(dirname "$root$f")"
			cp -L --preserve=timestamps "$hf" "$root$f"
		fi
		add_closure_of "$root$f"
		continue
	fi
	[ -e "$f" ] || die "host file $f not found"
	if [ "$arch" = arm64 ] && is_elf "$f" && ! file -L "$f" | grep -q 'ARM aarch64'; then
		die "--host-file $f: not in the arm64 guest root and the host's is not an aarch64 program (add its Debian package to scripts/fetch-arm64-guest.sh)"
	fi
	copy_to_guest "$f"
	add_closure_of "$f"
done

# Image modules asked for: with dependencies (modules.dep), decompressed on
# the host because busybox insmod does not read .ko.xz. Load order: deps
# first, as modprobe would.
kmod_list=$work/kmods
: >"$kmod_list"
add_kmod() {
	local name=$1 line path deps d
	# Built into this kernel (e.g. virtio_pci on 6.12): nothing to load.
	grep -qE "(^|/)${name//[-_]/[-_]}\.ko$" "$moddir/modules.builtin" 2>/dev/null && return 0
	line=$(grep -E "(^|/)${name//[-_]/[-_]}\.ko(\.xz|\.zst|\.gz)?:" "$moddir/modules.dep" | head -n 1) ||
		die "kernel module $name not found in $moddir/modules.dep"
	path=${line%%:*}
	deps=${line#*:}
	for d in $deps; do
		add_kmod "$(basename "$d" | sed -E 's/\.ko(\.xz|\.zst|\.gz)?$//')"
	done
	grep -qx "$path" "$kmod_list" && return 0
	mkdir -p "$root/lib/modules/$release/$(dirname "$path")"
	case $path in
	*.xz) xz -dc "$moddir/$path" >"$root/lib/modules/$release/${path%.xz}" ;;
	*.zst) zstd -qdc "$moddir/$path" >"$root/lib/modules/$release/${path%.zst}" ;;
	*.gz) gzip -dc "$moddir/$path" >"$root/lib/modules/$release/${path%.gz}" ;;
	*) cp "$moddir/$path" "$root/lib/modules/$release/$path" ;;
	esac
	echo "$path" >>"$kmod_list"
}
# /out travels on a virtio disk (raw tar, MB/s) when the image's signed
# virtio modules load; the serial port (base64, ~60 KB/s under TCG) is the
# fallback the guest uses when /dev/vda does not appear.
out_disk=""
if [ -n "$out_dir" ] && [ "${EMBER_VM_OUT_VIA:-disk}" != serial ]; then
	out_disk=$work/out.img
	truncate -s "${EMBER_VM_OUT_SIZE:-512M}" "$out_disk"
	kmods=(virtio_pci virtio_blk "${kmods[@]}")
fi
for m in "${kmods[@]}"; do add_kmod "$m"; done
sed -E "s|^|/lib/modules/$release/|; s/\.(xz|zst|gz)$//" "$kmod_list" >"$root/etc/ember-kmods"

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
user:x:1000:1000:unprivileged test user:/home/user:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
user:x:1000:
nogroup:x:65534:
EOF
echo "ember-vm" >"$root/etc/hostname"

printf '%s\n' "$cmd" >"$root/etc/ember-cmd"
cat >"$root/etc/ember-env" <<EOF
export EMBER_VM=1
export EMBER_VM_KERNEL='$series'
export EMBER_VM_ARCH='$arch'
export EMBER_VM_RELEASE='$release'
export EMBER_OUT=/out
export EMBER_VM_OUT=$([ -n "$out_dir" ] && echo 1)
export EMBER_MODULE=$([ -n "$module" ] && echo /payload/ember.ko)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
EOF

# Run a command as the unprivileged user: as-user CMD [ARGS...]
mkdir -p "$root/usr/local/bin"
cat >"$root/usr/local/bin/as-user" <<'EOF'
#!/bin/sh
# as-user CMD [ARGS...]: run CMD as uid/gid 1000 ("user"). Root's su needs
# no password; busybox su would parse CMD's options, so quote the words
# into one -c string.
cd /home/user 2>/dev/null || cd /tmp
line=exec
for a in "$@"; do
	line="$line '$(printf '%s' "$a" | sed "s/'/'\\\\''/g")'"
done
exec su -s /bin/sh -c "$line" user
EOF
chmod +x "$root/usr/local/bin/as-user"

cp "$HERE/guest-init.sh" "$root/init"
chmod +x "$root/init"

(cd "$root" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) >"$work/initrd.cpio"

# ----------------------------------------------------------------- boot
# Console on ttyS0 (a file), /out archive on ttyS1 (another file), so kernel
# messages can never corrupt the archive. No network device, no display.
console=$work/console.log
outser=$work/out.b64
: >"$console"
: >"$outser"
# cryptomgr.notests: the crypto self-tests are a third of the kernel's
# initcall time under TCG (~1.2 s) and test nothing of ours; module
# signature checks still work (29-vm-harness's locked boot proves it).
#
# thread=single: multi-threaded TCG can run a stale translation of kernel
# text another vCPU has just patched, so a guest that flips a static key
# (every tracepoint attach and detach: ember's, BPF's, ftrace's) can execute
# a leftover int3 and die with "Oops: int3" at the patch site (reproduced
# on 6.12 without ember, toggling sched_switch through tracefs: see
# selftests/vm/README.md). One TCG thread for all vCPUs keeps x86's
# cross-modifying-code guarantee; EMBER_VM_TCG_THREAD=multi brings the old
# mode back for experiments, never for verdicts.
#
# arm64: -M virt with -cpu max (PAC, BTI, like recent hardware) and its one
# PL011 UART (ttyAMA0); the /out disk sits on virt's PCIe bus as on x86.
# pauth-impdef=on: qemu computes PAC with an implementation-defined hash
# instead of the architected QARMA5, which under TCG costs several times
# the boot time (the kernel signs every return address); the guest sees
# the same PAC feature and the same mask. EMBER_VM_CPU overrides the model.
if [ "$arch" = arm64 ]; then
	qemu_args=(
		-M virt -cpu "${EMBER_VM_CPU:-max,pauth-impdef=on}"
		-accel "tcg,thread=${EMBER_VM_TCG_THREAD:-single}" -nodefaults -display none -no-reboot
		-m "$mem" -smp "$smp"
		-kernel "$vmlinuz" -initrd "$work/initrd.cpio"
		-append "console=ttyAMA0 panic=-1 cryptomgr.notests$append"
		-serial "file:$console"
	)
else
	qemu_args=(
		-accel "tcg,thread=${EMBER_VM_TCG_THREAD:-single}" -nodefaults -display none -no-reboot
		-m "$mem" -smp "$smp"
		-kernel "$vmlinuz" -initrd "$work/initrd.cpio"
		-append "console=ttyS0 panic=-1 cryptomgr.notests$append"
		-serial "file:$console" -serial "file:$outser"
	)
fi
# EMBER_VM_ICOUNT=N (opt-in, for cost measurements): qemu's -icount
# shift=N,sleep=off,align=off: the guest's clocks advance 2^N ns per guest
# instruction executed, not with host time, so guest CPU times count
# instructions and do not depend on the host's load (bench/fault-icount.sh).
# Idle time is skipped (sleep=off). Instruction counts model no cache,
# branch-predictor or return-thunk (Retpoline, SRSO) costs. Round-robin
# TCG advances one clock for all vCPUs: use --smp 1 for per-process counts.
if [ -n "${EMBER_VM_ICOUNT:-}" ]; then
	case $EMBER_VM_ICOUNT in
	*[!0-9]* | ???*) die "EMBER_VM_ICOUNT must be a shift value, 0 to 10 (2^N ns per instruction)" ;;
	esac
	[ "$EMBER_VM_ICOUNT" -le 10 ] || die "EMBER_VM_ICOUNT must be a shift value, 0 to 10"
	qemu_args+=(-icount "shift=$EMBER_VM_ICOUNT,sleep=off,align=off")
fi
# EMBER_VM_QEMU_ARGS: extra qemu options for debugging (e.g. "-s" for gdb).
# shellcheck disable=SC2206
[ -z "${EMBER_VM_QEMU_ARGS:-}" ] || qemu_args+=($EMBER_VM_QEMU_ARGS)
if [ -n "$out_disk" ]; then
	# shellcheck disable=SC2054 # commas belong to qemu's option syntax
	qemu_args+=(-drive "file=$out_disk,format=raw,if=none,id=out,cache=unsafe"
		-device virtio-blk-pci,drive=out)
fi

nmi_pid=""
if [ -n "$nmi_every" ]; then
	qemu_args+=(-monitor "unix:$work/monitor.sock,server,nowait")
	python3 - "$work/monitor.sock" "$console" "$nmi_every" >"$work/nmi.out" 2>&1 <<'PY' &
import os, socket, sys, time
sock, console, every = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1000
# wait for the guest's test module, then inject until the VM is gone
while True:
    try:
        if b"ember-nmi: ready" in open(console, "rb").read():
            break
    except OSError:
        pass
    time.sleep(0.05)
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
s.settimeout(0.2)
n = 0
try:
    while b"ember-nmi: done" not in open(console, "rb").read():
        s.sendall(b"nmi\n")
        n += 1
        try:
            while s.recv(4096):
                break
        except socket.timeout:
            pass
        time.sleep(every)
except OSError:
    pass
print("nmi injected", n)
PY
	nmi_pid=$!
fi

# EMBER_VM_LOCK=FILE: one VM at a time among everyone naming that file
# (a shared machine); held only while qemu runs, and not timed.
if [ -n "${EMBER_VM_LOCK:-}" ]; then
	exec {vm_lock_fd}>>"$EMBER_VM_LOCK"
	flock "$vm_lock_fd"
fi
start=$(date +%s.%N)
set +e
timeout -k 5 "$timeout_s" "$QEMU" "${qemu_args[@]}" </dev/null >"$work/qemu.out" 2>&1
qrc=$?
set -e
[ -z "${EMBER_VM_LOCK:-}" ] || flock -u "$vm_lock_fd"
if [ -n "$nmi_pid" ]; then
	kill "$nmi_pid" 2>/dev/null || true
	wait "$nmi_pid" 2>/dev/null || true
fi
end=$(date +%s.%N)
total_s=$(echo "$end - $start" | bc)

tr -d '\r' <"$console" >"$log"
if [ -s "$work/qemu.out" ]; then
	{ echo "--- qemu stdout/stderr"; cat "$work/qemu.out"; } >>"$log"
fi

# ---------------------------------------------------------------- verdict
status=0 timed_out=0 exit_code="" problems=""
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	timed_out=1
fi
exit_code=$(sed -n 's/^EMBER-VM-EXIT: \([0-9]\+\)$/\1/p' "$log" | tail -n 1)
boot_s=$(sed -n 's/^EMBER-VM-UP: uptime \([0-9.]\+\)$/\1/p' "$log" | head -n 1)

# Kernel log lines (console or the final dmesg dump) that mean trouble;
# the pattern is shared with selftests/lib.sh's log excerpt.
problems=$(grep -E '^\[ *[0-9]+\.[0-9]+\] ' "$log" |
	grep -E -f "$HERE/kernel-problems.ere" |
	sort -u | head -n 20 || true)

# Command output: what the guest printed between its markers.
if [ "$quiet" = 0 ]; then
	sed -n '/^EMBER-VM-CMD-BEGIN$/,/^EMBER-VM-EXIT: /{/^EMBER-VM-CMD-BEGIN$/d;/^EMBER-VM-EXIT: /d;p}' "$log"
fi

if [ -n "$out_dir" ]; then
	mkdir -p "$out_dir"
	disk_rc=$(sed -n 's/^EMBER-VM-OUT-DISK: \([0-9]\+\)$/\1/p' "$log" | tail -n 1)
	if [ "$disk_rc" = 0 ]; then
		tar -xf "$out_disk" -C "$out_dir" --no-overwrite-dir ||
			{ echo "run-vm: could not unpack /out from the guest's disk" >&2; status=125; }
	elif [ -n "$disk_rc" ]; then
		echo "run-vm: the guest could not write /out to its disk (tar status $disk_rc; /out larger than EMBER_VM_OUT_SIZE?)" >&2
		status=125
	elif grep -q '^EMBER-VM-OUT-END$' <(tr -d '\r' <"$outser"); then
		tr -d '\r' <"$outser" | sed -n '/^EMBER-VM-OUT-BEGIN$/,/^EMBER-VM-OUT-END$/{/^EMBER-VM-OUT/d;p}' |
			base64 -d | tar -xzf - -C "$out_dir" --no-overwrite-dir ||
			{ echo "run-vm: could not unpack /out from the guest" >&2; status=125; }
	elif [ -n "$exit_code" ]; then
		echo "run-vm: guest sent no /out archive" >&2
		status=125
	fi
fi

if [ "$timed_out" = 1 ]; then
	echo "run-vm: timeout: $series guest killed after ${timeout_s}s" >&2
	status=124
elif [ -z "$exit_code" ]; then
	echo "run-vm: no exit status from the $series guest (boot failure or kernel panic; qemu status $qrc)" >&2
	grep -E 'Kernel panic|end Kernel panic' "$log" | head -n 3 | sed 's/^/run-vm:   /' >&2 || true
	status=125
fi
if [ -n "$problems" ]; then
	echo "run-vm: kernel problem in the $series guest log:" >&2
	printf '%s\n' "$problems" | sed 's/^/run-vm:   /' >&2
	status=126
fi
if [ "$status" = 0 ] && [ -n "$exit_code" ]; then
	status=$exit_code
fi
[ -z "$exit_code" ] || [ "$exit_code" = 0 ] ||
	echo "run-vm: guest command exited with status $exit_code" >&2

if [ "$status" != 0 ]; then
	echo "run-vm: full guest log: $log" >&2
elif [ "$keep_log" = 1 ]; then
	rm -f "$log"
	log=""
fi
if [ -n "$result" ]; then
	{
		echo "status=$status"
		echo "exit=${exit_code:-none}"
		echo "timeout=$timed_out"
		echo "kernel_problems=$(printf '%s' "$problems" | grep -c . || true)"
		echo "boot_s=${boot_s:-none}"
		echo "total_s=$total_s"
		echo "kernel=$release"
		echo "log=$log"
	} >"$result"
fi
exit "$status"
