// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kernel symbols from /proc/kallsyms (kernel and loaded modules), parsed
 * once into an array sorted by address. Only text symbols are kept (data
 * symbols would cut functions short and stack addresses are always code);
 * data symbols, for naming static kernel locks, are a separate table read
 * on first need (sym_kdata_*, at the end).
 * kallsyms has no sizes, so a symbol ends where the next one starts.
 *
 * With kptr_restrict (or without CAP_SYSLOG) every address reads as 0:
 * sym_kernel_hidden() tells, and the caller says what to do.
 *
 * Kept compactly for the whole run (a kernel has 100k+ text symbols): an
 * address and a module index per symbol, and the names, 3 MB as text,
 * zlib-compressed in blocks of KBLOCK consecutive symbols (about 5x
 * smaller); a lookup inflates one block (a few microseconds).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "lib/safe_file.h"
#include "symbolize/symbolize_internal.h"

#define KERNEL_MODULE "[kernel.kallsyms]"
#define KBLOCK 64		/* names per compressed block */
/*
 * /proc/kallsyms lines are short (KSYM_NAME_LEN is 512) and the file is a
 * few MB; tests hand other files: a longer line is skipped, and no more
 * than this is read.
 */
#define KALLSYMS_MAX_LINE 1024
#define KALLSYMS_MAX_BYTES (256u << 20)

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset into names */
	uint32_t module;	/* index into modules */
};

struct kmodule {
	char *name;		/* "[kernel.kallsyms]" or "[mod]" */
	uint64_t base;		/* lowest text address seen */
};

struct sym_kernel {
	/* while parsing */
	struct ksym *syms;
	size_t nr_syms, cap_syms;
	char *names;
	size_t names_len, names_cap;
	/* kept, sorted by address */
	uint64_t *addrs;
	uint16_t *mods;
	size_t nr;
	unsigned char *zblob;		/* compressed name blocks */
	uint32_t *zoff;			/* block b is zblob[zoff[b], zoff[b + 1]) */
	uint32_t *rawlen;		/* block b's inflated size */
	size_t zlen;
	char *block;			/* the last inflated block... */
	size_t block_cap, block_nr;	/* ...and its number (SIZE_MAX: none) */
	struct kmodule *modules;
	size_t nr_modules;
	uint64_t text_end;	/* _etext, bounds the last core symbol */
	bool hidden;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static int module_index(struct sym_kernel *k, const char *name, size_t len)
{
	struct kmodule *m;

	for (size_t i = 0; i < k->nr_modules; i++) {
		if (strlen(k->modules[i].name) == len + 2 &&
		    strncmp(k->modules[i].name + 1, name, len) == 0)
			return (int)i;
	}
	m = realloc(k->modules, (k->nr_modules + 1) * sizeof(*m));
	if (!m)
		return -1;
	k->modules = m;
	m = &k->modules[k->nr_modules];
	m->name = malloc(len + 3);
	if (!m->name)
		return -1;
	m->name[0] = '[';
	memcpy(m->name + 1, name, len);
	memcpy(m->name + 1 + len, "]", 2);
	m->base = UINT64_MAX;
	return (int)k->nr_modules++;
}

static bool add_name(struct sym_kernel *k, const char *name, size_t len,
		     uint32_t *off)
{
	if (k->names_len + len + 1 > k->names_cap) {
		size_t cap = k->names_cap ? k->names_cap * 2 : 1 << 20;
		char *n;

		while (cap < k->names_len + len + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return false;
		n = realloc(k->names, cap);
		if (!n)
			return false;
		k->names = n;
		k->names_cap = cap;
	}
	memcpy(k->names + k->names_len, name, len);
	k->names[k->names_len + len] = '\0';
	*off = (uint32_t)k->names_len;
	k->names_len += len + 1;
	return true;
}

/* "ffffffff81000000 T _text" or "ffffffffc0000000 t fn\t[mod]" */
static bool parse_line(struct sym_kernel *k, char *line, bool *any_nonzero)
{
	char *p = line, *end, *name, *mod = NULL;
	uint64_t addr;
	size_t name_len, mod_len = 0;
	uint32_t off;
	int mi = 0;
	char type;

	addr = strtoull(p, &end, 16);
	if (end == p || *end != ' ')
		return true;	/* malformed: skip */
	if (addr)
		*any_nonzero = true;
	type = end[1];
	if (!type || end[2] != ' ')
		return true;
	name = end + 3;
	name_len = strcspn(name, "\t\n");
	if (name[name_len] == '\t') {
		mod = name + name_len + 1;
		if (*mod == '[')
			mod++;
		mod_len = strcspn(mod, "]\n");
	}
	if (type == '_' || type == 'T' || type == 't' || type == 'W' || type == 'w') {
		/* text symbols only */
	} else {
		if (!mod && strcmp(name, "_etext") == 0)
			k->text_end = addr;
		return true;
	}
	if (!name_len)
		return true;
	if (mod) {
		mi = module_index(k, mod, mod_len);
		if (mi < 0)
			return false;
	}
	if (addr < k->modules[mi].base)
		k->modules[mi].base = addr;
	if (!add_name(k, name, name_len, &off))
		return false;
	if (k->nr_syms == k->cap_syms) {
		size_t cap = k->cap_syms ? k->cap_syms * 2 : 65536;
		struct ksym *s = realloc(k->syms, cap * sizeof(*s));

		if (!s)
			return false;
		k->syms = s;
		k->cap_syms = cap;
	}
	k->syms[k->nr_syms++] = (struct ksym){ addr, off, (uint32_t)mi };
	return true;
}

/* Sorted parse arrays -> addresses, module indexes, compressed names. */
static bool compact(struct sym_kernel *k)
{
	size_t nblocks = (k->nr_syms + KBLOCK - 1) / KBLOCK, zcap = 0;
	char *raw = NULL;
	bool ok = false;

	k->nr = k->nr_syms;
	k->addrs = malloc((k->nr ? k->nr : 1) * sizeof(*k->addrs));
	k->mods = malloc((k->nr ? k->nr : 1) * sizeof(*k->mods));
	k->zoff = calloc(nblocks + 1, sizeof(*k->zoff));
	k->rawlen = calloc(nblocks ? nblocks : 1, sizeof(*k->rawlen));
	raw = malloc(KBLOCK * 512);	/* kallsyms names are < 512 bytes */
	if (!k->addrs || !k->mods || !k->zoff || !k->rawlen || !raw ||
	    k->nr_modules > UINT16_MAX)
		goto out;
	for (size_t b = 0; b < nblocks; b++) {
		size_t len = 0, first = b * KBLOCK;
		uLongf zl;

		for (size_t i = first; i < k->nr && i < first + KBLOCK; i++) {
			const char *n = k->names + k->syms[i].name;
			size_t l = strnlen(n, 511) + 1;

			memcpy(raw + len, n, l - 1);
			raw[len + l - 1] = '\0';
			len += l;
			k->addrs[i] = k->syms[i].addr;
			k->mods[i] = (uint16_t)k->syms[i].module;
		}
		zl = compressBound(len);
		if (k->zlen + zl > zcap) {
			size_t cap = zcap ? zcap * 2 : 256 * 1024;
			unsigned char *z;

			while (cap < k->zlen + zl)
				cap *= 2;
			if (cap > UINT32_MAX || !(z = realloc(k->zblob, cap)))
				goto out;
			k->zblob = z;
			zcap = cap;
		}
		if (compress2(k->zblob + k->zlen, &zl, (const Bytef *)raw, len, 6) != Z_OK)
			goto out;
		k->zlen += zl;
		k->zoff[b + 1] = (uint32_t)k->zlen;
		k->rawlen[b] = (uint32_t)len;
	}
	if (k->zlen && k->zlen < zcap) {
		unsigned char *fit = realloc(k->zblob, k->zlen);

		if (fit)
			k->zblob = fit;
	}
	k->block_nr = SIZE_MAX;
	ok = true;
out:
	free(raw);
	/* the parse arrays are done with */
	free(k->syms);
	free(k->names);
	k->syms = NULL;
	k->names = NULL;
	k->nr_syms = k->cap_syms = k->names_len = k->names_cap = 0;
	return ok;
}

/* Name of symbol i: inflates its block unless it is the last one used. */
static const char *ksym_name(struct sym_kernel *k, size_t i)
{
	size_t b = i / KBLOCK, len;
	uLongf out;
	const char *p;

	if (b != k->block_nr) {
		len = k->rawlen[b];
		if (len > k->block_cap) {
			char *nb = realloc(k->block, len);

			if (!nb)
				return NULL;
			k->block = nb;
			k->block_cap = len;
		}
		out = len;
		k->block_nr = SIZE_MAX;
		if (uncompress((Bytef *)k->block, &out, k->zblob + k->zoff[b],
			       k->zoff[b + 1] - k->zoff[b]) != Z_OK || out != len)
			return NULL;
		k->block_nr = b;
	}
	p = k->block;
	for (size_t j = b * KBLOCK; j < i; j++)
		p += strlen(p) + 1;
	return p;
}

struct sym_kernel *sym_kernel_load(const char *path)
{
	struct sym_kernel *k = calloc(1, sizeof(*k));
	char buf[KALLSYMS_MAX_LINE], *line;
	bool any_nonzero = false;
	struct safe_lines lines;
	FILE *f;

	if (!k)
		return NULL;
	/* Module 0 is the kernel itself. */
	k->modules = calloc(1, sizeof(*k->modules));
	if (!k->modules || !(k->modules[0].name = strdup(KERNEL_MODULE)))
		goto fail;
	k->modules[0].base = UINT64_MAX;
	k->nr_modules = 1;
	f = fopen(path, "re");
	if (!f)
		goto fail;
	safe_lines_init(&lines, f, buf, sizeof(buf), KALLSYMS_MAX_BYTES, 0);
	while ((line = safe_line(&lines, NULL))) {
		if (!parse_line(k, line, &any_nonzero)) {
			fclose(f);
			errno = ENOMEM;
			goto fail;
		}
	}
	fclose(f);
	k->hidden = k->nr_syms > 0 && !any_nonzero;
	qsort(k->syms, k->nr_syms, sizeof(*k->syms), cmp_ksym);
	if (!compact(k)) {
		errno = ENOMEM;
		goto fail;
	}
	return k;
fail:
	sym_kernel_free(k);
	return NULL;
}

void sym_kernel_free(struct sym_kernel *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nr_modules; i++)
		free(k->modules[i].name);
	free(k->modules);
	free(k->syms);
	free(k->names);
	free(k->addrs);
	free(k->mods);
	free(k->zblob);
	free(k->zoff);
	free(k->rawlen);
	free(k->block);
	free(k);
}

bool sym_kernel_hidden(const struct sym_kernel *k)
{
	return k && k->hidden;
}

size_t sym_kernel_bytes(const struct sym_kernel *k)
{
	size_t nblocks = k ? (k->nr + KBLOCK - 1) / KBLOCK : 0;

	return k ? sizeof(*k) + k->nr * (sizeof(*k->addrs) + sizeof(*k->mods)) +
		   k->zlen + (2 * nblocks + 1) * sizeof(uint32_t) + k->block_cap : 0;
}

bool sym_kernel_lookup(struct sym_kernel *k, uint64_t addr,
		       const char **name, const char **module,
		       uint64_t *module_offset)
{
	size_t lo = 0, hi, i;
	const struct kmodule *m;
	uint64_t sa;
	uint16_t mi;

	if (!k || k->hidden || !k->nr)
		return false;
	hi = k->nr;
	while (lo < hi) {	/* first symbol with addr > target */
		size_t mid = lo + (hi - lo) / 2;

		if (k->addrs[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	i = lo - 1;
	sa = k->addrs[i];
	mi = k->mods[i];
	m = &k->modules[mi];
	/* Past the kernel's text, or into a gap after a module's last symbol. */
	if (mi == 0 && sa < k->text_end && addr >= k->text_end)
		return false;
	if (i + 1 == k->nr && mi != 0 && addr - sa > (1u << 20))
		return false;
	*name = ksym_name(k, i);
	if (!*name)
		return false;
	*module = m->name;
	*module_offset = addr - m->base;
	return true;
}

/* ---- data symbols: the names of static kernel locks (-e lock) ---------- */

/*
 * A lock inside a static object (a struct holding a mutex) is named as
 * that object plus an offset, up to this far; anything further (heap,
 * stacks, per-CPU offsets) is no data symbol's.
 */
#define KDATA_MAX_OFFSET 4096

struct kdata_sym {
	uint64_t addr;
	uint32_t name;		/* offset into sym_kdata.names */
};

struct sym_kdata {
	struct kdata_sym *syms;
	size_t nr, cap;
	char *names;
	size_t names_len, names_cap;
};

static int cmp_kdata(const void *a, const void *b)
{
	uint64_t x = ((const struct kdata_sym *)a)->addr;
	uint64_t y = ((const struct kdata_sym *)b)->addr;

	return x < y ? -1 : x > y;
}

/* "ffffffff82a0c0e0 d rtnl_mutex" (and b/B/D, in modules too) */
static bool kdata_line(struct sym_kdata *d, char *line)
{
	char *end, *name, type;
	uint64_t addr = strtoull(line, &end, 16);
	size_t len;

	if (end == line || *end != ' ' || !addr)
		return true;
	type = end[1];
	if (!type || end[2] != ' ' || !strchr("dDbB", type))
		return true;
	name = end + 3;
	len = strcspn(name, "\t\n");
	if (!len || len > 255)
		return true;
	if (d->nr == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16384;
		struct kdata_sym *s = realloc(d->syms, cap * sizeof(*s));

		if (!s)
			return false;
		d->syms = s;
		d->cap = cap;
	}
	if (d->names_len + len + 1 > d->names_cap) {
		size_t cap = d->names_cap ? d->names_cap * 2 : 1u << 18;
		char *n = realloc(d->names, cap);

		if (!n || cap > UINT32_MAX)
			return false;
		d->names = n;
		d->names_cap = cap;
	}
	memcpy(d->names + d->names_len, name, len);
	d->names[d->names_len + len] = '\0';
	d->syms[d->nr++] = (struct kdata_sym){ addr, (uint32_t)d->names_len };
	d->names_len += len + 1;
	return true;
}

struct sym_kdata *sym_kdata_load(const char *path)
{
	struct sym_kdata *d = calloc(1, sizeof(*d));
	char buf[KALLSYMS_MAX_LINE], *line;
	struct safe_lines lines;
	FILE *f;

	if (!d)
		return NULL;
	f = fopen(path, "re");
	if (!f) {
		free(d);
		return NULL;
	}
	safe_lines_init(&lines, f, buf, sizeof(buf), KALLSYMS_MAX_BYTES, 0);
	while ((line = safe_line(&lines, NULL)))
		if (!kdata_line(d, line))
			break;
	fclose(f);
	qsort(d->syms, d->nr, sizeof(*d->syms), cmp_kdata);
	return d;
}

void sym_kdata_free(struct sym_kdata *d)
{
	if (!d)
		return;
	free(d->syms);
	free(d->names);
	free(d);
}

const char *sym_kdata_lookup(const struct sym_kdata *d, uint64_t addr,
			     uint64_t *off)
{
	size_t lo = 0, hi;

	if (!d || !d->nr)
		return NULL;
	hi = d->nr;
	while (lo < hi) {	/* first symbol with addr > target */
		size_t mid = lo + (hi - lo) / 2;

		if (d->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - d->syms[lo - 1].addr >= KDATA_MAX_OFFSET)
		return NULL;
	*off = addr - d->syms[lo - 1].addr;
	return d->names + d->syms[lo - 1].name;
}
