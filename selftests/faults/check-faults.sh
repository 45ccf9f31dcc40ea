#!/bin/sh
# ember record -e faults against faultwork's ground truth (faultwork.c):
# bytes per call chain and in total. Runs on the host (eBPF, suite
# 41-agent-host) and in the VMs (module, suite 40-agent-vm's guest).
# Prints PASS:/FAIL: lines named faults_<label>_<test>.
#
# usage: check-faults.sh --ember PATH --work PATH/faultwork --backend B
#                        --label L [--rounds N] [--out DIR]
#
#  shares: touch_a/touch_b/touch_c's shares of the bytes the profile puts
#    under main;run_rounds;touch_X;touch_region, each within 5 points of
#    the bytes faultwork touched from there (60/30/10);
#  total: those bytes within 20% of what faultwork touched (the profile's
#    bytes are samples x period x page size);
#  period: --fault-period 64 gives about 8x the samples of the default 512,
#    bytes still within 20%;
#  combined: -e cpu,faults puts the fault bytes under [faults];
#  refused: --fault-period 0 is refused with a message.
ember=ember work=faultwork backend=bpf label=host rounds=60 out=${TMPDIR:-/tmp}/ember-faults
while [ $# -gt 0 ]; do
	case $1 in
	--ember) ember=$2; shift ;;
	--work) work=$2; shift ;;
	--backend) backend=$2; shift ;;
	--label) label=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--out) out=$2; shift ;;
	*) echo "check-faults.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
mkdir -p "$out"
T=faults_$label
pass() { echo "PASS: ${T}_$1"; }
fail() { echo "FAIL: ${T}_$1: $2"; }

# compare TRUTH-FILE FOLDED [META]: "a=.. b=.. c=.. worst=PP bytes=B truth=T"
compare() {
	awk -v meta="${3:-}" '
	FNR == NR && /^TOUCH / { truth[$2] = $3; tsum += $3; next }
	FNR == NR && /^TOTAL / { total = $2; next }
	FNR == NR { next }
	{
		if (meta != "" && index($0, ";" meta ";") == 0) next
		v = $NF
		for (f in truth)
			if (index($0, ";main;run_rounds;" f ";touch_region ")) {
				got[f] += v; gsum += v; break
			}
	}
	END {
		worst = 0
		for (f in truth) {
			t = 100 * truth[f] / tsum
			g = gsum ? 100 * got[f] / gsum : 0
			d = t > g ? t - g : g - t
			if (d > worst) worst = d
			printf "%s=%.1f%%(truth %.0f%%) ", f, g, t
		}
		printf "worst=%.2f bytes=%.0f truth=%.0f\n", worst, gsum, total
	}' "$1" "$2"
}
# within PCT of the truth: "bytes=B truth=T" in $1
close_to() {
	echo "$1" | awk -v pct="$2" '{
		for (i = 1; i <= NF; i++) { split($i, kv, "="); x[kv[1]] = kv[2] }
		exit !(x["truth"] > 0 && x["bytes"] >= x["truth"] * (1 - pct / 100) &&
		       x["bytes"] <= x["truth"] * (1 + pct / 100))
	}'
}

rec() { "$ember" record --backend "$backend" "$@"; }

# 1. default period: shares and total
rec -e faults -o "$out/faults.folded" -- "$work" "$rounds" \
	>"$out/faults.stdout" 2>"$out/faults.stderr"
rc=$?
r=$(compare "$out/faults.stdout" "$out/faults.folded")
echo "# faults $label (default period): $r; $(grep -h 'page-fault samples' "$out/faults.stderr")"
worst=$(echo "$r" | sed -n 's/.*worst=\([0-9.]*\).*/\1/p')
if [ $rc -eq 0 ] && [ -n "$worst" ] && awk -v w="$worst" 'BEGIN { exit !(w <= 5.0) }' &&
	! echo "$r" | grep -q 'bytes=0 '; then
	pass shares_within_5pp
else
	fail shares_within_5pp "rc=$rc $r $(tail -n 2 "$out/faults.stderr" | tr '\n' ' ')"
fi
if close_to "$r" 20; then
	pass total_bytes_within_20pct
else
	fail total_bytes_within_20pct "$r"
fi

# 2. --fault-period 64: eight times the samples, the same bytes
rec -e faults --fault-period 64 -o "$out/p64.folded" -- "$work" "$rounds" \
	>"$out/p64.stdout" 2>"$out/p64.stderr"
r64=$(compare "$out/p64.stdout" "$out/p64.folded")
nd=$(sed -n 's/.* \([0-9]*\) page-fault samples.*/\1/p' "$out/faults.stderr")
n64=$(sed -n 's/.* \([0-9]*\) page-fault samples.*/\1/p' "$out/p64.stderr")
echo "# faults $label (period 64): $r64; samples $n64 vs $nd at the default period"
if close_to "$r64" 20 && [ "${nd:-0}" -gt 0 ] &&
	awk -v a="${n64:-0}" -v b="$nd" 'BEGIN { exit !(a >= 6 * b && a <= 10 * b) }'; then
	pass period64_8x_samples_same_bytes
else
	fail period64_8x_samples_same_bytes "$r64; samples $n64 vs $nd"
fi

# 3. with on-CPU samples: fault bytes under [faults], CPU under [cpu]
rec -e cpu,faults -o "$out/both.folded" -- "$work" "$rounds" \
	>"$out/both.stdout" 2>"$out/both.stderr"
rb=$(compare "$out/both.stdout" "$out/both.folded" "[faults]")
wb=$(echo "$rb" | sed -n 's/.*worst=\([0-9.]*\).*/\1/p')
if grep -q '^faultwork;\[cpu\];' "$out/both.folded" && [ -n "$wb" ] &&
	awk -v w="$wb" 'BEGIN { exit !(w <= 5.0) }' && close_to "$rb" 20; then
	pass combined_with_cpu
else
	fail combined_with_cpu "$rb; [cpu] lines: $(grep -c '^faultwork;\[cpu\];' "$out/both.folded")"
fi

# 4. a bad period is refused before anything starts
msg=$("$ember" record --backend "$backend" -e faults --fault-period 0 -o /dev/null -- true 2>&1)
rc=$?
if [ $rc -ne 0 ] && echo "$msg" | grep -q 'fault-period wants'; then
	pass period0_refused
else
	fail period0_refused "rc=$rc: $msg"
fi
exit 0
