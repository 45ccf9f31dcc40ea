#!/usr/bin/env bash
# One boot of the appliance image of scripts/build-image.sh in qemu (arm64
# virt, TCG), as a board boots it: Debian's arm64 kernel, the image's own
# initramfs (drivers, root mounted read-only, switch_root), the image's
# busybox /sbin/init as PID 1. The boot ends when the image reboots
# (qemu -no-reboot) or at the timeout.
#
#   selftests/image/boot-image.sh --image DIR --kernel 6.1|6.12 --data FILE
#       [--test DIR --results DIR] [--append "kernel args"] [--mem 256M]
#       [--smp 2] [--timeout S] [--log FILE] [--result FILE]
#
# Disks (virtio-blk-pci, in this order): DIR/root.ext4 (vda, LABEL=root,
# attached writable: the image mounts it read-only by itself), --data FILE
# (vdb, LABEL=data, kept from boot to boot by the caller) and, TEST ONLY,
# a raw tar disk (vdc) holding --test DIR as ember-test/: the image's
# S99image-test (built with --with-sink) runs its run.sh, which writes its
# results back to the same disk as a tar; they are unpacked into
# --results DIR.
#
# EMBER_VM_LOCK=FILE: flock FILE while qemu runs (one VM at a time).
#
# Exit status: 0 when the image rebooted by itself (init's reboot ended
# qemu), 124 at the timeout, 125 for anything else (no reboot: a panic or
# a harness problem). --result FILE gets key=value lines: status,
# rebooted, timeout, total_s, kernel_problems, log.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
export EMBER_CACHE=${EMBER_CACHE:-$TOP/.cache}
image="" series="" data="" test_dir="" results="" append="" mem=256M smp=2 timeout_s=900 log="" result=""
die() { echo "boot-image: $*" >&2; exit 125; }
while [ $# -gt 0 ]; do
	case $1 in
	--image) image=$2; shift 2 ;;
	--kernel) series=$2; shift 2 ;;
	--data) data=$2; shift 2 ;;
	--test) test_dir=$2; shift 2 ;;
	--results) results=$2; shift 2 ;;
	--append) append="$append $2"; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--result) result=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
[ -n "$image" ] && [ -n "$series" ] && [ -n "$data" ] || die "--image DIR, --kernel SERIES and --data FILE are required"
for f in root.ext4 initramfs.cpio.gz; do
	[ -f "$image/$f" ] || die "no $image/$f (scripts/build-image.sh --kernel SERIES makes it)"
done
[ -f "$data" ] || die "no data partition $data"
[ -z "$test_dir" ] || [ -n "$results" ] || die "--test needs --results DIR"
command -v qemu-system-aarch64 >/dev/null || die "qemu-system-aarch64 missing: scripts/install-deps.sh"
kernel=$("$TOP/scripts/fetch-kernels.sh" --arch arm64 --vmlinuz "$series") || die "no arm64 kernel $series"

work=$(mktemp -d "${TMPDIR:-/tmp}/ember-boot-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ -n "$log" ] || log=$work/console.log
mkdir -p "$(dirname "$log")"

# shellcheck disable=SC2054 # commas belong to qemu's option syntax
disks=(-drive "file=$image/root.ext4,format=raw,if=none,id=root" -device virtio-blk-pci,drive=root
	-drive "file=$data,format=raw,if=none,id=data" -device virtio-blk-pci,drive=data)
if [ -n "$test_dir" ]; then
	mkdir -p "$work/t/ember-test"
	cp -r "$test_dir"/. "$work/t/ember-test/"
	tar -C "$work/t" -cf "$work/test.img" ember-test
	truncate -s 16M "$work/test.img"
	# shellcheck disable=SC2054
	disks+=(-drive "file=$work/test.img,format=raw,if=none,id=test" -device virtio-blk-pci,drive=test)
fi

# As run-vm.sh --arch arm64: -cpu max with qemu's cheap PAC hash (same
# mask), one TCG thread (stale translations of patched kernel text), and
# cryptomgr.notests (the crypto self-tests are seconds of TCG and test
# nothing of the image; module signatures are still checked).
console=$work/console.raw
qemu_args=(
	-M virt -cpu "${EMBER_VM_CPU:-max,pauth-impdef=on}"
	-accel "tcg,thread=${EMBER_VM_TCG_THREAD:-single}" -nodefaults -display none -no-reboot
	-m "$mem" -smp "$smp"
	-kernel "$kernel" -initrd "$image/initramfs.cpio.gz"
	-append "console=ttyAMA0 root=LABEL=root panic=-1 cryptomgr.notests$append"
	-serial "file:$console" "${disks[@]}"
)
if [ -n "${EMBER_VM_LOCK:-}" ]; then
	exec {lock_fd}>>"$EMBER_VM_LOCK"
	flock "$lock_fd"
fi
start=$(date +%s.%N)
set +e
timeout -k 5 "$timeout_s" qemu-system-aarch64 "${qemu_args[@]}" </dev/null >"$work/qemu.out" 2>&1
qrc=$?
set -e
[ -z "${EMBER_VM_LOCK:-}" ] || flock -u "$lock_fd"
total_s=$(echo "$(date +%s.%N) - $start" | bc)
tr -d '\r' <"$console" >"$log"
[ ! -s "$work/qemu.out" ] || { echo "--- qemu stdout/stderr"; cat "$work/qemu.out"; } >>"$log"

if [ -n "$results" ]; then
	rm -rf "$results" && mkdir -p "$results"
	# the guest's tar replaced ember-test/ when it wrote its results
	tar -xf "$work/test.img" -C "$results" 2>/dev/null || true
	rm -rf "$results/ember-test"
fi

status=125 timed_out=0 rebooted=0
[ "$qrc" != 124 ] && [ "$qrc" != 137 ] || timed_out=1
grep -q 'reboot: Restarting system' "$log" && rebooted=1
if [ "$timed_out" = 1 ]; then
	status=124
	echo "boot-image: timeout: the image did not reboot in ${timeout_s} s" >&2
elif [ "$rebooted" = 1 ] && [ "$qrc" = 0 ]; then
	status=0
else
	echo "boot-image: qemu ended (status $qrc) without the image's reboot" >&2
	grep -E 'Kernel panic|initramfs: error' "$log" | head -n 3 | sed 's/^/boot-image:   /' >&2 || true
fi
# kernel problems: on the console, and in the dmesg the test script kept
problems=$({
	grep -E '^\[ *[0-9]+\.[0-9]+\] ' "$log"
	[ -z "$results" ] || cat "$results"/dmesg*.txt 2>/dev/null
} | grep -E -f "$TOP/selftests/vm/kernel-problems.ere" | sort -u | head -n 20 || true)
if [ -n "$problems" ]; then
	echo "boot-image: kernel problem in the guest log:" >&2
	printf '%s\n' "$problems" | sed 's/^/boot-image:   /' >&2
fi
if [ -n "$result" ]; then
	{
		echo "status=$status"
		echo "rebooted=$rebooted"
		echo "timeout=$timed_out"
		echo "total_s=$total_s"
		echo "kernel_problems=$(printf '%s' "$problems" | grep -c . || true)"
		echo "log=$log"
	} >"$result"
fi
exit "$status"
