#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# What --stack-copy costs the eBPF backend per copied sample (issue 25
# item 4), beside perf --call-graph dwarf's copy of the same size. Both
# CPUs busy with bench/workloads/deep (one thread each, ~33 no-frame-
# pointer frames, a stack deeper than 16 KiB is not: the copy stops at its
# top as it would in any program):
#  - ember: selftests/bpf/py-bpf-dump -T (no tables bound: every sample
#    walks without tables, so every sample is copied) at --stack-copy 0,
#    4096, 8192, 12288 and 16384; ember_oncpu's own time (run_time_ns over
#    the samples copied), configurations interleaved per repetition. The
#    copy's cost is copyN - copy0 per copied sample. It is paid only by
#    samples that were cut or ran unbound: a bound process copies nothing.
#  - perf: `perf record -F HZ --call-graph dwarf,N` against `-g` (frame
#    pointers, no copy) on the same workload run alone for S seconds: the
#    workload's lost ops over the samples perf took (its kernel copy, and
#    its own process writing N bytes a sample to perf.data, on the same
#    two CPUs). A slowdown, not a handler time: the two are set side by
#    side, not subtracted.
#
#   bench/stack-copy-cost.sh [--hz N] [--reps N] [--seconds S] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

hz=999 reps=3 secs=4 out=""
while [ $# -gt 0 ]; do
	case $1 in
	--hz) hz=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '3,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "stack-copy-cost: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "stack-copy-cost: run as root" >&2; exit 1; }
make -s -j2 py-bpf-tests bench-workloads >/dev/null
DUMP=agent/gen/tests/py-bpf-dump
W=.cache/bench
n=$(nproc)
rows=$(mktemp)
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$rows" "$tmp"' EXIT
sizes="0 4096 8192 12288 16384"

for rep in $(seq "$reps"); do
	life=$(awk -v s="$secs" 'BEGIN { print int(s * 5) + 30 }')
	pids=()
	for i in $(seq "$n"); do
		$W/deep -t 1 -d "$life" >/dev/null &
		pids+=($!)
	done
	sleep 1
	# rotate the order per repetition
	set -- $sizes
	for k in $(seq "$rep"); do set -- "$@" "$1"; shift; done
	for c in "$@"; do
		o=$($DUMP -q -N -T -C "$c" -F "$hz" -d "$secs" \
			-p "$(IFS=,; echo "${pids[*]}")" | grep '^STATS')
		h=$(sed -E 's/.* handler_ns=([0-9]+) .*/\1/' <<<"$o")
		k=$(sed -E 's/.* kept=([0-9]+) .*/\1/' <<<"$o")
		cp_=$(sed -E 's/.* copies=([0-9]+) .*/\1/' <<<"$o")
		b=$(sed -E 's/.* copy_bytes=([0-9]+) .*/\1/' <<<"$o")
		echo "ember copy$c $h $k $cp_ $b" >>"$rows"
	done
	kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	pids=()
	if command -v perf >/dev/null; then
		for c in fp 8192 12288; do
			if [ "$c" = fp ]; then g=(-g); else g=(--call-graph "dwarf,$c"); fi
			perf record -q -F "$hz" "${g[@]}" -o "$tmp/perf.data" -- \
				$W/deep -t "$n" -d "$secs" >"$tmp/out" 2>"$tmp/err" || true
			ops=$(sed -nE 's/.*ops=([0-9]+) .*/\1/p' "$tmp/out")
			ns=$(perf report -i "$tmp/perf.data" --stats 2>/dev/null |
				awk '/SAMPLE events:/ { print $3; exit }')
			[ -n "$ns" ] || ns=$(perf script -i "$tmp/perf.data" -F ip 2>/dev/null | wc -l)
			echo "perf $c ${ops:-0} ${ns:-0} $n $secs" >>"$rows"
		done
	fi
done

report=$(python3 - "$rows" "$hz" <<'PYEOF'
import statistics, sys
eb, pf = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "ember":
        eb.setdefault(f[1], []).append(tuple(int(x) for x in f[2:6]))
    else:
        pf.setdefault(f[1], []).append((int(f[2]), int(f[3]), int(f[4]), float(f[5])))
print(f"stack copy at {sys.argv[2]} Hz, both CPUs busy with deep")
base = eb.get("copy0", [])
h0 = statistics.median(h / max(k, 1) for h, k, c, b in base) if base else None
for cfg in sorted(eb, key=lambda c: int(c[4:])):
    v = eb[cfg]
    per_sample = statistics.median(h / max(k, 1) for h, k, c, b in v)
    copies = sum(c for h, k, c, b in v)
    kept = sum(k for h, k, c, b in v)
    avg = sum(b for h, k, c, b in v) / max(copies, 1)
    extra = "" if h0 is None or cfg == "copy0" else f"  copy +{per_sample - h0:.0f} ns a copied sample"
    print(f"ember {cfg:9} {per_sample:7.0f} ns a sample kept  copied {copies}/{kept}  "
          f"{avg:.0f} B a copy{extra}")
if "fp" in pf:
    fp_rate = statistics.median(o / (t * s) for o, n, t, s in pf["fp"])
    for cfg in ("8192", "12288"):
        if cfg not in pf:
            continue
        costs = []
        for o, n, t, s in pf[cfg]:
            lost = t * s * (1 - o / (t * s) / fp_rate)
            costs.append(1e9 * lost / max(n, 1))
        print(f"perf dwarf,{cfg:5}  {statistics.median(costs):7.0f} ns of workload CPU a "
              f"sample (against -g)  samples {sum(n for o, n, t, s in pf[cfg])}")
PYEOF
)
echo "$report"
if [ -n "$out" ]; then
	mkdir -p "$out"
	echo "$report" >"$out/stack-copy-cost.txt"
	cp "$rows" "$out/stack-copy-cost.rows"
fi
