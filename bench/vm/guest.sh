#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# make bench, inside a test-kernel VM (busybox sh, see selftests/vm/README.md):
# on-CPU overhead of ember with the module backend vs perf vs nothing, the
# module's own handler-time statistics (ember status), and the eBPF
# backend's program run time on the same kernel. Prints BENCH* lines that
# bench/bench.py parses; under TCG only ratios mean something.
#
# Environment: BENCH_D (seconds per run), BENCH_W (attach time),
# BENCH_REPS, BENCH_FREQS ("19 99 999").
D=${BENCH_D:-2}
W=${BENCH_W:-1}
REPS=${BENCH_REPS:-1}
FREQS=${BENCH_FREQS:-19 99 999}
B=/payload/bench
cd /tmp || exit 1

if ! insmod "$EMBER_MODULE" 2>/tmp/insmod.err; then
	echo "BENCHNOTE insmod failed: $(cat /tmp/insmod.err)"
	exit 1
fi
have_perf=0
perf --version >/dev/null 2>&1 && have_perf=1
[ $have_perf = 1 ] || echo "BENCHNOTE perf cannot run in the guest"

configs=none
for f in $FREQS; do
	configs="$configs ember$f"
	[ $have_perf = 1 ] && configs="$configs perf$f"
done

# CPU seconds (sum_exec_runtime) of every thread of a process
profcpu() {
	cat /proc/"$1"/task/*/schedstat 2>/dev/null |
		awk '{ s += $1 } END { printf "%.6f", s / 1e9 }'
}

# measure PID WORKLOAD...: once the profiler PID (none: empty) has had
# the attach time, run WORKLOAD and stop PID. Sets $out (the workload's
# wall= cpu= ... line) and $pcpu (PID's CPU seconds during the workload).
measure() {
	mpid=$1
	shift
	sleep "$W"
	c0=0
	[ -n "$mpid" ] && c0=$(profcpu "$mpid")
	# BENCHT lines let the host read the emulator's own CPU time around
	# the run: guest CPU time means little under TCG
	# snap=1: the run time of the profiler's BPF programs around the run
	[ -n "${snap:-}" ] && progsum "$mpid" >/tmp/progs.0
	echo "BENCHT begin"
	out=$("$@" | sed 's/secs=/wall=/; s/cpu_s=/cpu=/')
	echo "BENCHT end"
	[ -n "${snap:-}" ] && progsum "$mpid" >/tmp/progs.1
	c1=0
	[ -n "$mpid" ] && c1=$(profcpu "$mpid")
	if [ -n "$mpid" ]; then
		kill -INT "$mpid"
		wait "$mpid"
	fi
	pcpu=$(awk "BEGIN { print $c1 - $c0 }")
}

# rotated FN CONFIG...: REPS repetitions, each running FN CONFIG REP for
# every config in an order rotated per repetition, so a slow drift of the
# machine hits every config alike
rotated() {
	fn=$1
	shift
	n=$#
	rep=0
	while [ $rep -lt "$REPS" ]; do
		i=0
		while [ $i -lt $n ]; do
			idx=$(( (i + rep) % n + 1 ))
			eval "cfg=\${$idx}"
			"$fn" "$cfg" "$rep"
			i=$((i + 1))
		done
		rep=$((rep + 1))
	done
}

run_one() {
	cfg=$1
	rep=$2
	pid=
	case $cfg in
	ember*) $B/ember record --backend kmod -a -F "${cfg#ember}" -o /tmp/e.folded 2>/tmp/e.err &
		pid=$! ;;
	perf*) perf record -q -e cpu-clock -g -a -F "${cfg#perf}" -o /tmp/perf.data 2>/tmp/p.err &
		pid=$! ;;
	esac
	measure "$pid" $B/spin -d "$D"
	extra=
	case $cfg in
	ember*) lost=$(sed -n 's/.* \([0-9][0-9]*\) lost.*/\1/p' /tmp/e.err | tail -n 1)
		[ -n "$lost" ] || echo "BENCHNOTE $cfg: $(tail -n 2 /tmp/e.err | tr '\n' ' ')"
		extra="lost=${lost:-0}" ;;
	esac
	echo "BENCHROW config=$cfg rep=$rep $out profcpu=$pcpu $extra"
	# the module's statistics of the session that just ended
	case $cfg in
	ember*) if [ "$rep" = 0 ]; then
			echo "BENCHSTATUS config=$cfg"
			$B/ember status
			echo "BENCHSTATUSEND"
		fi ;;
	esac
}

rotated run_one $configs

# off-CPU: pingpong alone, with ember's off-CPU through the module and
# through eBPF, and with offcputime
offconfigs="none kmod-offcpu bpf-offcpu"
command -v offcputime >/dev/null && offconfigs="$offconfigs offcputime"

# wait (up to 120 s: BTF and the verifier are slow under TCG) until a
# process holds BPF programs
wait_progs() {
	t=0
	while [ $t -lt 120 ] && ! grep -qs '^prog_id' /proc/"$1"/fdinfo/*; do
		sleep 1
		t=$((t + 1))
	done
}

# progsum PID: "ns cnt" summed over PID's programs (cnt: sched_switch ones)
progsum() {
	ids=$(grep -h '^prog_id' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u)
	ns=0
	cnt=0
	for id in $ids; do
		set -- $(bpftool prog show id "$id" 2>/dev/null | sed -n '1s/.* name \([^ ]*\) .*run_time_ns \([0-9]*\) run_cnt \([0-9]*\).*/\1 \2 \3/p')
		[ $# = 3 ] || continue
		ns=$((ns + $2))
		case $1 in *switch*) cnt=$((cnt + $3)) ;; esac
	done
	echo "$ns $cnt"
}

run_off() {
	cfg=$1
	rep=$2
	pid=
	case $cfg in
	kmod-offcpu) $B/ember record --backend kmod -a -e offcpu -o /tmp/o.folded 2>/tmp/o.err &
		pid=$! ;;
	bpf-offcpu) $B/ember record --backend bpf -a -e offcpu -o /tmp/o.folded 2>/tmp/o.err &
		pid=$!
		wait_progs $pid ;;
	offcputime) offcputime >/tmp/oc.out 2>&1 &
		pid=$!
		wait_progs $pid ;;
	esac
	offprogs=
	snap=
	case $cfg in
	bpf-offcpu|offcputime) snap=1 ;;
	esac
	# pinned: unpinned, the rate follows where the two threads land
	measure "$pid" $B/pingpong -d "$D" -c 0
	if [ -n "$snap" ]; then
		snap=
		offprogs=$(awk 'NR == FNR { n0 = $1; c0 = $2; next }
			{ if ($2 > c0) printf "switches=%d ns_per_switch=%.0f", $2 - c0, ($1 - n0) / ($2 - c0) }' \
			/tmp/progs.0 /tmp/progs.1)
	fi
	echo "BENCHOFF config=$cfg rep=$rep $out profcpu=$pcpu"
	# each repetition's own per-switch cost: the module's probe time
	# (reset at every session start), the eBPF programs' run time
	case $cfg in
	kmod-offcpu) echo "BENCHOFFSTAT config=$cfg rep=$rep $($B/ember status |
		sed -n 's/^  off-CPU: \([0-9]*\) switches, \([0-9]*\) ns.*/switches=\1 ns_per_switch=\2/p')" ;;
	bpf-offcpu|offcputime)
		[ -n "$offprogs" ] && echo "BENCHOFFSTAT config=$cfg rep=$rep $offprogs" ;;
	esac
}

# every off-CPU run with bpf_stats on (baseline too): each program run
# pays two clock reads, whichever tool it belongs to
echo 1 >/proc/sys/kernel/bpf_stats_enabled 2>/dev/null
rotated run_off $offconfigs

# the eBPF backend's per-run cost on the same kernel, for comparison
if echo 1 >/proc/sys/kernel/bpf_stats_enabled 2>/dev/null && command -v bpftool >/dev/null; then
	for f in $FREQS; do
		[ "$f" = 19 ] && continue
		$B/spin -d 300 >/dev/null &
		spid=$!
		$B/ember record --backend bpf -a -F "$f" -o /tmp/b.folded 2>/tmp/b.err &
		pid=$!
		# loading (BTF, verifier) is slow under TCG: wait for the programs
		t=0
		while [ $t -lt 120 ] && ! bpftool prog list 2>/dev/null | grep -q ember_; do
			sleep 1
			t=$((t + 1))
		done
		sleep "$(awk "BEGIN { print $W + $D }")"
		echo "BENCHBPFJSON config=bpf$f $(bpftool -j prog show)"
		kill -INT "$pid"
		wait "$pid" || echo "BENCHNOTE ember --backend bpf: $(tail -n 2 /tmp/b.err | tr '\n' ' ')"
		kill "$spid"
		wait "$spid"
	done
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
else
	echo "BENCHNOTE eBPF run time not measured in the guest (no bpf_stats or bpftool)"
fi
# CFI unwinding in the module: ns per sample with tables next to the
# frame-pointer walk at the same frequency (a ratio; aim under 3x)
if [ -x $B/unwind-gcc/nofp-work ] && [ -f $B/check-cost.sh ]; then
	sh $B/check-cost.sh $B/ember $B/unwind-gcc | sed 's/^# /BENCHNOTE /'
fi
rmmod ember 2>/dev/null
exit 0
