#!/bin/sh
# Guest half of selftests/suites/21-bpf-vm.sh (busybox sh in a run-vm.sh VM):
# runs the eBPF backend through bpf-dump on this kernel and leaves the
# dumps (gzipped) and a kallsyms subset in /out for the host to check with
# bpf-check.py (no python here). Prints "FLAVOUR ..." lines and
# "GUEST-FAIL: step: why" for steps that could not run at all.
T=/payload/tests
D=$T/bpf-dump
cd /tmp || exit 1

fail() { echo "GUEST-FAIL: $1: $2"; }
# "info: took NAME S s" when the next part starts: where the suite's time goes
took_name= took_t0=
took() {
	took_now=$(cut -d' ' -f1 /proc/uptime)
	[ -z "$took_name" ] ||
		echo "info: took $took_name $(awk -v a="$took_t0" -v b="$took_now" 'BEGIN { printf "%.1f", b - a }') s"
	took_name=$1 took_t0=$took_now
}

# kernel symbols the checks look for, plus the symbol after each one so
# nearest-lower lookups never stretch a function past its end
sort /proc/kallsyms | awk '
	keep { print; keep = 0 }
	$3 ~ /^(__schedule|schedule|do_nanosleep|pipe_read|anon_pipe_read|finish_task_switch.*|entry_SYSCALL_64.*|do_syscall_64|el0t_64_sync.*|el0_svc.*|invoke_syscall|read_zero)$/ { print; keep = 1 }
' >/out/kallsyms.subset

burn() { for i in 1 2; do $T/fp-burn "$1" & done; }

# on-CPU rate, idle included: busy emulated vCPUs make TCG deliver guest
# timer interrupts late, idle ones do not (the module's VM test does the same)
# A reference ticker runs alongside each attempt: what the VM's own timers
# delivered meanwhile. A host that starves the vCPUs makes every timer in
# the guest late, ember's or not, so bpf-check.py judges the attempts in
# order and measures a miss as "inconclusive" only while the reference was
# starved too (see cmd_rate). Three attempts, always, since the guest has
# no python to judge them.
took rate
for a in 1 2 3; do
	ticker=/payload/agent/ticker
	[ -x $ticker ] && $ticker 3 99 >/tmp/ticker.$a 2>&1 &
	$D -d 3 -i >/tmp/rate.$a 2>/tmp/rate.err || fail rate "$(tail -n 2 /tmp/rate.err)"
	wait
	gzip -c /tmp/rate.$a >/out/rate.$a.gz
	cp /tmp/ticker.$a /out/ticker.$a 2>/dev/null
done
cp /tmp/rate.1 /tmp/rate
grep "^ember: bpf" /tmp/rate.err | sed 's/^/FLAVOUR on-cpu: /'

# user chain, pid filter (another burner runs), kernel frames in syscalls
took chain
$T/fp-burn 4 &
$D -d 8 -e on,life -- $T/fp-burn 3 >/tmp/chain 2>/tmp/chain.err || fail chain "$(tail -n 2 /tmp/chain.err)"
wait
took syscall
$D -d 8 -e on,life -- $T/syscall-burn 3 >/tmp/sys 2>/tmp/sys.err || fail syscall "$(tail -n 2 /tmp/sys.err)"

# off-CPU, default (deferred where finish_task_switch can be hooked) and parked
took offcpu
$D -d 20 -e off,life -- $T/offcpu-wait 8 >/tmp/off 2>/tmp/off.err || fail offcpu "$(tail -n 2 /tmp/off.err)"
grep "^ember: bpf" /tmp/off.err | sed 's/^/FLAVOUR off-cpu: /'
took offcpu-parked
EMBER_BPF_OFFCPU=parked $D -d 20 -e off,life -- $T/offcpu-wait 8 >/tmp/offp 2>/tmp/offp.err ||
	fail offcpu-parked "$(tail -n 2 /tmp/offp.err)"
grep "^ember: bpf" /tmp/offp.err | sed 's/^/FLAVOUR off-cpu forced: /'
took offcpu-raw
EMBER_BPF_RAW_TP=1 $D -d 20 -e off,life -- $T/offcpu-wait 5 >/tmp/offr 2>/tmp/offr.err ||
	fail offcpu-raw "$(tail -n 2 /tmp/offr.err)"
grep "^ember: bpf" /tmp/offr.err | sed 's/^/FLAVOUR raw_tp forced: /'

# -e lock: futex waits and wakers; kernel mmap_lock contention where the
# kernel has lock:contention_* (5.19+; else the one line saying so); a
# futex storm on distinct and unmapped addresses; a table too small
took lock
$D -d 30 -e lock,life -W -L 100000 -- $T/lock-wait contend 20 >/tmp/lock 2>/tmp/lock.err ||
	fail lock "$(tail -n 2 /tmp/lock.err)"
grep "^ember: " /tmp/lock.err | grep -i lock | sed 's/^/FLAVOUR lock: /'
took lock-kernel
$D -d 30 -e lock,life -W -L 10000 -- $T/lock-wait mmap 3 4 >/tmp/lockk 2>/tmp/lockk.err ||
	fail lock-kernel "$(tail -n 2 /tmp/lockk.err)"
took lock-storm
$D -d 60 -q -e lock,life -L 10000 -- $T/lock-wait storm 200000 >/tmp/lockstorm 2>/tmp/lockstorm.err ||
	fail lock-storm "$(tail -n 2 /tmp/lockstorm.err)"
took lock-overflow
EMBER_BPF_LOCK_INFLIGHT=16 $D -d 30 -e lock,life -L 10000 -- $T/lock-wait many 64 300 \
	>/tmp/lockovf 2>/tmp/lockovf.err || fail lock-overflow "$(tail -n 2 /tmp/lockovf.err)"

# mapping records (EMBER_REC_MMAP) through each hook this kernel takes:
# the default order (fexit/mmap_region first), and each hook forced; the
# program's executable and the loader must be told, as /proc says them
took mmap
echo "FLAVOUR mmap kallsyms: $(grep -E ' (perf_event_mmap|mmap_region)' /proc/kallsyms | awk '{ printf "%s %s; ", $2, $3 }')"
for m in default fexit kprobe tp; do
	if [ $m = default ]; then mm=; else mm=$m; fi
	EMBER_BPF_VERBOSE=1 EMBER_BPF_MMAP=$mm $D -d 4 -e life -- $T/syscall-burn 1 \
		>/tmp/mmap.$m 2>/tmp/mmap.$m.err || fail mmap-$m "$(tail -n 2 /tmp/mmap.$m.err)"
	fl=$(grep -o "mappings [^,]*" /tmp/mmap.$m.err | head -n 1)
	n=$(grep -c "^MMAP .*path=/payload/tests/syscall-burn" /tmp/mmap.$m)
	ld=$(grep -c "^MMAP .*path=/.*ld-.*so" /tmp/mmap.$m)
	echo "FLAVOUR mmap $m: $fl, $n of the executable, $ld of the loader $(grep -h 'no mapping records' /tmp/mmap.$m.err | head -n 1)"
	echo "MMAPCHECK $m ${fl#mappings } $n $ld"
	gzip -c /tmp/mmap.$m >/out/mmap.$m.gz
done

# stalled consumer
# (burners outlast the slow program load under TCG; idle samples count too)
took lost
burn 8
sleep 0.3
$D -F 1000 -i -r 4096 -S 1000 -d 1 >/tmp/lost 2>/tmp/lost.err || fail lost "$(tail -n 2 /tmp/lost.err)"
kill $(jobs -p) 2>/dev/null
wait

# ember record end to end through eBPF, module loading disallowed so that
# --backend auto must choose eBPF by itself (agent payload, when shipped)
if [ -x /payload/agent/ember ]; then
	echo 1 >/proc/sys/kernel/modules_disabled
	cd /payload/agent || exit 1
	took auto
	./ember record -o /tmp/auto.folded -- $T/fp-burn 1 2>/tmp/auto.err
	echo "AUTO rc=$? $(head -n 1 /tmp/auto.err)"
	grep -q "main;fp_level1;fp_level2;fp_leaf" /tmp/auto.folded &&
		echo "AUTO-PROFILE fp chain"
	took e2e
	bash ./e2e.sh --backend bpf --ember ./ember --phases ./ember-phases \
		--freq 999 --scale 2 --out /tmp/e2e --shares per-thread 2>&1 |
		sed -n 's/^\(PASS\|FAIL\|SKIP\): /E2E-\1: /p'
	# -e faults: ember_faults loads and attaches on this kernel, bytes
	# per chain and in total against faultwork's truth
	if [ -x ./faultwork ]; then
		took faults
		sh ./check-faults.sh --ember ./ember --work ./faultwork --backend bpf \
			--label bpf_vm --rounds 8 --out /tmp/faults 2>&1 |
			sed -n 's/^\(PASS\|FAIL\|SKIP\): /E2E-\1: /p; s/^# /E2E-INFO: /p'
		# the same through the page-fault tracepoint hook (opt-in)
		took faults-tp
		EMBER_FAULTS_HOOK=tp sh ./check-faults.sh --ember ./ember \
			--work ./faultwork --backend bpf --label bpf_tp_vm \
			--rounds 8 --out /tmp/faults-tp 2>&1 |
			sed -n 's/^\(PASS\|FAIL\|SKIP\): /E2E-\1: /p; s/^# /E2E-INFO: /p'
	fi
	# -e lock: per call site against lockwork's truth, kinds, wakers,
	# mmap_lock (5.19+), futexstorm's bad input
	if [ -x ./lockwork ]; then
		took check-lock
		sh ./check-lock.sh --ember ./ember --work ./lockwork \
			--storm ./futexstorm --backend bpf --label bpf_vm --secs 6 \
			--storm-secs 3 --out /tmp/lock-check 2>&1 |
			sed -n 's/^\(PASS\|FAIL\|SKIP\): /E2E-\1: /p; s/^# /E2E-INFO: /p'
		for f in /tmp/lock-check/*.folded; do
			[ -e "$f" ] && gzip -c "$f" >"/out/lock-$(basename "$f").gz"
		done
	fi
	# -e alloc: the sampler preloaded, uprobes on its probe points
	if [ -x ./allocwork ]; then
		took check-alloc
		sh ./check-alloc.sh --ember ./ember --work ./allocwork --backend bpf \
			--label bpf_vm --lib /payload/agent/libember-alloc.so --rate 8192 \
			--warmup 3 --scale 0.5 --out /tmp/alloc 2>&1 |
			sed -n 's/^\(PASS\|FAIL\|SKIP\): /E2E-\1: /p; s/^# /E2E-INFO: /p'
	fi
	# user stacks without frame pointers, through the CFI tables
	if [ -x ./unwind-gcc/nofp-work ]; then
		took nofp
		sh ./check-nofp.sh --ember ./ember --work ./unwind-gcc \
			--label bpf_vm --backend bpf --secs 4 --warmup 3 --out /tmp/nofp 2>&1 |
			sed -n 's/^\(PASS\|FAIL\|SKIP\): /E2E-\1: /p; s/^# /E2E-INFO: /p'
		took nofp-clang
		sh ./check-nofp.sh --ember ./ember --work ./unwind-clang \
			--label bpf_vm_clang --backend bpf --secs 4 --warmup 3 --out /tmp/nofp 2>&1 |
			sed -n 's/^\(PASS\|FAIL\|SKIP\): /E2E-\1: /p; s/^# /E2E-INFO: /p'
		took oracle
		sh ./check-oracle.sh --ember ./ember --work ./unwind-gcc \
			--label bpf_vm --backend bpf --warmup 3 --freq 199 --out /tmp/nofp 2>&1 |
			sed -n 's/^\(PASS\|FAIL\|SKIP\): /E2E-\1: /p; s/^# /E2E-INFO: /p'
		for f in /tmp/nofp/*.folded; do
			[ -e "$f" ] && gzip -c "$f" >"/out/nofp-$(basename "$f").gz"
		done
	fi
	cd /tmp || exit 1
fi

took end
for f in rate chain sys off offp offr lost lock lockk lockstorm lockovf; do
	gzip -c /tmp/$f >/out/$f.gz
	cp /tmp/$f.err /out/$f.err 2>/dev/null
done
echo "GUEST-DONE"
