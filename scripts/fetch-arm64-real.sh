#!/usr/bin/env bash
# Fetch real Debian 12 arm64 programs and libraries, unpacked, for the
# aarch64 unwind-table checks (selftests/agent/test_unwind_a64.c reads
# $EMBER_CACHE/arm64-real/root): xz-utils, openssl, python3.11-minimal
# and the libraries they load, plus the arm64 vDSOs cut out of the
# kernels scripts/fetch-kernels.sh --arch arm64 cached (vdso-SERIES.so).
#
#   scripts/fetch-arm64-real.sh          fetch when missing
#   scripts/fetch-arm64-real.sh --path   print the root (fetch first)
#   scripts/fetch-arm64-real.sh --qemu   print the path of a private
#       qemu-aarch64-static (Debian's amd64 qemu-user-static, unpacked
#       under the cache, no binfmt registered) to run arm64 tests with
#
# How: the private apt configuration of scripts/fetch-kernels.sh --arch
# arm64 (the host's apt sources and dpkg architectures are never
# touched), `apt-get download` and `dpkg-deb -x`. Never `apt-get install`.
# Environment: as scripts/fetch-kernels.sh (EMBER_CACHE, EMBER_OFFLINE=1).
set -euo pipefail

PKGS=(xz-utils liblzma5 openssl libssl3 python3.11-minimal
	libpython3.11-minimal libc6 libc6-dev libstdc++6 libgcc-s1 zlib1g
	libexpat1)

# shellcheck disable=SC2034 # read by fetch-kernels.sh
EMBER_KARCH=arm64
# shellcheck source=fetch-kernels.sh
. "$(dirname "$0")/fetch-kernels.sh"
REAL=$CACHE/arm64-real

rlog() { echo "fetch-arm64-real: $*" >&2; }

# The vDSO image inside an arm64 kernel Image: the ELF that defines
# __kernel_rt_sigreturn.
cut_vdso() {
	python3 - "$1" "$2" <<'PY'
import gzip, struct, sys
raw = open(sys.argv[1], "rb").read()
try:
    raw = gzip.decompress(raw)
except OSError:
    pass
i = 0
while (i := raw.find(b"\x7fELF\x02\x01\x01", i)) >= 0:
    mach, = struct.unpack_from("<H", raw, i + 18)
    shoff, = struct.unpack_from("<Q", raw, i + 0x28)
    shentsize, shnum = struct.unpack_from("<HH", raw, i + 0x3a)
    size = shoff + shentsize * shnum
    if mach == 183 and 0 < size < 1 << 20 and \
            b"__kernel_rt_sigreturn" in raw[i:i + size]:
        open(sys.argv[2], "wb").write(raw[i:i + size])
        sys.exit(0)
    i += 4
sys.exit(1)
PY
}

fetch_real() {
	mkdir -p "$CACHE"
	exec {lock_fd}>"$CACHE/.arm64-real.lock"
	flock "$lock_fd"
	if [ ! -e "$REAL/root/.done" ]; then
		apt_setup
		apt_refresh || { rlog "error: cannot update the package lists"; return 1; }
		rm -rf "$REAL" && mkdir -p "$REAL/debs" "$REAL/root"
		(cd "$REAL/debs" && apt-get -q download "${PKGS[@]}" >"$REAL/download.log" 2>&1) || {
			tail -n 5 "$REAL/download.log" >&2
			rlog "error: apt-get download failed (see $REAL/download.log)"
			return 1
		}
		for f in "$REAL"/debs/*.deb; do dpkg-deb -x "$f" "$REAL/root"; done
		rm -rf "$REAL/debs" "$REAL/root/usr/share"
		touch "$REAL/root/.done"
		rlog "ready: $REAL/root ($(du -sh "$REAL/root" | cut -f1))"
	fi
	local img series
	for img in "$CACHE"/kernels-arm64/*/root/boot/vmlinuz-*; do
		[ -e "$img" ] || continue
		series=${img#"$CACHE"/kernels-arm64/}
		series=${series%%/*}
		[ -e "$REAL/root/vdso-$series.so" ] ||
			cut_vdso "$img" "$REAL/root/vdso-$series.so" ||
			rlog "warning: no vDSO found in $img"
	done
}

fetch_qemu() {
	local q=$CACHE/qemu-user/usr/bin/qemu-aarch64-static
	mkdir -p "$CACHE"
	exec {lock_fd}>"$CACHE/.qemu-user.lock"
	flock "$lock_fd"
	if [ ! -x "$q" ]; then
		apt_setup
		apt_refresh || { rlog "error: cannot update the package lists"; return 1; }
		rm -rf "$CACHE/qemu-user" && mkdir -p "$CACHE/qemu-user/debs"
		(cd "$CACHE/qemu-user/debs" && apt-get -q download qemu-user-static:amd64 \
			>"$CACHE/qemu-user/download.log" 2>&1) || {
			rlog "error: apt-get download qemu-user-static failed (see $CACHE/qemu-user/download.log)"
			return 1
		}
		dpkg-deb -x "$CACHE"/qemu-user/debs/*.deb "$CACHE/qemu-user"
		rm -rf "$CACHE/qemu-user/debs"
	fi
	echo "$q"
}

case ${1:-} in
--path) fetch_real && echo "$REAL/root" ;;
--qemu) fetch_qemu ;;
"") fetch_real ;;
-h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
*) rlog "error: unknown option $1 (see --help)"; exit 1 ;;
esac
