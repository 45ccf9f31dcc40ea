#!/usr/bin/env bash
# Build (or find in the cache) an arm64 Debian 12 root with a compiler:
# gcc, make, dkms, kmod and the headers of Debian's arm64 kernel that the
# VMs boot (scripts/fetch-kernels.sh --arch arm64), so that DKMS can build
# ember.ko natively on arm64 (selftests/suites/32-arm64-dkms-vm.sh).
#
#   scripts/build-arm64-devroot.sh [--kernel 6.1]   build if needed; print root.img
#   scripts/build-arm64-devroot.sh --info            the cached image's info
#
# How: debootstrap --foreign --arch=arm64 --variant=minbase (the first
# stage only unpacks: no arm64 program runs on this host) with
# build-essential, dkms and kmod; the kernel's headers packages
# (linux-headers-KVER, its -common, linux-kbuild-SERIES for arm64), which
# may come from bookworm-security, are fetched with the private apt
# configuration of scripts/fetch-kernels.sh and put in
# /var/cache/ember-debs. The tree becomes an ext4 file (mkfs.ext4 -d) and
# the second stage runs inside the arm64 VM, once (selftests/vm/run-vm.sh
# --arch arm64, the root as an extra virtio disk, chroot): debootstrap
# --second-stage, then dpkg -i of the headers. Under TCG that takes long
# (tens of minutes); the result is cached.
#
# Output: $EMBER_CACHE/arm64-devroot/<KVER>-<hash>/root.img (raw ext4,
# LABEL=devroot, sparse, 4 GiB apparent), info. The hash covers the
# package list and DEVROOT_RECIPE. The host's /etc/apt is never touched:
# debootstrap gets the mirror on its command line, and runs in a private
# mount namespace. Needs root, debootstrap (installed with apt-get when
# missing), qemu-system-aarch64.
#
# Environment: EMBER_CACHE, EMBER_DEBIAN_MIRROR, EMBER_VM_LOCK (flock
# around the VM run).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
export EMBER_CACHE=${EMBER_CACHE:-$TOP/.cache}
BASE=$EMBER_CACHE/arm64-devroot
MIRROR=${EMBER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
PKGS=(build-essential dkms kmod)
DEVROOT_RECIPE=2
kseries=6.1 info=0
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kseries=$2; shift 2 ;;
	--info) info=1; shift ;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "build-arm64-devroot: unknown argument $1" >&2; exit 2 ;;
	esac
done
log() { echo "build-arm64-devroot: $*" >&2; }
die() { log "error: $*"; exit 1; }

kver=$("$TOP/scripts/fetch-kernels.sh" --arch arm64 --version "$kseries") || die "no arm64 $kseries kernel"
key=$(printf '%s\n' "$SUITE" "$MIRROR" "$DEVROOT_RECIPE" "$kver" "${PKGS[@]}" | sha256sum | cut -c1-12)
OUT=$BASE/$kver-$key
if [ "$info" = 1 ]; then cat "$OUT/info"; exit; fi
if [ -f "$OUT/info" ] && [ -f "$OUT/root.img" ]; then
	echo "$OUT/root.img"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "needs root (debootstrap)"
mkdir -p "$BASE"
exec {lock_fd}>"$BASE/.lock"
flock "$lock_fd"
if [ -f "$OUT/info" ] && [ -f "$OUT/root.img" ]; then
	echo "$OUT/root.img"
	exit 0
fi
if ! command -v debootstrap >/dev/null; then
	log "installing debootstrap"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2 ||
		die "could not install debootstrap"
fi
start=$(date +%s)
R=$BASE/rootfs.tmp
BLOG=$BASE/build.log
rm -rf "$R" "$OUT.tmp"
mkdir -p "$R" "$OUT.tmp" "$BASE/debs"
: >"$BLOG"
log "building $OUT (log: $BLOG)"

# ---- the kernel's headers, as Debian's arm64 packages (kbuild for arm64)
log "the headers of $kver"
mkdir -p "$BASE/kdebs.tmp" && rm -f "$BASE"/kdebs.tmp/*.deb
(
	# shellcheck disable=SC2034 # read by fetch-kernels.sh
	EMBER_KARCH=arm64
	# shellcheck source=scripts/fetch-kernels.sh
	. "$TOP/scripts/fetch-kernels.sh"
	apt_setup
	apt_refresh || true
	hdr=linux-headers-$kver
	ver=$(pkg_field "$hdr" Version)
	[ -n "$ver" ] || die "$hdr not in the package lists"
	pkgs=("$hdr=$ver")
	while IFS= read -r p; do
		case $p in linux-kbuild-*) p=${p%%=*}:arm64=$ver ;; esac
		pkgs+=("$p")
	done < <(headers_deps "$hdr")
	cd "$BASE/kdebs.tmp" && apt-get -q download "${pkgs[@]}"
) >>"$BLOG" 2>&1 || { tail -n 20 "$BLOG" >&2; die "could not download the headers of $kver"; }
ls "$BASE/kdebs.tmp" >&2
# what they need beyond each other (libelf1, libssl3...): debootstrap
# installs it with the rest
extra=$(for d in "$BASE"/kdebs.tmp/*.deb; do dpkg-deb -f "$d" Depends; done | tr ',' '\n' |
	sed 's/|.*//; s/(.*//; s/:any//; s/ //g' | grep -v -e '^$' -e '^linux-' | sort -u | tr '\n' ' ')
log "the headers also need: $extra"
# shellcheck disable=SC2206 # package names are words
PKGS+=($extra)

# ---- first stage: download and unpack only
log "debootstrap --foreign --arch=arm64 (${PKGS[*]})"
nice -n 19 unshare --mount --propagation private -- \
	debootstrap --foreign --arch=arm64 --variant=minbase --cache-dir="$BASE/debs" \
	--include="$(
		IFS=,
		echo "${PKGS[*]}"
	)" "$SUITE" "$R" "$MIRROR" >>"$BLOG" 2>&1 ||
	{ tail -n 20 "$BLOG" >&2; die "debootstrap's first stage failed (see $BLOG)"; }

mkdir -p "$R/var/cache/ember-debs"
mv "$BASE"/kdebs.tmp/*.deb "$R/var/cache/ember-debs/"
rmdir "$BASE/kdebs.tmp"

# ---- configuration (no network in the VM)
echo devroot >"$R/etc/hostname"
printf 'LABEL=devroot / ext4 defaults 0 1\n' >"$R/etc/fstab"
echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/devroot-unsafe-io" 2>/dev/null ||
	{ mkdir -p "$R/etc/dpkg/dpkg.cfg.d" && echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/devroot-unsafe-io"; }
cat >"$R/second-stage.sh" <<'EOF'
#!/bin/sh
# run in the arm64 VM, chrooted: debootstrap's second stage, the headers
set -e
export PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LC_ALL=C
/debootstrap/debootstrap --second-stage
dpkg -i /var/cache/ember-debs/*.deb
apt-get clean
echo "# no network in the test VM: install local .deb files" >/etc/apt/sources.list
rm -rf /var/lib/apt/lists/* && mkdir -p /var/lib/apt/lists/partial
dpkg-query -W -f='${Package} ${Version}\n' >/devroot-packages.txt
echo DEVROOT-SECOND-STAGE-OK
EOF
chmod 0755 "$R/second-stage.sh"

truncate -s 4G "$OUT.tmp/root.img"
mkfs.ext4 -q -F -L devroot -d "$R" "$OUT.tmp/root.img" >>"$BLOG" 2>&1 || die "mkfs.ext4 -d failed (see $BLOG)"
rm -rf "$R"

# ---- second stage, in the arm64 VM (native: dpkg's maintainer scripts)
log "second stage in the arm64 VM (TCG: tens of minutes)"
mkdir -p "$OUT.tmp/vm"
cat >"$OUT.tmp/vm/guest.sh" <<'EOF'
#!/bin/sh
mkdir -p /mnt/r
mount -t ext4 /dev/vda /mnt/r || { echo "cannot mount the devroot"; exit 1; }
for d in proc sys dev; do mount --bind /$d /mnt/r/$d; done
rc=0
chroot /mnt/r /second-stage.sh || rc=$?
rm -f /mnt/r/second-stage.sh
# (debootstrap's second stage may have unmounted proc and sys itself)
for d in dev sys proc; do umount /mnt/r/$d 2>/dev/null; done
umount /mnt/r
exit $rc
EOF
# shellcheck disable=SC2054
EMBER_VM_QEMU_ARGS="-drive file=$OUT.tmp/root.img,format=raw,if=none,id=devroot,cache=unsafe -device virtio-blk-pci,drive=devroot" \
	"$TOP/selftests/vm/run-vm.sh" --arch arm64 --kernel "$kseries" --mem 1G --smp 2 \
	--kmod virtio_pci --kmod virtio_blk --kmod crc32c_generic --kmod ext4 \
	--payload "$OUT.tmp/vm" --cmd "sh /payload/vm/guest.sh" --timeout 5400 \
	--log "$BASE/second-stage.log" >>"$BLOG" 2>&1 ||
	{ tail -n 20 "$BASE/second-stage.log" >&2; die "second stage failed (see $BASE/second-stage.log)"; }
grep -q DEVROOT-SECOND-STAGE-OK "$BASE/second-stage.log" || die "second stage did not finish (see $BASE/second-stage.log)"
rm -rf "$OUT.tmp/vm"
{
	echo "KEY=$key"
	echo "KERNEL=$kver"
	echo "PACKAGES=${PKGS[*]}"
	echo "BUILT=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "BUILD_SECONDS=$(($(date +%s) - start))"
} >"$OUT.tmp/info"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
for d in "$BASE"/*-*/; do
	[ "${d%/}" = "$OUT" ] || rm -rf "$d"
done
log "built in $(($(date +%s) - start)) s: $OUT/root.img"
echo "$OUT/root.img"
