#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""make bench: what ember costs, measured next to perf and offcputime.

    bench.py [--quick | --dry] [--out DIR] [--vm-kernels "6.1 ..."]

Runs every measurement of bench/README.md on this machine, writes
DIR/results.csv (one row per figure: section, config, rep, metric, value,
unit), DIR/meta.json (machine, kernel, versions, load, parameters) and
DIR/report.md (bench/report.py), and prints the headline table.

A/B runs are interleaved: each repetition runs every configuration once,
in an order rotated per repetition, and overheads are computed against the
baseline of the same repetition, so the drift of a shared machine hits
both sides of each ratio alike.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EMBER = os.path.join(TOP, "agent", "ember")
SPIN = os.path.join(TOP, ".cache", "bench", "spin")
PINGPONG = os.path.join(TOP, ".cache", "bench", "pingpong")
MALLOCS = os.path.join(TOP, ".cache", "bench", "mallocs")
DEEP = os.path.join(TOP, ".cache", "bench", "deep")
TOUCH = os.path.join(TOP, ".cache", "bench", "touch")
LOCKWORK = os.path.join(TOP, ".cache", "bench", "lockwork")
PY311 = "/usr/bin/python3.11"
ALLOC_LIB = os.path.join(TOP, "preload", "libember-alloc.so")
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"

def uapi_define(name, default):
    """A #define of include/uapi/ember.h (one source for the defaults)."""
    try:
        with open(os.path.join(TOP, "include", "uapi", "ember.h")) as f:
            m = re.search(rf"#define\s+{name}\s+(\d+)", f.read())
        return int(m.group(1)) if m else default
    except OSError:
        return default


DEFAULT_FAULT_PERIOD = uapi_define("EMBER_DEFAULT_FAULT_PERIOD", 64)
DEFAULT_LOCK_MIN_US = uapi_define("EMBER_DEFAULT_LOCK_MIN_NS", 10000) // 1000
RECEIVER = os.path.join(TOP, "selftests", "otlp", "receiver.py")

# Durations in seconds. W: time a profiler gets to attach before the
# workload starts (it is not measured).
MODES = {
    "full": dict(D=5, W=1.5, reps=5, freqs=[19, 99, 999],
                 loss_freqs=[999, 1999, 4999, 9999], loss_D=4,
                 off_D=8, off_reps=7, agent_D=25, agent_reps=2,
                 run_interval=10, sym_D=5, sym_reps=3, cost_D=4,
                 vm_D=4, vm_reps=3, agent_freqs=[19, 99],
                 alloc_D=4, alloc_reps=5, trace_D=1, edge_D=60, edge_interval=5,
                 py_D=6, py_reps=3, py_freqs=[99, 999], py_floor=[999],
                 sc_D=4, sc_reps=3),
    "quick": dict(D=2, W=1.5, reps=3, freqs=[19, 99, 999],
                  loss_freqs=[999, 4999], loss_D=3,
                  off_D=3, off_reps=4, agent_D=8, agent_reps=1,
                  run_interval=5, sym_D=3, sym_reps=1, cost_D=2,
                  vm_D=2, vm_reps=1, agent_freqs=[19, 99],
                  alloc_D=2, alloc_reps=3, trace_D=0.5, edge_D=15, edge_interval=5,
                  py_D=3, py_reps=2, py_freqs=[99, 999], py_floor=[999],
                  sc_D=2, sc_reps=2),
    "dry": dict(D=0.3, W=1.0, reps=1, freqs=[99],
                loss_freqs=[999], loss_D=0.5, agent_freqs=[19],
                off_D=0.3, off_reps=1, agent_D=2, agent_reps=1,
                run_interval=1, sym_D=0.5, sym_reps=1, cost_D=0.5,
                vm_D=0.3, vm_reps=1, alloc_D=0.3, alloc_reps=1, trace_D=0.2,
                edge_D=3, edge_interval=1, py_D=0.5, py_reps=1, py_freqs=[999],
                sc_D=0.5, sc_reps=1),
}


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


class Results:
    def __init__(self, path):
        self.path = path
        self.f = open(path, "w")
        self.f.write("section,config,rep,metric,value,unit\n")

    def add(self, section, config, rep, metric, value, unit=""):
        if isinstance(value, float):
            value = f"{value:.6g}"
        self.f.write(f"{section},{config},{rep},{metric},{value},{unit}\n")
        self.f.flush()


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def kv(line):
    """'a=1 b=2' -> {'a': 1.0, 'b': 2.0}"""
    out = {}
    for tok in line.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def proc_cpu_s(pid):
    """Exact CPU time of every thread of pid (sum_exec_runtime), seconds."""
    total = 0
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, IndexError, ValueError):
                pass
    except OSError:
        return None
    return total / 1e9


def last_pid():
    """The last pid the kernel gave out (pids handed out grow it)."""
    try:
        return int(open("/proc/loadavg").read().split()[4])
    except (OSError, ValueError, IndexError):
        return 0


def pid_max():
    try:
        return int(open("/proc/sys/kernel/pid_max").read())
    except (OSError, ValueError):
        return 1 << 22


def proc_status(pid, key):
    """VmRSS/VmHWM of pid in KiB, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def own_prog_ids(pid):
    """IDs of the BPF programs a process holds (fdinfo of its prog and link
    fds): other people's profilers running at the same time are not ours."""
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return ids
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except (OSError, ValueError, IndexError):
            pass
    return ids


class Profiler:
    """A profiler started in the background and stopped with SIGINT (the
    way a user stops each of them), its stderr kept for its loss line."""

    def __init__(self, kind, tmp, freq=None, offcpu=False, extra=()):
        self.kind = kind
        self.proc = None
        self.errpath = os.path.join(tmp, f"{kind}.err")
        out = os.path.join(tmp, f"{kind}.out")
        if kind == "none":
            return
        if kind == "ember":
            cmd = [EMBER, "record", "-a", "-o", out + ".folded"]
            cmd += ["-e", "offcpu"] if offcpu else ["-F", str(freq)]
            cmd += list(extra)
        elif kind == "perf":
            cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-g", "-a",
                   "-F", str(freq), "-o", out + ".data"]
        elif kind == "offcputime":
            cmd = ["offcputime"] + list(extra)
        elif kind == "offwaketime":
            # bcc's (Debian: bpfcc-tools), folded, system-wide
            cmd = [offwaketime_path(), "-f"] + list(extra)
        else:
            raise ValueError(kind)
        waits = kind != "perf"
        self.proc = subprocess.Popen(
            cmd, stdout=open(out, "w"), stderr=open(self.errpath, "w"),
            stdin=subprocess.DEVNULL)
        # eBPF tools take a variable time (BTF, verifier) to load on a
        # loaded machine: wait until their programs exist, then the caller
        # still gives them W seconds to settle
        self.attach_s = None
        if waits:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 20 and self.proc.poll() is None:
                if own_prog_ids(self.proc.pid):
                    self.attach_s = time.monotonic() - t0
                    break
                time.sleep(0.1)

    def alive(self):
        return self.proc is None or self.proc.poll() is None

    def cpu_s(self):
        return 0.0 if self.proc is None else (proc_cpu_s(self.proc.pid) or 0.0)

    def stop(self, timeout=120):
        """SIGINT, wait; returns (seconds until exit, stderr text)."""
        if self.proc is None:
            return 0.0, ""
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        el = time.monotonic() - t0
        with open(self.errpath) as f:
            err = f.read()
        return el, err


def ember_summary(err):
    """Numbers from ember record's last line: samples, processes, lost."""
    m = {}
    for key, pat in (("samples", r"(\d+) samples"), ("processes", r"(\d+) processes"),
                     ("lost", r"(\d+) lost"), ("offcpu_intervals", r"(\d+) off-CPU intervals")):
        r = re.search(pat, err)
        if r:
            m[key] = int(r.group(1))
    return m


def offwaketime_path():
    return shutil.which("offwaketime-bpfcc") or shutil.which("offwaketime") or "offwaketime"


def perf_lock_bpf():
    """Whether this perf has `perf lock contention -b` (BPF skeletons:
    Debian's linux-perf is built without them)."""
    r = run(["perf", "lock", "contention", "-b", "--", "true"])
    return "BUILD_BPF_SKEL" not in (r.stderr + r.stdout)


def rotate(seq, n):
    n %= len(seq)
    return seq[n:] + seq[:n]


class Bench:
    def __init__(self, args):
        self.args = args
        self.mode = "dry" if args.dry else "quick" if args.quick else "full"
        self.p = MODES[self.mode]
        self.tmp = tempfile.mkdtemp(prefix="ember-bench-")
        self.res = Results(os.path.join(args.out, "results.csv"))
        self.ncpu = os.cpu_count()
        self.notes = []
        self.have = {t: shutil.which(t) is not None
                     for t in ("perf", "offcputime", "bpftool")}
        self.have["offwaketime"] = shutil.which(offwaketime_path()) is not None

    def note(self, msg):
        log(msg)
        self.notes.append(msg)

    # ---- on-CPU overhead -------------------------------------------------
    def oncpu(self):
        p = self.p
        configs = ["none"]
        for f in p["freqs"]:
            configs.append(f"ember{f}")
            if self.have["perf"]:
                configs.append(f"perf{f}")
        if not self.have["perf"]:
            self.note("perf not found: on-CPU comparison with perf skipped (install linux-perf)")
        log(f"on-CPU overhead: {len(configs)} configurations x {p['reps']} repetitions of {p['D']} s")
        for rep in range(p["reps"]):
            for cfg in rotate(configs, rep):
                self.oncpu_one(cfg, rep)

    def oncpu_one(self, cfg, rep):
        p = self.p
        kind = re.match(r"[a-z]+", cfg).group(0)
        freq = int(cfg[len(kind):] or 0)
        prof = Profiler(kind, self.tmp, freq=freq)
        time.sleep(p["W"])
        if not prof.alive():
            _, err = prof.stop()
            self.note(f"{cfg}: profiler exited early: {err.strip()[-200:]}")
            return
        c0 = prof.cpu_s()
        r = run([SPIN, "-d", str(p["D"])])
        c1 = prof.cpu_s()
        stop_s, err = prof.stop()
        w = kv(r.stdout)
        if "ops" not in w:
            self.note(f"{cfg}: spin failed: {r.stderr.strip()}")
            return
        sec = "oncpu"
        self.res.add(sec, cfg, rep, "ops_per_s", w["ops"] / w["secs"], "ops/s")
        self.res.add(sec, cfg, rep, "workload_cpu_s", w["cpu_s"], "s")
        self.res.add(sec, cfg, rep, "profiler_cpu_s", c1 - c0, "s")
        self.res.add(sec, cfg, rep, "ops_per_workload_cpu_s", w["ops"] / w["cpu_s"], "ops/s")
        # the profiler process's CPU as a share of the whole machine: with
        # -a it samples every busy CPU whoever runs there, so its work does
        # not depend on how much of the machine our workload got
        self.res.add(sec, cfg, rep, "profiler_share", (c1 - c0) / (self.ncpu * w["secs"]))
        self.res.add(sec, cfg, rep, "wall_s", w["secs"], "s")
        if kind == "ember":
            s = ember_summary(err)
            for k in ("samples", "lost"):
                if k in s:
                    self.res.add(sec, cfg, rep, k, s[k])
            self.res.add(sec, cfg, rep, "stop_s", stop_s, "s")

    # ---- allocation profiling cost (-e alloc) ----------------------------
    def alloc(self):
        """mallocs (~10M allocations/s) alone, with the sampler preloaded
        but nobody attached, under `ember record -e alloc` at the default
        rate, under `ember record -e alloc -p` (uprobes on libc's entry
        points, with in-use and without), and under a full tracer (perf's
        uprobes on libc's malloc and free, every call trapping, as bcc's
        memleak does)."""
        p = self.p
        # -p: uprobes on a running process's allocator, with in-use
        # (returns and free probed too) and without
        configs = ["none", "preload", "ember", "pid", "pid-noinuse"]
        probes = False
        if self.have["perf"]:
            r = run(["perf", "probe", "-q", "-x", LIBC, "-a", "malloc", "-a", "free"])
            probes = r.returncode == 0
            if probes:
                configs.append("fulltrace")
            else:
                self.note(f"perf probe on {LIBC} failed: full-tracer comparison skipped: "
                          f"{r.stderr.strip()[-200:]}")
        log(f"allocation cost: {len(configs)} configurations x {p['alloc_reps']} "
            f"repetitions of {p['alloc_D']} s")
        try:
            for rep in range(p["alloc_reps"]):
                for cfg in rotate(configs, rep):
                    self.alloc_one(cfg, rep)
        finally:
            if probes:
                run(["perf", "probe", "-q", "-d", "probe_libc:malloc", "-d", "probe_libc:free"])

    def alloc_one(self, cfg, rep):
        p = self.p
        if cfg.startswith("pid"):
            self.alloc_pid(cfg, rep)
            return
        d = p["trace_D"] if cfg == "fulltrace" else p["alloc_D"]
        wl = [MALLOCS, "-d", str(d), "-w", "0.5"]
        env = dict(os.environ)
        if cfg == "preload":
            env["LD_PRELOAD"] = ALLOC_LIB
        if cfg == "ember":
            cmd = [EMBER, "record", "-e", "alloc",
                   "-o", os.path.join(self.tmp, "alloc.folded"), "--"] + wl
        elif cfg == "fulltrace":
            cmd = ["perf", "stat", "-x,", "-o", os.path.join(self.tmp, "stat"),
                   "-e", "probe_libc:malloc", "-e", "probe_libc:free", "--"] + wl
        else:
            cmd = wl
        self.workload_cost("alloc", cfg, rep, cmd, env, r"(\d+) allocation samples")

    def alloc_pid(self, cfg, rep):
        """mallocs started alone, then `ember record -e alloc -p` on it
        while it waits: every call of the malloc family traps."""
        wl = subprocess.Popen([MALLOCS, "-d", str(self.p["trace_D"]), "-w", "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        # reaped as soon as it exits: -p ends when the process is gone,
        # and a zombie is not gone
        got = []
        reaper = threading.Thread(target=lambda: got.extend(wl.communicate()))
        reaper.start()
        time.sleep(0.3)
        cmd = [EMBER, "record", "-e", "alloc", "-p", str(wl.pid),
               "-o", os.path.join(self.tmp, "allocp.folded")]
        if cfg == "pid-noinuse":
            cmd.insert(2, "--alloc-no-inuse")
        e = run(cmd, timeout=60)
        reaper.join()
        out, err = got if len(got) == 2 else ("", "")
        self.workload_result("alloc", cfg, rep, out, (err or "") + e.stderr,
                             r"(\d+) allocation samples")

    def workload_cost(self, sec, cfg, rep, cmd, env, samples_re):
        """Run cmd (a workload printing ops, secs, cpu_s, perhaps under a
        profiler that starts it) and record its throughput per CPU-second."""
        r = run(cmd, env=env)
        self.workload_result(sec, cfg, rep, r.stdout, r.stderr, samples_re)

    def workload_result(self, sec, cfg, rep, stdout, stderr, samples_re):
        w = kv(stdout)
        if "ops" not in w or not w.get("cpu_s"):
            self.note(f"{sec} {cfg}: workload failed: {(stderr or '').strip()[-200:]}")
            return
        self.res.add(sec, cfg, rep, "ops_per_s", w["ops"] / w["secs"], "ops/s")
        self.res.add(sec, cfg, rep, "ops_per_workload_cpu_s", w["ops"] / w["cpu_s"], "ops/s")
        self.res.add(sec, cfg, rep, "ns_per_op", 1e9 * w["cpu_s"] / w["ops"], "ns")
        m = re.search(samples_re, stderr or "")
        if m:
            self.res.add(sec, cfg, rep, "samples_per_s", int(m.group(1)) / w["secs"])

    # ---- page-fault profiling cost (-e faults) ---------------------------
    def faults(self):
        """touch (a minor page fault per page, mapped and unmapped in a
        loop) alone, under `ember record -e faults` at the default period
        (ember: the software perf event, its default; ember-tp: the
        page-fault tracepoints, EMBER_FAULTS_HOOK=tp, for comparison), and
        under perf record -e page-faults at the same period with
        frame-pointer call chains."""
        p = self.p
        configs = ["none", "ember", "ember-tp"] + (["perf"] if self.have["perf"] else [])
        log(f"page-fault cost: {len(configs)} configurations x {p['alloc_reps']} "
            f"repetitions of {p['alloc_D']} s")
        for rep in range(p["alloc_reps"]):
            for cfg in rotate(configs, rep):
                wl = [TOUCH, "-d", str(p["alloc_D"]), "-w", "0.5"]
                env = dict(os.environ)
                if cfg == "ember-tp":
                    env["EMBER_FAULTS_HOOK"] = "tp"
                if cfg.startswith("ember"):
                    wl = [EMBER, "record", "-e", "faults",
                          "-o", os.path.join(self.tmp, "faults.folded"), "--"] + wl
                elif cfg == "perf":
                    wl = ["perf", "record", "-q", "-e", "page-faults",
                          "-c", str(DEFAULT_FAULT_PERIOD), "-g",
                          "-o", os.path.join(self.tmp, "faults.data"), "--"] + wl
                self.workload_cost("faults", cfg, rep, wl, env,
                                   r"(\d+) page-fault samples")

    # ---- CPython frames: per-sample cost (issue 24) ----------------------
    def python(self):
        """bench/python-cost.sh at each of py_freqs: ember_oncpu's own time
        per run (its handler_ns / samples) with 40 distinct Python
        functions bound (44 Python frames a sample) and the same processes
        unbound, beside bench/workloads/deep (33 no-FP native frames) and
        spin, both CPUs busy, interleaved per repetition. Python's cost is
        py40 - py40-off, to set against deep - spin. At the rates in
        py_floor, two measurement builds (--floor: the walk cut after the
        thread state, and the walk without code-object reads) run on the
        same processes: what no cache of check values can go under."""
        p = self.p
        if not os.access(PY311, os.X_OK):
            self.note(f"{PY311} missing: the Python frame cost not measured "
                      "(scripts/install-deps.sh installs it)")
            return
        for hz in p["py_freqs"]:
            d = os.path.join(self.tmp, f"python{hz}")
            floor = hz in p.get("py_floor", [])
            log(f"Python frames: {p['py_reps']} x {6 if floor else 4} runs of "
                f"{p['py_D']} s at {hz} Hz" + (" (and two floor builds)" if floor else ""))
            r = run([os.path.join(TOP, "bench", "python-cost.sh"), "--hz", str(hz),
                     "--reps", str(p["py_reps"]), "--seconds", str(p["py_D"]),
                     "--out", d] + (["--floor"] if floor else []), cwd=TOP)
            rows = os.path.join(d, "python-cost.rows")
            if r.returncode != 0 or not os.path.exists(rows):
                self.note(f"python-cost.sh at {hz} Hz failed: "
                          f"{(r.stderr or r.stdout).strip()[-300:]}")
                continue
            seen = {}
            for line in open(rows):
                label, ns, kept, slots = line.split()
                rep = seen.get(label, 0)
                seen[label] = rep + 1
                cfg = f"{label}-{hz}"
                self.res.add("python", cfg, rep, "ns_per_run", int(ns), "ns")
                self.res.add("python", cfg, rep, "py_frames_per_sample",
                             int(slots) / max(int(kept), 1))

    # ---- stack copy: per-sample cost (issue 25 item 4) -------------------
    def stackcopy(self):
        """bench/stack-copy-cost.sh at 999 Hz: ember_oncpu's own time per
        sample with deep's processes unbound (every sample copied) at
        --stack-copy 0/4/8/12/16 KiB, and perf --call-graph dwarf,N's
        slowdown of deep per sample against perf -g."""
        p = self.p
        d = os.path.join(self.tmp, "stackcopy")
        log(f"stack copy: {p['sc_reps']} x 5 runs of {p['sc_D']} s (+ perf)")
        r = run([os.path.join(TOP, "bench", "stack-copy-cost.sh"), "--hz", "999",
                 "--reps", str(p["sc_reps"]), "--seconds", str(p["sc_D"]),
                 "--out", d], cwd=TOP)
        rows = os.path.join(d, "stack-copy-cost.rows")
        if r.returncode != 0 or not os.path.exists(rows):
            self.note(f"stack-copy-cost.sh failed: "
                      f"{(r.stderr or r.stdout).strip()[-300:]}")
            return
        seen = {}
        for line in open(rows):
            f = line.split()
            key = (f[0], f[1])
            rep = seen.get(key, 0)
            seen[key] = rep + 1
            if f[0] == "ember":
                h, kept, copies, nbytes = (int(x) for x in f[2:6])
                self.res.add("stackcopy", f[1], rep, "ns_per_sample",
                             h / max(kept, 1), "ns")
                self.res.add("stackcopy", f[1], rep, "copied_fraction",
                             copies / max(kept, 1))
                self.res.add("stackcopy", f[1], rep, "bytes_per_copy",
                             nbytes / max(copies, 1), "B")
            else:
                ops, samples, threads, secs = int(f[2]), int(f[3]), int(f[4]), float(f[5])
                cfg = f"perf-{f[1]}"
                self.res.add("stackcopy", cfg, rep, "ops_per_cpu_s",
                             ops / (threads * secs), "ops/s")
                self.res.add("stackcopy", cfg, rep, "samples", samples)

    # ---- lock contention profiling cost (-e lock) ------------------------
    def lock(self):
        """lockwork --bench (two threads pinned to one CPU passing a turn
        through a pthread mutex and condition variable: every op is one
        futex wait and one wake, ~100-200k/s here) alone; under `ember
        record -e lock` at the default --lock-min (10 us, the UAPI's
        EMBER_DEFAULT_LOCK_MIN_NS) and at 0, 1 and 100 us, and with
        --waker; under perf lock (`perf lock contention -b` where perf has
        BPF skeletons, else `perf lock record`, which traces the kernel's
        lock tracepoints only); and under bcc's offwaketime (system-wide,
        started first, as offcputime in section 3). Slowdown per
        CPU-second of the workload, paired per repetition."""
        p = self.p
        mins = [0, 1, DEFAULT_LOCK_MIN_US, 100]
        configs = ["none"] + [f"ember-min{m}" for m in mins] + ["ember-waker"]
        perf_b = False
        if self.have["perf"]:
            perf_b = perf_lock_bpf()
            configs.append("perf-lock-b" if perf_b else "perf-lock-record")
            if not perf_b:
                self.note("perf lock contention -b: this perf has no BPF skeletons "
                          "(BUILD_BPF_SKEL=1); measured `perf lock record` instead "
                          "(kernel lock tracepoints only, written to a file)")
        else:
            self.note("perf not found: perf lock comparison skipped (install linux-perf)")
        if self.have["offwaketime"]:
            configs.append("offwaketime")
        else:
            self.note("offwaketime not found: install bpfcc-tools (scripts/install-deps.sh)")
        log(f"lock cost: {len(configs)} configurations x {p['alloc_reps']} "
            f"repetitions of {p['alloc_D']} s")
        for rep in range(p["alloc_reps"]):
            for cfg in rotate(configs, rep):
                self.lock_one(cfg, rep)

    def lock_one(self, cfg, rep):
        p = self.p
        wl = ["taskset", "-c", "0", LOCKWORK, "--bench", str(p["alloc_D"])]
        env = dict(os.environ)
        if cfg.startswith("ember"):
            extra = ["--waker"] if cfg == "ember-waker" else \
                ["--lock-min", cfg[len("ember-min"):]]
            cmd = [EMBER, "record", "-e", "lock"] + extra + \
                ["-o", os.path.join(self.tmp, "lock.folded"), "--"] + wl
        elif cfg == "perf-lock-b":
            cmd = ["perf", "lock", "contention", "-b", "--"] + wl
        elif cfg == "perf-lock-record":
            cmd = ["perf", "lock", "record", "-o", os.path.join(self.tmp, "lock.data"),
                   "--"] + wl
        elif cfg == "offwaketime":
            prof = Profiler("offwaketime", self.tmp)
            time.sleep(p["W"])
            if not prof.alive():
                _, err = prof.stop()
                why = err.strip()[-200:]
                try:  # bcc prints some of its complaints on stdout
                    err += open(os.path.join(self.tmp, "offwaketime.out")).read()
                except OSError:
                    pass
                if "Unable to find kernel headers" in err:
                    why = ("bcc compiles its programs against the running kernel's "
                           "headers and this kernel has none (no /lib/modules/"
                           f"{platform.release()}/build, no CONFIG_IKHEADERS)")
                elif "kprobes" in err:
                    why = "this kernel has no kprobes (offwaketime attaches one)"
                self.note(f"offwaketime could not run: {why}")
                return
            r = run(wl, env=env)
            prof.stop()
            self.workload_result("lock", cfg, rep, r.stdout, r.stderr, r"$^")
            return
        else:
            cmd = wl
        self.workload_cost("lock", cfg, rep, cmd, env, r"(\d+) lock contentions")

    # ---- per-sample kernel cost (eBPF run time) --------------------------
    def bpf_progs(self, ids):
        r = run(["bpftool", "-j", "prog", "show"])
        try:
            return {x["id"]: x for x in json.loads(r.stdout or "[]") if x["id"] in ids}
        except ValueError:
            return {}

    def bpfcost(self):
        p = self.p
        if not self.have["bpftool"]:
            self.note("bpftool not found: eBPF program run time not measured")
            return
        knob = "/proc/sys/kernel/bpf_stats_enabled"
        try:
            old = open(knob).read().strip()
            open(knob, "w").write("1")
        except OSError as e:
            self.note(f"cannot enable {knob}: {e}: eBPF run time not measured")
            return
        try:
            runs = [("ember", f, False, SPIN) for f in p["freqs"] if f != 19]
            # ~33-frame stacks without frame pointers: the table walk
            # (issue 13's target: under 2 us per sample at 99 Hz)
            runs += [("ember", f, False, DEEP) for f in p["freqs"] if f in (99, 999)]
            runs.append(("ember", 0, True, PINGPONG))
            if self.have["offcputime"]:
                runs.append(("offcputime", 0, True, PINGPONG))
            log(f"per-sample kernel cost: {len(runs)} runs with kernel.bpf_stats_enabled=1")
            for kind, f, off, wl in runs:
                self.bpfcost_one(kind, f, off, wl)
        finally:
            open(knob, "w").write(old)

    def bpfcost_one(self, kind, freq, offcpu, workload):
        p = self.p
        cfg = f"{kind}{freq}" if freq else f"{kind}-offcpu"
        if workload == DEEP:
            cfg += "-deep"
        wl = subprocess.Popen([workload, "-d", "600"], stdout=subprocess.DEVNULL)
        prof = Profiler(kind, self.tmp, freq=freq, offcpu=offcpu)
        time.sleep(p["W"] + p["cost_D"])
        progs = self.bpf_progs(own_prog_ids(prof.proc.pid))
        wl.kill()
        prof.stop()
        wl.wait()
        for x in progs.values():
            cnt, ns = x.get("run_cnt", 0), x.get("run_time_ns", 0)
            if not cnt:
                continue
            name = x.get("name", str(x["id"]))
            self.res.add("bpfcost", cfg, 0, f"{name}.run_cnt", cnt)
            self.res.add("bpfcost", cfg, 0, f"{name}.ns_per_run", ns / cnt, "ns")
        if not progs:
            self.note(f"{cfg}: no new BPF programs seen")

    # ---- off-CPU overhead ------------------------------------------------
    def prog_runs(self, pid):
        """{program name: (run_time_ns, run_cnt)} of the programs pid holds,
        cumulative since load (the caller takes the difference over its
        window), or None without bpftool."""
        if not self.have["bpftool"] or pid is None:
            return None
        out = {}
        for x in self.bpf_progs(own_prog_ids(pid)).values():
            ns, cnt = out.get(x.get("name", str(x["id"])), (0, 0))
            out[x.get("name", str(x["id"]))] = (ns + x.get("run_time_ns", 0),
                                                cnt + x.get("run_cnt", 0))
        return out

    def offcpu(self):
        """Off-CPU cost, two ways, from the same interleaved runs:
        - CPU cost: 1 - round trips per CPU-second (pingpong + profiler
          process) against the same repetition's baseline. Paired, but its
          spread on a shared 2-CPU machine is as large as the effect.
        - per-switch cost: the profiler's eBPF program time (bpf_stats, all
          its programs, over the measured window only) plus its process's
          CPU time, divided by its sched_switch program's runs in that
          window. Its own work only, so other tenants barely move it.
        kernel.bpf_stats_enabled stays on for every off-CPU run (baseline
        included): each program run then pays two clock reads, for both
        tools alike."""
        p = self.p
        # each tool with its defaults (ember: every interval; offcputime:
        # 1 us), then both dropping intervals under 1 ms
        configs = ["none", "ember-offcpu", "ember-offcpu-1ms"]
        if self.have["offcputime"]:
            configs += ["offcputime", "offcputime-1ms"]
        else:
            self.note("offcputime not found: install libbpf-tools")
        knob = "/proc/sys/kernel/bpf_stats_enabled"
        old = None
        try:
            old = open(knob).read().strip()
            open(knob, "w").write("1")
        except OSError as e:
            self.note(f"cannot enable {knob}: {e}: no per-switch off-CPU cost")
        log(f"off-CPU overhead: {len(configs)} configurations x {p['off_reps']} repetitions of {p['off_D']} s")
        try:
            for rep in range(p["off_reps"]):
                for cfg in rotate(configs, rep):
                    self.offcpu_one(cfg, rep)
        finally:
            if old is not None:
                open(knob, "w").write(old)

    def offcpu_one(self, cfg, rep):
        p = self.p
        kind = cfg.split("-")[0]
        extra = ()
        if cfg.endswith("-1ms"):
            extra = ("--offcpu-min", "1000") if kind == "ember" else ("-m", "1000")
        prof = Profiler(kind, self.tmp, offcpu=True, extra=extra)
        time.sleep(p["W"])
        pid = prof.proc.pid if prof.proc else None
        b0 = self.prog_runs(pid)
        c0 = prof.cpu_s()
        r = run([PINGPONG, "-d", str(p["off_D"]), "-c", "0"])
        c1 = prof.cpu_s()
        b1 = self.prog_runs(pid)
        _, err = prof.stop()
        w = kv(r.stdout)
        if "roundtrips" not in w:
            self.note(f"{cfg}: pingpong failed: {r.stderr.strip()}")
            return
        add = lambda m, v, u="": self.res.add("offcpu", cfg, rep, m, v, u)
        add("roundtrips_per_s", w["roundtrips_per_s"], "1/s")
        add("profiler_cpu_s", c1 - c0, "s")
        add("roundtrips_per_cpu_s", w["roundtrips"] / (w["cpu_s"] + c1 - c0), "1/s")
        if b0 and b1:
            d = {n: (v[0] - b0.get(n, (0, 0))[0], v[1] - b0.get(n, (0, 0))[1])
                 for n, v in b1.items()}
            sw = sum(c for n, (_, c) in d.items() if "switch" in n)
            bpf_ns = sum(ns for ns, _ in d.values())
            for n, (ns, c) in d.items():
                if c > 0:
                    add(f"{n}.ns_per_run", ns / c, "ns")
                    add(f"{n}.runs", c)
            if sw > 0:
                add("switches", sw)
                add("bpf_ns_per_switch", bpf_ns / sw, "ns")
                add("ns_per_switch", (bpf_ns + (c1 - c0) * 1e9) / sw, "ns")
        if kind == "ember":
            s = ember_summary(err)
            for k in ("offcpu_intervals", "lost"):
                if k in s:
                    add(k, s[k])

    # ---- loss ------------------------------------------------------------
    def loss(self):
        p = self.p
        log(f"loss: ember record -a at {p['loss_freqs']} Hz, all CPUs busy")
        for f in p["loss_freqs"]:
            wl = subprocess.Popen([SPIN, "-d", str(p["loss_D"] + 3)], stdout=subprocess.DEVNULL)
            r = run([EMBER, "record", "-a", "-F", str(f), "-d", str(p["loss_D"]),
                     "-o", os.path.join(self.tmp, "loss.folded")])
            wl.wait()
            s = ember_summary(r.stderr)
            if "samples" not in s:
                self.note(f"loss at {f} Hz: ember record failed: {r.stderr.strip()[-200:]}")
                continue
            self.res.add("loss", f"ember{f}", 0, "samples", s["samples"])
            self.res.add("loss", f"ember{f}", 0, "lost", s.get("lost", 0))
            self.res.add("loss", f"ember{f}", 0, "samples_per_cpu_s",
                         s["samples"] / (p["loss_D"] * self.ncpu), "1/s")

    # ---- agent CPU and memory --------------------------------------------
    def agent(self):
        p = self.p
        configs = []
        for f in p["agent_freqs"]:
            configs.append(("record", f))
            configs.append(("run", f))
        # a host that also starts programs all the time (builds, shell
        # pipelines): every exec is a new process to learn
        configs.append(("run+churn", p["agent_freqs"][0]))
        # the same beside another tree's agent (BENCH_BASE_EMBER=path, e.g.
        # main's agent/ember): per new process, interleaved in one run
        if os.environ.get("BENCH_BASE_EMBER"):
            configs.append(("run+churn-base", p["agent_freqs"][0]))
        port = None
        recv = None
        rdir = os.path.join(self.tmp, "otlp")
        os.makedirs(rdir, exist_ok=True)
        pf = os.path.join(self.tmp, "port")
        if os.path.exists(RECEIVER):
            # the receiver exits after --lifetime (300 s by default), shorter
            # than this section at full length
            life = len(configs) * p["agent_reps"] * (p["agent_D"] + 10) + p["edge_D"] + 300
            recv = subprocess.Popen([sys.executable, RECEIVER, "--port-file", pf, "--dir", rdir,
                                     "--lifetime", str(life)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(50):
                if os.path.exists(pf) and open(pf).read().strip():
                    port = open(pf).read().strip()
                    break
                time.sleep(0.1)
        if not port:
            self.note("no loopback OTLP receiver: ember run measured against a closed port")
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
            s.close()
        log(f"agent: CPU and RSS of ember record -a / ember run at {p['agent_freqs']} Hz, {p['agent_D']} s each, busy system")
        wl = subprocess.Popen([SPIN, "-d", str(10 + len(configs) * p["agent_reps"] * (p["agent_D"] + 6))],
                              stdout=subprocess.DEVNULL)
        try:
            for rep in range(p["agent_reps"]):
                for cmd, f in rotate(configs, rep):
                    self.agent_one(cmd, f, rep, port)
            wl.kill()
            wl.wait()
            self.agent_edges(port)
        finally:
            if wl.poll() is None:
                wl.kill()
                wl.wait()
            if recv:
                recv.terminate()
                recv.wait()
        exports = len([n for n in os.listdir(rdir) if n.endswith(".json")])
        self.res.add("agent", "run", 0, "otlp_exports_received", exports)

    def agent_edges(self, port):
        """ember run at 999 Hz on every busy CPU, a profile every
        edge_interval s for edge_D s: at each interval edge a profile is
        symbolized, encoded and exported while the rings keep filling; the
        backend's own counters say how many records were lost."""
        p = self.p
        D, iv = p["edge_D"], p["edge_interval"]
        log(f"agent: ember run -F 999 -i {iv} for {D} s, every CPU busy: records lost at interval edges")
        wl = subprocess.Popen([SPIN, "-d", str(D + 10)], stdout=subprocess.DEVNULL)
        # kept with the report: its export errors say why an export failed
        err = os.path.join(self.args.out, "edges-ember-run.err")
        try:
            with open(err, "w") as ef:
                proc = subprocess.Popen([EMBER, "run", "-c", "/dev/null", "--endpoint",
                                         f"http://127.0.0.1:{port}", "-i", str(iv), "-F", "999"],
                                        stdout=subprocess.DEVNULL, stderr=ef)
                time.sleep(D + 0.5)
                proc.send_signal(signal.SIGTERM)
                proc.wait()
        finally:
            wl.kill()
            wl.wait()
        text = open(err).read()
        m = re.search(r"stopped: (\d+) intervals, profiles exported (\d+), failed (\d+), "
                      r"dropped (\d+)", text)
        empty = re.search(r"empty intervals (\d+)", text)
        lost = re.search(r"records lost (\d+)", text)
        if not m or not lost:
            self.note(f"ember run -F 999 -i {iv}: no summary: {text.strip()[-200:]}")
            return
        self.res.add("agent", "edges999", 0, "intervals", int(m.group(1)))
        self.res.add("agent", "edges999", 0, "exported", int(m.group(2)))
        self.res.add("agent", "edges999", 0, "export_failed", int(m.group(3)))
        self.res.add("agent", "edges999", 0, "export_dropped", int(m.group(4)))
        if empty:
            self.res.add("agent", "edges999", 0, "empty", int(empty.group(1)))
        self.res.add("agent", "edges999", 0, "lost", int(lost.group(1)))

    def agent_one(self, cmd, freq, rep, port):
        p = self.p
        out = os.path.join(self.tmp, "agent.folded")
        churn = None
        binary = os.environ["BENCH_BASE_EMBER"] if cmd.endswith("-base") else EMBER
        if cmd == "record":
            argv = [binary, "record", "-a", "-F", str(freq), "-o", out]
        else:
            argv = [binary, "run", "-c", "/dev/null", "--endpoint", f"http://127.0.0.1:{port}",
                    "-i", str(p["run_interval"]), "-F", str(freq)]
        if cmd.startswith("run+churn"):
            churn = subprocess.Popen(["sh", "-c", "while :; do /bin/true; sh -c 'ls / | wc -l' >/dev/null; done"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        err = open(os.path.join(self.tmp, "agent.err"), "w")
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        t0 = time.monotonic()
        warm = min(2.0, p["agent_D"] / 3)
        samples = []   # (t, cpu_s, rss_kib, anon_kib, last_pid)
        hwm = 0
        while time.monotonic() - t0 < p["agent_D"] and proc.poll() is None:
            time.sleep(0.25)
            t = time.monotonic() - t0
            c, rss = proc_cpu_s(proc.pid), proc_status(proc.pid, "VmRSS")
            anon = proc_status(proc.pid, "RssAnon")
            hwm = max(hwm, proc_status(proc.pid, "VmHWM") or 0)
            if c is not None and rss is not None:
                samples.append((t, c, rss, anon or 0, last_pid()))
        if churn:
            churn.kill()
            churn.wait()
        if proc.poll() is not None:
            self.note(f"ember {cmd} -F {freq} exited early: {open(err.name).read()[-200:]}")
            return
        ts = time.monotonic()
        proc.send_signal(signal.SIGINT if cmd == "record" else signal.SIGTERM)
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = status
        stop_s = time.monotonic() - ts
        steady = [s for s in samples if s[0] >= warm]
        if len(steady) < 2:
            self.note(f"ember {cmd} -F {freq}: too few samples")
            return
        cfg = f"{cmd}{freq}"
        share = (steady[-1][1] - steady[0][1]) / (steady[-1][0] - steady[0][0])
        rss = sorted(s[2] for s in steady[len(steady) // 2:])
        anon = sorted(s[3] for s in steady[len(steady) // 2:])
        self.res.add("agent", cfg, rep, "cpu_share_of_core", share * 100, "%")
        forks = (steady[-1][4] - steady[0][4]) % pid_max()   # pids wrap
        if churn and forks > 0:
            # the load the CPU share is for: new processes (pids) a second,
            # and the agent's CPU per new process
            dt = steady[-1][0] - steady[0][0]
            self.res.add("agent", cfg, rep, "new_pids_per_s", forks / dt, "1/s")
            self.res.add("agent", cfg, rep, "cpu_us_per_new_pid",
                         (steady[-1][1] - steady[0][1]) * 1e6 / forks, "us")
        self.res.add("agent", cfg, rep, "steady_rss_mib", rss[len(rss) // 2] / 1024, "MiB")
        # anonymous memory is the agent's own; the rest is mapped files
        # (its libraries, ELF files being symbolized), which the kernel can
        # drop and share
        self.res.add("agent", cfg, rep, "steady_rss_anon_mib", anon[len(anon) // 2] / 1024, "MiB")
        self.res.add("agent", cfg, rep, "hwm_running_mib", hwm / 1024, "MiB")
        # ru_maxrss covers the whole life, including writing the profile
        self.res.add("agent", cfg, rep, "peak_rss_mib", ru.ru_maxrss / 1024, "MiB")
        self.res.add("agent", cfg, rep, "stop_s", stop_s, "s")

    # ---- cold symbolization ----------------------------------------------
    def symbolize(self):
        p = self.p
        log(f"symbolization: {p['sym_reps']} cold ember record -a runs, stop to profile written")
        wl = subprocess.Popen([SPIN, "-d", str(p["sym_reps"] * (p["sym_D"] + p["W"] + 20))],
                              stdout=subprocess.DEVNULL)
        try:
            for rep in range(p["sym_reps"]):
                if os.environ.get("BENCH_DROP_CACHES") == "1":
                    subprocess.run(["sync"])
                    open("/proc/sys/vm/drop_caches", "w").write("3")
                out = os.path.join(self.tmp, f"sym{rep}.folded")
                prof = Profiler("ember", self.tmp, freq=99, extra=["-o", out])
                time.sleep(p["W"] + p["sym_D"])
                stop_s, err = prof.stop()
                s = ember_summary(err)
                stacks = sum(1 for _ in open(out)) if os.path.exists(out) else 0
                self.res.add("symbolize", "ember99", rep, "stop_to_written_s", stop_s, "s")
                self.res.add("symbolize", "ember99", rep, "processes", s.get("processes", 0))
                self.res.add("symbolize", "ember99", rep, "unique_stacks", stacks)
        finally:
            wl.kill()
            wl.wait()

    # ---- module in VMs -----------------------------------------------------
    def vm(self):
        kernels = self.args.vm_kernels.split()
        if not kernels:
            self.note("VM part skipped (no kernels asked: BENCH_VM_KERNELS is empty)")
            return
        if not shutil.which("qemu-system-x86_64"):
            self.note("VM part skipped: qemu-system-x86_64 missing")
            return
        for k in kernels:
            self.vm_one(k)

    def vm_one(self, k):
        p = self.p
        kdir = run([os.path.join(TOP, "scripts", "fetch-kernels.sh"), "--kdir", k], cwd=TOP)
        ver = run([os.path.join(TOP, "scripts", "fetch-kernels.sh"), "--version", k], cwd=TOP)
        if kdir.returncode or ver.returncode:
            self.note(f"VM {k}: kernel unavailable: {kdir.stderr.strip()[-200:]}")
            return
        ko = os.path.join(self.tmp, f"ember-{k}.ko")
        # the tree's ember.ko is shared by every build: copy it at once and
        # check that it is really for this kernel
        for _ in range(3):
            b = run(["make", "-s", "module", f"KDIR={kdir.stdout.strip()}"], cwd=TOP)
            if b.returncode == 0:
                # kmod/kmod.mk builds in a directory of its own per kernel:
                # take the module from there, else the tree's copy
                own = os.path.join(TOP, ".cache", "kmod",
                                   os.path.abspath(kdir.stdout.strip()).replace("/", "_"),
                                   "build", "ember.ko")
                shutil.copy(own if os.path.exists(own) else os.path.join(TOP, "ember.ko"), ko)
                vm = run(["modinfo", "-F", "vermagic", ko]).stdout.split()
                if vm and vm[0] == ver.stdout.strip():
                    break
            time.sleep(2)
        else:
            self.note(f"VM {k}: could not build ember.ko: {b.stderr.strip()[-300:]}")
            return
        pay = os.path.join(self.tmp, "bench")
        os.makedirs(pay, exist_ok=True)
        for f in (EMBER, SPIN, PINGPONG, os.path.join(TOP, "bench", "vm", "guest.sh")):
            shutil.copy(f, pay)
        # CFI unwinding cost in the module: the no-frame-pointer workload
        # and the script that compares tables with the FP walk
        uw = os.path.join(TOP, "agent", "gen", "tests", "unwind-gcc")
        if run(["make", "-s", "unwind-work"], cwd=TOP).returncode == 0 and \
                os.path.isdir(uw):
            shutil.copytree(uw, os.path.join(pay, "unwind-gcc"), dirs_exist_ok=True)
            shutil.copy(os.path.join(TOP, "selftests", "unwind", "check-cost.sh"), pay)
        # perf -a synthesizes every process's mappings and ember loads
        # symbols at start: both take seconds under TCG
        env = dict(BENCH_D=p["vm_D"], BENCH_W=max(p["W"], 3), BENCH_REPS=p["vm_reps"],
                   BENCH_FREQS=" ".join(map(str, p["freqs"])))
        envs = " ".join(f"{a}='{b}'" for a, b in env.items())
        timeout = int(p["vm_reps"] * 11 * (p["vm_D"] + 3 + 10) + 300)
        logf = os.path.join(self.args.out, f"vm-{k}.log")
        cmd = [os.path.join(TOP, "selftests", "vm", "run-vm.sh"), "--kernel", k,
               "--payload", pay, "--module", ko, "--smp", "2", "--mem", "1G",
               "--timeout", str(timeout), "--log", logf,
               "--cmd", f"{envs} sh /payload/bench/guest.sh"]
        for hf in ("/usr/bin/perf", "/usr/sbin/bpftool", "/usr/sbin/offcputime"):
            if os.path.exists(hf):
                cmd += ["--host-file", hf]
        log(f"VM {k}: module on-CPU ratios, {p['vm_reps']} repetitions of {p['vm_D']} s (TCG)")
        outf = os.path.join(self.args.out, f"vm-{k}.out")
        with open(outf, "w") as o, open(os.path.join(self.tmp, "vm.err"), "w") as e:
            proc = subprocess.Popen(cmd, cwd=TOP, stdout=o, stderr=e)
            self.host_windows = watch_qemu(proc)
        r = subprocess.CompletedProcess(cmd, proc.returncode, open(outf).read(),
                                        open(os.path.join(self.tmp, "vm.err")).read())
        self.parse_vm(k, r.stdout)
        if r.returncode:
            self.note(f"VM {k}: run-vm exit {r.returncode} (log {logf}): {r.stderr.strip()[-200:]}")
        elif os.path.exists(logf):
            os.unlink(logf)

    def parse_vm(self, k, out):
        status_cfg = None
        windows = list(self.host_windows)   # one per BENCHROW/BENCHOFF, in order
        for line in out.splitlines():
            if line.startswith(("BENCHROW ", "BENCHOFF ")) and windows:
                w = kv(line)
                hc = windows.pop(0)
                work = w.get("ops", w.get("roundtrips"))
                if hc and work:
                    sec = f"vm{k}" if line.startswith("BENCHROW") else f"vm{k}off"
                    self.res.add(sec, w.get("config"), int(w.get("rep", 0)),
                                 "work_per_host_cpu_s", work / hc, "1/s")
                    self.res.add(sec, w.get("config"), int(w.get("rep", 0)),
                                 "emulator_host_cpu_s", hc, "s")
            if line.startswith("BENCHROW "):
                w = kv(line)
                cfg, rep = w.get("config"), int(w.get("rep", 0))
                if "ops" not in w or not w.get("wall"):
                    continue
                sec = f"vm{k}"
                self.res.add(sec, cfg, rep, "ops_per_s", w["ops"] / w["wall"], "ops/s")
                self.res.add(sec, cfg, rep, "ops_per_workload_cpu_s", w["ops"] / w["cpu"], "ops/s")
                self.res.add(sec, cfg, rep, "profiler_cpu_s", w.get("profcpu", 0), "s")
                self.res.add(sec, cfg, rep, "profiler_share", w.get("profcpu", 0) / (2 * w["wall"]))
                if "lost" in w:
                    self.res.add(sec, cfg, rep, "lost", w["lost"])
            elif line.startswith("BENCHOFF "):
                w = kv(line)
                cfg, rep = w.get("config"), int(w.get("rep", 0))
                if "roundtrips" not in w or not w.get("wall"):
                    continue
                sec = f"vm{k}off"
                self.res.add(sec, cfg, rep, "roundtrips_per_s", w["roundtrips"] / w["wall"], "1/s")
                self.res.add(sec, cfg, rep, "roundtrips_per_cpu_s",
                             w["roundtrips"] / (w["cpu"] + w.get("profcpu", 0)), "1/s")
                self.res.add(sec, cfg, rep, "profiler_cpu_s", w.get("profcpu", 0), "s")
            elif line.startswith("BENCHOFFSTAT "):
                # per-switch cost of one off-CPU run: the module's probe
                # time, or the eBPF programs' run time over the run
                w = kv(line)
                if w.get("switches"):
                    sec, cfg, rep = f"vm{k}off", w.get("config"), int(w.get("rep", 0))
                    self.res.add(sec, cfg, rep, "switches", w["switches"])
                    self.res.add(sec, cfg, rep, "ns_per_switch", w["ns_per_switch"], "ns")
            elif line.startswith("BENCHSTATUS "):
                status_cfg = kv(line).get("config")
                self.vm_status = dict(samples=0, ns=0)
            elif line.startswith("BENCHSTATUSEND"):
                st = self.vm_status
                if st["samples"]:
                    self.res.add(f"vm{k}", status_cfg, 0, "module_ns_per_sample",
                                 st["ns"] / st["samples"], "ns")
                    self.res.add(f"vm{k}", status_cfg, 0, "module_samples", st["samples"])
                status_cfg = None
            elif status_cfg is not None:
                # "  cpu online samples filtered records lost ns/sample"
                f = line.split()
                if len(f) == 7 and f[0].isdigit() and f[1] in ("yes", "no"):
                    self.vm_status["samples"] += int(f[2])
                    self.vm_status["ns"] += int(f[2]) * int(f[6])
            elif line.startswith("BENCHBPFJSON "):
                _, cfg, js = line.split(" ", 2)
                try:
                    progs = json.loads(js)
                except ValueError:
                    self.note(f"VM {k}: unreadable bpftool output")
                    continue
                for x in progs:
                    if x.get("name", "").startswith("ember_") and x.get("run_cnt"):
                        c = cfg.split("=", 1)[1]
                        self.res.add(f"vm{k}", c, 0, f"{x['name']}.run_cnt", x["run_cnt"])
                        self.res.add(f"vm{k}", c, 0, f"{x['name']}.ns_per_run",
                                     x["run_time_ns"] / x["run_cnt"], "ns")
            elif line.startswith("BENCHNOTE "):
                self.note(f"VM {k}: {line[10:]}")

    # ---- machine description -----------------------------------------------
    def meta(self, when):
        def cmd_out(c):
            try:
                return run(c).stdout.strip() or run(c).stderr.strip()
            except OSError:
                return "not installed"
        cpu = ""
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        mem = proc_meminfo()
        def sysctl(name):
            try:
                return open("/proc/sys/" + name.replace(".", "/")).read().strip()
            except OSError:
                return "?"
        return dict(
            mode=self.mode, params=self.p, when=when,
            host=socket.gethostname(), cpu=cpu, ncpu=self.ncpu, mem_gib=mem,
            kernel=platform.release(), kernel_version=platform.version(),
            os=os_release(),
            ember=cmd_out([EMBER, "--version"]),
            ember_git=cmd_out(["git", "-C", TOP, "describe", "--always", "--dirty"]),
            perf=cmd_out(["perf", "--version"]) if self.have["perf"] else "not installed",
            offcputime=dpkg_version("libbpf-tools"),
            bpftool=cmd_out(["bpftool", "--version"]).splitlines()[0] if self.have["bpftool"] else "not installed",
            backend=cmd_out([EMBER, "status"]).splitlines()[-1],
            ember_bpf_flavour=ember_bpf_flavour(),
            perf_event_max_sample_rate=sysctl("kernel.perf_event_max_sample_rate"),
            perf_event_paranoid=sysctl("kernel.perf_event_paranoid"),
            vm_kernels=self.args.vm_kernels,
            notes=self.notes,
        )


def descendants_named(root, prefix):
    """PIDs of processes under root whose comm starts with prefix."""
    parent = {}
    comm = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
            r = st.rindex(")")
            comm[int(d)] = st[st.index("(") + 1:r]
            parent[int(d)] = int(st[r + 2:].split()[1])
        except (OSError, ValueError):
            continue
    out = []
    for pid, c in comm.items():
        if not c.startswith(prefix):
            continue
        p = pid
        while p > 1 and p in parent:
            p = parent[p]
            if p == root:
                out.append(pid)
                break
    return out


def watch_qemu(proc):
    """While a run-vm.sh runs: follow the guest console (the file qemu's
    -serial writes, live) and read qemu's own CPU time at every "BENCHT
    begin/end" line. Returns the host CPU seconds of each begin..end window,
    in order. Under TCG the guest's clocks follow the wall clock while the
    emulated CPU gets whatever share of the host the other tenants leave,
    so work per host CPU-second of the emulator is the stable measure."""
    qemu, console, pos, begin, windows = None, None, 0, None, []
    buf = ""
    while proc.poll() is None:
        time.sleep(0.05)
        if qemu is None:
            pids = descendants_named(proc.pid, "qemu-system")
            if not pids:
                continue
            qemu = pids[0]
            try:
                args = open(f"/proc/{qemu}/cmdline").read().split("\0")
            except OSError:
                qemu = None
                continue
            for a in args:
                if a.startswith("file:") and a.endswith("console.log"):
                    console = a[5:]
            if console is None:
                return windows
        try:
            with open(console, "rb") as f:
                f.seek(pos)
                data = f.read()
        except OSError:
            continue
        if not data:
            continue
        cpu = proc_cpu_s(qemu)
        pos += len(data)
        buf += data.decode("utf-8", "replace")
        *lines, buf = buf.split("\n")
        for line in lines:
            line = line.strip()
            if line == "BENCHT begin":
                begin = cpu
            elif line == "BENCHT end":
                windows.append(cpu - begin if begin is not None and cpu is not None else None)
                begin = None
    return windows


def ember_bpf_flavour():
    """How the eBPF backend loaded here (tracepoint flavour, off-CPU mode)."""
    r = subprocess.run([EMBER, "record", "-a", "-e", "cpu,offcpu", "-d", "0.2",
                        "-o", "/dev/null", "--format", "folded"], capture_output=True,
                       text=True, env=dict(os.environ, EMBER_BPF_VERBOSE="1"))
    for line in r.stderr.splitlines():
        if line.startswith("ember: bpf:"):
            return line[len("ember: bpf:"):].strip()
    return "unknown"


def proc_meminfo():
    with open("/proc/meminfo") as f:
        return round(int(f.readline().split()[1]) / 1024 / 1024, 1)


def os_release():
    try:
        for line in open("/etc/os-release"):
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return "?"


def dpkg_version(pkg):
    r = run(["dpkg-query", "-W", "-f=${Version}", pkg])
    return f"{pkg} {r.stdout}" if r.returncode == 0 else "not installed"


def loadavg():
    return open("/proc/loadavg").read().split()[:3]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dry", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--vm-kernels", default=os.environ.get("BENCH_VM_KERNELS"))
    ap.add_argument("--sections", default=os.environ.get("BENCH_SECTIONS",
                    "oncpu bpfcost offcpu loss agent symbolize alloc faults lock python stackcopy vm"))
    args = ap.parse_args()
    if args.vm_kernels is None:
        # the dry run proves the scripts, it does not boot kernels
        args.vm_kernels = "" if args.dry else "6.1"
    now = datetime.datetime.now(datetime.timezone.utc)
    if not args.out:
        args.out = os.path.join(TOP, "bench", "results",
                                f"{now:%Y-%m-%d}-{socket.gethostname()}")
    os.makedirs(args.out, exist_ok=True)
    if os.geteuid() != 0:
        sys.exit("bench: run as root (ember, perf -a and offcputime need CAP_BPF/CAP_PERFMON)")
    for b in (EMBER, SPIN, PINGPONG, MALLOCS, TOUCH, DEEP, LOCKWORK):
        if not os.access(b, os.X_OK):
            sys.exit(f"bench: {b} missing: run `make bench` (it builds them)")
    bench = Bench(args)
    t0 = time.monotonic()
    load_before = loadavg()
    uptime_before = run(["uptime"]).stdout.strip()
    log(f"mode {bench.mode}, writing {args.out}; load {' '.join(load_before)}")
    try:
        for s in args.sections.split():
            getattr(bench, s)()
    finally:
        shutil.rmtree(bench.tmp, ignore_errors=True)
    meta = bench.meta(now.strftime("%Y-%m-%d %H:%M UTC"))
    meta.update(load_before=load_before, load_after=loadavg(),
                uptime_before=uptime_before, uptime_after=run(["uptime"]).stdout.strip(),
                duration_s=round(time.monotonic() - t0), sections=args.sections.split())
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    bench.res.f.close()
    r = subprocess.run([sys.executable, os.path.join(TOP, "bench", "report.py"), args.out])
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
