# Lock contention tests (issue 27, EMBER_EV_LOCK = 32); sourced by guest.sh,
# same helpers. The workload is lockwork-mini (see its header).

LOCK_EV=32

lock_caps() { $ET info | sed -n 's/.*caps=\(0x[0-9a-f]*\).*/\1/p'; }

# futex waits on a pthread mutex and a condition variable: kind, address,
# weight against the program's own measurement, and the wakers
t_lock_futex() {
	spawn sh -c "exec $BIN/lockwork-mini mutex 3 >$W/lown"
	pid=$LAST
	$ET run -e $LOCK_EV -Z -L 50000 -p "$pid" -d 5.5 -K -N "$BIN/lockwork-mini.nm" >$W/lock 2>&1
	wait "$pid"
	bg_pids=""
	own=$(grep '^own ' $W/lown)
	if [ -z "$own" ] || ! grep -q '^summary' $W/lock; then
		fail lock-futex "no run: own='$own' $(tail -n 3 $W/lock | tr '\n' ' ')"
		return
	fi
	o() { echo "$own" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
	# the condition variable's futex words: every 4-byte word inside it
	cond=$(o cond)
	csz=$(o cond_size)
	cwords=""
	i=0
	while [ $i -lt "$csz" ]; do
		cwords="$cwords $(printf '0x%x' $((cond + i)))"
		i=$((i + 4))
	done
	res=$(awk -v mutex="$(o mutex)" -v a="$(o a_tid)" -v b="$(o b_tid)" \
		-v c="$(o c_tid)" -v main="$(o main_tid)" -v cw="$cwords" '
	function val(k,   i) {
		for (i = 1; i <= NF; i++)
			if (index($i, k "=") == 1)
				return substr($i, length(k) + 2)
		return ""
	}
	BEGIN { n = split(cw, ws, " "); for (i = 1; i <= n; i++) isc[ws[i]] = 1 }
	/^waker / { wk[val("waiter_tid") ":" val("start")] = val("tid"); nwk++ }
	/^lock / {
		t = val("tid"); ad = val("addr"); wt = val("waker") + 0
		if (val("kind") != 1)
			next
		if (ad == mutex && (t == a || t == b)) {
			mn++; mw += val("w")
			if (wt) {
				mset++
				other = t == a ? b : a
				if (wt != other) mbad++
				lw[++nl] = t ":" val("start") ":" wt
			}
		} else if (isc[ad] && t == c) {
			cn++
			if (wt) { cset++; if (wt != main) cbad++; lw[++nl] = t ":" val("start") ":" wt }
		}
	}
	END {
		for (i = 1; i <= nl; i++) {
			split(lw[i], p, ":")
			if (wk[p[1] ":" p[2]] != p[3]) unmatched++
		}
		# %d is 32-bit in busybox awk
		printf "mn=%d mw=%.0f mset=%d mbad=%d cn=%d cset=%d cbad=%d unmatched=%d nwk=%d\n",
			mn, mw, mset, mbad, cn, cset, cbad, unmatched, nwk
	}' $W/lock)
	r() { echo "$res" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
	ownw=$(( $(o a_wait_ns) + $(o b_wait_ns) ))
	ownn=$(( $(o a_waits) + $(o b_waits) ))
	rounds=$(o cond_rounds)
	why=""
	mw=$(r mw)
	awk -v a="$mw" -v b="$ownw" 'BEGIN { exit !(b > 0 && a >= 0.8 * b && a <= 1.2 * b) }' ||
		why="$why mutex-weight:ember=${mw}ns,own=${ownw}ns"
	[ "$(r mbad)" -eq 0 ] || why="$why mutex-wakers-not-the-holder=$(r mbad)"
	[ "$(r cbad)" -eq 0 ] || why="$why cond-wakers-not-main=$(r cbad)"
	[ "$(r unmatched)" -eq 0 ] || why="$why lock-without-its-waker-record=$(r unmatched)"
	# most mutex waits and cond waits have their waker
	[ $(( $(r mset) * 10 )) -ge $(( $(r mn) * 8 )) ] && [ "$(r mn)" -gt 0 ] ||
		why="$why mutex-wakers=$(r mset)/$(r mn)"
	[ $(( $(r cset) * 2 )) -ge "$rounds" ] || why="$why cond-wakers=$(r cset)/rounds=$rounds"
	# glibc has no frame pointers: the frame-pointer walk from inside
	# pthread_mutex_lock/unlock loses their caller (hold_mutex), not
	# the thread function above it
	grep -q '^lock .* u=.*mutex_worker' $W/lock || why="$why no-mutex_worker-in-user-stacks($(grep -m1 '^lock ' $W/lock | sed 's/.* u=//' | cut -c1-120))"
	grep -q '^waker .* u=.*mutex_worker' $W/lock || why="$why no-mutex_worker-in-waker-stacks($(grep -m1 '^waker ' $W/lock | sed 's/.* k=//' | cut -c1-200))"
	grep -q 'bad_lock=0' $W/lock || why="$why $(grep -m1 '^bad-lock' $W/lock)"
	if [ -z "$why" ]; then
		pass "lock-futex: mutex $(r mn) waits, ember $((mw / 1000000)) ms vs own $((ownw / 1000000)) ms ($ownn waits); wakers: mutex $(r mset)/$(r mn) all the other thread, cond $(r cset)/$rounds rounds all main; every waker joins its wait; e.g. waker k=$(grep -m1 '^waker .*mutex_worker' $W/lock | sed 's/.* k=\([^ ]*\).*/\1/' | cut -d, -f1-3)"
	else
		fail lock-futex "$why; $res; $own; $(grep '^summary' $W/lock)"
	fi
}

# kernel contention: mmap_lock under an mmap/munmap storm (5.19+ only)
t_lock_kernel() {
	caps=$(lock_caps)
	case $(uname -r) in
	5.10.*)
		if [ $((caps & 0x6000)) -eq 0 ] && [ $((caps & 0x1000)) -ne 0 ]; then
			pass "lock-kernel: $(uname -r) has no lock:contention_* tracepoints nor futex_waitv: EMBER_CAP_LOCK_KERNEL/WAITV absent, LOCK_FUTEX present (caps=$caps)"
		else
			fail lock-kernel "caps=$caps on $(uname -r)"
		fi
		return
		;;
	esac
	if [ $((caps & 0x7000)) -ne $((0x7000)) ]; then
		fail lock-kernel "caps=$caps: want LOCK_FUTEX, LOCK_KERNEL and LOCK_WAITV on $(uname -r)"
		return
	fi
	spawn sh -c "exec $BIN/lockwork-mini mmap 3 >$W/mown"
	pid=$LAST
	$ET run -e $LOCK_EV -Z -L 10000 -p "$pid" -d 5.5 -K >$W/mlock 2>&1
	wait "$pid"
	bg_pids=""
	n=$(grep -c '^lock .* kind=4 .* mmap=1 ' $W/mlock)
	nk=$(grep '^lock .* kind=4 .* mmap=1 ' $W/mlock | grep -vc ' nk=0 ')
	top=$(grep -m1 '^lock .* kind=4 .* mmap=1 ' $W/mlock | sed 's/.* k=\([^ ]*\).*/\1/' | cut -d, -f1-3)
	# the stack starts at the lock, not in ember or the tracepoint's iterator
	lead=$(grep '^lock .* kind=4 .* mmap=1 ' $W/mlock | grep -cE ' k=(__traceiter_|ember_)')
	if [ "$n" -gt 0 ] && [ "$nk" -eq "$n" ] && [ "$lead" -eq 0 ] &&
		grep -q 'bad_lock=0' $W/mlock; then
		pass "lock-kernel: $n mmap_lock contentions (kind KERNEL, EMBER_LOCK_F_MMAP_LOCK), all with kernel stacks, e.g. $top; $(grep -c '^waker ' $W/mlock) wakers"
	else
		fail lock-kernel "mmap_lock records=$n with-kstack=$nk led-by-iterator-or-ember=$lead; $(grep '^summary' $W/mlock); $(grep -m2 '^lock ' $W/mlock | cut -c1-200 | tr '\n' ' ')"
	fi
}

# refusals, a FUTEX_WAIT storm with bad addresses, stop by socket close
# and rmmod while it runs: no kernel warning, counters sane
t_lock_storm() {
	why=""
	out=$($ET badreq lock-min-high 2>&1) || why="$why lock-min-high($out)"
	$ET badreq lock-min-short >/dev/null 2>&1 || why="$why lock-min-short-accepted"
	spawn sh -c "exec $BIN/lockwork-mini storm 6 >$W/sown"
	spid=$LAST
	sleep 2
	$ET run -e $LOCK_EV -Z -L 0 -p "$spid" -d 1.5 -q >$W/storm 2>&1 || why="$why run-failed"
	waits=$(kv $W/storm summary lock_waits)
	recs=$(kv $W/storm summary records)
	grep -q 'bad_lock=0' $W/storm || why="$why bad-records"
	[ "${waits:-0}" -gt 100 ] || why="$why lock_waits=$waits"
	# the owner's socket closes mid-storm: the session stops
	$ET hold 30 -e $((LOCK_EV | 2)) -Z -L 0 >/dev/null 2>&1 &
	h=$!
	sleep 1
	kill -9 $h
	wait $h 2>/dev/null
	sleep 1
	running=$($ET info | sed -n 's/.*running=\([0-9]\).*/\1/p')
	[ "$running" = 0 ] || why="$why still-running-after-owner-killed"
	# rmmod mid-session, every lock probe attached
	$ET hold 30 -e $LOCK_EV -Z -L 0 >/dev/null 2>&1 &
	h=$!
	sleep 1
	rmmod ember 2>$W/lrm || why="$why rmmod:$(cat $W/lrm)"
	kill $h 2>/dev/null
	wait $h 2>/dev/null
	wait "$spid"
	bg_pids=""
	# a small table: 256 threads waiting at once overflow it, counted
	if insmod "$KO" lock_slots=64 2>$W/lins; then
		spawn sh -c "exec $BIN/lockwork-mini many 3 >$W/many"
		mpid=$LAST
		$ET run -e $LOCK_EV -L 0 -p "$mpid" -d 4 -q >$W/lmany 2>&1
		wait "$mpid"
		bg_pids=""
		ovf=$(kv $W/lmany summary lock_overflow)
		mwaits=$(kv $W/lmany summary lock_waits)
		[ "${ovf:-0}" -gt 0 ] && [ "${mwaits:-0}" -gt 0 ] &&
			grep -q 'bad_lock=0' $W/lmany || why="$why small-table:$(grep '^summary' $W/lmany)"
		rmmod ember
	else
		why="$why insmod-lock_slots=64:$(cat $W/lins)"
	fi
	load || why="$why reload-failed"
	warn=$(dmesg | grep -cE 'WARNING|BUG:|Oops|general protection')
	[ "$warn" -eq 0 ] || why="$why kernel-warnings=$warn"
	if [ -z "$why" ]; then
		pass "lock-storm: LOCK_MIN_NS above max refused ($($ET badreq lock-min-high 2>&1 | cut -c1-90)); storm: $waits waits, $recs records in 1.5 s with LOCK_MIN_NS 0; stopped by socket close and by rmmod mid-storm; lock_slots=64 with 256 waiting threads: $mwaits waits followed, $ovf overflowed (counted); no kernel warning"
	else
		fail lock-storm "$why; $(grep '^summary' $W/storm)"
	fi
}

# what TIF_SYSCALL_TRACEPOINT costs every syscall: getppid with and without
# a -e lock session (informational: TCG numbers, not native ones)
t_lock_cost() {
	"$BIN/lockwork-mini" getppid 2 >$W/g0
	$ET hold 30 -e $LOCK_EV -Z >/dev/null 2>&1 &
	h=$!
	sleep 1
	"$BIN/lockwork-mini" getppid 2 >$W/g1
	kill $h
	wait $h 2>/dev/null
	n0=$(kv $W/g0 own ns_per_call)
	n1=$(kv $W/g1 own ns_per_call)
	if [ -n "$n0" ] && [ -n "$n1" ]; then
		pass "lock-cost: getppid ${n0} ns/call without, ${n1} ns/call with -e lock (TCG)"
	else
		fail lock-cost "no figures: $(cat $W/g0 $W/g1)"
	fi
}

want lock-futex && t_lock_futex
want lock-kernel && t_lock_kernel
want lock-storm && t_lock_storm
want lock-cost && t_lock_cost
