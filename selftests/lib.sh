# Helpers for test suites (source it). See selftests/run.sh for the protocol.
t_pass() { echo "PASS: $1"; }
t_fail() { echo "FAIL: $1: ${2:-failed}"; }
# A missing prerequisite is a skip for a developer but a failure in CI:
# CI must never pass without testing.
t_skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $1: prerequisite missing in CI: ${2:-}"
	else
		echo "SKIP: $1: ${2:-}"
	fi
}
# t_check NAME COMMAND...: PASS when the command succeeds.
t_check() {
	local name=$1
	shift
	local out
	if out=$("$@" 2>&1); then
		t_pass "$name"
	else
		t_fail "$name" "$(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"
	fi
}
