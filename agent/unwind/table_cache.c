// SPDX-License-Identifier: GPL-2.0-only
/*
 * The per-file unwind-table cache (table_cache.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <elfutils/libdwelf.h>

#include "ember_unwind.h"
#include "lib/clock.h"
#include "lib/safe_file.h"
#include "unwind/cfi_compile.h"
#include "unwind/table_cache.h"

void table_cache_init(struct table_cache *c, const struct ember_source_ops *ops,
		      struct ember_source *src, struct table_store *store,
		      bool verbose)
{
	memset(c, 0, sizeof(*c));
	/* libelf refuses every file until a version is set: do not rely on
	 * the symbolizer having done it */
	elf_version(EV_CURRENT);
	c->ops = ops;
	c->src = src;
	c->store = store;
	c->verbose = verbose;
	c->next_id = 1;
}

void table_cache_set_share(struct table_cache *c, struct table_share *share)
{
	c->share = share;
}

/*
 * What the replay needs of f: its table (its owner's: the bytes just
 * built, else the share's own reference, which its cap may have let
 * go: then f is left out), or that it has none. The cache keeps no
 * bytes itself: the share's cap bounds them.
 */
static void publish(struct table_cache *c, struct table_file *f)
{
	struct table_file *owner = table_cache_owner(c, f);
	struct table_ref ref = { 0 };
	struct table_blob *b = owner->blob;

	if (!c->share)
		return;
	if (owner->table_id && !b) {
		if (!table_share_get(c->share, (uint64_t)owner->dev,
				     (uint64_t)owner->ino, &ref) || !ref.blob) {
			table_share_unref(c->share, &ref);
			return;
		}
		b = ref.blob;
	}
	table_share_put(c->share, (uint64_t)f->dev, (uint64_t)f->ino,
			f->segs, f->nr_segs, owner->table_id ? b : NULL,
			owner->table_id);
	table_share_unref(c->share, &ref);
	if (owner == f) {
		table_blob_put(c->share, f->blob);
		f->blob = NULL;
	}
}

/* f's table (an alias's: its owner's, table id) was dropped */
static void unpublish(struct table_cache *c, struct table_file *f,
		      uint32_t table_id)
{
	if (c->share && table_id)
		table_share_forget(c->share, (uint64_t)f->dev, (uint64_t)f->ino,
				   table_id);
}

static bool aliased(const struct table_cache *c, uint32_t i)
{
	for (uint32_t j = 0; j < c->nr; j++)
		if (c->files[j].alias_of == i + 1)
			return true;
	return false;
}

static struct table_file *new_entry(struct table_cache *c)
{
	/* a long-running agent sees files come and go: reuse dropped slots */
	for (uint32_t i = 0; i < c->nr; i++) {
		struct table_file *f = &c->files[i];

		if (f->dropped && !f->refs && !aliased(c, i)) {
			memset(f, 0, sizeof(*f));
			return f;
		}
	}
	if (c->nr == TABLE_CACHE_MAX_FILES)
		return NULL;
	if (c->nr == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 64;
		void *p = realloc(c->files, cap * sizeof(*c->files));

		if (!p)
			return NULL;
		c->files = p;
		c->cap = cap;
	}
	memset(&c->files[c->nr], 0, sizeof(c->files[0]));
	return &c->files[c->nr++];
}

struct table_file *table_cache_find_seen(struct table_cache *c, uint64_t dev,
					 uint64_t ino, uint64_t now,
					 uint64_t max_age_ns)
{
	for (uint32_t i = 0; i < c->nr; i++) {
		struct table_file *f = &c->files[i];

		if ((uint64_t)f->dev == dev && (uint64_t)f->ino == ino &&
		    !f->dropped && f->seen_ns && now - f->seen_ns < max_age_ns)
			return f;
	}
	return NULL;
}

struct table_file *table_cache_owner(struct table_cache *c, struct table_file *f)
{
	return f->alias_of ? &c->files[f->alias_of - 1] : f;
}

/* The executable PT_LOAD segments, what biases are computed from. */
static void read_segs(Elf *elf, struct table_file *f)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return;
	for (size_t i = 0; i < n && f->nr_segs < TABLE_CACHE_MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    !(ph.p_flags & PF_X))
			continue;
		f->segs[f->nr_segs++] = (struct table_share_seg){
			ph.p_vaddr, ph.p_offset, ph.p_filesz };
	}
}

static void read_build_id(Elf *elf, struct table_file *f)
{
	const void *id = NULL;
	ssize_t len = dwelf_elf_gnu_build_id(elf, &id);

	if (len <= 0 || len > 20 || !id)
		return;
	for (ssize_t i = 0; i < len; i++)
		sprintf(f->build_id + 2 * i, "%02x", ((const uint8_t *)id)[i]);
}

static struct table_file *find_build_id(struct table_cache *c,
					const struct table_file *f)
{
	if (!f->build_id[0])
		return NULL;
	for (uint32_t i = 0; i < c->nr; i++) {
		struct table_file *o = &c->files[i];

		if (o != f && !o->alias_of && !o->dropped &&
		    !strcmp(o->build_id, f->build_id))
			return o;
	}
	return NULL;
}

/*
 * The table of f: from the persistent cache when it has one for f's
 * build-id (checked there like any table from user space), else
 * compiled from elf's CFI and kept there for the next run. 0 with a
 * malloc'ed table, or a negative errno with a sentence in err.
 */
static int get_table(struct table_cache *c, Elf *elf,
		     const struct table_file *f, const char *name, void **tab, size_t *len, struct cfi_stats *st, bool *cached,
		     char *err, size_t err_len)
{
	uint64_t t0;
	int r;

	*cached = false;
	if (c->store && f->build_id[0] &&
	    !table_store_load(c->store, f->build_id, name, tab, len)) {
		*cached = true;
		return 0;
	}
	t0 = mono_ns();
	r = cfi_compile(elf, tab, len, st, err, err_len);
	c->build_ns += mono_ns() - t0;
	if (!r) {
		c->built++;
		if (c->store && f->build_id[0])
			table_store_save(c->store, f->build_id, *tab, *len);
	}
	return r;
}

/* Get f's table and hand it to the backend. */
static void build_and_load(struct table_cache *c, Elf *elf,
			   struct table_file *f, const char *name)
{
	struct cfi_stats st = { 0 };
	char err[256] = "";
	void *tab = NULL;
	size_t len = 0;
	uint64_t t0 = mono_ns();
	bool cached;
	int r;

	r = get_table(c, elf, f, name, &tab, &len, &st, &cached, err,
		      sizeof(err));
	if (!r) {
		uint32_t id = c->next_id++;

		r = c->ops->unwind_load(c->src, id, tab, len, err, sizeof(err));
		if (!r) {
			f->blob = table_blob_new(c->share, tab, len);
			f->table_id = id;
			f->bytes = len;
			c->loaded++;
			c->live++;
			c->bytes += len;
		}
	}
	free(tab);
	if (r) {
		c->failed++;
		if (c->verbose || r != -ENOENT)
			fprintf(stderr, "ember: no unwind table for %s: %s\n",
				name, err[0] ? err : strerror(-r));
	} else if (c->verbose && cached) {
		fprintf(stderr, "ember: unwind table for %s: %zu bytes, from the "
			"cache in %.2f ms\n", name, len, (mono_ns() - t0) / 1e6);
	} else if (c->verbose) {
		fprintf(stderr, "ember: unwind table for %s: %u rows, %u rules, "
			"%zu bytes, built in %.2f ms\n", name, st.rows, st.rules,
			len, (mono_ns() - t0) / 1e6);
	}
}

/*
 * A stripped file without CFI of its own: its separate debug file, found
 * by build-id under /usr/lib/debug, may hold .debug_frame (same
 * addresses). The tree is root's, so its links are followed (Fedora's
 * .build-id entries are links), but the file must be root's (or ours), a
 * regular file within the cap and not sparse (safe_open_at()); it is
 * examined before it is opened, so a device or FIFO there is never opened.
 */
static Elf *open_debug_file(const struct table_file *f, int *fd)
{
	const struct safe_rules rules = {
		.max_bytes = TABLE_FILE_MAX_BYTES,
		.owners = { geteuid(), SAFE_ANY_OWNER },
		.flags = SAFE_FOLLOW,
	};
	const char *why;
	char path[128];
	Elf *elf;

	*fd = -1;
	if (strlen(f->build_id) < 3)
		return NULL;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug",
		 f->build_id, f->build_id + 2);
	*fd = safe_open_at(NULL, path, &rules, NULL, &why);
	if (*fd < 0) {
		safe_warn("debug file", NULL, path, why);
		return NULL;
	}
	elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		close(*fd);
		*fd = -1;
	}
	return elf;
}

static bool has_cfi_section(Elf *elf)
{
	return cfi_find_section(elf, ".eh_frame") ||
	       cfi_find_section(elf, ".debug_frame");
}

/*
 * Tables are for processes of this machine: the file of another (an
 * aarch64 program run by qemu-user here, an i386 one) gets none, and its
 * mappings frame-pointer steps, as the backend unwinds this machine's
 * registers only.
 */
static bool native_machine(Elf *elf)
{
#if defined(__aarch64__)
	const unsigned int native = EM_AARCH64;
#else
	const unsigned int native = EM_X86_64;
#endif
	GElf_Ehdr eh;

	return gelf_getehdr(elf, &eh) && eh.e_machine == native;
}

static struct table_file *from_elf(struct table_cache *c, Elf *elf,
				   struct table_file *f, const char *name)
{
	struct table_file *same;
	Elf *dbg;
	int fd;

	if (!native_machine(elf))
		return f;	/* no table, remembered as such */
	read_segs(elf, f);
	read_build_id(elf, f);
	same = find_build_id(c, f);
	if (same && same->table_id) {
		f->alias_of = (uint32_t)(same - c->files) + 1;
		return f;
	}
	if (!has_cfi_section(elf) && (dbg = open_debug_file(f, &fd))) {
		build_and_load(c, dbg, f, name);
		elf_end(dbg);
		close(fd);
		return f;
	}
	build_and_load(c, elf, f, name);
	return f;
}

int table_file_build(int fd, struct table_file *f, void **tab, size_t *len)
{
	struct cfi_stats st = { 0 };
	char err[256];
	Elf *elf, *dbg = NULL, *src;
	int dfd = -1, r;

	*tab = NULL;
	*len = 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return -EINVAL;
	}
	if (!native_machine(elf)) {
		elf_end(elf);
		return 1;
	}
	read_segs(elf, f);
	read_build_id(elf, f);
	src = elf;
	if (!has_cfi_section(elf) && (dbg = open_debug_file(f, &dfd)))
		src = dbg;
	r = cfi_compile(src, tab, len, &st, err, sizeof(err));
	if (dbg) {
		elf_end(dbg);
		close(dfd);
	}
	elf_end(elf);
	return r == -ENOENT ? 1 : r;
}

struct table_file *table_cache_find(struct table_cache *c,
				    const struct stat *st)
{
	int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 +
			st->st_mtim.tv_nsec;

	for (uint32_t i = 0; i < c->nr; i++) {
		struct table_file *f = &c->files[i];

		if (f->dev == st->st_dev && f->ino == st->st_ino &&
		    f->size == st->st_size && f->mtime_ns == mtime && !f->dropped)
			return f;
	}
	return NULL;
}

/* A new entry's table, if the file is a regular ELF file of this machine. */
static void fill_entry(struct table_cache *c, int fd, const struct stat *st,
		       struct table_file *f, const char *name)
{
	Elf *elf;

	if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size > TABLE_FILE_MAX_BYTES)
		return;	/* no table, remembered as such */
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return;
	if (elf_kind(elf) == ELF_K_ELF)
		from_elf(c, elf, f, name);
	elf_end(elf);
}

struct table_file *table_cache_get(struct table_cache *c, int fd,
				   const struct stat *st, const char *name)
{
	int64_t mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 +
			st->st_mtim.tv_nsec;
	struct table_file *f = table_cache_find(c, st);

	if (f)
		return f;
	f = new_entry(c);
	if (!f)
		return NULL;
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->size = st->st_size;
	f->mtime_ns = mtime;
	fill_entry(c, fd, st, f, name);
	publish(c, f);
	return f;
}

struct table_file *table_cache_vdso(struct table_cache *c)
{
	static const char key[] = "[vdso]";
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	struct table_file *f;
	Elf *elf;

	for (uint32_t i = 0; i < c->nr; i++)
		if (c->files[i].ino == 0 && c->files[i].dev == 0 &&
		    !c->files[i].dropped && c->files[i].size == (off_t)base)
			return &c->files[i];
	f = new_entry(c);
	if (!f)
		return NULL;
	f->size = (off_t)base;	/* the key of the vDSO entry */
	if (!base)
		return f;
	/*
	 * The vDSO is at most a few pages; its ELF header gives the extent
	 * (section headers come last in the image).
	 */
	{
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
		size_t size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;

		if (size > (1U << 20))
			return f;
		elf = elf_memory((char *)base, size);
	}
	if (!elf)
		return f;
	from_elf(c, elf, f, key);
	elf_end(elf);
	publish(c, f);	/* dev 0, ino 0: the vDSO's key in the share */
	return f;
}

bool table_file_bias(const struct table_file *f, uint64_t start,
		     uint64_t pgoff, uint64_t *bias)
{
	return table_segs_bias(f->segs, f->nr_segs, start, pgoff, bias);
}

void table_cache_sweep(struct table_cache *c, uint64_t now_ns, uint64_t grace_ns)
{
	for (uint32_t i = 0; i < c->nr; i++) {
		struct table_file *f = &c->files[i];

		if (!f->table_id || f->refs || f->dropped ||
		    !f->idle_since_ns || now_ns - f->idle_since_ns < grace_ns)
			continue;
		/* aliases still pointing here keep it */
		bool used = false;

		for (uint32_t j = 0; j < c->nr && !used; j++)
			used = c->files[j].alias_of == i + 1 && c->files[j].refs;
		if (used)
			continue;
		c->ops->unwind_drop(c->src, f->table_id);
		for (uint32_t j = 0; j < c->nr; j++)
			if (c->files[j].alias_of == i + 1) {
				c->files[j].dropped = true;
				unpublish(c, &c->files[j], f->table_id);
			}
		unpublish(c, f, f->table_id);
		f->dropped = true;
		f->table_id = 0;
		c->dropped++;
		c->live--;
		c->bytes -= f->bytes;
	}
}

void table_cache_free(struct table_cache *c, bool drop_tables)
{
	for (uint32_t i = 0; i < c->nr && drop_tables; i++)
		if (c->files[i].table_id && !c->files[i].dropped)
			c->ops->unwind_drop(c->src, c->files[i].table_id);
	free(c->files);
	memset(c, 0, sizeof(*c));
}
