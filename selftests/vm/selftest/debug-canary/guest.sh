#!/bin/sh
# Guest side of the debug-kernel suite's positive control: every checker
# must report the bug ember_debug_canary.ko commits (see canary.c). The
# host counts the reports in the kernel log and in the kmemleak lines here.
HERE=$(cd "$(dirname "$0")" && pwd)
KL=/sys/kernel/debug/kmemleak
echo scan >$KL
echo clear >$KL
# lockdep first: any KASAN, UBSAN or WARN report taints the kernel, and
# lockdep stops at the first taint ("Disabling lock debugging")
for w in lockdep atomic list ubsan kasan kmemleak; do
	insmod "$HERE/ember_debug_canary.ko" what=$w && rmmod ember_debug_canary
	echo "canary: $w committed"
done
echo scan >$KL
sleep 6
echo scan >$KL
sed 's/^/kmemleak| /' $KL
exit 0
