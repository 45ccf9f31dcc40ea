#!/usr/bin/env bash
# The arm64 appliance image, end to end (issue 23, items 5 and 6;
# docs/embedded.md). Opt-in: EMBER_ARM64=1 (about 10 minutes under TCG).
#
#   EMBER_ARM64=1 SUITES=80-image-arm64 selftests/run.sh
#
# From a clean copy of the tree, scripts/build-image.sh builds the image:
# the slim agent (every library but glibc linked in, the HTTP-only
# libcurl), busybox init, a read-only ext4 root, a data partition and the
# test receiver. Here: the agent needs nothing but glibc, and ember's
# files are within 6 MiB. Then the image boots as a board boots it, in
# qemu-system-aarch64 -M virt with 256 MiB of RAM
# (selftests/image/boot-image.sh): the kernel, the image's initramfs
# (drivers, root read-only, switch_root), the image's busybox init as
# PID 1 of the VM. Reboots are real: init's reboot ends the qemu run, and
# the second and third boots are new runs of the same disks. The
# test-only selftests/image/guest-image.sh, on a third disk that the
# image's test-only S99image-test runs, checks inside: read-only root,
# ember.ko or the eBPF fallback said in one line, OTLP export to the
# receiver and local profiles, the receiver down and back, the agent
# killed and restarted, a full data partition, a read-only /var, RSS
# within 16 MiB, kernel memory within 8 MiB, and reports the agent's RSS
# and CPU at 19 Hz and the time to the first export; from the console
# this script checks the boot, the shutdown (a clean reboot), the second
# boot finding the local profiles, and the third boot
# (module.sig_enforce=1) refusing the unsigned module.
#
# Environment: EMBER_IMAGE_KERNEL (6.1 or 6.12, default 6.1),
# EMBER_VM_LOCK (a file to flock around each VM run, e.g. on a machine
# shared by several test runs), EMBER_CACHE, EMBER_TEST_ARTIFACTS
# (consoles and results in image-arm64/, default selftests/artifacts).
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

if [ "${EMBER_ARM64:-0}" != 1 ]; then
	echo "SKIP: image_arm64: opt-in, run with EMBER_ARM64=1"
	exit 0
fi
if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-system-aarch64 >/dev/null ||
	! grep -q -- '--arch arm64' selftests/vm/run-vm.sh 2>/dev/null; then
	t_skip image_arm64 "needs aarch64-linux-gnu-gcc, qemu-system-aarch64 and run-vm.sh --arch arm64 (scripts/install-deps.sh)"
	exit 0
fi
export EMBER_CACHE=${EMBER_CACHE:-$PWD/.cache}
kernel=${EMBER_IMAGE_KERNEL:-6.1}
TMP=$(mktemp -d /tmp/ember-image.XXXXXX)
art=${EMBER_TEST_ARTIFACTS:-selftests/artifacts}/image-arm64
rm -rf "$art"
mkdir -p "$art"
trap 'rm -rf "$TMP"' EXIT
why() { tail -n "${2:-3}" "$1" | tr '\n' ' '; }

# a clean copy of the working tree: no host objects mixed in
mkdir "$TMP/src"
git ls-files -z -co --exclude-standard |
	tar --null --ignore-failed-read -cf - -T - 2>/dev/null | tar -xf - -C "$TMP/src"
if (cd "$TMP/src" && scripts/build-image.sh --out "$TMP/image" --with-sink --kernel "$kernel") >"$art/build.log" 2>&1; then
	t_pass image_build
else
	t_fail image_build "$(why "$art/build.log" 5)"
	exit 0
fi
cp "$TMP/image/footprint.txt" "$art/"

# ---- item 6: what the agent loads, and ember's bytes on disk
needed=$(readelf -d "$TMP/image/root/usr/bin/ember" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
echo "# fig agent_needs=$needed"
extra=$(echo "$needed" | tr ' ' '\n' | grep -v -x -e '' -e libc.so.6 -e libm.so.6 -e ld-linux-aarch64.so.1)
[ -z "$extra" ] && t_pass image_agent_needs_only_glibc ||
	t_fail image_agent_needs_only_glibc "also needs: $extra"
ember_bytes=$(awk '$1 == "ember" { s += $2 } END { print s + 0 }' "$TMP/image/footprint.txt")
module_bytes=$(awk '$1 == "module" { s += $2 } END { print s + 0 }' "$TMP/image/footprint.txt")
glibc_bytes=$(awk '$1 == "glibc" { s += $2 } END { print s + 0 }' "$TMP/image/footprint.txt")
echo "# fig ember_bytes=$ember_bytes module_bytes=$module_bytes glibc_bytes=$glibc_bytes (glibc: the image's own, counted apart)"
sed 's/^/# /' "$TMP/image/footprint.txt"
[ "$ember_bytes" -le $((6 << 20)) ] && t_pass image_footprint_6mib ||
	t_fail image_footprint_6mib "$ember_bytes bytes"

# ---- item 5: the image boots in the VM as on a board
# Each boot is its own qemu run (selftests/image/boot-image.sh): Debian's
# arm64 kernel, the image's initramfs (drivers, root= read-only,
# switch_root), the image's busybox init as PID 1; init's reboot ends the
# run. The data partition is the same file on every boot. TEST ONLY: a
# third disk carries selftests/image/guest-image.sh, which the image's
# S99image-test (a --with-sink image) runs; it writes its results back.
[ -f "$TMP/image/initramfs.cpio.gz" ] && t_pass image_initramfs ||
	{ t_fail image_initramfs "build-image.sh made no initramfs"; exit 0; }
sed 's/^/# initramfs: /' "$TMP/image/initramfs.txt"
cp "$TMP/image/data.ext4" "$TMP/data.ext4"
root_sum=$(md5sum <"$TMP/image/root.ext4")
mkdir -p "$TMP/test"
cp selftests/image/guest-image.sh "$TMP/test/run.sh"
problems=0
# boot N TIMEOUT [kernel args]: one boot, its guest lines printed
boot() {
	local n=$1 t=$2 rc
	shift 2
	echo "$n" >"$TMP/test/phase"
	local cmd=(selftests/image/boot-image.sh --image "$TMP/image" --kernel "$kernel"
		--data "$TMP/data.ext4" --test "$TMP/test" --results "$art/boot$n"
		--log "$art/console.$n.log" --result "$art/result.$n" --timeout "$t")
	[ $# -eq 0 ] || cmd+=(--append "$*")
	"${cmd[@]}" 2>"$art/boot-image.$n.err"
	rc=$?
	tr -d '\r' <"$art/boot$n/out.txt" 2>/dev/null | grep -E '^(PASS|FAIL|SKIP): |^# ' || true
	echo "# fig boot_${n}_qemu_s=$(sed -n 's/^total_s=//p' "$art/result.$n")"
	grep -q "image-test: phase $n done" "$art/boot$n/out.txt" 2>/dev/null ||
		t_fail "image_boot${n}_completed" "the guest script did not finish ($art/console.$n.log): $(why "$art/boot-image.$n.err" 2)"
	if [ "$(sed -n 's/^kernel_problems=//p' "$art/result.$n")" != 0 ]; then
		problems=$((problems + 1))
		t_kernel_log_excerpt "$art/console.$n.log"
	fi
	return $rc
}
con() { grep -q -- "$2" "$art/console.$1.log"; }

# one lock for the three boots (EMBER_VM_LOCK): a machine shared by
# several test runs does not start other VMs between them
if [ -n "${EMBER_VM_LOCK:-}" ]; then
	exec {vm_lock_fd}>>"$EMBER_VM_LOCK"
	flock "$vm_lock_fd"
fi
export EMBER_VM_LOCK=""

# ---- boot 1
boot 1 1200
b1=$?
con 1 'initramfs: root /dev/vd[a-z] read-only' && con 1 'rcS: done' && con 1 'image-test: running' &&
	t_pass image_boot || t_fail image_boot "no initramfs/rcS/test lines on the console ($art/console.1.log)"
con 1 'rcS: root is ro' && t_pass image_root_read_only ||
	t_fail image_root_read_only "$(grep 'rcS: root' "$art/console.1.log")"
backend=$(sed -n 's/^# fig backend=\([a-z]*\).*/\1/p' "$art/boot1/out.txt" 2>/dev/null)
if [ "$backend" = ebpf ]; then
	n=$(sed -n 's/^# fig backend=ebpf using_ebpf_lines=\([0-9]*\).*/\1/p' "$art/boot1/out.txt")
	[ "${n:-0}" -ge 1 ] && con 1 'ember:.*ember.ko' && t_pass image_backend_fallback_said ||
		t_fail image_backend_fallback_said "no fallback line (console: $(grep 'ember:' "$art/console.1.log" | head -n 2))"
fi
# the reboot: init's reboot ran rcK (ember stopped, its last profile
# kept, the module unloaded, /data unmounted) and ended the qemu run
[ "$b1" = 0 ] && t_pass image_reboot_clean || t_fail image_reboot_clean "$(why "$art/boot-image.1.err" 2)"
con 1 'ember: stopped' && con 1 'rcK: done' && con 1 'ember: ember run: stopped: ' &&
	t_pass image_shutdown_stops_ember || t_fail image_shutdown_stops_ember "no 'ember run: stopped' / 'ember: stopped' / 'rcK: done'"
if [ "$backend" != module ] || con 1 'rcK: ember.ko unloaded'; then
	t_pass image_shutdown_unloads_module
else
	t_fail image_shutdown_unloads_module "no 'rcK: ember.ko unloaded'"
fi
con 1 'rcK: /data still busy' && t_fail image_shutdown_unmounts_data "$(grep 'rcK: /data' "$art/console.1.log")" ||
	t_pass image_shutdown_unmounts_data

# ---- boot 2: the same disks; ember finds its local profiles
boot 2 600
b2=$?
con 2 'EXT4-fs (vd[a-z]): recovery complete' && t_fail image_data_clean_after_reboot "the data partition's journal was replayed" ||
	t_pass image_data_clean_after_reboot
[ "$b2" = 0 ] && con 2 'rcK: done' && t_pass image_reboot_clean_2 ||
	t_fail image_reboot_clean_2 "second shutdown: $(why "$art/boot-image.2.err" 2)"

# ---- boot 3: module signatures enforced (the boot loader's
# module.sig_enforce=1): the unsigned ember.ko is refused, S60ember says
# so, ember run falls back to eBPF
boot 3 600 module.sig_enforce=1
b3=$?
con 3 'could not load .*ember.ko' && t_pass image_refused_module_said ||
	t_fail image_refused_module_said "no line from S60ember ($art/console.3.log)"
[ "$b3" = 0 ] && con 3 'rcK: done' && t_pass image_reboot_clean_3 ||
	t_fail image_reboot_clean_3 "third shutdown: $(why "$art/boot-image.3.err" 2)"

[ -z "${vm_lock_fd:-}" ] || flock -u "$vm_lock_fd"

[ "$(md5sum <"$TMP/image/root.ext4")" = "$root_sum" ] && t_pass image_root_unchanged ||
	t_fail image_root_unchanged "root.ext4 changed over three boots"
[ "$problems" = 0 ] && t_pass image_vm_clean_run ||
	t_fail image_vm_clean_run "kernel problem in $problems boot(s) ($art/console.*.log)"
