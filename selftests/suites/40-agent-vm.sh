#!/usr/bin/env bash
# ember record end to end with the module backend, in a VM per test kernel
# (selftests/vm/run-vm.sh): the e2e checks of selftests/agent/e2e/e2e.sh
# plus module auto-loading, ember status's per-CPU statistics, and the
# automatic eBPF fallback when module loading is disabled.
#
# Kernels: 6.1 in CI (Debian 12's own, where the README's newcomer
# runs it); 5.10, 6.1 and 6.12 with EMBER_FULL=1 (~6 min each under
# TCG); EMBER_VM_KERNELS="5.10 6.12" names them.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

kernels=$(vm_kernels "6.1" "5.10 6.1 6.12")
if [ ! -x selftests/vm/run-vm.sh ] || ! command -v qemu-system-x86_64 >/dev/null; then
	t_skip agent_vm "selftests/vm/run-vm.sh or qemu missing"
	exit 0
fi
if ! out=$(make -s -j2 agent-e2e unwind-work alloc-work lock-work 2>&1); then
	t_fail agent_vm_build "$(printf '%s' "$out" | grep -m3 -E 'error|Error' | tr '\n' ' ')"
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/agent"
cp agent/ember agent/gen/tests/ember-phases agent/gen/tests/faultwork \
	selftests/faults/check-faults.sh selftests/agent/e2e/e2e.sh \
	selftests/agent/e2e/guest.sh selftests/unwind/check-nofp.sh \
	selftests/unwind/check-oracle.sh selftests/unwind/check-real.sh \
	selftests/unwind/check-cost.sh selftests/unwind/check-jit.sh \
	selftests/unwind/check-backends.sh \
	selftests/agent/e2e/check-python-rest.sh selftests/agent/e2e/pyanon.py \
	agent/gen/tests/jit-work agent/gen/tests/allocwork \
	preload/libember-alloc.so selftests/alloc/check-alloc.sh \
	selftests/alloc/check-alloc-pid.sh selftests/alloc/alloc-common.sh \
	selftests/alloc/check-alloc-cgroup.sh \
	agent/gen/tests/lockwork agent/gen/tests/futexstorm \
	selftests/lock/check-lock.sh \
	"$work/agent/"
# no-frame-pointer ground truth for the module's CFI unwinder (gcc and
# clang builds)
cp -r agent/gen/tests/unwind-gcc agent/gen/tests/unwind-clang "$work/agent/"
art=${EMBER_TEST_ARTIFACTS:-selftests/artifacts}/agent-vm
# Debian's python3.11 for check-real.sh: the interpreter and just the
# stdlib files its script loads (about 60), not the whole library tree
py_files=()
while IFS= read -r f; do
	py_files+=(--host-file "$f")
done < <(selftests/unwind/check-real.sh --python-files
	selftests/agent/e2e/check-python-rest.sh --python-files)

for k in $kernels; do
	if ! kdir=$(scripts/fetch-kernels.sh --kdir "$k" 2>"$work/fetch.log"); then
		t_skip "agent_vm_$k" "kernel $k unavailable: $(tail -n1 "$work/fetch.log")"
		continue
	fi
	# the module for this kernel, copied away at once: the tree's ember.ko
	# is shared by every build
	if ! make -s module KDIR="$kdir" >"$work/kmod-$k.log" 2>&1 || ! cp ember.ko "$work/ember-$k.ko"; then
		t_fail "agent_vm_${k}_module_build" "$(tail -n 3 "$work/kmod-$k.log" | tr '\n' ' ')"
		continue
	fi
	rm -rf "$art/$k"
	mkdir -p "$art/$k"
	selftests/vm/run-vm.sh --kernel "$k" --payload "$work/agent" \
		--module "$work/ember-$k.ko" --host-file /usr/bin/bash \
		--host-file /usr/bin/xz --host-file /usr/bin/openssl "${py_files[@]}" \
		--cmd "sh /payload/agent/guest.sh" --smp 2 --mem 1G --timeout 540 \
		--out "$art/$k" --log "$art/$k/console.log" --result "$work/result-$k" \
		>"$art/$k/guest.out" 2>"$art/$k/run-vm.err"
	rc=$?
	# the guest's test lines, named per kernel
	sed -n -E "s/^(PASS|FAIL|SKIP): ([^:]*)(.*)/\1: ${k}_\2\3/p" "$art/$k/guest.out"
	grep '^# ' "$art/$k/guest.out"
	# judged from the result file: the exit status alone cannot tell a
	# kernel problem (126) from a guest command that exited 126
	problems=$(vm_result "$work/result-$k" kernel_problems 2>/dev/null)
	if [ -n "$problems" ] && [ "$problems" != 0 ]; then
		t_fail "agent_vm_${k}_clean_run" "kernel problem in the guest log: $(grep -A2 'kernel problem' "$art/$k/run-vm.err" | sed -n 2,3p | tr '\n' ' ' | cut -c1-300) (log: $art/$k/console.log)"
		t_kernel_log_excerpt "$art/$k/console.log"
	elif [ "$rc" = 0 ]; then
		t_pass "agent_vm_${k}_clean_run"
	else
		t_fail "agent_vm_${k}_clean_run" "run-vm exit $rc: $(tail -n 2 "$art/$k/run-vm.err" | tr '\n' ' ')"
	fi
	if ! grep -qE '^(PASS|FAIL): ' "$art/$k/guest.out"; then
		t_fail "agent_vm_${k}_guest_reported" "the guest printed no test result; last lines: $(tail -n 3 "$art/$k/guest.out" | tr '\n' ' ' | cut -c1-300)"
	fi
done
