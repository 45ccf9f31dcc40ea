#!/usr/bin/env bash
# The in-process allocation sampler (preload/ember_alloc.c) on its own:
# unbiased weights per size class, in-use bytes after frees, silence when
# detached, threads and fork (selftests/alloc/alloc_sampler_test.c), and
# that a real program runs unchanged with it preloaded.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

if ! out=$(make -s -j2 alloc-sampler 2>&1); then
	t_fail alloc_sampler_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
	exit 1
fi
t_pass alloc_sampler_build
LD_PRELOAD=$PWD/preload/libember-alloc.so EMBER_ALLOC_RATE=16384 \
	agent/gen/tests/alloc-sampler-test
# Real programs, preloaded, attached or not: same output as without.
want=$(printf 'b\na\nc\n' | sort | sha256sum)
got=$(printf 'b\na\nc\n' | LD_PRELOAD=$PWD/preload/libember-alloc.so sort | sha256sum)
t_check alloc_sampler_sort_unchanged test "$want" = "$got"
t_check alloc_sampler_python_runs env LD_PRELOAD=$PWD/preload/libember-alloc.so \
	EMBER_ALLOC_RATE=1024 python3 -c 'import json; json.dumps([list(range(1000))] * 100)'

# -e alloc end to end through the eBPF backend on this host: the sampler
# preloaded into a command ember starts, uprobes on its probe points.
if ! out=$(make -s -j2 agent/ember alloc-work 2>&1); then
	t_fail alloc_e2e_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	t_skip alloc_e2e "needs root (eBPF uprobes)"
	exit 0
fi
art=${EMBER_TEST_ARTIFACTS:-selftests/artifacts}/alloc
mkdir -p "$art"
# allocwork is built without frame pointers: the chains cross libc
sh selftests/alloc/check-alloc.sh --ember agent/ember \
	--work agent/gen/tests/allocwork --backend bpf --label bpf_host \
	--rate 16384 --out "$art"

# The probes come and go with the recording: the sampler's semaphore (the
# kernel raises it while a uprobe uses it) is 0 before, nonzero during,
# and 0 after ember stops, and after ember is killed with SIGKILL.
lib=$PWD/preload/libember-alloc.so
LD_PRELOAD=$lib agent/gen/tests/semwatch 8 >"$art/sem.out" &
sw=$!
sleep 0.5
agent/ember record --backend bpf -e alloc -p $sw -d 1 -o "$art/sem.folded" 2>"$art/sem.err"
sleep 0.3
agent/ember record --backend bpf -e alloc -p $sw -o "$art/sem2.folded" 2>"$art/sem2.err" &
rec=$!
for _ in $(seq 50); do
	[ "$(tail -n 1 "$art/sem.out")" != "SEM 0" ] && break
	sleep 0.1
done
sleep 0.3
kill -KILL $rec
wait $rec 2>/dev/null
sleep 0.5
kill $sw 2>/dev/null
wait $sw 2>/dev/null
seq=$(awk '{ print $2 }' "$art/sem.out" | tr '\n' ' ')
# 0, raised, 0 (stop), raised, 0 (SIGKILL); "2 1 0": the two probes leave
if awk '{ s = s ($2 > 0 ? "+" : "0") } END { gsub(/\+\+*/, "+", s); exit !(s == "0+0+0") }' "$art/sem.out"; then
	t_pass alloc_probes_removed_on_stop_and_kill
else
	t_fail alloc_probes_removed_on_stop_and_kill "semaphore went: $seq (want 0, raised, 0, raised, 0)"
fi

# A running process without the sampler (-p): uprobes on its allocator's
# entry points, sampled by bytes in the kernel, the cost said up front;
# nothing stays attached after the end or SIGKILL. The same check as the
# VMs run through the module.
selftests/alloc/check-alloc-pid.sh --ember agent/ember --work agent/gen/tests/allocwork \
	--backend bpf --label host_bpf --allocator 'libc\.so\.6' --out "$art/pid"
# Other allocators (scripts/install-deps.sh installs Debian's): with -p
# the probes land on the preloaded library's malloc family, not libc's;
# with -- CMD the sampler, first in LD_PRELOAD, hands every block to the
# allocator preloaded after it (allocwork's SERVED line says who served
# them) and the shares and in-use still match.
for a in jemalloc:libjemalloc.so.2 tcmalloc:libtcmalloc_minimal.so.4; do
	name=${a%%:*} file=/usr/lib/x86_64-linux-gnu/${a#*:}
	if [ ! -e "$file" ]; then
		t_fail "alloc_$name" "$file missing: run scripts/install-deps.sh"
		continue
	fi
	# the file the probes must name: the library's real name in maps
	re=$(basename "$(readlink -f "$file")" | sed 's/\./\\./g')
	selftests/alloc/check-alloc-pid.sh --ember agent/ember \
		--work agent/gen/tests/allocwork --backend bpf \
		--label "host_bpf_$name" --allocator "$re" --preload "$file" \
		--out "$art/pid-$name"
	sh selftests/alloc/check-alloc.sh --ember agent/ember \
		--work agent/gen/tests/allocwork --backend bpf \
		--label "bpf_host_$name" --rate 16384 --preload "$file" \
		--served "$name" --out "$art/$name"
	# C++: their operator new is not their malloc, so the sampler
	# defines new and delete too and forwards them to the library's
	# (-- CMD); -p probes the library's (jemalloc's new[] jumps to new:
	# probed once)
	sh selftests/alloc/check-alloc.sh --ember agent/ember \
		--work agent/gen/tests/allocwork-cxx --backend bpf \
		--label "bpf_host_${name}_cxx" --rate 8192 --preload "$file" \
		--out "$art/$name-cxx"
	selftests/alloc/check-alloc-pid.sh --ember agent/ember \
		--work agent/gen/tests/allocwork-cxx --backend bpf \
		--label "host_bpf_${name}_cxx" --allocator "$re" --preload "$file" \
		--out "$art/pid-$name-cxx"
done
# ... while with glibc, libstdc++'s new calls malloc (and new[] calls
# new): counted once, by the sampler (the total within 10%) and by -p
sh selftests/alloc/check-alloc.sh --ember agent/ember \
	--work agent/gen/tests/allocwork-cxx --backend bpf \
	--label bpf_host_cxx --rate 8192 --out "$art/cxx"
selftests/alloc/check-alloc-pid.sh --ember agent/ember \
	--work agent/gen/tests/allocwork-cxx --backend bpf \
	--label host_bpf_cxx --allocator 'libc\.so\.6' --out "$art/pid-cxx"

# --alloc-no-inuse: the entry points alone (no return or free probes),
# said when it starts; allocations profiled, nothing in use
agent/gen/tests/allocwork 1.5 0.5 >"$art/noinuse.stdout" &
aw=$!
sleep 0.2
agent/ember record --backend bpf -e alloc --alloc-no-inuse --alloc-rate 8192 \
	-p $aw -o "$art/noinuse.folded" 2>"$art/noinuse.err"
wait $aw 2>/dev/null
if grep -q "trap on every call (.*in-use bytes not followed (--alloc-no-inuse))" "$art/noinuse.err" &&
	grep -q '^allocwork;\[alloc\];' "$art/noinuse.folded" &&
	! grep -q '\[inuse\]' "$art/noinuse.folded"; then
	t_pass alloc_pid_no_inuse
else
	t_fail alloc_pid_no_inuse "$(tr '\n' '|' <"$art/noinuse.err" | cut -c1-300); $(grep -c '\[inuse\]' "$art/noinuse.folded") in-use lines"
fi

# --cgroup: the cgroup's processes probed one by one (joining and exec'ing
# ones too), one outside it with the same libc untouched
selftests/alloc/check-alloc-cgroup.sh --ember agent/ember \
	--work agent/gen/tests/allocwork --backend bpf --label host_bpf \
	--out "$art/cgroup"

# Bad input for -p, each with a message saying what was probed or why
# nothing was. run_pid NAME PROGRAM [ENV...]: allocwork-like PROGRAM
# probed with -p; NAME.stdout, NAME.folded, NAME.err in $art.
run_pid() {
	name=$1 prog=$2
	shift 2
	env "$@" "$prog" 1.5 0.5 >"$art/$name.stdout" &
	aw=$!
	sleep 0.2
	agent/ember record --backend bpf -e alloc --alloc-rate 8192 -p $aw \
		-o "$art/$name.folded" 2>"$art/$name.err"
	wait $aw 2>/dev/null
}
# the profile's allocated bytes within 10% of what the program allocated
# (both left in $tot and $got for the failure message)
total_10pct() {
	tot=$(awk '/^CHAIN / { s += $3 } END { print s + 0 }' "$art/$1.stdout")
	got=$(awk '/\[alloc\]/ { s += $NF } END { print s + 0 }' "$art/$1.folded" 2>/dev/null)
	awk -v t="$tot" -v g="${got:-0}" 'BEGIN { exit !(t > 0 && g >= 0.9 * t && g <= 1.1 * t) }'
}
# a static binary: no libc mapped, its own malloc is probed (found in
# its symbol table); the bytes are right even though its frames are not
# named in -p mode (a symbolizer gap for static non-PIE executables)
run_pid static agent/gen/tests/allocwork-static
if grep -q "uprobes on .*allocwork-static's malloc family" "$art/static.err" &&
	total_10pct static; then
	t_pass alloc_static_binary_probed
else
	t_fail alloc_static_binary_probed "allocated $tot, profile $got: $(tr '\n' '|' <"$art/static.err" | cut -c1-300)"
fi
# the messages name files as /proc/PID/maps does: absolute, resolved
abs=$(cd "$art" && pwd -P)
# a libc without a symbol table (stripped: .dynsym is all it keeps)
mkdir -p "$abs/stripped-libc"
strip -s -o "$abs/stripped-libc/libc.so.6" /usr/lib/x86_64-linux-gnu/libc.so.6
run_pid stripped-libc agent/gen/tests/allocwork LD_LIBRARY_PATH="$abs/stripped-libc"
if grep -q "uprobes on $abs/stripped-libc/libc\.so\.6's malloc family" "$art/stripped-libc.err" &&
	total_10pct stripped-libc; then
	t_pass alloc_stripped_libc_probed
else
	t_fail alloc_stripped_libc_probed "allocated $tot, profile $got: $(tr '\n' '|' <"$art/stripped-libc.err" | cut -c1-300)"
fi
# a stripped static binary: no malloc symbol anywhere, nothing probed,
# the file read named
strip -s -o "$abs/allocwork-static-stripped" agent/gen/tests/allocwork-static
run_pid static-stripped "$abs/allocwork-static-stripped"
if grep -q "allocator cannot be probed: .*no malloc symbol in $abs/allocwork-static-stripped); nothing probed" "$art/static-stripped.err" &&
	! grep -q '\[alloc\]' "$art/static-stripped.folded" 2>/dev/null; then
	t_pass alloc_stripped_static_said
else
	t_fail alloc_stripped_static_said "$(tr '\n' '|' <"$art/static-stripped.err" | cut -c1-300)"
fi
# its own allocator in the executable: the executable's malloc is probed,
# not libc's, which it maps too
run_pid own agent/gen/tests/allocwork-own
if grep -q "uprobes on $(pwd -P)/agent/gen/tests/allocwork-own's malloc family" "$art/own.err" &&
	total_10pct own; then
	t_pass alloc_own_allocator_probed
else
	t_fail alloc_own_allocator_probed "allocated $tot, profile $got: $(tr '\n' '|' <"$art/own.err" | cut -c1-300)"
fi

# no sampler library where ember looks: a clear message, exit 2
EMBER_ALLOC_LIB=/nonexistent/libember-alloc.so agent/ember record -e alloc \
	-o "$art/nolib.folded" -- true 2>"$art/nolib.err"
rc=$?
if [ $rc -eq 2 ] && grep -q "EMBER_ALLOC_LIB" "$art/nolib.err"; then
	t_pass alloc_missing_library_clear
else
	t_fail alloc_missing_library_clear "rc=$rc $(tr '\n' '|' <"$art/nolib.err")"
fi
