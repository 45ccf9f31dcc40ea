#!/bin/sh
# JIT code: generated functions in an anonymous executable mapping, named
# by /tmp/perf-PID.map, called from C without frame pointers (jit_work.c).
# Passes when >= 95% of the samples in the generated code have the whole
# chain main;run_jit;jit_outer;jit_inner (frame-pointer steps through the
# JIT frames, tables below), the JIT frames carry their perf-map names,
# and no sample has any other frame between main and jit_inner (nothing
# invented: a stack that cannot be followed is [cut]).
#
# usage: check-jit.sh --ember PATH --work PATH/jit-work --label L [--out DIR]
#                     [--backend B] [--warmup S]
ember=ember work=jit-work label=host out=${TMPDIR:-/tmp} backend=auto warmup=0
while [ $# -gt 0 ]; do
	case $1 in
	--ember) ember=$2; shift ;;
	--work) work=$2; shift ;;
	--label) label=$2; shift ;;
	--out) out=$2; shift ;;
	--backend) backend=$2; shift ;;
	--warmup) warmup=$2; shift ;;
	*) echo "check-jit.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
T=unwind_${label}_jit
f=$out/jit-$label.folded
# --warmup: the workload sleeps that long with its JIT code in place, so
# a slow agent (emulated VMs) binds the process with the JIT mapping
"$ember" record --backend "$backend" -F 499 -o "$f" -- "$work" 3 "$warmup" \
	>"$out/jit-$label.out" 2>"$out/jit-$label.err"
rc=$?
pid=$(sed -n 's/^jit_work: pid \([0-9]*\),.*/\1/p' "$out/jit-$label.out")
[ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"
jit=$(grep ';jit_inner ' "$f" | awk '{ s += $NF } END { print s + 0 }')
full=$(grep ';main;run_jit;jit_outer;jit_inner ' "$f" | awk '{ s += $NF } END { print s + 0 }')
cut=$(grep ';jit_inner ' "$f" | grep '\[cut\]' | awk '{ s += $NF } END { print s + 0 }')
# anything under jit_inner that is neither the whole chain nor cut
odd=$(grep ';jit_inner ' "$f" | grep -v ';main;run_jit;jit_outer;jit_inner ' |
	grep -v '\[cut\]' | awk '{ s += $NF } END { print s + 0 }')
echo "# $T: $jit samples in JIT code, $full with main;run_jit;jit_outer;jit_inner, $cut cut, $odd other"
if [ $rc -eq 0 ] && [ "$jit" -ge 100 ] && [ $((full * 100)) -ge $((jit * 95)) ] &&
	[ "$odd" -eq 0 ]; then
	echo "PASS: $T"
else
	echo "FAIL: $T: rc=$rc jit=$jit full=$full cut=$cut other=$odd; $(sort -k2 -n -r "$f" 2>/dev/null | head -n 3 | tr '\n' ' ')"
fi
