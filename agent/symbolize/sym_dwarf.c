// SPDX-License-Identifier: GPL-2.0-only
/*
 * DWARF with libdw: source lines and inline frames for an address, from
 * the file itself, its separate debug file, or (when enabled) debuginfod.
 *
 * Lookups go through an index of every concrete function's address ranges
 * built once per file, then walk only that function's inlined calls; the
 * generic dwarf_getscopes() walk of a whole unit is the fallback.
 *
 * One file: the function index and the lookups that use it share a file's
 * libdw handle and its lifetime (sym_dwarf_open/close).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dwarf.h>
#ifndef EMBER_NO_DEBUGINFOD
#include <elfutils/debuginfod.h>
#endif
#include "lib/safe_file.h"
#include "symbolize/symbolize_internal.h"

#ifdef EMBER_NO_DEBUGINFOD
/*
 * Built with EMBER_DEBUGINFOD=0 (an image that leaves libdebuginfod and
 * its libcurl out): --debuginfod says so once and does nothing.
 */
void *sym_debuginfod_begin(uint64_t dwarf_max_bytes)
{
	(void)dwarf_max_bytes;
	fprintf(stderr, "ember: this ember was built without debuginfod "
		"(EMBER_DEBUGINFOD=0): --debuginfod is ignored; install the "
		"debug files under --debug-dir instead\n");
	return NULL;
}

void sym_debuginfod_end(void *client)
{
	(void)client;
}

static Elf *fetch_debuginfod(struct sym_elf *se, const struct sym_elf_ctx *ctx)
{
	(void)se;
	(void)ctx;
	return NULL;
}
#else
/*
 * debuginfod: a query is abandoned after DINFOD_QUERY_S seconds (the
 * library's default would wait 90 s per server and file), and after
 * DINFOD_MAX_ERRORS failures other than "not found" the servers are
 * considered unreachable for the rest of the run.
 *
 * The build-id asked for comes from a file any user may have made, so a
 * download is also capped in size, at about what ember would use of it:
 * only its DWARF is read, and not over the per-file cap, so a file more
 * than DINFOD_DWARF_RATIO times that cap is refused (DINFOD_MAX_BYTES
 * without a cap). The cap goes to the server as X-DEBUGINFOD-MAXSIZE (it
 * answers 406 without sending: -EFBIG), and the progress callback stops a
 * transfer whose announced or received size is over it (a server that
 * ignores the header). Debian 12's libdebuginfod (0.188) has no setter for
 * either, only the DEBUGINFOD_MAXSIZE/MAXTIME variables, which a library
 * should not set in its process's environment. What arrives is checked
 * like any other file before it is mapped. A file too large is the file's
 * doing, not the server's: it does not count as an error.
 */
#define DINFOD_QUERY_S 20
#define DINFOD_MAX_ERRORS 3
#define DINFOD_MAX_BYTES (2ull << 30)
#define DINFOD_DWARF_RATIO 8

struct dinfod_state {
	struct timespec start;
	uint64_t max_bytes;
	int errors;
	bool disabled, too_big;
};

/*
 * a: bytes received once a server answers (a loop count before), b: the
 * size it announced (0 or -1 when unknown). Non-zero stops the query.
 */
static int dinfod_progress(debuginfod_client *c, long a, long b)
{
	struct dinfod_state *st = debuginfod_get_user_data(c);
	struct timespec now;

	if (!st)
		return 0;
	if ((b > 0 && (uint64_t)b > st->max_bytes) ||
	    (a > 0 && (uint64_t)a > st->max_bytes)) {
		st->too_big = true;
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec - st->start.tv_sec > DINFOD_QUERY_S;
}

void *sym_debuginfod_begin(uint64_t dwarf_max_bytes)
{
	struct dinfod_state *st = calloc(1, sizeof(*st));
	debuginfod_client *c = st ? debuginfod_begin() : NULL;
	char hdr[64];

	if (!c) {
		free(st);
		return NULL;
	}
	st->max_bytes = DINFOD_MAX_BYTES;
	if (dwarf_max_bytes && dwarf_max_bytes < DINFOD_MAX_BYTES / DINFOD_DWARF_RATIO)
		st->max_bytes = DINFOD_DWARF_RATIO * dwarf_max_bytes;
	snprintf(hdr, sizeof(hdr), "X-DEBUGINFOD-MAXSIZE: %" PRIu64, st->max_bytes);
	debuginfod_add_http_header(c, hdr);
	debuginfod_set_user_data(c, st);
	debuginfod_set_progressfn(c, dinfod_progress);
	return c;
}

void sym_debuginfod_end(void *client)
{
	if (!client)
		return;
	free(debuginfod_get_user_data(client));
	debuginfod_end(client);
}

static Elf *fetch_debuginfod(struct sym_elf *se, const struct sym_elf_ctx *ctx)
{
	const char *name = se->loaded_from->path ? se->loaded_from->path : "?";
	struct safe_rules rules = { .flags = 0 };
	struct dinfod_state *st;
	const unsigned char *id;
	ssize_t len = sym_build_id(se->loaded_from->elf, &id);
	const char *why;
	Elf *elf;
	int fd;

	if (!ctx->debuginfod || len <= 0)
		return NULL;
	st = debuginfod_get_user_data(ctx->debuginfod);
	if (st->disabled)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &st->start);
	st->too_big = false;
	fd = debuginfod_find_debuginfo(ctx->debuginfod, id, (int)len, NULL);
	if (fd < 0 && (st->too_big || fd == -EFBIG)) {
		/* the file's doing, not the server's: not an error */
		safe_warn("debuginfod's debug info for", NULL, name,
			  "is larger than ember reads");
		return NULL;
	}
	if (fd < 0) {
		if (fd != -ENOENT && ++st->errors >= DINFOD_MAX_ERRORS) {
			st->disabled = true;
			fprintf(stderr, "ember: debuginfod failed %d times (last: %s); "
				"not asking it again in this run (check DEBUGINFOD_URLS)\n",
				st->errors, strerror(-fd));
		}
		return NULL;
	}
	/* In our cache, written by us: ours or root's, and within the cap. */
	rules.max_bytes = st->max_bytes;
	rules.owners[0] = geteuid();
	rules.owners[1] = SAFE_ANY_OWNER;
	if (!safe_check_fd(fd, &rules, NULL, &why)) {
		safe_warn("debuginfod's debug info for", NULL, name, why);
		close(fd);
		return NULL;
	}
	elf = sym_map_elf(fd);
	close(fd);
	return elf;
}
#endif /* EMBER_NO_DEBUGINFOD */

/*
 * Bytes of DWARF in elf once decompressed: libdw decompresses every
 * compressed .debug_* section into the heap at dwarf_begin_elf(), and its
 * unit and abbreviation tables grow with the rest.
 */
static uint64_t dwarf_bytes(Elf *elf, bool *any)
{
	Elf_Scn *scn = NULL;
	uint64_t total = 0;
	size_t shstrndx;

	*any = false;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		GElf_Chdr ch;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    (strncmp(name, ".debug_", 7) && strncmp(name, ".zdebug_", 8)))
			continue;
		*any = true;
		if ((sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch))
			total += ch.ch_size;
		else
			total += sh.sh_size;
	}
	return total;
}

/* dwarf_begin_elf() unless elf's DWARF is over the per-file cap. */
static Dwarf *begin_capped(Elf *elf, const struct sym_elf_ctx *ctx, bool *capped)
{
	bool any;
	uint64_t bytes = dwarf_bytes(elf, &any);

	if (!any)
		return NULL;
	if (ctx->dwarf_max_bytes && bytes > ctx->dwarf_max_bytes) {
		*capped = true;
		return NULL;
	}
	return dwarf_begin_elf(elf, DWARF_C_READ, NULL);
}

static Dwarf *open_dwarf(struct sym_elf *se, const struct sym_elf_ctx *ctx)
{
	struct sym_file *f = se->loaded_from;
	bool capped = false;
	Dwarf *dw = NULL;

	if (f->debug_elf)
		dw = begin_capped(f->debug_elf, ctx, &capped);
	if (!dw && !capped)
		dw = begin_capped(f->elf, ctx, &capped);
	if (!dw && !capped && !se->dbgd_elf) {
		se->dbgd_elf = fetch_debuginfod(se, ctx);
		if (se->dbgd_elf)
			dw = begin_capped(se->dbgd_elf, ctx, &capped);
	}
	return dw;
}

static const char *die_name(Dwarf_Die *die, char **demangled)
{
	Dwarf_Attribute attr;
	const char *name;

	*demangled = NULL;
	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die,
					DW_AT_MIPS_linkage_name, &attr));
	if (name) {
		*demangled = sym_demangle(name);
		return *demangled ? *demangled : name;
	}
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

#define MAX_INLINE_DEPTH 64

static bool is_function(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/*
 * Frames for a chain of function DIEs, outermost (the real function) first:
 * emitted innermost inlined function first, each with the source position
 * inside it (from the line table for the innermost, from the
 * DW_AT_call_file/line of the inlined call it contains for the others).
 */
static int emit_chain(Dwarf_Die *chain, int n, Dwarf_Die *cudie, uint64_t vaddr,
		      const struct sym_elf_ctx *ctx, struct sym_frame *out, int max)
{
	Dwarf_Files *files = NULL;
	const char *file = NULL;
	size_t nfiles = 0;
	int line = 0, nr = 0;
	Dwarf_Line *dl = dwarf_getsrc_die(cudie, vaddr);

	if (dl) {
		file = dwarf_linesrc(dl, NULL, NULL);
		dwarf_lineno(dl, &line);
	}
	if (n > 1 && dwarf_getsrcfiles(cudie, &files, &nfiles) != 0)
		files = NULL;
	for (int k = n - 1; k >= 0 && nr < max; k--) {
		struct sym_frame *fr = &out[nr++];
		Dwarf_Attribute a;
		Dwarf_Word cf = 0, cl = 0;
		const char *name;
		char *dm;

		memset(fr, 0, sizeof(*fr));
		name = die_name(&chain[k], &dm);
		fr->function = name ? sym_intern(ctx->strings, name) : NULL;
		free(dm);
		fr->source_file = file ? sym_intern(ctx->strings, file) : NULL;
		fr->line = line > 0 ? (uint32_t)line : 0;
		fr->inlined = dwarf_tag(&chain[k]) == DW_TAG_inlined_subroutine;
		/* The caller's position is where this inline call was made. */
		file = NULL;
		line = 0;
		if (dwarf_formudata(dwarf_attr(&chain[k], DW_AT_call_file, &a), &cf) == 0 &&
		    files && cf < nfiles)
			file = dwarf_filesrc(files, cf, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&chain[k], DW_AT_call_line, &a), &cl) == 0)
			line = (int)cl;
	}
	return nr;
}

/* ---- the function index ---- */

struct index_build {
	struct sym_dwfunc *v;
	size_t n, cap;
	bool oom;
};

static void index_add(struct index_build *b, Dwarf_Die *die, uint32_t cu)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int guard = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0 && guard++ < 4096) {
		if (hi <= lo)
			continue;
		if (b->n == b->cap) {
			size_t cap = b->cap ? b->cap * 2 : 1024;
			struct sym_dwfunc *v = realloc(b->v, cap * sizeof(*v));

			if (!v) {
				b->oom = true;
				return;
			}
			b->v = v;
			b->cap = cap;
		}
		b->v[b->n++] = (struct sym_dwfunc){ lo, hi, dwarf_dieoffset(die), cu };
	}
}

/* Concrete functions sit at the top of a unit or inside namespaces/types. */
static void index_children(struct index_build *b, Dwarf_Die *parent,
			   uint32_t cu, int depth)
{
	Dwarf_Die child;

	if (dwarf_child(parent, &child) != 0)
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			index_add(b, &child, cu);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (depth < 16 && dwarf_haschildren(&child) > 0)
				index_children(b, &child, cu, depth + 1);
			break;
		default:
			break;
		}
	} while (!b->oom && dwarf_siblingof(&child, &child) == 0);
}

static int cmp_dwfunc(const void *a, const void *b)
{
	const struct sym_dwfunc *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* Smaller range first at one start: the more specific function. */
	return (x->hi > y->hi) - (x->hi < y->hi);
}

static void build_index(struct sym_elf *se)
{
	struct index_build b = { 0 };
	Dwarf_CU *cu = NULL, *next;
	uint32_t nr_cus = 0;

	while (dwarf_get_units(se->dwarf, cu, &next, NULL, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;
		uint8_t type;

		cu = next;
		if (dwarf_cu_info(cu, NULL, &type, &cudie, NULL, NULL, NULL, NULL) == 0 &&
		    (type == DW_UT_compile || type == DW_UT_partial))
			index_children(&b, &cudie, nr_cus, 0);
		nr_cus++;
		if (b.oom)
			break;
	}
	if (b.n)
		qsort(b.v, b.n, sizeof(*b.v), cmp_dwfunc);
	se->funcs = b.v;
	se->nr_funcs = b.n;
	se->cu_seen = calloc(nr_cus ? nr_cus : 1, 1);
	se->nr_cus = se->cu_seen ? nr_cus : 0;
}

static size_t index_bytes(const struct sym_elf *se)
{
	return se->nr_funcs * sizeof(*se->funcs) + se->nr_cus;
}

static const struct sym_dwfunc *index_find(const struct sym_elf *se, uint64_t pc)
{
	size_t lo = 0, hi = se->nr_funcs;

	while (lo < hi) {	/* first entry starting after pc */
		size_t mid = lo + (hi - lo) / 2;

		if (se->funcs[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges rarely overlap; look back a few for one that covers pc. */
	for (size_t i = lo, n = 0; i-- > 0 && n < 16; n++)
		if (pc < se->funcs[i].hi)
			return &se->funcs[i];
	return NULL;
}

/* From the function's DIE down through the inlined calls covering pc. */
static int inline_chain(Dwarf_Die *fn, uint64_t pc, Dwarf_Die *chain)
{
	Dwarf_Die cur = *fn, child;
	int n = 0;

	chain[n++] = cur;
	while (n < MAX_INLINE_DEPTH && dwarf_child(&cur, &child) == 0) {
		bool found = false;

		do {
			int tag = dwarf_tag(&child);

			if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block)
				continue;
			if (dwarf_haspc(&child, pc) <= 0)
				continue;
			if (tag == DW_TAG_inlined_subroutine)
				chain[n++] = child;
			cur = child;
			found = true;
			break;
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
	}
	return n;
}

/* Without an index hit: the CU's scopes the slow way (odd producers). */
static int scopes_chain(Dwarf_Die *cudie, uint64_t pc, Dwarf_Die *chain)
{
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cudie, pc, &scopes), k = 0;

	/*
	 * dwarf_getscopes() continues into the abstract origin of an inlined
	 * call; the physical nesting is what dwarf_getscopes_die() gives from
	 * the innermost concrete function-like DIE.
	 */
	for (int i = 0; i < n; i++) {
		if (is_function(dwarf_tag(&scopes[i]))) {
			Dwarf_Die inner = scopes[i];

			free(scopes);
			scopes = NULL;
			n = dwarf_getscopes_die(&inner, &scopes);
			break;
		}
		if (i == n - 1)
			n = 0;
	}
	/* scopes is innermost first: keep functions up to the real one. */
	for (int i = 0; i < n && k < MAX_INLINE_DEPTH; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (!is_function(tag))
			continue;
		chain[k++] = scopes[i];
		if (tag == DW_TAG_subprogram)
			break;
	}
	free(scopes);
	for (int i = 0; i < k / 2; i++) {	/* outermost first */
		Dwarf_Die t = chain[i];

		chain[i] = chain[k - 1 - i];
		chain[k - 1 - i] = t;
	}
	return k;
}

int sym_dwarf_frames(struct sym_elf *se, const struct sym_elf_ctx *ctx,
		     uint64_t vaddr, struct sym_frame *out, int max)
{
	Dwarf_Die chain[MAX_INLINE_DEPTH], fn, cudie;
	const struct sym_dwfunc *f = index_find(se, vaddr);
	size_t before = 0;
	bool measure;
	int n, nr;

	if (f) {
		if (!dwarf_offdie(se->dwarf, f->die, &fn) ||
		    !dwarf_diecu(&fn, &cudie, NULL, NULL))
			return 0;
		n = inline_chain(&fn, vaddr, chain);
	} else {
		if (!dwarf_addrdie(se->dwarf, vaddr, &cudie))
			return 0;
		n = scopes_chain(&cudie, vaddr, chain);
	}
	if (n <= 0)
		return 0;
	/* libdw keeps each unit's line table once read: count its memory. */
	measure = !f || (f->cu < se->nr_cus && !se->cu_seen[f->cu]);
	if (measure)
		before = sym_heap_bytes();
	nr = emit_chain(chain, n, &cudie, vaddr, ctx, out, max);
	if (measure) {
		size_t after = sym_heap_bytes();

		if (after > before) {
			se->cost += after - before;
			se->dwarf_cost += after - before;
		}
		if (f)
			se->cu_seen[f->cu] = 1;
	}
	return nr;
}

/*
 * Which DWARF an index was built from: its image's size and its
 * .debug_info's place and size (the same file gives the same; a debug
 * file installed since, or another one, does not).
 */
static uint64_t dwarf_fingerprint(Dwarf *dw)
{
	Elf *elf = dwarf_getelf(dw);
	uint64_t fp = 0xcbf29ce484222325ull;
	Elf_Scn *scn = NULL;
	size_t shstrndx, raw = 0;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	elf_rawfile(elf, &raw);
	fp = (fp ^ raw) * 0x100000001b3ull;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) {
			fp = (fp ^ sh.sh_offset) * 0x100000001b3ull;
			fp = (fp ^ sh.sh_size) * 0x100000001b3ull;
			break;
		}
	}
	return fp;
}

void sym_dwarf_open(struct sym_elf *se, const struct sym_elf_ctx *ctx)
{
	size_t before = sym_heap_bytes(), after;

	se->dwarf_tried = true;
	se->dwarf = open_dwarf(se, ctx);
	if (se->dwarf) {
		/*
		 * The index outlives a close (sym_dwarf_close()): a hot file
		 * dropped at each profile's end is opened again at the next,
		 * and walking every unit's DIEs was two thirds of that
		 */
		uint64_t fp = dwarf_fingerprint(se->dwarf);

		/* another DWARF since (a debug package installed): new offsets */
		if (se->funcs && se->index_fp != fp) {
			se->cost -= index_bytes(se) < se->cost ?
				    index_bytes(se) : se->cost;
			sym_dwarf_free_index(se);
		}
		if (!se->funcs) {
			build_index(se);
			se->index_fp = fp;
		}
		/*
		 * The index walk read every unit's DIEs: all of an
		 * uncompressed .debug_info would stay in our RSS. Lookups
		 * fault back the few pages they need.
		 */
		if (!se->loaded_from->mem)
			sym_release_pages(se->loaded_from->elf);
		sym_release_pages(se->loaded_from->debug_elf);
		sym_release_pages(se->dbgd_elf);
	}
	after = sym_heap_bytes();
	if (after > before) {
		se->cost += after - before;
		se->dwarf_cost += after - before;
	}
}

bool sym_dwarf_close(struct sym_elf *se)
{
	struct sym_file *f = se->loaded_from;
	bool ok = true;

	if (se->dwarf)
		dwarf_end(se->dwarf);
	/*
	 * dwarf_end() leaves the decompressed debug sections with the Elf
	 * they came from; only a new Elf gives them back. An in-memory image
	 * (vdso, memfd) keeps them: its bytes cannot be re-read.
	 */
	if (se->dwarf_tried && f && !f->mem) {
		ok = sym_reset_elf(&f->debug_elf);
		ok = sym_reset_elf(&f->elf) && ok;
	}
	sym_unmap_elf(se->dbgd_elf);
	se->dwarf = NULL;
	se->dbgd_elf = NULL;
	se->dwarf_tried = false;
	se->cost -= se->dwarf_cost < se->cost ? se->dwarf_cost : se->cost;
	se->dwarf_cost = 0;
	/*
	 * The function index stays (its DIE offsets hold for the same
	 * file), counted as the file's own cost now; the line tables it
	 * marked as read went with libdw
	 */
	if (se->funcs) {
		se->cost += index_bytes(se);
		if (se->cu_seen)
			memset(se->cu_seen, 0, se->nr_cus);
	}
	return ok;
}

void sym_dwarf_free_index(struct sym_elf *se)
{
	free(se->funcs);
	free(se->cu_seen);
	se->funcs = NULL;
	se->cu_seen = NULL;
	se->nr_funcs = se->nr_cus = 0;
}
