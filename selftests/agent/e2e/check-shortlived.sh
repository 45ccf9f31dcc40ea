#!/bin/sh
# Short-lived processes under `ember record -a`: 100 runs of a 20 ms
# program (shortlived.c, -O2, no frame pointers) while the whole system is
# recorded. Its processes are gone long before the profile is built, yet:
#  - at least 98% of the frames in the program's own code carry their
#    function names (not shortlived+0x... or a bare address);
#  - at most 5% of its samples hold a bare address (a library the
#    symbolizer did not see mapped before the process exited: libc's
#    frames under main were addresses in half the samples before the maps
#    of a new process were read again 5 ms after its exec).
#  - with --complete PCT: at least PCT% of its samples have a whole user
#    stack (samples inside execve and exit, whose user stack is the old
#    program's or being unmapped, are counted apart; no [cut]: the
#    samples taken before its tables were bound are
#    unwound from their stack copies, --stack-copy, over its exec
#    snapshot once it is gone). --stack-copy BYTES is passed to ember
#    (0: the comparison without copies; the count is printed either way).
#
#   check-shortlived.sh --ember BIN [--backend B] [--out DIR]
#                       [--complete PCT] [--stack-copy BYTES] [--label L]
set -u
EMBER= BACKEND=auto OUT=${TMPDIR:-/tmp}/shortlived COMPLETE= COPY= L=shortlived
while [ $# -gt 0 ]; do
	case $1 in
	--ember) EMBER=$2; shift ;;
	--backend) BACKEND=$2; shift ;;
	--out) OUT=$2; shift ;;
	--complete) COMPLETE=$2; shift ;;
	--stack-copy) COPY=$2; shift ;;
	--label) L=$2; shift ;;
	*) echo "check-shortlived.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
here=$(dirname "$0")
mkdir -p "$OUT"
if ! cc -O2 -g -fomit-frame-pointer -o "$OUT/shortlived" "$here/shortlived.c"; then
	echo "FAIL: ${L}_build: cc failed"
	exit 0
fi
"$EMBER" record -a --backend "$BACKEND" -F 499 -d 7 -o "$OUT/all.folded" \
	${COPY:+--stack-copy "$COPY"} 2>"$OUT/record.err" &
rec=$!
# from ember's "recording" line on: the programs' load takes a while
i=0
while [ $i -lt 600 ] && ! grep -q '^ember: recording' "$OUT/record.err" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
i=0
while [ $i -lt 100 ]; do
	"$OUT/shortlived"
	i=$((i + 1))
done
if ! wait $rec; then
	echo "FAIL: ${L}_record: $(tail -n 2 "$OUT/record.err" | tr '\n' ' ')"
	exit 0
fi
awk -v L="$L" -v want="$COMPLETE" -v copyline="$(grep -m1 '^ember: stack copy' "$OUT/record.err")" '
$0 ~ /^shortlived;/ {
	n = $NF; sub(/ [0-9]+$/, "")
	total += n
	k = split($0, f, ";")
	bare = 0
	for (i = 2; i <= k; i++) {
		if (f[i] ~ /^(main|sl_outer|sl_mid|sl_leaf)$/) named += n
		else if (f[i] ~ /^shortlived\+0x/) unnamed += n
		else if (f[i] ~ /^0x[0-9a-f]+$/) bare = 1
	}
	if (bare) bares += n
	# in execve (the user registers are still the old program'\''s) or
	# in exit (its memory going): no user stack of its own to copy
	if ($0 ~ /(__x64_sys_execve|do_exit)_?\[k\]/) { xx += n; next }
	whole_of += n
	if ($0 ~ /(^|;)\[cut\](;|$)/) cut += n
}
END {
	if (total < 300) {
		printf "FAIL: " L "_samples: %d samples of the program (want >= 300)\n", total
		exit
	}
	own = named + unnamed
	pn = own ? 100 * named / own : 0
	pb = 100 * bares / total
	printf "# shortlived: %d samples, own-code frames %d named of %d (%.1f%%), %d samples with a bare address (%.1f%%)\n", total, named, own, pn, bares, pb
	if (own > 0 && pn >= 98) print "PASS: " L "_own_frames_named"
	else printf "FAIL: %s_own_frames_named: %.1f%% of %d own-code frames named (want >= 98%%)\n", L, pn, own
	if (pb <= 5) print "PASS: " L "_libraries_named"
	else printf "FAIL: %s_libraries_named: %.1f%% of samples hold a bare address (want <= 5%%)\n", L, pb
	pc = whole_of ? 100 * (whole_of - cut) / whole_of : 0
	printf "# %s: %d of %d samples whole (%.1f%%), %d [cut], %d more in execve/exit not counted; %s\n", L, whole_of - cut, whole_of, pc, cut, xx, copyline != "" ? copyline : "no stack copies"
	if (want != "") {
		if (pc >= want) print "PASS: " L "_stacks_complete"
		else printf "FAIL: %s_stacks_complete: %.1f%% of %d samples whole (want >= %s%%)\n", L, pc, whole_of, want
	}
}' "$OUT/all.folded"
