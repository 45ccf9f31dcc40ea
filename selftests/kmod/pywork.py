# SPDX-License-Identifier: GPL-2.0
# Python workload of the module's Python-frame tests (guest-python.sh),
# run with Debian 12's /usr/bin/python3.11 -S (builtin modules only: the
# guest carries the interpreter and the few stdlib files startup reads).
#
#   pywork.py chain SECS OUT     main: a -> b -> c busy for SECS; a thread
#                                nap1 -> nap2 -> time.sleep (off-CPU)
#   pywork.py scribble OUT       main: sa -> sb -> sc spinning for ever, its
#                                frame objects' addresses in OUT
# OUT gets "code NAME 0xADDR" per function (id() of a code object is its
# address in CPython), "frame NAME 0xADDR" (scribble) and "ready".
import sys
import time
import _thread

mode = sys.argv[1]
out = open(sys.argv[-1], "w")


def say(*words):
    out.write(" ".join(words) + "\n")
    out.flush()


def c(t):
    x = 0
    while time.monotonic() < t:
        x += 1
    return x


def b(t):
    return c(t)


def a(t):
    return b(t)


def nap2():
    while True:
        time.sleep(0.02)


def nap1():
    nap2()


def sc():
    while True:
        pass


def sb():
    say("frame", "sb", hex(id(sys._getframe())))
    say("ready")
    sc()


def sa():
    say("frame", "sa", hex(id(sys._getframe())))
    sb()


for f in (a, b, c, nap1, nap2, sa, sb, sc):
    say("code", f.__name__, hex(id(f.__code__)))
say("code", "module", hex(id(sys._getframe().f_code)))
if mode == "chain":
    _thread.start_new_thread(nap1, ())
    say("ready")
    a(time.monotonic() + float(sys.argv[2]))
else:
    say("frame", "module", hex(id(sys._getframe())))
    sa()
