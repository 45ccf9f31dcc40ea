# SPDX-License-Identifier: GPL-2.0-only
"""Python workload with known call chains, for the eBPF backend's CPython
frame walker (selftests/bpf/check-python.sh). Run with Debian 12's
/usr/bin/python3.11 (x86_64):

    py-work.py chain SECS     main thread: py_a -> py_b -> py_c (busy) and
                              py_a -> py_b -> sorted(key=py_key) (busy key:
                              a second eval-loop activation under C code);
                              thread "sleeper": py_s1 -> py_s2 ->
                              time.sleep (off CPU)
    py-work.py deep N SECS    N distinct functions py_d0 -> ... -> py_d<N-1>,
                              busy at the bottom (the cost figures: N = 40;
                              distinct code objects, as a real stack has)

First it checks, through ctypes on itself, every CPython 3.11 and glibc
2.36 offset the test gives the eBPF program (check-python.py's PY311), so a
wrong constant fails here and not as a puzzling walk; then prints one JSON
line: pid, native thread ids, and id() of each function's code object
(id() is the object's address in CPython), and works until SECS are over.
"""
import ctypes
import json
import os
import sys
import threading
import time

# CPython v3.11 (Include/internal/pycore_frame.h, pycore_runtime.h,
# cpython/code.h, cpython/pystate.h; the same values from offsetof() on
# Debian's 3.11.2 headers) and glibc 2.36 x86_64 (pthread_getspecific:
# (key + 0x31) << 4 from %fs:0x10, data at +8)
FR_CODE, FR_PREVIOUS, FR_INSTR, FR_IS_ENTRY = 32, 48, 56, 68
TS_CFRAME, CF_CURRENT_FRAME = 56, 8
CO_FLAGS, CO_ARGCOUNT, CO_FIRSTLINENO = 48, 56, 72
RT_TSS_KEY = 0x254          # _PyRuntime.gilstate.autoTSSkey._key
TSD_DATA = 0x318            # struct pthread.specific_1stblock[0].data
PYFRAME_F_FRAME = 24        # PyFrameObject.f_frame


def u64(addr):
    return ctypes.c_uint64.from_address(addr).value


def i32(addr):
    return ctypes.c_int32.from_address(addr).value


def fs_base():
    v = ctypes.c_uint64()
    libc = ctypes.CDLL(None, use_errno=True)
    # arch_prctl(ARCH_GET_FS): the thread pointer the kernel keeps
    if libc.syscall(158, 0x1003, ctypes.byref(v)):
        raise OSError(ctypes.get_errno(), "arch_prctl")
    return v.value


def check_offsets():
    f = sys._getframe()
    iframe = u64(id(f) + PYFRAME_F_FRAME)
    assert u64(iframe + FR_CODE) == id(f.f_code), "f_code"
    parent = u64(iframe + FR_PREVIOUS)
    assert u64(parent + FR_CODE) == id(f.f_back.f_code), "previous"
    assert u64(iframe + FR_INSTR) > id(f.f_code), "prev_instr"
    code = f.f_code
    assert i32(id(code) + CO_FIRSTLINENO) == code.co_firstlineno, "firstlineno"
    assert i32(id(code) + CO_ARGCOUNT) == code.co_argcount, "argcount"
    assert i32(id(code) + CO_FLAGS) == code.co_flags, "flags"
    get = ctypes.pythonapi.PyThreadState_Get
    get.restype = ctypes.c_void_p
    tstate = get()
    # read here, not in u64(): there the current frame would be u64's
    cframe = ctypes.c_uint64.from_address(tstate + TS_CFRAME).value
    cur = ctypes.c_uint64.from_address(cframe + CF_CURRENT_FRAME).value
    assert cur == iframe, "cframe"
    runtime = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi,
                                                    "_PyRuntime"))
    key = i32(runtime + RT_TSS_KEY)
    assert 0 <= key < 32, "TSS key %d" % key
    assert u64(fs_base() + TSD_DATA + key * 16) == tstate, "glibc TSD"
    # the first frame of this activation (<module>) is the entry frame
    fr = iframe
    while u64(fr + FR_PREVIOUS):
        assert ctypes.c_uint8.from_address(fr + FR_IS_ENTRY).value == 0
        fr = u64(fr + FR_PREVIOUS)
    assert ctypes.c_uint8.from_address(fr + FR_IS_ENTRY).value == 1, "is_entry"
    return runtime


def busy(until):
    x = 0
    while time.monotonic() < until:
        for i in range(2000):
            x += i * i
    return x


END = 0.0


def py_c():
    return busy(min(time.monotonic() + 0.05, END))


def py_key(v):
    t = time.monotonic() + 0.0005
    x = 0
    while time.monotonic() < t:
        x += 1
    return -v


def py_b():
    while time.monotonic() < END:
        py_c()
        sorted(range(100), key=py_key)


def py_a():
    py_b()


def py_s2():
    while time.monotonic() < END:
        time.sleep(0.02)


def py_s1():
    py_s2()


def py_deep(n):
    """py_d0 -> py_d1 -> ... -> py_d<n-1> -> busy: n distinct functions"""
    src = "".join("def py_d%d():\n    return py_d%d()\n" % (i, i + 1)
                  for i in range(n - 1))
    src += "def py_d%d():\n    return busy(END)\n" % (n - 1)
    exec(src, globals())
    return globals()["py_d0"]()


def main():
    global END
    mode = sys.argv[1]
    secs = float(sys.argv[-1])
    runtime = check_offsets()
    names = {"<module>": id(MODULE_CODE)}
    for fn in (py_a, py_b, py_c, py_key, py_s1, py_s2, py_deep):
        names[fn.__name__] = id(fn.__code__)
    info = {"pid": os.getpid(), "main_tid": threading.get_native_id(),
            "runtime": runtime, "codes": names}
    if mode == "chain":
        ready = threading.Event()

        def sleeper():
            info["sleeper_tid"] = threading.get_native_id()
            ready.set()
            py_s1()
        t = threading.Thread(target=sleeper, name="sleeper", daemon=True)
        # started after END is set, below
    END = time.monotonic() + 3600
    if mode == "chain":
        t.start()
        ready.wait()
    print(json.dumps(info), flush=True)
    # the test binds the process, then says go on stdin
    sys.stdin.readline()
    END = time.monotonic() + secs
    if mode == "chain":
        py_a()
        t.join()
    else:
        py_deep(int(sys.argv[2]))


MODULE_CODE = sys._getframe().f_code
main()
