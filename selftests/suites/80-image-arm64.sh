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
# files are within 6 MiB. Then the image boots in the arm64 VM
# (selftests/vm/run-vm.sh --arch arm64, 256 MiB of RAM), where
# selftests/image/guest-image.sh checks it: read-only root, ember.ko or
# the eBPF fallback said in one line, OTLP export to the receiver and
# local profiles, the receiver down and back, the agent killed and
# restarted, a full data partition, a read-only /var, a clean reboot, RSS
# within 16 MiB, kernel memory within 8 MiB; and reports the agent's RSS
# and CPU at 19 Hz.
#
# Environment: EMBER_IMAGE_KERNEL (6.1 or 6.12, default 6.1),
# EMBER_VM_LOCK (a file to flock around the VM run, e.g. on a machine
# shared by several test runs), EMBER_CACHE.
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
art=${EMBER_ARTIFACTS:-$TMP}/image-arm64
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

# ---- item 5: the image in the VM
mkdir -p "$TMP/payload/image"
cp "$TMP/image/root.ext4" "$TMP/image/data.ext4" selftests/image/guest-image.sh "$TMP/payload/image/"
vm=(selftests/vm/run-vm.sh --arch arm64 --kernel "$kernel" --mem 256M --smp 2
	--kmod loop --kmod crc32c_generic --kmod ext4 --payload "$TMP/payload/image"
	--cmd "sh /payload/image/guest-image.sh" --timeout 1200
	--log "$art/console.log" --result "$art/result")
if [ -n "${EMBER_VM_LOCK:-}" ]; then
	flock "$EMBER_VM_LOCK" "${vm[@]}" >"$art/guest.out" 2>"$art/run-vm.err"
else
	"${vm[@]}" >"$art/guest.out" 2>"$art/run-vm.err"
fi
rc=$?
tr -d '\r' <"$art/guest.out" | grep -E '^(PASS|FAIL|SKIP): |^# ' || true
case $rc in
0 | 1) t_pass image_vm_clean_run ;;
126)
	t_fail image_vm_clean_run "kernel problem in the guest log ($art/console.log)"
	t_kernel_log_excerpt "$art/console.log"
	;;
*) t_fail image_vm_clean_run "run-vm exit $rc: $(why "$art/run-vm.err" 2)" ;;
esac
grep -q '^PASS: image_reboot_exports' "$art/guest.out" ||
	grep -q '^FAIL: ' "$art/guest.out" || t_fail image_vm_completed "the guest script did not finish ($art/guest.out)"
