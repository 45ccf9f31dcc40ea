#!/bin/sh
# JIT code: generated functions in an anonymous executable mapping, named
# by /tmp/perf-PID.map, called from C without frame pointers (jit_work.c).
# Passes when >= 95% of the samples in the generated code have the whole
# chain main;run_jit;jit_outer;jit_inner (frame-pointer steps through the
# JIT frames, tables below), the JIT frames carry their perf-map names,
# and no sample has any other frame between main and jit_inner (nothing
# invented: a stack that cannot be followed is [cut]).
# --tiny: the same for jit_loop -> jit_tiny, a function that is all
# prologue and epilogue: most of its samples stand at push %rbp,
# mov %rsp,%rbp or ret, where rbp is the caller's frame, and its caller
# must still be there (the unwinder reads the instruction at the PC).
#
# usage: check-jit.sh --ember PATH --work PATH/jit-work --label L [--out DIR]
#                     [--backend B] [--warmup S] [--tiny]
ember=ember work=jit-work label=host out=${TMPDIR:-/tmp} backend=auto warmup=0
mode= outer=jit_outer inner=jit_inner secs=3 min=100
while [ $# -gt 0 ]; do
	case $1 in
	--ember) ember=$2; shift ;;
	--work) work=$2; shift ;;
	--label) label=$2; shift ;;
	--out) out=$2; shift ;;
	--backend) backend=$2; shift ;;
	--warmup) warmup=$2; shift ;;
	# fewer samples land in jit_tiny under qemu TCG, which takes the
	# timer interrupt between translated blocks (65 in 3 s on 6.12,
	# against ~1,400 on the host): a longer run and a lower floor, which
	# still tells the fix from the bug (before it, every sample there
	# lost jit_loop)
	--tiny) mode=tiny outer=jit_loop inner=jit_tiny secs=5 min=30 ;;
	*) echo "check-jit.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
T=unwind_${label}_jit${mode:+_prologue}
f=$out/jit-$label$mode.folded
# --warmup: the workload sleeps that long with its JIT code in place, so
# a slow agent (emulated VMs) binds the process with the JIT mapping
"$ember" record --backend "$backend" -F 499 -o "$f" -- "$work" "$secs" "$warmup" $mode \
	>"$out/jit-$label$mode.out" 2>"$out/jit-$label$mode.err"
rc=$?
pid=$(sed -n 's/^jit_work: pid \([0-9]*\),.*/\1/p' "$out/jit-$label$mode.out")
[ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"
chain="main;run_jit;$outer;$inner"
jit=$(grep ";$inner " "$f" | awk '{ s += $NF } END { print s + 0 }')
full=$(grep ";$chain " "$f" | awk '{ s += $NF } END { print s + 0 }')
cut=$(grep ";$inner " "$f" | grep '\[cut\]' | awk '{ s += $NF } END { print s + 0 }')
# anything under the inner function that is neither the whole chain nor cut
odd=$(grep ";$inner " "$f" | grep -v ";$chain " |
	grep -v '\[cut\]' | awk '{ s += $NF } END { print s + 0 }')
echo "# $T: $jit samples in $inner, $full with $chain, $cut cut, $odd other"
if [ $rc -eq 0 ] && [ "$jit" -ge "$min" ] && [ $((full * 100)) -ge $((jit * 95)) ] &&
	[ "$odd" -eq 0 ]; then
	echo "PASS: $T"
else
	echo "FAIL: $T: rc=$rc jit=$jit full=$full cut=$cut other=$odd; $(sort -k2 -n -r "$f" 2>/dev/null | head -n 3 | tr '\n' ' ')"
fi
