#!/usr/bin/env bash
# Fetch Debian 13 (trixie)'s CPython 3.13 (or sid's 3.14) into the cache, for the agent's
# Python-detection tests (selftests/agent/python/): the interpreter, its
# libpython, its standard library and trixie's libc, unpacked with dpkg-deb -x into
# $EMBER_CACHE/python-trixie/ (nothing installed, the host's apt sources
# and dpkg never touched: a private apt configuration under
# $EMBER_CACHE/apt-trixie/, like scripts/fetch-kernels.sh's).
#
#   scripts/fetch-python.sh          fetch when missing
#   scripts/fetch-python.sh --path   print the unpacked root (fetch first)
#   scripts/fetch-python.sh --release sid [--path]
#                                    Debian unstable's CPython 3.14 and its
#                                    libc, into python-sid/
#   scripts/fetch-python.sh --arch arm64 [--release bookworm|sid] [--path]
#                                    arm64's (the decoders' aarch64 paths:
#                                    trixie's 3.13, bookworm's 3.11, sid's
#                                    3.14 and their glibc), into
#                                    python-RELEASE-arm64/
#
# Idempotent: a root with its .done stamp is not fetched again. Offline
# (EMBER_OFFLINE=1 or the lists cannot be fetched) it exits 2, which the
# tests take as "skip".
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${EMBER_CACHE:-$TOP/.cache}
ARCH=amd64 RELEASE=trixie PRINT=
while [ $# -gt 0 ]; do
	case $1 in
	--path) PRINT=1; shift ;;
	--arch) ARCH=$2; shift 2 ;;
	--release) RELEASE=$2; shift 2 ;;
	*) echo "fetch-python.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
SFX=$RELEASE$([ "$ARCH" = amd64 ] || echo "-$ARCH")
APTDIR=$CACHE/apt-$SFX
ROOT=$CACHE/python-$SFX
MIRROR=${EMBER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
case $RELEASE in
trixie) PKGS=(python3.13-minimal libpython3.13-minimal libpython3.13-stdlib libpython3.13 libc6) ;;
bookworm) PKGS=(python3.11-minimal libpython3.11-minimal libc6) ;;
sid) PKGS=(python3.14-minimal libpython3.14-minimal libpython3.14-stdlib libpython3.14 libc6 python3.15-minimal) ;;
*) echo "fetch-python.sh: release trixie, bookworm or sid" >&2; exit 2 ;;
esac
[ "$ARCH" = amd64 ] || PKGS=("${PKGS[@]/%/:$ARCH}")

log() { echo "fetch-python: $*" >&2; }

# the stamp names the package set: a new set is fetched again
WANT="# ${PKGS[*]}"
if [ -e "$ROOT/.done" ] && [ "$(head -1 "$ROOT/.done")" = "$WANT" ]; then
	[ -n "$PRINT" ] && echo "$ROOT"
	exit 0
fi
[ "${EMBER_OFFLINE:-}" = 1 ] && { log "offline"; exit 2; }
mkdir -p "$CACHE"
exec {lock_fd}>"$CACHE/.python-$SFX.lock"
flock "$lock_fd"
if [ ! -e "$ROOT/.done" ] || [ "$(head -1 "$ROOT/.done")" != "$WANT" ]; then
	mkdir -p "$APTDIR"/{lists/partial,cache/archives/partial,state,debs,etc/apt.conf.d,etc/sources.list.d,etc/preferences.d}
	: >"$APTDIR/state/status"
	echo "deb [signed-by=$KEYRING] $MIRROR $RELEASE main" >"$APTDIR/etc/sources.list"
	cat >"$APTDIR/etc/apt.conf" <<-EOC
		Dir::Etc::Parts "$APTDIR/etc/apt.conf.d";
		Dir::Etc::SourceList "$APTDIR/etc/sources.list";
		Dir::Etc::SourceParts "$APTDIR/etc/sources.list.d";
		Dir::Etc::PreferencesParts "$APTDIR/etc/preferences.d";
		Dir::State "$APTDIR/state";
		Dir::State::Lists "$APTDIR/lists";
		Dir::State::status "$APTDIR/state/status";
		Dir::Cache "$APTDIR/cache";
		APT::Architecture "$ARCH";
		APT::Architectures { "$ARCH"; };
		Acquire::Languages "none";
		APT::Sandbox::User "$(id -un)";
	EOC
	# sid's Release in a mirror snapshot can carry an expired Valid-Until;
	# unstable is never frozen, so only its freshness check is dropped
	[ "$RELEASE" = sid ] && echo 'Acquire::Check-Valid-Until "false";' >>"$APTDIR/etc/apt.conf"
	export APT_CONFIG=$APTDIR/etc/apt.conf
	if ! apt-get -q update >"$APTDIR/update.log" 2>&1 ||
		grep -qE '^(Err:|E: |W: Failed to fetch)' "$APTDIR/update.log"; then
		log "cannot update the $RELEASE package lists (offline?): $APTDIR/update.log"
		exit 2
	fi
	rm -f "$APTDIR"/debs/*.deb
	(cd "$APTDIR/debs" && apt-get -q download "${PKGS[@]}" >"$APTDIR/download.log" 2>&1) ||
		{ log "download failed: $APTDIR/download.log"; exit 2; }
	rm -rf "$ROOT.tmp"
	mkdir -p "$ROOT.tmp"
	for d in "$APTDIR"/debs/*.deb; do dpkg-deb -x "$d" "$ROOT.tmp"; done
	{ echo "$WANT"; (cd "$APTDIR/debs" && ls); } >"$ROOT.tmp/.done"
	rm -rf "$ROOT"
	mv "$ROOT.tmp" "$ROOT"
	log "unpacked into $ROOT"
fi
[ -n "$PRINT" ] && echo "$ROOT"
exit 0
