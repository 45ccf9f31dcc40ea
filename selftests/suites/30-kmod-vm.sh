#!/usr/bin/env bash
# ember.ko on each test kernel (Debian 5.10, 6.1, 6.12) in a qemu VM:
# fetch the kernel, `make module KDIR=...`, `make module-check` (W=1,
# sparse, checkpatch --strict), `make kmod-guest`, boot with
# selftests/kmod as payload and ember.ko as /payload/ember.ko, run
# `sh /payload/kmod/guest.sh` and relay its PASS/FAIL/SKIP lines as
# "kmod[SERIES]: ...", then judge the kernel log. After each build,
# kmod_no_call_circles_SERIES: scripts/check-layout.py calls on the built
# objects (no two files of the module call each other, even in a loop).
#
# Every kernel of the matrix builds and passes module-check and the call
# circle check in CI; the VM runs (guest tests, NMI) boot 6.12 there (the
# newest kernel API; suite 40 runs the module on 6.1 in CI), every kernel
# with EMBER_FULL=1 (~6 min each under TCG). EMBER_VM_KERNELS="6.1"
# limits both; EMBER_KMOD_TESTS="py-chain
# py-scribble" runs only those guest tests (guest.sh's names); EMBER_KMOD_VM_TIMEOUT
# (seconds, default 600) bounds each VM run; EMBER_KMOD_CHECK=0 skips the
# module-check step (developer shortcut; CI always runs it).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. selftests/lib.sh

KERNELS=${EMBER_VM_KERNELS:-5.10 6.1 6.12}
RUN_KERNELS=$(vm_kernels "6.12" "5.10 6.1 6.12")
TIMEOUT=${EMBER_KMOD_VM_TIMEOUT:-600}
FETCH=scripts/fetch-kernels.sh
RUNVM=selftests/vm/run-vm.sh
logs=${EMBER_TEST_LOGS:-selftests/logs}/vm
mkdir -p "$logs"
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-30.XXXXXX")
trap 'rm -rf "$work"' EXIT

for tool in qemu-system-x86_64 cpio busybox; do
	if ! command -v "$tool" >/dev/null; then
		for k in $KERNELS; do t_skip "kmod[$k]: VM" "$tool not installed (scripts/install-deps.sh)"; done
		exit 0
	fi
done

oneline() { tail -n "${2:-3}" "$1" | tr '\n' ' ' | cut -c1-400; }

# Guest programs (host-built, shipped in the payload) once for all kernels.
guest_ok=1
if make --no-print-directory kmod-guest >"$logs/kmod-guest-build.log" 2>&1; then
	t_pass "kmod: guest test programs build"
else
	t_fail "kmod: guest test programs build" "$(oneline "$logs/kmod-guest-build.log")"
	guest_ok=0
fi
guest_sh=selftests/kmod/guest.sh
# Python frames (guest-python.sh): Debian's python3.11 with the stdlib
# files its start-up reads, and the CFI tables of python3.11 and libc that
# the agent compiles on the host (`ember unwind-table -o`), in /payload/pyt
py_opts=()
if [ -x /usr/bin/python3.11 ]; then
	while IFS= read -r f; do
		py_opts+=(--host-file "$f")
	done < <(selftests/unwind/check-real.sh --python-files)
	mkdir -p "$work/pyt"
	if make -s -j2 agent >"$logs/kmod-agent-build.log" 2>&1 &&
		agent/ember unwind-table -o "$work/pyt/python3.11.tbl" /usr/bin/python3.11 >/dev/null &&
		agent/ember unwind-table -o "$work/pyt/libc.so.6.tbl" "$(ldd /usr/bin/python3.11 | awk '$1 == "libc.so.6" { print $3 }')" >/dev/null; then
		:
	else
		echo "info: no CFI tables for the Python tests: $(tail -n 2 "$logs/kmod-agent-build.log" | tr '\n' ' ')"
	fi
	py_opts+=(--payload "$work/pyt")
fi
has_check=0
grep -qE '^module-check:' kmod/kmod.mk 2>/dev/null && has_check=1

for k in $KERNELS; do
	T="kmod[$k]"
	if ! "$FETCH" "$k" >"$logs/fetch-$k.log" 2>&1; then
		t_fail "$T: fetch kernel" "$(oneline "$logs/fetch-$k.log" 2)"
		continue
	fi
	kdir=$("$FETCH" --kdir "$k")
	release=$("$FETCH" --version "$k")

	rm -f ember.ko
	t0=$SECONDS
	if make -j2 --no-print-directory module KDIR="$kdir" >"$logs/kmod-build-$k.log" 2>&1 && [ -f ember.ko ]; then
		t_pass "$T: build ($release)"
	else
		t_fail "$T: build" "$(grep -m2 -E 'error|Error' "$logs/kmod-build-$k.log" | tr '\n' ' ' | cut -c1-400)"
		continue
	fi
	echo "info: $T: build took $((SECONDS - t0)) s"
	# No call circles between the module's files (issue 26): the objects
	# kbuild just built, in kmod.mk's directory for this KDIR, one per
	# kmod/*.c of the tree (a stale object of a removed file is not ours).
	objdir=".cache/kmod/$(realpath -s -m "$kdir" | tr / _)/build/kmod"
	objs=()
	for c in kmod/*.c; do
		c=${c##*/}
		# Kbuild builds one kernel stack walker per architecture
		[ "$c" != unwind_kernel_arm64.c ] || continue
		objs+=("$objdir/${c%.c}.o")
	done
	if ! ls "${objs[@]}" >/dev/null 2>&1; then
		t_fail "kmod_no_call_circles_$k" "objects missing in $objdir"
	elif out=$(python3 scripts/check-layout.py calls "${objs[@]}" 2>&1); then
		t_pass "kmod_no_call_circles_$k"
	else
		t_fail "kmod_no_call_circles_$k" "$(echo "$out" | sed 's|[^ ]*/kmod/||g' | tr '\n' ' ' | cut -c1-400)"
	fi
	# The repository's ember.ko is rebuilt for the next kernel: keep ours.
	mkdir -p "$work/$k"
	cp ember.ko "$work/$k/ember.ko"

	if [ "$has_check" = 1 ] && { [ "${EMBER_KMOD_CHECK:-1}" != 0 ] || [ "${CI:-}" = true ]; }; then
		t0=$SECONDS
		if make -j2 --no-print-directory module-check KDIR="$kdir" >"$logs/kmod-check-$k.log" 2>&1; then
			t_pass "$T: module-check (W=1, sparse, checkpatch --strict)"
		else
			t_fail "$T: module-check (W=1, sparse, checkpatch --strict)" \
				"$(grep -m3 -E '(warning|error):|(WARNING|ERROR|CHECK):|Error [0-9]' "$logs/kmod-check-$k.log" | tr '\n' ' ' | cut -c1-400)"
		fi
		# module-check rebuilds with W=1 C=2: the copy above stays the
		# artefact under test.
		echo "info: $T: module-check took $((SECONDS - t0)) s"
	fi

	if [[ " $RUN_KERNELS " != *" $k "* ]]; then
		echo "info: $T: built and checked; its VM runs only with EMBER_FULL=1 (CI boots $RUN_KERNELS)"
		continue
	fi
	if [ ! -f "$guest_sh" ]; then
		t_fail "$T: guest tests" "$guest_sh does not exist yet (engineer A's payload): nothing was tested in the VM"
		continue
	fi
	if [ "$guest_ok" = 0 ]; then
		t_fail "$T: guest tests" "guest test programs did not build"
		continue
	fi

	"$RUNVM" --kernel "$k" --payload selftests/kmod --module "$work/$k/ember.ko" "${py_opts[@]}" \
		--cmd "EMBER_STRESS=${EMBER_STRESS:-1} sh /payload/kmod/guest.sh ${EMBER_KMOD_TESTS:-}" --smp 2 \
		--timeout $((TIMEOUT + (${EMBER_STRESS:-1} - 1) * 120)) \
		--out "$logs/kmod-$k-out" --log "$logs/kmod-$k.log" --result "$work/$k/res" \
		>"$work/$k/guest.out" 2>"$work/$k/runvm.err"
	rc=$?
	sed -nE "s/^(PASS|FAIL|SKIP): /\1: $T: /p" "$work/$k/guest.out"
	nfail=$(grep -c '^FAIL: ' "$work/$k/guest.out")
	exit_code=$(vm_result "$work/$k/res" exit)
	if [ "$(vm_result "$work/$k/res" timeout)" = 1 ]; then
		t_fail "$T: guest run" "timeout after ${TIMEOUT}s (log: $logs/kmod-$k.log)"
	elif [ "$exit_code" = none ] || [ -z "$exit_code" ]; then
		t_fail "$T: guest run" "no exit status: boot failure or kernel panic (log: $logs/kmod-$k.log): $(oneline "$work/$k/runvm.err" 4)"
	elif [ "$exit_code" != 0 ] && [ "$nfail" -eq 0 ]; then
		t_fail "$T: guest run" "guest.sh exited $exit_code without a FAIL line (log: $logs/kmod-$k.log)"
	elif ! grep -qE '^(PASS|FAIL): ' "$work/$k/guest.out"; then
		t_fail "$T: guest run" "guest.sh reported no test (log: $logs/kmod-$k.log)"
	fi
	if [ "$(vm_result "$work/$k/res" kernel_problems)" = 0 ] && [ -n "$exit_code" ] && [ "$exit_code" != none ]; then
		t_pass "$T: no kernel warnings"
	else
		t_fail "$T: no kernel warnings" \
			"$(grep -A3 'kernel problem' "$work/$k/runvm.err" | sed -n 2,4p | tr '\n' ' ' | cut -c1-400)$([ "$rc" = 124 ] && echo timeout) (log: $logs/kmod-$k.log)"
		t_kernel_log_excerpt "$logs/kmod-$k.log"
	fi
	echo "info: $T: guest up at $(vm_result "$work/$k/res" boot_s) s, whole run $(vm_result "$work/$k/res" total_s | cut -c1-5) s"

	# NMI context: a test build of ember.ko and ember_nmi_test.ko, with
	# NMIs injected by the host (no PMU under TCG).
	if make -j2 --no-print-directory module-selftest KDIR="$kdir" >"$logs/kmod-selftest-$k.log" 2>&1; then
		cp ember-selftest.ko "$work/$k/ember-selftest.ko"
		cp ember_nmi_test.ko selftests/kmod/bin/ember_nmi_test.ko
		"$RUNVM" --kernel "$k" --payload selftests/kmod --module "$work/$k/ember-selftest.ko" \
			--cmd "sh /payload/kmod/guest-nmi.sh" --smp 2 --timeout 300 --nmi-every 20 \
			--log "$logs/kmod-nmi-$k.log" --result "$work/$k/nmi-res" \
			>"$work/$k/nmi.out" 2>"$work/$k/nmi-runvm.err"
		sed -nE "s/^(PASS|FAIL|SKIP): /\1: $T: /p" "$work/$k/nmi.out"
		grep -qE '^(PASS|FAIL): ' "$work/$k/nmi.out" ||
			t_fail "$T: nmi run" "no test reported (log: $logs/kmod-nmi-$k.log): $(oneline "$work/$k/nmi-runvm.err" 3)"
		if [ "$(vm_result "$work/$k/nmi-res" kernel_problems)" = 0 ]; then
			t_pass "$T: no kernel warnings with NMI sampling"
		else
			t_fail "$T: no kernel warnings with NMI sampling" "(log: $logs/kmod-nmi-$k.log)"
			t_kernel_log_excerpt "$logs/kmod-nmi-$k.log"
		fi
	else
		t_fail "$T: test build (module-selftest)" "$(grep -m2 -E 'error|Error' "$logs/kmod-selftest-$k.log" | tr '\n' ' ' | cut -c1-300)"
	fi
done
exit 0
