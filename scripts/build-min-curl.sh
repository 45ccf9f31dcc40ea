#!/usr/bin/env bash
# A small, static libcurl for the slim agent (agent/agent.mk:
# EMBER_STATIC=1 EMBER_CURL_PREFIX=...; docs/embedded.md).
#
#   scripts/build-min-curl.sh [--arch arm64|host] [--tls none|openssl]
#       prints the install prefix (<cache>/min-curl-<arch>-<tls>) on
#       standard output; builds it when missing or older than this script
#
# Why: ember keeps libcurl for OTLP/HTTP (retries, timeouts, proxies,
# TLS, IPv6 and a URL parser, maintained upstream), but Debian's libcurl4
# brings 30 libraries with it (LDAP, Kerberos, RTMP, SSH, IDN, PSL,
# brotli, nghttp2...), about 14 MiB an image does not want. This is the
# same library, Debian 12's source with Debian's patches (security fixes),
# configured the way an image's build (Buildroot, Yocto) would: HTTP only,
# no optional dependency, a static archive, -Os. --tls openssl also
# enables https through the OpenSSL of the sysroot (linked shared: the
# image's own TLS library). Everything a cmake run needs is in
# scripts/install-deps.sh (cmake, the cross gcc).
#
# The sources are pinned by SHA-256 (the values of Debian's signed .dsc)
# and kept in <cache>/src; EMBER_OFFLINE=1 uses only what is there.
set -euo pipefail

CURL_VER=7.88.1
DEB_REV=10+deb12u15
ORIG_SHA=cdb38b72e36bc5d33d5b8810f8018ece1baa29a8f215b4495e495ded82bbf3c7
DEBIAN_SHA=961b78bc48492c5693e4decb352ddd176f343260a8956f48b2887874048ef23b
MIRROR=${EMBER_DEBIAN_MIRROR:-http://deb.debian.org/debian}

arch=host tls=none
while [ $# -gt 0 ]; do
	case $1 in
	--arch) arch=$2; shift 2 ;;
	--tls) tls=$2; shift 2 ;;
	-h | --help) sed -n '2,22p' "$0"; exit 0 ;;
	*) echo "build-min-curl: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
case $arch in host | arm64) ;; *) echo "build-min-curl: --arch host or arm64" >&2; exit 2 ;; esac
case $tls in none | openssl) ;; *) echo "build-min-curl: --tls none or openssl" >&2; exit 2 ;; esac

TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${EMBER_CACHE:-$TOP/.cache}
SRC=$CACHE/src
PREFIX=$CACHE/min-curl-$arch-$tls
log() { echo "build-min-curl: $*" >&2; }

if [ -e "$PREFIX/lib/libcurl.a" ] && [ "$PREFIX/.built" -nt "$0" ]; then
	echo "$PREFIX"
	exit 0
fi

fetch() { # NAME SHA256
	local f=$SRC/$1
	if ! { [ -e "$f" ] && echo "$2  $f" | sha256sum -c --quiet - 2>/dev/null; }; then
		[ "${EMBER_OFFLINE:-0}" = 1 ] && { log "error: $1 not in $SRC (EMBER_OFFLINE=1)"; exit 1; }
		mkdir -p "$SRC"
		curl -fsSL -o "$f.part" "$MIRROR/pool/main/c/curl/$1" ||
			{ log "error: cannot download $MIRROR/pool/main/c/curl/$1"; exit 1; }
		echo "$2  $f.part" | sha256sum -c --quiet - ||
			{ log "error: $1 does not have the pinned SHA-256"; rm -f "$f.part"; exit 1; }
		mv "$f.part" "$f"
	fi
}
fetch "curl_$CURL_VER.orig.tar.gz" "$ORIG_SHA"
fetch "curl_$CURL_VER-$DEB_REV.debian.tar.xz" "$DEBIAN_SHA"

WORK=$(mktemp -d "$CACHE/min-curl-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
tar -xzf "$SRC/curl_$CURL_VER.orig.tar.gz" -C "$WORK"
S=$WORK/curl-$CURL_VER
tar -xJf "$SRC/curl_$CURL_VER-$DEB_REV.debian.tar.xz" -C "$S"
# Debian's patch series (quilt format: one file name a line, # comments)
while read -r p _; do
	case $p in '' | '#'*) continue ;; esac
	patch -s -p1 -d "$S" <"$S/debian/patches/$p" || { log "error: Debian patch $p does not apply"; exit 1; }
done <"$S/debian/patches/series"

cm=(-G Ninja -S "$S" -B "$WORK/build" -DCMAKE_BUILD_TYPE=MinSizeRel
	-DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib
	-DCMAKE_POSITION_INDEPENDENT_CODE=ON
	-DCMAKE_C_FLAGS="-ffunction-sections -fdata-sections"
	-DBUILD_SHARED_LIBS=OFF -DBUILD_CURL_EXE=OFF -DBUILD_TESTING=OFF
	-DHTTP_ONLY=ON -DCURL_DISABLE_COOKIES=ON -DCURL_DISABLE_ALTSVC=ON
	-DCURL_DISABLE_HSTS=ON -DCURL_DISABLE_NETRC=ON -DCURL_DISABLE_MIME=ON
	-DCURL_DISABLE_DOH=ON -DCURL_DISABLE_LDAP=ON -DCURL_DISABLE_LDAPS=ON
	-DCURL_ZLIB=OFF -DCURL_BROTLI=OFF -DCURL_ZSTD=OFF -DUSE_NGHTTP2=OFF
	-DUSE_LIBIDN2=OFF -DCURL_USE_LIBSSH2=OFF -DCURL_USE_LIBPSL=OFF
	-DCURL_USE_GSSAPI=OFF -DENABLE_UNIX_SOCKETS=OFF -DENABLE_THREADED_RESOLVER=ON
	-DENABLE_MANUAL=OFF -DCURL_CA_BUNDLE=auto -DCURL_CA_PATH=auto)
if [ "$tls" = openssl ]; then
	cm+=(-DCURL_ENABLE_SSL=ON -DCURL_USE_OPENSSL=ON)
else
	cm+=(-DCURL_ENABLE_SSL=OFF -DCURL_USE_OPENSSL=OFF)
fi
# OpenSSL's headers for arm64: libssl-dev is not in the agent's sysroot
# (nothing else needs it), so it is unpacked beside it, once.
arm64_openssl_dev() {
	local d=$CACHE/min-curl-libssl-dev-arm64
	if [ ! -e "$d/usr/include/openssl/ssl.h" ]; then
		(
			# shellcheck disable=SC2034 # read by fetch-kernels.sh
			EMBER_KARCH=arm64
			# shellcheck source=scripts/fetch-kernels.sh
			. "$TOP/scripts/fetch-kernels.sh"
			apt_setup
			apt_refresh || [ "${EMBER_OFFLINE:-0}" = 1 ]
			rm -rf "$d" && mkdir -p "$d.debs"
			(cd "$d.debs" && apt-get -q download libssl-dev >/dev/null)
			dpkg-deb -x "$d.debs"/libssl-dev_*.deb "$d"
			rm -rf "$d.debs"
		) >&2 || { log "error: cannot fetch libssl-dev for arm64"; exit 1; }
	fi
	echo "$d"
}

if [ "$arch" = arm64 ]; then
	SYSROOT=$(EMBER_CACHE=$CACHE "$TOP/scripts/fetch-arm64-sysroot.sh" --path)
	if [ "$tls" = openssl ]; then
		ossl=$(arm64_openssl_dev)
		lib=$SYSROOT/usr/lib/aarch64-linux-gnu
		cm+=(-DOPENSSL_INCLUDE_DIR="$ossl/usr/include"
			-DOPENSSL_SSL_LIBRARY="$lib/libssl.so.3"
			-DOPENSSL_CRYPTO_LIBRARY="$lib/libcrypto.so.3"
			-DCMAKE_C_FLAGS="-ffunction-sections -fdata-sections -I$ossl/usr/include -I$ossl/usr/include/aarch64-linux-gnu")
	fi
	cm+=(-DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64
		-DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc
		-DCMAKE_FIND_ROOT_PATH="$SYSROOT"
		-DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER
		-DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY
		-DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY)
fi
log "building libcurl $CURL_VER-$DEB_REV ($arch, tls $tls) into $PREFIX"
cmake "${cm[@]}" >"$WORK/cmake.log" 2>&1 || { tail -n 30 "$WORK/cmake.log" >&2; log "error: cmake failed"; exit 1; }
cmake --build "$WORK/build" -j2 >"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log" >&2; log "error: build failed"; exit 1; }
rm -rf "$PREFIX"
cmake --install "$WORK/build" >/dev/null
# the sysroot's path in the .pc of a cross build means nothing elsewhere
# (and OpenSSL's libraries by name: the agent's link finds them there)
[ "$arch" = arm64 ] && sed -i -e "s|$SYSROOT||g" \
	-e 's|[^ ]*/\(libssl\.so[.0-9]*\)|-l:\1|g; s|[^ ]*/\(libcrypto\.so[.0-9]*\)|-l:\1|g' \
	"$PREFIX/lib/pkgconfig/libcurl.pc"
touch "$PREFIX/.built"
log "ready: $PREFIX ($(du -k "$PREFIX/lib/libcurl.a" | cut -f1) KiB libcurl.a)"
echo "$PREFIX"
