#!/bin/sh
# Inside an arm64 test VM (selftests/suites/23-arm64-vm.sh, busybox sh):
# the cross-built agent on Debian's arm64 kernel. Prints PASS/FAIL/SKIP
# lines named arm64_<test>; the host prefixes the kernel series.
#
# /payload/agent holds what scripts/build-arm64.sh built: ember,
# libember-alloc.so, the workloads of its tests/ directory and the
# arch-neutral check scripts. $EMBER_MODULE is /payload/ember.ko when
# ember.ko built for this kernel (the module tests are skipped by the host
# otherwise). EMBER_ARM64_CHECKS (the host passes it on the command line)
# picks the groups: basic (always), e2e, nofp.
cd /payload/agent || exit 1
out=/out
checks=" basic ${EMBER_ARM64_CHECKS:-e2e nofp} "
ok() { echo "PASS: arm64_$1"; }
ko() { echo "FAIL: arm64_$1: $2"; }
# samples of the lines of a folded profile that start with PREFIX;
samples_of() { awk -v p="$1;" 'index($0, p) == 1 { n += $NF } END { print n + 0 }' "$2"; }

# 1. the agent starts and sees an arm64 kernel with the eBPF backend
./ember status >$out/status.txt 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "kernel $(uname -r) aarch64" $out/status.txt &&
	grep -q '^eBPF backend: *available' $out/status.txt; then
	ok agent_status
else
	ko agent_status "rc=$rc: $(tr '\n' '|' <$out/status.txt | cut -c1-300)"
fi

# 2. ember record with the eBPF backend: samples of the workload, and
# kernel stacks through the arm64 syscall entry (read() from /dev/zero in
# its syscall phase: el0_svc ... __arm64_sys_read)
./ember record --backend bpf -F 199 -o $out/bpf.folded -- ./ember-phases 1 \
	>$out/bpf.stdout 2>$out/bpf.stderr
rc=$?
n=$(samples_of ember-phases $out/bpf.folded 2>/dev/null)
if [ $rc -eq 0 ] && grep -q '^ember: using eBPF' $out/bpf.stderr && [ "${n:-0}" -ge 100 ]; then
	ok bpf_record_samples
else
	ko bpf_record_samples "rc=$rc, $n samples of ember-phases (want >= 100): $(tr '\n' '|' <$out/bpf.stderr | cut -c1-300)"
fi
if grep -q '^ember-phases;.*el0_svc.*__arm64_sys_read.*_\[k\] [0-9]' $out/bpf.folded; then
	ok bpf_kernel_stack_syscall
else
	ko bpf_kernel_stack_syscall "no ember-phases stack through el0_svc ... __arm64_sys_read"
fi

# 3. the module, when the host built it for this kernel: auto-loaded from
# $EMBER_MODULE, samples of the workload, kernel stacks as above
if [ -n "$EMBER_MODULE" ]; then
	./ember record -F 199 -o $out/kmod.folded -- ./ember-phases 1 \
		>$out/kmod.stdout 2>$out/kmod.stderr
	rc=$?
	n=$(samples_of ember-phases $out/kmod.folded 2>/dev/null)
	if [ $rc -eq 0 ] && grep -q 'using the module backend' $out/kmod.stderr && [ "${n:-0}" -ge 100 ]; then
		ok kmod_record_samples
	else
		ko kmod_record_samples "rc=$rc, $n samples of ember-phases (want >= 100): $(tr '\n' '|' <$out/kmod.stderr | cut -c1-300)"
	fi
	if grep -q '^ember-phases;.*el0_svc.*__arm64_sys_read.*_\[k\] [0-9]' $out/kmod.folded; then
		ok kmod_kernel_stack_syscall
	else
		ko kmod_kernel_stack_syscall "no ember-phases stack through el0_svc ... __arm64_sys_read"
	fi
	rmmod ember 2>/dev/null
fi

# 4. the x86-64 suites' arch-neutral checks, eBPF backend: the e2e set
# (shares per phase, symbolized chains, kernel frames under the syscall
# phase, exit status, stdin, SIGINT, off-CPU) and the no-frame-pointer
# ground truth, gcc and clang
case $checks in
*" e2e "*)
	bash ./e2e.sh --backend bpf --ember ./ember --phases ./ember-phases \
		--freq 999 --scale 1 --out $out/e2e --shares per-thread |
		sed 's/^\(PASS\|FAIL\|SKIP\): /\1: arm64_/'
	;;
esac
case $checks in
*" nofp "*)
	for c in gcc clang; do
		sh ./check-nofp.sh --ember ./ember --work ./unwind-$c --label bpf_$c \
			--backend bpf --secs 4 --warmup 3 --out $out/nofp |
			sed 's/^\(PASS\|FAIL\|SKIP\): /\1: arm64_/'
	done
	;;
esac
exit 0
