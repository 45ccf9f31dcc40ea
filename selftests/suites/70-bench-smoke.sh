#!/usr/bin/env bash
# make bench in its seconds-long dry mode (BENCH_DRY=1): proves the bench
# scripts, workloads and report generator still run against the current
# agent and write a report with every section. It checks that the report
# is complete, never the numbers: benchmarks are not tests (bench/README.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

if [ "$(id -u)" -ne 0 ]; then
	t_skip bench_smoke "needs root (ember record -a, perf -a, offcputime)"
	exit 0
fi
if ! out=$(make -s -j2 agent bench-workloads 2>&1); then
	t_fail bench_smoke_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
	exit 1
fi
t_pass bench_smoke_build

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# no VM boot in the smoke run: BENCH_VM_KERNELS="" (the VM section then
# says why it did not run)
if ! BENCH_VM_KERNELS="" timeout 300 make -s bench BENCH_DRY=1 BENCH_OUT="$work/r" \
	>"$work/stdout" 2>"$work/stderr"; then
	t_fail bench_smoke_run "make bench BENCH_DRY=1 failed: $(tail -n 3 "$work/stderr" | tr '\n' ' ')"
	exit 0
fi
t_pass bench_smoke_run

for f in report.md results.csv meta.json; do
	if [ -s "$work/r/$f" ]; then
		t_pass "bench_smoke_writes_$f"
	else
		t_fail "bench_smoke_writes_$f" "$work/r/$f missing or empty"
	fi
done

missing=
for s in "## Headline" "## Targets" "## Machine and run" \
	"## 1. On-CPU overhead" "## 2. Per-sample kernel cost" "## 3. Off-CPU overhead" \
	"## 4. Loss" "## 5. Agent CPU and memory" "## 6. Time to symbolize" \
	"## 7. Module backend in test-kernel VMs" "## 8. Allocation profiling cost" \
	"## 9. Page-fault profiling cost" "## 10. Lock contention profiling cost" \
	"## 11. CPython frames, per-sample cost" \
	"## 12. Stack copy, per-sample cost" \
	"## How to read this report"; do
	grep -qF "$s" "$work/r/report.md" || missing="$missing '$s'"
done
if [ -z "$missing" ]; then
	t_pass bench_smoke_report_sections
else
	t_fail bench_smoke_report_sections "missing:$missing"
fi

# every section measured something (rows in the CSV), tools that are
# installed by scripts/install-deps.sh included
missing=
for sec in oncpu bpfcost offcpu loss agent symbolize alloc faults lock python stackcopy; do
	grep -q "^$sec," "$work/r/results.csv" || missing="$missing $sec"
done
grep -q "^oncpu,perf" "$work/r/results.csv" || missing="$missing oncpu/perf"
grep -q "^offcpu,offcputime," "$work/r/results.csv" || missing="$missing offcpu/offcputime"
grep -q "^alloc,fulltrace," "$work/r/results.csv" || missing="$missing alloc/fulltrace"
if [ -z "$missing" ]; then
	t_pass bench_smoke_every_section_measured
else
	t_fail bench_smoke_every_section_measured "no rows for:$missing"
fi

# the headline table printed, and one verdict per target
if grep -q "^| figure | ember |" "$work/stdout"; then
	t_pass bench_smoke_prints_headline
else
	t_fail bench_smoke_prints_headline "no headline table on stdout"
fi
n=$(grep -cE '^\| [^|]+ \| \*\*(MET|MISSED)\*\* \|' "$work/r/report.md")
if [ "$n" -ge 6 ]; then
	t_pass bench_smoke_target_verdicts
else
	t_fail bench_smoke_target_verdicts "$n verdicts in the Targets table, expected at least 6"
fi
