#!/bin/sh
# lockwork's own accounting against the kernel's: lockwork runs while a
# private ftrace instance records every futex syscall's entry and exit;
# per thread name (lw_a = site_a_m1, lw_b = site_b_m1, lw_c = site_c_m2,
# lw_rd = site_rd_rw, lw_wr = site_wr_rw, lw_cv = site_cv_wait) the
# WAIT/WAIT_BITSET calls that lasted >= --min-us must match the
# contentions lockwork kept: counts within 5%, time within 10%. This is
# what makes lockwork a ground truth for -e lock (one contention, one
# futex wait; no barging), independent of ember. Busybox sh and awk.
# Prints PASS:/FAIL:/SKIP: lines named lock_truth_<label>_<site>.
#
# usage: validate-truth.sh --work PATH/lockwork --label L [--secs S]
#                          [--min-us N] [--out DIR]
work=lockwork label=host secs=4 minus=10 out=${TMPDIR:-/tmp}/ember-lock-truth
while [ $# -gt 0 ]; do
	case $1 in
	--work) work=$2; shift ;;
	--label) label=$2; shift ;;
	--secs) secs=$2; shift ;;
	--min-us) minus=$2; shift ;;
	--out) out=$2; shift ;;
	*) echo "validate-truth.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
T=lock_truth_$label
tr=
for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
	[ -d "$d/events/syscalls/sys_enter_futex" ] && tr=$d && break
done
if [ -z "$tr" ]; then
	echo "SKIP: ${T}: no syscalls:sys_enter_futex trace event (tracefs or CONFIG_FTRACE_SYSCALLS)"
	exit 0
fi
mkdir -p "$out"
inst=$tr/instances/ember-lockwork-$$
if ! mkdir "$inst" 2>/dev/null; then
	echo "SKIP: ${T}: cannot create an ftrace instance under $tr/instances"
	exit 0
fi
trap 'echo 0 >"$inst/tracing_on"; rmdir "$inst" 2>/dev/null' EXIT
echo 0 >"$inst/tracing_on"
echo 16384 >"$inst/buffer_size_kb"
echo 1 >"$inst/events/syscalls/sys_enter_futex/enable"
echo 1 >"$inst/events/syscalls/sys_exit_futex/enable"
echo 1 >"$inst/tracing_on"
"$work" --secs "$secs" --min-us "$minus" $LOCKWORK_ARGS >"$out/truth.txt"
rc=$?
echo 0 >"$inst/tracing_on"
cat "$inst/trace" >"$out/trace.txt"
if [ $rc -ne 0 ]; then
	echo "FAIL: ${T}: lockwork exited $rc"
	exit 0
fi
if grep -q 'LOST' "$out/trace.txt"; then
	echo "SKIP: ${T}: the trace lost events: $(grep -m1 LOST "$out/trace.txt")"
	exit 0
fi
LC_ALL=C awk -v T="$T" -v min="$minus" '
function hex(s,   i, v) {
	v = 0
	for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return v
}
# "  lw_a-123  [001] ..... 12.345678: sys_futex(uaddr: .., op: 80, ..)"
function parse(line,   head, n, f, a) {
	head = line; sub(/: sys_futex.*/, "", head)
	n = split(head, f, " ")
	ts = f[n] + 0
	a = f[1]
	# comm-pid: the pid follows the last "-"
	pid = a; sub(/.*-/, "", pid)
	comm = substr(a, 1, length(a) - length(pid) - 1)
}
FNR == NR {
	if ($1 == "SITE") {
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		kept[v["name"]] = v["kept"]; kns[v["name"]] = v["kept_ns"]
	}
	next
}
/ sys_futex\(/ {
	parse($0)
	op = $0; sub(/.* op: /, "", op); sub(/[,)].*/, "", op); sub(/^0x/, "", op)
	o = hex(op) % 128
	if (o == 0 || o == 9) start[pid] = ts
	next
}
/ sys_futex -> / {
	parse($0)
	if (!(pid in start)) next
	d = ts - start[pid]; delete start[pid]
	if (d * 1e6 >= min) { c[comm]++; s[comm] += d * 1e9 }
}
END {
	map["site_a_m1"] = "lw_a"; map["site_b_m1"] = "lw_b"; map["site_c_m2"] = "lw_c"
	map["site_rd_rw"] = "lw_rd"; map["site_wr_rw"] = "lw_wr"; map["site_cv_wait"] = "lw_cv"
	for (site in map) {
		t = map[site]
		dc = kept[site] > 0 ? 100 * (c[t] - kept[site]) / kept[site] : 100
		dn = kns[site] > 0 ? 100 * (s[t] - kns[site]) / kns[site] : 100
		fig = sprintf("%s: kernel futex waits >= %d us %d vs %d kept (%+.1f%%), %.0f vs %.0f ns (%+.1f%%)",
			site, min, c[t], kept[site], dc, s[t], kns[site], dn)
		print "# " fig
		if (kept[site] > 0 && dc <= 5 && dc >= -5 && dn <= 10 && dn >= -10)
			print "PASS: " T "_" site
		else
			print "FAIL: " T "_" site ": " fig
	}
}' "$out/truth.txt" "$out/trace.txt"
exit 0
