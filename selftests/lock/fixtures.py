#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Hand-made inputs for check-lock.sh's parsers (check-lock.sh --selftest).

usage: fixtures.py DIR

Writes DIR/truth.txt (lockwork's output), DIR/lock.folded (the folded
stacks ember -e lock --waker writes: waiter root..leaf, [lock ADDR KIND],
the waker's frames leaf..root, [waker COMM]; microseconds), DIR/lock.pb.gz (a pprof
profile with contentions/count and delay/nanoseconds, encoded here with no
protobuf library) and DIR/expected.txt: the PASS/FAIL verdict each check
must reach. Every site is right but one thing, so each check is seen both
passing and failing:
  site_a_m1     everything right
  site_b_m1     folded delay 20% high; pprof contentions 10% low
  site_c_m2     kind futex instead of mutex
  site_rd_rw    half its delay has no waker frames
  site_wr_rw    the lock address outside the rwlock
  site_cv_wait  everything right; pprof delay 15% high
  mmap_lock     right (waits under kmap_site/kunmap_site, below sys_ns)
"""
import gzip
import os
import sys

M1, M2, RW, CV = 0x55d0c0a01820, 0x55d0c0a017e0, 0x55d0c0a017a0, 0x55d0c0a01720
SITES = [  # name, lock, kind, holder, addr, size, kept, kept_ns
    ("site_a_m1", "M1", "mutex", "hold_m1_", M1, 40, 150, 110_000_000),
    ("site_b_m1", "M1", "mutex", "hold_m1_", M1, 40, 700, 800_000_000),
    ("site_c_m2", "M2", "mutex", "hold_m2_", M2, 40, 1000, 700_000_000),
    ("site_rd_rw", "RW", "rwlock", "hold_rw_", RW, 56, 1200, 260_000_000),
    ("site_wr_rw", "RW", "rwlock", "hold_rw_", RW, 56, 550, 130_000_000),
    ("site_cv_wait", "CV", "condvar", "signal_cv_in_signaller", CV, 48, 1800, 3_900_000_000),
]
KSITES = [("kmap_site", 8000, 3_400_000_000), ("kunmap_site", 8000, 740_000_000)]

ROOT = ["_start", "__libc_start_main_impl", "start_thread", "clone3"][2:]
WAIT = {"mutex": ["lock_mutex_at", "___pthread_mutex_lock", "__lll_lock_wait", "futex_wait"],
        "rwlock": ["___pthread_rwlock_rdlock", "__futex_abstimed_wait_common"],
        "condvar": ["___pthread_cond_wait", "__futex_abstimed_wait_common"]}
HOLD = {"site_a_m1": "hold_m1_in_site_b", "site_b_m1": "hold_m1_in_site_a",
        "site_c_m2": "hold_m2_in_site_c", "site_rd_rw": "hold_rw_write",
        "site_wr_rw": "hold_rw_read", "site_cv_wait": "signal_cv_in_signaller"}
KWAKE = ["try_to_wake_up_[k]", "wake_up_q_[k]", "rwsem_wake_[k]", "up_write_[k]"]


def truth():
    out = []
    for n, lk, k, h, a, sz, kept, ns in SITES:
        out.append(f"SITE name={n} lock={lk} kind={k} holder={h} addr={a:#x} size={sz} "
                   f"acquires={kept * 2} contentions={kept + 5} wait_ns={ns + 1000} "
                   f"kept={kept} kept_ns={ns}")
    for n, calls, ns in KSITES:
        out.append(f"KSITE name={n} lock=mmap_lock holder=kmap_site|kunmap_site "
                   f"calls={calls} sys_ns={ns}")
    out.append("RUN secs=4.006 measured_secs=4.006 min_us=10 threads=12 pid=1234")
    return "\n".join(out) + "\n"


def waiter(n, k):
    worker = "worker_" + n.split("_")[1]
    return ROOT + [worker, n] + WAIT[k]


def waker(n):
    # leaf..root: kernel wake path, the unlock, the holder, its thread
    unlock = "__lll_lock_wake" if n.endswith(("m1", "m2")) else "__futex_wake"
    return (["try_to_wake_up_[k]", "futex_wake_[k]", "do_futex_[k]", unlock,
             "___pthread_mutex_unlock", HOLD[n], "worker_x"] + ROOT[::-1] +
            ["[waker lockwork]"])


def folded_lines():
    lines = []
    for n, lk, k, h, a, sz, kept, ns in SITES:
        kind, addr, d = k, a + 8 if k != "mutex" else a, ns
        if n == "site_b_m1":
            d = int(ns * 1.2)
        if n == "site_c_m2":
            kind = "futex"
        if n == "site_wr_rw":
            addr = a + 4096
        stack = ["lockwork"] + waiter(n, k) + [f"[lock {addr:#x} {kind}]"]
        if n == "site_rd_rw":  # half without a waker
            lines.append((stack, d // 2))
            lines.append((stack + waker(n), d - d // 2))
        else:  # two lines, split 3:1, so sums are exercised
            lines.append((stack + waker(n), d * 3 // 4))
            lines.append((stack[:-2] + ["futex_wait_other"] + stack[-1:] + waker(n),
                          d - d * 3 // 4))
    for n, calls, ns in KSITES:
        st = (["lockwork"] + ROOT + ["worker_kernel", n, "__mmap" if n == "kmap_site" else "__munmap",
              "entry_SYSCALL_64_[k]", "do_syscall_64_[k]", "down_write_killable_[k]",
              "[lock mmap_lock rwsem-write]"] + KWAKE + ["kunmap_site", "worker_kernel"] +
              ROOT[::-1] + ["[waker lockwork]"])
        lines.append((st, ns // 10))
    # noise: another process's futex, a line without a lock frame
    lines.append((["lockwork"] + ROOT[:1] + ["main", "pthread_join", "[lock 0x7f0000001000 futex]"], 4_000_000_000))
    lines.append((["other", "main", "read"], 5000))
    # weights in microseconds, as ember writes lock waits
    return sorted(";".join(s) + f" {v // 1000}" for s, v in lines)


# ---- pprof, encoded by hand ----
def varint(v):
    b = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        if v:
            b.append(c | 0x80)
        else:
            b.append(c)
            return bytes(b)


def field(num, wt, payload):
    key = varint(num << 3 | wt)
    if wt == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def packed(num, vals):
    return field(num, 2, b"".join(varint(v) for v in vals))


def pprof():
    strings = [""]
    sidx = {}

    def s(x):
        if x not in sidx:
            sidx[x] = len(strings)
            strings.append(x)
        return sidx[x]

    funcs, locs = {}, []
    out = bytearray()

    def loc(names):  # one location, inlined names innermost first
        key = tuple(names)
        for i, (k, _) in enumerate(locs):
            if k == key:
                return i + 1
        lines = b""
        for nm in names:
            if nm not in funcs:
                funcs[nm] = len(funcs) + 1
            lines += field(4, 2, field(1, 0, funcs[nm]) + field(2, 0, 7))
        locs.append((key, field(1, 0, len(locs) + 1) + field(3, 0, 0x1000 + len(locs)) + lines))
        return len(locs)

    out += field(1, 2, field(1, 0, s("contentions")) + field(2, 0, s("count")))
    out += field(1, 2, field(1, 0, s("delay")) + field(2, 0, s("nanoseconds")))
    samples = []
    for n, lk, k, h, a, sz, kept, ns in SITES:
        c, d = kept, ns
        if n == "site_b_m1":
            c = int(kept * 0.9)
        if n == "site_cv_wait":
            d = int(ns * 1.15)
        st = waiter(n, k)  # root..leaf
        ids = [loc([f]) for f in reversed(st)]
        # the last-but-one location holds an inlined pair (innermost first)
        ids[1] = loc([st[-2], st[-2] + "_inl"])
        ids = [loc([f"[lock {a:#x} {k}]"])] + ids
        samples.append((ids, [c // 2, d // 2]))
        samples.append((ids, [c - c // 2, d - d // 2]))
    samples.append(([loc(["pthread_join"]), loc(["main"])], [1, 4_000_000_000]))
    for ids, vals in samples:
        # locations packed, values unpacked (both encodings are legal)
        body = packed(1, ids) + b"".join(field(2, 0, v) for v in vals)
        body += field(3, 2, field(1, 0, s("lock address")) + field(3, 0, 0x1234))
        out += field(2, 2, body)
    for _, l in locs:
        out += field(4, 2, l)
    for nm, i in funcs.items():
        out += field(5, 2, field(1, 0, i) + field(2, 0, s(nm)) + field(4, 0, s("lockwork.c")))
    for x in strings:
        out += field(6, 2, x.encode())
    out += field(9, 0, 4_000_000_000)  # time_nanos, skipped
    return gzip.compress(bytes(out))


def expected():
    v = []
    for n, *_ in SITES:
        v.append(("FAIL" if n == "site_b_m1" else "PASS", f"delay_{n}"))
        v.append(("FAIL" if n == "site_c_m2" else "PASS", f"kind_{n}"))
        v.append(("FAIL" if n == "site_wr_rw" else "PASS", f"address_{n}"))
        v.append(("FAIL" if n == "site_rd_rw" else "PASS", f"waker_{n}"))
    v.append(("PASS", "mmap_lock"))
    v.append(("PASS", "pprof_sample_types"))
    for n, *_ in SITES:
        v.append(("FAIL" if n == "site_b_m1" else "PASS", f"pprof_contentions_{n}"))
        v.append(("FAIL" if n == "site_cv_wait" else "PASS", f"pprof_delay_{n}"))
    return "".join(f"{a} {b}\n" for a, b in v)


def main():
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/truth.txt", "w") as f:
        f.write(truth())
    with open(f"{d}/lock.folded", "w") as f:
        f.write("\n".join(folded_lines()) + "\n")
    with open(f"{d}/lock.pb.gz", "wb") as f:
        f.write(pprof())
    with open(f"{d}/expected.txt", "w") as f:
        f.write(expected())


if __name__ == "__main__":
    main()
