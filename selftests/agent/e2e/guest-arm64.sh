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
# picks the check groups of part 4 (the basic checks always run).
cd /payload/agent || exit 1
out=/out
checks=" ${EMBER_ARM64_CHECKS-e2e nofp real} "
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

# record_phases NAME STDERR_PATTERN [OPTION...]: `ember record OPTION...`
# of ember-phases into $out/NAME.folded. NAME_record_samples: exit 0,
# STDERR_PATTERN said (the backend used) and >= 100 samples of the
# workload; NAME_kernel_stack_syscall: kernel stacks through the arm64
# syscall entry (read() from /dev/zero in its syscall phase: el0_svc ...
# __arm64_sys_read)
record_phases() {
	name=$1 said=$2
	shift 2
	./ember record "$@" -F 199 -o $out/$name.folded -- ./ember-phases 1 \
		>$out/$name.stdout 2>$out/$name.stderr
	rc=$?
	n=$(samples_of ember-phases $out/$name.folded 2>/dev/null)
	if [ $rc -eq 0 ] && grep -q "$said" $out/$name.stderr && [ "${n:-0}" -ge 100 ]; then
		ok ${name}_record_samples
	else
		ko ${name}_record_samples "rc=$rc, $n samples of ember-phases (want >= 100): $(tr '\n' '|' <$out/$name.stderr | cut -c1-300)"
	fi
	if grep -q '^ember-phases;.*el0_svc.*__arm64_sys_read.*_\[k\] [0-9]' $out/$name.folded; then
		ok ${name}_kernel_stack_syscall
	else
		ko ${name}_kernel_stack_syscall "no ember-phases stack through el0_svc ... __arm64_sys_read"
	fi
}

# 2. ember record with the eBPF backend
record_phases bpf '^ember: using eBPF' --backend bpf

# 3. the module, when the host built it for this kernel: auto-loaded from
# $EMBER_MODULE
[ -z "$EMBER_MODULE" ] || record_phases kmod 'using the module backend'

# 3b. bad input: a module built for another architecture (x86-64) is
# refused by the kernel; the agent says so in one line and records with
# eBPF instead, losing nothing
# (the arm64 module of part 3 is unloaded first and loaded again after)
rmmod ember 2>/dev/null
if [ -f ember-x86_64.ko ]; then
	EMBER_MODULE=/payload/agent/ember-x86_64.ko ./ember record -F 199 \
		-o $out/wrongarch.folded -- ./ember-phases 1 \
		>$out/wrongarch.stdout 2>$out/wrongarch.stderr
	rc=$?
	n=$(samples_of ember-phases $out/wrongarch.folded 2>/dev/null)
	if [ $rc -eq 0 ] && grep -q 'insmod .*ember-x86_64.ko failed' $out/wrongarch.stderr &&
		grep -q 'using eBPF' $out/wrongarch.stderr && [ "${n:-0}" -ge 100 ] &&
		! lsmod | grep -q '^ember '; then
		ok wrong_arch_module_refused
	else
		ko wrong_arch_module_refused "rc=$rc, $n samples: $(tr '\n' '|' <$out/wrongarch.stderr | cut -c1-300)"
	fi
fi
[ -z "$EMBER_MODULE" ] || insmod "$EMBER_MODULE" 2>/dev/null

# 4. the x86-64 suites' arch-neutral checks, per backend (eBPF, and the
# module when it built), in the groups EMBER_ARM64_CHECKS names:
#   e2e     e2e.sh: shares per phase, symbolized chains, kernel frames under
#           the syscall phase, exit status, stdin, SIGINT, off-CPU
#   nofp    check-nofp.sh on the gcc and clang builds without frame pointers
#   real    check-real.sh: Debian's arm64 python3.11 (-p), xz and openssl
#   oracle  check-oracle.sh: the backend's CFI walk against libdwfl
#   alloc   check-alloc.sh (-e alloc, the preloaded sampler)
#   lock    check-lock.sh (-e lock, lockwork and futexstorm)
#   faults  check-faults.sh (-e faults, faultwork)
# Test names get arm64_ in front (check-real's also the backend).
has() { case $checks in *" $1 "*) return 0 ;; esac; return 1; }
named() { sed "s/^\(PASS\|FAIL\|SKIP\): /\1: arm64_$1/"; }
run_groups() {
	b=$1
	if has e2e; then
		bash ./e2e.sh --backend $b --ember ./ember --phases ./ember-phases \
			--freq 999 --scale 1 --out $out/e2e-$b --shares per-thread | named
	fi
	if has nofp; then
		for c in gcc clang; do
			sh ./check-nofp.sh --ember ./ember --work ./unwind-$c --label ${b}_$c \
				--backend $b --secs 4 --warmup 3 --out $out/nofp | named
		done
	fi
	if has oracle; then
		sh ./check-oracle.sh --ember ./ember --work ./unwind-gcc --label $b \
			--backend $b --warmup 3 --freq 199 --out $out/nofp | named
	fi
	if has real; then
		# the kernel's random pool first (python's hash seed would
		# wait for it under the profiler); python as a running
		# service, xz and openssl as users run them (40-agent-vm's
		# guest explains both)
		head -c 1 /dev/random >/dev/null
		bash ./check-real.sh --ember ./ember --backend $b --no-perf \
			--only python3.11 --py-warmup 3 --py-attach --out $out/real-$b | named ${b}_
		bash ./check-real.sh --ember ./ember --backend $b --no-perf \
			--only "xz openssl" --xz-mb 2 --out $out/real-cmd-$b \
			--outer complete --min 97 | named ${b}_
		# Python callers of code no unwinder can step out of
		bash ./check-python-rest.sh --ember ./ember --backend $b \
			--where vm --secs 3 --out $out/pyrest-$b | named
	fi
	if has alloc; then
		sh ./check-alloc.sh --ember ./ember --work ./allocwork --backend $b \
			--label ${b}_vm --lib /payload/agent/libember-alloc.so --rate 8192 \
			--warmup 3 --scale 0.5 --out $out/alloc-$b | named
	fi
	if has lock; then
		sh ./check-lock.sh --ember ./ember --work ./lockwork --storm ./futexstorm \
			--backend $b --label ${b}_vm --secs 6 --storm-secs 3 \
			--out $out/lock-$b | named
	fi
	if has faults; then
		sh ./check-faults.sh --ember ./ember --work ./faultwork --backend $b \
			--label ${b}_vm --rounds 8 --out $out/faults-$b | named
	fi
}
run_groups bpf
if [ -n "$EMBER_MODULE" ]; then
	run_groups kmod
	rmmod ember 2>/dev/null
fi
exit 0
