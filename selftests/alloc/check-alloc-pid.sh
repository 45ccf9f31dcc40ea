#!/bin/sh
# -e alloc -p: a running allocwork started without the sampler, uprobes on
# its allocator's entry points sampled by bytes in the kernel (eBPF or the
# module). As suite 16 does on the host: the message naming the cost, the
# shares of bytes allocated per chain within 3 points of allocwork's own
# accounting and the total within 10%. Then nothing stays attached: while
# probed, the allocator's code as the process reads it (/proc/PID/mem)
# differs from the file (the breakpoints), and once ember stops (its end,
# or SIGKILL) it reads as the file again. POSIX sh, for the guests'
# busybox.
#
# usage: check-alloc-pid.sh --ember PATH --work PATH --backend kmod|bpf
#                           [--label L] [--rate BYTES] [--warmup S]
#                           [--scale S] [--out DIR] [--compare BACKEND]
#                           [--lib PATH] [--allocator FILE]
# --allocator: the file the message must name as probed (a regular
# expression; default: any)
E=ember W=allocwork B=bpf L=host RATE=8192 WARMUP=1.5 SCALE=0.5 OUT=/tmp/allocpid
CMP= LIB= ALLOCATOR=
while [ $# -gt 0 ]; do
	case $1 in
	--ember) E=$2; shift ;;
	--work) W=$2; shift ;;
	--backend) B=$2; shift ;;
	--label) L=$2; shift ;;
	--rate) RATE=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--scale) SCALE=$2; shift ;;
	--out) OUT=$2; shift ;;
	--compare) CMP=$2; shift ;;
	--lib) LIB=$2; shift ;;
	--allocator) ALLOCATOR=$2; shift ;;
	*) echo "check-alloc-pid.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
mkdir -p "$OUT"
T=alloc_pid_${L}
pass() { echo "PASS: ${T}_$1"; }
fail() { echo "FAIL: ${T}_$1: $2"; }

# allocwork sleeps WARMUP seconds before allocating: the probes are on
"$W" "$WARMUP" "$SCALE" >"$OUT/pmode.stdout" &
aw=$!
sleep 0.2
"$E" record --backend "$B" -e alloc --alloc-rate "$RATE" \
	${LIB:+--alloc-lib "$LIB"} -p $aw \
	-o "$OUT/pmode.folded" 2>"$OUT/pmode.err"
rc=$?
wait $aw 2>/dev/null
shares=$(awk '
FNR == NR && /^CHAIN / { t[$2] = $3; ts += $3; next }
FNR != NR && index($0, ";[alloc];") {
	for (c in t) if (index($0, ";" c ";")) { g[c] += $NF; gs += $NF }
}
END {
	w = 0
	for (c in t) {
		d = 100 * t[c] / ts - (gs ? 100 * g[c] / gs : 0)
		if (d < 0) d = -d
		if (d > w) w = d
		printf "%s=%.1f%%/%.1f%% ", c, 100 * t[c] / ts, gs ? 100 * g[c] / gs : 0
	}
	printf "total=%.0f/%.0f worst=%.2f\n", ts, gs, w
}' "$OUT/pmode.stdout" "$OUT/pmode.folded" 2>/dev/null)
echo "# ${T}: allocated (truth/profile): $shares"
if [ $rc -eq 0 ] &&
	grep -q "process $aw runs without ember's sampler: uprobes on .*$ALLOCATOR's malloc family trap on every call" "$OUT/pmode.err" &&
	awk -v s="$shares" 'BEGIN {
		split(s, f, "worst="); n = split(s, g, "total="); split(g[2], tt, "[/ ]")
		exit !(n == 2 && tt[1] > 0 && f[2] + 0 <= 3 &&
		       tt[2] >= 0.9 * tt[1] && tt[2] <= 1.1 * tt[1])
	}'; then
	pass shares_3pp_total_10pct
else
	fail shares_3pp_total_10pct "rc=$rc $shares; $(tr '\n' '|' <"$OUT/pmode.err" | cut -c1-300)"
fi

# What a call costs (informational, never a verdict: emulated guests are
# noisy): allocwork's rounds per call unprobed, probed with -p through
# this backend (the run above) and, with --compare OTHER, through OTHER.
per_call() {
	awk '/^RUN / && $4 > 0 { printf "%.0f", $2 / $4 }' "$1"
}
"$W" 0 "$SCALE" >"$OUT/bare.stdout"
cost="$(per_call "$OUT/bare.stdout") ns unprobed, $(per_call "$OUT/pmode.stdout") ns with $B"
if [ -n "$CMP" ]; then
	"$W" "$WARMUP" "$SCALE" >"$OUT/cmp.stdout" &
	aw=$!
	sleep 0.2
	"$E" record --backend "$CMP" -e alloc --alloc-rate "$RATE" \
		${LIB:+--alloc-lib "$LIB"} -p $aw \
		-o "$OUT/cmp.folded" 2>"$OUT/cmp.err"
	wait $aw 2>/dev/null
	cost="$cost, $(per_call "$OUT/cmp.stdout") ns with $CMP"
fi
echo "# ${T}: per malloc-family call (rate $RATE): $cost"

# Whether the executable mappings of file $2 in process $1 read as the
# file does: "same", "differ" (breakpoints in them), or "unreadable" /
# "none" (a broken check, never a pass)
text_vs_file() {
	awk -v f="$2" '$2 ~ /x/ && $6 == f { print $1, $3 }' "/proc/$1/maps" |
	while read -r range off; do
		lo=$((0x${range%-*})) hi=$((0x${range#*-})) off=$((0x$off))
		a=$(dd if="/proc/$1/mem" bs=4096 skip=$((lo / 4096)) \
			count=$(((hi - lo) / 4096)) 2>/dev/null | md5sum)
		b=$(dd if="$2" bs=4096 skip=$((off / 4096)) \
			count=$(((hi - lo) / 4096)) 2>/dev/null | md5sum)
		if [ -z "$a" ] || [ -z "$b" ]; then
			echo unreadable
		elif [ "$a" = "$b" ]; then
			echo same
		else
			echo differ
		fi
	done | sort -u | tr '\n' ' ' | awk '{
		# one verdict for all: differ if any does, "none" if none read
		v = "none"
		for (i = 1; i <= NF; i++)
			if ($i == "differ" || ($i == "unreadable" && v != "differ") ||
			    ($i == "same" && v == "none"))
				v = $i
		print v
	}'
}

# HOW: "end" (-d runs out) or "kill" (SIGKILL: the module sees the
# netlink socket close, eBPF the links' fds)
attached_then_gone() {
	how=$1
	"$W" 60 0.01 >/dev/null &
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
