#!/bin/sh
# PREEMPT_RT latency with ember off and on (selftests/suites/36-rt-vm.sh;
# runs as the VM's command). cyclictest (Debian's rt-tests) measures how
# late two SCHED_FIFO 95 threads wake from a 1 ms timer while every vCPU
# also runs a busy loop, three times: ember off; `ember record -a -e
# cpu,offcpu,lock` on the module; the same on the eBPF backend. Each run
# prints one "rt-latency|" line per cyclictest thread; the host reports
# them. The sessions' own results count as tests here (a session that
# failed to start would make its latency figure meaningless).
DUR=${EMBER_RT_DURATION:-20}
E=/payload/rt/ember
OUT=/out
ncpu=$(grep -c '^processor' /proc/cpuinfo)

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1: $2"; }

busy_start() {
	busy=""
	i=0
	while [ "$i" -lt "$ncpu" ]; do
		sh -c 'while :; do :; done' &
		busy="$busy $!"
		i=$((i + 1))
	done
}
busy_stop() { kill $busy 2>/dev/null; wait $busy 2>/dev/null; }

# cyclictest PHASE: the summary lines, one per thread
cyclic() {
	cyclictest -q -m -p 95 -t 2 -i 1000 -D "$DUR" >"$OUT/cyclic-$1.txt" 2>&1
	rc=$?
	awk -v p="$1" '/^T:/ {
		for (i = 1; i <= NF; i++) {
			if ($i == "C:") c = $(i + 1)
			if ($i == "Min:") mn = $(i + 1)
			if ($i == "Avg:") av = $(i + 1)
			if ($i == "Max:") mx = $(i + 1)
		}
		print "rt-latency| phase=" p " thread=" $2 " cycles=" c " min_us=" mn " avg_us=" av " max_us=" mx
	}' "$OUT/cyclic-$1.txt"
	if [ "$rc" -ne 0 ] || ! grep -q '^T:' "$OUT/cyclic-$1.txt"; then
		fail "rt_cyclictest_$1" "cyclictest exited $rc: $(tail -n 2 "$OUT/cyclic-$1.txt" | tr '\n' ' ')"
		return 1
	fi
	pass "rt_cyclictest_$1"
}

# with_ember PHASE BACKEND: cyclictest while a whole-system session runs
with_ember() {
	"$E" record -b "$2" -a -F 99 -e cpu,offcpu,lock -d $((DUR + 3)) \
		-o "$OUT/ember-$1.folded" >"$OUT/ember-$1.log" 2>&1 &
	ep=$!
	sleep 2	# the session is up (its tracepoints attached) before the clock starts
	cyclic "$1"
	wait "$ep"
	rc=$?
	if [ "$rc" -eq 0 ] && [ -s "$OUT/ember-$1.folded" ]; then
		pass "rt_ember_session_$1"
	else
		fail "rt_ember_session_$1" "ember exited $rc: $(tail -n 3 "$OUT/ember-$1.log" | tr '\n' ' ')"
	fi
	grep -E 'samples|lost' "$OUT/ember-$1.log" | sed 's/^/# /' | head -n 4
}

echo "# kernel $(uname -r), $(grep -o 'PREEMPT_RT\|PREEMPT_DYNAMIC\|PREEMPT ' /proc/version | head -n1), $ncpu vCPUs, ${DUR}s per phase"
busy_start
cyclic off
if insmod /payload/ember.ko; then
	with_ember kmod kmod
	rmmod ember || fail rt_rmmod "rmmod ember failed"
else
	fail rt_insmod "insmod ember.ko failed"
fi
with_ember bpf bpf
cyclic off2
busy_stop
exit 0
