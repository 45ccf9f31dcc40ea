#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Checks on bpf-dump output (selftests/suites/20-bpf.sh).

Each subcommand reads a dump (one record per line, see bpf-dump.c), prints
what it found and exits 0 when the property holds, 1 otherwise:

  rate DUMP HZ [COMM]           every online CPU sampled at HZ within 10%
  chain DUMP PID F1,F2,..       PID's samples: user stack leaf-first is F1,F2,..
  syscall DUMP PID F1,F2,..     in-kernel samples: kernel frames from the
                                syscall entry, the user chain F1,F2,.. beneath
  only DUMP PID                 every sample/off-CPU record is from PID
  offcpu DUMP PID MEASURED      off-CPU ns per function within 10% of the
                                program's own MEASURED line, wait frames seen
  waits DUMP PID                number of PID's waits in the dump: records of
                                the main thread (tid == PID), SLEEPING, in a
                                wait_* function with its kernel wait frame
                                (offcpu-wait blocks exactly so 3 times a round)
  sampled DUMP PID PPM N        waits kept with PPM sampling out of N: within
                                4.5 standard deviations of N * PPM / 1e6
  lost DUMP                     lost counts exact: delivered == written,
                                LOST records == lost, written+lost == produced
  lifecycle DUMP PID FILE       EXEC of FILE and EXIT for PID arrived
  switch DUMP PID1 PID2         samples only from PID1 before the FILTER
                                line (set_filter at run time), only PID2 after
  lock DUMP ERRFILE             lock-wait contend (its MUTEX/COND lines in
                                ERRFILE): LOCK records on the mutex and the
                                condvar, wait per lock within 20% of its own,
                                >= 90% joined to a WAKER naming the holder
  lock-kernel DUMP PID N        >= N kernel contention LOCK records of PID on
                                its mmap_lock (EMBER_LOCK_F_MMAP_LOCK)
  lock-stats DUMP KEY:N ..      STATS counters at least N (e.g. lock_overflow:1)

User addresses are symbolized with the MAPS lines in the dump (or
/proc/PID/maps snapshots in the same format) and the binaries' symbol
tables (nm), kernel ones with /proc/kallsyms. For dumps made in a VM:
EMBER_KALLSYMS=FILE (the guest's kallsyms, or a subset holding each wanted
symbol and the one after it), EMBER_PATH_MAP=GUEST_DIR=HOST_DIR (where the
guest's binaries are on the host), EMBER_NCPUS=N (the guest's CPUs).
A DUMP ending in .gz is read compressed.
"""
import gzip
import bisect
import os
import re
import subprocess
import sys

KV = re.compile(r'(\w+)=(\S*)')


def parse(path):
    recs, maps, stats = [], {}, None
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt', errors='replace') as f:
        for line in f:
            kind = line.split(' ', 1)[0]
            if kind == 'MAPS':
                m = re.match(r'MAPS pid=(\d+) (\S+)-(\S+) \S+ (\S+) \S+ \S+\s*(\S*)', line)
                if m:
                    maps.setdefault(int(m.group(1)), []).append(
                        (int(m.group(2), 16), int(m.group(3), 16),
                         int(m.group(4), 16), m.group(5)))
                continue
            if kind not in ('SAMPLE', 'OFFCPU', 'EXEC', 'EXIT', 'LOST', 'STATS', 'FILTER', 'MISS',
                            'LOCK', 'WAKER'):
                continue
            d = dict(KV.findall(line))
            d['kind'] = kind
            try:
                for key in ('k', 'u'):
                    if key in d:
                        d[key] = [int(x, 16) for x in d[key].split(',') if x]
            except ValueError:      # a line cut by other output
                continue
            if kind == 'STATS':
                stats = d
            else:
                recs.append(d)
    return recs, maps, stats


class ElfSyms:
    cache = {}

    def __init__(self, path):
        self.segs = []
        out = subprocess.run(['readelf', '-lW', path], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            p = line.split()
            if p and p[0] == 'LOAD':
                self.segs.append((int(p[1], 16), int(p[2], 16), int(p[4], 16)))
        self.syms = []
        for dyn in ([], ['-D']):     # stripped libraries: dynamic symbols
            out = subprocess.run(['nm', '-n', '--defined-only'] + dyn + [path],
                                 capture_output=True, text=True).stdout
            for line in out.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in 'tTwWiI':
                    self.syms.append((int(p[0], 16), p[2]))
            if self.syms:
                break
        self.syms.sort()
        self.addrs = [a for a, _ in self.syms]

    @classmethod
    def get(cls, path):
        if path not in cls.cache:
            cls.cache[path] = cls(path)
        return cls.cache[path]

    def lookup(self, file_off):
        vaddr = None
        for off, va, fsz in self.segs:
            if off <= file_off < off + fsz:
                vaddr = file_off - off + va
        if vaddr is None:
            return None
        i = bisect.bisect_right(self.addrs, vaddr) - 1
        return self.syms[i][1] if i >= 0 else None


def user_syms(rec, maps):
    out = []
    for i, ip in enumerate(rec.get('u', [])):
        a = ip - 1 if i else ip
        name = '?'
        for start, end, off, path in maps.get(int(rec['pid']), []):
            if start <= a < end:
                pm = os.environ.get('EMBER_PATH_MAP', '')
                if '=' in pm and path.startswith(pm.split('=', 1)[0]):
                    g, h = pm.split('=', 1)
                    path = h + path[len(g):]
                if path.startswith('/') and os.path.exists(path):
                    name = ElfSyms.get(path).lookup(a - start + off) or '?'
                else:
                    name = path or '?'
                break
        out.append(name)
    return out


_ksyms = None


def kernel_syms(rec):
    global _ksyms
    if _ksyms is None:
        syms = []
        with open(os.environ.get('EMBER_KALLSYMS', '/proc/kallsyms')) as f:
            for line in f:
                p = line.split()
                syms.append((int(p[0], 16), p[2]))
        syms.sort()
        _ksyms = ([a for a, _ in syms], [n for _, n in syms])
    out = []
    for i, ip in enumerate(rec.get('k', [])):
        a = ip - 1 if i else ip
        j = bisect.bisect_right(_ksyms[0], a) - 1
        out.append(_ksyms[1][j] if j >= 0 else '?')
    return out


def ok(cond, msg):
    print(msg)
    sys.exit(0 if cond else 1)


def cmd_rate(dump, hz, comm=None):
    """The sampling periods the samples stand for, per CPU and second
    (ember_sample.periods: a late timer's firing stands for the periods
    it passed, so a busy host's late timers do not read as a wrong
    rate; samples lost in the ring still do). Firings shown beside."""
    hz = float(hz)
    recs, _, _ = parse(dump)
    per = {}
    for r in recs:
        if r['kind'] != 'SAMPLE' or (comm and r['comm'] != comm):
            continue
        per.setdefault(int(r['cpu']), []).append(
            (int(r['time']), max(1, int(r.get('periods', 1)))))
    online = int(os.environ.get('EMBER_NCPUS', os.sysconf('SC_NPROCESSORS_ONLN')))
    bad, parts = [], []
    for cpu in range(online):
        t = sorted(per.get(cpu, []))
        span = (t[-1][0] - t[0][0]) / 1e9 if len(t) > 2 else 0
        # periods after the first sample, over the time since it
        rate = sum(p for _, p in t[1:]) / span if span else 0
        parts.append('cpu%d %.1f Hz (%d samples, %d periods)'
                     % (cpu, rate, len(t), sum(p for _, p in t)))
        if abs(rate - hz) > 0.1 * hz:
            bad.append(cpu)
    ok(not bad, 'asked %g Hz: %s' % (hz, ', '.join(parts)))


def ticker_rate(path):
    """The reference ticker's rate, or None when it did not run (then
    nothing proves the VM was starved, and a miss fails)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith('ticker rate_hz='):
                    return float(line.split('=', 1)[1])
    except OSError:
        pass
    return None


def cmd_rate_attempts(hz, *pairs):
    """Judge rate attempts (DUMP TICKER pairs) in order, as if each ran
    only after the previous one was inconclusive. An attempt passes with
    the same rule as cmd_rate. A miss while the reference ticker got at
    least 95% of HZ fails at once: the VM delivered its timers and ember
    did not. A miss while the reference was starved too proves nothing
    and the next attempt is judged; three starved attempts fail."""
    starved = []
    for i in range(0, len(pairs), 2):
        dump, ticker = pairs[i], pairs[i + 1]
        ref = ticker_rate(ticker)
        try:
            cmd_rate(dump, hz)
        except SystemExit as e:
            if e.code == 0:
                print('  (attempt %d, reference ticker %s Hz)' % (i // 2 + 1, ref))
                raise
            if ref is None or ref >= 0.95 * float(hz):
                ok(False, 'attempt %d missed while the reference ticker got '
                   '%s Hz: ember lost samples' % (i // 2 + 1, ref))
            starved.append('attempt %d: reference %.1f Hz' % (i // 2 + 1, ref))
    ok(False, 'the VM was starved in every attempt, nothing proven (%s)'
       % '; '.join(starved))


def cmd_chain(dump, pid, chain):
    want = chain.split(',')
    recs, maps, _ = parse(dump)
    mine = [r for r in recs if r['kind'] == 'SAMPLE' and r['pid'] == pid]
    good = 0
    bad = []
    for r in mine:
        names = user_syms(r, maps)
        if names[:len(want)] == want:
            good += 1
        elif len(bad) < 3:
            bad.append(names)
    frac = good / len(mine) if mine else 0
    ok(len(mine) >= 20 and frac >= 0.9,
       '%d/%d samples of pid %s have the user chain %s (need 90%%); e.g. other: %s'
       % (good, len(mine), pid, '<-'.join(want), bad[:2]))


def cmd_syscall(dump, pid, chain):
    want = chain.split(',')
    recs, maps, _ = parse(dump)
    mine = [r for r in recs if r['kind'] == 'SAMPLE' and r['pid'] == pid]
    ink = [r for r in mine if int(r['flags'], 16) & 0x8]
    good = 0
    example = None
    for r in ink:
        k = kernel_syms(r)
        u = user_syms(r, maps)
        entry = any(n.startswith(('entry_SYSCALL_64', 'el0t_64_sync')) for n in k[-2:])
        if entry and want[0] in u and u[u.index(want[0]):u.index(want[0]) + len(want)] == want:
            good += 1
        elif example is None:
            example = (k, u)
    frac = good / len(ink) if ink else 0
    ok(len(ink) >= 20 and frac >= 0.9,
       '%d samples of pid %s, %d in the kernel, %d of those with kernel frames down '
       'to the syscall entry (entry_SYSCALL_64, arm64 el0t_64_sync) above the user chain %s; e.g. other: %s'
       % (len(mine), pid, len(ink), good, '<-'.join(want), example))


def cmd_only(dump, pid):
    recs, _, _ = parse(dump)
    mine = [r for r in recs if r['kind'] in ('SAMPLE', 'OFFCPU')]
    others = sorted({r['pid'] for r in mine if r['pid'] != pid})
    ok(mine and not others,
       '%d records, from pids other than %s: %s' % (len(mine), pid, others[:10]))


def cmd_offcpu(dump, pid, measured):
    """Off-CPU time per function: every record whose user stack holds the
    function (the wait itself, or a preemption inside the timed window)
    against the program's own figure; most of it must be the wait, with
    its kernel frame."""
    want = dict(KV.findall(measured))
    frames = {'wait_sleep30': 'do_nanosleep', 'wait_sleep10': 'do_nanosleep',
              'wait_pipe20': 'pipe_read'}
    recs, maps, _ = parse(dump)
    got = {f: 0 for f in want}
    inwait = {f: 0 for f in want}
    nrec = {f: 0 for f in want}
    unattributed = []
    for r in recs:
        if r['kind'] != 'OFFCPU' or r['pid'] != pid:
            continue
        u = user_syms(r, maps)
        if not any(f in u for f in want) and int(r['weight']) > 1000000:
            # the main thread's first: those are the ones that can go missing
            unattributed.insert(0 if r['tid'] == pid else len(unattributed),
                                'tid %s %s us u=%s k=%s' % (
                                    r['tid'], int(r['weight']) // 1000,
                                    '<-'.join(u), '<-'.join(kernel_syms(r)[:3])))
        for f in want:
            if f in u:
                got[f] += int(r['weight'])
                nrec[f] += 1
                if any(frames[f] in k for k in kernel_syms(r)):
                    inwait[f] += int(r['weight'])
                break
    fails, parts = [], []
    for f, v in want.items():
        v = int(v)
        parts.append('%s: ember %.1f ms in %d records, %.1f ms of it in %s / own %.1f ms'
                     % (f, got[f] / 1e6, nrec[f], inwait[f] / 1e6, frames[f], v / 1e6))
        if abs(got[f] - v) > 0.1 * v or inwait[f] < 0.9 * got[f] or not nrec[f]:
            fails.append(f)
    if fails and unattributed:
        parts.append('records over 1 ms in none: %s' % unattributed[:6])
    ok(not fails and want, '; '.join(parts))


WAIT_FRAMES = {'wait_sleep30': 'do_nanosleep', 'wait_sleep10': 'do_nanosleep',
               'wait_pipe20': 'pipe_read'}


def main_thread_waits(dump, pid):
    """The intervals offcpu-wait produces deterministically: its main
    thread asleep (state 2) in one of its waits, in the wait's kernel
    function. Preemptions (RUNNABLE), the helper thread and the process's
    start and exit are not counted: their number depends on the load."""
    recs, maps, _ = parse(dump)
    n = 0
    for r in recs:
        if (r['kind'] != 'OFFCPU' or r['pid'] != pid or r['tid'] != pid
                or r.get('state') != '2'):
            continue
        u = user_syms(r, maps)
        k = kernel_syms(r)
        if any(f in u and any(w in x for x in k)
               for f, w in WAIT_FRAMES.items()):
            n += 1
    return n


def cmd_waits(dump, pid):
    print(main_thread_waits(dump, pid))


def cmd_sampled(dump, pid, ppm, n):
    p, n = int(ppm) / 1e6, int(n)
    k = main_thread_waits(dump, pid)
    mean, sd = n * p, (n * p * (1 - p)) ** 0.5
    lo, hi = mean - 4.5 * sd, mean + 4.5 * sd
    ok(n > 0 and lo <= k <= hi,
       '%d of %d waits kept at %s ppm (want %.1f..%.1f: 4.5 standard '
       'deviations around %.1f)' % (k, n, ppm, lo, hi, mean))


def cmd_lost(dump):
    recs, _, st = parse(dump)
    if st is None:
        ok(False, 'no STATS line')
    n = {k: int(v) for k, v in st.items() if v.isdigit()}
    delivered = sum(1 for r in recs if r['kind'] in ('SAMPLE', 'OFFCPU', 'EXEC', 'EXIT', 'MISS'))
    lost_recs = sum(int(r['lost']) for r in recs if r['kind'] == 'LOST')
    # unwind misses (rate-limited requests for tables) are records too
    produced = n['samples'] - n['filtered'] + n.get('extra', 0)
    ok(n['lost'] > 0 and delivered == n['records'] and lost_recs == n['lost'] and
       n['records'] + n['lost'] == produced and n['corrupt'] == 0,
       'produced %d, written %d, lost %d; delivered %d, LOST records sum %d, corrupt %d'
       % (produced, n['records'], n['lost'], delivered, lost_recs, n['corrupt']))


def cmd_lifecycle(dump, pid, path):
    recs, _, _ = parse(dump)
    ex = [r for r in recs if r['kind'] == 'EXEC' and r['pid'] == pid]
    ext = [r for r in recs if r['kind'] == 'EXIT' and r['pid'] == pid]
    ok(any(r['file'] == path for r in ex) and len(ext) == 1,
       'EXEC records for %s: %s; EXIT records: %d'
       % (pid, [r['file'] for r in ex], len(ext)))


def cmd_switch(dump, pid1, pid2):
    recs, _, _ = parse(dump)
    sw = [r for r in recs if r['kind'] == 'FILTER']
    if not sw:
        ok(False, 'no FILTER line: the filter was never switched')
    begin, end = int(sw[0]['begin']), int(sw[0]['time'])
    smp = [r for r in recs if r['kind'] == 'SAMPLE']
    # records taken while set_filter ran may carry either pid
    before = [r['pid'] for r in smp if int(r['time']) < begin]
    after = [r['pid'] for r in smp if int(r['time']) > end]
    bad_b = sorted(set(before) - {pid1})
    bad_a = sorted(set(after) - {pid2})
    ok(before and after and not bad_b and not bad_a,
       'before the switch: %d samples, others %s; after: %d samples, others %s'
       % (len(before), bad_b, len(after), bad_a))


def measured_lines(path):
    out = {}
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt', errors='replace') as f:
        for line in f:
            kind = line.split(' ', 1)[0]
            if kind in ('MUTEX', 'COND', 'MMAP', 'STORM', 'MANY'):
                out[kind] = dict(KV.findall(line))
    return out


def check_lock_kind(recs, label, m, lo, hi, waker_tid):
    """LOCK records of m's waiter with addr in [lo, hi): counts, weight, wakers."""
    waiter = m['waiter']
    mine = [r for r in recs if r['kind'] == 'LOCK' and r['tid'] == waiter and
            lo <= int(r['addr'], 16) < hi]
    wakers = {(r['wtid'], r['start']): r for r in recs if r['kind'] == 'WAKER'}
    got = sum(int(r['weight']) for r in mine)
    own = int(m['wait_ns'])
    joined = [r for r in mine if r['waker'] != '0' and
              (r['tid'], r['start']) in wakers and
              wakers[(r['tid'], r['start'])]['tid'] == waker_tid]
    # plain futex waits (EMBER_LOCK_FUTEX), no timeout or signal flags
    bad_kind = [r for r in mine if r['lkind'] != '1' or r['lflags'] != '0x0']
    waits = int(m['waits'])
    good = (waits > 0 and len(mine) >= 0.9 * waits and own > 0 and
            abs(got - own) <= 0.2 * own and len(joined) >= 0.9 * len(mine) and
            not bad_kind)
    msg = ('%s: %d records (own %d waits), %.2f ms (own %.2f ms, %+.1f%%), '
           '%d of them with a WAKER from tid %s'
           % (label, len(mine), waits, got / 1e6, own / 1e6,
              100.0 * (got - own) / own if own else 0, len(joined), waker_tid))
    return good, msg


def cmd_lock(dump, errfile):
    recs, _, _ = parse(dump)
    m = measured_lines(errfile)
    if 'MUTEX' not in m or 'COND' not in m:
        ok(False, 'no MUTEX/COND lines in %s' % errfile)
    mu, cv = m['MUTEX'], m['COND']
    a = int(mu['addr'], 16)
    g1, m1 = check_lock_kind(recs, 'mutex', mu, a, a + 1, mu['holder'])
    c = int(cv['addr'], 16)
    g2, m2 = check_lock_kind(recs, 'condvar', cv, c, c + int(cv['size']),
                             cv['signaller'])
    # every LOCK record's trailer is sane
    odd = [r for r in recs if r['kind'] == 'LOCK' and
           (r['lkind'] not in ('1', '2', '3', '4') or r['start'] == '0' or
            int(r['start']) > int(r['time']))]
    ok(g1 and g2 and not odd, '%s; %s%s' % (m1, m2,
       '; %d records with a bad start' % len(odd) if odd else ''))


def cmd_lock_kernel(dump, pid, n):
    recs, _, _ = parse(dump)
    kern = [r for r in recs if r['kind'] == 'LOCK' and r['pid'] == pid and
            r['lkind'] == '4' and r['k'] and int(r['lflags'], 16) & 0x100]
    rw = sum(1 for r in kern if int(r['lflags'], 16) & 0x6)
    total = sum(int(r['weight']) for r in kern)
    ok(len(kern) >= int(n) and rw == len(kern),
       '%d kernel waits on the mmap_lock of %s (%d reader/writer-flagged), '
       '%.1f ms' % (len(kern), pid, rw, total / 1e6))


def cmd_lock_stats(dump, *conds):
    _, _, st = parse(dump)
    if st is None:
        ok(False, 'no STATS line')
    bad = []
    for c in conds:
        key, val = c.split(':')
        if int(st.get(key, '-1')) < int(val):
            bad.append('%s=%s' % (key, st.get(key)))
    ok(not bad and st.get('corrupt') == '0',
       'lock_waits=%s lock_overflow=%s lock_wakers=%s got_lock=%s corrupt=%s%s'
       % (st.get('lock_waits'), st.get('lock_overflow'), st.get('lock_wakers'),
          st.get('got_lock'), st.get('corrupt'),
          '; not met: ' + ', '.join(bad) if bad else ''))


if __name__ == '__main__':
    cmds = {'rate': cmd_rate, 'rate-attempts': cmd_rate_attempts, 'chain': cmd_chain, 'syscall': cmd_syscall,
            'only': cmd_only, 'offcpu': cmd_offcpu, 'lost': cmd_lost,
            'waits': cmd_waits, 'sampled': cmd_sampled,
            'lifecycle': cmd_lifecycle, 'switch': cmd_switch,
            'lock': cmd_lock, 'lock-kernel': cmd_lock_kernel,
            'lock-stats': cmd_lock_stats}
    if len(sys.argv) < 3 or sys.argv[1] not in cmds:
        print(__doc__)
        sys.exit(2)
    cmds[sys.argv[1]](*sys.argv[2:])
