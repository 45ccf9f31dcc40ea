#!/bin/sh
# Ground-truth check of user-stack unwinding without frame pointers.
# POSIX sh + awk only: it runs on the host and inside the busybox VMs.
#
#   check-nofp.sh --ember BIN --work DIR --label NAME [--backend B]
#                 [--freq HZ] [--secs S] [--warmup S] [--out DIR]
#
# DIR holds nofp-work and its two libraries (selftests/unwind/, built by
# `make unwind-work`). Prints PASS/FAIL lines named unwind_<label>_...:
#  - each phase's share of on-CPU samples within 3 points of the CPU time
#    the workload measured itself;
#  - at least 95% of the workload's samples carry the whole chain up to
#    main, and each phase's leaf carries its own exact chain (through the
#    PLT, a dlopen'ed library, libc's qsort, a signal frame);
#  - off-CPU: blocked time per chain within 10% of the wall time measured.
# --warmup: the workload sleeps this long before it starts (the time the
# agent needs to build and bind its tables: ~15 ms on hardware, seconds
# under emulation); the wait itself is measured by ember record
# --verbose-cfi, not here.
set -u
EMBER= WORK= LABEL= BACKEND=auto FREQ=999 SECS=5 OUT=${TMPDIR:-/tmp} WARMUP=0.3
while [ $# -gt 0 ]; do
	case $1 in
	--ember) EMBER=$2; shift ;;
	--work) WORK=$2; shift ;;
	--label) LABEL=$2; shift ;;
	--backend) BACKEND=$2; shift ;;
	--freq) FREQ=$2; shift ;;
	--secs) SECS=$2; shift ;;
	--warmup) WARMUP=$2; shift ;;
	--out) OUT=$2; shift ;;
	*) echo "check-nofp.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
T="unwind_${LABEL}"
mkdir -p "$OUT"
folded=$OUT/$LABEL-cpu.folded
truth=$OUT/$LABEL-cpu.truth

if ! "$EMBER" record --backend "$BACKEND" -F "$FREQ" -o "$folded" \
	-- "$WORK/nofp-work" cpu "$SECS" "$WARMUP" >"$truth" 2>"$OUT/$LABEL-cpu.err"; then
	echo "FAIL: ${T}_record: $(tail -n 3 "$OUT/$LABEL-cpu.err" | tr '\n' ' ')"
	exit 0
fi

# One pass over the folded stacks; frames are ';'-separated, root first,
# the count last. Only the workload's own samples count.
awk -v T="$T" -v truth="$truth" '
function has(stack, chain) { return index(";" stack ";", ";" chain ";") > 0 }
BEGIN {
	while ((getline line < truth) > 0) {
		split(line, f, " ")
		if (f[1] == "truth") { want[f[2]] = f[3]; wsum += f[3] }
	}
	nphase = split("run_plt run_dl run_qsort run_sig", phases, " ")
	leaf["run_plt"] = "a_leaf"
	chain["run_plt"] = "main;do_cpu;run_plt;a_outer;a_mid;a_leaf"
	leaf["run_dl"] = "b_leaf"
	chain["run_dl"] = "main;do_cpu;run_dl;b_outer;b_mid;b_leaf"
	leaf["run_qsort"] = "cmp_burn"
	chain["run_qsort"] = "main;do_cpu;run_qsort"
	leaf["run_sig"] = "sig_burn"
	chain["run_sig"] = "sig_handler;sig_burn"
}
{
	n = $NF; sub(/ [0-9]+$/, "")
	if ($0 !~ /^nofp-work;/) next
	# Before main exists: the exec in the kernel and the dynamic
	# loader, whole stacks from _start that are not the workload
	# (the truth counts its phases only). Counted, said, left out of
	# both figures: under TCG arm64, ld.so relocating libc is 3-5% of
	# a 4 s run, since samples are taken from the first instruction.
	if (!has($0, "main") && $0 ~ /^nofp-work;_start;(ld-linux[^;]*|_dl_[^;]*|[^;]*_\[k\])(;|$)/) {
		premain += n
		next
	}
	total += n
	if (has($0, "main")) complete += n
	for (i = 1; i <= nphase; i++) {
		p = phases[i]
		if (has($0, p)) got[p] += n
		if (has($0, leaf[p])) {
			leafn[p] += n
			ok = has($0, chain[p])
			# the signal chain must also reach its interrupted frames
			if (p == "run_sig") ok = ok && has($0, "main;do_cpu;run_sig;sig_spin")
			# the callback is called from inside libc (qsort)
			if (p == "run_qsort") ok = ok && $0 ~ /;run_qsort;[^;]*qsort[^;]*;.*cmp_burn/
			if (ok) leafok[p] += n
		}
	}
}
END {
	if (total < 200 || wsum <= 0) {
		printf "FAIL: %s_samples: %d samples of nofp-work, truth sum %.3f s\n", T, total, wsum
		exit
	}
	printf "# %s: %d samples (and %d before main: exec, the loader)\n", T, total, premain
	pct = 100 * complete / total
	if (pct >= 95) printf "PASS: %s_complete_to_main\n", T
	else printf "FAIL: %s_complete_to_main: %.1f%% of samples reach main (want >= 95%%)\n", T, pct
	for (i = 1; i <= nphase; i++) {
		p = phases[i]
		s = 100 * got[p] / total; w = 100 * want[p] / wsum
		printf "# %s %s: profile %.1f%%, truth %.1f%%\n", T, p, s, w
		d = s - w; if (d < 0) d = -d
		if (d <= 3) printf "PASS: %s_share_%s\n", T, p
		else printf "FAIL: %s_share_%s: profile %.1f%%, truth %.1f%% (more than 3 points)\n", T, p, s, w
		c = leafn[p] ? 100 * leafok[p] / leafn[p] : 0
		if (leafn[p] >= 20 && c >= 95) printf "PASS: %s_chain_%s\n", T, p
		else printf "FAIL: %s_chain_%s: %d of %d %s samples carry %s (want >= 95%%)\n", T, p, leafok[p], leafn[p], leaf[p], chain[p]
	}
}' "$folded"

# Off-CPU: blocked time (folded values are microseconds) per chain.
folded=$OUT/$LABEL-offcpu.folded
truth=$OUT/$LABEL-offcpu.truth
if ! "$EMBER" record --backend "$BACKEND" -e offcpu -o "$folded" \
	-- "$WORK/nofp-work" offcpu 3 "$WARMUP" >"$truth" 2>"$OUT/$LABEL-offcpu.err"; then
	echo "FAIL: ${T}_offcpu_record: $(tail -n 3 "$OUT/$LABEL-offcpu.err" | tr '\n' ' ')"
	exit 0
fi
awk -v T="$T" -v truth="$truth" '
function has(stack, chain) { return index(";" stack ";", ";" chain ";") > 0 }
BEGIN {
	while ((getline line < truth) > 0) {
		split(line, f, " ")
		if (f[1] == "truth") want[f[2]] = f[3] * 1e6
	}
	chain["run_nap_a"] = "main;do_offcpu;run_nap_a;a_nap;a_nap_inner"
	chain["run_nap_b"] = "main;do_offcpu;run_nap_b;b_nap;b_nap_inner"
}
{
	n = $NF; sub(/ [0-9]+$/, "")
	if ($0 !~ /^nofp-work;/) next
	for (p in chain) if (has($0, chain[p])) got[p] += n
}
END {
	for (p in chain) {
		if (want[p] <= 0) { printf "FAIL: %s_offcpu_%s: no truth\n", T, p; continue }
		r = got[p] / want[p]
		printf "# %s offcpu %s: profile %.0f us, truth %.0f us\n", T, p, got[p], want[p]
		if (r >= 0.9 && r <= 1.1) printf "PASS: %s_offcpu_%s\n", T, p
		else printf "FAIL: %s_offcpu_%s: %.0f us blocked under %s, truth %.0f us (more than 10%% apart)\n", T, p, got[p], chain[p], want[p]
	}
}' "$folded"
