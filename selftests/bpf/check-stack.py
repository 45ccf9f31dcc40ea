#!/usr/bin/env python3
# The eBPF programs' own stack frames, from the compiled object: each
# program (an ELF section's entry, not a global subprogram) at most
# MAX_PROG bytes. The 5.10-6.12 verifiers add every frame of a call chain
# (each rounded up to 32) against 512 bytes, and the deepest chain below
# a program (uw_walk -> uw_frames -> uw_rule_at: 32 + 128 + 64) leaves
# it 288. A newer host kernel accepts more, so this is checked from the
# object itself, not by loading it here (6.1 refused a 304-byte
# ember_oncpu that this host loaded).
#   check-stack.py OBJECT [MAX_PROG]
import re
import subprocess
import sys

obj = sys.argv[1]
max_prog = int(sys.argv[2]) if len(sys.argv) > 2 else 288
dis = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", obj],
                     capture_output=True, text=True, check=True).stdout
section, fn, depth, kind = None, None, {}, {}
for line in dis.splitlines():
    m = re.match(r"^Disassembly of section (\S+):", line)
    if m:
        section = m.group(1).rstrip(":")
        continue
    m = re.match(r"^[0-9a-f]+ <([^>]+)>:", line)
    if m and not m.group(1).startswith("LBB"):
        fn = m.group(1)
        # global subprograms live in .text; programs in their own sections
        kind[fn] = "subprog" if section == ".text" else "prog"
        depth.setdefault(fn, 0)
        continue
    for x in re.findall(r"r10 - (\d+)", line):
        depth[fn] = max(depth[fn], int(x))
progs = {f: d for f, d in depth.items() if kind.get(f) == "prog"}
over = {f: d for f, d in progs.items() if d > max_prog}
deepest = max(progs.items(), key=lambda x: x[1])
if not progs:
    print("no program found in %s" % obj)
    sys.exit(1)
if over:
    print("program frames over %d bytes: %s" % (max_prog, ", ".join(
        "%s %d" % kv for kv in sorted(over.items()))))
    sys.exit(1)
print("%d programs, deepest frame %s %d bytes (<= %d); subprograms: %s" % (
    len(progs), deepest[0], deepest[1], max_prog, ", ".join(
        "%s %d" % (f, d) for f, d in sorted(depth.items())
        if kind.get(f) == "subprog" and d)))
