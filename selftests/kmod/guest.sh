#!/bin/sh
# ember.ko tests, run as root inside a test VM (busybox sh) by
# selftests/suites/30-kmod-vm.sh through selftests/vm/run-vm.sh.
# Prints one PASS:/FAIL:/SKIP: line per test; the harness prefixes the
# kernel and fails the run on any WARNING/BUG/Oops in the guest log.
#
# Needs: /payload/kmod/bin/* (make kmod-guest) and ember.ko at
# /payload/ember.ko or /payload/kmod/ember.ko.

HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$HERE/bin
ET=$BIN/ember-test
KO=""
for k in /payload/ember.ko "$HERE/ember.ko" "$HERE/../ember.ko"; do
	[ -f "$k" ] && KO=$k && break
done
W=/tmp/ember-kmod
mkdir -p $W
NCPU=$(grep -c '^processor' /proc/cpuinfo)
# tests the issue names can be run on their own: guest.sh NAME...
ONLY="$*"

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1: $2"; }
skip() { echo "SKIP: $1: $2"; }
# "info: took NAME S s" when the next test starts: where the suite's time goes
took_name= took_t0=
took() {
	took_now=$(cut -d' ' -f1 /proc/uptime)
	[ -z "$took_name" ] ||
		echo "info: took $took_name $(awk -v a="$took_t0" -v b="$took_now" 'BEGIN { printf "%.1f", b - a }') s"
	took_name=$1 took_t0=$took_now
}
want() { { [ -z "$ONLY" ] || echo " $ONLY " | grep -q " $1 "; } && took "$1"; }

# value of key=N in the line of file $1 starting with $2
kv() { grep "^$2" "$1" | head -n 1 | tr ' ' '\n' | sed -n "s/^$3=//p"; }

bg_pids=""
spawn() { "$@" & bg_pids="$bg_pids $!"; LAST=$!; }
reap() {
	for p in $bg_pids; do kill "$p" 2>/dev/null; done
	for p in $bg_pids; do wait "$p" 2>/dev/null; done
	bg_pids=""
}

load() {
	grep -q '^ember ' /proc/modules && return 0
	insmod "$KO" "$@"
}

# ---------------------------------------------------------------- load
t_load() {
	if [ -z "$KO" ]; then
		fail load "ember.ko not found in /payload"
		return 1
	fi
	if ! out=$(load 2>&1); then
		fail load "insmod: $out"
		return 1
	fi
	mode=$(ls -l /dev/ember 2>/dev/null | cut -c1-10)
	owner=$(ls -l /dev/ember 2>/dev/null | awk '{print $3}')
	if [ "$mode" != "crw-------" ] || [ "$owner" != root ]; then
		fail load "/dev/ember is '$mode' owned by '$owner', want crw------- root"
		return 1
	fi
	if ! $ET info >$W/info 2>&1; then
		fail load "GET_INFO: $(cat $W/info)"
		return 1
	fi
	pass "load ($(cat $W/info))"
}

# ---------------------------------------------------- rate on every CPU
# every CPU (idle included) must deliver FREQ samples/s within 10%.
#
# Under TCG a vCPU the host does not schedule loses hrtimer expiries for
# everything in the guest, ember or not; the reference ticker measures what
# the VM's timers delivered in the same seconds. An attempt that misses the
# rate while the reference itself got < 95% of FREQ says nothing about
# ember, so it is measured again (at most 3 times). A miss with a healthy
# reference fails at once, and so do 3 starved attempts: the pass condition
# is never relaxed.
rate_attempt() {
	"$BIN/ticker" 4 $f >$W/ticker 2>&1 &
	tk=$!
	$ET run -f $f -i -d 4 -q >$W/rate 2>&1
	wait $tk
	ref=$(sed -n 's/ticker rate_hz=//p' $W/ticker)
	bad=""
	n=0
	for c in $(seq 0 $((NCPU - 1))); do
		line=$(grep "^stats cpu=$c " $W/rate)
		# from the samples' own timestamps, first to last on that CPU
		rate=$(echo "$line" | tr ' ' '\n' | sed -n 's/^ts_rate_hz=//p')
		rec=$(echo "$line" | tr ' ' '\n' | sed -n 's/^read=//p')
		[ -n "$rate" ] || { bad="$bad cpu$c:no-stats"; continue; }
		ok=$(awk -v r="$rate" -v f=$f 'BEGIN { print (r >= 0.9 * f && r <= 1.1 * f) }')
		[ "$ok" = 1 ] || bad="$bad cpu$c:${rate}Hz"
		[ "${rec:-0}" -gt 0 ] || bad="$bad cpu$c:no-records"
		n=$((n + 1))
	done
	[ $n -eq "$NCPU" ] || bad="$bad only-$n-cpus"
}

t_rate() {
	f=${EMBER_RATE_HZ:-99}
	starved=""
	for attempt in 1 2 3; do
		rate_attempt
		if [ -z "$bad" ]; then
			pass "rate: $f Hz on all $NCPU CPUs within 10% ($(grep '^stats' $W/rate | sed 's/.*ts_rate_hz=//' | tr '\n' ' ')Hz; reference hrtimer $ref Hz; attempt $attempt)"
			return
		fi
		healthy=$(awk -v r="${ref:-0}" -v f=$f 'BEGIN { print (r >= 0.95 * f) }')
		if [ "$healthy" = 1 ]; then
			fail rate "asked $f Hz:$bad while a user-space hrtimer got $ref Hz (the VM delivered its timers: ember missed samples); $(grep -E '^(stats|summary)|ember-test' $W/rate | tr '\n' ' ')"
			return
		fi
		starved="$starved [attempt $attempt:$bad; reference $ref Hz]"
		echo "  rate: attempt $attempt inconclusive, the VM was starved (reference hrtimer $ref Hz < 95% of $f); measuring again"
	done
	fail rate "asked $f Hz: the VM was starved in all 3 attempts, nothing proven:$starved"
}

# ----------------------------------------------- user call chain by name
# ustack_of NAME PROG: PROG's samples must be main>level1>...>leaf_spin
ustack_of() {
	spawn "$BIN/$2" 6
	pid=$LAST
	sleep 0.3
	$ET run -p "$pid" -f 200 -d 3 -q -F -N "$BIN/$2.nm" >$W/fp 2>&1
	reap
	total=$(kv $W/fp summary read)
	chain=$(grep '^folded' $W/fp | grep ';main;level1;level2;level3;leaf_spin$' |
		awk '{ s += $2 } END { print s + 0 }')
	if [ "${total:-0}" -ge 100 ] && [ $((chain * 100)) -ge $((total * 80)) ]; then
		pass "$1: $chain/$total samples are main>level1>level2>level3>leaf_spin"
	else
		fail "$1" "$chain/${total:-0} samples with the full chain; top: $(grep '^folded' $W/fp | sort -k2 -n -r | head -n 3 | tr '\n' ' ')"
	fi
}

t_ustack() {
	ustack_of ustack fpbusy
}

# arm64: fpbusy built with -mbranch-protection=pac-ret (the arm64 payload
# only): every return address in its frame records is signed, and the
# chain is whole only if each one lost its PAC (the kernel's mask)
t_ustack_pac() {
	if [ ! -x "$BIN/fpbusy-pac" ]; then
		skip ustack-pac "no fpbusy-pac in the payload (arm64 only)"
		return
	fi
	if ! grep -qw paca /proc/cpuinfo; then
		skip ustack-pac "the CPU has no pointer authentication (no paca in /proc/cpuinfo)"
		return
	fi
	ustack_of ustack-pac fpbusy-pac
}

# ------------------------------------ kernel frames under a syscall
t_kstack() {
	spawn "$BIN/sysbusy" 6
	pid=$LAST
	sleep 0.3
	$ET run -p "$pid" -f 200 -d 3 -q -F -K -N "$BIN/sysbusy.nm" >$W/sys 2>&1
	reap
	total=$(kv $W/sys summary read)
	both=$(grep '^folded' $W/sys |
		grep ';main;read_loop;raw_read;.*_\[k\]' | grep 'vfs_read_\[k\]' |
		awk '{ s += $2 } END { print s + 0 }')
	if [ "${total:-0}" -ge 100 ] && [ $((both * 100)) -ge $((total * 50)) ]; then
		pass "kstack: $both/$total samples are main>read_loop>raw_read>...>vfs_read>... (user above kernel)"
	else
		fail kstack "$both/${total:-0}; top: $(grep -v '^folded' $W/sys | head -n 5 | tr '\n' ' ') $(grep '^folded' $W/sys | sort -k2 -n -r | head -n 3 | tr '\n' ' ')"
	fi
}

# ------------------------------------------------ 32-bit compat tasks
t_compat32() {
	if [ ! -x "$BIN/compat32" ]; then
		skip compat32 "no compat32 in the payload"
		return
	fi
	spawn "$BIN/compat32"
	pid=$LAST
	sleep 0.3
	$ET run -p "$pid" -f 200 -d 2 -F -N "$BIN/compat32.nm" >$W/c32 2>&1
	reap
	total=$(grep -c "^sample .* pid=$pid " $W/c32)
	compat=$(grep "^sample .* pid=$pid " $W/c32 | grep -c ' flags=0x[0-9a-f]*[2367abef][0-9a-f] ')
	if [ "$(uname -m)" = aarch64 ]; then
		# AArch32: no frame record to trust, so the PC alone, flagged
		# COMPAT and USER_CUT, never a frame above it
		cut=$(grep "^sample .* pid=$pid " $W/c32 | grep -c ' flags=0x[0-9a-f]*[abef][0-9a-f] ')
		one=$(grep "^sample .* pid=$pid " $W/c32 | grep -c ' nu=1 ')
		pc=$(grep -E '^folded [0-9]+ [0-9]+ compat32;(c32_leaf|c32_mid|_start)(;|$)' $W/c32 |
			awk '{ s += $2 } END { print s + 0 }')
		if [ "$total" -ge 50 ] && [ "$compat" -eq "$total" ] &&
			[ "$cut" -eq "$total" ] && [ "$one" -eq "$total" ] &&
			[ $((pc * 100)) -ge $((total * 80)) ]; then
			pass "compat32: $total samples of an AArch32 task, all flagged COMPAT and USER_CUT with the PC alone, $pc in compat32's code"
		else
			fail compat32 "samples=$total compat=$compat cut=$cut pc-only=$one in-code=$pc; $(grep -m2 '^sample' $W/c32)"
		fi
		return
	fi
	chain=$(grep '^folded' $W/c32 | grep ';_start;c32_mid;c32_leaf$' |
		awk '{ s += $2 } END { print s + 0 }')
	if [ "$total" -ge 50 ] && [ "$compat" -eq "$total" ] &&
		[ $((chain * 100)) -ge $((total * 80)) ]; then
		pass "compat32: $total samples of a 32-bit task, all flagged COMPAT, $chain with _start>c32_mid>c32_leaf"
	else
		fail compat32 "samples=$total compat=$compat chain=$chain; $(grep -m2 '^sample' $W/c32)"
	fi
}

# ------------------------------------------------------ tgid filter
t_filter_pid() {
	spawn "$BIN/fpbusy" 5
	a=$LAST
	spawn "$BIN/fpbusy" 5
	b=$LAST
	sleep 0.3
	$ET run -p "$a" -f 300 -d 2 >$W/fpid 2>&1
	reap
	mine=$(grep -c "^sample .* pid=$a " $W/fpid)
	other=$(grep '^sample ' $W/fpid | grep -vc " pid=$a ")
	filtered=$(kv $W/fpid summary filtered)
	if [ "$mine" -ge 50 ] && [ "$other" -eq 0 ] && [ "${filtered:-0}" -gt 0 ]; then
		pass "filter-pid: $mine samples of $a, none of $b or others ($filtered filtered)"
	else
		fail filter-pid "pid $a: $mine, others: $other, filtered: $filtered"
	fi
}

# ------------------------------------ SET_FILTER on a running session
t_filter_change() {
	spawn "$BIN/fpbusy" 5
	a=$LAST
	spawn "$BIN/fpbusy" 5
	b=$LAST
	sleep 0.3
	$ET run -p "$a" -s "1.5:$b" -f 300 -d 3 >$W/fchg 2>&1
	reap
	na=$(grep -c "^sample .* pid=$a " $W/fchg)
	nb=$(grep -c "^sample .* pid=$b " $W/fchg)
	other=$(grep '^sample ' $W/fchg | grep -v " pid=$a " | grep -vc " pid=$b ")
	lasta=$(grep "^sample .* pid=$a " $W/fchg | sed 's/.* t=\([0-9]*\) .*/\1/' | sort -n | tail -n 1)
	firstb=$(grep "^sample .* pid=$b " $W/fchg | sed 's/.* t=\([0-9]*\) .*/\1/' | sort -n | head -n 1)
	if [ "$na" -ge 20 ] && [ "$nb" -ge 20 ] && [ "$other" -eq 0 ] &&
		[ "${lasta:-0}" -lt "${firstb:-0}" ]; then
		pass "filter-change: $na samples of $a, then SET_FILTER, then $nb of $b only"
	else
		fail filter-change "a=$na b=$nb other=$other last-a=$lasta first-b=$firstb; $(grep -E 'refiltered|ember-test' $W/fchg)"
	fi
}

# ----------------------------------------- cgroup v2 subtree filter
t_filter_cgroup() {
	cg=/sys/fs/cgroup
	if [ ! -f $cg/cgroup.procs ]; then
		skip filter-cgroup "no cgroup v2 at $cg"
		return
	fi
	mkdir -p $cg/embt/sub
	spawn "$BIN/fpbusy" 5
	a=$LAST
	spawn "$BIN/fpbusy" 5
	b=$LAST
	echo "$a" >$cg/embt/sub/cgroup.procs
	id=$(stat -c %i $cg/embt)
	subid=$(stat -c %i $cg/embt/sub)
	sleep 0.3
	$ET run -g "$id" -f 300 -d 2 >$W/fcg 2>&1
	reap
	mine=$(grep -c "^sample .* pid=$a .* cg=$subid " $W/fcg)
	other=$(grep '^sample ' $W/fcg | grep -vc " pid=$a ")
	rmdir $cg/embt/sub $cg/embt 2>/dev/null
	if [ "$mine" -ge 50 ] && [ "$other" -eq 0 ]; then
		pass "filter-cgroup: $mine samples of $a in a child of cgroup $id, none of $b or others"
	else
		fail filter-cgroup "cgroup $id (child $subid): $mine of $a, $other others; $(grep -m1 '^sample' $W/fcg)"
	fi
}

# ------------------------------------------ full ring: drop, count, recover
t_ring_full() {
	spawn "$BIN/fpbusy" 7 "$NCPU"
	sleep 0.2
	# 16 KiB rings, 1 kHz, nothing read for 2 s: they overflow
	$ET run -r 16384 -f 1000 -i -n 2 -d 4 -q >$W/full 2>&1
	reap
	s=$(kv $W/full summary samples)
	f=$(kv $W/full summary filtered)
	r=$(kv $W/full summary records)
	l=$(kv $W/full summary lost)
	rd=$(kv $W/full summary read)
	cl=$(kv $W/full summary ctrl_lost)
	bad=$(kv $W/full summary corrupt)
	later=$(kv $W/full drain later)
	why=""
	[ "${l:-0}" -gt 0 ] || why="$why nothing-lost"
	[ $((s - f)) -eq $((r + l)) ] || why="$why samples-filtered($((s - f)))!=records+lost($((r + l)))"
	[ "$rd" = "$r" ] || why="$why read($rd)!=records($r)"
	[ "$cl" = "$l" ] || why="$why ctrl.lost($cl)!=lost($l)"
	[ "$bad" = 0 ] || why="$why corrupt=$bad"
	[ "${later:-0}" -gt 100 ] || why="$why no-recovery(later=$later)"
	if [ -z "$why" ]; then
		pass "ring-full: $s samples = $r records + $l lost (+$f filtered); all $rd read, $later after draining"
	else
		fail ring-full "$why; $(grep -E '^(summary|drain)' $W/full | tr '\n' ' ')"
	fi
}

# ------------------------------------------- poll wakes at the watermark
t_poll() {
	spawn "$BIN/fpbusy" 5 "$NCPU"
	# 4 KiB watermark at 1 kHz: poll (1 s timeout) returns readable often
	$ET run -w 4096 -W 1000 -f 1000 -d 2 -q >$W/poll1 2>&1
	# watermark = the whole ring at 99 Hz: never reached in 2 s
	$ET run -w 524288 -W 700 -f 99 -d 2 -q >$W/poll2 2>&1
	reap
	r1=$(kv $W/poll1 poll ready)
	r2=$(kv $W/poll2 poll ready)
	t2=$(kv $W/poll2 poll timeout)
	if [ "${r1:-0}" -ge 4 ] && [ "$r2" = 0 ] && [ "${t2:-0}" -ge 2 ]; then
		pass "poll: woken $r1 times past a 4 KiB watermark; never below a full-ring one ($t2 timeouts)"
	else
		fail poll "small watermark: $(grep '^poll' $W/poll1); full-ring watermark: $(grep '^poll' $W/poll2)"
	fi
}

# ----------------------- consumer positions from user space are not trusted
t_bogus_consumer() {
	spawn "$BIN/fpbusy" 4 "$NCPU"
	$ET run -B -f 500 -i -d 2 >$W/bogus 2>&1
	reap
	s=$(kv $W/bogus summary samples)
	f=$(kv $W/bogus summary filtered)
	r=$(kv $W/bogus summary records)
	l=$(kv $W/bogus summary lost)
	# rings 1 and 3 of the pattern hold a consumer that is merely behind:
	# those keep filling until full; the absurd ones accept nothing
	if [ "${s:-0}" -gt 0 ] && [ $((s - f)) -eq $((r + l)) ] && [ "${l:-0}" -gt 0 ]; then
		pass "bogus-consumer: absurd consumer positions: $r records, $l lost of $((s - f)), nothing written outside the rings"
	else
		fail bogus-consumer "$(grep '^summary' $W/bogus)"
	fi
}

# ------------------------------------- session owner, second controller
t_owner() {
	spawn sh -c "exec $ET hold 4 -f 100 >/dev/null"
	holder=$LAST
	sleep 1
	second=$($ET run -d 1 2>&1)
	stop2=$($ET stop 2>&1)
	running=$($ET info | sed -n 's/.*running=\([0-9]\).*/\1/p')
	wait "$holder"
	bg_pids=""
	sleep 0.5
	after=$($ET info | sed -n 's/.*running=\([0-9]\).*/\1/p')
	if echo "$second" | grep -q "another controller" &&
		echo "$stop2" | grep -q "another controller" &&
		[ "$running" = 1 ] && [ "$after" = 0 ]; then
		pass "owner: a second controller gets EBUSY; the session stops when its socket closes"
	else
		fail owner "second: '$second' stop: '$stop2' running=$running after-close=$after"
	fi
}

# ------------------------------------------------- malformed requests
t_badreq() {
	bad=""
	n=0
	for r in freq0 freq-high freq-short freq-long unknown-attr readonly-attr \
		ring-not-pow2 ring-huge kstack-high events-zero events-unknown \
		flags-unknown clock-unknown pids-odd pids-too-many watermark-zero \
		ppm-high fault-period0 fault-period-high truncated-attr garbage \
		filter-unknown; do
		out=$($ET badreq $r 2>&1) || bad="$bad $r($out)"
		n=$((n + 1))
	done
	running=$($ET info | sed -n 's/.*running=\([0-9]\).*/\1/p')
	if [ -z "$bad" ] && [ "$running" = 0 ]; then
		pass "badreq: all $n malformed requests refused, nothing started (e.g. $($ET badreq freq-high); $($ET badreq fault-period0))"
	else
		fail badreq "accepted:$bad running=$running"
	fi
}

# ------------------------------------------------------- unwind tables
# Tables and bindings over netlink: every kind of damage refused with a
# message, exact memory accounting, the cap, freeing at stop.
t_unwind() {
	out=$($ET unwind 2>&1)
	rc=$?
	if [ $rc -eq 0 ]; then
		pass "unwind-tables: $(echo "$out" | grep -c '^unwind ok') checks ($(echo "$out" | grep -m1 'refused' | cut -c1-120))"
	else
		fail unwind-tables "$(echo "$out" | grep -E 'UNWIND-FAIL|ember-test' | head -n 4 | tr '\n' ' ')"
	fi
}

# --------------------------------------------------- allocation probes
# `ember-test alloc` (allocprobe.c stands in for preload/ember_alloc.c):
# every refusal with its extack message, one ALLOC record per call with
# its weight, address and size and the caller in the user stack, FREE
# records, the pid filter, the semaphore up while attached and down after
# a refused ATTACH, DETACH and STOP. Then the probes must go when their
# owner is killed -9 and when the module is removed under them: the
# semaphore back to 0, no kernel warning.

# wait_for FILE ERE TENTHS: until a line of FILE matches
wait_for() {
	i=0
	while [ $i -lt "$3" ]; do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# the last semaphore value allocprobe's watch printed is 0
wait_sem0() {
	i=0
	while [ $i -lt 50 ]; do
		tail -n 1 "$1" | grep -q '^sem=0 ' && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# alloc_hold TAG: a watcher and a holder with probes attached
alloc_hold() {
	"$BIN/allocprobe" watch 20 >$W/aw$1 2>&1 &
	watcher=$!
	spawn sh -c "exec $ET alloc-hold $BIN/allocprobe 30 >$W/ah$1 2>&1"
	holder=$LAST
	wait_for $W/ah$1 '^attached' 100 || why="$why $1:no-attach($(cat $W/ah$1))"
	wait_for $W/aw$1 '^sem=[1-9]' 50 || why="$why $1:semaphore-not-raised"
}

t_alloc() {
	warn0=$(dmesg | grep -cE 'WARNING|BUG:|Oops|general protection')
	out=$($ET alloc "$BIN/allocprobe" 2>&1)
	rc=$?
	echo "$out" >$W/alloc
	if [ $rc -eq 3 ]; then
		skip alloc "$(echo "$out" | tail -n 1)"
		skip alloc-unload "no allocation probes in this kernel"
		return
	fi
	if [ $rc -eq 0 ]; then
		pass "alloc: $(echo "$out" | grep -c '^alloc ok') checks ($(echo "$out" | grep -m1 'records of A' | cut -c11-300))"
	else
		fail alloc "$(echo "$out" | grep -E 'ALLOC-FAIL|ember-test' | head -n 6 | tr '\n' ' ')"
	fi

	why=""
	# the owner killed -9: the socket's release stops the session
	alloc_hold kill
	kill -9 "$holder"
	reap
	wait_sem0 $W/awkill || why="$why kill:semaphore-still-up($(tail -n 1 $W/awkill))"
	running=$($ET info | sed -n 's/.*running=\([0-9]\).*/\1/p')
	[ "$running" = 0 ] || why="$why kill:session-still-running"
	kill "$watcher" 2>/dev/null
	wait "$watcher" 2>/dev/null
	# rmmod with the probes attached and their owner alive
	alloc_hold rmmod
	rmmod ember 2>$W/armm || why="$why rmmod-failed($(cat $W/armm))"
	wait_sem0 $W/awrmmod || why="$why rmmod:semaphore-still-up($(tail -n 1 $W/awrmmod))"
	kill -9 "$holder" 2>/dev/null
	reap
	kill "$watcher" 2>/dev/null
	wait "$watcher" 2>/dev/null
	load || why="$why reload-failed"
	warn=$(dmesg | grep -cE 'WARNING|BUG:|Oops|general protection')
	[ "$warn" -eq "$warn0" ] || why="$why kernel-warnings($((warn - warn0)))"
	if [ -z "$why" ]; then
		pass "alloc-unload: probes removed when their owner is killed -9 and by rmmod under them (semaphore back to 0), no kernel warning in either alloc test"
	else
		fail alloc-unload "$why"
	fi
}

# ------------------------------------------------------------ non-root
t_nonroot() {
	dev=$("$BIN/runas" 65534 65534 sh -c 'cat /dev/ember' 2>&1)
	drc=$?
	ctl=$("$BIN/runas" 65534 65534 $ET info 2>&1)
	crc=$?
	st=$("$BIN/runas" 65534 65534 $ET run -d 1 2>&1)
	src=$?
	if [ $drc -ne 0 ] && [ $crc -ne 0 ] && [ $src -ne 0 ] &&
		echo "$ctl" | grep -q "not permitted" &&
		echo "$st" | grep -q "not permitted"; then
		pass "nonroot: open refused ($dev); control refused ($ctl)"
	else
		fail nonroot "open rc=$drc '$dev'; info rc=$crc '$ctl'; start rc=$src '$st'"
	fi
}

# -------------------------------------------------- cycles fallback
t_cycles() {
	out=$($ET run -c -d 1 -q 2>&1)
	used=$(echo "$out" | sed -n 's/.*clock_used=\([0-9]*\).*/\1/p')
	caps=$(echo "$out" | sed -n 's/.*caps=\(0x[0-9a-f]*\).*/\1/p')
	if [ $((caps & 8)) -ne 0 ] && [ "$used" = 1 ]; then
		pass "cycles: hardware PMU present, cycles in use"
	elif [ "$used" = 0 ] && echo "$out" | grep -q "no hardware PMU"; then
		pass "cycles: no PMU, fell back to cpu-clock with a message"
	else
		fail cycles "$out"
	fi
}

# ---------------------------------------------------- CPU hotplug
t_hotplug() {
	c=/sys/devices/system/cpu/cpu1/online
	if [ "$NCPU" -lt 2 ] || [ ! -w $c ]; then
		skip hotplug "needs a second CPU that can go offline"
		return
	fi
	(sleep 1; echo 0 >$c; sleep 1; echo 1 >$c) &
	$ET run -f 200 -i -d 4 -q >$W/hp 2>&1
	wait
	on=$(grep '^stats cpu=1 ' $W/hp | sed -n 's/.*online=\([0-9]\).*/\1/p')
	s=$(grep '^stats cpu=1 ' $W/hp | sed -n 's/.* samples=\([0-9]*\).*/\1/p')
	# about 2 s of 4 offline: well under 4 s worth but more than 1 s worth
	if [ "$on" = 1 ] && [ "${s:-0}" -gt 200 ] && [ "${s:-0}" -lt 700 ]; then
		pass "hotplug: cpu1 went offline and back, sampled again ($s samples)"
	else
		fail hotplug "cpu1 online=$on samples=$s; $(grep '^stats' $W/hp | tr '\n' ' ')"
	fi
}

# ------------------------------------------------------ memory limits
# The rings' total cap refuses a START with a message; a START whose
# off-CPU table cannot be allocated fails cleanly (its error path once
# unregistered probes it never registered: a WARNING); an out-of-range
# offcpu_slots refuses the load instead of wrapping to 0.
t_limits() {
	why=""
	p=/sys/module/ember/parameters/ring_mem_max
	echo 1 >$p
	big=$($ET run -r 1048576 -d 0.2 -q 2>&1) && why="$why 1MiB-rings-started-under-1MiB-cap"
	echo "$big" | grep -q ring_mem_max || why="$why no-ring_mem_max-message($big)"
	$ET run -r 65536 -d 0.2 -q >/dev/null 2>&1 || why="$why small-rings-refused"
	echo 1024 >$p
	rmmod ember
	if ! load offcpu_slots=1048576; then
		fail limits "insmod offcpu_slots=1048576 failed"
		load
		return
	fi
	# 2^20 slots of 512 user frames: ~4 GiB, more than the VM has
	oom=$($ET run -e 7 -u 512 -d 0.5 -q 2>&1) && why="$why huge-offcpu-table-started"
	echo "$oom" | grep -q "off-CPU table" || why="$why no-table-message($oom)"
	running=$($ET info | sed -n 's/.*running=\([0-9]\).*/\1/p')
	[ "$running" = 0 ] || why="$why left-running"
	$ET run -d 0.5 -q >$W/lim 2>&1 || why="$why on-cpu-after-failure-refused"
	rmmod ember
	if insmod "$KO" offcpu_slots=4294967295 2>/dev/null; then
		why="$why offcpu_slots=2^32-1-loaded"
		rmmod ember
	fi
	dmesg | grep -q 'offcpu_slots must be in' || why="$why no-offcpu_slots-message"
	load || why="$why reload-failed"
	if [ -z "$why" ]; then
		pass "limits: rings above ring_mem_max refused ($(echo "$big" | tail -n 1 | cut -c1-90)); off-CPU table allocation failure refused cleanly ($(echo "$oom" | tail -n 1 | cut -c1-70)); offcpu_slots=2^32-1 refused at load"
	else
		fail limits "$why"
	fi
}

# --------------------------------------------- unload/reload in flight
t_unload() {
	# a reader holding /dev/ember pins the module: rmmod fails cleanly
	spawn sh -c "exec $ET run -f 1000 -i -d 3 -q >/dev/null"
	sleep 1
	if rmmod ember 2>$W/rm1; then
		fail unload "rmmod succeeded while /dev/ember was open and mapped"
		reap
		load
		return
	fi
	reap
	# a running session with no reader does not: unload mid-sampling,
	# with on-CPU, off-CPU and lifecycle probes all attached
	spawn sh -c "exec $ET hold 5 -e 7 -f 1000 -i >/dev/null"
	sleep 1
	if ! rmmod ember 2>$W/rm2; then
		fail unload "rmmod during sampling: $(cat $W/rm2)"
		reap
		return
	fi
	reap
	if ! load; then
		fail unload "reload failed"
		return
	fi
	# a busy process to sample: an idle guest gave 0-4 records in 1 s
	spawn "$BIN/fpbusy" 2
	$ET run -f 200 -d 1 -q >$W/re 2>&1
	reap
	r=$(kv $W/re summary records)
	warn=$(dmesg | grep -cE 'WARNING|BUG:|Oops|general protection')
	if [ "${r:-0}" -gt 20 ] && [ "$warn" -eq 0 ]; then
		pass "unload: busy while open ($(head -c 80 $W/rm1)); unloaded mid-session and reloaded, $r records after, no kernel warning"
	else
		fail unload "records after reload: $r, kernel warnings: $warn"
	fi
}

t_load || exit 0
want rate && t_rate
want ustack && t_ustack
want ustack-pac && t_ustack_pac
want kstack && t_kstack
want compat32 && t_compat32
want filter-pid && t_filter_pid
want filter-change && t_filter_change
want filter-cgroup && t_filter_cgroup
want ring-full && t_ring_full
want poll && t_poll
want bogus-consumer && t_bogus_consumer
want owner && t_owner
want badreq && t_badreq
want unwind && t_unwind
want alloc && t_alloc
want nonroot && t_nonroot
want cycles && t_cycles
want hotplug && t_hotplug
want limits && t_limits
want unload && t_unload
[ -f "$HERE/guest-offcpu.sh" ] && . "$HERE/guest-offcpu.sh"
[ -f "$HERE/guest-lock.sh" ] && . "$HERE/guest-lock.sh"
[ -f "$HERE/guest-python.sh" ] && . "$HERE/guest-python.sh"
[ -f "$HERE/guest-stress.sh" ] && . "$HERE/guest-stress.sh"
took end
rmmod ember 2>/dev/null
exit 0
