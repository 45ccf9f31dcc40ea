#!/usr/bin/env bash
# Fetch the arm64 libraries the agent links (headers, .so links, .pc files
# and the runtime libraries they need) into a sysroot under the cache, for
# `make ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-` (scripts/cross.mk).
#
#   scripts/fetch-arm64-sysroot.sh          fetch when missing or outdated
#   scripts/fetch-arm64-sysroot.sh --path   print the sysroot (fetch first)
#
# How: Debian 12's arm64 packages, downloaded with the private apt config of
# scripts/fetch-kernels.sh --arch arm64 (.cache/apt-arm64/; the host's apt
# sources and dpkg architectures are never touched) and unpacked with
# dpkg-deb -x into .cache/sysroot-arm64/. Never `apt-get install ...:arm64`:
# that pulls gcc-12:arm64 and removes the host's amd64 toolchain.
#
# Which packages: the -dev packages below and their Depends closure, as apt
# resolves it against the current package lists (no version is written
# here), minus what the cross toolchain brings under /usr/aarch64-linux-gnu:
# every P for which the host has P-arm64-cross installed (libc6, libc6-dev,
# libgcc-s1, linux-libc-dev: glibc, its headers, the kernel UAPI headers),
# and libc6-dev's tools that no link needs (libc-dev-bin, gcc-12-base).
# Absolute symlinks are made relative so the tree works wherever it is;
# the .pc files keep prefix=/usr and are read with PKG_CONFIG_SYSROOT_DIR.
# shlibs.local gathers the shlibs files of every package of the closure
# (the toolchain's libc6 too): `make deb ARCH=arm64` computes the
# package's Depends from it (dpkg-shlibdeps -L), as no arm64 library is
# installed in the host's dpkg database.
#
# Idempotent: the resolved NAME=VERSION list is kept in the sysroot's
# .packages; when the lists resolve to the same set, nothing is done.
# Environment: as scripts/fetch-kernels.sh (EMBER_CACHE, EMBER_OFFLINE=1, ...).
set -euo pipefail

# The agent's libraries (agent/agent.mk AGENT_PKGS, by Debian package).
SYSROOT_DEV_PKGS=(
	libnl-3-dev libnl-genl-3-dev libelf-dev libdw-dev libbpf-dev
	libprotobuf-c-dev libcurl4-openssl-dev zlib1g-dev
	libzstd-dev liblzma-dev libbz2-dev
	# agent/mk/sym-tests.mk: the demangler and the debuginfod client
	libiberty-dev libdebuginfod-dev
)

# shellcheck disable=SC2034 # read by fetch-kernels.sh
EMBER_KARCH=arm64
# shellcheck source=fetch-kernels.sh
. "$(dirname "$0")/fetch-kernels.sh"
SYSROOT=$CACHE/sysroot-arm64
DEBS=$APTDIR/sysroot-debs

slog() { echo "fetch-arm64-sysroot: $*" >&2; }

# NAME=VERSION of every package apt would install for PKGS on an empty system.
closure() {
	apt-get -s -q install --no-install-recommends "$@" 2>"$APTDIR/sysroot-sim.err" |
		sed -nE 's/^Inst ([^ ]+) \(([^ ]+) .*/\1=\2/p' | sort
}

fetch_sysroot() {
	mkdir -p "$CACHE"
	exec {lock_fd}>"$CACHE/.sysroot-arm64.lock"
	flock "$lock_fd"
	apt_setup
	if ! apt_refresh; then
		[ -e "$SYSROOT/.packages" ] && { slog "offline: using cached $SYSROOT"; return 0; }
		slog "error: cannot update package lists and nothing cached"
		return 1
	fi
	local all want
	all=$(closure "${SYSROOT_DEV_PKGS[@]}")
	[ -n "$all" ] || { slog "error: apt could not resolve the packages:"; cat "$APTDIR/sysroot-sim.err" >&2; return 1; }
	want=$(while IFS='=' read -r p v; do
		case $p in libc-dev-bin | gcc-12-base) continue ;; esac
		dpkg-query -W -f='${Status}' "$p-arm64-cross" 2>/dev/null |
			grep -q 'ok installed' && continue
		echo "$p=$v"
	done <<<"$all")
	# the first line changes when the sysroot's layout does
	want=$(printf '# format 2 (shlibs.local)\n%s' "$want")
	if [ -e "$SYSROOT/.packages" ] && [ "$want" = "$(cat "$SYSROOT/.packages")" ]; then
		touch "$SYSROOT/.packages" # checked: newer than this script
		return 0
	fi
	slog "fetching $(($(wc -l <<<"$want") - 1)) arm64 packages into $SYSROOT"
	rm -rf "$DEBS" && mkdir -p "$DEBS"
	# shellcheck disable=SC2046
	(cd "$DEBS" && apt-get -q download $(cat <<<"$all") >"$APTDIR/sysroot-download.log" 2>&1) || {
		tail -n 5 "$APTDIR/sysroot-download.log" >&2
		slog "error: apt-get download failed (see $APTDIR/sysroot-download.log)"
		return 1
	}
	rm -rf "$SYSROOT.new" && mkdir -p "$SYSROOT.new"
	local f t rel
	for f in "$DEBS"/*.deb; do
		dpkg-deb -I "$f" shlibs >>"$SYSROOT.new/shlibs.local" 2>/dev/null || true
		grep -qx "$(dpkg-deb -f "$f" Package)=.*" <<<"$want" || continue
		dpkg-deb -x "$f" "$SYSROOT.new"
	done
	# absolute links (e.g. libfoo.so -> /lib/aarch64-linux-gnu/libfoo.so.1)
	while IFS= read -r f; do
		t=$(readlink "$f")
		rel=$(realpath -m --relative-to="$(dirname "$f")" "$SYSROOT.new$t")
		ln -sfn "$rel" "$f"
	done < <(find "$SYSROOT.new" -type l -lname '/*')
	# Debian 12 ships some libraries in /lib/aarch64-linux-gnu: one search
	# directory is simpler for -L and -rpath-link.
	if [ -d "$SYSROOT.new/lib/aarch64-linux-gnu" ]; then
		mkdir -p "$SYSROOT.new/usr/lib/aarch64-linux-gnu"
		for f in "$SYSROOT.new"/lib/aarch64-linux-gnu/*; do
			t=$SYSROOT.new/usr/lib/aarch64-linux-gnu/${f##*/}
			[ -e "$t" ] || [ -L "$t" ] || ln -s "../../../lib/aarch64-linux-gnu/${f##*/}" "$t"
		done
	fi
	rm -rf "$SYSROOT.new/usr/share/doc" "$SYSROOT.new/usr/share/man"
	echo "$want" >"$SYSROOT.new/.packages"
	rm -rf "$SYSROOT" && mv "$SYSROOT.new" "$SYSROOT"
	rm -rf "$DEBS"
	slog "ready: $SYSROOT ($(du -sh "$SYSROOT" | cut -f1))"
}

case ${1:-} in
--path) fetch_sysroot && echo "$SYSROOT" ;;
"") fetch_sysroot ;;
-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
*) slog "error: unknown option $1 (see --help)"; exit 1 ;;
esac
