#!/usr/bin/env bash
# ember on PREEMPT_RT kernels (issue 23 item 4). On RT a spinlock_t is a
# sleeping lock, so one taken in perf-overflow or tracepoint context is a
# bug that only an RT kernel shows. Opt-in (EMBER_RT=1): about 25 minutes.
#
#   EMBER_RT=1 SUITES=36-rt-vm selftests/run.sh
#
# 1. the module suite (30-kmod-vm) and the eBPF backend suite (21-bpf-vm)
#    on Debian's 6.12-rt kernel (linux-image-rt-amd64);
# 2. the debug kernel suite (35-kmod-debug-vm) on the same 6.12 source
#    built with PREEMPT_RT, lockdep and DEBUG_ATOMIC_SLEEP (Debian's -rt
#    has neither checker): EMBER_DEBUG_KERNEL_VARIANT=rt
#    scripts/build-debug-kernel.sh, 11-13 more minutes the first time;
# 3. the latency ember adds: cyclictest (rt-tests) in the 6.12-rt VM with
#    ember off, on the module and on eBPF (selftests/rt/guest-latency.sh),
#    reported as "info: rt latency" lines. Under TCG the absolute figures
#    are the emulator's; the difference between phases is ember's.
# 4. latency-arm64: the same cyclictest in Debian's arm64 6.12-rt VM.
# EMBER_RT_PARTS="debian debug latency latency-arm64" picks parts; EMBER_RT_DURATION
# (seconds per cyclictest phase, default 20).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. selftests/lib.sh

if [ "${EMBER_RT:-}" != 1 ]; then
	echo "SKIP: rt-vm: takes ~25 min (Debian's 6.12-rt and an RT lockdep kernel under TCG): run EMBER_RT=1 SUITES=36-rt-vm selftests/run.sh"
	exit 0
fi
PARTS=${EMBER_RT_PARTS:-debian debug latency latency-arm64}
K=6.12-rt
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-36.XXXXXX")
trap 'rm -rf "$work"' EXIT
logs=${EMBER_TEST_LOGS:-selftests/logs}/vm
mkdir -p "$logs"

want() { [[ " $PARTS " == *" $1 "* ]]; }

if want debian; then
	EMBER_VM_KERNELS=$K selftests/suites/30-kmod-vm.sh
	EMBER_VM_KERNELS=$K selftests/suites/21-bpf-vm.sh
fi
if want debug; then
	EMBER_DEBUG_KERNEL=1 EMBER_DEBUG_KERNEL_VARIANT=rt \
		selftests/suites/35-kmod-debug-vm.sh
fi

# ------------------------------------------------------------- latency
# latency ARCH: cyclictest in Debian's 6.12-rt of that architecture
latency() {
	local arch=$1 T="rt[$K${1:+ $1}]" ko agent ct out=$work/out-$1
	mkdir -p "$work/rt-$arch" "$out"
	if [ "$arch" = arm64 ]; then
		if ! scripts/build-arm64.sh --quiet --no-tests --module "$K" >"$work/b64.out" 2>"$work/b64.err"; then
			t_fail "$T: arm64 build" "$(tail -n 2 "$work/b64.err" | tr '\n' ' ')"
			return
		fi
		ko=$(sed -n "s/^module_$K=//p" "$work/b64.out")
		agent=$(sed -n 's/^agent=//p' "$work/b64.out")
		case $ko in /*) ;; *) t_fail "$T: module build" "$ko"; return ;; esac
		ct=/usr/bin/cyclictest	# from the arm64 guest root
	else
		local kdir
		if ! kdir=$(scripts/fetch-kernels.sh --kdir "$K" 2>"$work/fetch.log"); then
			t_fail "$T: kernel" "$(tail -n 1 "$work/fetch.log")"
			return
		fi
		if ! command -v cyclictest >/dev/null; then
			t_fail "$T: cyclictest" "not installed (rt-tests: scripts/install-deps.sh)"
			return
		fi
		if ! make -s module KDIR="$kdir" >"$work/kmod.log" 2>&1 || ! cp ember.ko "$work/ember.ko"; then
			t_fail "$T: module build" "$(tail -n 3 "$work/kmod.log" | tr '\n' ' ')"
			return
		fi
		if ! make -s -j2 agent >"$work/agent.log" 2>&1; then
			t_fail "$T: agent build" "$(tail -n 3 "$work/agent.log" | tr '\n' ' ')"
			return
		fi
		ko=$work/ember.ko agent=agent/ember ct=$(command -v cyclictest)
	fi
	cp "$agent" "$work/rt-$arch/ember"
	cp selftests/rt/guest-latency.sh "$work/rt-$arch/"
	rm -rf "$work/rt" && cp -r "$work/rt-$arch" "$work/rt"
	selftests/vm/run-vm.sh ${arch:+--arch "$arch"} --kernel "$K" --payload "$work/rt" --module "$ko" \
		--host-file "$ct" \
		--cmd "EMBER_RT_DURATION=${EMBER_RT_DURATION:-20} sh /payload/rt/guest-latency.sh" \
		--smp 2 --mem 1G --timeout 600 --out "$out" \
		--log "$logs/rt-latency$arch.log" --result "$work/result" >"$work/guest.out" 2>"$work/run-vm.err"
	rc=$?
	sed -n -E "s/^(PASS|FAIL|SKIP): /\1: $T: /p" "$work/guest.out"
	grep '^# ' "$work/guest.out"
	problems=$(vm_result "$work/result" kernel_problems 2>/dev/null)
	if [ "$rc" -eq 0 ] && { [ -z "$problems" ] || [ "$problems" = 0 ]; }; then
		t_pass "$T: latency run, kernel log clean"
	else
		t_fail "$T: latency run" "run-vm status $rc, kernel problems: ${problems:-?} (log: $logs/rt-latency$arch.log): $(tail -n 2 "$work/run-vm.err" | tr '\n' ' ')"
	fi
	report_latency "$T" "$work/guest.out"
}

# max and mean wake-up latency per phase (the worst thread), percentiles
report_latency() {
	awk -v t="$1" '/^rt-latency\|/ {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		p = v["phase"]
		if (!(p in mx) || v["max_us"] + 0 > mx[p]) mx[p] = v["max_us"] + 0
		sum[p] += v["avg_us"] * v["cycles"]; n[p] += v["cycles"]
	} END {
		for (p in mx) printf "info: %s latency %s: max %d us, mean %.1f us over %d wake-ups\n", t, p, mx[p], n[p] ? sum[p] / n[p] : 0, n[p]
	}' "$2" | sort
	sed -n "s/^rt-latency-pct| phase=\([^ ]*\) samples=\([0-9]*\) p99_us=\([0-9]*\) p999_us=\([0-9]*\) over_100ms=\([0-9]*\)/info: $1 latency \1: p99 \3 us, p99.9 \4 us (\2 wake-ups, \5 over 100 ms)/p" "$2"
}

want latency && latency ""
want latency-arm64 && latency arm64
exit 0
