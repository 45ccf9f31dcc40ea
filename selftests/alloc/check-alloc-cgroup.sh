#!/bin/sh
# -e alloc --cgroup: the allocators of a cgroup's processes that run
# without the sampler are probed per process, including one that joins
# the cgroup after ember started and one that execs allocwork later (its
# probes follow it: counted once, not twice). Checked against allocwork's
# own accounting summed over the three: shares within 3 points, total
# within 10%, each process named with the file probed. A process outside
# the cgroup, mapping the same libc, is never trapped (its libc text reads
# as the file while ember runs) and is not in the profile.
#
# usage: check-alloc-cgroup.sh --ember PATH --work PATH --backend bpf
#                              [--label L] [--rate BYTES] [--scale S]
#                              [--out DIR]
ME=check-alloc-cgroup.sh E=ember W=allocwork B=bpf L=host RATE=8192
SCALE=0.3 OUT=/tmp/alloccg
. "$(dirname "$0")/alloc-common.sh"
alloc_args "$@"
mkdir -p "$OUT"
T=alloc_cgroup_${L}
pass() { echo "PASS: ${T}_$1"; }
fail() { echo "FAIL: ${T}_$1: $2"; }

root=/sys/fs/cgroup
[ -e $root/cgroup.procs ] || root=/sys/fs/cgroup/unified
cg=$root/ember-alloc-test-$$
if ! mkdir "$cg" 2>/dev/null; then
	fail setup "cannot create a cgroup v2 directory under $root"
	exit 0
fi
out_w=$OUT/allocwork-outside	# named apart in the profile
cp "$W" "$out_w"
rm -f "$OUT"/cg-*.stdout

# allocwork waits 2.5 s before allocating: every process is probed first
"$W" 2.5 "$SCALE" >"$OUT/cg-1.stdout" &
p1=$!
echo $p1 >"$cg/cgroup.procs"
sh -c "sleep 1; exec '$W' 1.5 '$SCALE'" >"$OUT/cg-2.stdout" &
p2=$!
echo $p2 >"$cg/cgroup.procs"
"$W" 2.5 "$SCALE" >"$OUT/cg-3.stdout" &
p3=$!
"$out_w" 2.5 "$SCALE" >"$OUT/outside.stdout" &
po=$!
sleep 0.2
"$E" record --backend "$B" -e alloc --alloc-rate "$RATE" --cgroup "$cg" \
	-o "$OUT/cg.folded" 2>"$OUT/cg.err" &
ep=$!
sleep 0.7
echo $p3 >"$cg/cgroup.procs"	# joins while ember runs
sleep 1
outside=$(text_vs_file $po "$(awk '$6 ~ /\/libc\.so\.6$/ { print $6; exit }' /proc/$po/maps)")
wait $p1 $p2 $p3 $po 2>/dev/null
kill -INT $ep 2>/dev/null
wait $ep
rc=$?
rmdir "$cg" 2>/dev/null

named=0
for p in $p1 $p2 $p3; do
	grep -q "process $p of cgroup $cg runs without ember's sampler: uprobes on .*libc\.so\.6's malloc family" "$OUT/cg.err" &&
		named=$((named + 1))
done
cat "$OUT"/cg-*.stdout >"$OUT/cg.truth"
shares=$(alloc_shares "$OUT/cg.truth" "$OUT/cg.folded")
echo "# ${T}: allocated (truth/profile): $shares"
if [ $rc -eq 0 ] && [ $named -eq 3 ] && shares_ok "$shares"; then
	pass shares_3pp_total_10pct
else
	fail shares_3pp_total_10pct "rc=$rc, $named of 3 processes named; $shares; $(tr '\n' '|' <"$OUT/cg.err" | cut -c1-400)"
fi
if [ "$outside" = same ] && grep -q '^CHAIN' "$OUT/outside.stdout" &&
	! grep -q '^allocwork-outsi' "$OUT/cg.folded"; then
	pass outside_untouched
else
	fail outside_untouched "libc text of the process outside: $outside; its lines in the profile: $(grep -c '^allocwork-outsi' "$OUT/cg.folded")"
fi
exit 0
