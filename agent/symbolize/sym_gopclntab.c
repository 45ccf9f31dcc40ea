// SPDX-License-Identifier: GPL-2.0-only
/*
 * Go's own function table (.gopclntab): function names, file:line and
 * inlined frames of Go code in a binary with no .symtab and no DWARF
 * (`go build -ldflags='-s -w'`, what containers ship). The Go runtime
 * needs the table for its tracebacks, so every Go binary keeps it.
 *
 * Layouts by header magic: Go 1.2-1.15 (0xfffffffb), 1.16-1.17
 * (0xfffffffa), 1.18-1.19 (0xfffffff0), 1.20+ (0xfffffff1). The table is
 * found by its section (.gopclntab, or .data.rel.ro.gopclntab in a PIE),
 * or, in a Go binary without section headers, by its header in a
 * read-only segment. Inline trees (Go 1.16+) sit outside the table: 1.16
 * and 1.17 point at them with addresses, 1.18+ with offsets from the
 * start of go:func.*, which only the runtime's moduledata records: it is
 * found by scanning the data segments for a pointer to the table.
 *
 * The file belongs to whoever runs it: every offset, count and string is
 * checked against the region it must lie in before it is read, pc-value
 * programs are decoded under a step budget per lookup, and inline chains
 * are cut at a depth. A table that is malformed where a lookup looks
 * costs one warning naming the file and leaves that address unnamed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/safe_file.h"
#include "symbolize/symbolize_internal.h"

#define MAGIC_12 0xfffffffbu
#define MAGIC_116 0xfffffffau
#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u

/* A table larger than this is not read (the largest real ones: ~100 MB). */
#define GOPCLN_MAX_BYTES (1ull << 30)
/* Bytes of segments scanned for a table header or the moduledata. */
#define GOPCLN_SCAN_MAX (256ull << 20)
/*
 * pc-value steps per lookup, all tables together: a function's line table
 * has about one step per source line, and a lookup decodes a few tables
 * per inline level.
 */
#define GOPCLN_STEP_BUDGET (1u << 18)
#define GOPCLN_MAX_INLINE 32
#define GOPCLN_NAME_MAX 4096	/* longest name or file name taken */
#define GOPCLN_MAX_SEGS 16

/* runtime/symtab.go: pcdata and funcdata slots */
#define PCDATA_INLTREEINDEX 2
#define FUNCDATA_INLTREE 3

struct gopcln_seg {
	uint64_t vaddr, size;	/* file-backed part only */
	const uint8_t *data;
	bool code;		/* executable: no moduledata there */
};

struct sym_gopcln {
	const uint8_t *tab;	/* the table, size bytes, inside the image */
	uint64_t size, vaddr;	/* vaddr: where it is loaded (0: unknown) */
	uint32_t ver;		/* 12, 116, 118, 120 */
	uint8_t quantum, ptrsize;
	uint64_t nfunc;
	uint64_t text;		/* 1.18+: base of entry offsets */
	/* regions, as offsets into tab (1.16+): [funcname, cu) etc. */
	uint64_t funcname, cu, filetab, pctab, pcln;
	uint64_t ftab;		/* first functab entry */
	uint64_t ftab_ent;	/* its size */
	const uint8_t *gofunc;	/* 1.18+: go:func.*, gofunc_size bytes */
	uint64_t gofunc_size;
	struct gopcln_seg segs[GOPCLN_MAX_SEGS];	/* 1.16, 1.17 */
	int nr_segs;
	const char *path;	/* for the warning; interned by the caller */
	bool warned;
};

/* ------------------------------------------------------- bounded reads */

static bool in(uint64_t off, uint64_t len, uint64_t end)
{
	return off <= end && len <= end - off;
}

static bool rd32(const struct sym_gopcln *g, uint64_t off, uint32_t *v)
{
	if (!in(off, 4, g->size))
		return false;
	memcpy(v, g->tab + off, 4);
	return true;
}

static uint8_t rd8(const struct sym_gopcln *g, uint64_t off)
{
	return off < g->size ? g->tab[off] : 0;
}

static bool rdptr(const struct sym_gopcln *g, uint64_t off, uint64_t *v)
{
	uint32_t v32;

	if (g->ptrsize == 4) {
		if (!rd32(g, off, &v32))
			return false;
		*v = v32;
		return true;
	}
	if (!in(off, 8, g->size))
		return false;
	memcpy(v, g->tab + off, 8);
	return true;
}

/* A NUL-terminated string starting at off and ending before end. */
static const char *str_at(const struct sym_gopcln *g, uint64_t off,
			  uint64_t end, size_t *len)
{
	const char *s, *nul;
	uint64_t max;

	if (end > g->size || off >= end)
		return NULL;
	s = (const char *)g->tab + off;
	max = end - off < GOPCLN_NAME_MAX ? end - off : GOPCLN_NAME_MAX;
	nul = memchr(s, 0, max);
	if (!nul && max == GOPCLN_NAME_MAX) {
		*len = max;	/* a very long generic name: its start */
		return s;
	}
	if (!nul || nul == s)
		return NULL;
	*len = (size_t)(nul - s);
	return s;
}

/* Bytes at a loaded address (1.16, 1.17 inline trees); NULL if not there. */
static const uint8_t *at_vaddr(const struct sym_gopcln *g, uint64_t vaddr,
			       uint64_t len, uint64_t *avail)
{
	for (int i = 0; i < g->nr_segs; i++) {
		const struct gopcln_seg *s = &g->segs[i];

		if (vaddr >= s->vaddr && in(vaddr - s->vaddr, len, s->size)) {
			*avail = s->size - (vaddr - s->vaddr);
			return s->data + (vaddr - s->vaddr);
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------- header */

static bool header_ok(struct sym_gopcln *g)
{
	uint32_t magic;
	uint64_t hdr[8];
	uint64_t p;
	int n;

	if (!rd32(g, 0, &magic) || g->size < 16 || g->tab[4] || g->tab[5])
		return false;
	g->quantum = g->tab[6];
	g->ptrsize = g->tab[7];
	if ((g->quantum != 1 && g->quantum != 2 && g->quantum != 4) ||
	    (g->ptrsize != 4 && g->ptrsize != 8))
		return false;
	p = g->ptrsize;
	switch (magic) {
	case MAGIC_12:
		g->ver = 12;
		if (!rdptr(g, 8, &g->nfunc))
			return false;
		/* functab: {entry, funcoff} pairs, then the end pc */
		g->ftab = 8 + p;
		g->ftab_ent = 2 * p;
		g->funcname = 0;
		g->pctab = 0;
		g->pcln = 0;
		if (g->nfunc == 0 || g->nfunc > (g->size - g->ftab) / g->ftab_ent)
			return false;
		/* the file table's offset follows the end pc */
		{
			uint32_t fo;

			if (!rd32(g, g->ftab + g->nfunc * g->ftab_ent + p, &fo) ||
			    fo >= g->size)
				return false;
			g->filetab = fo;
		}
		return true;
	case MAGIC_116:
		g->ver = 116;
		n = 7;	/* nfunc nfiles funcname cu filetab pctab pcln */
		break;
	case MAGIC_118:
	case MAGIC_120:
		g->ver = magic == MAGIC_118 ? 118 : 120;
		n = 8;	/* nfunc nfiles text funcname cu filetab pctab pcln */
		break;
	default:
		return false;
	}
	for (int i = 0; i < n; i++)
		if (!rdptr(g, 8 + i * p, &hdr[i]))
			return false;
	g->nfunc = hdr[0];
	if (n == 8)
		g->text = hdr[2];
	g->funcname = hdr[n - 5];
	g->cu = hdr[n - 4];
	g->filetab = hdr[n - 3];
	g->pctab = hdr[n - 2];
	g->pcln = hdr[n - 1];
	g->ftab = g->pcln;
	g->ftab_ent = g->ver >= 118 ? 8 : 2 * p;
	/* regions in this order, each inside the table */
	if (g->funcname < 8 + n * p || g->funcname > g->cu || g->cu > g->filetab ||
	    g->filetab > g->pctab || g->pctab > g->pcln || g->pcln >= g->size)
		return false;
	/* nfunc entries and the end entry */
	if (g->nfunc == 0 || g->nfunc >= (g->size - g->ftab) / g->ftab_ent)
		return false;
	return true;
}

/* --------------------------------------------------------- the functab */

static bool ftab_entry(const struct sym_gopcln *g, uint64_t i, uint64_t *pc,
		       uint64_t *funcoff)
{
	uint64_t off = g->ftab + i * g->ftab_ent;
	uint32_t e, f;

	if (g->ver >= 118) {
		if (!rd32(g, off, &e) || !rd32(g, off + 4, &f))
			return false;
		*pc = g->text + e;
		*funcoff = f;
		return true;
	}
	return rdptr(g, off, pc) && rdptr(g, off + g->ptrsize, funcoff);
}

/* Only the fields a lookup uses. */
struct gofunc {
	uint64_t entry, end;
	int32_t nameoff;
	uint32_t pcfile, pcln, npcdata, cuoff, nfuncdata;
	uint32_t pcdata_inl;	/* pcdata[PCDATA_INLTREEINDEX], 0: none */
	uint64_t pcdata;	/* offset of pcdata[0] in the table */
	uint64_t funcdata;	/* offset of funcdata[0] */
};

/* Base of _func offsets and of pc-value program offsets. */
static uint64_t func_base(const struct sym_gopcln *g)
{
	return g->ver == 12 ? 0 : g->pcln;
}

static bool read_func(const struct sym_gopcln *g, uint64_t funcoff,
		      uint64_t entry, struct gofunc *fn)
{
	uint64_t off = func_base(g) + funcoff, p = g->ptrsize, f, hdr;
	uint32_t e32, v[8];
	uint64_t e;

	if (funcoff >= g->size || off >= g->size)
		return false;
	if (g->ver >= 118) {
		if (!rd32(g, off, &e32))
			return false;
		e = g->text + e32;
		f = off + 4;
	} else {
		if (!rdptr(g, off, &e))
			return false;
		f = off + p;
	}
	if (e != entry)
		return false;	/* the functab and the _func disagree */
	/* nameoff args deferreturn pcsp pcfile pcln npcdata cuOffset */
	for (int i = 0; i < 8; i++)
		if (!rd32(g, f + 4 * i, &v[i]))
			return false;
	fn->nameoff = (int32_t)v[0];
	fn->pcfile = v[4];
	fn->pcln = v[5];
	fn->npcdata = v[6];
	fn->cuoff = g->ver == 12 ? 0 : v[7];
	switch (g->ver) {
	case 12:	/* 1.10+: funcID u8, 2 pad, nfuncdata u8; unused here */
		hdr = f + 32;
		fn->nfuncdata = 0;
		break;
	case 116:	/* cuOffset, funcID, 2 pad, nfuncdata */
	case 118:	/* cuOffset, funcID, flag, pad, nfuncdata */
		hdr = f + 36;
		fn->nfuncdata = rd8(g, f + 35);
		break;
	default:	/* 1.20: cuOffset, startLine, funcID, flag, pad, nfuncdata */
		hdr = f + 40;
		fn->nfuncdata = rd8(g, f + 39);
		break;
	}
	if (fn->npcdata > 1024 || !in(hdr, 4ull * fn->npcdata, g->size))
		return false;
	fn->pcdata = hdr;
	fn->pcdata_inl = 0;
	if (fn->npcdata > PCDATA_INLTREEINDEX)
		rd32(g, hdr + 4 * PCDATA_INLTREEINDEX, &fn->pcdata_inl);
	fn->funcdata = hdr + 4ull * fn->npcdata;
	if (g->ver == 116) {
		/* uintptr funcdata, aligned as the loaded address */
		uint64_t a = g->vaddr + fn->funcdata;

		if (p == 8 && (a & 4))
			fn->funcdata += 4;
	}
	if (fn->nfuncdata && !in(fn->funcdata, fn->nfuncdata *
				 (g->ver == 116 ? p : 4), g->size))
		fn->nfuncdata = 0;
	fn->entry = e;
	return true;
}

/* The function holding pc: binary search over the functab. */
static int find_func(const struct sym_gopcln *g, uint64_t pc,
		     struct gofunc *fn)
{
	uint64_t lo = 0, hi = g->nfunc, first, end, entry, funcoff, next;

	if (!ftab_entry(g, 0, &first, &funcoff) ||
	    !ftab_entry(g, g->nfunc, &end, &funcoff))
		return -1;
	if (pc < first || pc >= end)
		return 0;	/* not Go code */
	while (hi - lo > 1) {	/* entry(lo) <= pc < entry(hi) */
		uint64_t mid = lo + (hi - lo) / 2, e;

		if (!ftab_entry(g, mid, &e, &funcoff))
			return -1;
		if (e <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (!ftab_entry(g, lo, &entry, &funcoff) ||
	    !ftab_entry(g, lo + 1, &next, &end) || entry > pc || pc >= next)
		return -1;	/* not sorted */
	if (!read_func(g, funcoff, entry, fn))
		return -1;
	fn->end = next;
	return 1;
}

/* ------------------------------------------------------ pc-value tables */

static bool varint(const struct sym_gopcln *g, uint64_t *off, uint64_t end,
		   uint32_t *v)
{
	uint32_t r = 0;

	for (int shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*off >= end)
			return false;
		b = g->tab[(*off)++];
		r |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

/*
 * The value of the pc-value program at table offset `prog` (relative to
 * the pc-value region) for pc in the function starting at entry; false
 * when it has none there, is malformed, or the budget ran out.
 */
static bool pcvalue(const struct sym_gopcln *g, uint32_t prog, uint64_t entry,
		    uint64_t pc, uint32_t *budget, int32_t *val)
{
	uint64_t base = g->ver == 12 ? 0 : g->pctab;
	uint64_t end = g->ver == 12 ? g->size : g->pcln;
	uint64_t off = base + prog, cur = entry;
	uint32_t v = ~0u;	/* -1; wraps like the runtime's int32 */
	bool first = true;

	if (!prog || off >= end)
		return false;
	while (*budget) {
		uint32_t uv, pcd;

		(*budget)--;
		if (!varint(g, &off, end, &uv))
			return false;
		if (uv == 0 && !first)
			return false;	/* ended before pc */
		first = false;
		v += -(uv & 1) ^ (uv >> 1);	/* zig-zag */
		if (!varint(g, &off, end, &pcd))
			return false;
		cur += (uint64_t)pcd * g->quantum;
		if (pc < cur) {
			*val = (int32_t)v;
			return true;
		}
	}
	return false;
}

/* ------------------------------------------------------------- names */

static const char *func_name(const struct sym_gopcln *g, int32_t nameoff,
			     size_t *len)
{
	if (nameoff < 0)
		return NULL;
	if (g->ver == 12)
		return str_at(g, (uint64_t)nameoff, g->size, len);
	return str_at(g, g->funcname + (uint64_t)nameoff, g->cu, len);
}

static const char *file_name(const struct sym_gopcln *g,
			     const struct gofunc *fn, int32_t fileno,
			     size_t *len)
{
	uint32_t n, off;

	if (fileno < 0)
		return NULL;
	if (g->ver == 12) {
		/* filetab: count, then offsets of names in the table */
		if (!rd32(g, g->filetab, &n) || (uint32_t)fileno >= n || !fileno ||
		    !rd32(g, g->filetab + 4ull * (uint32_t)fileno, &off))
			return NULL;
		return str_at(g, off, g->size, len);
	}
	/* cutab[cuOffset + fileno]: offset of the name in filetab */
	{
		uint64_t at = g->cu + 4ull * ((uint64_t)fn->cuoff + (uint32_t)fileno);

		if (!in(at, 4, g->filetab) || !rd32(g, at, &off) || off == ~0u)
			return NULL;
	}
	return str_at(g, g->filetab + off, g->pctab, len);
}

/* ---------------------------------------------------------- inlining */

/* Inline tree of fn: its entries and how many fit; NULL when none. */
static const uint8_t *inl_tree(const struct sym_gopcln *g,
			       const struct gofunc *fn, uint64_t *nr)
{
	uint64_t avail = 0, esz = g->ver >= 120 ? 16 : 20;
	const uint8_t *t = NULL;

	if (!fn->pcdata_inl || fn->nfuncdata <= FUNCDATA_INLTREE)
		return NULL;
	if (g->ver == 116) {
		uint64_t a;

		if (!rdptr(g, fn->funcdata + FUNCDATA_INLTREE * g->ptrsize, &a) || !a)
			return NULL;
		t = at_vaddr(g, a, esz, &avail);
	} else if (g->ver >= 118 && g->gofunc) {
		uint32_t o;

		if (!rd32(g, fn->funcdata + 4 * FUNCDATA_INLTREE, &o) || o == ~0u ||
		    !in(o, esz, g->gofunc_size))
			return NULL;
		t = g->gofunc + o;
		avail = g->gofunc_size - o;
	}
	*nr = t ? avail / esz : 0;
	return t;
}

struct inl_call {
	int32_t nameoff, parent_pc;
};

static bool inl_entry(const struct sym_gopcln *g, const uint8_t *t,
		      uint64_t nr, int32_t ix, struct inl_call *c)
{
	int32_t v[4];

	if (ix < 0 || (uint64_t)ix >= nr)
		return false;
	if (g->ver >= 120) {	/* funcID, 3 pad, nameOff, parentPc, startLine */
		memcpy(v, t + 16ull * (uint32_t)ix, 16);
		c->nameoff = v[1];
		c->parent_pc = v[2];
	} else {	/* parent, funcID, pad, file, line, func_, parentPc */
		memcpy(v, t + 20ull * (uint32_t)ix + 4, 16);
		c->nameoff = v[2];
		c->parent_pc = v[3];
	}
	return c->parent_pc >= 0;
}

/* ----------------------------------------------------------- lookups */

static void malformed(struct sym_gopcln *g)
{
	if (g->warned)
		return;
	g->warned = true;
	safe_warn("the Go function table (.gopclntab) of", NULL,
		  g->path ? g->path : "?", "is malformed (its frames stay unnamed)");
}

static void set_frame(struct sym_frame *fr, struct sym_strings *strings,
		      const char *name, size_t nlen, const char *file,
		      size_t flen, int32_t line)
{
	memset(fr, 0, sizeof(*fr));
	fr->function = sym_intern_n(strings, name, nlen);
	if (file) {
		fr->source_file = sym_intern_n(strings, file, flen);
		fr->line = line > 0 ? (uint32_t)line : 0;
	}
}

/* File and line of the function's code at pc (innermost position there). */
static void position(const struct sym_gopcln *g, const struct gofunc *fn,
		     uint64_t pc, uint32_t *budget, const char **file,
		     size_t *flen, int32_t *line)
{
	int32_t fileno;

	*file = NULL;
	*line = 0;
	if (pcvalue(g, fn->pcfile, fn->entry, pc, budget, &fileno))
		*file = file_name(g, fn, fileno, flen);
	if (*file && !pcvalue(g, fn->pcln, fn->entry, pc, budget, line))
		*file = NULL;
}

int sym_gopcln_frames(struct sym_gopcln *g, struct sym_strings *strings,
		      uint64_t pc, bool lines, struct sym_frame *out, int max)
{
	uint32_t budget = GOPCLN_STEP_BUDGET;
	const uint8_t *tree = NULL;
	uint64_t nr_inl = 0;
	const char *name, *file;
	size_t nlen, flen = 0;
	struct gofunc fn;
	int32_t line, ix = -1;
	int found, n = 0;

	if (!g || max <= 0)
		return 0;
	found = find_func(g, pc, &fn);
	if (found <= 0) {
		if (found < 0)
			malformed(g);
		return 0;
	}
	if (!(name = func_name(g, fn.nameoff, &nlen))) {
		malformed(g);
		return 0;
	}
	if (!lines) {
		set_frame(out, strings, name, nlen, NULL, 0, 0);
		return 1;
	}
	tree = inl_tree(g, &fn, &nr_inl);
	if (tree && !pcvalue(g, fn.pcdata_inl, fn.entry, pc, &budget, &ix))
		ix = -1;
	/* innermost first: each inlined call, at the position pc is in */
	for (int depth = 0; ix >= 0 && n < max - 1 && depth < GOPCLN_MAX_INLINE; depth++) {
		struct inl_call c;
		const char *iname;
		size_t ilen;

		if (!inl_entry(g, tree, nr_inl, ix, &c) ||
		    !(iname = func_name(g, c.nameoff, &ilen)) ||
		    (uint64_t)c.parent_pc >= fn.end - fn.entry)
			break;	/* what is left shows as the function itself */
		position(g, &fn, pc, &budget, &file, &flen, &line);
		set_frame(&out[n], strings, iname, ilen, file, flen, line);
		out[n++].inlined = true;
		/* parentPc: an instruction at the call site, in the caller */
		pc = fn.entry + (uint32_t)c.parent_pc;
		if (!pcvalue(g, fn.pcdata_inl, fn.entry, pc, &budget, &ix))
			ix = -1;
	}
	position(g, &fn, pc, &budget, &file, &flen, &line);
	set_frame(&out[n++], strings, name, nlen, file, flen, line);
	return n;
}

/* ------------------------------------------------------------ making */

struct sym_gopcln *sym_gopcln_new(const uint8_t *tab, uint64_t size,
				  uint64_t vaddr, const char *path)
{
	struct sym_gopcln *g;

	if (!tab || size < 16 || size > GOPCLN_MAX_BYTES)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->tab = tab;
	g->size = size;
	g->vaddr = vaddr;
	g->path = path;
	if (!header_ok(g)) {
		free(g);
		return NULL;
	}
	return g;
}

void sym_gopcln_add_seg(struct sym_gopcln *g, uint64_t vaddr,
			const uint8_t *data, uint64_t size)
{
	if (g && g->nr_segs < GOPCLN_MAX_SEGS && data && size)
		g->segs[g->nr_segs++] = (struct gopcln_seg){ vaddr, size, data, false };
}

void sym_gopcln_set_gofunc(struct sym_gopcln *g, const uint8_t *data,
			   uint64_t size)
{
	if (g && data && size) {
		g->gofunc = data;
		g->gofunc_size = size;
	}
}

void sym_gopcln_free(struct sym_gopcln *g)
{
	free(g);
}

size_t sym_gopcln_bytes(const struct sym_gopcln *g)
{
	return g ? sizeof(*g) : 0;
}

uint32_t sym_gopcln_version(const struct sym_gopcln *g)
{
	return g ? g->ver : 0;
}

bool sym_gopcln_has_inline(const struct sym_gopcln *g)
{
	return g && (g->ver == 116 || (g->ver >= 118 && g->gofunc));
}

/* Up to max function entries, for tests and the fuzzer. */
size_t sym_gopcln_entries(const struct sym_gopcln *g, uint64_t *pcs,
			  size_t max)
{
	uint64_t pc, off;
	size_t n = 0;

	for (uint64_t i = 0; g && i < g->nfunc && n < max; i++)
		if (ftab_entry(g, i, &pc, &off))
			pcs[n++] = pc;
	return n;
}

/* ------------------------------------------------------ in an ELF file */

/* The Go build-id note (owner "Go", type 4) in a PT_NOTE segment. */
static bool go_note(const uint8_t *raw, size_t rawsize, const GElf_Phdr *ph)
{
	uint64_t off = ph->p_offset, end;

	if (!in(ph->p_offset, ph->p_filesz, rawsize))
		return false;
	end = ph->p_offset + ph->p_filesz;
	for (int i = 0; i < 64 && in(off, 12, end); i++) {
		uint32_t nh[3];

		memcpy(nh, raw + off, 12);
		/* the linker writes the name "Go\0\0" (namesz 4) */
		if ((nh[0] == 3 || nh[0] == 4) && nh[2] == 4 &&
		    in(off + 12, 3, end) && !memcmp(raw + off + 12, "Go", 3))
			return true;
		off += 12 + ((nh[0] + 3ull) & ~3ull) + ((nh[1] + 3ull) & ~3ull);
	}
	return false;
}

static bool looks_go(Elf *elf, const uint8_t *raw, size_t rawsize)
{
	GElf_Shdr sh;
	size_t phnum;

	if (sym_find_section(elf, ".go.buildinfo", &sh) ||
	    sym_find_section(elf, ".note.go.buildid", &sh))
		return true;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return false;
	for (size_t i = 0; i < phnum && i < 4096; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE &&
		    go_note(raw, rawsize, &ph))
			return true;
	}
	return false;
}

/*
 * No section says where the table is (a PIE linked externally, section
 * headers removed): its header, in a segment that is not code. Only in a
 * file that says it is Go, so other stripped files cost nothing.
 */
static struct sym_gopcln *scan_header(const struct gopcln_seg *segs, int nr,
				      const char *path)
{
	static const uint8_t sig[] = { 0xff, 0xff, 0xff, 0, 0 };
	uint64_t budget = GOPCLN_SCAN_MAX;

	for (int i = 0; i < nr; i++) {
		const struct gopcln_seg *s = &segs[i];
		uint64_t len = s->size < budget ? s->size : budget;

		budget -= len;
		for (uint64_t o = 0; o + 16 <= len;) {
			const uint8_t *p = memmem(s->data + o + 1, len - o - 1,
						  sig, sizeof(sig));
			struct sym_gopcln *g;
			uint64_t at;

			if (!p)
				break;
			at = (uint64_t)(p - 1 - s->data);
			o = at + 1;
			if ((s->vaddr + at) & 7)
				continue;	/* tables are 8-aligned */
			g = sym_gopcln_new(s->data + at, s->size - at,
					   s->vaddr + at, path);
			if (g)
				return g;
		}
	}
	return NULL;
}

static uint64_t word(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/*
 * Go 1.18+: the runtime's moduledata starts with a pointer to the table
 * and then slices of its regions; after them come text (1.26 leaves the
 * header's textStart 0) and gofunc, the base of inline-tree offsets.
 * 64-bit only.
 */
static void find_moduledata(struct sym_gopcln *g)
{
	uint64_t budget = GOPCLN_SCAN_MAX, gofunc_at = g->ver >= 120 ? 320 : 304;

	if (g->ptrsize != 8 || !g->vaddr)
		return;
	for (int i = 0; i < g->nr_segs; i++) {
		const struct gopcln_seg *s = &g->segs[i];
		uint64_t len = s->size < budget ? s->size : budget;

		if (s->code)
			continue;
		budget -= len;
		for (uint64_t o = (8 - (s->vaddr & 7)) & 7; o + gofunc_at + 8 <= len; o += 8) {
			const uint8_t *m = s->data + o;
			uint64_t avail, gofunc, text;
			const uint8_t *p;

			if (word(m) != g->vaddr ||
			    word(m + 8) != g->vaddr + g->funcname ||
			    word(m + 16) > g->cu - g->funcname ||
			    word(m + 32) != g->vaddr + g->cu ||
			    word(m + 104) != g->vaddr + g->pcln)
				continue;
			text = word(m + 176);
			gofunc = word(m + gofunc_at);
			if (!g->text)
				g->text = text;
			p = at_vaddr(g, gofunc, 1, &avail);
			if (p)
				sym_gopcln_set_gofunc(g, p, avail);
			return;
		}
	}
}

static int collect_segs(Elf *elf, const uint8_t *raw, size_t rawsize,
			struct gopcln_seg *segs)
{
	size_t phnum;
	int n = 0;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return 0;
	for (size_t i = 0; i < phnum && i < 4096 && n < GOPCLN_MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !ph.p_filesz || !in(ph.p_offset, ph.p_filesz, rawsize))
			continue;
		segs[n++] = (struct gopcln_seg){ ph.p_vaddr, ph.p_filesz,
						 raw + ph.p_offset, ph.p_flags & PF_X };
	}
	return n;
}

struct sym_gopcln *sym_gopcln_open(Elf *elf, const char *path)
{
	struct gopcln_seg segs[GOPCLN_MAX_SEGS], data[GOPCLN_MAX_SEGS];
	struct sym_gopcln *g = NULL;
	size_t rawsize = 0;
	const uint8_t *raw;
	int nr, nr_data = 0;
	bool sect = false;
	GElf_Shdr sh;

	raw = elf ? (const uint8_t *)elf_rawfile(elf, &rawsize) : NULL;
	if (!raw)
		return NULL;
	nr = collect_segs(elf, raw, rawsize, segs);
	if ((sym_find_section(elf, ".gopclntab", &sh) ||
	     sym_find_section(elf, ".data.rel.ro.gopclntab", &sh)) &&
	    sh.sh_type == SHT_PROGBITS && !(sh.sh_flags & SHF_COMPRESSED)) {
		sect = true;
		if (in(sh.sh_offset, sh.sh_size, rawsize))
			g = sym_gopcln_new(raw + sh.sh_offset, sh.sh_size,
					   sh.sh_addr, path);
	} else if (looks_go(elf, raw, rawsize)) {
		for (int i = 0; i < nr; i++)
			if (!segs[i].code)
				data[nr_data++] = segs[i];
		g = scan_header(data, nr_data, path);
		sect = true;	/* a Go file: its table must be there */
	}
	if (!g) {
		if (sect)
			safe_warn("the Go function table (.gopclntab) of", NULL,
				  path ? path : "?",
				  "is malformed (its frames stay unnamed)");
		return NULL;
	}
	for (int i = 0; i < nr && g->nr_segs < GOPCLN_MAX_SEGS; i++)
		g->segs[g->nr_segs++] = segs[i];
	if (g->ver >= 118)
		find_moduledata(g);
	return g;
}
