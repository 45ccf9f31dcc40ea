#!/usr/bin/env bash
# Python frames end to end: ember record of pyphases.py (Debian's
# /usr/bin/python3.11) against the workload's own measurement.
#  - each phase's share of the on-CPU samples within POINTS (3, issue
#    24's bar) of its share of the measured thread CPU time (the phases
#    are Python functions: only Python frames can tell them apart);
#  - >= 95% of the on-CPU samples with Python frames complete: no cut
#    marker, and the outermost Python frame is a <module>, the thread
#    bootstrap (Thread._bootstrap) or the import system's entry;
#  - py_hash's C work (sha256, deflate) sits above (leafward of) its
#    Python caller: native and Python frames in their true order;
#  - py_recurse's 41 frames in one stack; py_sleep off CPU, its blocked
#    time within 10% of what it slept;
#  - unnamed Python frames ([unknown python code]: code objects gone
#    before ember read them, i.e. module bodies run at import) under 5%;
#  - the same recording as pprof and OTLP carries the frames (the OTLP
#    frame type "cpython").
# A backend that cannot walk Python (no EMBER_CAP_PYTHON) is a SKIP.
#
#   check-python.sh --ember agent/ember --backend bpf|kmod --out DIR [--python 3.13|3.14]
#                   [--where host|vm_KERNEL] [--scale S] [--shares overall|per-thread]
# --shares per-thread: the main thread's phases are shared among
# themselves and py_worker's thread is left out of the comparison (a VM's
# host stalls its two virtual CPUs unevenly: e2e.sh's reason too); the
# complete-chain count still covers both threads.
#
# --python 3.13: Debian 13's python3.13 (scripts/fetch-python.sh), run
# through its own ld.so and libraries, the same checks; --python 3.14:
# Debian sid's python3.14 (fetch-python.sh --release sid), the same way.
set -uo pipefail
cd "$(dirname "$0")/../../.."
. selftests/lib.sh

ember=agent/ember backend=bpf out=${EMBER_TEST_ARTIFACTS:-selftests/artifacts}/python
where=host scale=1 shares=overall
# the analysis's own interpreter (a VM guest has python3.11 only)
PY3=${EMBER_PYTHON3:-python3}
while [ $# -gt 0 ]; do
	case $1 in
	--ember) ember=$2; shift 2 ;;
	--backend) backend=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--python) version=$2; shift 2 ;;
	--where) where=$2; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--shares) shares=$2; shift 2 ;;
	*) echo "check-python.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
POINTS=${EMBER_PY_POINTS:-3}
case ${version:-3.11} in
3.11)
	PY=(/usr/bin/python3.11)
	label=python_${where}_$backend
	;;
3.13)
	label=python313_${where}_$backend
	root=$(scripts/fetch-python.sh --path 2>/dev/null) || {
		t_skip "$label" "Debian 13's python3.13 not fetched (offline?)"
		exit 0
	}
	lib=$root/usr/lib/$(uname -m)-linux-gnu
	PY=("$(ls "$lib"/ld-linux*.so.* | head -n 1)" --library-path "$lib"
	    "$root/usr/bin/python3.13" -I)
	;;
3.14)
	label=python314_${where}_$backend
	root=$(scripts/fetch-python.sh --release sid --path 2>/dev/null) || {
		t_skip "$label" "Debian sid's python3.14 not fetched (offline?)"
		exit 0
	}
	lib=$root/usr/lib/$(uname -m)-linux-gnu
	PY=("$(ls "$lib"/ld-linux*.so.* | head -n 1)" --library-path "$lib"
	    "$root/usr/bin/python3.14" -I)
	;;
*) echo "check-python.sh: --python 3.11, 3.13 or 3.14" >&2; exit 2 ;;
esac
if [ ! -x "${PY[0]}" ]; then
	t_skip "$label" "no ${PY[0]}"
	exit 0
fi
mkdir -p "$out"
truth=$out/truth.txt folded=$out/python.folded err=$out/stderr.txt
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
if ! timeout "${EMBER_PY_TIMEOUT:-180}" "$ember" record --backend "$backend" -e cpu,offcpu -F 499 \
	-o "$folded" -- "${PY[@]}" selftests/agent/e2e/pyphases.py "$scale" \
	>"$truth" 2>"$err"; then
	t_fail "${label}_record" "$(tail -3 "$err" | tr '\n' ' ')"
	exit 0
fi
if grep -q "Python frames stay native" "$err" && ! grep -q '(pyphases.py:' "$folded"; then
	t_skip "$label" "$(grep -m1 'Python frames stay native' "$err")"
	exit 0
fi
steal=$(steal_since "$steal0")
$PY3 - "$truth" "$folded" "$POINTS" "$label" "$shares" "$steal" <<'EOF'
import re, sys
truth_f, folded_f, points, label, shares = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
steal = sys.argv[6]
cpu_phases = ["py_spin", "py_recurse", "py_gen", "py_async", "py_hash", "py_exc", "py_worker"]
shared = cpu_phases if shares == "overall" else cpu_phases[:-1]
truth = {}
for line in open(truth_f):
    f = line.split()
    if f and f[0] == "PHASE":
        truth[f[1]] = int(f[2])
prof, sleep_ns, unknown, pyframes, deepest = {}, 0, 0, 0, 0
with_py, complete = 0, 0
def outermost_ok(fr):
    # where a Python chain starts: a module body, a thread started by
    # threading, or the import system called from C at start-up
    return (fr.startswith("<module> (") or fr.startswith("Thread._bootstrap (threading.py:")
            or "(<frozen importlib._bootstrap" in fr)
hash_order = False
for line in open(folded_f):
    stack, n = line.rstrip("\n").rsplit(" ", 1)
    n = int(n)
    frames = stack.split(";")
    py = [fr for fr in frames if re.search(r" \([^()]*:\d+\)$", fr) or fr == "[unknown python code]"]
    pyframes += n * len(py)
    unknown += n * frames.count("[unknown python code]")
    deepest = max(deepest, sum(1 for fr in frames if fr.startswith("py_recurse (pyphases.py:")))
    if py and "[offcpu]" not in frames:
        with_py += n
        if not any(fr.endswith("cut]") for fr in frames) and outermost_ok(py[0]):
            complete += n
    if "[offcpu]" in frames:
        if any(fr.startswith("py_sleep (pyphases.py:") for fr in frames):
            sleep_ns += n * 1000       # folded off-CPU values are microseconds
        continue
    for ph in cpu_phases:
        idx = [i for i, fr in enumerate(frames) if fr.startswith(ph + " (pyphases.py:")]
        if idx:
            prof[ph] = prof.get(ph, 0) + n
            if ph == "py_hash":
                below = frames[idx[0] + 1:]
                hash_order |= any(re.search(r"sha256|SHA256|deflate|EVP_Digest", fr) for fr in below)
            break
def say(ok, name, why):
    print(("PASS: %s_%s" % (label, name)) if ok else ("FAIL: %s_%s: %s" % (label, name, why)))
tt = sum(truth.get(p, 0) for p in shared)
tp = sum(prof.get(p, 0) for p in shared)
bad = []
print("# shares: %s" % shares)
for p in shared:
    ts = 100.0 * truth.get(p, 0) / tt if tt else 0
    ps = 100.0 * prof.get(p, 0) / tp if tp else 0
    print("# %-11s truth %5.1f%%  profile %5.1f%%" % (p, ts, ps))
    if abs(ts - ps) > points:
        bad.append("%s %.1f vs %.1f" % (p, ps, ts))
print("# steal during the recording: %s%% of the CPUs' time" % steal)
say(tt > 0 and tp > 0 and not bad, "phase_shares",
    (", ".join(bad) or "no samples") + " (steal %s%%)" % steal)
say(hash_order, "c_above_python", "no sha256/deflate frame above py_hash")
say(deepest >= 41, "recursion_depth", "deepest py_recurse chain %d" % deepest)
print("# complete Python chains: %.2f%% of on-CPU samples with Python frames" %
      (100.0 * complete / with_py if with_py else 0))
say(with_py and complete >= 0.95 * with_py, "complete_chains",
    "%.1f%% complete (no cut, outermost <module>/Thread._bootstrap/import)" %
    (100.0 * complete / with_py if with_py else 0))
want = truth.get("py_sleep", 0)
print("# py_sleep off-CPU %.1f ms, slept %.1f ms" % (sleep_ns / 1e6, want / 1e6))
say(want and abs(sleep_ns - want) <= 0.10 * want, "sleep_offcpu",
    "py_sleep off-CPU %.0f ms, slept %.0f ms" % (sleep_ns / 1e6, want / 1e6))
say(pyframes and unknown <= 0.05 * pyframes, "named",
    "%d of %d Python frames unnamed" % (unknown, pyframes))
EOF
# the same frames in pprof and OTLP
# (their stderr kept beside: a failure says whether the recording failed)
if "$ember" record --backend "$backend" -e cpu -F 199 -o "$out/python.otlp" -- \
	"${PY[@]}" selftests/agent/e2e/pyphases.py 0.3 >/dev/null 2>"$out/otlp.err" &&
	grep -qa cpython "$out/python.otlp" && grep -qa 'pyphases.py' "$out/python.otlp"; then
	t_pass "${label}_otlp_cpython"
else
	t_fail "${label}_otlp_cpython" "no cpython frame type or file in $out/python.otlp: $(tail -n 3 "$out/otlp.err" | tr '\n' ' ' | cut -c1-300)"
fi
if "$ember" record --backend "$backend" -e cpu -F 199 -o "$out/python.pb.gz" -- \
	"${PY[@]}" selftests/agent/e2e/pyphases.py 0.3 >/dev/null 2>"$out/pprof.err" &&
	gzip -dc "$out/python.pb.gz" | grep -qa 'py_hash' &&
	gzip -dc "$out/python.pb.gz" | grep -qa 'pyphases.py'; then
	t_pass "${label}_pprof"
else
	t_fail "${label}_pprof" "no py_hash function or pyphases.py file in $out/python.pb.gz: $(tail -n 3 "$out/pprof.err" | tr '\n' ' ' | cut -c1-300)"
fi
