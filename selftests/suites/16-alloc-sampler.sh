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
	--out "$art"

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

# a running process without the sampler: said, not a silent empty profile
sleep 3 &
sl=$!
agent/ember record --backend bpf -e alloc -p $sl -d 0.3 -o "$art/nopre.folded" 2>"$art/nopre.err"
kill $sl 2>/dev/null
wait $sl 2>/dev/null
if grep -q "process $sl was not started with LD_PRELOAD=.*libember-alloc.so" "$art/nopre.err"; then
	t_pass alloc_unpreloaded_process_said
else
	t_fail alloc_unpreloaded_process_said "$(tr '\n' '|' <"$art/nopre.err")"
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
