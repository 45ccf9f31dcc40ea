#!/usr/bin/env bash
# The DKMS package builds ember.ko natively on arm64 (issue 23 item 1).
# Opt-in: EMBER_ARM64=1 (the first run builds a Debian arm64 root with a
# compiler, its second stage under TCG: tens of minutes, then cached).
#
#   EMBER_ARM64=1 SUITES=32-arm64-dkms-vm selftests/run.sh
#
# scripts/build-arm64-devroot.sh gives a Debian 12 arm64 root (gcc, make,
# dkms, kmod, the headers of Debian's arm64 6.1 that the VM boots); `make
# deb` gives ember-dkms_<v>_all.deb. In the arm64 VM (run-vm.sh --arch
# arm64, the root as a virtio disk, chroot into it) dpkg installs the
# package, whose postinst has DKMS build ember.ko with the arm64 gcc for
# the running kernel and install it; the guest then loads that module and
# records 1 s of ember-phases with the module backend (the cross-built
# agent, scripts/build-arm64.sh).
#
# Environment: EMBER_VM_LOCK, EMBER_CACHE, EMBER_TEST_ARTIFACTS.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. selftests/lib.sh

if [ "${EMBER_ARM64:-0}" != 1 ]; then
	echo "SKIP: arm64_dkms: opt-in, run with EMBER_ARM64=1"
	exit 0
fi
if ! command -v qemu-system-aarch64 >/dev/null || ! command -v dpkg-buildpackage >/dev/null ||
	[ "$(id -u)" != 0 ]; then
	t_skip arm64_dkms "needs root, qemu-system-aarch64 and dpkg-buildpackage (scripts/install-deps.sh)"
	exit 0
fi
export EMBER_CACHE=${EMBER_CACHE:-$PWD/.cache}
kernel=6.1
art=${EMBER_TEST_ARTIFACTS:-selftests/artifacts}/arm64-dkms
rm -rf "$art" && mkdir -p "$art"
work=$(mktemp -d /tmp/ember-arm64-dkms.XXXXXX)
trap 'rm -rf "$work"' EXIT
why() { tail -n "${2:-3}" "$1" | tr '\n' ' '; }

# ---- the arm64 root with a compiler (cached)
if devroot=$(scripts/build-arm64-devroot.sh --kernel "$kernel" 2>"$art/devroot.err"); then
	t_pass arm64_dkms_devroot
	sed 's/^/# /' "$(dirname "$devroot")/info"
else
	t_fail arm64_dkms_devroot "$(why "$art/devroot.err" 3)"
	exit 0
fi

# ---- the package, and the agent to record with
if make -s deb DEB_OUT="$work/deb" >"$art/deb.log" 2>&1 && deb=$(ls "$work"/deb/ember-dkms_*_all.deb 2>/dev/null); then
	t_pass arm64_dkms_deb
else
	t_fail arm64_dkms_deb "$(why "$art/deb.log" 3)"
	exit 0
fi
if scripts/build-arm64.sh --quiet >"$work/build.out" 2>"$art/build-arm64.err"; then
	t_pass arm64_dkms_agent_build
else
	t_fail arm64_dkms_agent_build "$(why "$art/build-arm64.err" 3)"
	exit 0
fi
val() { sed -n "s/^$1=//p" "$work/build.out"; }
mkdir -p "$work/dkms"
cp "$deb" "$(val agent)" "$(val tests)/ember-phases" "$work/dkms/"
cat >"$work/dkms/guest.sh" <<'EOF'
#!/bin/sh
# in the arm64 VM: dpkg -i ember-dkms in the Debian root (chroot), DKMS
# builds ember.ko natively; load it, record 1 s
cd /payload/dkms || exit 1
ok() { echo "PASS: arm64_dkms_$1"; }
ko() { echo "FAIL: arm64_dkms_$1: $2"; }
R=/mnt/r
mkdir -p $R
mount -t ext4 /dev/vda $R || { ko mount "cannot mount the devroot"; exit 1; }
for d in proc sys dev; do mount --bind /$d $R/$d; done
# what udev would make: dkms (bash) reads process substitutions via /dev/fd
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
mkdir -p $R/tmp/ember && cp ember-dkms_*_all.deb $R/tmp/ember/
KVER=$(uname -r)
t0=$(cut -d' ' -f1 /proc/uptime)
chroot $R /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C DEBIAN_FRONTEND=noninteractive \
	sh -c 'dpkg -i /tmp/ember/ember-dkms_*_all.deb' >/tmp/dpkg.txt 2>&1
rc=$?
t1=$(cut -d' ' -f1 /proc/uptime)
sed 's/^/# dpkg: /' /tmp/dpkg.txt | tail -n 40
echo "# fig dkms_install_s=$(awk -v a=$t0 -v b=$t1 'BEGIN { printf "%.0f", b - a }')"
chroot $R dkms status >/tmp/status.txt 2>&1
sed 's/^/# dkms status: /' /tmp/status.txt
if [ $rc = 0 ] && grep -q "^ember/.*, $KVER, aarch64: installed" /tmp/status.txt; then
	ok install_build
else
	ko install_build "dpkg status $rc; $(tr '\n' '|' </tmp/status.txt)"
	cat $R/var/lib/dkms/ember/*/build/make.log 2>/dev/null | tail -n 30 | sed 's/^/# make.log: /'
fi
ko_file=$(find $R/lib/modules/$KVER/updates -name 'ember.ko*' 2>/dev/null | head -n 1)
case $ko_file in
*.xz) xz -dc "$ko_file" >/tmp/ember.ko ;;
*.zst) zstd -dc "$ko_file" >/tmp/ember.ko ;;
"") ;;
*) cp "$ko_file" /tmp/ember.ko ;;
esac
if [ -s /tmp/ember.ko ]; then
	# (busybox modinfo reads modules by name, not a file's .modinfo)
	vm=$(tr '\0' '\n' </tmp/ember.ko | sed -n 's/^vermagic=//p' | head -n 1)
	echo "# ${ko_file#$R}: vermagic $vm"
	case $vm in
	"$KVER "*aarch64*) ok module_for_this_kernel ;;
	*) ko module_for_this_kernel "vermagic '$vm', kernel $KVER" ;;
	esac
	# built here, by the arm64 gcc: the compiler the headers name
	grep -q 'aarch64' $R/var/lib/dkms/ember/*/$KVER/aarch64/log/make.log 2>/dev/null ||
		echo "# make.log: $(head -n 3 $R/var/lib/dkms/ember/*/$KVER/aarch64/log/make.log 2>/dev/null | tr '\n' '|')"
	if insmod /tmp/ember.ko 2>/tmp/insmod.txt && [ -d /sys/module/ember ]; then
		ok load
	else
		ko load "$(cat /tmp/insmod.txt)"
	fi
	./ember record --backend kmod -F 199 -o /tmp/p.folded -- ./ember-phases 1 >/tmp/rec.out 2>/tmp/rec.err
	rc=$?
	n=$(awk 'index($0, "ember-phases;") == 1 { n += $NF } END { print n + 0 }' /tmp/p.folded 2>/dev/null)
	sed 's/^/# record: /' /tmp/rec.err | tail -n 5
	if [ $rc = 0 ] && grep -q 'module backend' /tmp/rec.err && [ "${n:-0}" -ge 100 ]; then
		ok record_1s
	else
		ko record_1s "rc=$rc, $n samples of ember-phases (want >= 100)"
	fi
	echo "# fig dkms_record_samples=$n"
	rmmod ember && ok unload || ko unload "rmmod failed"
else
	ko module_for_this_kernel "no ember.ko under /lib/modules/$KVER/updates in the root"
fi
chroot $R dpkg --purge ember-dkms >/dev/null 2>&1
for d in dev sys proc; do umount $R/$d 2>/dev/null; done
umount $R
EOF

# the devroot stays as built: the guest writes to a copy-on-write overlay
qemu-img create -q -f qcow2 -F raw -b "$devroot" "$work/devroot.qcow2" ||
	{ t_fail arm64_dkms_vm "qemu-img create failed"; exit 0; }
EMBER_VM_QEMU_ARGS="-drive file=$work/devroot.qcow2,format=qcow2,if=none,id=devroot,cache=unsafe -device virtio-blk-pci,drive=devroot" \
	selftests/vm/run-vm.sh --arch arm64 --kernel "$kernel" --mem 1G --smp 2 \
	--kmod virtio_pci --kmod virtio_blk --kmod crc32c_generic --kmod ext4 \
	--payload "$work/dkms" --timeout 2400 --log "$art/console.log" --result "$art/result" \
	>"$art/guest.out" 2>"$art/run-vm.err"
rc=$?
tr -d '\r' <"$art/guest.out" | grep -E '^(PASS|FAIL|SKIP): |^# ' || true
case $rc in
0) t_pass arm64_dkms_vm_clean_run ;;
126)
	t_fail arm64_dkms_vm_clean_run "kernel problem in the guest log ($art/console.log)"
	t_kernel_log_excerpt "$art/console.log"
	;;
*) t_fail arm64_dkms_vm_clean_run "run-vm exit $rc: $(why "$art/run-vm.err" 2)" ;;
esac
grep -q '^PASS: arm64_dkms_record_1s' "$art/guest.out" ||
	grep -q '^FAIL: ' "$art/guest.out" || t_fail arm64_dkms_completed "the guest script did not finish ($art/guest.out)"
