#!/usr/bin/env bash
# CPython frames in the eBPF backend's user stacks, on this host (suite
# 20-bpf): Debian 12's /usr/bin/python3.11 running py-work.py, described
# by check-python.py (not by the agent), recorded by py-bpf-dump with the
# process's unwind tables bound, and checked against the live process:
#   bpf-python-chain     the CFI walk: on-CPU chains whole and in order,
#                        a second activation under sorted() in its place,
#                        off-CPU chains under time.sleep, every Python slot
#                        a live code object whose check value agrees
#   bpf-python-fp        the same process by the frame-pointer path
#   bpf-python-bad-*     a broken description cuts, never makes up a frame
# Needs root and x86_64 (the offsets are 3.11's on glibc 2.36 x86_64).
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

PY=/usr/bin/python3.11
DUMP=agent/gen/tests/py-bpf-dump
CHECK="$PY selftests/bpf/check-python.py"
art=${EMBER_TEST_ARTIFACTS:-selftests/artifacts}/bpf-python
secs=${PY_SECS:-4}

if [ "$(uname -m)" != x86_64 ] || [ ! -x $PY ]; then
	t_skip bpf-python "needs Debian 12's $PY on x86_64"
	exit 0
fi
if ! out=$(make -s -j2 py-bpf-tests 2>&1); then
	t_fail bpf-python-build "$(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"
	exit 0
fi
mkdir -p "$art"
W=""
cleanup() { [ -n "$W" ] && kill "$W" 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT

# one NAME [py-bpf-dump args] -- [check-python.py args]: a fresh workload,
# described, recorded and checked while it still runs
one() {
	local name=$1 dargs=() cargs=() info fifo hex
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do dargs+=("$1"); shift; done
	shift
	cargs=("$@")
	info=$art/$name.json
	fifo=$art/$name.go
	rm -f "$fifo"
	mkfifo "$fifo"
	$PY selftests/bpf/py-work.py chain $((secs + 3)) <"$fifo" >"$info" 2>"$art/$name.work.err" &
	W=$!
	exec 7>"$fifo"
	for _ in $(seq 50); do [ -s "$info" ] && break; sleep 0.1; done
	if [ ! -s "$info" ]; then
		exec 7>&-
		t_fail "$name" "py-work.py did not start: $(head -c 300 "$art/$name.work.err")"
		return
	fi
	hex=$($CHECK proc "$W" "${cargs[@]}") || { t_fail "$name" "$hex"; exec 7>&-; return; }
	echo go >&7
	exec 7>&-
	$DUMP -p "$W" -Y "$hex" -e on,off -F 199 -d "$secs" "${dargs[@]}" \
		>"$art/$name.dump" 2>"$art/$name.dump.err"
	if ! grep -q '^STATS' "$art/$name.dump"; then
		t_fail "$name" "py-bpf-dump: $(grep -v '^;' "$art/$name.dump.err" | tail -n 3 | tr '\n' ' ' | cut -c1-400)"
	elif out=$($CHECK chain "$art/$name.dump" "$info" "${cargs[@]}" 2>&1); then
		printf '%s\n' "$out" | sed 's/^/  /'
		t_pass "$name"
	else
		printf '%s\n' "$out" | sed 's/^/  /'
		t_fail "$name" "$(printf '%s' "$out" | grep -m1 FAIL)"
	fi
	grep '^STATS' "$art/$name.dump" | sed 's/^/  # /'
	kill "$W" 2>/dev/null
	wait "$W" 2>/dev/null
	W=""
}

# py_bind's validation, on a real source
$DUMP -V 2>&1 | sed -n '/^PASS: \|^FAIL: /p'

one bpf-python-chain --
one bpf-python-fp -T -- --fp
one bpf-python-bad-tstate -- --bad tstate
one bpf-python-bad-previous -- --bad previous
