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
# t_kernel_log_excerpt LOG: print, as '# ' comment lines, the guest kernel
# log around its first problem line (the harness's own pattern,
# selftests/vm/kernel-problems.ere), so a CI log that keeps only the test
# output still says what the kernel reported.
t_kernel_log_excerpt() {
	local log=$1 first from
	[ -r "$log" ] || return 0
	first=$(grep -nE '^\[ *[0-9]+\.[0-9]+\] ' "$log" |
		grep -E -f "${BASH_SOURCE[0]%/*}/vm/kernel-problems.ere" |
		head -n 1 | cut -d: -f1)
	[ -n "$first" ] || return 0
	from=$((first > 8 ? first - 8 : 1))
	echo "# kernel log $log, lines $from-$((first + 50)):"
	sed -n "$from,$((first + 50))p" "$log" | tr -d '\r' | cut -c1-200 | sed 's/^/#   /'
}
# vm_result FILE KEY: a value from a run-vm.sh --result file
vm_result() { sed -n "s/^$2=//p" "$1"; }
# vm_kernels CI_SET FULL_SET: the kernels a VM suite boots. CI (the
# README's test command) must end within an hour on 2 cores, so each VM
# suite boots the kernels of its CI set there, chosen so that every
# kernel of the matrix runs each backend in some suite;
# EMBER_FULL=1 boots every suite on its full set (README, "The full
# matrix"); EMBER_VM_KERNELS names them outright.
vm_kernels() {
	if [ -n "${EMBER_VM_KERNELS:-}" ]; then
		echo "$EMBER_VM_KERNELS"
	elif [ "${EMBER_FULL:-}" = 1 ]; then
		echo "$2"
	else
		echo "$1"
	fi
}
# t_without_tracefs CMD...: CMD in a private mount namespace where tracefs
# is not mounted (a fresh cloud VM, a container, a busybox image: ember
# must mount it itself for syscall tracepoints); exits 1 when it stays
# mounted there.
t_without_tracefs() {
	unshare -m --propagation private sh -c '
		umount -l /sys/kernel/debug/tracing 2>/dev/null
		umount -l /sys/kernel/tracing 2>/dev/null
		umount -l /sys/kernel/debug 2>/dev/null
		if [ -e /sys/kernel/tracing/events ]; then
			echo "tracefs still mounted" >&2; exit 1
		fi
		exec "$@"' sh "$@"
}
