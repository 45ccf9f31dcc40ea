#!/usr/bin/env bash
# The eBPF backend on this host's kernel: records from bpf/ember.bpf.c read
# through agent/source/source_bpf.c by selftests/bpf/bpf-dump, checked by
# selftests/bpf/bpf-check.py against workloads with known stacks and waits.
# Needs root (CAP_BPF + CAP_PERFMON) and /sys/kernel/btf/vmlinux.
set -uo pipefail
cd "$(dirname "$0")/../.."
. selftests/lib.sh

O=bpf/.output/tests
DUMP=$O/bpf-dump
CHECK=selftests/bpf/bpf-check.py
TMP=$(mktemp -d /tmp/ember-bpf.XXXXXX)
CG=""
BG=()
cleanup() {
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ -n "$CG" ]; then
		rmdir "$CG/child" "$CG" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# check NAME COMMAND...: PASS with the checker's summary, or FAIL with it.
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "  $name: $(printf '%s' "$out" | tail -n 1)"
		t_pass "$name"
	else
		t_fail "$name" "$(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"
	fi
}

if ! out=$(make -s bpf-tests 2>&1); then
	t_fail bpf-build "$(printf '%s' "$out" | tail -n 5 | tr '\n' ' ')"
	exit 0
fi
t_pass bpf-build
# the programs' own frames within what 5.10-6.12's verifiers allow
check bpf-stack-frames python3 selftests/bpf/check-stack.py bpf/.output/ember.bpf.o

# the reader against random ring content (ASan/UBSan; needs no privileges)
check bpf-reader-fuzz $O/ring-fuzz

if [ "$(id -u)" -ne 0 ]; then
	t_skip bpf-host "not root: the eBPF backend needs CAP_BPF and CAP_PERFMON"
	exit 0
fi
if [ ! -r /sys/kernel/btf/vmlinux ]; then
	t_skip bpf-host "no /sys/kernel/btf/vmlinux on this kernel"
	exit 0
fi

# pid of the process bpf-dump started (its EXEC record)
exec_pid() { awk '/^EXEC/ { sub("pid=", "", $3); print $3; exit }' "$1"; }

# One CPU burner per online CPU, so every CPU is busy and sampled.
burn_all() {
	local n
	for n in $(seq "$(nproc)"); do
		$O/fp-burn "$1" &
		BG+=($!)
	done
}
burn_wait() {
	for p in "${BG[@]}"; do wait "$p" 2>/dev/null; done
	BG=()
}

# --- on-CPU rate: every CPU at the asked frequency (within 10%) ---
for hz in 99 997; do
	burn_all 4
	sleep 0.2
	$DUMP -d 3 -F $hz >"$TMP/rate$hz" 2>"$TMP/rate$hz.err"
	burn_wait
	check bpf-rate-${hz}hz $CHECK rate "$TMP/rate$hz" $hz
done
burn_all 3
sleep 0.2
EMBER_BPF_TRANSPORT=perfbuf $DUMP -d 2 >"$TMP/rate-pb" 2>"$TMP/rate-pb.err"
burn_wait
check bpf-rate-perfbuf $CHECK rate "$TMP/rate-pb" 99

# hardware cycles asked where there is no PMU (no "cpu" event source, as
# on this project's hosts): cpu-clock samples, and a message saying so
burn_all 2
$DUMP -d 1 -C >"$TMP/cycles" 2>"$TMP/cycles.err"
burn_wait
if ! grep -q "^SAMPLE" "$TMP/cycles"; then
	t_fail bpf-cycles-fallback "no samples with -C: $(head -c 200 "$TMP/cycles.err")"
elif [ -d /sys/bus/event_source/devices/cpu ]; then
	t_pass bpf-cycles-fallback	# a PMU is there: cycles used
elif grep -q "cycles not available" "$TMP/cycles.err"; then
	t_pass bpf-cycles-fallback
else
	t_fail bpf-cycles-fallback "no PMU, yet no fallback message: $(head -c 200 "$TMP/cycles.err")"
fi

# --- user call chains by frame pointer, and the pid filter ---
$O/fp-burn 3 &		# another process the filter must exclude
BG+=($!)
$DUMP -d 5 -e on,life -- $O/fp-burn 2 >"$TMP/chain" 2>"$TMP/chain.err"
burn_wait
pid=$(exec_pid "$TMP/chain")
check bpf-user-chain $CHECK chain "$TMP/chain" "${pid:-0}" fp_leaf,fp_level2,fp_level1,main
check bpf-pid-filter $CHECK only "$TMP/chain" "${pid:-0}"

# --- the pid filter changed while running (set_filter) ---
$O/fp-burn 5 &
a=$!
$O/fp-burn 5 &
b=$!
BG+=($a $b)
$DUMP -d 4 -p $a -P $b >"$TMP/switch" 2>"$TMP/switch.err"
burn_wait
check bpf-filter-change $CHECK switch "$TMP/switch" $a $b

# --- kernel frames above the user frames, in a syscall ---
$DUMP -d 5 -e on,life -- $O/syscall-burn 2 >"$TMP/sys" 2>"$TMP/sys.err"
pid=$(exec_pid "$TMP/sys")
check bpf-kernel-under-user $CHECK syscall "$TMP/sys" "${pid:-0}" \
	sc_raw_read,sc_write_loop,sc_level1,main

# --- cgroup v2 filter, descendants included ---
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -z "$cg2" ]; then
	t_skip bpf-cgroup-filter "no cgroup v2 hierarchy mounted"
else
	CG="$cg2/ember-bpf-test.$$"
	mkdir -p "$CG/child"
	sh -c "echo \$\$ > $CG/child/cgroup.procs && exec $O/fp-burn 3" &
	BG+=($!)
	inpid=$!
	$O/fp-burn 3 &
	BG+=($!)
	sleep 0.3
	$DUMP -d 2 -c "$CG" >"$TMP/cg" 2>"$TMP/cg.err"
	burn_wait
	want_cg=$(stat -c %i "$CG/child")
	if ! grep -q "^SAMPLE" "$TMP/cg"; then
		t_fail bpf-cgroup-filter "no samples from the cgroup: $(head -c 200 "$TMP/cg.err")"
	elif grep "^SAMPLE" "$TMP/cg" | grep -qv " cg=$want_cg pid=$inpid "; then
		t_fail bpf-cgroup-filter "records from outside $CG/child: $(grep "^SAMPLE" "$TMP/cg" | grep -v " pid=$inpid " | head -n 1 | cut -c 1-160)"
	else
		echo "  bpf-cgroup-filter: $(grep -c '^SAMPLE' "$TMP/cg") samples, all pid $inpid in cgroup $want_cg"
		t_pass bpf-cgroup-filter
	fi
fi

# --- off-CPU: per-function blocked time vs the program's own clock ---
# (parked: the fallback design, forced, so it stays tested on a host
# where the deferred one attaches)
for flavour in tp_btf raw_tp parked; do
	env=()
	[ $flavour = raw_tp ] && env=(EMBER_BPF_RAW_TP=1)
	[ $flavour = parked ] && env=(EMBER_BPF_OFFCPU=parked)
	rounds=15
	[ $flavour != tp_btf ] && rounds=8
	env "${env[@]}" $DUMP -d 10 -e off,life -- $O/offcpu-wait $rounds \
		>"$TMP/off-$flavour" 2>"$TMP/off-$flavour.err"
	pid=$(exec_pid "$TMP/off-$flavour")
	check bpf-offcpu-$flavour $CHECK offcpu "$TMP/off-$flavour" "${pid:-0}" \
		"$(grep MEASURED "$TMP/off-$flavour.err")"
	sed -n 's/^ember: bpf: /  info: bpf-offcpu-'$flavour': /p' "$TMP/off-$flavour.err"
	check bpf-lifecycle-$flavour $CHECK lifecycle "$TMP/off-$flavour" \
		"${pid:-0}" $O/offcpu-wait
done

# --- off-CPU threshold, sampling and a full in-flight table ---
$DUMP -d 10 -e off,life -m 25000000 -- $O/offcpu-wait 10 >"$TMP/min" 2>"$TMP/min.err"
pid=$(exec_pid "$TMP/min")
short=$(awk -v p="pid=${pid:-0}" '$1 == "OFFCPU" && $5 == p { sub("weight=", "", $3); if ($3 + 0 < 25000000) n++ } END { print n + 0 }' "$TMP/min")
long=$(awk -v p="pid=${pid:-0}" '$1 == "OFFCPU" && $5 == p { n++ } END { print n + 0 }' "$TMP/min")
if [ "$short" -eq 0 ] && [ "$long" -ge 10 ]; then
	echo "  bpf-offcpu-threshold: $long intervals >= 25 ms, none shorter"
	t_pass bpf-offcpu-threshold
else
	t_fail bpf-offcpu-threshold "$short records under 25 ms, $long in all (want >= 10: the 30 ms sleeps)"
fi
# Sampling is per interval: count only the intervals the workload makes
# deterministically (the main thread's 3 waits a round; preemptions and the
# helper thread vary with the host's load), and check that denominator on
# the unsampled tp_btf run above (15 rounds) before using it.
pid=$(exec_pid "$TMP/off-tp_btf")
full=$($CHECK waits "$TMP/off-tp_btf" "${pid:-0}")
if [ "$full" = 45 ]; then
	$DUMP -d 10 -e off,life -s 500000 -- $O/offcpu-wait 20 >"$TMP/ppm" 2>"$TMP/ppm.err"
	pid=$(exec_pid "$TMP/ppm")
	check bpf-offcpu-sampling $CHECK sampled "$TMP/ppm" "${pid:-0}" 500000 60
else
	t_fail bpf-offcpu-sampling "unsampled run: $full main-thread waits in 15 rounds, not 45: the denominator is not known"
fi
EMBER_BPF_INFLIGHT=1 $DUMP -d 10 -e off -- $O/offcpu-wait 5 >"$TMP/ovf" 2>"$TMP/ovf.err"
ovf=$(awk '/^STATS/ { for (i = 1; i <= NF; i++) if ($i ~ /^overflow=/) { sub("overflow=", "", $i); print $i } }' "$TMP/ovf")
if [ "${ovf:-0}" -gt 0 ] && grep -q "^OFFCPU" "$TMP/ovf"; then
	echo "  bpf-offcpu-overflow: in-flight table of 1: $ovf intervals counted as overflow"
	t_pass bpf-offcpu-overflow
else
	t_fail bpf-offcpu-overflow "overflow=${ovf:-none} with a 1-entry in-flight table: $(tail -n 2 "$TMP/ovf.err" | tr '\n' ' ')"
fi

# --- -e lock: futex waits on a mutex and a condvar with their wakers, the
# kernel's mmap_lock where lock:contention_* exist, bad futex input ---
for flavour in tp_btf raw_tp; do
	env=()
	[ $flavour = raw_tp ] && env=(EMBER_BPF_RAW_TP=1)
	env "${env[@]}" $DUMP -d 20 -e lock,life -W -L 100000 -- $O/lock-wait contend 30 \
		>"$TMP/lock-$flavour" 2>"$TMP/lock-$flavour.err"
	check bpf-lock-futex-$flavour $CHECK lock "$TMP/lock-$flavour" "$TMP/lock-$flavour.err"
done
# a machine where nothing mounted tracefs (a fresh cloud VM, a container):
# the syscall tracepoints attach by their tracefs id, so ember mounts it.
# Tried in a private mount namespace with tracefs unmounted there.
if command -v unshare >/dev/null; then
	t_without_tracefs $DUMP -d 5 -e lock,life -W -L 100000 -- $O/lock-wait contend 5 \
		>"$TMP/lock-notracefs" 2>"$TMP/lock-notracefs.err"
	if grep -q '^MUTEX' "$TMP/lock-notracefs.err" &&
		grep -q 'tracefs was not mounted: mounted it' "$TMP/lock-notracefs.err"; then
		t_pass bpf-lock-without-tracefs
	else
		t_fail bpf-lock-without-tracefs "$(head -c 300 "$TMP/lock-notracefs.err")"
	fi
else
	t_fail bpf-lock-without-tracefs "no unshare (util-linux)"
fi
if [ -d /sys/kernel/tracing/events/lock/contention_begin ] ||
	[ -d /sys/kernel/debug/tracing/events/lock/contention_begin ]; then
	$DUMP -d 20 -e lock,life -W -L 10000 -- $O/lock-wait mmap 2 8 \
		>"$TMP/lockk" 2>"$TMP/lockk.err"
	pid=$(exec_pid "$TMP/lockk")
	check bpf-lock-kernel-mmap $CHECK lock-kernel "$TMP/lockk" "${pid:-0}" 10
else
	$DUMP -d 3 -e lock,life -- $O/lock-wait contend 2 >"$TMP/lockk" 2>"$TMP/lockk.err"
	if grep -q "kernel lock contention .* not available on this kernel" "$TMP/lockk.err"; then
		t_pass bpf-lock-kernel-said-missing
	else
		t_fail bpf-lock-kernel-said-missing "no line saying so: $(head -c 200 "$TMP/lockk.err")"
	fi
fi
# a million distinct futex addresses, then a million unmapped ones: every
# wait followed and let go (the table is per thread, never per address)
$DUMP -d 60 -q -e lock,life -L 10000 -- $O/lock-wait storm 1000000 \
	>"$TMP/lockstorm" 2>"$TMP/lockstorm.err"
check bpf-lock-storm $CHECK lock-stats "$TMP/lockstorm" lock_waits:1900000
# more threads waiting at once than the table holds: counted, not followed
EMBER_BPF_LOCK_INFLIGHT=16 $DUMP -d 20 -e lock,life -L 10000 -- $O/lock-wait many 64 200 \
	>"$TMP/lockovf" 2>"$TMP/lockovf.err"
check bpf-lock-overflow $CHECK lock-stats "$TMP/lockovf" lock_overflow:1 got_lock:8

# --- a stalled consumer: losses counted exactly, both transports ---
for tr in ringbuf perfbuf; do
	burn_all 3
	sleep 0.2
	EMBER_BPF_TRANSPORT=$tr $DUMP -F 1000 -r 4096 -S 1000 -d 1 \
		>"$TMP/lost-$tr" 2>"$TMP/lost-$tr.err"
	burn_wait
	check bpf-lost-exact-$tr $CHECK lost "$TMP/lost-$tr"
done

# --- a build host without BTF: the hand-written vmlinux-min.h, loaded here ---
if out=$(make -s BPF_OUT="$TMP/nobtf" BPF_VMLINUX_BTF=/nonexistent \
	"$TMP/nobtf/tests/bpf-dump" 2>&1); then
	"$TMP/nobtf/tests/bpf-dump" -d 1 -e on,off,life -q >"$TMP/nobtf.out" 2>&1
	if grep -q "vmlinux-min.h" <<<"$out" &&
		grep -Eq "^STATS samples=[1-9].* got_offcpu=[1-9]" "$TMP/nobtf.out"; then
		t_pass bpf-build-without-btf
	else
		t_fail bpf-build-without-btf "$(tail -n 3 "$TMP/nobtf.out" | tr '\n' ' ')"
	fi
else
	t_fail bpf-build-without-btf "$(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"
fi

# --- CPython frames in user stacks (issue 24): a live python3.11 ---
selftests/bpf/check-python.sh

# --- without privileges: a clear refusal, no crash ---
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	$DUMP -d 1 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -q "CAP_BPF and CAP_PERFMON" <<<"$out"; then
	t_pass bpf-unprivileged-refused
else
	t_fail bpf-unprivileged-refused "rc=$rc: $out"
fi
exit 0
