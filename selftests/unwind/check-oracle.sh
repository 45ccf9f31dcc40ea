#!/bin/sh
# The backend's CFI unwinding against libdwfl on the same samples:
# `ember record --check-unwind` has the backend copy each sample's user
# stack and registers; the agent unwinds the copy with libdwfl and counts
# the samples whose frames all agree. PASS at >= 99% of >= 200 samples.
#
#   check-oracle.sh --ember BIN --work DIR --label NAME [--backend B]
#                   [--warmup S] [--freq HZ] [--out DIR]
# Each sample carries 16 KiB of stack: keep the frequency low enough for
# the rings under emulation (a full ring loses the miss records too).
set -u
EMBER= WORK= LABEL= BACKEND=auto WARMUP=0.3 FREQ=499 OUT=${TMPDIR:-/tmp}
while [ $# -gt 0 ]; do
	case $1 in
	--ember) EMBER=$2; shift ;;
	--work) WORK=$2; shift ;;
	--label) LABEL=$2; shift ;;
	--backend) BACKEND=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--freq) FREQ=$2; shift ;;
	--out) OUT=$2; shift ;;
	*) echo "check-oracle.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
T="unwind_${LABEL}_oracle"
mkdir -p "$OUT"
"$EMBER" record --backend "$BACKEND" --check-unwind -F "$FREQ" -o "$OUT/$LABEL-oracle.folded" \
	-- "$WORK/nofp-work" cpu 3 "$WARMUP" >/dev/null 2>"$OUT/$LABEL-oracle.err"
line=$(grep 'unwind check: [0-9]* samples compared' "$OUT/$LABEL-oracle.err")
n=$(echo "$line" | sed -n 's/.*check: \([0-9]*\) samples compared.*/\1/p')
a=$(echo "$line" | sed -n 's/.*libdwfl, \([0-9]*\) agree.*/\1/p')
echo "# $T: ${line#ember: }"
if [ -n "$n" ] && [ "$n" -ge 200 ] && [ $((a * 100)) -ge $((n * 99)) ]; then
	echo "PASS: $T"
else
	echo "FAIL: $T: ${n:-0} compared, ${a:-0} agree (want >= 99% of >= 200): $(grep 'unwind check: pid' "$OUT/$LABEL-oracle.err" | head -n 2 | tr '\n' ' ')"
fi
