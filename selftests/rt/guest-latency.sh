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
	# -h: a 1 us histogram up to 100 ms (overflows counted), for the
	# percentiles: under TCG one host hiccup sets the max
	cyclictest -q -m -p 95 -t 2 -i 1000 -D "$DUR" -h 100000 \
		>"$OUT/cyclic-$1.txt" 2>&1
	rc=$?
	# with -h cyclictest prints the histogram and "# Total/Min/Avg/Max"
	# lines (one column per thread) instead of its T: lines
	# num(): busybox awk reads "000032" as octal
	awk -v p="$1" '
	function num(s) { sub(/^0+/, "", s); return s == "" ? 0 : s + 0 }
	/^# (Total|Min Latencies|Avg Latencies|Max Latencies|Histogram Overflows):/ {
		k = $2
		n = 0
		for (i = 3; i <= NF; i++) if ($i ~ /^[0-9]+$/) { v[k, n] = num($i); n++ }
		if (n > nt) nt = n
	}
	/^[0-9]+[ \t]/ { u = num($1); for (i = 2; i <= NF; i++) h[u] += num($i) }
	END {
		for (t = 0; t < nt; t++) {
			print "rt-latency| phase=" p " thread=" t " cycles=" v["Total:", t] " min_us=" v["Min", t] " avg_us=" v["Avg", t] " max_us=" v["Max", t]
			total += v["Total:", t]; over += v["Histogram", t]
		}
		if (!total) exit
		acc = 0
		for (u = 0; u < 100000; u++) {
			acc += h[u]
			if (!p99 && acc >= total * 0.99) p99 = u
			if (!p999 && acc >= total * 0.999) p999 = u
		}
		if (!p99) p99 = 100000
		if (!p999) p999 = 100000
		print "rt-latency-pct| phase=" p " samples=" total " p99_us=" p99 " p999_us=" p999 " over_100ms=" over
	}' "$OUT/cyclic-$1.txt"
	if [ "$rc" -ne 0 ] || ! grep -q '^# Max Latencies:' "$OUT/cyclic-$1.txt"; then
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
