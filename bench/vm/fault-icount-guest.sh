#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# bench/fault-icount.sh's guest side (busybox sh, see selftests/vm/README.md):
# faultwork --bench under each page-fault hook, in a VM whose clocks count
# guest instructions (EMBER_VM_ICOUNT), so faultwork's own CPU time per
# fault is a count of instructions, not host time.
#
# Configurations, FI_REPS repetitions each, their order rotated per
# repetition:
#   none      no profiler
#   kmod      ember record -e faults, module backend, its default hook
#             (exceptions tracepoints)
#   kmod-perf the same with the module loaded with fault_perf=1 (perf
#             software event)
#   bpf       eBPF backend, module not loaded, default hook (perf event)
#   bpf-tp    eBPF backend with EMBER_FAULTS_HOOK=tp (raw tracepoints)
# Prints "FIROW config=C rep=R faults=N ns_per_fault=N bytes=N agent_ns=N"
# lines (bytes: what the profile holds; agent_ns: ember's own CPU time
# while faultwork ran).
#
# Environment: FI_D (faultwork --bench seconds, guest time), FI_REPS,
# FI_CONFIGS, FI_PERIOD (--fault-period, default: ember's).
D=${FI_D:-1}
REPS=${FI_REPS:-5}
CONFIGS=${FI_CONFIGS:-none kmod kmod-perf bpf bpf-tp}
P=/payload/fault-icount
period=${FI_PERIOD:+--fault-period $FI_PERIOD}
cd /tmp || exit 1

echo "FINOTE kernel $(uname -r) cpus $(grep -c ^processor /proc/cpuinfo) clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
# the guest's own mitigations: their thunks' instructions are counted,
# not their cost on hardware
for v in spectre_v2 retbleed spec_rstack_overflow; do
	f=/sys/devices/system/cpu/vulnerabilities/$v
	[ -r $f ] && echo "FINOTE $v: $(cat $f)"
done

# wait (up to 300 guest seconds) until PID holds BPF programs: loading
# (BTF, the verifier) is long under TCG
wait_progs() {
	t=0
	while [ $t -lt 300 ] && ! grep -qs '^prog_id' /proc/"$1"/fdinfo/*; do
		sleep 1
		t=$((t + 1))
	done
}

# CPU ns (sum_exec_runtime) of every thread of process $1, 0 for none
profcpu() {
	[ -n "$1" ] || { echo 0; return; }
	cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
}

# run_one CONFIG REP: start the profiler (if any), give it time to attach,
# run faultwork --bench, stop the profiler, print the row
run_one() {
	cfg=$1
	rep=$2
	pid=
	case $cfg in
	kmod | kmod-perf)
		fp=0
		[ "$cfg" = kmod-perf ] && fp=1
		if ! insmod "$EMBER_MODULE" fault_perf=$fp 2>/tmp/insmod.err; then
			echo "FINOTE $cfg: insmod failed: $(cat /tmp/insmod.err)"
			return
		fi
		# shellcheck disable=SC2086 # $period: none or two words
		$P/ember record --backend kmod -a -e faults $period -o /tmp/f.folded 2>/tmp/f.err &
		pid=$!
		sleep 2 ;;
	bpf | bpf-tp)
		hook=
		[ "$cfg" = bpf-tp ] && hook=tp
		# shellcheck disable=SC2086 # $period: none or two words
		EMBER_FAULTS_HOOK=$hook $P/ember record --backend bpf -a -e faults $period \
			-o /tmp/f.folded 2>/tmp/f.err &
		pid=$!
		wait_progs $pid
		sleep 1 ;;
	esac
	a0=$(profcpu "$pid")
	out=$($P/faultwork --bench "$D")
	a1=$(profcpu "$pid")
	samples=
	if [ -n "$pid" ]; then
		kill -INT "$pid"
		wait "$pid" || echo "FINOTE $cfg: ember failed: $(tail -n 2 /tmp/f.err | tr '\n' ' ')"
		samples=$(awk -F' ' '{ s += $NF } END { print s + 0 }' /tmp/f.folded 2>/dev/null)
	fi
	case $cfg in kmod*) rmmod ember || echo "FINOTE $cfg: rmmod failed" ;; esac
	echo "$out" | awk -v c="$cfg" -v r="$rep" -v s="${samples:-0}" -v a=$((a1 - a0)) \
		'/^BENCH/ { printf "FIROW config=%s rep=%s faults=%s ns_per_fault=%s bytes=%s agent_ns=%s\n", c, r, $7, $5, s, a }'
}

rep=0
# shellcheck disable=SC2086 # one configuration per word
set -- $CONFIGS
n=$#
while [ $rep -lt "$REPS" ]; do
	i=0
	while [ $i -lt $n ]; do
		idx=$(( (i + rep) % n + 1 ))
		eval "cfg=\${$idx}"
		run_one "$cfg" "$rep"
		i=$((i + 1))
	done
	rep=$((rep + 1))
done
echo "FIDONE"
exit 0
