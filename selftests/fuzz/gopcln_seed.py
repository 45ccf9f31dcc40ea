#!/usr/bin/env python3
# Seeds for fuzz_gopcln from a real Go 1.18-1.19 binary (the Go 1.18 table
# layout, 64-bit): a run of its functions re-laid out as a small table of
# their own, with the inline trees they use, in fuzz_gopcln's input format
# (u32 table length, the table, then go:func.* bytes).
#   gopcln_seed.py BINARY OUT FIRST_FUNCTION_PREFIX COUNT
import struct, subprocess, sys

binary, out, prefix, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
data = open(binary, 'rb').read()
secs = subprocess.check_output(['readelf', '-SW', binary]).decode()
for line in secs.splitlines():
    if '.gopclntab' in line:
        f = line.split(']')[1].split()
        vaddr, off, size = int(f[2], 16), int(f[3], 16), int(f[4], 16)
tab = data[off:off + size]
magic, = struct.unpack_from('<I', tab, 0)
assert magic == 0xfffffff0, hex(magic)
nfunc, nfiles, text, fno, cuo, fto, pco, plo = struct.unpack_from('<8Q', tab, 8)

# go:func.* from the moduledata (see sym_gopclntab.c find_moduledata)
i = data.find(struct.pack('<Q', vaddr) + struct.pack('<Q', vaddr + fno))
gofunc_va, = struct.unpack_from('<Q', data, i + 304)
phdrs = subprocess.check_output(['readelf', '-lW', binary]).decode()
gofunc_off = None
for line in phdrs.splitlines():
    f = line.split()
    if f and f[0] == 'LOAD':
        po, pv, fs = int(f[1], 16), int(f[2], 16), int(f[4], 16)
        if pv <= gofunc_va < pv + fs:
            gofunc_off = po + gofunc_va - pv
gofunc = data[gofunc_off:]

def cstr(b, o):
    return b[o:b.index(b'\0', o)]

def ftab(i):
    return struct.unpack_from('<II', tab, plo + 8 * i)

def prog_len(o):
    """bytes of the pc-value program at pctab offset o, with its end"""
    p, first = pco + o, True
    while True:
        def varint():
            nonlocal p
            v = s = 0
            while True:
                b = tab[p]; p += 1
                v |= (b & 0x7f) << s; s += 7
                if not b & 0x80:
                    return v
        uv = varint()
        if uv == 0 and not first:
            return p - (pco + o)
        first = False
        varint()

def prog_values(o):
    p, v, first, vals = pco + o, -1, True, []
    while True:
        def varint():
            nonlocal p
            r = s = 0
            while True:
                b = tab[p]; p += 1
                r |= (b & 0x7f) << s; s += 7
                if not b & 0x80:
                    return r
        uv = varint()
        if uv == 0 and not first:
            return vals
        first = False
        v += -(uv & 1) ^ (uv >> 1)
        varint()
        vals.append(v)

start = next(i for i in range(nfunc)
             if cstr(tab, fno + struct.unpack_from('<i', tab, plo + ftab(i)[1] + 4)[0])
             .decode().startswith(prefix))
sel = list(range(start, min(nfunc, start + count)))
names, pct, gof = bytearray(b'\0'), bytearray(b'\0'), bytearray()
name_at, prog_at = {}, {}

def name(o):
    s = cstr(tab, fno + o)
    if s not in name_at:
        name_at[s] = len(names); names.extend(s + b'\0')
    return name_at[s]

def prog(o):
    if not o:
        return 0
    if o not in prog_at:
        prog_at[o] = len(pct); pct.extend(tab[pco + o:pco + o + prog_len(o)])
    return prog_at[o]

funcs = []
for i in sel:
    fo = plo + ftab(i)[1]
    entry, nameoff, args, defer, pcsp, pcfile, pcln, npcdata, cuoff = struct.unpack_from('<IiiIIIIII', tab, fo)
    funcid, flag, pad, nfuncdata = tab[fo + 36:fo + 40]
    pcdata = list(struct.unpack_from('<%dI' % npcdata, tab, fo + 40))
    fdata = list(struct.unpack_from('<%dI' % nfuncdata, tab, fo + 40 + 4 * npcdata))
    nfd = [0xffffffff] * nfuncdata
    if nfuncdata > 3 and npcdata > 2 and fdata[3] != 0xffffffff and pcdata[2]:
        n = max(prog_values(pcdata[2])) + 1
        tree = bytearray(gofunc[fdata[3]:fdata[3] + 20 * n])
        for k in range(n):
            callee, = struct.unpack_from('<i', tree, 20 * k + 12)
            struct.pack_into('<i', tree, 20 * k + 12, name(callee))
        nfd[3] = len(gof); gof.extend(tree)
    rec = struct.pack('<IiiIIIIII', entry, name(nameoff), args, defer, prog(pcsp),
                      prog(pcfile), prog(pcln), npcdata, cuoff)
    rec += bytes([funcid, flag, pad, nfuncdata])
    rec += struct.pack('<%dI' % npcdata, *[prog(x) for x in pcdata])
    rec += struct.pack('<%dI' % nfuncdata, *nfd)
    funcs.append((entry, rec))
end_entry = ftab(sel[-1] + 1)[0]

cutab, filetab = tab[cuo:fto], tab[fto:pco]
hdr_len = 8 + 8 * 8
o_fn = hdr_len
o_cu = o_fn + len(names)
o_ft = o_cu + len(cutab)
o_pc = o_ft + len(filetab)
o_pl = o_pc + len(pct)
pl = bytearray(8 * (len(funcs) + 1))
for k, (entry, rec) in enumerate(funcs):
    struct.pack_into('<II', pl, 8 * k, entry, len(pl))
    pl.extend(rec)
struct.pack_into('<II', pl, 8 * len(funcs), end_entry, 0)
hdr = struct.pack('<IBBBB8Q', 0xfffffff0, 0, 0, 1, 8, len(funcs), nfiles, text,
                  o_fn, o_cu, o_ft, o_pc, o_pl)
table = hdr + names + cutab + filetab + pct + pl
open(out, 'wb').write(struct.pack('<I', len(table)) + table + gof)
print('%s: %d functions from %s, table %d bytes, go:func %d bytes' %
      (out, len(funcs), prefix, len(table), len(gof)))
