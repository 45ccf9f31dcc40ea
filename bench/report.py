#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write DIR/report.md from DIR/results.csv and DIR/meta.json (written by
bench/bench.py) and print its headline table. Every figure in the report
comes from results.csv; how to read them is in the report itself and in
bench/README.md.

    report.py DIR
"""
import csv
import json
import os
import statistics
import sys
from collections import defaultdict


def load(d):
    rows = defaultdict(dict)          # (section, config, metric) -> {rep: value}
    with open(os.path.join(d, "results.csv")) as f:
        for r in csv.DictReader(f):
            try:
                v = float(r["value"])
                rep = int(r["rep"])
            except (TypeError, ValueError):
                continue        # a torn line (a run killed mid-write)
            rows[(r["section"], r["config"], r["metric"])][rep] = v
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    return rows, meta


def med(vals):
    return statistics.median(vals) if vals else None


def pct(v, digits=2):
    return "n/a" if v is None else f"{v * 100:.{digits}f}%"


def num(v, fmt="{:.0f}"):
    return "n/a" if v is None else fmt.format(v)


class Report:
    def __init__(self, d):
        self.rows, self.meta = load(d)
        self.d = d
        self.out = []
        self.verdicts = []   # (target, verdict, detail)

    def w(self, s=""):
        self.out.append(s)

    def vals(self, sec, cfg, metric):
        return self.rows.get((sec, cfg, metric), {})

    def m(self, sec, cfg, metric):
        return med(list(self.vals(sec, cfg, metric).values()))

    def overhead(self, sec, cfg, metric, base="none"):
        """Paired overhead 1 - cfg/base per repetition: (median, min, max, n)."""
        a, b = self.vals(sec, cfg, metric), self.vals(sec, base, metric)
        o = [1 - a[r] / b[r] for r in a if r in b and b[r]]
        if not o:
            return None
        return (med(o), min(o), max(o), len(o))

    def cpu_cost(self, sec, cfg, base="none", part="total"):
        """On-CPU cost per repetition: work lost per CPU-second of the
        workload (interrupts that ran on top of it), plus the profiler
        process's share of the machine. part: total, irq or process."""
        a = self.vals(sec, cfg, "ops_per_workload_cpu_s")
        b = self.vals(sec, base, "ops_per_workload_cpu_s")
        sh = self.vals(sec, cfg, "profiler_share")
        o = []
        for r in a:
            if r not in b or not b[r]:
                continue
            irq, proc = 1 - a[r] / b[r], sh.get(r, 0.0)
            o.append({"total": irq + proc, "irq": irq, "process": proc}[part])
        if not o:
            return None
        return (med(o), min(o), max(o), len(o))

    @staticmethod
    def fo(o):
        if o is None:
            return "n/a"
        if o[3] == 1:
            return pct(o[0])
        return f"{pct(o[0])} [{pct(o[1])} .. {pct(o[2])}]"

    # ------------------------------------------------------------------
    def configs(self, sec):
        seen = []
        for (s, c, _m) in self.rows:
            if s == sec and c not in seen:
                seen.append(c)
        return seen

    def freqs(self):
        fs = sorted({int(c[5:]) for c in self.configs("oncpu") if c.startswith("ember")})
        return fs

    def bpf_ns_per_sample(self, freq):
        return self.m("bpfcost", f"ember{freq}", "ember_oncpu.ns_per_run")

    def oncpu_section(self):
        self.w("## 1. On-CPU overhead (this host, eBPF backend)")
        self.w()
        self.w("Workload: `spin` (bench/workloads/spin.c), one busy thread per CPU for a fixed time; "
               "profilers system-wide (`ember record -a -F HZ`, "
               "`perf record -e cpu-clock -g -a -F HZ`), attached before the workload starts. "
               "**CPU cost** = **in-context cost** (1 - work per CPU-second of the workload / the "
               "same without a profiler: the workload's exact CPU time holds the sampling "
               "interrupts that ran on top of it) + **profiler process** (its CPU time / "
               "(CPUs x wall time): with -a it samples every busy CPU whoever runs there). "
               "**Slowdown** = 1 - work per wall second / the same without a profiler. All "
               "paired per repetition; median [min .. max] over repetitions.")
        self.w()
        self.w("| config | CPU cost | = in-context | + profiler process | slowdown (wall) | samples | lost |")
        self.w("|---|---|---|---|---|---|---|")
        for c in self.configs("oncpu"):
            if c == "none":
                continue
            self.w(f"| {c} | {self.fo(self.cpu_cost('oncpu', c))} "
                   f"| {self.fo(self.cpu_cost('oncpu', c, part='irq'))} "
                   f"| {self.fo(self.cpu_cost('oncpu', c, part='process'))} "
                   f"| {self.fo(self.overhead('oncpu', c, 'ops_per_s'))} "
                   f"| {num(self.m('oncpu', c, 'samples'))} | {num(self.m('oncpu', c, 'lost'))} |")
        b = self.m("oncpu", "none", "ops_per_s")
        self.w()
        self.w(f"Baseline: {num(b)} ops/s (wall), "
               f"{num(self.m('oncpu', 'none', 'ops_per_workload_cpu_s'))} ops per CPU-second, "
               f"{num(self.m('oncpu', 'none', 'workload_cpu_s'), '{:.2f}')} CPU-s of "
               f"{num(self.m('oncpu', 'none', 'wall_s'), '{:.2f}')} s wall on "
               f"{self.meta['ncpu']} CPUs: the rest went to the machine's other tenants.")
        self.w()

    def oncpu_targets(self):
        for f in self.freqs():
            e = self.cpu_cost("oncpu", f"ember{f}")
            p = self.cpu_cost("oncpu", f"perf{f}")
            if e is None:
                continue
            why = self.oncpu_why(f, e)
            if f == 99:
                ok = e[0] < 0.01
                self.verdicts.append((
                    "on-CPU CPU cost < 1% at 99 Hz", "MET" if ok else "MISSED",
                    f"ember {self.fo(e)}" + ("" if ok else
                                             f": {pct(e[0] - 0.01)} over. {why}")))
            if p is not None:
                ok = e[0] <= p[0]
                noise = (not ok) and e[1] <= p[2]
                detail = f"ember {pct(e[0])} vs perf {pct(p[0])}"
                if not ok:
                    detail += f": {pct(e[0] - p[0])} points more"
                    detail += (" (the repetitions' ranges overlap: within this machine's noise). "
                               if noise else ". ") + why
                self.verdicts.append((f"on-CPU CPU cost <= perf's at {f} Hz",
                                      "MET" if ok else "MISSED", detail))

    def oncpu_why(self, f, e):
        """Decompose ember's cost: eBPF program time, agent CPU, rest."""
        ns = self.bpf_ns_per_sample(f)
        irq = self.cpu_cost("oncpu", f"ember{f}", part="irq")
        proc = self.cpu_cost("oncpu", f"ember{f}", part="process")
        pirq = self.cpu_cost("oncpu", f"perf{f}", part="irq")
        pproc = self.cpu_cost("oncpu", f"perf{f}", part="process")
        parts = []
        if proc is not None:
            parts.append(f"agent process {pct(proc[0], 3)}"
                         + (f" (perf's {pct(pproc[0], 3)})" if pproc else ""))
        if irq is not None:
            parts.append(f"in-context {pct(irq[0], 3)}"
                         + (f" (perf's {pct(pirq[0], 3)})" if pirq else "")
                         + f", range {pct(irq[1])} .. {pct(irq[2])}")
        if ns is not None:
            parts.append(f"of which the eBPF program itself is ~{pct(ns * f / 1e9, 3)} "
                         f"({ns:.0f} ns x {f} Hz per busy CPU); the rest of the in-context "
                         f"part is the timer interrupt around it, cache effects and noise")
        return "Why: " + "; ".join(parts) + "."

    def bpfcost_section(self):
        self.w("## 2. Per-sample kernel cost")
        self.w()
        self.w("eBPF program run time on this host with `kernel.bpf_stats_enabled=1` "
               "(`bpftool prog show`: run_time_ns / run_cnt, programs loaded by the profiler "
               "during the run; enabled only for these runs, not during the overhead runs):")
        self.w()
        self.w("| run | program | ns per run | runs |")
        self.w("|---|---|---|---|")
        for c in self.configs("bpfcost"):
            progs = sorted({m.rsplit(".", 1)[0] for (s, cc, m) in self.rows
                            if s == "bpfcost" and cc == c})
            for pname in progs:
                self.w(f"| {c} | {pname} | {num(self.m('bpfcost', c, pname + '.ns_per_run'))} "
                       f"| {num(self.m('bpfcost', c, pname + '.run_cnt'))} |")
        self.w()
        vms = [s for s in sorted({k[0] for k in self.rows})
               if s.startswith("vm") and not s.endswith("off")]
        if vms:
            self.w("In the VMs (qemu TCG, so absolute ns are inflated by emulation; compare "
                   "the two backends on the same kernel): the module's handler time from "
                   "`ember status` (ns per sample, kernel + user stacks) next to the eBPF "
                   "program's run time:")
            self.w()
            self.w("| kernel | config | module ns/sample | module samples | eBPF ember_oncpu ns/run |")
            self.w("|---|---|---|---|---|")
            for s in vms:
                for c in self.configs(s):
                    if not c.startswith("ember"):
                        continue
                    f = c[5:]
                    self.w(f"| {s[2:]} | {c} | {num(self.m(s, c, 'module_ns_per_sample'))} "
                           f"| {num(self.m(s, c, 'module_samples'))} "
                           f"| {num(self.m(s, 'bpf' + f, 'ember_oncpu.ns_per_run'))} |")
            self.w()

    def spread(self, sec, cfg, metric):
        """(median, min, max, n) of a metric over the repetitions."""
        v = list(self.vals(sec, cfg, metric).values())
        if not v:
            return None
        return (med(v), min(v), max(v), len(v))

    @staticmethod
    def half_verdict(e, o):
        """ember at most half of offcputime, decided only when the spreads
        do not overlap: MET when ember's worst repetition is at or below
        half of offcputime's best, MISSED when ember's best is above half
        of offcputime's worst, None (undecided) otherwise."""
        if e is None or o is None:
            return None
        if e[2] <= o[1] / 2:
            return "MET"
        if e[1] > o[2] / 2:
            return "MISSED"
        return None

    def offcpu_section(self):
        self.w("## 3. Off-CPU overhead")
        self.w()
        self.w("Workload: `pingpong -c 0` (bench/workloads/pingpong.c), two threads bouncing a byte over two pipes, "
               "pinned to CPU 0 (every round trip is 2 blocking reads, 2 context switches; unpinned, "
               "the rate swung 10x between runs with where the scheduler put the threads). Profilers: "
               "`ember record -a -e offcpu` and libbpf-tools `offcputime` (default options, "
               "min block time 1 us), each system-wide, in interleaved repetitions (order "
               "rotated each time). CPU cost and slowdown as in section 1, per round trip. "
               "**Per switch**: the profiler's own cost from the same runs: its eBPF programs' "
               "run time (`kernel.bpf_stats_enabled`, all its programs, over the measured "
               "window only) plus its process's CPU time, divided by the runs of its "
               "sched_switch program in that window. It counts only the profiler's work, "
               "so other tenants of the machine barely move it; the CPU cost ratio moves "
               "with them.")
        self.w()
        self.w("| config | CPU cost | slowdown (wall) | ns per switch (eBPF + process) | of it eBPF | "
               "switches | round trips/s (median) | profiler process CPU-s | ember off-CPU intervals | lost |")
        self.w("|---|---|---|---|---|---|---|---|---|---|")
        for c in self.configs("offcpu"):
            ov = "" if c == "none" else self.fo(self.overhead("offcpu", c, "roundtrips_per_cpu_s"))
            sl = "" if c == "none" else self.fo(self.overhead("offcpu", c, "roundtrips_per_s"))
            ns = self.spread("offcpu", c, "ns_per_switch")
            bn = self.spread("offcpu", c, "bpf_ns_per_switch")
            nsf = "" if ns is None else f"{ns[0]:.0f} [{ns[1]:.0f} .. {ns[2]:.0f}]"
            self.w(f"| {c} | {ov} | {sl} | {nsf} | {num(bn and bn[0])} "
                   f"| {num(self.m('offcpu', c, 'switches'))} "
                   f"| {num(self.m('offcpu', c, 'roundtrips_per_s'))} "
                   f"| {num(self.m('offcpu', c, 'profiler_cpu_s'), '{:.3f}')} "
                   f"| {num(self.m('offcpu', c, 'offcpu_intervals'))} | {num(self.m('offcpu', c, 'lost'))} |")
        self.w()
        per = []
        for c in self.configs("offcpu"):
            for m in sorted({mm for (sec, cc, mm) in self.rows
                             if sec == "offcpu" and cc == c and mm.endswith(".ns_per_run")}):
                n = m[:-len(".ns_per_run")]
                per.append(f"{c} {n}: {num(self.m('offcpu', c, m))} ns x "
                           f"{num(self.m('offcpu', c, n + '.runs'))} runs")
        if per:
            self.w("Per program (medians over the repetitions): " + "; ".join(per) + ".")
            self.w()
        for ecfg, ocfg, what in (("ember-offcpu", "offcputime", "defaults: every interval vs >= 1 us"),
                                 ("ember-offcpu-1ms", "offcputime-1ms", "both keeping intervals >= 1 ms")):
            self.offcpu_verdict(ecfg, ocfg, what)

    def offcpu_verdict(self, ecfg, ocfg, what):
        e = self.overhead("offcpu", ecfg, "roundtrips_per_cpu_s")
        o = self.overhead("offcpu", ocfg, "roundtrips_per_cpu_s")
        es = self.spread("offcpu", ecfg, "ns_per_switch")
        os_ = self.spread("offcpu", ocfg, "ns_per_switch")
        if (e is None or o is None) and (es is None or os_ is None):
            return
        by_switch = self.half_verdict(es, os_)
        by_cost = self.half_verdict(e, o)
        parts = []
        if es is not None and os_ is not None:
            parts.append(f"per switch ember {es[0]:.0f} ns [{es[1]:.0f} .. {es[2]:.0f}] vs offcputime "
                         f"{os_[0]:.0f} ns [{os_[1]:.0f} .. {os_[2]:.0f}] (limit: half, "
                         f"{os_[0] / 2:.0f} ns): " + (by_switch or "spreads overlap, undecided"))
        if e is not None and o is not None:
            parts.append(f"CPU cost ember {self.fo(e)} vs offcputime {self.fo(o)}: "
                         + (by_cost or "spreads overlap, undecided"))
        # the per-switch figure decides; the CPU cost only when it alone can
        verdict = by_switch or by_cost
        if by_switch and by_cost and by_switch != by_cost:
            verdict = None
            parts.append("the two figures disagree")
        fl = self.meta.get("ember_bpf_flavour", "")
        if fl:
            parts.append(f"ember's off-CPU design here: {fl}")
        vo = self.vm_off_costs()
        if vo and ecfg == "ember-offcpu":
            parts.append("in the VMs: " + "; ".join(vo))
        self.verdicts.append((f"off-CPU CPU cost <= half of offcputime's ({what})",
                              verdict or "UNDECIDED (spreads overlap: noise)",
                              "; ".join(parts) + "."))

    def vm_off_costs(self):
        out = []
        for s in sorted({k[0] for k in self.rows if k[0].startswith("vm") and k[0].endswith("off")}):
            parts = []
            for c in ("kmod-offcpu", "bpf-offcpu", "offcputime"):
                o = self.overhead(s, c, "work_per_host_cpu_s")
                ns = self.spread(s, c, "ns_per_switch")
                if o is not None:
                    parts.append(f"{c} {pct(o[0])}"
                                 + ("" if ns is None else f" ({ns[0]:.0f} ns/switch)"))
            if parts:
                out.append(f"{s[2:-3]} (TCG) " + ", ".join(parts))
        return out

    def loss_section(self):
        self.w("## 4. Loss at default buffer sizes, all CPUs busy")
        self.w()
        self.w("`ember record -a -F HZ` with `spin` on every CPU; lost records from ember's "
               "own summary line.")
        self.w()
        self.w("| frequency | samples | lost | samples per CPU-second |")
        self.w("|---|---|---|---|")
        zero = []
        cfgs = sorted(self.configs("loss"), key=lambda c: int(c[5:]))
        for c in cfgs:
            lost = self.m("loss", c, "lost")
            self.w(f"| {c[5:]} Hz | {num(self.m('loss', c, 'samples'))} | {num(lost)} "
                   f"| {num(self.m('loss', c, 'samples_per_cpu_s'))} |")
            if lost == 0:
                zero.append(int(c[5:]))
        self.w()
        hi = max(zero) if zero else None
        self.w(f"Highest tried frequency with zero lost records: **{hi if hi else 'none'} Hz** "
               f"(tried {', '.join(c[5:] for c in cfgs)} Hz; 10000 Hz is ember's maximum).")
        self.w()
        l999 = self.m("loss", "ember999", "lost")
        if l999 is not None:
            self.verdicts.append(("zero loss at 999 Hz, all CPUs, default buffers",
                                  "MET" if l999 == 0 else "MISSED",
                                  f"{l999:.0f} lost at 999 Hz; highest zero-loss frequency tried: {hi} Hz"
                                  + ("" if l999 == 0 else
                                     ". Why: the agent did not drain the rings fast enough "
                                     "while competing for CPU with the busy workload.")))

    def agent_section(self):
        self.w("## 5. Agent CPU and memory on a busy system")
        self.w()
        p = self.meta["params"]
        self.w(f"`ember record -a -F HZ` and `ember run -F HZ` (exporting every "
               f"{p['run_interval']} s to a loopback OTLP receiver) for {p['agent_D']} s each "
               f"while `spin` keeps every CPU busy (`run+churn`: also a shell loop starting "
               f"`/bin/true`, `sh`, `ls` and `wc` without pause, as a build host does). "
               f"CPU share: the agent's exact CPU time "
               f"(all threads) over the steady window (after the first 2 s) / wall time, in "
               f"% of one core. Steady RSS: median VmRSS of the second half of the run. "
               f"Peak: VmHWM while running, and ru_maxrss over the whole life (for `record` "
               f"that includes symbolizing and writing the profile at the end).")
        self.w()
        self.w("| agent | CPU share of one core | steady RSS | of which anonymous | peak RSS while running | peak RSS incl. exit |")
        self.w("|---|---|---|---|---|---|")
        for c in self.configs("agent"):
            if c in ("run", "edges999"):
                continue
            self.w(f"| ember {c[:-2]} {c[-2:]} Hz "
                   f"| {num(self.m('agent', c, 'cpu_share_of_core'), '{:.2f}%')} "
                   f"| {num(self.m('agent', c, 'steady_rss_mib'), '{:.1f} MiB')} "
                   f"| {num(self.m('agent', c, 'steady_rss_anon_mib'), '{:.1f} MiB')} "
                   f"| {num(self.m('agent', c, 'hwm_running_mib'), '{:.1f} MiB')} "
                   f"| {num(self.m('agent', c, 'peak_rss_mib'), '{:.1f} MiB')} |")
        self.w()
        self.w(f"OTLP exports received from `ember run`: {num(self.m('agent', 'run', 'otlp_exports_received'))}.")
        self.w()
        for c in self.configs("agent"):
            rate = self.m("agent", c, "new_pids_per_s")
            if rate is not None:
                self.w(f"ember {c[:-2]} {c[-2:]} Hz: {rate:.0f} new processes a second "
                       f"(pids handed out), "
                       f"{num(self.m('agent', c, 'cpu_us_per_new_pid'), '{:.0f}')} us of agent CPU "
                       f"per new process (all of its CPU divided by them).")
                self.w()
        self.edges_result(p)
        agents = [c for c in self.configs("agent") if c not in ("run", "edges999")]
        if agents:
            worst = max(agents, key=lambda c: self.m("agent", c, "steady_rss_mib") or 0)
            worst_rss = self.m("agent", worst, "steady_rss_mib") or 0
            lim = 32 * 1e6 / 2**20
            ok = worst_rss < lim
            detail = f"worst: ember {worst[:-2]} {worst[-2:]} Hz {worst_rss:.1f} MiB ({worst_rss * 2**20 / 1e6:.1f} MB)"
            if not ok:
                anon = self.m("agent", worst, "steady_rss_anon_mib")
                detail += f": {(worst_rss - lim) * 2**20 / 1e6:.1f} MB over."
                if anon is not None:
                    detail += (f" Why: {anon:.1f} MiB of it is the agent's own (anonymous) memory, "
                               f"{worst_rss - anon:.1f} MiB mapped files (libraries, and ELF "
                               f"files mapped while symbolizing), which the kernel can share "
                               f"and reclaim.")
            self.verdicts.append(("agent steady RSS < 32 MB", "MET" if ok else "MISSED", detail))
        for c in ("record19", "run19", "run+churn19"):
            v = self.m("agent", c, "cpu_share_of_core")
            if v is None:
                continue
            ok = v < 1
            detail = f"{v:.2f}% of one core"
            if not ok:
                detail += f": {v - 1:.2f} points over."
                v99 = self.m("agent", c[:-2] + "99", "cpu_share_of_core")
                if v99 is not None:
                    # 99 Hz brings 5.2x the samples: how much the CPU grows
                    # tells per-sample work from fixed per-second work
                    per_sample = max(v99 - v, 0) / (99 - 19)
                    fixed = max(v - per_sample * 19, 0)
                    detail += (f" Why: {v99:.2f}% at 99 Hz vs {v:.2f}% at 19 Hz, so about "
                               f"{fixed:.2f}% of a core is fixed work that does not depend on the "
                               f"sampling rate (polling, process scans"
                               + (", the per-interval symbolization, encoding and export"
                                  if c.startswith("run") else "")
                               + f") and {per_sample * 19:.2f}% is per-sample work at 19 Hz "
                               f"(from the 19/99 Hz difference; noisy on a shared machine).")
            rate = self.m("agent", c, "new_pids_per_s")
            if rate is not None:
                detail += (f" Load: {rate:.0f} new processes a second, "
                           f"{num(self.m('agent', c, 'cpu_us_per_new_pid'), '{:.0f}')} us of "
                           f"agent CPU per new process.")
            self.verdicts.append((f"ember {c[:-2]} CPU < 1% of a core at 19 Hz",
                                  "MET" if ok else "MISSED", detail))
        # issue 25: agent CPU per new process <= 30 us (mappings from the
        # kernel), beside another tree's agent when BENCH_BASE_EMBER ran
        us = self.m("agent", "run+churn19", "cpu_us_per_new_pid")
        if us is not None:
            detail = f"{us:.0f} us per new process"
            base = self.m("agent", "run+churn-base19", "cpu_us_per_new_pid")
            if base is not None:
                detail += f", beside {base:.0f} us for BENCH_BASE_EMBER in the same run"
            if us > 30:
                detail += f": {us - 30:.0f} us over."
            self.verdicts.append(("agent CPU per new process <= 30 us",
                                  "MET" if us <= 30 else "MISSED", detail))

    def edges_result(self, p):
        lost = self.m("agent", "edges999", "lost")
        if lost is None:
            return
        D, iv = p.get("edge_D"), p.get("edge_interval")
        n = self.m("agent", "edges999", "intervals")
        self.w(f"Interval edges: `ember run -F 999 -i {iv}` for {D} s with every CPU busy: "
               f"{num(n)} intervals, {num(self.m('agent', 'edges999', 'exported'))} profiles "
               f"exported ({num(self.m('agent', 'edges999', 'export_failed'))} failed, "
               f"{num(self.m('agent', 'edges999', 'export_dropped'))} dropped, "
               f"{num(self.m('agent', 'edges999', 'empty'))} intervals empty), "
               f"**{num(lost)} records lost** (the backend's own counters, over the "
               f"whole run).")
        self.w()
        self.verdicts.append((f"ember run 999 Hz -i {iv}: no records lost at interval edges",
                              "MET" if lost == 0 else "MISSED",
                              f"{lost:.0f} lost over {num(n)} intervals in {D} s"))

    def sym_section(self):
        self.w("## 6. Time to symbolize a cold profile")
        self.w()
        self.w("A fresh `ember record -a -F 99` process (empty symbol caches) on the busy "
               "system, stopped with SIGINT: time from the signal until the symbolized folded "
               "profile is written and the process exits."
               + (" Page cache dropped before each run." if os.environ.get("BENCH_DROP_CACHES") == "1"
                  else " The page cache was not dropped (shared machine): ELF files may be cached."))
        self.w()
        self.w("| stop to written (median) | min .. max | processes | unique stacks |")
        self.w("|---|---|---|---|")
        v = list(self.vals("symbolize", "ember99", "stop_to_written_s").values())
        if v:
            self.w(f"| {med(v):.2f} s | {min(v):.2f} .. {max(v):.2f} s "
                   f"| {num(self.m('symbolize', 'ember99', 'processes'))} "
                   f"| {num(self.m('symbolize', 'ember99', 'unique_stacks'))} |")
        self.w()

    def alloc_section(self):
        self.w("## 8. Allocation profiling cost (`-e alloc`, this host, eBPF backend)")
        self.w()
        self.w("Workload: `mallocs` (bench/workloads/mallocs.c), one thread allocating "
               "16-256 byte blocks, filling and hashing each (~100 ns of work per "
               "allocation, about 10M allocations/s), freeing them in a ring of 64. "
               "Configurations: alone; with ember's sampler preloaded and nobody "
               "attached (what a service that opts in pays between recordings); under "
               "`ember record -e alloc -- mallocs` at the default rate (one sample per "
               "512 KiB); under `ember record -e alloc -p` on mallocs started alone "
               "(pid: uprobes on libc's malloc family, their returns and free, in-use "
               "followed; pid-noinuse: the entry points alone, `--alloc-no-inuse`); "
               "under a full tracer, perf's uprobes on libc's malloc and free "
               "(every call traps, as bcc's memleak does). **Slowdown** = 1 - allocations "
               "per CPU-second of the workload / the same alone (its exact CPU time holds "
               "the probes' traps and eBPF programs), paired per repetition.")
        self.w()
        self.w("| config | slowdown | ns per allocation (malloc + free + work) | "
               "allocations/s | samples/s |")
        self.w("|---|---|---|---|---|")
        for cfg in ("none", "preload", "ember", "pid", "pid-noinuse", "fulltrace"):
            if not self.vals("alloc", cfg, "ns_per_op"):
                continue
            o = None if cfg == "none" else self.overhead("alloc", cfg, "ops_per_workload_cpu_s")
            sps = self.m("alloc", cfg, "samples_per_s")
            self.w(f"| {cfg} | {'' if cfg == 'none' else self.fo(o)} "
                   f"| {num(self.m('alloc', cfg, 'ns_per_op'), '{:.1f}')} "
                   f"| {num(self.m('alloc', cfg, 'ops_per_s'))} "
                   f"| {'' if sps is None else num(sps)} |")
        self.w()
        o = self.overhead("alloc", "ember", "ops_per_workload_cpu_s")
        if o is not None:
            met = o[0] < 0.05
            self.verdicts.append((
                "-e alloc: preloaded sampler under 5% slowdown at the default rate "
                "(~10M allocations/s)", "MET" if met else "MISSED",
                f"ember {self.fo(o)}; detached (preload only) "
                f"{self.fo(self.overhead('alloc', 'preload', 'ops_per_workload_cpu_s'))}; "
                f"full tracer {self.fo(self.overhead('alloc', 'fulltrace', 'ops_per_workload_cpu_s'))}"))

    def faults_section(self):
        self.w("## 9. Page-fault profiling cost (`-e faults`, this host, eBPF backend)")
        self.w()
        self.w("Workload: `touch` (bench/workloads/touch.c), one thread mapping 4 MiB, "
               "writing a byte per page (a minor fault each) and unmapping it, in a loop: "
               "as fault-heavy as a program gets. Configurations: alone; under `ember "
               "record -e faults -- touch` at the default period, through the software "
               "perf event (ember, the default) and through the page-fault tracepoints "
               "(ember-tp, `EMBER_FAULTS_HOOK=tp`: a per-CPU count, dearer on this host, "
               "docs/NOTES.md); under `perf record -e "
               "page-faults -g` at the same period (frame-pointer call chains). Slowdown "
               "as in section 8.")
        self.w()
        self.w("| config | slowdown | ns per page (fault + zeroing) | pages/s | samples/s |")
        self.w("|---|---|---|---|---|")
        for cfg in ("none", "ember", "ember-tp", "perf"):
            if not self.vals("faults", cfg, "ns_per_op"):
                continue
            o = None if cfg == "none" else self.overhead("faults", cfg, "ops_per_workload_cpu_s")
            sps = self.m("faults", cfg, "samples_per_s")
            self.w(f"| {cfg} | {'' if cfg == 'none' else self.fo(o)} "
                   f"| {num(self.m('faults', cfg, 'ns_per_op'), '{:.0f}')} "
                   f"| {num(self.m('faults', cfg, 'ops_per_s'))} "
                   f"| {'' if sps is None else num(sps)} |")
        self.w()
        o = self.overhead("faults", "ember", "ops_per_workload_cpu_s")
        if o is not None:
            self.verdicts.append((
                "-e faults: under 1% slowdown on a page-fault-heavy workload at the "
                "default period", "MET" if o[0] < 0.01 else "MISSED",
                f"ember {self.fo(o)}; tracepoint hook "
                f"{self.fo(self.overhead('faults', 'ember-tp', 'ops_per_workload_cpu_s'))}; "
                f"perf at the same period "
                f"{self.fo(self.overhead('faults', 'perf', 'ops_per_workload_cpu_s'))}"))

    def python_section(self):
        self.w("## 11. CPython frames, per-sample cost (eBPF backend, this host)")
        self.w()
        self.w("bench/python-cost.sh: `ember_oncpu`'s own time per run (its handler "
               "time over its runs, the filtered idle ones included), both CPUs busy with "
               "one process each: py40 = `py-work.py deep 40` under Debian's python3.11 "
               "(40 distinct functions, 44 Python frames and ~10 native ones a sample) "
               "with Python bound; py40-off = the same processes unbound (native CFI walk "
               "only); deep = bench/workloads/deep (33 no-frame-pointer frames, all by the "
               "tables); spin = a shallow stack. Issue 24's target: the Python frames "
               "(py40 - py40-off) add no more than the 33-frame native walk (deep - spin). "
               "Configurations interleaved per repetition; medians [ranges].")
        self.w()
        hzs = sorted({int(c.rsplit("-", 1)[1]) for c in self.configs("python")})
        if not hzs:
            self.w("Not measured (see the notes under Machine and run).")
            self.w()
            return
        self.w("| Hz | py40 | py40-off | deep | spin | Python frames/sample | Python walk | native walk |")
        self.w("|---|---|---|---|---|---|---|---|")
        for hz in hzs:
            med_ = {k: self.m("python", f"{k}-{hz}", "ns_per_run")
                    for k in ("py40", "py40-off", "deep", "spin")}
            rng = {k: self.spread("python", f"{k}-{hz}", "ns_per_run") for k in med_}
            cell = {k: "" if rng[k] is None else f"{rng[k][0]:.0f} [{rng[k][1]:.0f}..{rng[k][2]:.0f}]"
                    for k in med_}
            fr = self.m("python", f"py40-{hz}", "py_frames_per_sample")
            if None in med_.values():
                self.w(f"| {hz} | {cell['py40']} | {cell['py40-off']} | {cell['deep']} | {cell['spin']} | {num(fr, '{:.1f}')} | | |")
                continue
            py = med_["py40"] - med_["py40-off"]
            nat = med_["deep"] - med_["spin"]
            self.w(f"| {hz} | {cell['py40']} | {cell['py40-off']} | {cell['deep']} | {cell['spin']} "
                   f"| {num(fr, '{:.1f}')} | +{py:.0f} ns | +{nat:.0f} ns |")
            self.verdicts.append((
                f"Python: 40 Python frames add no more to a sample than a 33-frame "
                f"native CFI walk, {hz} Hz", "MET" if py <= nat else "MISSED",
                f"Python +{py:.0f} ns a sample; native walk +{nat:.0f} ns"))
        self.w()
        self.python_floor(hzs)

    def python_floor(self, hzs):
        """The --floor builds (bench/python-cost.sh): parts of the walk."""
        rows = []
        for hz in hzs:
            off = self.m("python", f"py40-off-{hz}", "ns_per_run")
            nat = [self.m("python", f"{k}-{hz}", "ns_per_run") for k in ("deep", "spin")]
            fl = {k: self.m("python", f"{k}-{hz}", "ns_per_run")
                  for k in ("py40-tstate", "py40-nocode")}
            if off is None or None in fl.values() or None in nat:
                continue
            rows.append(f"| {hz} | +{fl['py40-tstate'] - off:.0f} ns "
                        f"| +{fl['py40-nocode'] - off:.0f} ns | +{nat[0] - nat[1]:.0f} ns |")
        if not rows:
            return
        self.w("Where the Python walk's time goes (`--floor`: two measurement builds "
               "of the same tree, EMBER_PY_FLOOR in bpf/python.bpf.h, on the same "
               "processes; each against py40-off). *Thread state*: the chain cut right "
               "after the thread state's newest frame is read. *No code-object reads*: "
               "the whole chain with every check value 0, what the walk would cost "
               "with a free cache of check values. When that is over the native walk, "
               "no cache of check values meets the target.")
        self.w()
        self.w("| Hz | thread state | chain, no code-object reads | native walk |")
        self.w("|---|---|---|---|")
        for r in rows:
            self.w(r)
        self.w()

    def stackcopy_section(self):
        self.w("## 12. Stack copy, per-sample cost (eBPF backend, this host)")
        self.w()
        self.w("bench/stack-copy-cost.sh at 999 Hz, both CPUs busy with bench/workloads/deep "
               "(one thread each, ~33 no-frame-pointer frames). ember: `ember_oncpu`'s own "
               "time per sample with the processes unbound (no tables: every sample is "
               "copied) at --stack-copy 0 to 16 KiB; the copy is what a size adds to 0. "
               "Only samples that were cut or ran before their process was bound pay it: "
               "a bound process copies nothing. perf: `perf record --call-graph dwarf,N` "
               "against `perf record -g` on deep alone, the workload's lost CPU per "
               "sample (perf's kernel copy and its own process writing N bytes a sample, "
               "on the same CPUs): a slowdown, not a handler time. Medians [ranges]; "
               "benchmarks report, they do not assert.")
        self.w()
        cfgs = self.configs("stackcopy")
        if not cfgs:
            self.w("Not measured (see the notes under Machine and run).")
            self.w()
            return
        self.w("| config | ns a sample | copy's cost a sample | bytes a copy | samples copied |")
        self.w("|---|---|---|---|---|")
        base = self.m("stackcopy", "copy0", "ns_per_sample")
        for cfg in sorted((c for c in cfgs if c.startswith("copy")), key=lambda c: int(c[4:])):
            r = self.spread("stackcopy", cfg, "ns_per_sample")
            ns = self.m("stackcopy", cfg, "ns_per_sample")
            cost = "" if base is None or ns is None or cfg == "copy0" else f"{ns - base:+.0f} ns"
            cell = "" if r is None else f"{r[0]:.0f} [{r[1]:.0f}..{r[2]:.0f}]"
            fr = self.m("stackcopy", cfg, "copied_fraction")
            self.w(f"| ember --stack-copy {cfg[4:]} | {cell} | {cost} "
                   f"| {num(self.m('stackcopy', cfg, 'bytes_per_copy'), '{:.0f}')} "
                   f"| {'' if fr is None else f'{100 * fr:.0f}%'} |")
        fp = self.m("stackcopy", "perf-fp", "ops_per_cpu_s")
        for cfg in ("perf-8192", "perf-12288"):
            o = self.m("stackcopy", cfg, "ops_per_cpu_s")
            n = self.m("stackcopy", cfg, "samples")
            if fp is None or o is None or not n:
                continue
            # workload CPU lost over the run, per sample (threads x secs
            # cancel out: ops_per_cpu_s is per thread-second)
            secs_cpu = self.p_threads_secs(cfg)
            lost = secs_cpu * (1 - o / fp) if secs_cpu else None
            cost = "" if lost is None else f"{1e9 * lost / n:.0f} ns (slowdown)"
            self.w(f"| perf --call-graph dwarf,{cfg[5:]} | | {cost} | {cfg[5:]} | 100% |")
        self.w()

    def p_threads_secs(self, cfg):
        """thread-seconds of one perf run: the mode's sc_D x the CPUs"""
        d = self.meta.get("params", {}).get("sc_D")
        ncpu = self.meta.get("ncpu")
        return d * ncpu if d and ncpu else None

    def lock_section(self):
        if not any(k[0] == "lock" for k in self.rows):
            return
        self.w("## 10. Lock contention profiling cost (`-e lock`, this host, eBPF backend)")
        self.w()
        self.w("Workload: `lockwork --bench` (selftests/lock/lockwork.c), two threads "
               "pinned to one CPU passing a turn through a pthread mutex and condition "
               "variable: every op is one futex wait (a few us) and one wake. "
               "Configurations: alone; under `ember record -e lock -- lockwork` at "
               "--lock-min 0, 1, 10 (the default) and 100 us, and with --waker; under "
               "perf lock (`perf lock contention -b`, or `perf lock record` where perf "
               "has no BPF skeletons, as Debian's: kernel lock tracepoints only, no "
               "futexes); under bcc's `offwaketime` (system-wide, started first). "
               "Slowdown per CPU-second of the workload, paired per repetition. "
               "Benchmarks report, they do not assert: no target.")
        self.w()
        self.w("| config | slowdown | ns per op (CPU) | ops/s | lock waits kept/s |")
        self.w("|---|---|---|---|---|")
        cfgs = sorted({k[1] for k in self.rows if k[0] == "lock"},
                      key=lambda c: (c != "none", not c.startswith("ember-min"),
                                     int(c[9:]) if c.startswith("ember-min") else 0, c))
        for cfg in cfgs:
            if not self.vals("lock", cfg, "ns_per_op"):
                continue
            o = None if cfg == "none" else self.overhead("lock", cfg, "ops_per_workload_cpu_s")
            sps = self.m("lock", cfg, "samples_per_s")
            self.w(f"| {cfg} | {'' if cfg == 'none' else self.fo(o)} "
                   f"| {num(self.m('lock', cfg, 'ns_per_op'), '{:.0f}')} "
                   f"| {num(self.m('lock', cfg, 'ops_per_s'))} "
                   f"| {'' if sps is None else num(sps)} |")
        self.w()

    def vm_section(self):
        vms = [s for s in sorted({k[0] for k in self.rows})
               if s.startswith("vm") and not s.endswith("off")]
        self.w("## 7. Module backend in test-kernel VMs (ratios only)")
        self.w()
        if not vms:
            self.w("Not run (" + (", ".join(n for n in self.meta.get("notes", []) if "VM" in n)
                                  or "no VM kernels asked") + ").")
            self.w()
            return
        self.w("Same workloads as sections 1 and 3, inside a 2-vCPU qemu TCG guest "
               "(`selftests/vm/run-vm.sh`) with ember.ko loaded and `ember record --backend kmod`. "
               "Emulated time is not absolute: read the ratios only. Under TCG the guest's "
               "clocks follow the wall clock while its emulated CPUs get whatever share of the "
               "host the other tenants leave, so guest CPU time says little; **cost** here is "
               "1 - (work per host CPU-second of the qemu process, read by the host at the "
               "guest's begin/end markers) / (the same without a profiler): it counts "
               "everything the guest did, profiler process and kernel handlers included. "
               "**Slowdown** uses the guest's wall clock.")
        self.w()
        self.w("| kernel | config | cost (emulator CPU) | slowdown (guest wall) | lost |")
        self.w("|---|---|---|---|---|")
        for s in vms:
            for c in self.configs(s):
                if c == "none" or c.startswith("bpf"):
                    continue
                if not self.vals(s, c, "ops_per_s"):
                    continue
                self.w(f"| {s[2:]} | {c} | {self.fo(self.overhead(s, c, 'work_per_host_cpu_s'))} "
                       f"| {self.fo(self.overhead(s, c, 'ops_per_s'))} | {num(self.m(s, c, 'lost'))} |")
        self.w()
        offs = [s for s in sorted({k[0] for k in self.rows}) if s.startswith("vm") and s.endswith("off")]
        if offs:
            self.w("Off-CPU in the same guest, as in section 3: `pingpong` alone, with "
                   "`ember record -a -e offcpu` through the module and through eBPF, and with "
                   "`offcputime`:")
            self.w()
            self.w("| kernel | config | cost (emulator CPU) | slowdown (guest wall) | ns per switch in the kernel (module probes / eBPF programs) |")
            self.w("|---|---|---|---|---|")
            for s in offs:
                for c in self.configs(s):
                    if c == "none":
                        continue
                    ns = self.spread(s, c, "ns_per_switch")
                    nsf = "n/a" if ns is None else f"{ns[0]:.0f} [{ns[1]:.0f} .. {ns[2]:.0f}]"
                    self.w(f"| {s[2:-3]} | {c} | {self.fo(self.overhead(s, c, 'work_per_host_cpu_s'))} "
                           f"| {self.fo(self.overhead(s, c, 'roundtrips_per_s'))} | {nsf} |")
                b = list(self.vals(s, "none", "roundtrips_per_s").values())
                if b:
                    self.w()
                    self.w(f"Baseline {s[2:-3]}: {min(b):.0f} .. {max(b):.0f} round trips/s without "
                           f"a profiler (pingpong pinned to one vCPU; the emulator's share of the "
                           f"host still varies): when that range is wide, these ratios are not "
                           f"conclusive; the per-switch kernel time is the guest's decisive figure.")
            self.w()

    def headline(self):
        h = ["| figure | ember | baseline tool | target |", "|---|---|---|---|"]
        for f in self.freqs():
            e = self.cpu_cost("oncpu", f"ember{f}")
            p = self.cpu_cost("oncpu", f"perf{f}")
            tgt = "< 1% and <= perf" if f == 99 else "<= perf"
            h.append(f"| on-CPU CPU cost, {f} Hz (host, eBPF) | {pct(e and e[0])} | perf {pct(p and p[0])} | {tgt} |")
        e = self.overhead("offcpu", "ember-offcpu", "roundtrips_per_cpu_s")
        o = self.overhead("offcpu", "offcputime", "roundtrips_per_cpu_s")
        h.append(f"| off-CPU CPU cost (pipe ping-pong) | {pct(e and e[0])} | offcputime {pct(o and o[0])} | <= half of offcputime's |")
        for sfx, what in (("", ""), ("-1ms", ", both >= 1 ms")):
            e = self.spread("offcpu", "ember-offcpu" + sfx, "ns_per_switch")
            o = self.spread("offcpu", "offcputime" + sfx, "ns_per_switch")
            if e is not None:
                h.append(f"| off-CPU ns per switch (eBPF + process{what}) | {e[0]:.0f} [{e[1]:.0f} .. {e[2]:.0f}] "
                         f"| offcputime {num(o and o[0])}{'' if o is None else f' [{o[1]:.0f} .. {o[2]:.0f}]'} "
                         f"| <= half of offcputime's, ranges apart |")
        for f in self.freqs():
            ns = self.bpf_ns_per_sample(f)
            if ns is not None:
                h.append(f"| eBPF ns per sample, {f} Hz | {ns:.0f} ns | | |")
        for s in sorted({k[0] for k in self.rows if k[0].startswith("vm") and not k[0].endswith("off")}):
            ns = self.m(s, "ember99", "module_ns_per_sample")
            e = self.overhead(s, "ember99", "work_per_host_cpu_s")
            p = self.overhead(s, "perf99", "work_per_host_cpu_s")
            h.append(f"| module {s[2:]} (TCG): emulator CPU cost 99 Hz; ns/sample | {pct(e and e[0])}; {num(ns)} ns | perf {pct(p and p[0])} | ratios only |")
        for v in self.vm_off_costs():
            h.append(f"| off-CPU emulator CPU cost in VM {v.split(' (')[0]} (TCG) | {v.split('(TCG) ')[1]} | | ratios only |")
        cfgs = self.configs("loss")
        zero = [int(c[5:]) for c in cfgs if self.m("loss", c, "lost") == 0]
        l999 = self.m("loss", "ember999", "lost")
        h.append(f"| lost at 999 Hz; highest zero-loss Hz tried | {num(l999)}; {max(zero) if zero else 'none'} | | 0 at 999 Hz |")
        for c in self.configs("agent"):
            if c in ("run", "edges999"):
                continue
            h.append(f"| ember {c[:-2]} {c[-2:]} Hz: CPU; steady / peak RSS "
                     f"| {num(self.m('agent', c, 'cpu_share_of_core'), '{:.2f}%')}; "
                     f"{num(self.m('agent', c, 'steady_rss_mib'), '{:.1f}')} / "
                     f"{num(self.m('agent', c, 'peak_rss_mib'), '{:.1f}')} MiB | | "
                     f"{'< 1% and < 32 MB' if c.endswith('19') else '< 32 MB'} |")
        lost = self.m("agent", "edges999", "lost")
        if lost is not None:
            h.append(f"| ember run -F 999 -i {self.meta['params'].get('edge_interval')}: "
                     f"records lost at interval edges | {num(lost)} | | 0 |")
        v = self.m("symbolize", "ember99", "stop_to_written_s")
        h.append(f"| cold symbolize + write (99 Hz, all processes) | {num(v, '{:.2f} s')} | | |")
        return h

    def build(self):
        m = self.meta
        # verdicts first (sections append them), then assemble
        body_start = len(self.out)
        self.oncpu_section()
        self.oncpu_targets()
        self.bpfcost_section()
        self.offcpu_section()
        self.loss_section()
        self.agent_section()
        self.sym_section()
        self.vm_section()
        self.alloc_section()
        self.faults_section()
        self.lock_section()
        self.python_section()
        self.stackcopy_section()
        body = self.out[body_start:]
        self.out = []
        self.w(f"# ember benchmark report: {m['host']}, {m['when']}")
        self.w()
        self.w(f"Mode **{m['mode']}** (`make bench`"
               + {"quick": " BENCH_QUICK=1", "dry": " BENCH_DRY=1"}.get(m["mode"], "")
               + f"), {m['duration_s']} s, on a shared {m['ncpu']}-CPU machine: load average "
               f"{' / '.join(m['load_before'])} before and {' / '.join(m['load_after'])} after "
               f"(1/5/15 min; other engineers' builds and VMs). Generated by bench/report.py "
               f"from results.csv (every figure below is in it) and meta.json.")
        if m["mode"] == "dry":
            self.w()
            self.w("**DRY RUN**: runs of a fraction of a second, to prove the scripts work. "
                   "The numbers mean nothing.")
        self.w()
        self.w("## Headline")
        self.w()
        self.headline_lines = self.headline()
        self.out += self.headline_lines
        self.w()
        self.w("## Targets")
        self.w()
        self.w("| target | verdict | detail |")
        self.w("|---|---|---|")
        for t, v, d in self.verdicts:
            self.w(f"| {t} | **{v}** | {d} |")
        self.w()
        self.machine()
        self.out += body
        self.reading()
        return "\n".join(self.out) + "\n"

    def machine(self):
        m = self.meta
        p = m["params"]
        self.w("## Machine and run")
        self.w()
        self.w(f"- Host: {m['host']}, {m['cpu']}, {m['ncpu']} CPUs, {m['mem_gib']} GiB, {m['os']}")
        self.w(f"- Kernel: {m['kernel']} ({m['kernel_version']}); {m['backend']} "
               f"({m.get('ember_bpf_flavour', '?')})")
        self.w(f"- ember: {m['ember']} (git {m['ember_git']})")
        self.w(f"- perf: {m['perf']}, event cpu-clock (no PMU on this host); "
               f"kernel.perf_event_max_sample_rate={m['perf_event_max_sample_rate']}")
        self.w(f"- offcputime: {m['offcputime']}; bpftool: {m['bpftool']}")
        self.w(f"- Load: before `{m['uptime_before']}`; after `{m['uptime_after']}`. "
               f"The machine is shared with other engineers' builds and VMs: the "
               f"load above is theirs plus ours. A/B runs are interleaved (each repetition "
               f"runs every configuration once, order rotated per repetition) and every "
               f"overhead is paired with the baseline of its own repetition.")
        self.w(f"- Parameters: {p['reps']} repetitions x {p['D']} s per on-CPU configuration, "
               f"{p['off_reps']} x {p['off_D']} s off-CPU, profilers given {p['W']} s to attach, "
               f"loss runs {p['loss_D']} s, agent runs {p['agent_D']} s x {p['agent_reps']}, "
               f"VM runs {p['vm_reps']} x {p['vm_D']} s on kernels '{m['vm_kernels']}'.")
        for n in m.get("notes", []):
            self.w(f"- Note: {n}")
        self.w()

    def reading(self):
        self.w("## How to read this report")
        self.w()
        self.w("- **CPU cost** is what the on-CPU and off-CPU targets are judged on: the extra "
               "CPU time needed to do the same work with the profiler on (its kernel code running "
               "on top of the workload, plus its own process). On a dedicated machine it equals "
               "the wall-clock slowdown; on this shared machine the wall-clock slowdown mostly "
               "measures how much CPU the other tenants took during each run, so it is shown "
               "but its range is wide. bench/README.md explains both.")
        self.w("- Brackets are [min .. max] of the paired per-repetition overheads; a negative "
               "value means the profiled run did more work per CPU-second than its baseline, "
               "i.e. noise. When ember's and perf's ranges overlap, their difference is within "
               "the noise of this machine.")
        self.w("- Every column is a median over the repetitions of its own paired values, so "
               "the medians of the two parts of the CPU cost need not add up to the median of "
               "the total.")
        self.w("- Per-sample cost x frequency = share of a busy CPU spent in the program "
               "(e.g. 5000 ns x 99 Hz = 0.05%). The module figures come from a TCG guest and "
               "are only comparable with the eBPF figures measured in the same guest.")
        self.w("- Raw data: `results.csv` (section, config, rep, metric, value, unit) and "
               "`meta.json`. Regenerate this file with `python3 bench/report.py DIR`.")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report.py DIR")
    d = sys.argv[1]
    r = Report(d)
    text = r.build()
    with open(os.path.join(d, "report.md"), "w") as f:
        f.write(text)
    print("\n".join(r.headline_lines))
    print()
    for t, v, det in r.verdicts:
        print(f"{v:7s} {t}: {det}")
    print(f"\nreport: {os.path.join(d, 'report.md')}")


if __name__ == "__main__":
    main()
