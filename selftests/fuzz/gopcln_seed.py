#!/usr/bin/env python3
# Go function tables (.gopclntab) for fuzz_gopcln and sym_go, from a real
# Go 1.18-1.19 binary (its table has the 1.18 layout, 64-bit): a run of
# its functions laid out as a small table of their own, with the inline
# trees they use, in any of the layouts the reader knows (the Go toolchain
# on the test host makes only one of them):
#   12   Go 1.2-1.15   (no inline trees: the reader gives none)
#   116  Go 1.16-1.17  (inline trees found by address)
#   118  Go 1.18-1.19
#   120  Go 1.20+
# Output, fuzz_gopcln's input: u32 table length, the table (to be loaded
# at 0x400000), the go:func.* bytes (at 0x800000).
#   gopcln_seed.py BINARY OUT FIRST_FUNCTION_PREFIX COUNT LAYOUT
import struct, subprocess, sys

TAB_VA, GOFUNC_VA = 0x400000, 0x800000
binary, out, prefix, count, layout = sys.argv[1:6]
count, layout = int(count), int(layout)
data = open(binary, 'rb').read()
for line in subprocess.check_output(['readelf', '-SW', binary]).decode().splitlines():
    if '.gopclntab' in line:
        f = line.split(']')[1].split()
        vaddr, off, size = int(f[2], 16), int(f[3], 16), int(f[4], 16)
tab = data[off:off + size]
magic, = struct.unpack_from('<I', tab, 0)
if magic != 0xfffffff0:
    print('%s: not a Go 1.18-1.19 table (magic %#x): no seeds made' % (binary, magic))
    sys.exit(3)
nfunc, nfiles, text, fno, cuo, fto, pco, plo = struct.unpack_from('<8Q', tab, 8)

# go:func.* from the moduledata (as sym_gopclntab.c finds it)
i = data.find(struct.pack('<QQ', vaddr, vaddr + fno))
gofunc_va, = struct.unpack_from('<Q', data, i + 304)
for line in subprocess.check_output(['readelf', '-lW', binary]).decode().splitlines():
    f = line.split()
    if f and f[0] == 'LOAD':
        po, pv, fs = int(f[1], 16), int(f[2], 16), int(f[4], 16)
        if pv <= gofunc_va < pv + fs:
            gofunc = data[po + gofunc_va - pv:]


def cstr(o):
    return tab[o:tab.index(b'\0', o)]


def decode(o):
    """pc-value program at pctab offset o: [(value delta, pc delta)]"""
    p, first, steps = pco + o, True, []

    def varint():
        nonlocal p
        v = s = 0
        while True:
            b = tab[p]
            p += 1
            v |= (b & 0x7f) << s
            s += 7
            if not b & 0x80:
                return v
    while True:
        uv = varint()
        if uv == 0 and not first:
            return steps
        first = False
        steps.append((-(uv & 1) ^ (uv >> 1), varint()))


def uvarint(v):
    b = bytearray()
    while v >= 0x80:
        b.append(v & 0x7f | 0x80)
        v >>= 7
    b.append(v)
    return b


def encode(steps):
    b = bytearray()
    for dv, dpc in steps:
        b += uvarint(((dv << 1) ^ (dv >> 31)) & 0xffffffff)  # zig-zag
        b += uvarint(dpc)
    return b + b'\0'


def values(steps):
    v, out = -1, []
    for dv, _ in steps:
        v += dv
        out.append(v)
    return out


def cu_file(cuoff, fileno):
    o, = struct.unpack_from('<I', tab, cuo + 4 * (cuoff + fileno))
    return cstr(fto + o)


def ftab(i):
    return struct.unpack_from('<II', tab, plo + 8 * i)


# ---- the model: functions with their programs and inline trees
start = next(i for i in range(nfunc)
             if cstr(fno + struct.unpack_from('<i', tab, plo + ftab(i)[1] + 4)[0])
             .decode().startswith(prefix))
sel = list(range(start, min(nfunc, start + count)))
funcs = []
for i in sel:
    fo = plo + ftab(i)[1]
    entry, nameoff, args, defer, pcsp, pcfile, pcln, npcdata, cuoff = \
        struct.unpack_from('<IiiIIIIII', tab, fo)
    funcid, flag, _, nfuncdata = tab[fo + 36:fo + 40]
    pcdata = list(struct.unpack_from('<%dI' % npcdata, tab, fo + 40))
    fdata = list(struct.unpack_from('<%dI' % nfuncdata, tab, fo + 40 + 4 * npcdata))
    fn = dict(entry=text + entry, name=cstr(fno + nameoff), args=args, defer=defer,
              funcid=funcid, flag=flag, cuoff=cuoff, nfuncdata=nfuncdata,
              pcsp=decode(pcsp) if pcsp else None,
              pcfile=decode(pcfile) if pcfile else None,
              pcln=decode(pcln) if pcln else None,
              pcdata=[decode(x) if x else None for x in pcdata], inl=None)
    if nfuncdata > 3 and npcdata > 2 and fdata[3] != 0xffffffff and pcdata[2]:
        n = max(values(fn['pcdata'][2])) + 1
        fn['inl'] = []
        for k in range(n):
            parent, fid, _, file, line, callee, ppc = \
                struct.unpack_from('<hBBiiii', gofunc, fdata[3] + 20 * k)
            fn['inl'].append(dict(parent=parent, funcid=fid, file=file, line=line,
                                  name=cstr(fno + callee), parent_pc=ppc))
    funcs.append(fn)
end_pc = text + ftab(sel[-1] + 1)[0]


# ---- layouts
class Region:
    def __init__(self):
        self.b = bytearray()
        self.at = {}

    def add(self, key, blob):
        if key not in self.at:
            self.at[key] = len(self.b)
            self.b += blob
        return self.at[key]


def emit_new():
    names, progs, gof = Region(), Region(), bytearray()
    names.b += b'\0'
    progs.b += b'\0'
    P = lambda s: progs.add(bytes(encode(s)), encode(s)) if s is not None else 0
    N = lambda s: names.add(s, s + b'\0')
    recs = []
    for fn in funcs:
        fd = [0xffffffff if layout >= 118 else 0] * fn['nfuncdata']
        if fn['inl'] is not None:
            at = len(gof)
            for e in fn['inl']:
                if layout >= 120:
                    gof += struct.pack('<B3xiii', e['funcid'], N(e['name']),
                                       e['parent_pc'], 0)
                else:
                    gof += struct.pack('<hBBiiii', e['parent'], e['funcid'], 0,
                                       e['file'], e['line'], N(e['name']),
                                       e['parent_pc'])
            fd[3] = at if layout >= 118 else GOFUNC_VA + at
        body = struct.pack('<iiIIIIII', N(fn['name']), fn['args'], fn['defer'],
                           P(fn['pcsp']), P(fn['pcfile']), P(fn['pcln']),
                           len(fn['pcdata']), fn['cuoff'])
        if layout >= 120:
            body += struct.pack('<i', 0)
        body += bytes([fn['funcid'], fn['flag'], 0, fn['nfuncdata']])
        body += struct.pack('<%dI' % len(fn['pcdata']), *[P(s) for s in fn['pcdata']])
        recs.append((fn, body, fd))
    cutab, filetab = tab[cuo:fto], tab[fto:pco]
    nhdr = 8 if layout >= 118 else 7
    o_fn = 8 + 8 * nhdr
    o_cu = o_fn + len(names.b)
    o_ft = o_cu + len(cutab)
    o_pc = o_ft + len(filetab)
    o_pl = (o_pc + len(progs.b) + 7) & ~7
    ent = 8 if layout >= 118 else 16
    pl = bytearray(ent * (len(recs) + 1))
    for k, (fn, body, fd) in enumerate(recs):
        funcoff = len(pl)
        if layout >= 118:
            struct.pack_into('<II', pl, ent * k, fn['entry'] - text, funcoff)
            pl += struct.pack('<I', fn['entry'] - text) + body
            pl += struct.pack('<%dI' % len(fd), *fd)
        else:
            struct.pack_into('<QQ', pl, ent * k, fn['entry'], funcoff)
            pl += struct.pack('<Q', fn['entry']) + body
            if (TAB_VA + o_pl + len(pl)) & 4:
                pl += b'\0' * 4
            pl += struct.pack('<%dQ' % len(fd), *fd)
        while len(pl) & 7:
            pl += b'\0'
    if layout >= 118:
        struct.pack_into('<II', pl, ent * len(recs), end_pc - text, 0)
        hdr = struct.pack('<IBBBB8Q', 0xfffffff1 if layout >= 120 else 0xfffffff0,
                          0, 0, 1, 8, len(recs), nfiles, text,
                          o_fn, o_cu, o_ft, o_pc, o_pl)
    else:
        struct.pack_into('<QQ', pl, ent * len(recs), end_pc, 0)
        hdr = struct.pack('<IBBBB7Q', 0xfffffffa, 0, 0, 1, 8, len(recs), nfiles,
                          o_fn, o_cu, o_ft, o_pc, o_pl)
    t = hdr + names.b + cutab + filetab + progs.b
    return t + b'\0' * (o_pl - len(t)) + pl, gof


def emit_12():
    """Go 1.2: names, programs and file numbers relative to the table"""
    files = [b'']
    file_ix = {}

    def G(cuoff, fileno):
        name = cu_file(cuoff, fileno)
        if name not in file_ix:
            file_ix[name] = len(files)
            files.append(name)
        return file_ix[name]
    n = len(funcs)
    head = 16 + 16 * n + 8 + 4
    blobs = bytearray()
    recs = []
    for fn in funcs:
        pcfile = None
        if fn['pcfile'] is not None:
            v, prev, pcfile = -1, -1, []
            for dv, dpc in fn['pcfile']:
                v += dv
                g = G(fn['cuoff'], v)
                pcfile.append((g - prev, dpc))
                prev = g
        recs.append((fn, pcfile))
    funcs_at = (head + 7) & ~7
    size_func = 8 + 32
    o_blob = funcs_at + size_func * n

    def B(blob):
        at = o_blob + len(blobs)
        blobs.extend(blob)
        return at
    body = bytearray()
    functab = bytearray()
    for k, (fn, pcfile) in enumerate(recs):
        functab += struct.pack('<QQ', fn['entry'], funcs_at + size_func * k)
        body += struct.pack('<QiiIIIIIBBBB', fn['entry'], B(fn['name'] + b'\0'),
                            fn['args'], fn['defer'],
                            B(encode(fn['pcsp'])) if fn['pcsp'] else 0,
                            B(encode(pcfile)) if pcfile else 0,
                            B(encode(fn['pcln'])) if fn['pcln'] else 0,
                            0, fn['funcid'], 0, 0, 0)
    ft = bytearray(struct.pack('<I', len(files)))
    offs = [0] + [B(f + b'\0') for f in files[1:]]
    o_ft = o_blob + len(blobs)
    for o in offs[1:]:
        ft += struct.pack('<I', o)
    hdr = struct.pack('<IBBBBQ', 0xfffffffb, 0, 0, 1, 8, n)
    t = hdr + functab + struct.pack('<QI', end_pc, o_ft)
    t += b'\0' * (funcs_at - len(t))
    return t + body + blobs + ft, b''


table, gof = emit_12() if layout == 12 else emit_new()
open(out, 'wb').write(struct.pack('<I', len(table)) + table + gof)
print('%s: %d functions from %s, layout %d, table %d bytes, go:func %d bytes' %
      (out, len(funcs), prefix, layout, len(table), len(gof)))
