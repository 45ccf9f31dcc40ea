// SPDX-License-Identifier: GPL-2.0-only
/*
 * The cache of ELF files shared by every process.
 *
 * Level 1, sym_file: one per mapped file identity (device + inode as
 * /proc/PID/maps shows them). It holds the mapped ELF, its PT_LOAD table
 * and build-id, and is kept while any process mapping refers to it; it is
 * cheap (no symbols) and is what makes an exited process still resolvable.
 *
 * Level 2, sym_elf: the parsed symbols and DWARF, one per GNU build-id (the
 * same libc in ten containers is parsed once), or per
 * device+inode+size+mtime for files without a build-id. Loaded on first
 * lookup; when the loaded ones together exceed the budget, the least
 * recently used are unloaded (they reload on demand from their file).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include "symbolize/symbolize_internal.h"

#define FILE_BUCKETS 1024
#define ELF_BUCKETS 1024

struct sym_cache {
	struct sym_file *files[FILE_BUCKETS];
	struct sym_elf *elfs[ELF_BUCKETS];
	struct sym_elf lru;	/* list head: lru.lru_next is most recent */
	size_t budget, loaded_bytes, meta_bytes;
	uint64_t files_open;
	const struct sym_elf_ctx *ctx;
	struct sym_file *vdso;
	bool vdso_tried;
	uint64_t gen;		/* sym_cache_trim() calls so far */
};

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 16777619u;
	}
	return h;
}

static uint32_t hash_id(uint64_t dev, uint64_t ino)
{
	uint64_t h = (dev * 0x9e3779b97f4a7c15ull) ^ (ino * 0xff51afd7ed558ccdull);

	return (uint32_t)(h ^ (h >> 29));
}

struct sym_cache *sym_cache_new(size_t budget, const struct sym_elf_ctx *ctx)
{
	struct sym_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->budget = budget;
	c->ctx = ctx;
	c->lru.lru_next = c->lru.lru_prev = &c->lru;
	c->meta_bytes = sizeof(*c);
	return c;
}

static void lru_unlink(struct sym_elf *se)
{
	if (!se->lru_next)
		return;
	se->lru_prev->lru_next = se->lru_next;
	se->lru_next->lru_prev = se->lru_prev;
	se->lru_next = se->lru_prev = NULL;
}

static void lru_push_front(struct sym_cache *c, struct sym_elf *se)
{
	se->lru_next = c->lru.lru_next;
	se->lru_prev = &c->lru;
	c->lru.lru_next->lru_prev = se;
	c->lru.lru_next = se;
}

static void unload(struct sym_cache *c, struct sym_elf *se)
{
	if (!se->loaded)
		return;
	lru_unlink(se);
	c->loaded_bytes -= se->cost;
	sym_elf_unload(se);
}

static void evict(struct sym_cache *c, const struct sym_elf *keep)
{
	struct sym_elf *se = c->lru.lru_prev;

	while (c->loaded_bytes > c->budget && se != &c->lru) {
		struct sym_elf *prev = se->lru_prev;

		if (se != keep)
			unload(c, se);
		se = prev;
	}
}

static void elf_put(struct sym_cache *c, struct sym_elf *se)
{
	struct sym_elf **pp;

	if (--se->refs)
		return;
	unload(c, se);
	for (pp = &c->elfs[hash_str(se->key) % ELF_BUCKETS]; *pp; pp = &(*pp)->hash_next) {
		if (*pp == se) {
			*pp = se->hash_next;
			break;
		}
	}
	c->meta_bytes -= sizeof(*se) + strlen(se->key) + 1;
	free(se->key);
	free(se);
}

static struct sym_elf *elf_get(struct sym_cache *c, const struct sym_file *f)
{
	char key[160];
	struct sym_elf *se;
	uint32_t b;

	if (f->build_id)
		snprintf(key, sizeof(key), "b:%s", f->build_id);
	else
		snprintf(key, sizeof(key), "f:%llx:%llx:%llx:%llx",
			 (unsigned long long)f->dev, (unsigned long long)f->ino,
			 (unsigned long long)f->size, (unsigned long long)f->mtime);
	b = hash_str(key) % ELF_BUCKETS;
	for (se = c->elfs[b]; se; se = se->hash_next) {
		if (strcmp(se->key, key) == 0) {
			se->refs++;
			return se;
		}
	}
	se = calloc(1, sizeof(*se));
	if (!se || !(se->key = strdup(key))) {
		free(se);
		return NULL;
	}
	se->refs = 1;
	se->hash_next = c->elfs[b];
	c->elfs[b] = se;
	c->meta_bytes += sizeof(*se) + strlen(key) + 1;
	return se;
}

static void file_free(struct sym_cache *c, struct sym_file *f)
{
	if (f->se) {
		/* Loaded data points into this file's mapping: drop it first. */
		if (f->se->loaded_from == f)
			unload(c, f->se);
		elf_put(c, f->se);
	}
	if (f->elf || f->mem)
		c->files_open--;
	sym_file_close(f);
	c->meta_bytes -= sizeof(*f) + f->nr_loads * sizeof(*f->loads);
	free(f);
}

void sym_cache_free(struct sym_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < FILE_BUCKETS; i++) {
		while (c->files[i]) {
			struct sym_file *f = c->files[i];

			c->files[i] = f->hash_next;
			file_free(c, f);
		}
	}
	if (c->vdso)
		file_free(c, c->vdso);
	free(c);
}

static void file_opened(struct sym_cache *c, struct sym_file *f)
{
	c->meta_bytes += f->nr_loads * sizeof(*f->loads);
	if (!f->elf)
		return;
	c->files_open++;
	f->se = elf_get(c, f);
}

struct sym_file *sym_cache_get(struct sym_cache *c, uint64_t dev,
			       uint64_t ino, const char *path,
			       sym_open_fn open_file, void *arg)
{
	uint32_t b = hash_id(dev, ino) % FILE_BUCKETS;
	struct sym_file *f;

	for (f = c->files[b]; f; f = f->hash_next) {
		if (f->dev != dev || f->ino != ino)
			continue;
		f->refs++;
		/*
		 * The first process mapping it was gone before we could open
		 * it: this one may still be there.
		 */
		if (f->open_failed) {
			open_file(arg, f);
			file_opened(c, f);
		}
		return f;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dev = dev;
	f->ino = ino;
	f->path = sym_intern(c->ctx->strings, path);
	f->refs = 1;
	c->meta_bytes += sizeof(*f);
	/* open_file calls sym_file_open_fd() with the paths it knows. */
	open_file(arg, f);
	file_opened(c, f);
	f->hash_next = c->files[b];
	c->files[b] = f;
	return f;
}

void sym_cache_put(struct sym_cache *c, struct sym_file *f)
{
	struct sym_file **pp;

	if (!f || f == c->vdso || --f->refs)
		return;
	for (pp = &c->files[hash_id(f->dev, f->ino) % FILE_BUCKETS]; *pp;
	     pp = &(*pp)->hash_next) {
		if (*pp == f) {
			*pp = f->hash_next;
			break;
		}
	}
	file_free(c, f);
}

struct sym_file *sym_cache_vdso(struct sym_cache *c)
{
	unsigned long base;
	size_t size = 0;
	char line[512];
	FILE *maps;
	void *copy;

	if (c->vdso_tried)
		return c->vdso;
	c->vdso_tried = true;
	base = getauxval(AT_SYSINFO_EHDR);
	if (!base)
		return NULL;
	/* Our own vdso is the one every 64-bit process of this kernel has. */
	maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return NULL;
	while (fgets(line, sizeof(line), maps)) {
		struct sym_map_line m;

		if (sym_maps_parse_line(line, &m) && m.type == SYM_MAP_VDSO &&
		    m.start == base) {
			size = m.end - m.start;
			break;
		}
	}
	fclose(maps);
	if (!size || !(copy = malloc(size)))
		return NULL;
	memcpy(copy, (const void *)base, size);
	c->vdso = calloc(1, sizeof(*c->vdso));
	if (!c->vdso) {
		free(copy);
		return NULL;
	}
	c->vdso->path = sym_intern(c->ctx->strings, "[vdso]");
	c->vdso->refs = 1;
	c->meta_bytes += sizeof(*c->vdso);
	sym_file_open_mem(c->vdso, copy, size, c->ctx);
	file_opened(c, c->vdso);
	return c->vdso;
}

/*
 * The last answers of a file's lookups, direct-mapped by address. An
 * exec storm symbolizes the same few programs' addresses again for every
 * new process (sh, ls, libc), and a DWARF lookup costs microseconds.
 * Answers hold interned strings only, which live as long as the
 * symbolizer; the slots go with the file's loaded state.
 */
#define RESOLVED_SLOTS	128	/* power of two */
#define RESOLVED_FRAMES	3	/* deeper inline chains are not kept */

struct sym_resolved {
	uint64_t vaddr_1;	/* vaddr + 1; 0: empty */
	int nr;
	struct {
		const char *function, *source_file;
		uint32_t line;
		bool inlined;
	} f[RESOLVED_FRAMES];
};

static struct sym_resolved *resolved_slot(struct sym_elf *se, uint64_t vaddr)
{
	if (!se->resolved) {
		se->resolved = calloc(RESOLVED_SLOTS, sizeof(*se->resolved));
		if (!se->resolved)
			return NULL;
		se->cost += RESOLVED_SLOTS * sizeof(*se->resolved);
	}
	return &se->resolved[(vaddr * 0x9e3779b97f4a7c15ull) >> 57 &
			     (RESOLVED_SLOTS - 1)];
}

static int resolved_get(const struct sym_resolved *r, uint64_t vaddr,
			struct sym_frame *out, int max)
{
	if (!r || r->vaddr_1 != vaddr + 1 || r->nr > max)
		return -1;
	for (int i = 0; i < r->nr; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].function = r->f[i].function;
		out[i].source_file = r->f[i].source_file;
		out[i].line = r->f[i].line;
		out[i].inlined = r->f[i].inlined;
	}
	return r->nr;
}

static void resolved_put(struct sym_resolved *r, uint64_t vaddr,
			 const struct sym_frame *out, int n, int max)
{
	/* n == max may be a chain cut to the caller's room */
	if (!r || n < 0 || n > RESOLVED_FRAMES || n >= max)
		return;
	r->vaddr_1 = vaddr + 1;
	r->nr = n;
	for (int i = 0; i < n; i++) {
		r->f[i].function = out[i].function;
		r->f[i].source_file = out[i].source_file;
		r->f[i].line = out[i].line;
		r->f[i].inlined = out[i].inlined;
	}
}

int sym_cache_resolve(struct sym_cache *c, struct sym_file *f, uint64_t vaddr,
		      struct sym_frame *out, int max)
{
	struct sym_elf *se = f->se;
	struct sym_resolved *r;
	size_t before;
	int n;

	if (!se)
		return 0;
	if (!se->loaded) {
		sym_elf_load(se, f, c->ctx);
		c->loaded_bytes += se->cost;
	} else {
		lru_unlink(se);
	}
	lru_push_front(c, se);
	se->used_gen = c->gen;
	before = se->cost;
	r = resolved_slot(se, vaddr);
	n = resolved_get(r, vaddr, out, max);
	if (n < 0) {
		n = sym_elf_resolve(se, c->ctx, vaddr, out, max);
		resolved_put(r, vaddr, out, n, max);
	}
	c->loaded_bytes += se->cost - before;
	evict(c, se);
	return n;
}

size_t sym_cache_trim(struct sym_cache *c)
{
	struct sym_elf *se, *next;
	size_t kept = 0, dropped = 0;

	if (!c)
		return 0;
	/* most recently used first: the hot files keep their DWARF */
	for (se = c->lru.lru_next; se != &c->lru; se = next) {
		next = se->lru_next;
		if (!se->dwarf_tried)
			continue;
		if (se->used_gen == c->gen &&
		    kept + se->dwarf_cost <= SYM_TRIM_KEEP_BYTES) {
			kept += se->dwarf_cost;
			continue;
		}
		{
			size_t before = se->cost, freed;
			bool ok = sym_dwarf_close(se);

			/* less than dwarf_cost: the kept function index */
			freed = before > se->cost ? before - se->cost : 0;
			dropped += freed;
			c->loaded_bytes -= freed < c->loaded_bytes ?
					   freed : c->loaded_bytes;
			if (!ok)
				unload(c, se);	/* its symbol names went with the image */
		}
	}
	for (size_t i = 0; i < FILE_BUCKETS; i++) {
		for (struct sym_file *f = c->files[i]; f; f = f->hash_next) {
			/* kept DWARF would fault its pages right back in */
			if (f->se && f->se->dwarf_tried && f->se->loaded_from == f)
				continue;
			/* a copied-in image is our heap: never madvise it */
			if (!f->mem)
				sym_release_pages(f->elf);
			sym_release_pages(f->debug_elf);
		}
	}
	c->gen++;
	return dropped;
}

size_t sym_cache_bytes(const struct sym_cache *c)
{
	return c ? c->loaded_bytes + c->meta_bytes : 0;
}

uint64_t sym_cache_files_open(const struct sym_cache *c)
{
	return c ? c->files_open : 0;
}
