#!/usr/bin/env bash
# The eBPF backend on each test kernel (Debian 5.10, 6.1, 6.12) in a qemu
# VM: selftests/bpf/vm-guest.sh runs bpf-dump with the host-built test
# programs in the guest; the dumps come back through /out and are checked
# here with bpf-check.py, as suite 20-bpf does on the host: rate per CPU,
# user call chain, kernel frames in a syscall, pid filter, off-CPU time per
# function (default flavour, forced parked stacks, forced raw_tp), exec/exit
# records, exact losses, -e lock (futex waits and wakers, kernel mmap_lock
# contention from 5.19, a futex storm, a full table). Then, with kernel.modules_disabled=1, `ember
# record` with --backend auto must say it uses eBPF, and the agent's
# end-to-end checks (selftests/agent/e2e/e2e.sh: shares, call chains,
# kernel frames, off-CPU...) and -e faults against selftests/faults's
# ground truth must pass with --backend bpf, as they do with the module in
# suite 40, and so must -e lock against selftests/lock's ground truth and
# bad input. Any kernel WARNING/BUG in the guest fails the run.
#
# Kernels: 5.10 in CI (the oldest verifier, and the fallbacks it forces:
# raw_tp, no kprobe on perf_event_mmap); 5.10, 6.1 and 6.12 with
# EMBER_FULL=1 (~6 min each under TCG); EMBER_VM_KERNELS="6.1" names them.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

KERNELS=$(vm_kernels "5.10" "5.10 6.1 6.12")
RUNVM=selftests/vm/run-vm.sh
CHECK=selftests/bpf/bpf-check.py
HOSTDIR=$PWD/bpf/.output/tests
logs=${EMBER_TEST_LOGS:-selftests/logs}/vm
mkdir -p "$logs"
work=$(mktemp -d "${TMPDIR:-/tmp}/ember-21.XXXXXX")
trap '[ -n "${EMBER_KEEP:-}" ] || rm -rf "$work"' EXIT

for tool in qemu-system-x86_64 cpio busybox; do
	if ! command -v "$tool" >/dev/null; then
		for k in $KERNELS; do t_skip "bpf[$k]: VM" "$tool not installed (scripts/install-deps.sh)"; done
		exit 0
	fi
done
if ! out=$(make -s bpf-tests 2>&1); then
	t_fail "bpf-vm: build" "$(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"
	exit 0
fi

# the agent and its end-to-end test, when they build
agent_payload=()
if make -s agent-e2e unwind-work alloc-work lock-work >"$work/agent-build.log" 2>&1; then
	mkdir -p "$work/agent"
	cp agent/ember agent/gen/tests/ember-phases selftests/agent/e2e/e2e.sh "$work/agent/"
	# no-frame-pointer ground truth (CFI unwinding), gcc build
	cp -r agent/gen/tests/unwind-gcc agent/gen/tests/unwind-clang "$work/agent/"
	cp selftests/unwind/check-nofp.sh selftests/unwind/check-oracle.sh "$work/agent/"
	# -e faults ground truth: ember_faults through this kernel's verifier
	cp agent/gen/tests/faultwork selftests/faults/check-faults.sh "$work/agent/"
	# -e lock ground truth and bad input: the lock programs through this
	# verifier
	cp agent/gen/tests/lockwork agent/gen/tests/futexstorm \
		selftests/lock/check-lock.sh "$work/agent/"
	# -e alloc ground truth: the uprobe programs through this verifier
	cp agent/gen/tests/allocwork preload/libember-alloc.so \
		selftests/alloc/check-alloc.sh selftests/alloc/alloc-common.sh \
		"$work/agent/"
	# the rate test's reference timer (the module's VM test uses it too)
	${CC:-cc} -O2 -Wall -o "$work/agent/ticker" selftests/kmod/ticker.c ||
		t_fail "bpf-vm: ticker build" "selftests/kmod/ticker.c did not build"
	agent_payload=(--payload "$work/agent" --host-file /usr/bin/bash)
else
	t_fail "bpf-vm: agent build" "$(tail -n 3 "$work/agent-build.log" | tr '\n' ' ')"
fi

exec_pid() { zcat "$1" | awk '/^EXEC/ { sub("pid=", "", $3); print $3; exit }'; }

for k in $KERNELS; do
	T="bpf[$k]"
	out=$work/$k
	mkdir -p "$out"
	"$RUNVM" --kernel "$k" --payload bpf/.output/tests --payload selftests/bpf "${agent_payload[@]}" \
		--cmd "sh /payload/bpf/vm-guest.sh" --timeout 720 --out "$out" \
		--log "$logs/bpf-vm-$k.log" --result "$out/result" >"$out/console" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || ! grep -q GUEST-DONE "$out/console"; then
		t_fail "$T: VM run" "status $rc: $(grep -E 'run-vm:|GUEST-FAIL' "$out/console" | head -n 3 | tr '\n' ' ')"
		t_kernel_log_excerpt "$logs/bpf-vm-$k.log"
		continue
	fi
	t_pass "$T: VM run, clean kernel log"
	sed -n 's/^FLAVOUR /  info: '"$T"' /p' "$out/console"
	sed -n "s/^info: took /  info: $T took /p" "$out/console"
	grep '^GUEST-FAIL: ' "$out/console" | sed "s/^GUEST-FAIL: /FAIL: $T: /"

	export EMBER_KALLSYMS=$out/kallsyms.subset EMBER_PATH_MAP="/payload/tests=$HOSTDIR" EMBER_NCPUS=2
	c() {
		local name=$1 res
		shift
		if res=$("$@" 2>&1); then
			echo "  $T $name: $(printf '%s' "$res" | tail -n 1 | cut -c1-300)"
			t_pass "$T: $name"
		else
			t_fail "$T: $name" "$(printf '%s' "$res" | tail -n 2 | tr '\n' ' ' | cut -c1-400)"
		fi
	}
	c rate-99hz $CHECK rate-attempts 99 "$out/rate.1.gz" "$out/ticker.1" \
		"$out/rate.2.gz" "$out/ticker.2" "$out/rate.3.gz" "$out/ticker.3"
	pid=$(exec_pid "$out/chain.gz")
	c user-chain $CHECK chain "$out/chain.gz" "${pid:-0}" fp_leaf,fp_level2,fp_level1,main
	c pid-filter $CHECK only "$out/chain.gz" "${pid:-0}"
	pid=$(exec_pid "$out/sys.gz")
	c kernel-under-user $CHECK syscall "$out/sys.gz" "${pid:-0}" sc_raw_read,sc_write_loop,sc_level1,main
	for f in off offp offr; do
		pid=$(exec_pid "$out/$f.gz")
		name=offcpu-default
		[ $f = offp ] && name=offcpu-parked
		[ $f = offr ] && name=offcpu-raw_tp
		c $name $CHECK offcpu "$out/$f.gz" "${pid:-0}" "$(grep MEASURED "$out/$f.err")"
	done
	pid=$(exec_pid "$out/off.gz")
	c lifecycle $CHECK lifecycle "$out/off.gz" "${pid:-0}" /payload/tests/offcpu-wait
	c lost-exact $CHECK lost "$out/lost.gz"
	# mapping records: the default hook and each forced one; a hook this
	# kernel lacks must fall back to the next, then to none (never fail)
	for m in default fexit kprobe tp; do
		line=$(grep "^MMAPCHECK $m " "$out/console" | head -n 1)
		set -- $line
		hook=${3:-}; nexe=${4:-0}; nld=${5:-0}
		want=
		case $m in
		default|fexit) want=fexit/mmap_region ;;
		# the eBPF kprobe flavour runs nothing on 5.10 (agent/source/
		# source_bpf_lifecycle.c): not used there, none when forced
		kprobe) [ "$k" = 5.10 ] && want="from" || want=kprobe/perf_event_mmap ;;
		tp) [ "$k" = 5.10 ] && want="from" || want=sys_exit_mmap+exec ;;
		esac
		if [ "$hook" != "$want" ]; then
			t_fail "$T: mmap-$m" "hook '${hook}', expected '$want' (${line:-no MMAPCHECK line})"
		elif [ "$want" = from ]; then
			t_pass "$T: mmap-$m (not on $k: none, /proc)"
		elif [ "${nexe:-0}" -ge 1 ] && [ "${nld:-0}" -ge 1 ]; then
			t_pass "$T: mmap-$m ($hook: $nexe of the executable, $nld of the loader)"
		else
			t_fail "$T: mmap-$m" "$hook: $nexe records of the executable, $nld of the loader"
		fi
	done
	c lock-futex $CHECK lock "$out/lock.gz" "$out/lock.err"
	case $k in
	5.10)	# no lock:contention_* and no futex_waitv: said in one line
		if grep -q "kernel lock contention .* and futex_waitv waits .* not available on this kernel" \
			"$out/lockk.err"; then
			t_pass "$T: lock-kernel said missing"
		else
			t_fail "$T: lock-kernel said missing" "$(head -c 300 "$out/lockk.err")"
		fi ;;
	*)	pid=$(exec_pid "$out/lockk.gz")
		c lock-kernel-mmap $CHECK lock-kernel "$out/lockk.gz" "${pid:-0}" 3 ;;
	esac
	c lock-storm $CHECK lock-stats "$out/lockstorm.gz" lock_waits:390000
	c lock-overflow $CHECK lock-stats "$out/lockovf.gz" lock_overflow:1 got_lock:8
	if [ ${#agent_payload[@]} -gt 0 ]; then
		auto=$(grep '^AUTO rc=' "$out/console")
		if [ "$auto" = "AUTO rc=0 ember: module loading disabled (kernel.modules_disabled=1): using eBPF" ] &&
			grep -q '^AUTO-PROFILE fp chain' "$out/console"; then
			t_pass "$T: auto picks eBPF when module loading is disabled"
		else
			t_fail "$T: auto picks eBPF when module loading is disabled" \
				"${auto:-no AUTO line}; $(grep '^AUTO-PROFILE' "$out/console")"
		fi
		sed -n -E "s/^E2E-(PASS|FAIL|SKIP): (.*)/\1: $T: \2/p" "$out/console"
		sed -n "s/^E2E-INFO: /  info: $T /p" "$out/console"
		grep -q '^E2E-PASS' "$out/console" ||
			t_fail "$T: e2e" "no end-to-end result from the guest"
	fi
	unset EMBER_KALLSYMS EMBER_PATH_MAP EMBER_NCPUS
done
exit 0
