#!/usr/bin/env bash
# Build a 6.12 debug kernel (KASAN, lockdep, kmemleak, UBSAN, DEBUG_LIST,
# DEBUG_ATOMIC_SLEEP) from Debian's own linux-source-6.12 package, for
# selftests/suites/35-kmod-debug-vm.sh and `run-vm.sh --kernel debug`.
#
#   scripts/build-debug-kernel.sh             build (or reuse) the kernel
#   scripts/build-debug-kernel.sh --kdir      print the build tree (KDIR for
#                                             `make module KDIR=...`)
#   scripts/build-debug-kernel.sh --vmlinux   print the PVH-bootable vmlinux
#   scripts/build-debug-kernel.sh --modules-dir  print the dir holding
#                                             modules.builtin (the tree)
#   scripts/build-debug-kernel.sh --version   print the release (uname -r)
#   scripts/build-debug-kernel.sh --cc        print the compiler used
#   scripts/build-debug-kernel.sh --info      print the info file (key=value)
#   scripts/build-debug-kernel.sh --is-current  succeed when the built kernel
#                                             matches the fragment and compiler
#
# The query options never build (a build takes 11-13 minutes on 2 cores): they fail
# with the command to run when no kernel is built yet.
#
# Configuration: allnoconfig plus selftests/vm/debug-kernel.config, merged
# with the kernel's scripts/kconfig/merge_config.sh; every option of the
# fragment must survive into the final .config. No debug info, nothing
# modular (ember.ko is built against the tree as an external module).
#
# Cache: .cache/debug-kernel/<source version>-<key>/ where key hashes the
# fragment, the compiler's version and this script's BUILD_REV; `current`
# points at the newest complete build. A second run costs seconds and no
# download. The package comes from Debian (bookworm-security or -backports,
# whichever has the newest linux-source-6.12) through the private apt
# configuration of scripts/fetch-kernels.sh (.cache/apt/): nothing under
# /etc/apt, /boot or /lib/modules is touched. When the mirror cannot be
# reached the cached build is used.
#
# Variant: EMBER_DEBUG_KERNEL_VARIANT=rt builds the same kernel with
# PREEMPT_RT (selftests/vm/debug-kernel-rt.config on top of the fragment)
# into .cache/debug-kernel-rt/, booted as `run-vm.sh --kernel debug-rt`:
# Debian's -rt kernels have no lockdep and no DEBUG_ATOMIC_SLEEP, so this
# is where a sleeping lock taken in perf-overflow or tracepoint context
# shows (issue 23 item 4).
#
# Environment: EMBER_CACHE (default <repo>/.cache), EMBER_OFFLINE=1,
# EMBER_DEBUG_KERNEL_JOBS (make -j, default: number of CPUs),
# EMBER_DEBUG_KERNEL_CC (default gcc-12, what Debian builds 6.12 with on
# bookworm; plain gcc when that is gcc 12). Run it under `nice -n 19` on a
# shared machine.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
# The private apt setup (apt_setup, apt_refresh, pkg_field, log, die).
# shellcheck source=fetch-kernels.sh disable=SC1091
. "$TOP/scripts/fetch-kernels.sh"
log() { echo "build-debug-kernel: $*" >&2; }
die() { log "error: $*"; exit 1; }

BASE=$CACHE/debug-kernel
DEBS=$CACHE/debug-kernel/debs
FRAGMENT=$TOP/selftests/vm/debug-kernel.config
case ${EMBER_DEBUG_KERNEL_VARIANT:-} in
"") ;;
rt)
	# the overlay's options replace the base fragment's lines of the same
	# name; the merged fragment is what the build checks and keys on
	BASE=$CACHE/debug-kernel-rt
	mkdir -p "$BASE"
	overlay=$TOP/selftests/vm/debug-kernel-rt.config
	names=$(sed -nE 's/^(# )?(CONFIG_[A-Za-z0-9_]+)[= ].*/\2/p' "$overlay" | paste -sd'|')
	grep -vE "^(# )?($names)[= ]" "$FRAGMENT" >"$BASE/fragment.config.tmp"
	cat "$overlay" >>"$BASE/fragment.config.tmp"
	mv "$BASE/fragment.config.tmp" "$BASE/fragment.config"
	FRAGMENT=$BASE/fragment.config
	;;
*) echo "build-debug-kernel: unknown EMBER_DEBUG_KERNEL_VARIANT '$EMBER_DEBUG_KERNEL_VARIANT' (known: rt)" >&2; exit 1 ;;
esac
SRCPKG=linux-source-6.12
# Bump when the way the tree is built changes (the cache key includes it).
BUILD_REV=1
JOBS=${EMBER_DEBUG_KERNEL_JOBS:-$(nproc)}

pick_cc() {
	local cc=${EMBER_DEBUG_KERNEL_CC:-}
	if [ -z "$cc" ]; then
		# One spelling for the kernel and for external modules built
		# against it later with plain `make` (which uses "gcc"):
		# kbuild compares CONFIG_CC_VERSION_TEXT and complains otherwise.
		if [ "$(gcc -dumpversion 2>/dev/null)" = 12 ]; then cc=gcc; else cc=gcc-12; fi
	fi
	command -v "$cc" >/dev/null || die "compiler $cc not found (Debian builds 6.12 with gcc-12)"
	echo "$cc"
}

cache_key() { # CC
	{
		cat "$FRAGMENT"
		"$1" --version | head -n 1
		echo "rev=$BUILD_REV"
	} | sha256sum | cut -c1-12
}

info_of() { sed -n "s/^$2=//p" "$1/info" 2>/dev/null; }

current() {
	local d=$BASE/current
	[ "$(info_of "$d" STATUS)" = ready ] ||
		die "no debug kernel built yet: run scripts/build-debug-kernel.sh (nice -n 19; 11-13 min on 2 cores)"
	readlink -f "$d"
}

# ------------------------------------------------------------------- build
build() {
	local cc key ver dir deb t0 t1 t2 rel missing
	cc=$(pick_cc)
	key=$(cache_key "$cc")
	mkdir -p "$BASE" "$DEBS"
	exec {lock_fd}>"$BASE/.lock"
	flock "$lock_fd"

	apt_setup
	ver=""
	if apt_refresh; then
		ver=$(pkg_field "$SRCPKG" Version)
	fi
	if [ -z "$ver" ]; then
		# Offline or the lists lost the package: newest cached source.
		ver=$(find "$DEBS" -name "${SRCPKG}_*_all.deb" | sed 's/.*_\(.*\)_all\.deb$/\1/; s/%3a/:/g' | sort -V | tail -n 1)
		[ -n "$ver" ] || die "cannot resolve $SRCPKG (offline?) and nothing is cached"
		log "package lists unavailable; using cached $SRCPKG $ver"
	fi
	dir=$BASE/$ver-$key
	if [ "$(info_of "$dir" STATUS)" = ready ]; then
		ln -sfn "$(basename "$dir")" "$BASE/current"
		log "cached: $(info_of "$dir" RELEASE) ($SRCPKG $ver, key $key, built in $(info_of "$dir" BUILD_S) s)"
		return 0
	fi

	deb=$(ls "$DEBS/${SRCPKG}_${ver//:/%3a}_all.deb" 2>/dev/null || true)
	if [ -z "$deb" ]; then
		log "downloading $SRCPKG $ver (~150 MB)"
		(cd "$DEBS" && apt-get -q download "$SRCPKG=$ver" >"$BASE/download.log" 2>&1) ||
			{ tail -n 5 "$BASE/download.log" >&2; die "apt-get download $SRCPKG=$ver failed"; }
		deb=$(ls "$DEBS/${SRCPKG}_${ver//:/%3a}_all.deb")
	fi

	t0=$(date +%s)
	rm -rf "$dir"
	mkdir -p "$dir/linux"
	log "extracting $(basename "$deb")"
	dpkg-deb --fsys-tarfile "$deb" | tar -xOf - "./usr/src/$SRCPKG.tar.xz" |
		xz -dc -T0 | tar -xf - -C "$dir/linux" --strip-components=1
	[ -f "$dir/linux/Makefile" ] || die "no kernel source in $deb"

	log "configuring: allnoconfig + $(basename "$FRAGMENT")"
	local mk=(make -C "$dir/linux" ARCH=x86_64 CC="$cc" HOSTCC="$cc")
	(cd "$dir/linux" && ARCH=x86_64 CC="$cc" HOSTCC="$cc" \
		scripts/kconfig/merge_config.sh -n "$FRAGMENT") \
		>"$dir/config.log" 2>&1 || { tail -n 20 "$dir/config.log" >&2; die "merge_config failed"; }
	"${mk[@]}" olddefconfig >>"$dir/config.log" 2>&1
	# every line of the fragment must be in the result
	missing=$(grep -E '^(CONFIG_|# CONFIG_.* is not set)' "$FRAGMENT" | while IFS= read -r l; do
		grep -qxF -- "$l" "$dir/linux/.config" || {
			case $l in
			"# "*) n=${l#\# }; n=${n%% *}; grep -q "^$n=" "$dir/linux/.config" && echo "$l" ;;
			*) echo "$l" ;;
			esac
		}
	done)
	[ -z "$missing" ] || die "options of $(basename "$FRAGMENT") lost in the final .config (missing dependencies?): $(echo "$missing" | tr '\n' ' ')"
	t1=$(date +%s)

	log "building vmlinux + modules with $cc, make -j$JOBS (11-13 min on 2 cores; log: $dir/build.log)"
	if ! "${mk[@]}" -j"$JOBS" vmlinux modules >"$dir/build.log" 2>&1; then
		grep -m 5 -E 'error|Error' "$dir/build.log" >&2 || tail -n 20 "$dir/build.log" >&2
		die "kernel build failed (log: $dir/build.log)"
	fi
	t2=$(date +%s)
	# CPU seconds of everything this script ran (children's user + sys):
	# wall time depends on what else the machine runs, this does not
	local cpu_s
	cpu_s=$(times | tail -n 1 | awk '{ split($1, u, /[ms]/); split($2, y, /[ms]/); printf "%d", u[1] * 60 + u[2] + y[1] * 60 + y[2] }')
	[ -f "$dir/linux/Module.symvers" ] || die "no Module.symvers after the build"
	readelf -n "$dir/linux/vmlinux" 2>/dev/null | grep -q 'Xen.*0x00000012' ||
		die "vmlinux has no PVH entry note (CONFIG_PVH?)"
	rel=$(cat "$dir/linux/include/config/kernel.release")
	# a built-in virtio_pci/virtio_blk is what run-vm's --out needs
	[ -f "$dir/linux/modules.builtin" ] || : >"$dir/linux/modules.builtin"
	{
		echo "SOURCE=$SRCPKG $ver"
		echo "RELEASE=$rel"
		echo "KEY=$key"
		echo "CC=$cc"
		echo "CC_VERSION=$("$cc" --version | head -n 1)"
		echo "JOBS=$JOBS"
		echo "EXTRACT_CONFIG_S=$((t1 - t0))"
		echo "COMPILE_S=$((t2 - t1))"
		echo "BUILD_S=$((t2 - t0))"
		echo "CPU_S=$cpu_s"
		echo "LOADAVG=$(cut -d' ' -f1-3 /proc/loadavg)"
		echo "BUILT_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "CHECKERS=$(checkers_of "$dir/linux/.config")"
		echo "STATUS=ready"
	} >"$dir/info.tmp"
	mv "$dir/info.tmp" "$dir/info"
	ln -sfn "$(basename "$dir")" "$BASE/current"
	# older builds (another source version or fragment) are dead weight
	local old
	for old in "$BASE"/*-*/; do
		old=${old%/}
		[ "$old" = "$dir" ] || [ ! -d "$old/linux" ] || rm -rf "$old"
	done
	find "$DEBS" -name "${SRCPKG}_*_all.deb" ! -name "$(basename "$deb")" -delete
	log "ready: $rel in $((t2 - t0)) s (extract+config $((t1 - t0)) s, compile $((t2 - t1)) s; $cpu_s CPU s)"
}

# The checkers a .config has, as one word list.
checkers_of() {
	local c=$1 o out=""
	for o in KASAN KASAN_GENERIC KASAN_INLINE KASAN_VMALLOC PROVE_LOCKING \
		PROVE_RCU DEBUG_ATOMIC_SLEEP DEBUG_PREEMPT DEBUG_KMEMLEAK UBSAN \
		UBSAN_BOUNDS UBSAN_SHIFT UBSAN_ALIGNMENT DEBUG_LIST; do
		grep -qx "CONFIG_$o=y" "$c" && out="$out $o"
	done
	echo "${out# }"
}

main() {
	local d
	case ${1:-} in
	"") build ;;
	--kdir) d=$(current); echo "$d/linux" ;;
	--vmlinux) d=$(current); echo "$d/linux/vmlinux" ;;
	--vmlinuz) current >/dev/null; die "the debug kernel has no bzImage: boot --vmlinux (PVH)" ;;
	--modules-dir) d=$(current); echo "$d/linux" ;;
	--version) d=$(current); info_of "$d" RELEASE ;;
	--cc) d=$(current); info_of "$d" CC ;;
	--info) d=$(current); cat "$d/info" ;;
	--is-current)
		# exit 0 when the built kernel matches today's fragment, compiler
		# and BUILD_REV (no network: a newer Debian source does not count)
		d=$(current)
		[ "$(info_of "$d" KEY)" = "$(cache_key "$(pick_cc)")" ] ||
			die "the built kernel $(info_of "$d" RELEASE) is stale (fragment, compiler or build script changed): run scripts/build-debug-kernel.sh"
		;;
	-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
}

main "$@"
