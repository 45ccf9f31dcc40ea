# Python calling machine code that no unwinder can step out of: an
# anonymous executable mapping (no file, no CFI) whose function clears
# the frame pointer and spins. ember's native walk of its samples stops
# at that leaf; the Python callers (spin, outer, <module>) must still be
# in every such stack, after an honest [cut] (check-python-rest.sh).
#   python3 pyanon.py SECONDS
import ctypes
import mmap
import os
import sys
import time

CODE = {
    # push rbp; xor ebp,ebp; mov rax,rdi; 1: dec rax; jnz 1b; pop rbp; ret
    "x86_64": bytes([0x55, 0x31, 0xED, 0x48, 0x89, 0xF8, 0x48, 0xFF, 0xC8,
                     0x75, 0xFB, 0x5D, 0xC3]),
    # stp x29,x30,[sp,#-16]!; mov x29,#0; 1: subs x0,x0,#1; b.ne 1b;
    # ldp x29,x30,[sp],#16; ret
    "aarch64": bytes.fromhex("fd7bbfa9" "1d0080d2" "000400f1" "e1ffff54"
                             "fd7bc1a8" "c0035fd6"),
}


def make_spinner():
    code = CODE[os.uname().machine]
    m = mmap.mmap(-1, mmap.PAGESIZE,
                  prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    fn = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long)(addr)
    return m, fn


spun = 0.0


def spin(fn, n):
    global spun
    t = time.thread_time()
    fn(n)
    spun += time.thread_time() - t


def outer(fn, secs):
    end = time.monotonic() + secs
    calls = 0
    while time.monotonic() < end:
        spin(fn, 20_000_000)
        calls += 1
    return calls


def module_files():
    """The files of every module loaded (EMBER_PY_FILES: a VM's list)."""
    print(os.__file__)
    for m in list(sys.modules.values()):
        for f in (getattr(m, "__file__", None), getattr(m, "__cached__", None)):
            if f and f.startswith(os.path.dirname(os.__file__) + "/") and \
               os.path.exists(f):
                print(f)


if __name__ == "__main__":
    keep, spinner = make_spinner()
    if os.environ.get("EMBER_PY_FILES"):
        module_files()
        sys.exit(0)
    calls = outer(spinner, float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
    # the share of the process's CPU time (start-up included) in spin
    cpu = time.process_time()
    print("TRUTH calls=%d spin_share=%.4f cpu_s=%.3f spun_s=%.3f"
          % (calls, spun / cpu, cpu, spun))
