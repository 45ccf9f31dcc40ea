/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One unwind table per file, loaded into the backend once and shared by
 * every process mapping the file. Files are recognised by device, inode,
 * size and mtime; two files with one GNU build-id (the same library in
 * two containers) share one table. The agent keeps only what binding
 * needs (the table id and the file's executable segments): the table's
 * bytes live in the backend.
 *
 * Used only by the unwind worker thread: no locking.
 */
#ifndef EMBER_TABLE_CACHE_H
#define EMBER_TABLE_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include "source/source.h"
#include "unwind/table_share.h"
#include "unwind/table_store.h"

/* ELF files bigger than this are not read (libelf maps them; still cap). */
#define TABLE_FILE_MAX_BYTES	(4ULL << 30)

#define TABLE_CACHE_MAX_FILES	4096
#define TABLE_CACHE_MAX_SEGS	TABLE_SHARE_MAX_SEGS

struct table_file {
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;
	char build_id[41];		/* hex, "" when none */
	uint32_t table_id;		/* 0: no table (no CFI, error) */
	uint32_t alias_of;		/* index + 1 of the entry with the table */
	uint32_t refs;			/* mappings bound to it now */
	uint64_t idle_since_ns;		/* when refs fell to 0 */
	uint64_t seen_ns;		/* a stat() of a mapping last matched it */
	uint64_t bytes;
	struct table_share_seg segs[TABLE_CACHE_MAX_SEGS];
	/* its table's bytes while it is published (built just now), or NULL */
	struct table_blob *blob;
	uint32_t nr_segs;
	bool dropped;			/* table dropped: rebuild if seen again */
};

struct table_cache {
	const struct ember_source_ops *ops;
	struct ember_source *src;
	struct table_store *store;	/* the persistent cache, or NULL */
	struct table_share *share;	/* tables for the stack replay, or NULL */
	struct table_file *files;
	uint32_t nr, cap;
	uint32_t next_id;
	bool verbose;
	/* counters, see struct unwind_service_stats; built: compiled from
	 * CFI (loaded also counts tables from the persistent cache) */
	uint64_t loaded, built, failed, dropped, bytes, build_ns;
	uint32_t live;
};

/*
 * store: the persistent cache tables of files with a build-id are loaded
 * from and kept in (not owned: closed by the caller), or NULL.
 */
void table_cache_init(struct table_cache *c, const struct ember_source_ops *ops,
		      struct ember_source *src, struct table_store *store,
		      bool verbose);
/*
 * The entry for the open file fd (named name for messages), building and
 * loading its table the first time. NULL only when the cache is full or
 * out of memory; an entry without a table (table_id 0) is a valid answer.
 */
struct table_file *table_cache_get(struct table_cache *c, int fd,
				   const struct stat *st, const char *name);
/*
 * The entry already made for the file st describes (same device, inode,
 * size and modification time), or NULL: the cheap probe before an open.
 */
struct table_file *table_cache_find(struct table_cache *c,
				    const struct stat *st);
/*
 * Publish every file's table (or its lack of one) to share, for the
 * stack replay (table_share.h); NULL: none. Before the first get.
 */
void table_cache_set_share(struct table_cache *c, struct table_share *share);
/*
 * The entry for device dev, inode ino (as the kernel's mapping records
 * name a file) whose size and mtime a stat() matched at most max_age_ns
 * before now, or NULL: a binding then need not stat the mapping again.
 */
struct table_file *table_cache_find_seen(struct table_cache *c, uint64_t dev,
					 uint64_t ino, uint64_t now,
					 uint64_t max_age_ns);
/* The entry holding the table for f (f itself, or what it aliases). */
struct table_file *table_cache_owner(struct table_cache *c, struct table_file *f);
/* The vDSO of this kernel, built from the agent's own mapping. */
struct table_file *table_cache_vdso(struct table_cache *c);
/*
 * Bias of a mapping at start with file offset pgoff: file vaddr = pc -
 * bias. false when no executable segment holds pgoff.
 */
bool table_file_bias(const struct table_file *f, uint64_t start,
		     uint64_t pgoff, uint64_t *bias);
/*
 * The table of the open ELF file fd as the cache would build it, without
 * the cache, the persistent store or the backend (the stack replay's
 * thread, for a file the worker never saw): f gets the segments and
 * build-id. 0 with *tab (malloc'ed) and *len; 1: the file has no table
 * (another machine's, no CFI: frame-pointer steps); < 0: an error.
 */
int table_file_build(int fd, struct table_file *f, void **tab, size_t *len);
/* Drop tables unused for at least grace_ns. */
void table_cache_sweep(struct table_cache *c, uint64_t now_ns, uint64_t grace_ns);
/* Free the cache; drop_tables: also unload its tables from the backend. */
void table_cache_free(struct table_cache *c, bool drop_tables);

#endif
