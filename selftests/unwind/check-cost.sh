#!/bin/sh
# The module's handler time per sample (ember status: per-CPU handler_ns
# over samples) on the no-FP workload, with unwind tables and with the
# frame-pointer walk (--no-cfi), at the same frequency in the same VM.
# Prints "# unwind_cost ..." lines: a measurement, not a test (under TCG
# only the ratio means something).
E=$1 W=$2
totals() {
	"$E" status 2>/dev/null | sed -n 's/^  total: \([0-9]*\) samples.*/\1/p'
}
handler() {	# sum of samples * ns/sample over CPUs
	"$E" status 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && NF == 7 { s += $3 * $7 } END { printf "%d\n", s }'
}
run() {	# label args...
	label=$1
	shift
	"$E" record --backend kmod -F 999 "$@" -o /tmp/cost.folded -- "$W/nofp-work" cpu 3 2 \
		>/dev/null 2>/tmp/cost.err
	frames=$(awk '{ n = $NF; sub(/ [0-9]+$/, ""); c = split($0, f, ";");
		k = 0; for (i = 2; i <= c; i++) if (f[i] !~ /_\[k\]$/) k++;
		t += n; d += n * k } END { if (t) printf "%.1f", d / t; else print 0 }' /tmp/cost.folded)
	echo "$label $frames"
}
# the module's counters run on from load: differences per run
h0=$(handler); n0=$(totals)
set -- $(run cfi) ; cfi_frames=$2; h1=$(handler); n1=$(totals)
set -- $(run fp --no-cfi) ; fp_frames=$2; h2=$(handler); n2=$(totals)
awk -v a="$((h1 - h0))" -v an="$((${n1:-0} - ${n0:-0}))" -v b="$((h2 - h1))" \
	-v bn="$((${n2:-0} - ${n1:-0}))" -v af="$cfi_frames" -v bf="$fp_frames" 'BEGIN {
	ca = an ? a / an : 0; cb = bn ? b / bn : 0
	printf "# unwind_cost: %.0f ns/sample with tables (%s user frames), %.0f ns/sample by frame pointers (%s frames): ratio %.2f\n",
		ca, af, cb, bf, cb ? ca / cb : 0 }'
