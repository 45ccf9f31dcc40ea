# SPDX-License-Identifier: GPL-2.0-only
"""pyphases: a CPython workload with known time per function, for ember's
Python-frame end-to-end tests (the ground truth, like ember-phases).

    /usr/bin/python3.11 pyphases.py [SCALE]

Runs, with no warm-up, on the main thread one after the other:
  py_spin       a pure-Python loop
  py_recurse    py_recurse(40) -> ... -> py_recurse(0), busy at the bottom
  py_gen        a generator pipeline (py_gen_source -> py_gen_square)
                consumed by py_gen
  py_async      asyncio: three py_async_task coroutines taking turns
  py_hash       hashlib.sha256 and zlib.compress of 1 MiB, called from
                Python (the time is in C, under this Python frame)
  py_exc        raise and catch ValueError through py_exc_raise
  py_sleep      time.sleep (off CPU)
and meanwhile on a thread "py_worker": py_worker, a pure-Python loop.

Each phase measures its own thread CPU time (time.thread_time_ns) and,
for py_sleep, the time it spent off CPU (wall time less its own CPU
time), in fixed units of work, and prints
    PHASE <function> <ns> <raw-ns> <units> <median-unit-ns>
as ember-phases does (<ns> = <raw-ns> here: no stall correction), with
<function> the frame's qualname as ember shows it ("py_spin (pyphases.py:N)"
in folded output). py_sleep's figures are off-CPU time; every other
phase's are on-CPU time.
"""
import asyncio
import hashlib
import sys
import threading
import time
import zlib

SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
PHASE_S = 0.6 * SCALE          # target CPU seconds per main-thread phase
results = []


class Timed:
    """Units of work timed one by one on this thread's CPU clock."""

    def __init__(self, name, clock=time.thread_time_ns):
        self.name, self.clock, self.units = name, clock, []

    def run(self, unit, seconds=PHASE_S):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = self.clock()
            unit()
            self.units.append(self.clock() - t0)
        results.append(self)

    def line(self):
        raw = sum(self.units)
        med = sorted(self.units)[len(self.units) // 2] if self.units else 0
        return "PHASE %s %d %d %d %d" % (self.name, raw, raw, len(self.units), med)


def busy(n=20000):
    x = 0
    for i in range(n):
        x += i * i
    return x


def py_spin():
    Timed("py_spin").run(lambda: busy_inline())


def busy_inline():
    # the loop itself in a named frame of its own, under py_spin
    x = 0
    for i in range(20000):
        x += i * i
    return x


def py_recurse(n=40):
    if n:
        return py_recurse(n - 1)
    Timed("py_recurse").run(lambda: busy())


def py_gen_source(n):
    for i in range(n):
        yield i


def py_gen_square(it):
    for i in it:
        yield i * i


def py_gen():
    Timed("py_gen").run(lambda: sum(py_gen_square(py_gen_source(20000))))


async def py_async_task(n):
    for _ in range(n):
        busy(2000)
        await asyncio.sleep(0)


def py_async():
    async def main():
        await asyncio.gather(*(py_async_task(5) for _ in range(3)))
    Timed("py_async").run(lambda: asyncio.run(main()))


DATA = bytes(range(256)) * 4096     # 1 MiB


def py_hash():
    Timed("py_hash").run(lambda: (hashlib.sha256(DATA).digest(),
                                  zlib.compress(DATA, 6)))


def py_exc_raise(i):
    raise ValueError(i)


def py_exc():
    def unit():
        for i in range(2000):
            try:
                py_exc_raise(i)
            except ValueError:
                pass
    Timed("py_exc").run(unit)


def off_cpu_ns():
    # wall time less this thread's CPU time: a sleep's own CPU (the call,
    # the system calls; ~2 ms of a 17 ms time.sleep(0.01) under TCG) is
    # not off-CPU time
    return time.monotonic_ns() - time.thread_time_ns()


def py_sleep():
    Timed("py_sleep", off_cpu_ns).run(lambda: time.sleep(0.01),
                                      seconds=PHASE_S)


def py_worker(stop):
    t = Timed("py_worker")
    while not stop.is_set():
        t0 = t.clock()
        busy()
        t.units.append(t.clock() - t0)
    results.append(t)


def main():
    stop = threading.Event()
    th = threading.Thread(target=py_worker, args=(stop,), name="py_worker")
    th.start()
    for phase in (py_spin, py_recurse, py_gen, py_async, py_hash, py_exc,
                  py_sleep):
        phase()
    stop.set()
    th.join()
    for r in results:
        print(r.line())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
