#!/usr/bin/env bash
# ember.ko on arm64 (issue 23): the module and selftests/kmod's workloads
# cross-built by scripts/build-arm64.sh (its own build directory), the
# arm64 test client (ember-test, against the arm64 sysroot's libnl), an
# AArch32 compat32 and an fpbusy with PAC-signed return addresses built
# here, then selftests/kmod/guest.sh in Debian's arm64 kernels under
# qemu-system-aarch64 (selftests/vm/run-vm.sh --arch arm64). Its
# PASS/FAIL/SKIP lines are relayed as "kmod-arm64[SERIES]: ...". Each
# kernel also gets `make module-check` (W=1, sparse, checkpatch --strict),
# as 30-kmod-vm.sh does for x86-64.
#
# Opt-in (EMBER_ARM64=1, or EMBER_VM_KERNELS naming an arm64 series):
# CI's one arm64 kernel is 23-arm64-vm's 6.1, which records with the
# module too; this suite's 18 guest tests per kernel (~4 min each under
# TCG) do not fit CI's hour beside it.
# Kernels: 6.1 and 6.12 with EMBER_ARM64=1; or the arm64 series in
# EMBER_VM_KERNELS. EMBER_KMOD_ARM64_TESTS: guest.sh's tests (default
# below: arm64 TCG is slow, the x86-64-only nmi and the long stress tests
# are left out). Run alone: SUITES="31-kmod-arm64-vm" selftests/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. selftests/lib.sh
export EMBER_CACHE=${EMBER_CACHE:-$PWD/.cache}

TESTS=${EMBER_KMOD_ARM64_TESTS:-rate ustack ustack-pac kstack compat32 filter-pid ring-full badreq unwind alloc unload offcpu-blocks offcpu-min lifecycle lock-futex lock-kernel nlfuzz tablefuzz py-badreq py-chain py-scribble py-unload}
if [ "${EMBER_ARM64:-}" != 1 ] && [ -z "${EMBER_VM_KERNELS:-}" ]; then
	echo "SKIP: kmod-arm64: opt-in (~4 min per arm64 kernel under TCG; CI runs 23-arm64-vm, which records with the module on arm64 6.1): run EMBER_ARM64=1 SUITES=31-kmod-arm64-vm selftests/run.sh"
	exit 0
fi
kernels="6.1 6.12"
if [ -n "${EMBER_VM_KERNELS:-}" ]; then
	kernels=""
	for k in $EMBER_VM_KERNELS; do
		case $k in 6.1 | 6.12 | 6.12-rt) kernels="$kernels $k" ;; esac
	done
	if [ -z "$kernels" ]; then
		t_skip kmod-arm64 "EMBER_VM_KERNELS='$EMBER_VM_KERNELS' names no arm64 series (6.1, 6.12)"
		exit 0
	fi
fi
for tool in qemu-system-aarch64 aarch64-linux-gnu-gcc clang ld.lld; do
	if ! command -v $tool >/dev/null; then
		t_skip kmod-arm64 "no $tool: run scripts/install-deps.sh"
		exit 0
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ember-31.XXXXXX")
trap 'rm -rf "$work"' EXIT
logs=${EMBER_TEST_LOGS:-selftests/logs}/vm
mkdir -p "$logs"
oneline() { tail -n "${2:-3}" "$1" | tr '\n' ' ' | cut -c1-400; }

# ------------------------------------------------------------ build
mods=()
for k in $kernels; do mods+=(--module "$k"); done
if ! scripts/build-arm64.sh --quiet "${mods[@]}" >"$work/build.out" 2>"$logs/kmod-arm64-build.log"; then
	t_fail "kmod-arm64: build" "$(oneline "$logs/kmod-arm64-build.log")"
	exit 0
fi
val() { sed -n "s/^$1=//p" "$work/build.out"; }
tests=$(val tests)

P=$work/kmod
B=$P/bin
mkdir -p "$B"
cp selftests/kmod/guest*.sh selftests/kmod/pywork.py "$P/"
# Python frames (guest-python.sh): the arm64 guest root's python3.11 with
# the files its start-up reads, by their arm64 names (as 23-arm64-vm.sh
# does; the guest compiles the .py files itself), and the CFI tables of it
# and libc compiled by the host's agent, in /payload/pyt
py_opts=()
GA=$EMBER_CACHE/guest-arm64
if [ -x "$GA/usr/bin/python3.11" ]; then
	while IFS= read -r f; do
		case $f in *.pyc | /usr/bin/xz | /usr/bin/openssl) continue ;; esac
		py_opts+=(--host-file "${f//x86_64-linux-gnu/aarch64-linux-gnu}")
	done < <(selftests/unwind/check-real.sh --python-files)
	mkdir -p "$work/pyt"
	if ! { make -s -j2 agent >"$logs/kmod-arm64-agent.log" 2>&1 &&
		agent/ember unwind-table -o "$work/pyt/python3.11.tbl" "$GA/usr/bin/python3.11" &&
		agent/ember unwind-table -o "$work/pyt/libc.so.6.tbl" "$GA/lib/aarch64-linux-gnu/libc.so.6"; } >/dev/null; then
		echo "info: no CFI tables for the Python tests: $(tail -n 2 "$logs/kmod-arm64-agent.log" | tr '\n' ' ')"
	fi
	py_opts+=(--payload "$work/pyt")
fi
for p in fpbusy sysbusy offcpu-work lockwork-mini allocprobe ticker exitrace runas; do
	cp "$tests/$p" "$B/"
	[ ! -f "$tests/$p.nm" ] || cp "$tests/$p.nm" "$B/"
done
# the test client, an AArch32 program, and fpbusy with pac-ret
SR=$EMBER_CACHE/sysroot-arm64
pc() {
	PKG_CONFIG_SYSROOT_DIR=$SR PKG_CONFIG_LIBDIR=$SR/usr/lib/aarch64-linux-gnu/pkgconfig:$SR/usr/share/pkgconfig \
		pkg-config "$@"
}
nmof() { aarch64-linux-gnu-nm -n --defined-only "$1" | grep -v ' \$[adtx]' >"$1.nm"; }
# shellcheck disable=SC2046 # pkg-config's flags are words
if aarch64-linux-gnu-gcc -std=gnu11 -Wall -Wextra -Werror -O2 -g -Iinclude \
	$(pc --cflags libnl-genl-3.0) -o "$B/ember-test" selftests/kmod/ember-test.c \
	$(pc --libs libnl-genl-3.0) -Wl,-rpath-link,"$SR/usr/lib/aarch64-linux-gnu" \
	>"$logs/kmod-arm64-client.log" 2>&1 &&
	clang --target=armv7a-linux-gnueabihf -marm -fuse-ld=lld -O1 -g -ffreestanding \
		-nostdlib -static -fno-pic -fno-omit-frame-pointer -fno-optimize-sibling-calls \
		-Wall -Wextra -Werror -o "$B/compat32" selftests/kmod/compat32.c \
		>>"$logs/kmod-arm64-client.log" 2>&1 &&
	clang --target=aarch64-linux-gnu -mbranch-protection=pac-ret -std=gnu11 -Wall -Wextra \
		-Werror -O1 -g -no-pie -fno-optimize-sibling-calls -fno-omit-frame-pointer \
		-mno-omit-leaf-frame-pointer -pthread -o "$B/fpbusy-pac" selftests/kmod/fpbusy.c \
		>>"$logs/kmod-arm64-client.log" 2>&1 &&
	nmof "$B/compat32" && nmof "$B/fpbusy-pac"; then
	t_pass "kmod-arm64: guest test programs build"
else
	t_fail "kmod-arm64: guest test programs build" "$(oneline "$logs/kmod-arm64-client.log")"
	exit 0
fi

for k in $kernels; do
	T="kmod-arm64[$k]"
	ko=$(val "module_$k")
	case $ko in
	/*) t_check "$T: build" grep -q ' aarch64$' <(modinfo -F vermagic "$ko") ;;
	*)
		t_fail "$T: build" "$(grep -m 2 -E 'error' "${ko#failed: }" 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
		continue
		;;
	esac
	kdir=$(scripts/fetch-kernels.sh --arch arm64 --kdir "$k")
	# module-check in the mirrored tree (its objects are arm64's already)
	if make -C "$(val tree)" -j2 --no-print-directory ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- \
		module-check KDIR="$kdir" >"$logs/kmod-arm64-check-$k.log" 2>&1; then
		t_pass "$T: module-check (W=1, sparse, checkpatch --strict)"
	else
		t_fail "$T: module-check (W=1, sparse, checkpatch --strict)" \
			"$(grep -m3 -E '(warning|error):|(WARNING|ERROR|CHECK):|Error [0-9]' "$logs/kmod-arm64-check-$k.log" | tr '\n' ' ' | cut -c1-400)"
	fi
	selftests/vm/run-vm.sh --arch arm64 --kernel "$k" --payload "$P" --module "$ko" "${py_opts[@]}" \
		--cmd "sh /payload/kmod/guest.sh $TESTS" --smp 2 --mem 1G \
		--timeout "${EMBER_KMOD_VM_TIMEOUT:-1500}" \
		--log "$logs/kmod-arm64-$k.log" --result "$work/res-$k" \
		>"$work/guest-$k.out" 2>"$work/runvm-$k.err"
	sed -nE "s/^(PASS|FAIL|SKIP): /\1: $T: /p" "$work/guest-$k.out"
	exit_code=$(vm_result "$work/res-$k" exit)
	if [ "$(vm_result "$work/res-$k" timeout)" = 1 ]; then
		t_fail "$T: guest run" "timeout (log: $logs/kmod-arm64-$k.log)"
	elif [ "$exit_code" = none ] || [ -z "$exit_code" ]; then
		t_fail "$T: guest run" "no exit status: boot failure or kernel panic (log: $logs/kmod-arm64-$k.log): $(oneline "$work/runvm-$k.err" 4)"
	elif ! grep -qE '^(PASS|FAIL): ' "$work/guest-$k.out"; then
		t_fail "$T: guest run" "guest.sh reported no test (log: $logs/kmod-arm64-$k.log)"
	fi
	if [ "$(vm_result "$work/res-$k" kernel_problems)" = 0 ] && [ -n "$exit_code" ] && [ "$exit_code" != none ]; then
		t_pass "$T: no kernel warnings"
	else
		t_fail "$T: no kernel warnings" "(log: $logs/kmod-arm64-$k.log)"
		t_kernel_log_excerpt "$logs/kmod-arm64-$k.log"
	fi
	echo "info: $T: guest up at $(vm_result "$work/res-$k" boot_s) s, whole run $(vm_result "$work/res-$k" total_s | cut -c1-5) s"
done
exit 0
