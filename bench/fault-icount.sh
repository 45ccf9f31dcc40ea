#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The page-fault hooks' cost in guest instructions (issue 16): faultwork
# --bench in a test-kernel VM whose clocks advance with the instructions
# the guest executes (selftests/vm/run-vm.sh with EMBER_VM_ICOUNT), so its
# own CPU time per fault is an instruction count that host load does not
# disturb. Configurations (bench/vm/fault-icount-guest.sh): no profiler;
# ember record -e faults on the module (tracepoints, and fault_perf=1's
# perf software event); on eBPF (perf event, and EMBER_FAULTS_HOOK=tp).
#
#   bench/fault-icount.sh [--kernels "6.1 6.12 5.10"] [--reps N]
#       [--seconds S] [--shift N] [--period N] [--out DIR]
#
# Prints a table per kernel: the median time per fault (at --shift 0 one
# guest ns is one instruction), the range over the repetitions, and the
# slowdown of the medians against no profiler. --out DIR keeps the table,
# the command and the raw rows. One vCPU: round-robin TCG has one clock
# for all vCPUs, so a busy agent on a second vCPU would count in
# faultwork's time.
#
# Caveat, printed with the table: instruction counts model no cache or TLB
# misses, branch mispredictions or Retpoline/SRSO return-thunk costs,
# which dominate the hooks' cost on real hardware (docs/NOTES.md).
set -euo pipefail
cd "$(dirname "$0")/.."

kernels="6.1" reps=5 secs=1 ishift=0 period="" out=""
while [ $# -gt 0 ]; do
	case $1 in
	--kernels) kernels=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--seconds) secs=$2; shift 2 ;;
	--shift) ishift=$2; shift 2 ;;
	--period) period=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '3,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "fault-icount: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
cmdline="bench/fault-icount.sh --kernels \"$kernels\" --reps $reps --seconds $secs --shift $ishift${period:+ --period $period}"

make -s -j2 agent-e2e >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/fault-icount"
cp agent/ember agent/gen/tests/faultwork bench/vm/fault-icount-guest.sh "$work/fault-icount/"
[ -z "$out" ] || mkdir -p "$out"

# table ROWS-FILE: median, range and slowdown per configuration
table() {
	python3 - "$1" "$ishift" <<'PY'
import statistics, sys
rows, shift = sys.argv[1], int(sys.argv[2])
data, runs, agent = {}, {}, {}
for line in open(rows):
    f = dict(kv.split("=", 1) for kv in line.split()[1:])
    data.setdefault(f["config"], []).append(int(f["ns_per_fault"]))
    runs.setdefault(f["config"], []).append(int(f["faults"]))
    agent.setdefault(f["config"], []).append(int(f.get("agent_ns", 0)))
order = ["none", "kmod", "kmod-perf", "bpf", "bpf-tp"]
what = {"none": "no profiler",
        "kmod": "module, tracepoints (default)",
        "kmod-perf": "module, fault_perf=1 (perf sw event)",
        "bpf": "eBPF, perf sw event (default)",
        "bpf-tp": "eBPF, EMBER_FAULTS_HOOK=tp"}
unit = "insns" if shift == 0 else f"x{2 ** shift} insns"
base = statistics.median(data["none"]) if "none" in data else None
wbase = statistics.median(runs["none"]) if "none" in runs else None
print(f"{'config':<10} {'hook':<37} {'n':>2} {'median':>8} {'range':>13} {'slowdown':>9} {'[range]':>17} {'wall':>7} {'agent':>6}")
for c in [c for c in order if c in data] + [c for c in data if c not in order]:
    v = sorted(data[c])
    med = statistics.median(v)
    slow = rng = wall = ag = ""
    if base and c != "none":
        slow = f"{(med / base - 1) * 100:+.1f}%"
        rng = f"[{(v[0] / base - 1) * 100:+.1f}..{(v[-1] / base - 1) * 100:+.1f}%]"
    if wbase and c != "none":
        wall = f"{(wbase / statistics.median(runs[c]) - 1) * 100:+.1f}%"
        ag = f"{statistics.median(agent[c]) / 1e6:.1f}M"
    print(f"{c:<10} {what.get(c, c):<37} {len(v):>2} {med:>8.0f} {v[0]:>6}..{v[-1]:<6} {slow:>9} {rng:>17} {wall:>7} {ag:>6}")
print(f"(own CPU per fault in guest ns = {unit} per fault; slowdown: median")
print(" against no profiler's median, range: each run against that median;")
print(" wall: guest time per fault from faults per run, which also counts the")
print(" agent's own work on the one vCPU; agent: ember's own CPU time during")
print(" the run, in millions of guest ns)")
PY
}

caveat="Caveat: guest instruction counts (qemu -icount) model no cache/TLB misses,
branch mispredictions or Retpoline/SRSO return-thunk costs, which dominate
the hooks' cost on real hardware: this ranks the hooks by work done, it does
not predict the host's slowdown (docs/NOTES.md, page faults)."

status=0
for k in $kernels; do
	kdir=$(scripts/fetch-kernels.sh --kdir "$k" | tail -n 1)
	make -s module KDIR="$kdir" >"$work/kmod-$k.log" 2>&1 ||
		{ echo "fault-icount: module build for $k failed: $(tail -n 3 "$work/kmod-$k.log")" >&2; exit 1; }
	cp ember.ko "$work/ember-$k.ko"
	rc=0
	EMBER_VM_ICOUNT=$ishift selftests/vm/run-vm.sh --kernel "$k" --payload "$work/fault-icount" \
		--module "$work/ember-$k.ko" --smp 1 --mem 1G --timeout 1800 \
		--cmd "FI_REPS=$reps FI_D=$secs FI_PERIOD=$period sh /payload/fault-icount/fault-icount-guest.sh" \
		>"$work/guest-$k.out" 2>"$work/run-vm-$k.err" || rc=$?
	grep '^FIROW ' "$work/guest-$k.out" >"$work/rows-$k" || true
	{
		echo "== $k: $(sed -n 's/^FINOTE //p' "$work/guest-$k.out" | head -n 1)"
		grep '^FINOTE ' "$work/guest-$k.out" | sed 1d || true
		if [ "$rc" != 0 ] || ! grep -q '^FIDONE' "$work/guest-$k.out"; then
			echo "VM run failed (status $rc): $(tail -n 3 "$work/run-vm-$k.err" | tr '\n' ' ')"
		fi
		[ ! -s "$work/rows-$k" ] || table "$work/rows-$k"
		echo
	} | tee -a "$work/table"
	[ "$rc" = 0 ] || status=1
	[ -z "$out" ] || cp "$work/rows-$k" "$out/rows-$k.txt"
done
echo "$caveat" | tee -a "$work/table"
if [ -n "$out" ]; then
	{
		echo "command: $cmdline"
		echo "qemu: $(qemu-system-x86_64 --version | head -n 1), -icount shift=$ishift,sleep=off,align=off, 1 vCPU"
		echo
		cat "$work/table"
	} >"$out/table.txt"
fi
exit $status
