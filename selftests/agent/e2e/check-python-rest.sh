#!/usr/bin/env bash
# Python callers kept when the native walk cannot finish (include/uapi/
# ember.h, "When the native walk stops short"): pyanon.py spins in
# machine code in an anonymous mapping with the frame pointer cleared, so
# no unwinder can step out of it. Checks, on Debian's python3.11:
#  - spin's share of the process's on-CPU samples within POINTS (5) of
#    its share of the process's CPU time, as the workload measures it
#    (without the Python callers those samples had no Python frame);
#  - >= 99% of the samples under spin have outer and <module> under it:
#    the whole Python chain, in order;
#  - honest: every stack with pyanon.py's frames that does not reach
#    Py_BytesMain is rooted at [cut], and the native part under spin is
#    marked [cut] when the leaf could not be stepped out of.
#
#   check-python-rest.sh --ember agent/ember --backend bpf|kmod --out DIR
#                        [--where host|vm_KERNEL] [--secs S]
#   check-python-rest.sh --python-files
# --python-files prints the host files python3.11 reads to run pyanon.py
# (a VM needs them: 40-agent-vm.sh passes them to run-vm.sh --host-file).
# Runs from the tree or from a flat guest payload (pyanon.py beside it).
set -uo pipefail
here=$(dirname "$0")
work=$here/pyanon.py
t_skip() { echo "SKIP: $1: $2"; }
t_fail() { echo "FAIL: $1: $2"; }

ember=agent/ember backend=bpf out=${EMBER_TEST_ARTIFACTS:-selftests/artifacts}/python-rest
where=host secs=2
PY3=${EMBER_PYTHON3:-$(command -v python3 || echo /usr/bin/python3.11)}
while [ $# -gt 0 ]; do
	case $1 in
	--python-files)
		[ -x /usr/bin/python3.11 ] || exit 0
		echo /usr/bin/python3.11
		abs=$(realpath "$work")
		(cd / && EMBER_PY_FILES=1 /usr/bin/python3.11 -E "$abs" 0) | sort -u
		exit "${PIPESTATUS[0]}" ;;
	--ember) ember=$2; shift 2 ;;
	--backend) backend=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--where) where=$2; shift 2 ;;
	--secs) secs=$2; shift 2 ;;
	*) echo "check-python-rest.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
label=python_rest_${where}_$backend
POINTS=${EMBER_PY_REST_POINTS:-5}
PY=/usr/bin/python3.11
if [ ! -x $PY ]; then
	t_skip "$label" "no $PY"
	exit 0
fi
mkdir -p "$out"
truth=$out/truth.txt folded=$out/rest.folded err=$out/stderr.txt
# The hypervisor's steal over the recording, in % of the CPUs' time
# (/proc/stat): cpu-clock samples count stolen time that thread CPU
# clocks do not (docs/NOTES.md, thirteenth session), so a share failure
# is read next to it.
steal_mark() { awk '/^cpu /{print $9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
steal_since() {
	awk -v a="$1" '/^cpu /{ split(a, x, " "); d = $2+$3+$4+$5+$6+$7+$8+$9 - x[2];
		printf "%.1f", (d > 0 ? 100 * ($9 - x[1]) / d : 0) }' /proc/stat
}
steal0=$(steal_mark)
if ! timeout 120 "$ember" record --backend "$backend" -F 499 -o "$folded" \
	-- $PY "$work" "$secs" >"$truth" 2>"$err"; then
	if grep -q 'PROT_EXEC\|Operation not permitted' "$truth" "$err"; then
		t_skip "$label" "no executable anonymous mapping here"
	else
		t_fail "${label}_record" "$(tail -3 "$err" | tr '\n' ' ')"
	fi
	exit 0
fi
if grep -q "Python frames stay native" "$err" && ! grep -q '(pyanon.py:' "$folded"; then
	t_skip "$label" "$(grep -m1 'Python frames stay native' "$err")"
	exit 0
fi
steal=$(steal_since "$steal0")
$PY3 - "$truth" "$folded" "$POINTS" "$label" "$steal" <<'EOF'
import sys
truth_f, folded_f, points, label = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
steal = sys.argv[5]
share = None
cpu_s = spun_s = 0.0
for line in open(truth_f):
    if line.startswith("TRUTH "):
        kv = dict(kv.split("=") for kv in line.split()[1:])
        share = float(kv["spin_share"])
        cpu_s, spun_s = float(kv.get("cpu_s", 0)), float(kv.get("spun_s", 0))
total = spin = whole = dishonest = 0
for line in open(folded_f):
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    n = int(n)
    frames = stack.split(";")
    if frames[0] != "python3.11":
        continue
    total += n
    ours = [i for i, fr in enumerate(frames) if "(pyanon.py:" in fr]
    if ours and "Py_BytesMain" not in frames and frames[1] != "[cut]":
        dishonest += n
    idx = [i for i, fr in enumerate(frames) if fr.startswith("spin (pyanon.py:")]
    if not idx:
        continue
    spin += n
    outer = [i for i, fr in enumerate(frames) if fr.startswith("outer (pyanon.py:")]
    mod = [i for i, fr in enumerate(frames) if fr.startswith("<module> (pyanon.py:")]
    if outer and mod and mod[0] < outer[0] < idx[0]:
        whole += n
def say(ok, name, why):
    print(("PASS: %s_%s" % (label, name)) if ok else ("FAIL: %s_%s: %s" % (label, name, why)))
# samples x the period against the CPU time: where they part, periods
# went unsampled (late timer interrupts: emulation, steal) or were lost
print("# %d samples of python3.11, %d under spin; truth: spin %.1f%% of its CPU time;"
      " samples at 499 Hz %.2f s (spin %.2f s) against %.2f s of CPU (spin %.2f s);"
      " steal %s%% of the CPUs' time"
      % (total, spin, 100 * (share or 0), total / 499.0, spin / 499.0, cpu_s, spun_s, steal))
ok = share is not None and total > 0
got = 100.0 * spin / total if total else 0
say(ok and abs(got - 100 * share) <= points, "spin_share",
    "spin %.1f%% of the samples, %.1f%% of the CPU time (bar %g points; steal %s%%)"
    % (got, 100 * (share or 0), points, steal))
say(spin > 0 and whole >= 0.99 * spin, "chain_whole",
    "%d of %d samples under spin have outer and <module> in order" % (whole, spin))
say(total > 0 and dishonest == 0, "cut_marked",
    "%d samples with pyanon.py frames short of Py_BytesMain without a [cut] root" % dishonest)
EOF
