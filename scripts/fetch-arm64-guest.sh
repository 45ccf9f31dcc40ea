#!/usr/bin/env bash
# Fetch the arm64 user space of the test VMs (selftests/vm/run-vm.sh --arch
# arm64) into the cache: Debian 12's busybox-static for the initramfs, and
# the real Debian binaries the tests profile or need (bash, xz, openssl,
# python3.11) with every library they load.
#
#   scripts/fetch-arm64-guest.sh            fetch when missing or outdated
#   scripts/fetch-arm64-guest.sh --path     print the guest root (fetch first)
#   scripts/fetch-arm64-guest.sh --busybox  print its static busybox (fetch first)
#   scripts/fetch-arm64-guest.sh --set bench [--path]
#       a second root (guest-arm64-bench) with bpftrace too, for
#       bench/bpf-floor-arm64.sh: its LLVM closure (~150 MB) stays out of
#       the root the CI suites use (run-vm.sh: EMBER_ARM64_GUEST_SET=bench)
#
# Guest paths are Debian's (/bin/bash, /usr/bin/xz, /usr/bin/openssl,
# /usr/bin/python3.11, /usr/lib/python3.11/...): pass them to run-vm.sh
# --arch arm64 --host-file.
#
# How: the private apt config of scripts/fetch-kernels.sh --arch arm64
# (.cache/apt-arm64/; the host's apt sources and dpkg architectures are never
# touched), `apt-get download` of the packages below and their Depends
# closure, `dpkg-deb -x` into .cache/guest-arm64/. Nothing runs from that
# tree on the host: run-vm.sh copies the files a guest asks for (--host-file
# PATH looks up PATH there) and their shared-library closure (read with
# readelf, as the host's ldd cannot run aarch64 programs) into the initramfs.
#
# Idempotent: the resolved NAME=VERSION list is kept in .packages; when the
# lists resolve to the same set, nothing is done (about 1 s).
# Environment: as scripts/fetch-kernels.sh (EMBER_CACHE, EMBER_OFFLINE=1, ...).
set -euo pipefail

GUEST_PKGS=(
	busybox-static
	# real Debian arm64 programs for the tests (issue 23: python3.11, xz,
	# openssl) and bash for the test scripts that need it
	bash xz-utils openssl python3.11-minimal
	# python's _hashlib and json (selftests/unwind/check-real.sh)
	libpython3.11-stdlib
	# cyclictest for the PREEMPT_RT latency (selftests/suites/36-rt-vm.sh)
	rt-tests
)

# shellcheck disable=SC2034 # read by fetch-kernels.sh
EMBER_KARCH=arm64
# shellcheck source=fetch-kernels.sh
. "$(dirname "$0")/fetch-kernels.sh"
GROOT=$CACHE/guest-arm64
if [ "${1:-}" = --set ]; then
	case ${2:-} in
	bench) GUEST_PKGS+=(bpftrace); GROOT=$CACHE/guest-arm64-bench ;;
	*) echo "fetch-arm64-guest: unknown set '${2:-}' (bench)" >&2; exit 1 ;;
	esac
	shift 2
fi
DEBS=$APTDIR/$(basename "$GROOT")-debs

glog() { echo "fetch-arm64-guest: $*" >&2; }

fetch_guest() {
	mkdir -p "$CACHE"
	exec {lock_fd}>"$CACHE/.$(basename "$GROOT").lock"
	flock "$lock_fd"
	apt_setup
	if ! apt_refresh; then
		[ -e "$GROOT/.packages" ] && { glog "offline: using cached $GROOT"; return 0; }
		glog "error: cannot update package lists and nothing cached"
		return 1
	fi
	local want
	want=$(apt-get -s -q install --no-install-recommends "${GUEST_PKGS[@]}" 2>"$APTDIR/guest-sim.err" |
		sed -nE 's/^Inst ([^ ]+) \(([^ ]+) .*/\1=\2/p' | sort)
	[ -n "$want" ] || { glog "error: apt could not resolve the packages:"; cat "$APTDIR/guest-sim.err" >&2; return 1; }
	want=$(printf '# format 1\n%s' "$want")
	if [ -e "$GROOT/.packages" ] && [ "$want" = "$(cat "$GROOT/.packages")" ]; then
		return 0
	fi
	glog "fetching $(($(wc -l <<<"$want") - 1)) arm64 packages into $GROOT"
	rm -rf "$DEBS" && mkdir -p "$DEBS"
	# shellcheck disable=SC2046
	(cd "$DEBS" && apt-get -q download $(sed 1d <<<"$want") >"$APTDIR/guest-download.log" 2>&1) || {
		tail -n 5 "$APTDIR/guest-download.log" >&2
		glog "error: apt-get download failed (see $APTDIR/guest-download.log)"
		return 1
	}
	rm -rf "$GROOT.new" && mkdir -p "$GROOT.new"
	local f t rel
	for f in "$DEBS"/*.deb; do
		dpkg-deb -x "$f" "$GROOT.new"
	done
	# absolute links resolve inside the tree (run-vm.sh follows them)
	while IFS= read -r f; do
		t=$(readlink "$f")
		rel=$(realpath -m --relative-to="$(dirname "$f")" "$GROOT.new$t")
		ln -sfn "$rel" "$f"
	done < <(find "$GROOT.new" -type l -lname '/*')
	rm -rf "$GROOT.new/usr/share/doc" "$GROOT.new/usr/share/man" "$GROOT.new/usr/share/locale"
	file -L "$GROOT.new/bin/busybox" | grep -q 'ARM aarch64.*statically linked' || {
		glog "error: $GROOT.new/bin/busybox is not a static aarch64 program"
		return 1
	}
	echo "$want" >"$GROOT.new/.packages"
	rm -rf "$GROOT" && mv "$GROOT.new" "$GROOT"
	rm -rf "$DEBS"
	glog "ready: $GROOT ($(du -sh "$GROOT" | cut -f1))"
}

case ${1:-} in
--path) fetch_guest && echo "$GROOT" ;;
--busybox) fetch_guest && echo "$GROOT/bin/busybox" ;;
"") fetch_guest ;;
-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
*) glog "error: unknown option $1 (see --help)"; exit 1 ;;
esac
