# Ground truth for ember's CPython location-table decoder
# (selftests/agent/test_python.c): for each code object of this file and
# of a few standard modules, one line
#   firstlineno HEX(co_linetable) LINE,LINE,...
# with the line of each code unit (co_positions(), one per unit, caches
# included; -1 where the table has none).
import sys, types, json, textwrap, asyncio.events, collections


def sample(a, b=2, *args, k=None, **kw):
    x = [i * i for i in range(a)]
    try:
        y = {k: v
             for k, v in zip(x,
                             x)}
    except ZeroDivisionError as e:
        raise ValueError("no") from e
    finally:
        pass
    def inner(z):
        return (z +
                1)
    return inner(len(y)) if x else None


async def coro(n):
    await asyncio.sleep(0)
    return n


def walk(code, out, seen):
    if id(code) in seen:
        return
    seen.add(id(code))
    lines = []
    for pos in code.co_positions():
        lines.append(-1 if pos[0] is None else pos[0])
    out.append("%d %s %s" % (code.co_firstlineno, code.co_linetable.hex(),
                             ",".join(map(str, lines)) or "-"))
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            walk(c, out, seen)


out, seen = [], set()
for mod in (sys.modules[__name__], json.decoder, textwrap, asyncio.events,
            collections):
    for v in list(vars(mod).values()):
        for f in (v, *(getattr(v, "__dict__", {}).values()
                       if isinstance(v, type) else ())):
            code = getattr(f, "__code__", None)
            if isinstance(code, types.CodeType):
                walk(code, out, seen)
print("\n".join(out))
