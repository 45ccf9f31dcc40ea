#!/usr/bin/env bash
# libFuzzer harnesses, each for a bounded time (EMBER_FUZZ_SECONDS, default
# 45) starting from the corpus in selftests/fuzz/corpus/<name>/, built with
# ASan/UBSan: an ELF file -> CFI table compiler, ring bytes -> the record
# path (profile builder, unwind check), files -> `ember decode`, bytes ->
# the shared unwind-table checker and lookup (include/ember_unwind.h, what
# the module validates netlink tables with), bytes -> Go's function table
# reader (.gopclntab, seeds from a real Go binary: fuzz/gopcln_seed.py),
# bytes -> CPython's location tables and ELF files as an interpreter or a
# C library (agent/python/; seeds: real 3.11 tables, a fake libpython). A crash,
# a leak, a sanitizer report or a table the validator refuses fails; the
# input that did it is kept in selftests/logs/fuzz/ for a regression.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

SECS=${EMBER_FUZZ_SECONDS:-45}
if ! command -v clang >/dev/null; then
	t_skip fuzz "clang not installed (scripts/install-deps.sh)"
	exit 0
fi
if ! out=$(make -s -j2 fuzzers 2>&1); then
	t_fail fuzz_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
	exit 1
fi
t_pass fuzz_build
logs=${EMBER_TEST_LOGS:-selftests/logs}/fuzz
mkdir -p "$logs"
# One fuzzer is one process: run as many at once as there are CPUs (the
# effort per fuzzer stays $SECS s; the suite's wall time shrinks).
fuzz_one() { # NAME: its PASS/FAIL lines into $logs/NAME.result
	local name=$1 work log runs
	work=$(mktemp -d "${TMPDIR:-/tmp}/ember-fuzz-$name.XXXXXX")
	log=$logs/$name.log
	# -max_len: ELF seeds are ~14 KB; records and OTLP files fit in 64 KB
	if agent/gen/fuzz/fuzz_"$name" -max_total_time="$SECS" -rss_limit_mb=1024 \
		-max_len=65536 -timeout=10 -artifact_prefix="$logs/$name-" \
		"$work" "selftests/fuzz/corpus/$name" >"$log" 2>&1; then
		runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log")
		{ echo "# fuzz_$name: ${runs:-?} runs in $SECS s, no crash"
		  t_pass "fuzz_$name"; } >"$logs/$name.result"
	else
		t_fail "fuzz_$name" "$(grep -m1 -E 'ERROR|SUMMARY|abort' "$log") (input kept in $logs/)" \
			>"$logs/$name.result"
	fi
	rm -rf "$work"
}
fuzzers="cfi record decode table gopcln python"
parallel=$(nproc 2>/dev/null || echo 1)
for name in $fuzzers; do
	rm -f "$logs/$name.result"
	while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n; done
	fuzz_one "$name" &
done
wait
for name in $fuzzers; do
	if [ -s "$logs/$name.result" ]; then
		cat "$logs/$name.result"
	else
		t_fail "fuzz_$name" "the fuzzer's run left no result (log: $logs/$name.log)"
	fi
done
