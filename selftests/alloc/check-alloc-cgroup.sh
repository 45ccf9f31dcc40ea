#!/bin/sh
# -e alloc --cgroup: the allocators of a cgroup's processes that run
# without the sampler are probed per process, including one that joins
# the cgroup after ember started and one that execs allocwork later (its
# probes follow it with eBPF, the module probes its new program: counted
# once, not twice). Checked against allocwork's
# own accounting summed over the three: shares within 3 points, total
# within 10%, in-use shares within 5 points (blocks followed to their
# free), each process named with the file probed. A process outside
# the cgroup, mapping the same libc, is never trapped (its libc text reads
# as the file while ember runs) and is not in the profile. With the
# module, a cgroup of 17 processes: 15 probed (16 probe sets per session,
# the sampler's first), the message names the first one left out.
#
# usage: check-alloc-cgroup.sh --ember PATH --work PATH --backend bpf|kmod
#                              [--label L] [--rate BYTES] [--scale S]
#                              [--lib PATH] [--out DIR]
ME=check-alloc-cgroup.sh E=ember W=allocwork B=bpf L=host RATE=8192
SCALE=0.3 OUT=/tmp/alloccg LIB=
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
sh_libc=$(command -v bash || echo sh)
out_w=$OUT/allocwork-outside	# named apart in the profile
cp "$W" "$out_w"
rm -f "$OUT"/cg-*.stdout

# allocwork waits 2.5 s before allocating: every process is probed first
"$W" 2.5 "$SCALE" >"$OUT/cg-1.stdout" &
p1=$!
echo $p1 >"$cg/cgroup.procs"
# a shell that maps libc (busybox's does not): probed before its exec
$sh_libc -c "sleep 1; exec '$W' 1.5 '$SCALE'" >"$OUT/cg-2.stdout" &
p2=$!
echo $p2 >"$cg/cgroup.procs"
"$W" 2.5 "$SCALE" >"$OUT/cg-3.stdout" &
p3=$!
"$out_w" 2.5 "$SCALE" >"$OUT/outside.stdout" &
po=$!
sleep 0.2
"$E" record --backend "$B" -e alloc --alloc-rate "$RATE" --cgroup "$cg" \
	${LIB:+--alloc-lib "$LIB"} -o "$OUT/cg.folded" 2>"$OUT/cg.err" &
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
if u=$(inuse_ok "$OUT/cg.truth" "$OUT/cg.folded") &&
	[ "$(grep -c "in-use bytes followed" "$OUT/cg.err")" -ge 3 ]; then
	pass inuse_shares_5pp
else
	fail inuse_shares_5pp "$u; $(grep -o 'trap on every call ([^)]*)' "$OUT/cg.err" | sort -u | tr '\n' '|')"
fi
echo "# ${T}: in use (truth/profile): $u"
if [ "$outside" = same ] && grep -q '^CHAIN' "$OUT/outside.stdout" &&
	! grep -q '^allocwork-outsi' "$OUT/cg.folded"; then
	pass outside_untouched
else
	fail outside_untouched "libc text of the process outside: $outside; its lines in the profile: $(grep -c '^allocwork-outsi' "$OUT/cg.folded")"
fi
[ "$B" = kmod ] || exit 0

cg=$root/ember-alloc-cap-$$
mkdir "$cg"
sleepers= n=0	# allocwork: busybox's sleep maps no libc
while [ $n -lt 17 ]; do
	"$W" 60 "$SCALE" >/dev/null &	# waits before allocating; killed then
	echo $! >"$cg/cgroup.procs"
	sleepers="$sleepers $!" n=$((n + 1))
done
"$E" record --backend "$B" -e alloc --cgroup "$cg" ${LIB:+--alloc-lib "$LIB"} \
	-d 1 -o "$OUT/cap.folded" 2>"$OUT/cap.err"
rc=$?
kill $sleepers 2>/dev/null
wait $sleepers 2>/dev/null
rmdir "$cg" 2>/dev/null
probed=$(grep -c "of cgroup $cg runs without ember's sampler: uprobes on" "$OUT/cap.err")
capped=$(grep -c "takes at most 16 allocator probe sets per session .*: process [0-9]* and later ones are not probed" "$OUT/cap.err")
if [ $rc -eq 0 ] && [ "$probed" -eq 15 ] && [ "$capped" -eq 1 ]; then
	pass module_cap_said
else
	fail module_cap_said "rc=$rc, $probed of 17 processes probed (15 expected), cap said $capped times: $(tr '\n' '|' <"$OUT/cap.err" | cut -c1-400)"
fi
exit 0
