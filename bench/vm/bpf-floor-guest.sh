#!/bin/sh
# Inside the arm64 VM (bench/bpf-floor.sh --arm64-vm): bench/bpf-floor.sh's
# configurations, with busybox only. The cost of a perf_event program is
# read from its holder's fdinfo (run_time_ns and run_cnt of each bpf-prog
# fd whose prog_type is 7, BPF_PROG_TYPE_PERF_EVENT; kernel.bpf_stats_enabled
# on): bpftrace's for empty/map/ustack, ember's on-CPU program for ember.
# Prints "ROW cfg workload runs ns_per_run" lines, then "FLOOR-DONE".
# CFGS limits the configurations; FLOOR_DEBUG=1 says how the wait goes.
P=/payload/p
hz=${HZ:-99} secs=${SECS:-10} reps=${REPS:-3}
echo 1 >/proc/sys/kernel/bpf_stats_enabled
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
mount -t debugfs none /sys/kernel/debug 2>/dev/null

prog_cost() {	# pid: "runs ns_per_run" of its perf_event programs
	# one ls and one awk a program: under TCG every fork costs ~0.1 s
	local fd cn cnt=0 ns=0
	for fd in $(ls -l /proc/$1/fd 2>/dev/null | awk '/bpf-prog/ { print $(NF - 2) }'); do
		cn=$(awk '/^prog_type:/ { t = $2 } /^run_cnt:/ { c = $2 }
			/^run_time_ns:/ { n = $2 } END { if (t == 7) print c, n }' \
			/proc/$1/fdinfo/$fd 2>/dev/null)
		[ -n "$cn" ] || continue
		cnt=$((cnt + ${cn% *}))
		ns=$((ns + ${cn#* }))
	done
	[ $cnt -gt 0 ] && echo "$cnt $((ns / cnt))" || echo "0 0"
}

one() {	# cfg workload
	local w p
	"$P/$2" -t 2 -d $((secs + 120)) >/dev/null 2>&1 &
	w=$!
	sleep 0.5
	case $1 in
	empty) bpftrace -e "profile:hz:$hz { }" >/dev/null 2>&1 & ;;
	map) bpftrace -e "profile:hz:$hz { @[tid] = count(); }" >/dev/null 2>&1 & ;;
	ustack) bpftrace -e "profile:hz:$hz { @[ustack(perf, 32)] = count(); }" >/dev/null 2>&1 & ;;
	ember) "$P/ember" record --backend bpf -F "$hz" -p "$w" -d $((secs + 120)) \
		-o /tmp/floor.folded >/dev/null 2>/tmp/ember.err & ;;
	esac
	p=$!
	# bpftrace compiles under emulation for seconds: measure once attached
	for i in $(seq 60); do
		[ "$(prog_cost $p)" != "0 0" ] && break
		[ -n "${FLOOR_DEBUG:-}" ] && echo "FLOOR-DEBUG: $i $1 pid $p: $(ls -l /proc/$p/fd 2>/dev/null | grep -c bpf-prog) progs"
		sleep 0.5
	done
	sleep "$secs"
	echo "ROW $1 $2 $(prog_cost $p)"
	[ $1 = ember ] && [ -s /tmp/ember.err ] && sed 's/^/EMBER-ERR: /' /tmp/ember.err | head -5
	kill -INT $p 2>/dev/null
	wait $p 2>/dev/null
	kill $w 2>/dev/null
	wait $w 2>/dev/null
}

for rep in $(seq "$reps"); do
	for wl in spin deep; do
		for cfg in ${CFGS:-empty map ustack ember}; do
			one $cfg $wl
		done
	done
done
echo FLOOR-DONE
