# SPDX-License-Identifier: GPL-2.0-only
"""The eBPF backend's CPython frames against a live python3.11
(selftests/bpf/check-python.sh).

  check-python.py proc PID [--bad tstate|previous]
      struct ember_py_proc for process PID (Debian 12's python3.11, x86_64),
      96 bytes in hex, for py-bpf-dump -Y: _PyRuntime and
      _PyEval_EvalFrameDefault from the executable's dynsym, the CPython
      3.11 and glibc 2.36 offsets py-work.py checks on itself. --bad
      breaks one field (the thread-state offset, or `previous`): the walk
      must then cut, never write a made-up frame.
  check-python.py chain DUMP INFO [--fp] [--bad tstate|previous]
      py-bpf-dump's records of py-work.py chain against its own facts:
      every Python slot names a live code object whose check value agrees
      (read from /proc/PID/mem), the chains are py-work.py's, in order, in
      their place among the native frames, off-CPU ones too.
"""
import json
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])

TAG_PY, TAG_CUT = 0xf1, 0xf2
SF_USER_CUT, SF_PYTHON = 1 << 7, 1 << 12
CUTS = {1: "tstate", 2: "frame", 3: "depth", 4: "entry", 5: "native"}
CUT_SHIFT = 6   # not a cut: the leaf's empty activation (unshift())
# CPython 3.11 (py-work.py checks each of these on itself)
FR_CODE, FR_PREVIOUS, FR_INSTR, FR_IS_ENTRY = 32, 48, 56, 68
TS_CFRAME, CF_CURRENT_FRAME = 56, 8
CO_FLAGS, CO_ARGCOUNT, CO_FIRSTLINENO, CO_QUALNAME = 48, 56, 72, 128
RT_TSS_KEY, TSD_DATA = 0x254, 0x318
OB_TYPE, ASCII_LENGTH, ASCII_STATE, ASCII_DATA = 8, 16, 32, 48
PROC_FMT = "<IBBBBqQ2Q2QQ2H7H7H"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def dynsyms(path):
    out = subprocess.run(["readelf", "--dyn-syms", "-W", path], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 8 and f[0][:-1].isdigit():
            syms[f[7].split("@")[0]] = (int(f[1], 16), int(f[2], 0))
    return syms


def exe_bias(pid, path):
    """Load bias of the executable: 0 for Debian's non-PIE python3.11."""
    with open(path, "rb") as f:
        if struct.unpack_from("<H", f.read(18), 16)[0] == 2:   # ET_EXEC
            return 0
    for line in open("/proc/%d/maps" % pid):
        f = line.split()
        if len(f) >= 6 and f[5] == path and int(f[2], 16) == 0:
            return int(f[0].split("-")[0], 16)
    fail("no mapping of %s in %d" % (path, pid))


def proc_struct(pid, bad=None):
    import os
    path = os.readlink("/proc/%d/exe" % pid)
    syms = dynsyms(path)
    bias = exe_bias(pid, path)
    rt = syms["_PyRuntime"][0] + bias
    ev, evsize = syms["_PyEval_EvalFrameDefault"]
    ev += bias
    tstate_off = TSD_DATA
    fr_previous = FR_PREVIOUS
    if bad == "tstate":
        tstate_off = TSD_DATA - 8   # the key's sequence number, not data
    elif bad == "previous":
        fr_previous = 8             # f_globals: a dict, not a frame
    return struct.pack(PROC_FMT, 0x030b02f0,
                       2, 1, 1, 2,              # TSD, ENTRY_FLAG, is_entry=1
                       tstate_off, rt + RT_TSS_KEY,
                       ev, 0, ev + evsize, 0, 0,
                       TS_CFRAME, CF_CURRENT_FRAME,
                       fr_previous, FR_CODE, FR_INSTR, FR_IS_ENTRY,
                       CO_FIRSTLINENO, CO_ARGCOUNT, CO_FLAGS,
                       0, 0, 0, 0, 0, 0, 0).hex()


class Mem:
    def __init__(self, pid):
        self.f = open("/proc/%d/mem" % pid, "rb", buffering=0)

    def read(self, addr, n):
        try:
            self.f.seek(addr)
            return self.f.read(n)
        except (OSError, ValueError, OverflowError):
            return b""

    def u64(self, addr):
        b = self.read(addr, 8)
        return struct.unpack("<Q", b)[0] if len(b) == 8 else None


def check_value(firstlineno, argcount, flags):
    return ((firstlineno & 0xffffffff) ^ ((argcount << 16) & 0xffffffff) ^
            ((flags << 20) & 0xffffffff))


class Codes:
    """Names of code objects, read from the live process (cached)."""

    def __init__(self, pid, code_type):
        self.mem = Mem(pid)
        self.code_type = code_type
        self.cache = {}

    def name(self, addr, chk):
        """(qualname, ok): ok when addr is a code object whose check agrees"""
        if (addr, chk) in self.cache:
            return self.cache[addr, chk]
        b = self.mem.read(addr, CO_QUALNAME + 8)
        res = (None, False)
        if len(b) == CO_QUALNAME + 8 and \
                struct.unpack_from("<Q", b, OB_TYPE)[0] == self.code_type:
            fl, ac, first = (struct.unpack_from("<i", b, o)[0]
                             for o in (CO_FLAGS, CO_ARGCOUNT, CO_FIRSTLINENO))
            q = struct.unpack_from("<Q", b, CO_QUALNAME)[0]
            s = self.mem.read(q, ASCII_DATA)
            name = "?"
            if len(s) == ASCII_DATA:
                n = struct.unpack_from("<q", s, ASCII_LENGTH)[0]
                state = struct.unpack_from("<I", s, ASCII_STATE)[0]
                if state & 0x60 == 0x60 and 0 < n < 256:   # compact ascii
                    name = self.mem.read(q + ASCII_DATA, n).decode()
            res = (name, check_value(first, ac, fl) == chk)
        self.cache[addr, chk] = res
        return res


def tokens(slots):
    """User slots into ('py', code, check, off) / ('cut', why) / ('n', pc)"""
    out, i = [], 0
    while i < len(slots):
        v, tag = slots[i], slots[i] >> 56
        if tag == TAG_PY:
            if i + 1 >= len(slots):
                return None
            out.append(("py", v & ((1 << 56) - 1), slots[i + 1] >> 32,
                         slots[i + 1] & 0xffffffff))
            i += 2
            continue
        out.append(("cut", v & 0xff) if tag == TAG_CUT else ("n", v))
        i += 1
    return out


def records(path, pid):
    rx = re.compile(r"^(SAMPLE|OFFCPU) .* pid=(\d+) tid=(\d+) flags=(0x[0-9a-f]+)"
                    r" nk=\d+ nu=\d+ u=([0-9a-f,]*)$")
    for line in open(path):
        m = rx.match(line.strip())
        if m and int(m.group(2)) == pid:
            slots = [int(x, 16) for x in m.group(5).split(",") if x]
            yield m.group(1), int(m.group(3)), int(m.group(4), 16), slots


MAIN_CHAINS = [  # leaf first, every Python frame of the main thread
    ["busy", "py_c", "py_b", "py_a", "main", "<module>"],
    ["py_c", "py_b", "py_a", "main", "<module>"],
    ["py_key", "py_b", "py_a", "main", "<module>"],
    ["py_b", "py_a", "main", "<module>"],
]


def unshift(toks, ev0, evn):
    """The agent's py_unshift(): a walk that caught the leaf's eval loop
    in its prologue or epilogue (('cut', 6), then the leaf's PC) in its
    true order, each activation past the natives after it; an entry cut
    when it is not that shape, or an eval-loop frame [ev0, ev0 + evn) is
    left native after the marker."""
    at = next((i for i, t in enumerate(toks) if t == ("cut", CUT_SHIFT)), None)
    if at is None:
        return toks
    bad = toks[:at] + [("cut", 4)] + toks[at + 2:]
    if at + 1 >= len(toks) or toks[0][0] != "py" or toks[at + 1][0] != "n":
        return bad
    if any(t[0] == "n" and ev0 <= t[1] - 1 < ev0 + evn for t in toks[at + 2:]):
        return bad
    out, i = [toks[at + 1]], 0
    while i < at:
        py = i
        while i < at and toks[i][0] == "py":
            i += 1
        nat = i
        while i < at and toks[i][0] == "n":
            i += 1
        if nat == py or (i < at and toks[i][0] != "py"):
            return bad
        out += toks[nat:i] + toks[py:nat]
    return out + toks[at + 2:]


def groups(toks):
    """Runs of consecutive Python frames: [(first index, [tokens])]"""
    out = []
    for i, t in enumerate(toks):
        if t[0] == "py":
            if out and out[-1][0] + len(out[-1][1]) == i:
                out[-1][1].append(t)
            else:
                out.append((i, [t]))
    return out


def check_chain(dump, info, fp=False, bad=None):
    pid = info["pid"]
    syms = dynsyms(os.readlink("/proc/%d/exe" % pid))
    codes = Codes(pid, syms["PyCode_Type"][0])
    ev0, evn = syms["_PyEval_EvalFrameDefault"]
    stats = dict(main=0, complete=0, key=0, key_ok=0, sleep=0, sleep_ok=0,
                 py=0, bad_code=0, cut=0, cuts={}, bad_order=0, eval_left=0,
                 leaf_bad=0, uncut=0, shifted=0)
    example = {}
    for kind, tid, flags, slots in records(dump, pid):
        toks = tokens(slots)
        if toks is None:
            fail("a Python slot without its second slot: %s" % slots)
        stats["shifted"] += ("cut", CUT_SHIFT) in toks
        toks = unshift(toks, ev0, evn)
        names = []
        for t in toks:
            if t[0] == "py":
                stats["py"] += 1
                name, ok = codes.name(t[1], t[2])
                if not ok:
                    stats["bad_code"] += 1
                    stats["leaf_bad"] += not names
                    example.setdefault("bad_code", (hex(t[1]), t[2], name))
                names.append(name)
            elif t[0] == "cut":
                stats["cut"] += 1
                why = CUTS.get(t[1], str(t[1]))
                stats["cuts"][why] = stats["cuts"].get(why, 0) + 1
        if bool(names) != bool(flags & SF_PYTHON):
            fail("EMBER_SF_PYTHON 0x%x disagrees with the slots %s" % (flags, toks))
        if any(t[0] == "cut" for t in toks) and not flags & SF_USER_CUT:
            fail("a cut marker without EMBER_SF_USER_CUT: %s" % toks)
        cut = any(t[0] == "cut" for t in toks)
        stats["uncut"] += bool(names) and not cut
        if kind == "SAMPLE" and tid == info["main_tid"]:
            stats["main"] += 1
            if names in MAIN_CHAINS and not cut:
                stats["complete"] += 1
                # every activation replaced: no eval-loop PC left native
                if not fp and any(t[0] == "n" and ev0 <= t[1] - (i > 0) < ev0 + evn
                                  for i, t in enumerate(toks)):
                    stats["eval_left"] += 1
            elif names and not cut and not fp:
                stats["bad_order"] += 1
                example.setdefault("bad_order", names)
            if names and names[0] == "py_key":
                stats["key"] += 1
                g = groups(toks)
                # py_key's activation, natives (sorted's C code), then the
                # activation that called sorted(): the true order
                if len(g) >= 2 and [codes.name(t[1], t[2])[0] for t in g[0][1]] == ["py_key"] \
                        and g[1][0] > g[0][0] + 1 and \
                        all(t[0] == "n" for t in toks[g[0][0] + 1:g[1][0]]):
                    stats["key_ok"] += 1
                elif not fp:
                    example.setdefault("key", toks)
        if kind == "OFFCPU" and tid == info.get("sleeper_tid"):
            stats["sleep"] += 1
            # time.sleep's C frames first, then py_s2, py_s1 and the thread
            if toks and toks[0][0] == "n" and names[:3] == ["py_s2", "py_s1", "main.<locals>.sleeper"]:
                stats["sleep_ok"] += 1
            else:
                example.setdefault("sleep", names)
    s = stats
    print("# %s" % json.dumps(s))
    for k, v in example.items():
        print("# example %s: %s" % (k, v))
    if bad:
        # a broken description: cuts, never a frame that is not there
        # `previous` wrong: the leaf frame comes from the thread state and
        # is right, what follows it is whatever the wrong offset points
        # to; a code object's type is not in struct ember_py_proc, so the
        # program cannot tell (the agent's name lookup must). It must
        # still end every such chain with a cut, within its bounds.
        if s["leaf_bad"] or (bad == "tstate" and s["bad_code"]):
            fail("%d Python slots name no live code object" % s["bad_code"])
        if s["uncut"]:
            fail("%d broken chains end without a cut" % s["uncut"])
        if not s["cut"]:
            fail("a broken %s gave no cut marker" % bad)
        if bad == "tstate" and s["py"]:
            fail("Python frames written with a wrong thread-state offset")
        print("ok: broken %s: %d cut markers %s, leaf frames all live code"
              " objects, %d slots past them not" % (bad, s["cut"], s["cuts"],
                                                     s["bad_code"]))
        return
    if s["bad_code"]:
        fail("%d of %d Python slots do not name a live code object with the "
             "same check value" % (s["bad_code"], s["py"]))
    if s["main"] < 30:
        fail("only %d on-CPU samples of the main thread" % s["main"])
    # frame pointers: Debian builds python3.11 without them, so only the
    # samples whose leaf is in the eval loop itself get their chain
    need = 0.1 if fp else 0.9
    if s["complete"] < need * s["main"]:
        fail("%d of %d main-thread samples have a whole Python chain "
             "(%d%% needed)" % (s["complete"], s["main"], need * 100))
    if s["eval_left"] or s["bad_order"]:
        fail("%d complete chains left an eval-loop frame native, %d in the "
             "wrong order" % (s["eval_left"], s["bad_order"]))
    if not fp:
        if s["key"] < 5 or s["key_ok"] < 0.9 * s["key"]:
            fail("py_key under sorted(): %d of %d in place" % (s["key_ok"], s["key"]))
        if s["sleep"] < 10 or s["sleep_ok"] < 0.9 * s["sleep"]:
            fail("sleeper off CPU: %d of %d with py_s2, py_s1 under the sleep"
                 % (s["sleep_ok"], s["sleep"]))
    print("ok: %d main-thread samples, %d whole chains; py_key in place %d/%d;"
          " sleeper off CPU %d/%d; %d Python slots, all live code objects"
          % (s["main"], s["complete"], s["key_ok"], s["key"], s["sleep_ok"],
             s["sleep"], s["py"]))


def main():
    args = sys.argv[1:]
    bad = None
    if "--bad" in args:
        i = args.index("--bad")
        bad = args[i + 1]
        del args[i:i + 2]
    fp = "--fp" in args
    args = [a for a in args if a != "--fp"]
    if args[0] == "proc":
        print(proc_struct(int(args[1]), bad))
    elif args[0] == "chain":
        check_chain(args[1], json.load(open(args[2])), fp, bad)
    else:
        fail("usage: see the top of check-python.py")


main()
