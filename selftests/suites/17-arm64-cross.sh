#!/usr/bin/env bash
# Cross-building for arm64 (issue 23, scripts/cross.mk): from a clean copy
# of the tree, `make ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-` builds an
# aarch64 agent and an eBPF object for arm64, `make deb ARCH=arm64` an
# arm64 package, the arm64 kernel headers of
# scripts/fetch-kernels.sh --arch arm64 build modules with aarch64 vermagic,
# and ember.ko is built for them. Everything is built in a temporary copy:
# no arm64 object is left where the x86-64 suites look. The aarch64 unwind
# tables of real Debian arm64 files are checked with a host test.
# Needs gcc-aarch64-linux-gnu (scripts/install-deps.sh) and Debian's mirror
# (or a filled cache: EMBER_CACHE, EMBER_OFFLINE=1).
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

CROSS=aarch64-linux-gnu-
export EMBER_CACHE=${EMBER_CACHE:-$PWD/.cache}
TMP=$(mktemp -d /tmp/ember-arm64.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
why() { tail -n "${2:-3}" "$1" | tr '\n' ' '; }

if ! command -v ${CROSS}gcc >/dev/null; then
	t_skip arm64-cross "no ${CROSS}gcc: run scripts/install-deps.sh"
	exit 0
fi

if scripts/fetch-arm64-sysroot.sh >"$TMP/sysroot.log" 2>&1; then
	t_pass arm64-sysroot
	SYSROOT_LIB=$(scripts/fetch-arm64-sysroot.sh --path)/usr/lib/aarch64-linux-gnu
else
	t_fail arm64-sysroot "$(why "$TMP/sysroot.log")"
	exit 0
fi

# the arm64 kernels first: the eBPF build takes its vmlinux.h from the BTF
# that fetch-kernels.sh cuts out of the arm64 6.1 image (scripts/cross.mk)
if ! kdir=$(scripts/fetch-kernels.sh --arch arm64 --kdir 6.1 2>"$TMP/fetch.log"); then
	t_fail arm64-kbuild "no arm64 6.1 kernel: $(why "$TMP/fetch.log")"
	exit 0
fi

# aarch64 unwind tables from Debian's arm64 xz, openssl, python3.11 and
# their libraries, and the vDSOs of the kernels above: every file
# compiles, at least the measured share of its code gets a rule
# (selftests/agent/test_unwind_a64.c, built and run on this host)
if scripts/fetch-arm64-real.sh >"$TMP/real.log" 2>&1; then
	if make -s -j2 agent/gen/tests/test_unwind_a64 >"$TMP/a64test.log" 2>&1; then
		agent/gen/tests/test_unwind_a64
	else
		t_fail arm64-unwind-tables "$(why "$TMP/a64test.log")"
	fi
else
	t_fail arm64-real-files "$(why "$TMP/real.log")"
fi

# a clean copy of the working tree (tracked and new files, no build outputs)
mkdir "$TMP/src"
git ls-files -z -co --exclude-standard |
	tar --null --ignore-failed-read -cf - -T - 2>/dev/null | tar -xf - -C "$TMP/src"
S=$TMP/src
MK=(make -C "$S" -s -j2 ARCH=arm64 "CROSS_COMPILE=$CROSS")

if "${MK[@]}" agent bpf >"$TMP/build.log" 2>&1; then
	t_pass arm64-build
else
	t_fail arm64-build "$(why "$TMP/build.log" 5)"
	exit 0
fi
machine() { readelf -h "$1" 2>/dev/null | sed -n 's/^ *Machine: *//p'; }
# the aarch64 unwinding tests built for arm64 and run under a private
# qemu-aarch64 (-cpu max: pointer authentication): its own live stack
# walked with its own tables, against libgcc's backtrace() and the
# libdwfl oracle, besides everything the host run above checks
if qemu=$(scripts/fetch-arm64-real.sh --qemu 2>"$TMP/qemu.log"); then
	if "${MK[@]}" agent/gen/tests/test_unwind_a64 >"$TMP/a64native.log" 2>&1; then
		QEMU_LD_PREFIX=/usr/aarch64-linux-gnu "$qemu" -cpu max \
			-E "LD_LIBRARY_PATH=$SYSROOT_LIB:/usr/aarch64-linux-gnu/lib" \
			-E "EMBER_CACHE=$EMBER_CACHE" "$S/agent/gen/tests/test_unwind_a64" |
			sed 's/^\(PASS\|FAIL\): /\1: qemu_/'
	else
		t_fail arm64-unwind-native-build "$(why "$TMP/a64native.log" 5)"
	fi
else
	t_fail arm64-qemu-user "$(why "$TMP/qemu.log")"
fi
t_check arm64-agent-elf test "$(machine "$S/agent/ember")" = AArch64
t_check arm64-preload-elf test "$(machine "$S/preload/libember-alloc.so")" = AArch64
t_check arm64-bpf-elf test "$(machine "$S/bpf/.output/arm64/ember.bpf.o")" = "Linux BPF"
# the programs' kernel types are arm64's (user_pt_regs), not the host's
t_check arm64-bpf-vmlinux grep -q '^struct user_pt_regs {' "$S/bpf/.output/arm64/vmlinux.h"
t_check arm64-bpf-target grep -q 'D__TARGET_ARCH_arm64' \
	<("${MK[@]}" -n -B bpf/.output/arm64/ember.bpf.o 2>&1)
# the tree now holds arm64 objects: a host build must refuse to mix them
t_check arm64-no-mixing bash -c "if out=\$(make -C '$S' -n agent 2>&1); then exit 1; fi
	grep -q 'run .make clean. before building for host' <<<\"\$out\""

# arm64 packages (the agent is rebuilt in make deb's staged copy)
if "${MK[@]}" deb >"$TMP/deb.log" 2>&1; then
	deb=$(ls "$S"/build/deb-arm64/ember_*_arm64.deb 2>/dev/null | head -n 1)
	mkdir "$TMP/deb"
	t_check arm64-deb bash -c "[ -n '$deb' ] && dpkg-deb -x '$deb' '$TMP/deb' &&
		[ \"\$(readelf -h '$TMP/deb/usr/bin/ember' | sed -n 's/^ *Machine: *//p')\" = AArch64 ] &&
		dpkg-deb -f '$deb' Depends | grep -q 'libc6 (>= '"
else
	t_fail arm64-deb "$(why "$TMP/deb.log" 5)"
fi

# the headers and the cross compiler: a trivial module gets aarch64 vermagic
mkdir "$TMP/hello"
printf '%s\n' '#include <linux/module.h>' 'MODULE_LICENSE("GPL");' >"$TMP/hello/hello.c"
echo 'obj-m := hello.o' >"$TMP/hello/Kbuild"
if make -s -C "$kdir" M="$TMP/hello" CROSS_COMPILE=$CROSS modules >"$TMP/hello.log" 2>&1; then
	t_check arm64-kbuild grep -q ' aarch64$' <(modinfo -F vermagic "$TMP/hello/hello.ko")
else
	t_fail arm64-kbuild "$(why "$TMP/hello.log")"
fi

# ember.ko for both arm64 kernels (kmod/arch.h, kmod/unwind_kernel_arm64.c)
for series in 6.1 6.12; do
	name=arm64-ember-ko$([ "$series" = 6.1 ] || echo "-$series")
	if ! kd=$(scripts/fetch-kernels.sh --arch arm64 --kdir "$series" 2>"$TMP/fetch.log"); then
		t_fail "$name" "no arm64 $series kernel: $(why "$TMP/fetch.log")"
	elif "${MK[@]}" module KDIR="$kd" >"$TMP/module.log" 2>&1; then
		t_check "$name" grep -q ' aarch64$' <(modinfo -F vermagic "$S/ember.ko")
	else
		t_fail "$name" "$(grep -m 3 'error' "$TMP/module.log" | tr '\n' ' ')"
	fi
done
