#!/usr/bin/env bash
# Build an arm64 appliance root the way image builders do (docs/embedded.md):
# busybox init, no systemd, no package manager, a read-only root file
# system, tmpfs for /run and /tmp, ember installed by `make install-image`.
#
#   scripts/build-image.sh --out DIR [--arch arm64|host] [--with-sink]
#       [--kernel 6.1|6.12] [--agent-opts "EMBER_... ..."] [--data-mb N]
#       [--root-mb N]
#
# DIR/root/        the root tree (owned by root, as the image holds it)
# DIR/root.ext4    it, as an ext4 image the guest mounts read-only
# DIR/data.ext4    an empty data partition (N MiB, default 8), mounted at
#                  /data: ember's local profiles and unwind-table cache
# DIR/footprint.txt  bytes on disk of ember's files, of the glibc it uses,
#                  and of ember.ko
# DIR/initramfs.cpio.gz  with --kernel: the boot's first user space, what a
#                  product's initramfs does and no more: loads the drivers
#                  that reach the root device (Debian's arm64 kernel has
#                  virtio_mmio, virtio_pci, virtio_blk, ext4, jbd2, mbcache,
#                  crc16 and crc32c_generic as modules; a product kernel may
#                  build them in instead), mounts root= (LABEL=root by
#                  default) read-only and switch_roots into the image's
#                  /sbin/init. DIR/initramfs.txt lists its modules.
#
# The agent is built here for arm64 with the slim options (default
# "EMBER_DEBUGINFOD=0 EMBER_STATIC=1 EMBER_CURL_PREFIX=<scripts/
# build-min-curl.sh>": every library but glibc linked in, libcurl the
# HTTP-only one). This tree must hold a build for that architecture or
# none (make clean). --arch host makes the same image for this machine
# (its static busybox and glibc): a quick run of the image test's guest
# script without a VM.
# --kernel SERIES builds ember.ko for Debian's arm64 kernel of that series
# (scripts/fetch-kernels.sh --arch arm64 --kdir SERIES) and installs it in
# /lib/modules/KVER/extra; without it, an ember.ko already built here for
# this architecture (make module KDIR=...) is installed. --with-sink adds
# what only the image test needs, never a product: the test receiver
# (selftests/image/otlp_sink.c) as /usr/bin/otlp_sink and its init script
# S50otlp_sink on 127.0.0.1:4318, and S99image-test, which runs the test's
# script when a disk holding one (a raw tar with ember-test/run.sh) is
# attached, and does nothing otherwise.
#
# busybox: Debian 12's busybox-static for arm64, fetched with the private
# apt configuration of scripts/fetch-kernels.sh. glibc: the cross
# toolchain's (the one the agent was linked against).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
export EMBER_CACHE=${EMBER_CACHE:-$TOP/.cache}
out="" agent_opts="" with_sink=0 data_mb=8 root_mb=0 arch=arm64 kernel=""
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--agent-opts) agent_opts=$2; shift 2 ;;
	--with-sink) with_sink=1; shift ;;
	--arch) arch=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--data-mb) data_mb=$2; shift 2 ;;
	--root-mb) root_mb=$2; shift 2 ;;
	-h | --help) sed -n '2,41p' "$0"; exit 0 ;;
	*) echo "build-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ -n "$out" ] || { echo "build-image: --out DIR is required" >&2; exit 2; }
log() { echo "build-image: $*" >&2; }
case $arch in
arm64)
	MK=(make ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
	TC_LIBS=(/usr/aarch64-linux-gnu/lib)
	MULTIARCH=aarch64-linux-gnu INTERP=/lib/ld-linux-aarch64.so.1
	SINK_CC=(aarch64-linux-gnu-gcc -I"$EMBER_CACHE/sysroot-arm64/usr/include")
	LIBZ_A=$EMBER_CACHE/sysroot-arm64/usr/lib/aarch64-linux-gnu/libz.a
	;;
host)
	MK=(make)
	MULTIARCH=$(gcc -print-multiarch)
	TC_LIBS=("/lib/$MULTIARCH" "/usr/lib/$MULTIARCH")
	INTERP=$(readelf -lW /bin/sh | sed -nE 's/.*interpreter: ([^]]+)\]/\1/p')
	SINK_CC=(gcc)
	LIBZ_A=/usr/lib/$MULTIARCH/libz.a
	;;
*) echo "build-image: --arch arm64 or host" >&2; exit 2 ;;
esac

if [ -z "$agent_opts" ]; then
	curl_prefix=$(scripts/build-min-curl.sh --arch "$arch")
	agent_opts="EMBER_DEBUGINFOD=0 EMBER_STATIC=1 EMBER_CURL_PREFIX=$curl_prefix"
fi

# ---- busybox-static (arm64)
busybox_static() {
	local d=$EMBER_CACHE/image-arm64/busybox
	if [ "$arch" = host ]; then
		local b
		if ! b=$(command -v busybox) || ! file -L "$b" | grep -q 'statically linked'; then
			log "error: --arch host needs a static busybox (busybox-static)"
			exit 1
		fi
		echo "$b"
		return
	fi
	if [ ! -x "$d/bin/busybox" ]; then
		(
			# shellcheck disable=SC2034 # read by fetch-kernels.sh
			EMBER_KARCH=arm64
			# shellcheck source=scripts/fetch-kernels.sh
			. scripts/fetch-kernels.sh
			apt_setup
			apt_refresh || [ -n "$(ls "$APTDIR"/lists/*Packages* 2>/dev/null)" ]
			rm -rf "$d.tmp" && mkdir -p "$d.tmp"
			(cd "$d.tmp" && apt-get -q download busybox-static >/dev/null)
			dpkg-deb -x "$d.tmp"/busybox-static_*.deb "$d.tmp/x"
			mkdir -p "$d/bin"
			cp "$d.tmp/x/bin/busybox" "$d/bin/busybox"
			rm -rf "$d.tmp"
		) >&2 || { log "error: cannot fetch busybox-static for arm64"; exit 1; }
	fi
	echo "$d/bin/busybox"
}

# ---- the agent, installed as an image recipe would
log "building the agent for $arch: $agent_opts"
# shellcheck disable=SC2086
"${MK[@]}" -s -j2 $agent_opts agent/ember >&2
# the module: built for the image's kernel, or one built here before
if [ -n "$kernel" ]; then
	[ "$arch" = arm64 ] || { log "error: --kernel: Debian's arm64 kernels only"; exit 2; }
	kdir=$(scripts/fetch-kernels.sh --arch arm64 --kdir "$kernel") ||
		{ log "error: no arm64 $kernel kernel build tree"; exit 1; }
	rm -f ember.ko
	"${MK[@]}" -s -j2 module KDIR="$kdir" >&2 || { log "error: ember.ko did not build for $kernel"; exit 1; }
fi
if [ -e ember.ko ]; then
	case $arch:$(modinfo -F vermagic ember.ko 2>/dev/null) in
	arm64:*aarch64* | host:*"$(uname -m)"*) log "ember.ko for $(modinfo -F vermagic ember.ko | cut -d' ' -f1)" ;;
	*) log "ember.ko here is for another architecture: moved to .cache/, not installed"
		mkdir -p .cache && mv ember.ko .cache/ember.ko.other ;;
	esac
fi
rm -rf "$out/root" && mkdir -p "$out/root"
R=$out/root
# shellcheck disable=SC2086
"${MK[@]}" -s $agent_opts install-image DESTDIR="$R" >&2

# ---- busybox and its applets
mkdir -p "$R"/{bin,sbin,usr/bin,usr/sbin,etc/init.d,proc,sys,dev,run,tmp,data,root,var,lib}
cp "$(busybox_static)" "$R/bin/busybox"
applets="sh ash cat echo ls mkdir rmdir mount umount mv cp rm ln sed grep cut head tail
	wc tr od sleep kill ps pidof date uname dmesg sync df du find stat touch
	chmod true false test [ [[ env printf awk seq xargs logger syslogd klogd hostname
	insmod rmmod lsmod modprobe modinfo sysctl free uptime top id cmp md5sum dd
	readlink realpath basename dirname expr tee wget nc ip ifconfig"
for a in $applets; do ln -sf busybox "$R/bin/$a"; done
for a in init reboot poweroff halt; do ln -sf ../bin/busybox "$R/sbin/$a"; done

# ---- glibc: the loader and the libraries the ELF files here need
copy_lib() {
	local n=$1 d
	for d in "${TC_LIBS[@]}"; do
		[ -e "$d/$n" ] || continue
		mkdir -p "$R/lib/$MULTIARCH"
		cp -L "$d/$n" "$R/lib/$MULTIARCH/$n"
		return
	done
	log "error: $n not in ${TC_LIBS[*]}"
	exit 1
}
needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'; }
declare -A have=()
queue=()
while IFS= read -r f; do
	while IFS= read -r n; do queue+=("$n"); done < <(needed "$f")
done < <(find "$R" -type f -perm -u+x; find "$R" -name '*.so*' -type f)
while [ ${#queue[@]} -gt 0 ]; do
	n=${queue[0]}; queue=("${queue[@]:1}")
	[ -n "${have[$n]:-}" ] && continue
	have[$n]=1
	copy_lib "$n"
	while IFS= read -r m; do queue+=("$m"); done < <(needed "$R/lib/$MULTIARCH/$n")
done
# the program interpreter, where the ELF files ask for it
if [ -e "$R/lib/$MULTIARCH/${INTERP##*/}" ] && [ ! -e "$R$INTERP" ]; then
	mkdir -p "$R${INTERP%/*}"
	ln -sf "/lib/$MULTIARCH/${INTERP##*/}" "$R$INTERP"
fi

# ---- busybox init
cat >"$R/etc/inittab" <<-'EOT'
	::sysinit:/etc/init.d/rcS
	::shutdown:/etc/init.d/rcK
	::ctrlaltdel:/sbin/reboot
EOT
cat >"$R/etc/init.d/rcS" <<-'EOT'
	#!/bin/sh
	# the read-only root's first steps: kernel file systems, tmpfs for /run
	# and /tmp, the data partition (set up by the boot loader or fstab), then
	# the services in order
	# (Debian's busybox has no mountpoint applet)
	ismnt() { grep -q "^[^ ]* $1 " /proc/mounts; }
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	ismnt /dev || mount -t devtmpfs devtmpfs /dev
	mount -t tmpfs -o mode=0755,size=8m,nosuid,nodev tmpfs /run
	mount -t tmpfs -o mode=1777,size=16m,nosuid,nodev tmpfs /tmp
	# the data partition (/etc/fstab: LABEL=data), the only writable disk
	ismnt /data || mount /data || echo "rcS: no data partition (LABEL=data): nothing is kept across boots"
	# the loopback interface: nothing brings it up on a bare busybox
	# system, and the receiver of an appliance may be local
	ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
	ismnt /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
	ismnt /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	echo "rcS: root is $(awk '$2 == "/" { print $4 }' /proc/mounts | cut -d, -f1), $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) MiB of RAM"
	for s in /etc/init.d/S??*; do [ -x "$s" ] && "$s" start; done
	echo "rcS: done"
EOT
cat >"$R/etc/init.d/rcK" <<-'EOT'
	#!/bin/sh
	# shutdown: the services in reverse order, then the module
	ismnt() { grep -q "^[^ ]* $1 " /proc/mounts; }
	for s in $(ls -r /etc/init.d/S??*); do [ -x "$s" ] && "$s" stop; done
	[ -d /sys/module/ember ] && rmmod ember && echo "rcK: ember.ko unloaded"
	sync
	# the data partition clean for the next boot (init's reboot does not
	# unmount); the read-only root needs nothing
	if ismnt /data; then
		umount /data 2>/dev/null || mount -o remount,ro /data || echo "rcK: /data still busy and writable"
	fi
	echo "rcK: done"
EOT
chmod 0755 "$R/etc/init.d/rcS" "$R/etc/init.d/rcK"
# the boot loader's root= mounts / (the initramfs); this says how it is
# meant and where the data partition is
cat >"$R/etc/fstab" <<-'EOT'
	# <device>  <dir>  <type>  <options>  <dump>  <pass>
	LABEL=root  /      ext4    ro                                 0  0
	LABEL=data  /data  ext4    rw,nosuid,nodev,noexec,noatime     0  0
EOT
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\n' >"$R/etc/group"
echo ember-appliance >"$R/etc/hostname"

# ---- ember's configuration for this image: local profiles and the unwind
# table cache on the data partition (the root is read-only)
cat >"$R/etc/ember/ember.conf" <<-'EOT'
	# ember run on the appliance image (scripts/build-image.sh); every key
	# is documented in ember(1) and /usr/share/doc/ember/examples/ember.conf
	endpoint = http://127.0.0.1:4318
	freq = 19
	interval = 5
	local_dir = /data/ember/profiles
	local_max = 2M
	table_cache = /data/ember/tables
	table_cache_max = 4
	shutdown_timeout = 3
EOT
chmod 0640 "$R/etc/ember/ember.conf"

# ---- the test receiver
if [ "$with_sink" = 1 ]; then
	"${SINK_CC[@]}" -O2 -Wall -Wextra -static -s -o "$R/usr/bin/otlp_sink" \
		selftests/image/otlp_sink.c "$LIBZ_A"
	cat >"$R/etc/init.d/S50otlp_sink" <<-'EOT'
		#!/bin/sh
		# the image test's OTLP receiver (not part of ember)
		case "$1" in
		start) mkdir -p /run/sink && (/usr/bin/otlp_sink 4318 /run/sink >/run/sink.log 2>&1 &) ;;
		stop) killall otlp_sink 2>/dev/null; true ;;
		esac
	EOT
	chmod 0755 "$R/etc/init.d/S50otlp_sink"
	ln -sf busybox "$R/bin/killall"
	cat >"$R/etc/init.d/S99image-test" <<-'EOT'
		#!/bin/sh
		# TEST ONLY (scripts/build-image.sh --with-sink; not in a product
		# image): the image test (selftests/suites/80-image-arm64.sh)
		# attaches a raw tar disk holding ember-test/run.sh; run it in the
		# background, as the last service. No such disk: nothing happens.
		[ "$1" = start ] || exit 0
		for d in /dev/vd[a-z]; do
			[ -b "$d" ] || continue
			grep -q "^$d " /proc/mounts && continue
			rm -rf /run/ember-test
			tar -xf "$d" -C /run ember-test 2>/dev/null || continue
			[ -f /run/ember-test/run.sh ] || continue
			echo "image-test: running the test script of $d"
			(cd / && EMBER_TEST_DISK=$d exec sh /run/ember-test/run.sh </dev/null >/dev/console 2>&1 &)
			break
		done
	EOT
	chmod 0755 "$R/etc/init.d/S99image-test"
fi

# ---- footprint: ember's files, and the glibc beside them
{
	echo "# bytes on disk (apparent size) in the image root"
	for f in usr/bin/ember etc/init.d/S60ember etc/ember/ember.conf; do
		echo "ember $(stat -c %s "$R/$f") /$f"
	done
	for f in "$R"/lib/modules/*/extra/ember.ko; do
		[ ! -e "$f" ] || echo "module $(stat -c %s "$f") ${f#"$R"}"
	done
	for f in "$R/lib/$MULTIARCH"/*; do
		echo "glibc $(stat -c %s "$f") ${f#"$R"}"
	done
	[ ! -e "$R/usr/bin/otlp_sink" ] || echo "test $(stat -c %s "$R/usr/bin/otlp_sink") /usr/bin/otlp_sink"
	echo "busybox $(stat -c %s "$R/bin/busybox") /bin/busybox"
} >"$out/footprint.txt"

# ---- the initramfs: the drivers that reach the root device, then
# switch_root into the image's own /sbin/init (busybox, PID 1 of the machine)
initramfs_modules="virtio_mmio virtio_pci virtio_blk crc32c_generic ext4"
build_initramfs() {
	local moddir kver I=$out/initramfs.d list
	moddir=$(scripts/fetch-kernels.sh --arch arm64 --modules-dir "$kernel")
	kver=$(scripts/fetch-kernels.sh --arch arm64 --version "$kernel")
	rm -rf "$I" && mkdir -p "$I"/{bin,dev,proc,sys,newroot,etc,"lib/modules/$kver"}
	cp "$(busybox_static)" "$I/bin/busybox"
	for a in sh mount umount insmod cat echo sleep findfs switch_root reboot mkdir; do
		ln -sf busybox "$I/bin/$a"
	done
	list=$I/etc/modules
	: >"$list"
	# a module and what it needs (modules.dep), dependencies first; those
	# built into the kernel are skipped (modules.builtin). ext4's crc32c
	# is a soft dependency (the crypto API asks modprobe, which the
	# initramfs has not): named here before ext4.
	add_mod() {
		local name=$1 line path d
		grep -qE "(^|/)${name//[-_]/[-_]}\.ko$" "$moddir/modules.builtin" && return 0
		line=$(grep -E "(^|/)${name//[-_]/[-_]}\.ko(\.xz|\.zst|\.gz)?:" "$moddir/modules.dep" | head -n 1) ||
			{ log "error: module $name not in $moddir/modules.dep"; exit 1; }
		path=${line%%:*}
		for d in ${line#*:}; do add_mod "$(basename "$d" | sed -E 's/\.ko(\.xz|\.zst|\.gz)?$//')"; done
		grep -qx "${path%.*}.ko" "$list" && return 0
		mkdir -p "$I/lib/modules/$kver/$(dirname "$path")"
		case $path in
		*.xz) xz -dc "$moddir/$path" >"$I/lib/modules/$kver/${path%.xz}" ;;
		*.zst) zstd -qdc "$moddir/$path" >"$I/lib/modules/$kver/${path%.zst}" ;;
		*.gz) gzip -dc "$moddir/$path" >"$I/lib/modules/$kver/${path%.gz}" ;;
		*) cp "$moddir/$path" "$I/lib/modules/$kver/$path" ;;
		esac
		echo "${path%.ko*}.ko" >>"$list"
	}
	for m in $initramfs_modules; do add_mod "$m"; done
	cat >"$I/init" <<-'EOT'
		#!/bin/sh
		# The image's initramfs (scripts/build-image.sh): the drivers for the
		# root device, root= (LABEL=root by default) mounted read-only, then
		# the image's /sbin/init as PID 1. Nothing else happens here.
		export PATH=/bin
		fail() {
			echo "initramfs: error: $*"
			sleep 2
			reboot -f
		}
		mount -t proc proc /proc
		mount -t sysfs sysfs /sys
		mount -t devtmpfs devtmpfs /dev
		kver=$(cat /proc/sys/kernel/osrelease)
		for m in $(cat /etc/modules); do
			insmod "/lib/modules/$kver/$m" || echo "initramfs: insmod $m failed"
		done
		root=LABEL=root
		for a in $(cat /proc/cmdline); do
			case $a in root=*) root=${a#root=} ;; esac
		done
		# the disk may come a little after its driver: up to 10 s
		dev="" i=0
		while [ $i -lt 100 ]; do
			case $root in
			LABEL=* | UUID=*) dev=$(findfs "$root" 2>/dev/null) ;;
			*) [ -b "$root" ] && dev=$root ;;
			esac
			[ -n "$dev" ] && break
			sleep 0.1
			i=$((i + 1))
		done
		[ -n "$dev" ] || fail "no root device $root"
		mount -t ext4 -o ro "$dev" /newroot || fail "cannot mount $dev ($root) read-only"
		[ -x /newroot/sbin/init ] || fail "no /sbin/init on $dev"
		echo "initramfs: root $dev read-only, switching to its /sbin/init"
		mount --move /dev /newroot/dev
		umount /sys /proc
		exec switch_root /newroot /sbin/init
	EOT
	chmod 0755 "$I/init"
	(cd "$I" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) | gzip -9 >"$out/initramfs.cpio.gz"
	{
		echo "# kernel $kver: modules in the initramfs, in load order"
		cat "$list"
	} >"$out/initramfs.txt"
	log "initramfs for $kver: $(wc -l <"$list") modules ($(sed 's|.*/||; s|\.ko$||' "$list" | tr '\n' ' '))"
	rm -rf "$I"
	echo "boot $(stat -c %s "$out/initramfs.cpio.gz") /boot/initramfs.cpio.gz" >>"$out/footprint.txt"
}
rm -f "$out/initramfs.cpio.gz" "$out/initramfs.txt"
[ -z "$kernel" ] || build_initramfs

# ---- the file systems (owned by root: -E root_owner)
size_kb=$(du -sk "$R" | cut -f1)
[ "$root_mb" -gt 0 ] || root_mb=$((size_kb / 1024 + 4))
rm -f "$out/root.ext4" "$out/data.ext4"
mke2fs -q -t ext4 -E root_owner=0:0 -L root -d "$R" "$out/root.ext4" "${root_mb}M"
mke2fs -q -t ext4 -E root_owner=0:0 -L data "$out/data.ext4" "${data_mb}M"
log "image in $out: root.ext4 ${root_mb} MiB (read-only root), data.ext4 ${data_mb} MiB"
