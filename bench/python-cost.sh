#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What CPython frames cost the eBPF backend per on-CPU sample (issue 24,
# "Cost": 40 Python frames should add no more to a sample than a 33-frame
# native CFI walk does). Both CPUs busy, one workload process per CPU, all
# filtered in and bound (unwind tables by the agent's unwind service,
# Python described by selftests/bpf/check-python.py), the kernel's
# run_time_ns / run_cnt of ember_oncpu (selftests/bpf/py-bpf-dump's
# ns_per_run), configurations interleaved per repetition:
#   py40      py-work.py deep 40 (40 distinct functions: 44 Python frames, ~10 native), Python on
#   py40-off  the same processes, Python not bound (native CFI walk only)
#   deep      bench/workloads/deep (~33 no-frame-pointer native frames)
#   spin      bench/workloads/spin (a shallow stack)
# Python's cost is py40 - py40-off, to set against deep - spin.
# --floor adds two measurement builds of the same tree (HEAD plus the
# uncommitted diff of tracked files, built in a worktree under .cache/bench;
# bpf/python.bpf.h, EMBER_PY_FLOOR), run on the same processes:
#   py40-tstate  the chain cut after the thread state's newest frame
#   py40-nocode  the whole chain, no code-object read (check value 0): what
#                the walk would cost with a free cache of check values
#
#   bench/python-cost.sh [--hz N] [--reps N] [--seconds S] [--out DIR] [--floor]
# Needs root and Debian 12's /usr/bin/python3.11 (x86_64).
set -euo pipefail
cd "$(dirname "$0")/.."

hz=99 reps=3 secs=6 out="" floor=0
while [ $# -gt 0 ]; do
	case $1 in
	--hz) hz=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--floor) floor=1; shift ;;
	-h | --help) sed -n '3,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "python-cost: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "python-cost: run as root" >&2; exit 1; }
make -s -j2 py-bpf-tests bench-workloads >/dev/null
PY=/usr/bin/python3.11
DUMP=agent/gen/tests/py-bpf-dump
W=.cache/bench
n=$(nproc)
rows=$(mktemp)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -f "$rows"' EXIT

floor_build() {	# $W/py-bpf-dump-floorN for N = 1, 2; 1 when it cannot
	local tree=$W/floor-tree n
	mkdir -p "$W"
	git worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"
	git worktree prune 2>/dev/null || true
	git worktree add -q --detach "$tree" HEAD || return 1
	# the working tree's changes (rows is still empty, and is emptied again)
	git diff HEAD >"$rows" || return 1
	if [ -s "$rows" ]; then git -C "$tree" apply "$rows" || return 1; fi
	: >"$rows"
	for n in 1 2; do
		rm -f "$tree/bpf/.output/ember.bpf.o"
		make -s -C "$tree" -j2 py-bpf-tests \
			BPF_EXTRA_CFLAGS=-DEMBER_PY_FLOOR=$n >/dev/null || return 1
		cp "$tree/agent/gen/tests/py-bpf-dump" "$W/py-bpf-dump-floor$n" ||
			return 1
	done
	git worktree remove --force "$tree"
}
# a tree that is no git checkout, a build that fails: the rest is measured
if [ "$floor" = 1 ] && ! floor_build; then
	echo "python-cost: the --floor builds failed (needs a git checkout); measuring without them" >&2
	floor=0
	: >"$rows"
fi

start() {	# workload: one process per CPU into pids[]
	local i life
	life=$(awk -v s="$secs" 'BEGIN { print int(s) + 30 }')	# -d may be 0.5
	pids=()
	for i in $(seq "$n"); do
		case $1 in
		py) echo | $PY selftests/bpf/py-work.py deep 40 $life >/dev/null & ;;
		deep) $W/deep -t 1 -d $life >/dev/null & ;;
		spin) $W/spin -t 1 -d $life >/dev/null & ;;
		esac
		pids+=($!)
	done
	sleep 1
}
stop() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; pids=(); }
cost() {	# label dump dump-args...: ns per run, samples, Python frames per sample
	local label=$1 dump=$2 o
	shift 2
	o=$($dump -q -F "$hz" -d "$secs" -p "$(IFS=,; echo "${pids[*]}")" "$@" | grep '^STATS')
	echo "$label $(sed -E 's/.* ns_per_run=([0-9]+) .*/\1/' <<<"$o") $(sed -E 's/.*kept=([0-9]+) .*py_slots=([0-9]+) .*/\1 \2/' <<<"$o")" >>"$rows"
}

for rep in $(seq "$reps"); do
	start py
	hex=$(python3 selftests/bpf/check-python.py proc "${pids[0]}")
	cost py40 $DUMP -Y "$hex"
	if [ "$floor" = 1 ]; then
		cost py40-tstate $W/py-bpf-dump-floor1 -Y "$hex"
		cost py40-nocode $W/py-bpf-dump-floor2 -Y "$hex"
	fi
	cost py40-off $DUMP -N
	stop
	start deep
	cost deep $DUMP -N
	stop
	start spin
	cost spin $DUMP -N
	stop
done

report=$(python3 - "$rows" "$hz" <<'PYEOF'
import statistics, sys
rows = {}
frames = {}
for line in open(sys.argv[1]):
    label, ns, kept, py = line.split()
    rows.setdefault(label, []).append(int(ns))
    frames.setdefault(label, []).append(int(py) / max(int(kept), 1))
med = {k: statistics.median(v) for k, v in rows.items()}
print(f"ember_oncpu at {sys.argv[2]} Hz, both CPUs busy (ns per run, median [range])")
for k, v in rows.items():
    print(f"{k:9} {med[k]:7.0f}  [{min(v)}..{max(v)}] n={len(v)}  "
          f"Python frames/sample {statistics.median(frames[k]):.1f}")
if all(k in med for k in ("py40", "py40-off", "deep", "spin")):
    py, native = med["py40"] - med["py40-off"], med["deep"] - med["spin"]
    print(f"Python walk: +{py:.0f} ns a sample; 33-frame native CFI walk: "
          f"+{native:.0f} ns ({'within' if py <= native else 'OVER'} the bound)")
    for k, what in (("py40-tstate", "finding the chain (thread state)"),
                    ("py40-nocode", "the chain without code-object reads")):
        if k in med:
            print(f"  floor, {what}: +{med[k] - med['py40-off']:.0f} ns")
PYEOF
)
echo "$report"
if [ -n "$out" ]; then
	mkdir -p "$out"
	echo "$report" >"$out/python-cost.txt"
	cp "$rows" "$out/python-cost.rows"
fi
