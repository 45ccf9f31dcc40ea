#!/usr/bin/env bash
# ember.ko on a debug kernel: Debian's linux-source-6.12 built with KASAN,
# lockdep (PROVE_LOCKING), DEBUG_ATOMIC_SLEEP, kmemleak, UBSAN and
# DEBUG_LIST (scripts/build-debug-kernel.sh), booted in the VM harness
# (run-vm.sh --kernel debug) with selftests/kmod/guest-debug.sh: the
# module's correctness tests from guest.sh, a 1 kHz on+off-CPU stress with
# CPU hotplug, kill -9 of the controller (and of the agent), load/unload
# under sampling, then a kmemleak scan. Every checker report fails it.
# Ends with a "debug kernel report:" line (what ran, for how long, how many
# KASAN/lockdep/UBSAN/kmemleak/WARN lines: all must be 0).
#
# The kernel build takes 10-13 minutes on 2 cores (docs/debug-kernel.md),
# the run ~12 more: 24 min in CI at the 31st stop, which CI's hour cannot
# hold beside the rest (README, "The full matrix"). It runs when the
# kernel is already built (and matches the config fragment), or when
# EMBER_DEBUG_KERNEL=1 or EMBER_FULL=1 asks to build it; otherwise it
# prints SKIP with the command to run, in CI too (a deliberate opt-out,
# not a missing prerequisite). EMBER_DEBUG_KERNEL=0 skips it everywhere.
#
#   EMBER_DEBUG_KERNEL=1 SUITES=35-kmod-debug-vm selftests/run.sh
#
# EMBER_DEBUG_TESTS overrides the guest.sh tests; EMBER_DEBUG_VM_TIMEOUT
# (seconds, default 1800) bounds the VM run. EMBER_DEBUG_KERNEL_VARIANT=rt
# runs the same on the PREEMPT_RT build of that kernel (kmod[debug-rt],
# run-vm.sh --kernel debug-rt; selftests/suites/36-rt-vm.sh does).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. selftests/lib.sh

VM_KERNEL=debug${EMBER_DEBUG_KERNEL_VARIANT:+-$EMBER_DEBUG_KERNEL_VARIANT}
T="kmod[$VM_KERNEL]"
export EMBER_DEBUG_KERNEL_VARIANT
BUILD=scripts/build-debug-kernel.sh
RUNVM=selftests/vm/run-vm.sh
TIMEOUT=${EMBER_DEBUG_VM_TIMEOUT:-1800}
# guest.sh tests (correctness, not rates). Not run: "rate" (it checks that
# the VM's timers deliver 99 Hz within 10%: under KASAN+lockdep in TCG that
# measures the emulator) and "offcpu-min" (it needs 10 ms sleeps to stay
# under a 15 ms threshold: the debug kernel stretches them). 30-kmod-vm runs
# both on Debian's kernels, and lock-cost (a syscall rate).
TESTS=${EMBER_DEBUG_TESTS:-ustack kstack compat32 filter-pid filter-change filter-cgroup ring-full poll bogus-consumer owner badreq unwind alloc nonroot cycles hotplug limits unload offcpu-blocks lifecycle exit-once pingpong nlfuzz tablefuzz lock-futex lock-kernel lock-storm}
logs=${EMBER_TEST_LOGS:-selftests/logs}/vm
mkdir -p "$logs"
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-35.XXXXXX")
trap 'rm -rf "$work"' EXIT
NICE=(nice -n 19)

for tool in qemu-system-x86_64 cpio busybox; do
	if ! command -v "$tool" >/dev/null; then
		t_skip "$T: VM" "$tool not installed (scripts/install-deps.sh)"
		exit 0
	fi
done

oneline() { tail -n "${2:-3}" "$1" | tr '\n' ' ' | cut -c1-400; }

# count_reports LOG GUEST_OUT: n_kasan, n_lockdep, ... from the kernel log
# lines (console or the final dmesg, as run-vm judges them) and, for
# kmemleak, from what the guest's final scans printed ("kmemleak| ..."; the
# guest clears what boot left before loading anything, so the kernel's own
# "N new suspected memory leaks" line of that first scan is not counted)
count_reports() {
	local klog=$work/klog
	grep -aE '^\[ *[0-9]+\.[0-9]+\] ' "$1" | sort -u >"$klog"
	n_kasan=$(grep -cE 'KASAN:' "$klog")
	n_lockdep=$(grep -cE 'possible (recursive|circular) locking|locking dependency|inconsistent lock state|irq lock inversion|suspicious RCU usage|bad unlock balance|held lock freed|lock held when returning|DEBUG_LOCKS_WARN_ON|MAX_LOCKDEP_[A-Z_]+ too low|lockdep bfs' "$klog")
	n_sleep=$(grep -cE 'sleeping function called from invalid context|scheduling while atomic|using smp_processor_id\(\) in preemptible|using __this_cpu_.* in preemptible' "$klog")
	n_ubsan=$(grep -cE 'UBSAN:' "$klog")
	n_list=$(grep -cE 'list_(add|del) corruption' "$klog")
	n_leak=$(grep -c '^kmemleak| unreferenced object' "$2")
	n_warn=$(grep -cE 'WARNING:' "$klog")
	n_bug=$(grep -cE 'BUG:|Oops|general protection fault|Kernel panic|kernel BUG' "$klog")
}
counts() { echo "KASAN=$n_kasan lockdep=$n_lockdep atomic_sleep=$n_sleep UBSAN=$n_ubsan list=$n_list kmemleak=$n_leak WARN=$n_warn BUG=$n_bug"; }

# ------------------------------------------------------------ the kernel
built_now=0 build_s=""
if [ "${EMBER_DEBUG_KERNEL:-}" = 0 ]; then
	echo "SKIP: $T: EMBER_DEBUG_KERNEL=0"
	exit 0
fi
if [ "${EMBER_DEBUG_KERNEL:-}" = 1 ] || [ "${EMBER_FULL:-}" = 1 ]; then
	t0=$SECONDS
	if "${NICE[@]}" "$BUILD" >"$logs/$VM_KERNEL-kernel-build.log" 2>&1; then
		t_pass "$T: kernel build ($("$BUILD" --version))"
	else
		t_fail "$T: kernel build" "$(oneline "$logs/$VM_KERNEL-kernel-build.log" 4)"
		exit 0
	fi
	grep -q '^build-debug-kernel: ready' "$logs/$VM_KERNEL-kernel-build.log" && built_now=1
	build_s=$((SECONDS - t0))
elif ! "$BUILD" --is-current >"$work/cur" 2>&1; then
	# a developer's choice (a 10+ minute build), so a plain SKIP
	echo "SKIP: $T: no up-to-date debug kernel ($(oneline "$work/cur" 1)); run it with: EMBER_DEBUG_KERNEL=1 SUITES=35-kmod-debug-vm selftests/run.sh"
	exit 0
fi
kdir=$("$BUILD" --kdir)
release=$("$BUILD" --version)
"$BUILD" --info >"$work/info"
checkers=$(vm_result "$work/info" CHECKERS)
build_note="built now"
if [ "$built_now" != 1 ]; then
	build_s=$(vm_result "$work/info" BUILD_S)
	build_note="cached, built $(vm_result "$work/info" BUILT_AT)"
fi
cpu_s=$(vm_result "$work/info" CPU_S)
echo "info: $T: $release from $(vm_result "$work/info" SOURCE), checkers: $checkers; kernel build ${build_s} s ($build_note)"

# ----------------------------------------------- ember.ko and the payload
t0=$SECONDS
rm -f ember.ko
if "${NICE[@]}" make -j2 --no-print-directory module KDIR="$kdir" >"$logs/kmod-build-$VM_KERNEL.log" 2>&1 && [ -f ember.ko ]; then
	t_pass "$T: module build against the debug tree"
else
	t_fail "$T: module build" "$(grep -m2 -E 'error|Error' "$logs/kmod-build-$VM_KERNEL.log" | tr '\n' ' ' | cut -c1-400)"
	exit 0
fi
cp ember.ko "$work/ember.ko"
# what the checkers see of ember.ko: KASAN's inline checks branch to
# __asan_report_*, UBSAN's to __ubsan_handle_* (lockdep sits in the
# kernel's lock functions ember calls)
inst="kasan_checks=$(objdump -dr "$work/ember.ko" | grep -c 'R_X86_64_.*__asan_report') ubsan_checks=$(objdump -dr "$work/ember.ko" | grep -c 'R_X86_64_.*__ubsan_handle')"
echo "info: $T: ember.ko instrumentation: $inst"
if grep -E ':[0-9]+:[0-9]+: (warning|error):' "$logs/kmod-build-$VM_KERNEL.log" >"$work/warn"; then
	t_fail "$T: module builds warning-free against the debug tree" "$(head -n 3 "$work/warn" | tr '\n' ' ' | cut -c1-400)"
fi
if ! "${NICE[@]}" make --no-print-directory kmod-guest >"$logs/kmod-guest-build-$VM_KERNEL.log" 2>&1; then
	t_fail "$T: guest test programs build" "$(oneline "$logs/kmod-guest-build-$VM_KERNEL.log")"
	exit 0
fi
# the agent, for the kill -9 of a real controller (tables loaded); the
# guest reports SKIP for that test when it is missing
payload_agent=()
if "${NICE[@]}" make -s -j2 --no-print-directory agent >"$work/agent-build.log" 2>&1 && [ -x agent/ember ]; then
	mkdir -p "$work/agent"
	cp agent/ember "$work/agent/"
	payload_agent=(--payload "$work/agent")
else
	echo "info: $T: agent did not build ($(oneline "$work/agent-build.log" 1)): no agent kill -9"
fi
echo "info: $T: module, guest programs and agent built in $((SECONDS - t0)) s"

# tests this checkout's guest.sh knows; the others are named, not lost
have=$(sed -n 's/^want \([a-z0-9-]*\) .*/\1/p' selftests/kmod/guest.sh selftests/kmod/guest-offcpu.sh selftests/kmod/guest-stress.sh selftests/kmod/guest-lock.sh)
run_tests=""
for t in $TESTS; do
	if grep -qx -- "$t" <<<"$have"; then
		run_tests="$run_tests $t"
	else
		echo "SKIP: $T: $t: not in this checkout's guest.sh"
	fi
done
echo "SKIP: $T: rate, offcpu-min: timing checks (timer rate, a 15 ms threshold): under KASAN+lockdep in TCG they measure the emulator; 30-kmod-vm runs them"

# ------------------------------------------ positive control: checkers fire
# ember_debug_canary.ko commits one bug per checker; each must be reported
# and recognised by count_reports, or "zero reports" below proves nothing
canary=$work/canary
mkdir -p "$canary"
cp selftests/vm/selftest/debug-canary/{Kbuild,canary.c,guest.sh} "$canary/"
if "${NICE[@]}" make -s -C "$kdir" M="$canary" modules >"$work/canary-build.log" 2>&1 &&
	[ -f "$canary/ember_debug_canary.ko" ]; then
	rm -f "$canary"/*.o "$canary"/*.mod* "$canary"/.*.cmd
	"${NICE[@]}" "$RUNVM" --kernel "$VM_KERNEL" --payload "$canary" --append kasan_multi_shot \
		--timeout 900 --log "$logs/$VM_KERNEL-canary.log" --result "$work/canary.res" \
		>"$work/canary.out" 2>/dev/null
	count_reports "$logs/$VM_KERNEL-canary.log" "$work/canary.out"
	if [ "$(vm_result "$work/canary.res" status)" = 126 ] && [ "$n_kasan" -gt 0 ] &&
		[ "$n_lockdep" -gt 0 ] && [ "$n_sleep" -gt 0 ] && [ "$n_ubsan" -gt 0 ] &&
		[ "$n_list" -gt 0 ] && [ "$n_leak" -gt 0 ]; then
		t_pass "$T: checkers fire on a module's bugs (canary: $(counts))"
	else
		t_fail "$T: checkers fire on a module's bugs" "canary run status $(vm_result "$work/canary.res" status), $(counts) (log: $logs/$VM_KERNEL-canary.log)"
	fi
else
	t_fail "$T: checkers fire on a module's bugs" "canary module did not build: $(oneline "$work/canary-build.log")"
fi

# ------------------------------------------------------------------ run
"${NICE[@]}" "$RUNVM" --kernel "$VM_KERNEL" --payload selftests/kmod "${payload_agent[@]}" \
	--module "$work/ember.ko" --cmd "sh /payload/kmod/guest-debug.sh$run_tests" \
	--append kasan_multi_shot --smp 2 --mem 1G --timeout "$TIMEOUT" \
	--log "$logs/kmod-$VM_KERNEL.log" --result "$work/res" \
	>"$work/guest.out" 2>"$work/runvm.err"
cp "$work/guest.out" "$logs/kmod-$VM_KERNEL.out"
sed -nE "s/^(PASS|FAIL|SKIP): /\1: $T: /p" "$work/guest.out"
nfail=$(grep -c '^FAIL: ' "$work/guest.out")
exit_code=$(vm_result "$work/res" exit)
if [ "$(vm_result "$work/res" timeout)" = 1 ]; then
	t_fail "$T: guest run" "timeout after ${TIMEOUT}s (log: $logs/kmod-$VM_KERNEL.log)"
elif [ "$exit_code" = none ] || [ -z "$exit_code" ]; then
	t_fail "$T: guest run" "no exit status: boot failure or kernel panic (log: $logs/kmod-$VM_KERNEL.log): $(oneline "$work/runvm.err" 4)"
elif [ "$exit_code" != 0 ] && [ "$nfail" -eq 0 ]; then
	t_fail "$T: guest run" "guest-debug.sh exited $exit_code without a FAIL line (log: $logs/kmod-$VM_KERNEL.log)"
elif ! grep -q '^PASS: kmemleak' "$work/guest.out"; then
	t_fail "$T: guest run" "the run did not reach its kmemleak scan (log: $logs/kmod-$VM_KERNEL.log)"
fi

# ------------------------------------------------------- checker verdict
count_reports "$logs/kmod-$VM_KERNEL.log" "$work/guest.out"
n_all=$(vm_result "$work/res" kernel_problems)
total=$((n_kasan + n_lockdep + n_sleep + n_ubsan + n_list + n_leak + n_warn + n_bug + ${n_all:-0}))
if [ "$total" -eq 0 ] && [ -n "$exit_code" ] && [ "$exit_code" != none ]; then
	t_pass "$T: no KASAN, lockdep, atomic-sleep, UBSAN, list, kmemleak or WARN report"
else
	t_fail "$T: checker reports" "$(counts) (log: $logs/kmod-$VM_KERNEL.log)"
	t_kernel_log_excerpt "$logs/kmod-$VM_KERNEL.log"
fi

# ---------------------------------------------- NMI context, checked
# The sampling path in NMI context (NMIs injected through qemu's monitor,
# a test build of ember.ko: selftests/kmod/guest-nmi.sh) under the same
# checkers: what a hardware PMU would do, which TCG does not have.
if "${NICE[@]}" make -j2 --no-print-directory module-selftest KDIR="$kdir" >"$work/selftest-build.log" 2>&1; then
	cp ember-selftest.ko "$work/ember-selftest.ko"
	cp ember_nmi_test.ko selftests/kmod/bin/ember_nmi_test.ko
	"${NICE[@]}" "$RUNVM" --kernel "$VM_KERNEL" --payload selftests/kmod \
		--module "$work/ember-selftest.ko" --cmd "sh /payload/kmod/guest-nmi.sh" \
		--append kasan_multi_shot --smp 2 --mem 1G --timeout 600 --nmi-every 20 \
		--log "$logs/kmod-debug-nmi.log" --result "$work/nmi-res" \
		>"$work/nmi.out" 2>"$work/nmi-runvm.err"
	sed -nE "s/^(PASS|FAIL|SKIP): /\1: $T: /p" "$work/nmi.out"
	count_reports "$logs/kmod-debug-nmi.log" /dev/null
	nmi_total=$((n_kasan + n_lockdep + n_sleep + n_ubsan + n_list + n_warn + n_bug))
	if grep -q '^PASS: nmi:' "$work/nmi.out" && [ "$nmi_total" -eq 0 ] &&
		[ "$(vm_result "$work/nmi-res" kernel_problems)" = 0 ]; then
		t_pass "$T: no checker report with NMI-context sampling"
	else
		t_fail "$T: NMI-context sampling under the checkers" "$(counts) (log: $logs/kmod-debug-nmi.log)"
		t_kernel_log_excerpt "$logs/kmod-debug-nmi.log"
	fi
	# the report below is about the main run
	count_reports "$logs/kmod-$VM_KERNEL.log" "$work/guest.out"
else
	t_fail "$T: test build (module-selftest)" "$(oneline "$work/selftest-build.log" 2)"
fi

steps=$(sed -n 's/^debug: step=\([a-z0-9-]*\) seconds=\([0-9]*\)$/\1 \2s,/p' "$work/guest.out" | tr '\n' ' ' | sed 's/, *$//')
report="debug kernel report: kernel=$release checkers=\"$checkers\" build_s=$build_s$([ "$built_now" = 1 ] || echo '(cached)')${cpu_s:+ build_cpu_s=$cpu_s} $inst guest_up_s=$(vm_result "$work/res" boot_s) run_s=$(vm_result "$work/res" total_s | cut -d. -f1) steps=\"$steps\" tests=$(grep -cE '^(PASS|FAIL): ' "$work/guest.out") failed=$nfail $(counts) $(grep -m1 '^debug: debug_locks=' "$work/guest.out" | sed 's/^debug: //')"
echo "$report"
{
	echo "$report"
	grep '^debug: ' "$work/guest.out"
	grep -E '^(PASS|FAIL|SKIP): ' "$work/guest.out"
} >"$logs/debug-kernel-report.txt"
echo "info: $T: report in $logs/debug-kernel-report.txt, guest log $logs/kmod-$VM_KERNEL.log"
exit 0
