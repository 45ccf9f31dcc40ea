#!/usr/bin/env bash
# Build (or find in the cache) the fleet test image: a Debian 12 system
# made with debootstrap, booted by selftests/fleet/run.sh under qemu with
# systemd as PID 1.
#
#   scripts/build-fleet-image.sh            build if needed; print the image path
#   scripts/build-fleet-image.sh --info     print the cached image's info file
#   scripts/build-fleet-image.sh --rebuild  build again even if cached
#
# What is in it: Debian 12 (bookworm, minbase) with systemd, udev, dbus,
# kmod, dkms, build-essential, the 6.1 kernel (linux-image-amd64) and its
# headers (linux-headers-amd64), python3-protobuf (the OTLP test receiver
# and check_otlp.py), openssl (the MOK), curl, and the shared libraries the
# ember package depends on (the VM has no network, so apt must find every
# dependency installed), and apparmor (Debian's kernel recommends it). The
# bookworm-backports 6.12 kernel and headers (linux-image-amd64,
# linux-headers-amd64 and everything they pull in) are downloaded only,
# into /var/cache/fleet-debs/ inside the image, for the scenario's kernel
# upgrade. apt is left with no sources and no lists (the VM has no network:
# it installs local .deb files) and an empty package cache.
#
# Also in it: /etc/systemd/system/fleet-test.service, which on every boot
# runs the scenario step script from the second disk (label FLEET, mounted
# on /fleet; selftests/fleet/run.sh makes it). Nothing of ember is in the
# image: the scenario installs the packages.
#
# Output: $EMBER_CACHE/fleet/image-<hash>/root.img, a raw ext4 file system
# (no partition table: root=/dev/vda) made with `mkfs.ext4 -d` (no loop
# mount), sparse, FLEET_IMAGE_SIZE (default 8G) apparent size. <hash> is
# the hash of the package lists and of FLEET_RECIPE below, so changing
# either builds a new image; a cached one is reused as is (idempotent).
# Older images are removed after a successful build.
#
# Apart from installing debootstrap, the host is only read: debootstrap
# and apt run in a chroot inside a private mount namespace (proc, sys,
# devpts and the package cache bind mounts vanish with it); packages are
# cached in $EMBER_CACHE/fleet/debs (debootstrap) and
# $EMBER_CACHE/fleet/archives (apt in the chroot) so a rebuild downloads
# nothing new. The host's /etc/apt is never touched.
# Needs root (debootstrap, chroot) and debootstrap (installed with apt-get
# when missing) and e2fsprogs (mkfs.ext4 -d).
#
# Environment: EMBER_CACHE (default <repo>/.cache), EMBER_DEBIAN_MIRROR
# (default http://deb.debian.org/debian), FLEET_IMAGE_SIZE (8G).
# CPU-heavy steps run under `nice -n 19`.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${EMBER_CACHE:-$TOP/.cache}
FLEET=$CACHE/fleet
MIRROR=${EMBER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SIZE=${FLEET_IMAGE_SIZE:-8G}
SUITE=bookworm

# Installed in the image (apt-get install --no-install-recommends).
PKGS=(
	systemd systemd-sysv udev dbus kmod procps util-linux e2fsprogs
	initramfs-tools zstd
	# what Debian's kernel recommends, as on an ordinary install
	apparmor
	linux-image-amd64 linux-headers-amd64
	dkms build-essential openssl
	python3 python3-protobuf curl libcap2-bin
	# what the ember package depends on (its shlibs:Depends)
	libbpf1 libcurl4 libdebuginfod1 libdw1 libelf1 libnl-3-200
	libnl-genl-3-200 libprotobuf-c1 zlib1g
)
# Downloaded only (with their dependencies) from bookworm-backports.
BACKPORTS=(linux-image-amd64 linux-headers-amd64)
# Bump when the way the image is made changes (not only its package lists).
FLEET_RECIPE=5

log() { echo "build-fleet-image: $*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=scripts/image-cache.sh
. "$TOP/scripts/image-cache.sh"

key=$(printf '%s\n' "$SUITE" "$MIRROR" "$FLEET_RECIPE" "${PKGS[@]}" -- "${BACKPORTS[@]}" |
	sha256sum | cut -c1-16)
OUT=$FLEET/image-$key

case ${1:-} in
--info) cat "$OUT/info"; exit ;;
--rebuild) rm -rf "$OUT" ;;
"") ;;
-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
*) die "unknown option $1 (see --help)" ;;
esac

image_cached "$OUT"
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
image_build_lock "$FLEET" "$OUT"
need_debootstrap
command -v mkfs.ext4 >/dev/null || die "mkfs.ext4 missing (e2fsprogs)"

start=$(date +%s)
R=$FLEET/rootfs.tmp
BLOG=$FLEET/build.log
rm -rf "$R" "$OUT.tmp"
mkdir -p "$R" "$OUT.tmp" "$FLEET/debs" "$FLEET/archives/partial"
: >"$BLOG"
log "building $OUT (log: $BLOG)"

# Everything that runs in the chroot, in a private mount namespace: the
# mounts it makes vanish with it, even if it fails half-way.
export R MIRROR SUITE FLEET
export PKGS_LIST="${PKGS[*]}" BACKPORTS_LIST="${BACKPORTS[*]}"
if ! nice -n 19 unshare --mount --propagation private -- bash -euo pipefail -c '
	in_root() { chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 HOME=/root "$@"; }

	echo "== debootstrap"
	debootstrap --variant=minbase --cache-dir="$FLEET/debs" \
		"$SUITE" "$R" "$MIRROR"

	mount -t proc proc "$R/proc"
	mount -t sysfs sysfs "$R/sys"
	mount -t devpts -o newinstance,ptmxmode=0666 devpts "$R/dev/pts"
	mount --bind "$FLEET/archives" "$R/var/cache/apt/archives"
	cp /etc/resolv.conf "$R/etc/resolv.conf"
	# no service may start in the chroot
	printf "#!/bin/sh\nexit 101\n" >"$R/usr/sbin/policy-rc.d"
	chmod 0755 "$R/usr/sbin/policy-rc.d"
	# keep downloaded packages (the bind mount is the cache)
	echo "Binary::apt::APT::Keep-Downloaded-Packages \"true\";" >"$R/etc/apt/apt.conf.d/90fleet-keep"
	rm -f "$R/etc/apt/apt.conf.d/docker-clean"
	# man-db rebuilds its index after every install: slow under TCG
	echo "man-db man-db/auto-update boolean false" | in_root debconf-set-selections

	echo "deb $MIRROR $SUITE main" >"$R/etc/apt/sources.list"
	echo "deb $MIRROR $SUITE-updates main" >>"$R/etc/apt/sources.list"
	echo "deb http://deb.debian.org/debian-security $SUITE-security main" >>"$R/etc/apt/sources.list"
	echo "== apt-get install"
	in_root apt-get -q update
	in_root apt-get -q -y --no-install-recommends install $PKGS_LIST

	echo "== bookworm-backports, download only: $BACKPORTS_LIST"
	echo "deb $MIRROR $SUITE-backports main" >"$R/etc/apt/sources.list.d/backports.list"
	in_root apt-get -q update
	# What installing them would add or upgrade (recommends included, as
	# `apt install -t bookworm-backports` does), as name=version.
	in_root apt-get -s -t "$SUITE-backports" install $BACKPORTS_LIST |
		sed -n "s/^Inst \([^ ]*\) \(\[[^]]*\] \)\?(\([^ ]*\) .*/\1=\3/p" >"$R/tmp/bpo.list"
	test -s "$R/tmp/bpo.list"
	mkdir -p "$R/var/cache/fleet-debs"
	(cd "$R/var/cache/fleet-debs" && in_root sh -c "cd /var/cache/fleet-debs && apt-get -q download \$(cat /tmp/bpo.list)")
	ls "$R/var/cache/fleet-debs"
	rm -f "$R/etc/apt/sources.list.d/backports.list" "$R/tmp/bpo.list"
	# the downloaded packages stay in the cache, not in the image
	umount "$R/var/cache/apt/archives"
	in_root apt-get clean
	# The VM has no network: an apt that knows a mirror tries it first for
	# every local .deb of the same version (and fails). Local files only.
	echo "# no network in the fleet test VM: install local .deb files" >"$R/etc/apt/sources.list"
	rm -rf "$R"/var/lib/apt/lists/*
	mkdir -p "$R/var/lib/apt/lists/partial"
	rm -f "$R/etc/apt/apt.conf.d/90fleet-keep" "$R/usr/sbin/policy-rc.d"
	: >"$R/etc/resolv.conf"
' >>"$BLOG" 2>&1; then
	tail -n 30 "$BLOG" >&2
	die "building the root file system failed (full log: $BLOG)"
fi

# ------------------------------------------------------------ configuration
log "configuring"
echo fleet >"$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tfleet\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$R/etc/hosts"
cat >"$R/etc/fstab" <<'EOF'
# <device>	<mount point>	<type>	<options>	<dump>	<pass>
/dev/vda	/	ext4	errors=remount-ro	0	1
# the scenario's disk (selftests/fleet/run.sh): scripts, packages, results;
# mounted at boot like any local file system (local-fs.target)
LABEL=FLEET	/fleet	ext4	defaults	0	2
EOF
mkdir -p "$R/fleet"
# A root password-less console login, for debugging a kept image by hand.
sed -i 's/^root:[^:]*:/root::/' "$R/etc/shadow"
# Speed under TCG (the scenario installs a kernel and its headers, ~30000
# files, and builds an initramfs in the VM): dpkg without fsync per file,
# and initramfs images with the modules this machine needs (virtio, ext4)
# rather than most of them. The 6.1 initrd above was made with the
# defaults. Neither changes what is tested.
echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/fleet-unsafe-io"
echo MODULES=dep >"$R/etc/initramfs-tools/conf.d/fleet-modules-dep"
# Persistent journal: each boot's log stays readable afterwards.
mkdir -p "$R/var/log/journal"
# Timers that would only compete with the scenario for the (emulated) CPU.
for u in apt-daily.timer apt-daily-upgrade.timer man-db.timer e2scrub_all.timer \
	e2scrub_reap.service fstrim.timer dpkg-db-backup.timer; do
	ln -sf /dev/null "$R/etc/systemd/system/$u"
done
# The scenario's driver: runs the next step of selftests/fleet/guest/step.sh
# on every boot, after everything the machine itself starts at boot.
cat >"$R/etc/systemd/system/fleet-test.service" <<'EOF'
[Unit]
Description=ember fleet test: next scenario step (selftests/fleet)
RequiresMountsFor=/fleet
ConditionPathExists=/fleet/guest/step.sh
After=multi-user.target

[Service]
Type=oneshot
ExecStart=/bin/bash /fleet/guest/step.sh
TimeoutStartSec=infinity
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/fleet-test.service "$R/etc/systemd/system/multi-user.target.wants/fleet-test.service"

kver=$(ls "$R/lib/modules" | sort -V | tail -n 1)
[ -e "$R/boot/vmlinuz-$kver" ] && [ -e "$R/boot/initrd.img-$kver" ] ||
	die "no kernel/initrd for $kver in the image"

# ------------------------------------------------------------------ pack
log "packing into an ext4 image ($SIZE)"
truncate -s "$SIZE" "$OUT.tmp/root.img"
nice -n 19 mkfs.ext4 -q -F -L fleet-root -d "$R" "$OUT.tmp/root.img" >>"$BLOG" 2>&1 ||
	die "mkfs.ext4 -d failed (see $BLOG)"
{
	echo "KEY=$key"
	echo "SUITE=$SUITE"
	echo "KERNEL=$kver"
	echo "BACKPORTS_DEBS=$(ls "$R/var/cache/fleet-debs" | tr '\n' ' ')"
	echo "PACKAGES=${PKGS[*]}"
	echo "BUILT=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "BUILD_SECONDS=$(($(date +%s) - start))"
	echo "USED=$(du -sh "$R" | cut -f1)"
} >"$OUT.tmp/info"
chroot "$R" dpkg-query -W -f='${Package} ${Version}\n' >"$OUT.tmp/packages.txt"
rm -rf "$R"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
# Older images (other keys) are dead weight: 1-2 GB each.
for d in "$FLEET"/image-*; do
	[ "$d" = "$OUT" ] || [ ! -d "$d" ] || rm -rf "$d"
done
log "built in $(($(date +%s) - start)) s: $OUT/root.img"
echo "$OUT/root.img"
