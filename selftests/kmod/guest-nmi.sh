#!/bin/sh
# Sampling from NMI context (issue 14), inside a test VM booted by
# selftests/suites/30-kmod-vm.sh with run-vm.sh --nmi-every: /payload/ember.ko
# is the test build (make module-selftest), bin/ember_nmi_test.ko hands the
# NMIs the host injects to ember's sampling path. TCG has no PMU, so this
# is the only way the path hardware events take runs here.
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$HERE/bin
ET=$BIN/ember-test
W=/tmp/ember-nmi
mkdir -p $W
kv() { grep "^$2" "$1" | head -n 1 | tr ' ' '\n' | sed -n "s/^$3=//p"; }
hits() { cat /sys/module/ember_nmi_test/parameters/hits 2>/dev/null || echo 0; }

if ! insmod /payload/ember.ko || ! insmod "$BIN/ember_nmi_test.ko"; then
	echo "FAIL: nmi: cannot load the test modules"
	exit 0
fi
# the host injects NMIs between these two console lines
echo "ember-nmi: ready" >/dev/console
i=0
while [ "$(hits)" -lt 20 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done

"$BIN/fpbusy" 8 2 &
bp=$!
sleep 0.3
h0=$(hits)
# on-CPU at 1 Hz: nearly every sample comes from an NMI
$ET run -p "$bp" -f 1 -d 4 -q -F -N "$BIN/fpbusy.nm" >$W/nmi 2>&1
h1=$(hits)
kill $bp 2>/dev/null
wait $bp 2>/dev/null
total=$(kv $W/nmi summary read)
chain=$(grep '^folded' $W/nmi | grep ';main;level1;level2;level3;leaf_spin$' |
	awk '{ s += $2 } END { print s + 0 }')
thr=$(grep '^folded' $W/nmi | grep ';thread_main;level1;level2;level3;leaf_spin$' |
	awk '{ s += $2 } END { print s + 0 }')
good=$((chain + thr))
bad=$(kv $W/nmi summary corrupt)
n=$((h1 - h0))
if [ "$n" -ge 50 ] && [ "${total:-0}" -ge 40 ] && [ "${bad:-1}" = 0 ] &&
	[ $((good * 100)) -ge $((total * 80)) ]; then
	grep '^folded' $W/nmi | grep -v ';leaf_spin$' | sort -k2 -n -r | head -n 4
	echo "PASS: nmi: $n NMIs during the run, $total samples read, $good with the full user chain (main or thread_main>level1>level2>level3>leaf_spin)"
else
	echo "FAIL: nmi: nmis=$n read=$total full-chain=$good corrupt=$bad; $(grep '^summary' $W/nmi) $(grep '^folded' $W/nmi | sort -k2 -n -r | head -n 3 | tr '\n' ' ')"
fi
echo "ember-nmi: done" >/dev/console
sleep 0.5
# unloading right after NMI sampling: the hook is off before the rings go
if rmmod ember_nmi_test && rmmod ember; then
	echo "PASS: nmi-unload: both modules unloaded after NMI sampling"
else
	echo "FAIL: nmi-unload: rmmod failed"
fi
exit 0
