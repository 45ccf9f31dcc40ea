#!/bin/sh
# The module and the eBPF program unwind the same stacks the same way: the
# no-frame-pointer workload (nofp_work.c: PLT, dlopen, qsort callback,
# signal frames) recorded with each backend, on-CPU and off-CPU, and the
# user stacks compared. Off-CPU stacks are where the threads block, the
# same frames every time: under 1% of either backend's weight may be in a
# stack the other never saw. On-CPU samples fall anywhere (in a signal
# handler, at any depth of qsort's recursion, folded into one "libc"
# frame here): under 5%. Run where both backends work (a VM with the
# module loaded).
#
# usage: check-backends.sh --ember PATH --work DIR --label L [--out DIR]
#                          [--secs S] [--warmup S]
ember=ember work=. label=vm out=${TMPDIR:-/tmp} secs=4 warmup=3
while [ $# -gt 0 ]; do
	case $1 in
	--ember) ember=$2; shift ;;
	--work) work=$2; shift ;;
	--label) label=$2; shift ;;
	--out) out=$2; shift ;;
	--secs) secs=$2; shift ;;
	--warmup) warmup=$2; shift ;;
	*) echo "check-backends.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
T=unwind_${label}_backends_agree
mkdir -p "$out"
# rec BACKEND MODE: the workload under one backend
rec() {
	ev=cpu
	[ "$2" = offcpu ] && ev=offcpu
	"$ember" record --backend "$1" -e $ev -F 199 -o "$out/agree-$1-$2.folded" \
		-- "$work/nofp-work" "$2" "$secs" "$warmup" >/dev/null 2>"$out/agree-$1-$2.err"
}
# the workload's samples (under main: the dynamic loader's start-up, before
# any table is bound, is not what is compared; check-nofp.sh counts cut
# stacks), user frames only, libc's anonymous internals (qsort's
# recursion, whose depth differs from sample to sample) folded into one
# "libc" frame
norm() {
	grep ';main;do_' "$1" | sed 's/ \([0-9]*\)$/\t\1/' | awk -F'\t' '{
		n = split($1, f, ";"); out = ""; prev = ""
		for (i = 2; i <= n; i++) {
			if (f[i] ~ /_\[k\]$/) continue
			t = f[i] ~ /^libc\.so\.6\+0x/ ? "libc" : f[i]
			if (t == "libc" && prev == "libc") continue
			out = out ";" t; prev = t
		}
		w[out] += $2
	} END { for (s in w) print w[s] "\t" s }'
}
# compare A B: "shared-stacks worst-diff only-in-A% only-in-B%"
compare() {
	awk -F'\t' '
	FNR == 1 { k++ }
	{ v[$2, k] += $1; tot[k] += $1; seen[$2] = 1 }
	END {
		worst = 0; o1 = 0; o2 = 0; n = 0
		for (s in seen) {
			a = tot[1] ? 100 * v[s, 1] / tot[1] : 0
			b = tot[2] ? 100 * v[s, 2] / tot[2] : 0
			if (!v[s, 2]) o1 += a
			if (!v[s, 1]) o2 += b
			if (a >= 1 && b >= 1) {
				n++
				d = a > b ? a - b : b - a
				if (d > worst) worst = d
			}
		}
		printf "%d %.2f %.2f %.2f\n", n, worst, o1, o2
	}' "$1" "$2"
}
for mode in cpu offcpu; do
	for b in kmod bpf; do
		if ! rec $b $mode; then
			echo "FAIL: ${T}_$mode: ember record --backend $b: $(tail -n 2 "$out/agree-$b-$mode.err" | tr '\n' ' ')"
			continue 2
		fi
		norm "$out/agree-$b-$mode.folded" >"$out/agree-$b-$mode.norm"
	done
	set -- $(compare "$out/agree-kmod-$mode.norm" "$out/agree-bpf-$mode.norm")
	echo "# ${T}_$mode: $1 user stacks above 1% in both, worst share difference $2 points; seen by the module only $3%, by eBPF only $4%"
	# off-CPU stacks are where the threads block: the same frames every
	# time, so exactly the same stacks; on-CPU ones vary with where the
	# samples fall, so a little of each backend may be its own
	lim=5
	[ $mode = offcpu ] && lim=1
	if [ "$1" -ge 2 ] && awk -v a="$3" -v b="$4" -v l=$lim 'BEGIN { exit !(a < l && b < l) }'; then
		echo "PASS: ${T}_$mode"
	else
		echo "FAIL: ${T}_$mode: $* (top: $(sort -n -r "$out/agree-kmod-$mode.norm" | head -n 2 | tr '\n\t' '  ') | $(sort -n -r "$out/agree-bpf-$mode.norm" | head -n 2 | tr '\n\t' '  '))"
	fi
done
