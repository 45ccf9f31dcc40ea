#!/usr/bin/env python3
"""ember's layout rules, checked on the tree (selftests/suites/10-agent-unit.sh).

1. Folder rules: every quoted #include in agent/<folder>/ names a header of
   its own folder, or of a folder (or one header) its README.md's
   "May call:" paragraph lists. Includes must name their folder
   ("proc/proc.h"): a bare name, "../x.h" or "./x.h" is refused.
2. No include circles: a unit is x.c with x.h (and x_internal.h); unit A
   depends on unit B when a file of A includes a header of B. The unit
   graph of agent/ and of kmod/ must have no cycle.
3. No call circles: given built objects, unit A depends on unit B when A's
   object uses a symbol B's object defines (nm). Two files that call each
   other are one unit split in two, or need a one-way interface.

Usage: check-layout.py [--root DIR] [rules|circles|all]
       check-layout.py calls OBJECT...
Prints one line per violation and exits 1 if there is any.
"""
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
TOKEN = re.compile(r'\b([a-z][a-z0-9_]*)/([A-Za-z0-9_]+\.h)?')


def may_call(readme):
    """Folders (and single headers) a README's "May call:" paragraph allows.
    Returns (set of folders, set of 'folder/header') or None if no line."""
    try:
        text = open(readme, encoding='utf-8').read()
    except OSError:
        return None
    m = re.search(r'^May call:(.*?)(?:\n\s*\n|\Z)', text, re.M | re.S)
    if not m:
        return None
    para = m.group(1)
    # "Not x/" and "Never x/" name folders that are refused, not allowed.
    para = re.split(r'(?<![a-z])(?:Not|Never)\b', para)[0]
    if re.search(r'every other folder', para):
        return {'*'}, set()
    folders, headers = set(), set()
    for folder, header in TOKEN.findall(para):
        if header:
            headers.add(folder + '/' + header)
        else:
            folders.add(folder)
    return folders, headers


def agent_folders(root):
    base = os.path.join(root, 'agent')
    return sorted(d for d in os.listdir(base)
                  if os.path.isdir(os.path.join(base, d)) and d not in ('gen', 'mk'))


def sources(directory):
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = [d for d in dirnames if not d.startswith('.')]
        for f in sorted(filenames):
            if f.endswith(('.c', '.h')):
                yield os.path.join(dirpath, f)


def includes(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        return INCLUDE.findall(f.read())


def check_rules(root):
    bad = []
    folders = agent_folders(root)
    for folder in folders:
        readme = os.path.join(root, 'agent', folder, 'README.md')
        rule = may_call(readme)
        if rule is None:
            bad.append(f'agent/{folder}/README.md: no "May call:" line')
            continue
        allowed, headers = rule
        for path in sources(os.path.join(root, 'agent', folder)):
            rel = os.path.relpath(path, root)
            for name in includes(path):
                first = name.split('/', 1)[0]
                if '/' not in name or first in ('.', '..'):
                    if os.path.exists(os.path.join(root, 'include', name)):
                        target = 'include'
                    else:
                        bad.append(f'{rel}: #include "{name}" does not name its folder')
                        continue
                elif first in folders or first == 'gen':
                    target = first
                elif os.path.exists(os.path.join(root, 'include', name)):
                    target = 'include'
                else:
                    bad.append(f'{rel}: #include "{name}": no such folder')
                    continue
                if target == folder or '*' in allowed or target in allowed \
                        or name in headers:
                    continue
                bad.append(f'{rel}: #include "{name}": agent/{folder}/README.md '
                           f'does not allow {target}/')
    return bad


def unit_of(path):
    stem = path[:-2]
    return stem[:-len('_internal')] if stem.endswith('_internal') else stem


def unit_graph(root, top, resolve):
    graph = {}
    for path in sources(os.path.join(root, top)):
        rel = os.path.relpath(path, root)
        if rel.startswith(('agent/gen', 'kmod/probes')):
            continue
        unit = unit_of(rel)
        graph.setdefault(unit, set())
        for name in includes(path):
            target = resolve(rel, name)
            if target and unit_of(target) != unit:
                graph[unit].add(unit_of(target))
    return graph


def cycles(graph):
    """Strongly connected components with more than one unit (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check_circles(root):
    def agent_resolve(src, name):
        for base in ('agent', os.path.dirname(src)):
            p = os.path.normpath(os.path.join(base, name))
            if os.path.exists(os.path.join(root, p)) and p.startswith('agent/'):
                return p
        return None

    def kmod_resolve(src, name):
        p = os.path.normpath(os.path.join(os.path.dirname(src), name))
        return p if os.path.exists(os.path.join(root, p)) and p.startswith('kmod/') else None

    bad = []
    for top, resolve in (('agent', agent_resolve), ('kmod', kmod_resolve)):
        for comp in cycles(unit_graph(root, top, resolve)):
            bad.append(f'include circle: {" <-> ".join(comp)}')
    return bad


def check_calls(objects):
    defined, used = {}, {}
    for obj in objects:
        out = subprocess.run(['nm', obj], capture_output=True, text=True,
                             check=True).stdout
        unit = obj[:-2]
        used[unit] = set()
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in 'TDBRGSV':
                defined[f[2]] = unit
            elif len(f) == 2 and f[0] == 'U':
                used[unit].add(f[1])
    graph = {u: {defined[s] for s in syms if defined.get(s, u) != u}
             for u, syms in used.items()}
    return [f'call circle: {" <-> ".join(c)}' for c in cycles(graph)]


def main(argv):
    root = '.'
    what = 'all'
    args = list(argv)
    if args[:1] == ['calls']:
        bad = check_calls(args[1:])
        for line in bad:
            print(line)
        return 1 if bad else 0
    while args:
        a = args.pop(0)
        if a == '--root':
            root = args.pop(0)
        else:
            what = a
    bad = []
    if what in ('rules', 'all'):
        bad += check_rules(root)
    if what in ('circles', 'all'):
        bad += check_circles(root)
    for line in bad:
        print(line)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
