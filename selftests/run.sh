#!/usr/bin/env bash
# Run every test suite in selftests/suites/ (in name order) and print one
# closing line: "N passed, N failed, N skipped".
#
# Suite protocol: a suite is an executable that prints one line per test,
#   PASS: <name>
#   FAIL: <name>: <why>
#   SKIP: <name>: <why>
# (selftests/lib.sh has helpers). Other output is passed through. A suite
# that exits non-zero without printing a FAIL line counts as one failure, so
# a crash can never look like success.
#
# Environment: SUITES="10-agent 20-bpf" runs only those; CI=true makes
# suites treat missing prerequisites as failures rather than skips.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0 failed=0 skipped=0
failures=()
log_dir=${EMBER_TEST_LOGS:-selftests/logs}
mkdir -p "$log_dir"

for suite in selftests/suites/*; do
	[ -x "$suite" ] || continue
	name=$(basename "$suite")
	name=${name%.sh}
	if [ -n "${SUITES:-}" ] && [[ " $SUITES " != *" $name "* ]]; then
		continue
	fi
	echo "=== suite $name"
	start=$(date +%s)
	# Count from a private file: two runs of one suite in the same tree
	# (two developers) would otherwise interleave one shared log and break
	# the line starts the counts rely on. The log is copied afterwards.
	out=$(mktemp "${TMPDIR:-/tmp}/ember-$name.XXXXXX")
	"$suite" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	cp "$out" "$log_dir/$name.log"
	p=$(grep -c '^PASS: ' "$out")
	f=$(grep -c '^FAIL: ' "$out")
	s=$(grep -c '^SKIP: ' "$out")
	# A suite must leave the machine as it found it: an unlinked /dev/null
	# (a failed `ember record -o /dev/null` once did that) turns every
	# later ">/dev/null" into a regular file. Blame the suite, then repair
	# it so the suites after are judged on their own.
	if [ ! -c /dev/null ]; then
		echo "FAIL: ${name}_leaves_dev_null: /dev/null is no longer a character device"
		f=$((f + 1))
		failures+=("FAIL: ${name}_leaves_dev_null")
		rm -f /dev/null && mknod -m 666 /dev/null c 1 3
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL: $name: suite exited with status $rc"
		f=1
	fi
	while IFS= read -r line; do failures+=("$line"); done < <(grep '^FAIL: ' "$out")
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	rm -f "$out"
	echo "=== suite $name: $p passed, $f failed, $s skipped ($(( $(date +%s) - start )) s)"
done

if [ ${#failures[@]} -gt 0 ]; then
	echo "=== failures"
	printf '%s\n' "${failures[@]}"
fi
if [ $((passed + failed)) -eq 0 ]; then
	echo "no test ran: that is a failure"
	failed=1
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
