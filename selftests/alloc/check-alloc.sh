#!/bin/sh
# -e alloc against allocwork's own accounting (selftests/alloc/allocwork.c,
# or allocwork-cxx.cc: the same CHAIN lines, through operator new too):
# bytes allocated per call chain within 3 points, bytes still in use per
# chain within 5, complete chains (main -> run_rounds -> chain -> the
# malloc-family function or operator new as the leaf, the sampler's own
# frames trimmed),
# and the total within 10% of what was allocated. Runs on the host (eBPF)
# and in the VMs (module); POSIX sh, for the guests' busybox. Sampling
# noise: the smallest chain's share has a standard deviation of about
# 0.7 points at --rate 8192 and --scale 0.5 (1.4 at 32768: a 6.1 guest once
# read 3.5 points off), so the callers sample densely.
#
# usage: check-alloc.sh --ember PATH --work PATH --backend kmod|bpf
#                       [--label L] [--rate BYTES] [--warmup S]
#                       [--scale S] [--out DIR] [--lib PATH]
#                       [--preload LIB --served jemalloc|tcmalloc]
# --preload: ember runs with LD_PRELOAD=LIB, so the command preloads LIB
# after ember's sampler, which must wrap LIB's malloc: --served names the
# allocator allocwork must find serving its blocks.
ME=check-alloc.sh E=ember W=allocwork B=bpf L=host RATE=32768 WARMUP=1
SCALE=1 OUT=/tmp/alloc LIB= PRELOAD= SERVED=
. "$(dirname "$0")/alloc-common.sh"
alloc_args "$@"
mkdir -p "$OUT"
T=alloc_${L}
pass() { echo "PASS: ${T}_$1"; }
fail() { echo "FAIL: ${T}_$1: $2"; }

LD_PRELOAD=$PRELOAD "$E" record --backend "$B" -e alloc --alloc-rate "$RATE" \
	${LIB:+--alloc-lib "$LIB"} -o "$OUT/alloc.folded" -- "$W" "$WARMUP" "$SCALE" \
	>"$OUT/alloc.stdout" 2>"$OUT/alloc.stderr"
rc=$?
# the profile's root: the workload's comm
root=$(basename "$W" | cut -c1-15)
if [ $rc -ne 0 ] || ! grep -q '^CHAIN chain_' "$OUT/alloc.stdout" ||
	! grep -q 'allocation samples' "$OUT/alloc.stderr"; then
	fail record "rc=$rc: $(tail -n 3 "$OUT/alloc.stderr" | tr '\n' ' ')"
	exit 0
fi
pass record

# the allocator preloaded after the sampler served the blocks (by its
# own count of bytes in use, at least those allocwork kept)
if [ -n "$SERVED" ]; then
	kept=$(awk '/^CHAIN / { s += $4 } END { print s + 0 }' "$OUT/alloc.stdout")
	by=$(awk -v a="$SERVED" '$1 == "SERVED" && $2 == a { print $3 }' "$OUT/alloc.stdout")
	if [ -n "$by" ] && [ "$by" -ge "$kept" ]; then
		pass "served_by_$SERVED"
	else
		fail "served_by_$SERVED" "$kept bytes kept, $(grep '^SERVED' "$OUT/alloc.stdout")"
	fi
fi

a=$(kind_shares alloc "$OUT/alloc.stdout" "$OUT/alloc.folded")
u=$(kind_shares inuse "$OUT/alloc.stdout" "$OUT/alloc.folded")
echo "# ${T}: allocated (truth/profile): $a"
echo "# ${T}: in use (truth/profile): $u"
case $a in *"bytes=0 "*) fail alloc_shares_3pp "no allocation of the chains: $a" ;;
*) within "$a" 3 && pass alloc_shares_3pp || fail alloc_shares_3pp "$a" ;; esac
case $u in *"bytes=0 "*) fail inuse_shares_5pp "nothing in use: $u" ;;
*) within "$u" 5 && pass inuse_shares_5pp || fail inuse_shares_5pp "$u" ;; esac

# complete chains with the allocator's entry as the leaf: one of the
# workload's chains (its CHAIN lines), under main and run_rounds
chains=$(awk '/^CHAIN / { printf "%s%s", n++ ? "|" : "", $2 }' "$OUT/alloc.stdout")
awk -v root="$root" -v chains="$chains" '
BEGIN { want = ";main;run_rounds;(" chains ");(malloc|calloc|_Znwm|_Znam) [0-9]+$" }
index($0, root ";[alloc];") == 1 {
	all += $NF
	if ($0 ~ want)
		ok += $NF
}
END { printf "%d %d\n", ok, all }' "$OUT/alloc.folded" >"$OUT/complete"
read -r ok all <"$OUT/complete"
if [ "${all:-0}" -gt 0 ] && [ $((ok * 100)) -ge $((all * 95)) ]; then
	pass complete_chains_95
else
	fail complete_chains_95 "$ok of $all allocated bytes under main;run_rounds;($chains);malloc|calloc|_Znwm|_Znam; top lines: $(grep -F "$root;[alloc];" "$OUT/alloc.folded" | sort -t' ' -k2 -nr | head -n 3 | tr '\n' '|' | cut -c1-400)"
fi

# the total stands for what was allocated (Poisson sampling is unbiased)
tot=$(awk '/^CHAIN / { s += $3 } END { print s + 0 }' "$OUT/alloc.stdout")
got=$(awk -v root="$root" 'index($0, root ";[alloc];") == 1 { s += $NF } END { print s + 0 }' "$OUT/alloc.folded")
if awk -v t="$tot" -v g="$got" 'BEGIN { exit !(t > 0 && g >= 0.9 * t && g <= 1.1 * t) }'; then
	pass total_bytes_10pct
else
	fail total_bytes_10pct "allocated $tot bytes, the profile says $got"
fi
exit 0
