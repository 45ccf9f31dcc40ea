#!/bin/sh
# -e alloc -p: a running allocwork started without the sampler, uprobes on
# its allocator's entry points sampled by bytes in the kernel (eBPF or the
# module). As suite 16 does on the host: the message naming the cost, the
# shares of bytes allocated per chain within 3 points of allocwork's own
# accounting and the total within 10%. Then nothing stays attached: while
# probed, the allocator's code as the process reads it (/proc/PID/mem)
# differs from the file (the breakpoints), and once ember stops (its end,
# or SIGKILL) it reads as the file again. In use: the shares of the bytes
# still in use at the end within 5 points of allocwork's, the blocks
# followed to their free (return probes on the entry points, probes on
# free; the probes on free are in the allocator's text too, so the
# removal check covers them). POSIX sh, for the guests'
# busybox.
#
# usage: check-alloc-pid.sh --ember PATH --work PATH --backend kmod|bpf
#                           [--label L] [--rate BYTES] [--warmup S]
#                           [--scale S] [--out DIR] [--compare BACKEND]
#                           [--lib PATH] [--allocator FILE] [--preload LIB]
# --allocator: the file the message must name as probed (a regular
# expression; default: any); --preload: the workload runs with
# LD_PRELOAD=LIB (jemalloc, tcmalloc)
ME=check-alloc-pid.sh E=ember W=allocwork B=bpf L=host RATE=8192 WARMUP=1.5
SCALE=0.5 OUT=/tmp/allocpid CMP= LIB= ALLOCATOR= PRELOAD=
. "$(dirname "$0")/alloc-common.sh"
alloc_args "$@"
mkdir -p "$OUT"
T=alloc_pid_${L}
pass() { echo "PASS: ${T}_$1"; }
fail() { echo "FAIL: ${T}_$1: $2"; }

# allocwork sleeps WARMUP seconds before allocating: the probes are on
LD_PRELOAD=$PRELOAD "$W" "$WARMUP" "$SCALE" >"$OUT/pmode.stdout" &
aw=$!
sleep 0.2
"$E" record --backend "$B" -e alloc --alloc-rate "$RATE" \
	${LIB:+--alloc-lib "$LIB"} -p $aw \
	-o "$OUT/pmode.folded" 2>"$OUT/pmode.err"
rc=$?
wait $aw 2>/dev/null
shares=$(alloc_shares "$OUT/pmode.stdout" "$OUT/pmode.folded")
echo "# ${T}: allocated (truth/profile): $shares"
if [ $rc -eq 0 ] &&
	grep -q "process $aw runs without ember's sampler: uprobes on .*$ALLOCATOR's malloc family trap on every call" "$OUT/pmode.err" &&
	shares_ok "$shares"; then
	pass shares_3pp_total_10pct
else
	fail shares_3pp_total_10pct "rc=$rc $shares; $(tr '\n' '|' <"$OUT/pmode.err" | cut -c1-300)"
fi
# the blocks followed to their free: what is still in use at the end
if u=$(inuse_ok "$OUT/pmode.stdout" "$OUT/pmode.folded") &&
	grep -q "in-use bytes followed" "$OUT/pmode.err"; then
	pass inuse_shares_5pp
else
	fail inuse_shares_5pp "$u; $(grep -o 'trap on every call ([^)]*)' "$OUT/pmode.err")"
fi
echo "# ${T}: in use (truth/profile): $u"

# What a call costs (informational, never a verdict: emulated guests are
# noisy): allocwork's rounds per call unprobed, probed with -p through
# this backend (the run above) and, with --compare OTHER, through OTHER.
per_call() {
	awk '/^RUN / && $4 > 0 { printf "%.0f", $2 / $4 }' "$1"
}
LD_PRELOAD=$PRELOAD "$W" 0 "$SCALE" >"$OUT/bare.stdout"
cost="$(per_call "$OUT/bare.stdout") ns unprobed, $(per_call "$OUT/pmode.stdout") ns with $B"
if [ -n "$CMP" ]; then
	LD_PRELOAD=$PRELOAD "$W" "$WARMUP" "$SCALE" >"$OUT/cmp.stdout" &
	aw=$!
	sleep 0.2
	"$E" record --backend "$CMP" -e alloc --alloc-rate "$RATE" \
		${LIB:+--alloc-lib "$LIB"} -p $aw \
		-o "$OUT/cmp.folded" 2>"$OUT/cmp.err"
	wait $aw 2>/dev/null
	cost="$cost, $(per_call "$OUT/cmp.stdout") ns with $CMP"
fi
echo "# ${T}: per malloc-family call (rate $RATE): $cost"

# HOW: "end" (-d runs out) or "kill" (SIGKILL: the module sees the
# netlink socket close, eBPF the links' fds)
attached_then_gone() {
	how=$1
	LD_PRELOAD=$PRELOAD "$W" 60 0.01 >/dev/null &
	aw=$!
	sleep 0.3
	"$E" record --backend "$B" -e alloc --alloc-rate "$RATE" \
		${LIB:+--alloc-lib "$LIB"} -p $aw -d 6 \
		-o "$OUT/gone-$how.folded" 2>"$OUT/gone-$how.err" &
	ep=$!
	lib= i=0
	while [ $i -lt 50 ] && [ -z "$lib" ]; do
		sleep 0.1
		lib=$(sed -n "s/.*uprobes on \(.*\)'s malloc family.*/\1/p" "$OUT/gone-$how.err")
		i=$((i + 1))
	done
	during=$(text_vs_file $aw "$lib")
	[ "$how" = kill ] && kill -9 $ep 2>/dev/null
	wait $ep 2>/dev/null
	after=$(text_vs_file $aw "$lib") i=0
	# a killed agent's socket is released a moment later
	while [ $i -lt 30 ] && [ "$after" != same ]; do
		sleep 0.1
		after=$(text_vs_file $aw "$lib")
		i=$((i + 1))
	done
	kill $aw 2>/dev/null
	wait $aw 2>/dev/null
	if [ -n "$lib" ] && [ "$during" = differ ] && [ "$after" = same ]; then
		pass "nothing_left_after_$how"
	else
		fail "nothing_left_after_$how" "${lib:-no allocator named}'s text in process $aw against the file: $during while attached, $after after; $(tr '\n' '|' <"$OUT/gone-$how.err" | cut -c1-300)"
	fi
}
attached_then_gone end
attached_then_gone kill
exit 0
