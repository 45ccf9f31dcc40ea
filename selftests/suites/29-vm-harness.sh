#!/usr/bin/env bash
# The VM harness itself (selftests/vm/run-vm.sh), on each test kernel:
# fetch, build a trivial module W=1 against the fetched headers, boot, check
# the guest environment (selftests/vm/selftest/guest.sh), /out collection,
# a clean kernel log, and that "module loading disallowed" can be emulated
# with --append. Once: the harness's own failure detection (exit status,
# kernel WARNING, timeout).
#
# EMBER_VM_KERNELS="6.1" limits the kernels (default: 5.10 6.1 6.12).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. selftests/lib.sh

KERNELS=${EMBER_VM_KERNELS:-5.10 6.1 6.12}
RUNVM=selftests/vm/run-vm.sh
FETCH=scripts/fetch-kernels.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-29.XXXXXX")
trap 'rm -rf "$work"' EXIT
logs=${EMBER_TEST_LOGS:-selftests/logs}/vm
mkdir -p "$logs"

for tool in qemu-system-x86_64 cpio busybox; do
	if ! command -v "$tool" >/dev/null; then
		t_skip "vm: $tool" "not installed (scripts/install-deps.sh)"
		exit 0
	fi
done

# Relay the guest's PASS/FAIL/SKIP lines; anything else stays in the log.
relay() { grep -E '^(PASS|FAIL|SKIP): ' || true; }

for k in $KERNELS; do
	T="vm[$k]"
	if ! "$FETCH" "$k" >"$work/fetch-$k.log" 2>&1; then
		t_fail "$T: fetch kernel" "$(tail -n 2 "$work/fetch-$k.log" | tr '\n' ' ')"
		continue
	fi
	t_pass "$T: fetch kernel $("$FETCH" --version "$k")"

	payload=$work/$k/selftest
	mkdir -p "$payload/bin"
	cp selftests/vm/selftest/guest.sh "$payload/"
	cp /usr/bin/true "$payload/bin/true-elf" # a dynamic ELF: tests the ldd closure
	mkdir -p "$work/$k/mod"
	cp selftests/vm/selftest/hello-module/* "$work/$k/mod/"
	kdir=$("$FETCH" --kdir "$k")
	modarg=()
	if make -C "$kdir" M="$work/$k/mod" W=1 modules >"$work/$k/build.log" 2>&1; then
		if grep -E 'warning:|error:' "$work/$k/build.log" >/dev/null; then
			t_fail "$T: module build W=1" "$(grep -m1 -E 'warning:|error:' "$work/$k/build.log")"
		else
			t_pass "$T: module build W=1 warning-free"
		fi
		cp "$work/$k/mod/ember_vm_hello.ko" "$payload/"
		modarg=(--module "$payload/ember_vm_hello.ko")
	else
		t_fail "$T: module build W=1" "$(grep -m1 -E 'error|Error' "$work/$k/build.log")"
	fi

	# Normal boot: environment, module load/unload, /out.
	out=$work/$k/out
	"$RUNVM" --kernel "$k" --payload "$payload" "${modarg[@]}" \
		--out "$out" --log "$logs/selftest-$k.log" --result "$work/$k/res" \
		--timeout 180 >"$work/$k/guest.out" 2>"$work/$k/runvm.err"
	rc=$?
	relay <"$work/$k/guest.out"
	if [ "$rc" -eq 0 ]; then
		t_pass "$T: boot, command status and clean kernel log"
	else
		t_fail "$T: boot, command status and clean kernel log" "run-vm status $rc: $(tr '\n' ' ' <"$work/$k/runvm.err")"
	fi
	if [ -f "$out/hello.txt" ] && grep -q "selftest from $("$FETCH" --version "$k")" "$out/hello.txt" &&
		[ "$(sha256sum <"$out/sub/random.bin" | cut -d' ' -f1)" = "$(cat "$out/random.sha256")" ]; then
		t_pass "$T: /out collected intact"
	else
		t_fail "$T: /out collected intact" "missing or corrupted files in $out"
	fi
	[ -f "$work/$k/res" ] &&
		echo "info: $T: guest up at $(vm_result "$work/$k/res" boot_s) s, whole run $(vm_result "$work/$k/res" total_s | cut -c1-5) s"

	# Locked-down boot: the "module loading disallowed" situation.
	"$RUNVM" --kernel "$k" --payload "$payload" --append "module.sig_enforce=1 lockdown=integrity" \
		--cmd "EMBER_SELFTEST_MODE=locked sh /payload/selftest/guest.sh" \
		--log "$logs/selftest-locked-$k.log" --timeout 180 >"$work/$k/locked.out" 2>"$work/$k/locked.err"
	rc=$?
	relay <"$work/$k/locked.out"
	if [ "$rc" -eq 0 ]; then
		t_pass "$T: locked boot clean"
	else
		t_fail "$T: locked boot clean" "run-vm status $rc: $(tr '\n' ' ' <"$work/$k/locked.err")"
	fi
done

# The harness's own verdicts, on the first kernel that is available.
k=""
for c in $KERNELS; do
	if [ -e "$("$FETCH" --vmlinuz "$c" 2>/dev/null)" ]; then k=$c; break; fi
done
if [ -z "$k" ]; then
	t_fail "vm: harness verdicts" "no kernel available"
	exit 0
fi
# A command failing with 3 after logging a fake kernel WARNING: the exit
# status must come back, and the warning must fail the run (126).
"$RUNVM" --kernel "$k" --cmd 'echo "WARNING: CPU: 0 PID: 1 at ember-selftest fake" >/dev/kmsg; exit 3' \
	--result "$work/neg.res" --timeout 180 >/dev/null 2>"$work/neg.err"
rc=$?
if [ "$rc" -eq 126 ] && [ "$(vm_result "$work/neg.res" exit)" = 3 ] &&
	grep -q 'kernel problem' "$work/neg.err" && grep -q 'ember-selftest fake' "$work/neg.err"; then
	t_pass "vm: harness reports exit status and fails on a kernel WARNING"
else
	t_fail "vm: harness reports exit status and fails on a kernel WARNING" "status $rc, $(tr '\n' ' ' <"$work/neg.err")"
fi
# Exit status passthrough, and /out over the serial fallback (no disk).
EMBER_VM_OUT_VIA=serial "$RUNVM" --kernel "$k" --out "$work/serial-out" --timeout 180 \
	--cmd 'mkdir /out/d && echo serial-ok >/out/d/s; exit 7' >/dev/null 2>"$work/serial.err"
rc=$?
if [ "$rc" -eq 7 ]; then
	t_pass "vm: harness returns the command's exit status"
else
	t_fail "vm: harness returns the command's exit status" "got $rc, want 7: $(tr '\n' ' ' <"$work/serial.err")"
fi
if [ "$(cat "$work/serial-out/d/s" 2>/dev/null)" = serial-ok ]; then
	t_pass "vm: /out over the serial fallback"
else
	t_fail "vm: /out over the serial fallback" "$work/serial-out/d/s missing: $(tr '\n' ' ' <"$work/serial.err")"
fi
"$RUNVM" --kernel "$k" --cmd 'sleep 600' --timeout 30 >/dev/null 2>"$work/to.err"
rc=$?
if [ "$rc" -eq 124 ] && grep -q 'timeout' "$work/to.err"; then
	t_pass "vm: harness kills a hung guest at --timeout"
else
	t_fail "vm: harness kills a hung guest at --timeout" "status $rc: $(tr '\n' ' ' <"$work/to.err")"
fi
exit 0
