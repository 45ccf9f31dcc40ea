# A process whose Python stack ember's test reads from outside
# (selftests/agent/test_python.c): it prints its own stack, innermost
# first, one "qualname|filename|line|code address" per frame, then "END",
# and stops itself (SIGSTOP) on the line it printed, so the frame chain
# read while it is stopped is exactly the printed one.
import os, signal, sys


class Deep:
    def method(self, n):
        if n:
            return self.method(n - 1)
        return leaf()


def gen():
    yield Deep().method(3)


def leaf():
    f = sys._getframe()
    here = f
    stop = [i for i, text in enumerate(open(__file__), 1)
            if text.strip().startswith("os.kill(os.getpid()")][0]
    rows = []
    while f:
        code = f.f_code
        line = stop if f is here else f.f_lineno
        rows.append("%s|%s|%d|%d" % (code.co_qualname[:100], code.co_filename,
                                     line, id(code)))
        f = f.f_back
    print("\n".join(rows) + "\nEND", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
    return 0


def middle():
    return next(gen())


if len(sys.argv) > 1 and sys.argv[1] == "long":
    # a 2 MB qualname: ember must refuse it, not copy it
    middle.__code__ = middle.__code__.replace(co_qualname="x" * (2 << 20))
middle()
