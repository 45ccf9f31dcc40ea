#!/usr/bin/env bash
# Fetch Debian's test kernels (image + headers + kbuild) into .cache/ so
# ember.ko can be built against them and booted under qemu.
#
#   scripts/fetch-kernels.sh [SERIES...]      fetch (default: 5.10 6.1 6.12)
#   scripts/fetch-kernels.sh --kdir SERIES    print the kernel build dir (KDIR)
#   scripts/fetch-kernels.sh --vmlinuz SERIES print the path of the vmlinuz
#   scripts/fetch-kernels.sh --vmlinux SERIES print the uncompressed ELF vmlinux
#                                             (qemu boots it via PVH: faster)
#   scripts/fetch-kernels.sh --modules-dir SERIES
#                                             print the image's lib/modules/<ver>
#   scripts/fetch-kernels.sh --version SERIES print the kernel release (uname -r)
#   scripts/fetch-kernels.sh --cc SERIES      print the compiler its kbuild uses
#   scripts/fetch-kernels.sh --arch arm64 ... the same for Debian's arm64 kernels
#                                             (6.1, 6.12; default arch amd64)
#
# The query options fetch first when the series is not in the cache yet.
#
# Why a private apt configuration (also its own apt.conf.d: the host's may
# disable the package cache, which makes every query re-parse all lists): the test kernels come from three suites
# (bullseye, bookworm, bookworm-backports) that the host's apt must not be
# taught about, and nothing may land in the host's /boot or /lib/modules.
# So we keep our own sources.list, lists and cache under .cache/apt/ and only
# `apt-get download` + `dpkg -x` into .cache/kernels/<series>/root/.
#
# The newest ABI of each series is resolved from the package lists each time
# they are refreshed (at most every EMBER_APT_MAX_AGE minutes, default 720):
# Debian bumps the ABI number with security updates and old ones disappear
# from the mirror.
#
# arm64 (cross-building, docs in README.md): its own apt dir, .cache/apt-arm64/
# (native arch arm64, plus amd64 for linux-kbuild, whose programs run on the
# build host), and trees under .cache/kernels-arm64/<series>/. The headers
# name CC=$(CROSS_COMPILE)gcc-12: build with CROSS_COMPILE=aarch64-linux-gnu-.
# Instead of a vmlinux, an arm64 series gets vmlinux.btf, the kernel's BTF cut
# out of its Image (bpf/bpf.mk dumps an arm64 vmlinux.h from it).
#
# Environment: EMBER_CACHE (default <repo>/.cache), EMBER_DEBIAN_MIRROR,
# EMBER_DEBIAN_SECURITY_MIRROR, EMBER_APT_MAX_AGE (minutes), EMBER_OFFLINE=1
# (never touch the network; use what is cached).
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${EMBER_CACHE:-$TOP/.cache}
KARCH=amd64
APTDIR=$CACHE/apt
KDIR_BASE=$CACHE/kernels
# --arch arm64 (also EMBER_KARCH=arm64 for scripts that source this file)
set_arch() {
	case $1 in
	amd64) KARCH=amd64 APTDIR=$CACHE/apt KDIR_BASE=$CACHE/kernels DEFAULT_SERIES=(5.10 6.1 6.12) ;;
	arm64) KARCH=arm64 APTDIR=$CACHE/apt-arm64 KDIR_BASE=$CACHE/kernels-arm64 DEFAULT_SERIES=(6.1 6.12) ;;
	*) die "unknown arch '$1' (known: amd64 arm64)" ;;
	esac
}
MIRROR=${EMBER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECMIRROR=${EMBER_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
MAX_AGE=${EMBER_APT_MAX_AGE:-720}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
DEFAULT_SERIES=(5.10 6.1 6.12)

log() { echo "fetch-kernels: $*" >&2; }
die() { log "error: $*"; exit 1; }
[ -z "${EMBER_KARCH:-}" ] || set_arch "$EMBER_KARCH"

# Image package name pattern of each series (NN = ABI, resolved at run time).
image_pattern() {
	case $KARCH:$1 in
	arm64:6.1) echo '^linux-image-6\.1\.0-[0-9]+-arm64-unsigned$' ;;
	arm64:6.12) echo '^linux-image-6\.12\.[0-9]+\+deb12-arm64-unsigned$' ;;
	arm64:6.12-rt) echo '^linux-image-6\.12\.[0-9]+\+deb12-rt-arm64-unsigned$' ;;
	arm64:*) die "unknown arm64 series '$1' (known: ${DEFAULT_SERIES[*]})" ;;
	*:*) image_pattern_amd64 "$1" ;;
	esac
}
image_pattern_amd64() {
	case $1 in
	5.10) echo '^linux-image-5\.10\.0-[0-9]+-amd64-unsigned$' ;;
	6.1) echo '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' ;;
	6.12) echo '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' ;;
	6.12-rt) echo '^linux-image-6\.12\.[0-9]+\+deb12-rt-amd64-unsigned$' ;;
	*) die "unknown series '$1' (known: ${DEFAULT_SERIES[*]})" ;;
	esac
}

# 5.10's kbuild (bullseye) is configured for gcc-10, which bookworm lacks.
# gcc-12 would build it, but the kernel's CONFIG_CC_* probes and W=1 set
# were made for gcc-10, so we extract bullseye's gcc-10 next to the headers
# and point the headers' Makefile at it. The other series use the host gcc.
extra_packages() {
	case $1 in
	5.10) echo gcc-10 cpp-10 libgcc-10-dev gcc-10-base ;;
	esac
}

# ---------------------------------------------------------------- apt setup
apt_setup() {
	mkdir -p "$APTDIR"/{lists/partial,cache/archives/partial,state,debs}
	mkdir -p "$APTDIR"/etc/{apt.conf.d,sources.list.d,preferences.d}
	: >"$APTDIR/state/status"
	{ [ "$KARCH" = arm64 ] || cat <<-EOF
		deb [signed-by=$KEYRING] $MIRROR bullseye main
		deb [signed-by=$KEYRING] $SECMIRROR bullseye-security main
	EOF
	cat <<-EOF
		deb [signed-by=$KEYRING] $MIRROR bookworm main
		deb [signed-by=$KEYRING] $SECMIRROR bookworm-security main
		deb [signed-by=$KEYRING] $MIRROR bookworm-backports main
	EOF
	} >"$APTDIR/etc/sources.list.tmp"
	mv "$APTDIR/etc/sources.list.tmp" "$APTDIR/etc/sources.list"
	cat >"$APTDIR/etc/apt.conf" <<-EOF
		Dir::Etc::Parts "$APTDIR/etc/apt.conf.d";
		Dir::Etc::SourceList "$APTDIR/etc/sources.list";
		Dir::Etc::SourceParts "$APTDIR/etc/sources.list.d";
		Dir::Etc::PreferencesParts "$APTDIR/etc/preferences.d";
		Dir::Etc::Preferences "$APTDIR/etc/preferences";
		Dir::State "$APTDIR/state";
		Dir::State::Lists "$APTDIR/lists";
		Dir::State::status "$APTDIR/state/status";
		Dir::Cache "$APTDIR/cache";
		Dir::Cache::pkgcache "pkgcache.bin";
		Dir::Cache::srcpkgcache "srcpkgcache.bin";
		APT::Architecture "$KARCH";
		APT::Architectures { "$KARCH"; $([ "$KARCH" = amd64 ] || echo '"amd64";') };
		Acquire::Languages "none";
		Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
		APT::Sandbox::User "$(id -un)";
	EOF
	export APT_CONFIG=$APTDIR/etc/apt.conf
}

# Refresh the private package lists when missing or older than MAX_AGE.
apt_refresh() {
	local stamp=$APTDIR/update-stamp force=${1:-}
	if [ -z "$force" ] && [ -e "$stamp" ] &&
		[ -z "$(find "$stamp" -mmin +"$MAX_AGE" 2>/dev/null)" ]; then
		return 0
	fi
	[ "${EMBER_OFFLINE:-}" = 1 ] && return 1
	log "updating private $KARCH package lists"
	# apt-get update exits 0 when an index could not be fetched (only a
	# warning): read its log too.
	if apt-get -q update >"$APTDIR/update.log" 2>&1 &&
		! grep -qE '^(Err:|E: |W: Failed to fetch|W: Some index files failed)' "$APTDIR/update.log"; then
		touch "$stamp"
		return 0
	fi
	log "apt-get update failed (see $APTDIR/update.log):"
	tail -n 5 "$APTDIR/update.log" >&2
	return 1
}

# Newest package matching a series' image pattern.
resolve_image() {
	local pat
	pat=$(image_pattern "$1")
	apt-cache pkgnames linux-image- 2>/dev/null | grep -E "$pat" | sort -V | tail -n 1
}

# Field of a package's candidate version.
pkg_field() {
	apt-cache show --no-all-versions "$1" 2>/dev/null |
		sed -n "s/^$2: //p" | head -n 1
}

# The linux-headers-*/linux-kbuild-* packages a headers package depends on,
# as NAME=VERSION (exact versions keep common, arch and kbuild in step).
headers_deps() {
	pkg_field "$1" Depends | tr ',' '\n' | sed 's/|.*//; s/^ *//; s/ *$//' |
		sed -nE 's/^(linux-(headers|kbuild)-[^ ]+)( \(= ([^)]+)\))?.*$/\1 \4/p' |
		while read -r name ver; do
			if [ -n "$ver" ]; then echo "$name=$ver"; else echo "$name"; fi
		done
}

# ------------------------------------------------------------------- fetch
fetch_series() {
	local series=$1 dir=$KDIR_BASE/$1 image abi headers pkgs=() p debs=()
	image_pattern "$series" >/dev/null
	# One fetcher at a time (suites and developers run this concurrently).
	mkdir -p "$KDIR_BASE"
	exec {lock_fd}>"$KDIR_BASE/.lock"
	flock "$lock_fd"

	if ! apt_refresh; then
		if [ -e "$dir/info" ]; then
			log "$series: offline, using cached $(sed -n 's/^VERSION=//p' "$dir/info")"
			return 0
		fi
		die "$series: cannot update package lists and nothing cached"
	fi

	local attempt iver
	for attempt in 1 2; do
		image=$(resolve_image "$series")
		if [ -z "$image" ]; then
			if [ -e "$dir/info" ]; then
				log "$series: no package matches $(image_pattern "$series") in the lists; using cached $(sed -n 's/^VERSION=//p' "$dir/info")"
				fixup_tree "$series"
				return 0
			fi
			die "$series: no package matches $(image_pattern "$series")"
		fi
		abi=${image#linux-image-}
		abi=${abi%-unsigned}
		headers=linux-headers-$abi
		if [ -e "$dir/info" ] && grep -qx "IMAGE=$image" "$dir/info"; then
			fixup_tree "$series"
			return 0
		fi

		iver=$(pkg_field "$image" Version)
		pkgs=("$image=$iver" "$headers=$(pkg_field "$headers" Version)")
		# arm64: kbuild's programs run on the build host
		while read -r p; do
			[ "$KARCH" = amd64 ] || p=$(sed -E 's/^(linux-kbuild-[^=]+)/\1:amd64/' <<<"$p")
			pkgs+=("$p")
		done < <(headers_deps "$headers")
		for p in $(extra_packages "$series"); do pkgs+=("$p"); done
		log "$series: newest is $abi; fetching ${pkgs[*]}"

		if (cd "$APTDIR/debs" && apt-get -q download "${pkgs[@]}" >"$APTDIR/download.log" 2>&1); then
			break
		fi
		tail -n 5 "$APTDIR/download.log" >&2
		# A list a few hours old may name a version the mirror dropped:
		# refresh once and resolve again.
		if [ "$attempt" = 1 ] && apt_refresh force; then
			continue
		fi
		if [ -e "$dir/info" ]; then
			log "$series: download failed, using cached $(sed -n 's/^VERSION=//p' "$dir/info")"
			fixup_tree "$series"
			return 0
		fi
		die "$series: apt-get download failed (see $APTDIR/download.log)"
	done
	for p in "${pkgs[@]}"; do
		local n=${p%%=*} v
		n=${n%:amd64}
		v=$(pkg_field "$p" Version)
		[ -n "$v" ] || v=${p#*=}
		# apt-get download names files NAME_VERSION_ARCH.deb with ':' escaped.
		debs+=("$(ls "$APTDIR/debs/${n}_${v//:/%3a}"_*.deb)")
	done

	rm -rf "$dir.new"
	mkdir -p "$dir.new/root"
	for p in "${debs[@]}"; do
		dpkg-deb -x "$p" "$dir.new/root"
	done
	rm -rf "$dir"
	mv "$dir.new" "$dir"

	local release vmlinuz
	vmlinuz=$(find "$dir/root/boot" -name 'vmlinuz-*' | head -n 1)
	release=${vmlinuz##*/vmlinuz-}
	{
		echo "IMAGE=$image"
		echo "VERSION=$release"
		echo "PACKAGES=${pkgs[*]}"
	} >"$dir/info.tmp"
	mv "$dir/info.tmp" "$dir/info"
	fixup_tree "$series"
	# arm64 boots its Image; fixup_tree cut its BTF out
	[ "$KARCH" = arm64 ] ||
		extract_vmlinux "$dir/root/boot/vmlinuz-$release" "$dir/vmlinux" ||
		log "$series: could not extract vmlinux (harness falls back to vmlinuz)"
	# Old .debs of superseded ABIs are dead weight.
	prune_debs
	log "$series: ready: $release"
}

# Make the extracted headers usable where they are: Debian's arch Makefile
# includes /usr/src/linux-headers-X-common by absolute path and some
# symlinks point at /usr/lib/linux-kbuild-X or /usr/src absolutely. We
# re-point them into the extracted root. Runs on every fetch (cheap) so a
# moved checkout heals itself. Files change only when their content would
# (and then by rename), because other builds may be reading this tree.
fixup_tree() {
	local series=$1 root=$KDIR_BASE/$1/root f target want cc
	# Absolute symlinks under usr/src and lib/modules -> inside root.
	while IFS= read -r f; do
		target=$(readlink "$f")
		case $target in
		/usr/* | /lib/*) want=$root$target ;;
		*/root/usr/* | */root/lib/*) want=$root/${target#*/root/} ;;
		*) continue ;;
		esac
		[ "$target" = "$want" ] || ln -sfn "$want" "$f"
	done < <(find "$root/usr/src" "$root/lib/modules" -maxdepth 3 -type l 2>/dev/null)

	# Makefiles and kbuild variable files naming /usr/src or /usr/lib,
	# regenerated from Debian's originals (kept as *.debian).
	for f in "$root"/usr/src/linux-headers-*/Makefile "$root"/usr/src/linux-headers-*/.kernelvariables; do
		[ -e "$f" ] && [ ! -e "$f.debian" ] && cp -p "$f" "$f.debian"
	done
	cc=$(compiler_of "$series")
	for f in "$root"/usr/src/linux-headers-*/Makefile "$root"/usr/src/linux-headers-*/.kernelvariables; do
		[ -e "$f" ] || continue
		sed -e "s#\(^\|[ =]\)/usr/src/#\1$root/usr/src/#g" \
			-e "s#\(^\|[ =]\)/usr/lib/linux-kbuild#\1$root/usr/lib/linux-kbuild#g" \
			"$f.debian" >"$f.tmp"
		# 5.10: the extracted gcc-10, by absolute path (no PATH needed).
		if [ "${f##*/}" = .kernelvariables ] && [ "${cc#/}" != "$cc" ]; then
			sed -i -E "s|^(override +)?CC *[:?]?= .*|\1CC = $cc|" "$f.tmp"
		fi
		if cmp -s "$f.tmp" "$f"; then rm -f "$f.tmp"; else mv "$f.tmp" "$f"; fi
	done
	info_set "$series" CC "$cc"

	# The package leaves modules.dep to the installer's depmod; the VM
	# harness (--kmod) needs it to load an image module's dependencies.
	local ver
	ver=$(sed -n 's/^VERSION=//p' "$KDIR_BASE/$series/info")
	if [ -n "$ver" ] && [ ! -s "$root/lib/modules/$ver/modules.dep" ]; then
		command -v depmod >/dev/null || PATH=$PATH:/sbin:/usr/sbin
		depmod -b "$root" "$ver" 2>/dev/null ||
			log "$series: depmod failed: image modules cannot be loaded with run-vm --kmod"
	fi
	# arm64: the BTF for the cross-build's vmlinux.h (also for older caches)
	if [ "$KARCH" = arm64 ] && [ -n "$ver" ] && [ ! -s "$KDIR_BASE/$series/vmlinux.btf" ]; then
		extract_btf "$root/boot/vmlinuz-$ver" "$KDIR_BASE/$series/vmlinux.btf" ||
			log "$series: could not cut the BTF out of the Image"
	fi
}

# The compiler the series' kbuild uses. 5.10: bullseye's gcc-10, extracted
# next to the headers. The others: the host's gcc-NN their
# .kernelvariables names.
compiler_of() {
	local series=$1 root=$KDIR_BASE/$1/root kv cc
	if [ "$series" = 5.10 ]; then
		for cc in "$root/usr/bin/x86_64-linux-gnu-gcc-10" "$root/usr/bin/gcc-10"; do
			[ -x "$cc" ] && { echo "$cc"; return; }
		done
		die "5.10: extracted gcc-10 not found"
	fi
	kv=$(find "$root/usr/src" -maxdepth 2 -path "*-$KARCH/.kernelvariables.debian" | head -n 1)
	cc=$(sed -nE 's/^CC *=.*[) ](gcc-[0-9]+)$/\1/p' "$kv" 2>/dev/null | head -n 1)
	[ "$KARCH" = amd64 ] || cc=aarch64-linux-gnu-${cc:-gcc}
	echo "${cc:-gcc}"
}

# Set KEY=VALUE in a series' info file, atomically (readers never see a
# half-written file).
info_set() {
	local info=$KDIR_BASE/$1/info
	{ grep -v "^$2=" "$info" 2>/dev/null || true; echo "$2=$3"; } >"$info.tmp"
	if cmp -s "$info.tmp" "$info"; then rm -f "$info.tmp"; else mv "$info.tmp" "$info"; fi
}

prune_debs() {
	local keep f
	keep=$(cat "$KDIR_BASE"/*/info 2>/dev/null | sed -n 's/^PACKAGES=//p' | tr ' ' '\n' | sed 's/[:=].*//')
	for f in "$APTDIR"/debs/*.deb; do
		[ -e "$f" ] || continue
		grep -qx "$(basename "$f" | sed 's/_.*//')" <<<"$keep" || rm -f "$f"
	done
}

# Uncompressed vmlinux out of the bzImage. Under TCG the kernel's own
# decompressor costs several seconds per boot; qemu boots the ELF directly
# through its PVH note (CONFIG_PVH=y in Debian's configs).
extract_vmlinux() {
	local bz=$1 dst=$2 magic tool off
	for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
		tool=${magic%%:*}
		off=$(LC_ALL=C grep -obUaP "${magic#*:}" "$bz" | head -n 1 | cut -d: -f1)
		[ -n "$off" ] || continue
		case $tool in
		xz) tail -c +$((off + 1)) "$bz" | xz -dc --single-stream >"$dst.tmp" 2>/dev/null || true ;;
		# The kernel appends the decompressed size: zstd calls that
		# trailing garbage after the complete frame.
		zstd) tail -c +$((off + 1)) "$bz" | zstd -dc >"$dst.tmp" 2>/dev/null || true ;;
		gzip) tail -c +$((off + 1)) "$bz" | gzip -dc >"$dst.tmp" 2>/dev/null || true ;;
		esac
		if [ "$(head -c 4 "$dst.tmp" | od -An -c | tr -d ' ')" = "177ELF" ] &&
			readelf -n "$dst.tmp" 2>/dev/null | grep -q 'Xen.*0x00000012'; then
			mv "$dst.tmp" "$dst"
			return 0
		fi
	done
	rm -f "$dst.tmp"
	return 1
}

# arm64: the vmlinuz is a (Debian: uncompressed, EFI-stub) Image, not an
# ELF; the kernel's BTF
# (CONFIG_DEBUG_INFO_BTF, what /sys/kernel/btf/vmlinux serves) sits in its
# read-only data as the raw .BTF blob: find the header (magic 0xeB9F,
# version 1, 24 bytes) whose sections add up, and cut it out. The ELF
# vmlinux with a .BTF section is only in the (large) -dbg package.
extract_btf() {
	local img=$1 dst=$2
	if [ "$(head -c 2 "$img" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
		gzip -dc "$img" >"$dst.image" 2>/dev/null || { rm -f "$dst.image"; return 1; }
	else
		cp "$img" "$dst.image"
	fi
	python3 - "$dst.image" "$dst.tmp" <<-'EOF' || { rm -f "$dst.image" "$dst.tmp"; return 1; }
		import struct, sys
		data = open(sys.argv[1], 'rb').read()
		best = None
		i = data.find(b'\x9f\xeb\x01\x00\x18\x00\x00\x00')
		while i >= 0:
		    toff, tlen, soff, slen = struct.unpack_from('<4I', data, i + 8)
		    end = i + 24 + max(toff + tlen, soff + slen)
		    if toff == 0 and soff == tlen and slen and end <= len(data) and \
		            data[i + 24 + soff] == 0 and (best is None or tlen > best[1]):
		        best = (i, tlen, end)
		    i = data.find(b'\x9f\xeb\x01\x00\x18\x00\x00\x00', i + 1)
		if best is None:
		    sys.exit(1)
		open(sys.argv[2], 'wb').write(data[best[0]:best[2]])
	EOF
	rm -f "$dst.image"
	mv "$dst.tmp" "$dst"
}

# ------------------------------------------------------------------ queries
info_get() { # SERIES KEY
	local info=$KDIR_BASE/$1/info
	if [ ! -e "$info" ]; then
		fetch_series "$1" >&2 || exit 1
	fi
	sed -n "s/^$2=//p" "$info"
}

query() {
	local what=$1 series=$2 ver root=$KDIR_BASE/$2/root
	image_pattern "$series" >/dev/null
	apt_setup
	ver=$(info_get "$series" VERSION)
	[ -n "$ver" ] || die "$series: no kernel cached"
	case $what in
	--kdir) echo "$root/usr/src/linux-headers-$ver" ;;
	--vmlinuz) echo "$root/boot/vmlinuz-$ver" ;;
	--vmlinux)
		[ "$KARCH" = amd64 ] || die "--vmlinux: amd64 only (arm64 boots the vmlinuz)"
		local v=$KDIR_BASE/$series/vmlinux
		[ -e "$v" ] || extract_vmlinux "$root/boot/vmlinuz-$ver" "$v" ||
			die "$series: no PVH-bootable vmlinux could be extracted"
		echo "$v"
		;;
	--modules-dir) echo "$root/lib/modules/$ver" ;;
	--version) echo "$ver" ;;
	--cc) info_get "$series" CC ;;
	esac
}

main() {
	if [ "${1:-}" = --arch ]; then
		[ $# -ge 2 ] || die "usage: $0 --arch amd64|arm64 ..."
		set_arch "$2"
		shift 2
	fi
	case ${1:-} in
	--kdir | --vmlinuz | --vmlinux | --modules-dir | --version | --cc)
		[ $# -eq 2 ] || die "usage: $0 $1 SERIES"
		query "$1" "$2"
		return
		;;
	-h | --help)
		sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'
		return
		;;
	-*) die "unknown option $1 (see --help)" ;;
	esac
	local series=("$@") s rc=0
	[ ${#series[@]} -gt 0 ] || series=("${DEFAULT_SERIES[@]}")
	for s in "${series[@]}"; do image_pattern "$s" >/dev/null; done
	apt_setup
	for s in "${series[@]}"; do
		(fetch_series "$s") || rc=1
	done
	return $rc
}

# Sourced (scripts/build-debug-kernel.sh reuses the private apt setup):
# define the functions only.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	main "$@"
fi
