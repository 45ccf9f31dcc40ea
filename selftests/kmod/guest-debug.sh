#!/bin/sh
# The debug-kernel suite's guest side (selftests/suites/35-kmod-debug-vm.sh):
# run as root in a VM booted on the KASAN/lockdep/kmemleak/UBSAN kernel of
# scripts/build-debug-kernel.sh. Prints PASS:/FAIL:/SKIP: lines and
# "debug:" key=value lines the host suite turns into its report.
#
#   sh guest-debug.sh [GUEST_TESTS...]
#
# 1. a kmemleak baseline (what boot left is not ours: scan, then clear)
# 2. guest.sh with the named tests (and guest-offcpu.sh's), as in 30-kmod-vm
# 3. stress: on-CPU + off-CPU + lifecycle at 1 kHz on every CPU over a
#    busy, a context-switch storm and a fork/exit loop, cpu1 taken offline
#    and back three times meanwhile; exact accounting at the end
# 4. kill -9 of the controlling process mid-session: a mapped reader, a
#    holder that never reads, and the agent (/payload/agent/ember, when
#    shipped) with its unwind tables loaded; the session must end
# 5. load/unload under sampling, five times
# 6. rmmod, then a kmemleak scan (twice, 6 s apart: objects younger than
#    5 s are never reported): any unreferenced object is a FAIL
# 7. lockdep still on (debug_locks=1): a splat earlier would have turned
#    it off and left the rest of the run unchecked

HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$HERE/bin
ET=$BIN/ember-test
KO=/payload/ember.ko
AGENT=/payload/agent/ember
KL=/sys/kernel/debug/kmemleak
W=/tmp/ember-debug
mkdir -p $W
NCPU=$(grep -c '^processor' /proc/cpuinfo)

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1: $2"; }
skip() { echo "SKIP: $1: $2"; }
up() { cut -d' ' -f1 /proc/uptime; }
kv() { grep "^$2" "$1" | head -n 1 | tr ' ' '\n' | sed -n "s/^$3=//p"; }
running() { $ET info 2>/dev/null | sed -n 's/.*running=\([0-9]\).*/\1/p'; }
loaded() { grep -q '^ember ' /proc/modules; }
load() { loaded || insmod "$KO"; }
# time of one step, for the report
step() { echo "debug: step=$1 seconds=$(awk -v a="$2" -v b="$(up)" 'BEGIN { printf "%.0f", b - a }')"; }

echo "debug: kernel=$(uname -r) cpus=$NCPU mem_kb=$(sed -n 's/^MemTotal: *\([0-9]*\).*/\1/p' /proc/meminfo)"

# ------------------------------------------------------ 1. kmemleak baseline
t=$(up)
if [ -w $KL ]; then
	echo scan >$KL
	echo "debug: kmemleak_boot_suspects=$(grep -c '^unreferenced object' $KL) (before ember was loaded; cleared)"
	echo clear >$KL
else
	fail kmemleak "$KL missing: is CONFIG_DEBUG_KMEMLEAK on and debugfs mounted?"
fi
step kmemleak-baseline "$t"

# ------------------------------------------------------ 2. the module suites
t=$(up)
sh "$HERE/guest.sh" "$@"
step guest-tests "$t"

# ------------------------------------------------------------- 3. stress
t=$(up)
if load; then
	"$BIN/fpbusy" 14 "$NCPU" >/dev/null 2>&1 &
	b1=$!
	"$BIN/offcpu-work" pingpong 12 >/dev/null 2>&1 &
	b2=$!
	(
		end=$(($(date +%s) + 12))
		while [ "$(date +%s)" -lt "$end" ]; do "$BIN/fpbusy" 0.05 >/dev/null 2>&1; done
	) &
	b3=$!
	hp=/sys/devices/system/cpu/cpu1/online
	(
		[ -w $hp ] || exit 0
		for i in 1 2 3; do
			sleep 2
			echo 0 >$hp
			sleep 1
			echo 1 >$hp
		done
	) &
	b4=$!
	$ET run -e 7 -f 1000 -i -d 12 -q >$W/stress 2>&1
	src=$?
	wait $b4
	kill $b1 $b2 $b3 2>/dev/null
	wait $b1 $b2 $b3 2>/dev/null
	s=$(kv $W/stress summary samples)
	f=$(kv $W/stress summary filtered)
	r=$(kv $W/stress summary records)
	l=$(kv $W/stress summary lost)
	rd=$(kv $W/stress summary read)
	cl=$(kv $W/stress summary ctrl_lost)
	bad=$(kv $W/stress summary corrupt)
	sw=$(kv $W/stress summary switches)
	why=""
	[ $src -eq 0 ] || why="$why ember-test-status-$src"
	[ "${s:-0}" -gt 1000 ] || why="$why few-samples($s)"
	[ "${sw:-0}" -gt 1000 ] || why="$why few-switches($sw)"
	[ "$rd" = "$r" ] || why="$why read($rd)!=records($r)"
	[ "$cl" = "$l" ] || why="$why ctrl.lost($cl)!=lost($l)"
	[ "$bad" = 0 ] || why="$why corrupt=$bad"
	[ "$(cat $hp 2>/dev/null || echo 1)" = 1 ] || why="$why cpu1-left-offline"
	if [ -z "$why" ]; then
		pass "stress: on+off-CPU+lifecycle at 1 kHz for 12 s over busy/pingpong/fork-exit loops, cpu1 offline and back 3 times: $s samples ($f filtered), $sw switches, $r records read, $l lost (exact), 0 corrupt"
	else
		fail stress "$why; $(grep -E '^summary|ember-test' $W/stress | tr '\n' ' ')"
	fi
else
	fail stress "insmod failed"
fi
step stress "$t"

# ------------------------------------------------------------ 4. kill -9
t=$(up)
why=""
n=0
"$BIN/fpbusy" 30 "$NCPU" >/dev/null 2>&1 &
busy=$!
for mode in run hold run hold; do
	load || { why="$why insmod-failed"; break; }
	if [ $mode = run ]; then
		$ET run -e 7 -f 1000 -i -d 30 -q >/dev/null 2>&1 &
	else
		$ET hold 30 -e 7 -f 1000 -i >/dev/null 2>&1 &
	fi
	c=$!
	sleep 2
	[ "$(running)" = 1 ] || why="$why $mode:not-running-before-kill"
	kill -9 $c
	wait $c 2>/dev/null
	# the session ends when the last reference (socket, fd, mapping) goes
	i=0
	while [ "$(running)" != 0 ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
	[ "$(running)" = 0 ] || why="$why $mode:still-running-after-kill"
	# and a new session starts at once
	$ET run -f 200 -d 0.5 -q >$W/after 2>&1 || why="$why $mode:no-restart($(tail -n 1 $W/after))"
	n=$((n + 1))
done
kill $busy 2>/dev/null
wait $busy 2>/dev/null
if [ -z "$why" ]; then
	pass "kill-9: $n controllers (mapped readers and holders, on+off-CPU+lifecycle at 1 kHz) killed mid-session; each session ended and a new one started"
else
	fail kill-9 "$why"
fi

if [ -x $AGENT ]; then
	why=""
	n=0
	"$BIN/fpbusy" 40 "$NCPU" >/dev/null 2>&1 &
	busy=$!
	for i in 1 2 3; do
		load || { why="$why insmod-failed"; break; }
		$AGENT record --backend kmod -d 60 -o $W/agent.folded >$W/agent.out 2>&1 &
		a=$!
		# tables are built and loaded while it runs: give it time
		sleep $((3 + 2 * i))
		[ "$(running)" = 1 ] || why="$why agent$i:not-running($(tail -n 2 $W/agent.out | tr '\n' ' '))"
		tab=$($ET info 2>/dev/null | sed -n 's/.*uw_tables=\([0-9]*\).*/\1/p')
		kill -9 $a
		wait $a 2>/dev/null
		j=0
		while [ "$(running)" != 0 ] && [ $j -lt 50 ]; do sleep 0.2; j=$((j + 1)); done
		[ "$(running)" = 0 ] || why="$why agent$i:still-running-after-kill"
		left=$($ET info 2>/dev/null | sed -n 's/.*uw_tables=\([0-9]*\).*/\1/p')
		[ "${left:-0}" = 0 ] || why="$why agent$i:tables-left($left)"
		echo "debug: agent_kill=$i unwind_tables_at_kill=${tab:-?} after=${left:-?}"
		n=$((n + 1))
	done
	kill $busy 2>/dev/null
	wait $busy 2>/dev/null
	if [ -z "$why" ]; then
		pass "agent-kill-9: ember record --backend kmod killed -9 mid-session $n times; session ended, its unwind tables freed"
	else
		fail agent-kill-9 "$why"
	fi
else
	skip agent-kill-9 "no agent in the payload (/payload/agent/ember)"
fi
step kill-9 "$t"

# ------------------------------------------------ 5. unload under sampling
t=$(up)
why=""
"$BIN/fpbusy" 30 "$NCPU" >/dev/null 2>&1 &
busy=$!
for i in 1 2 3 4 5; do
	load || { why="$why insmod$i-failed"; break; }
	$ET hold 10 -e 7 -f 1000 -i >/dev/null 2>&1 &
	h=$!
	sleep 1
	[ "$(running)" = 1 ] || why="$why $i:not-running"
	rmmod ember 2>$W/rm || why="$why rmmod$i:$(cat $W/rm)"
	kill $h 2>/dev/null
	wait $h 2>/dev/null
done
kill $busy 2>/dev/null
wait $busy 2>/dev/null
if [ -z "$why" ]; then
	pass "unload-loop: 5 times insmod, on+off-CPU+lifecycle at 1 kHz with a busy system, rmmod mid-session"
else
	fail unload-loop "$why"
fi
step unload-loop "$t"

# ----------------------------------------------------------- 6. kmemleak
t=$(up)
loaded && rmmod ember
if [ -w $KL ]; then
	echo scan >$KL
	sleep 6
	echo scan >$KL
	cat $KL >$W/kmemleak
	leaks=$(grep -c '^unreferenced object' $W/kmemleak)
	echo "debug: kmemleak_leaks=$leaks"
	if [ "$leaks" -eq 0 ]; then
		pass "kmemleak: no unreferenced object after the run (two scans after rmmod)"
	else
		fail kmemleak "$leaks unreferenced objects: $(head -n 12 $W/kmemleak | tr '\n' '|')"
		echo "debug: kmemleak report follows"
		sed 's/^/kmemleak| /' $W/kmemleak | head -n 200
	fi
fi
step kmemleak-scan "$t"

# ----------------------------------------------------- 7. lockdep still on
dl=$(sed -n 's/^ *debug_locks: *\([0-9]*\)/\1/p' /proc/lockdep_stats 2>/dev/null)
echo "debug: debug_locks=${dl:-unknown}"
if [ "$dl" = 1 ]; then
	pass "lockdep: still active at the end (debug_locks=1): nothing turned it off"
else
	fail lockdep "debug_locks=${dl:-unknown}: lockdep switched itself off (a splat, or a table full) and stopped checking"
fi
grep -E 'lock-classes|direct dependencies|dependency chains' /proc/lockdep_stats 2>/dev/null |
	sed 's/^ */debug: lockdep_stat /'
exit 0
