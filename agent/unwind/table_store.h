/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The persistent unwind-table cache: tables built by an earlier run, a
 * restarted daemon or another boot, kept in a root-only directory (one
 * file per GNU build-id, "<build-id>.tab"), so that libc's and python's
 * tables are compiled once, not once per process and per boot.
 *
 * The directory is ember's own: every component of its path a real
 * directory (no symbolic link), the last one owned by the agent's euid
 * and closed to group and others (0700); it is created so when missing.
 * Anything else costs one warning and the agent runs without the cache.
 *
 * An entry is a header (magic, table format, compiler version, ember's
 * version, the build-id, the length and a 64-bit checksum of the table)
 * and the table. A loaded entry is treated like any table from user
 * space: size-capped read, header, checksum, then
 * ember_unwind_table_check() before the backend sees it. A bad one is
 * warned about, removed and rebuilt; a stale one (other format or
 * compiler version) is rebuilt silently. A failed write (full disk,
 * quota) leaves nothing behind and costs one warning, rate-limited.
 * The directory is bounded in bytes: a store that would go over the cap
 * evicts the least recently used entries (mtime, touched at each load).
 *
 * Used only by the unwind worker thread: no locking.
 */
#ifndef EMBER_TABLE_STORE_H
#define EMBER_TABLE_STORE_H

#include <stddef.h>
#include <stdint.h>

#define TABLE_STORE_DEFAULT_DIR		"/var/cache/ember/tables"
#define TABLE_STORE_DEFAULT_MAX		(256ULL << 20)
/* entries looked at when the directory is opened (and kept track of) */
#define TABLE_STORE_MAX_ENTRIES		16384
/* a failed write is warned about at most this often */
#define TABLE_STORE_WARN_EVERY_S	600

#define TABLE_STORE_MAGIC		"EMBERTAB"

/* The entry file: this header, then blob_len bytes of table. */
struct table_store_hdr {
	char magic[8];			/* TABLE_STORE_MAGIC, no NUL */
	uint32_t hdr_size;		/* sizeof(struct table_store_hdr) */
	uint32_t format;		/* EMBER_UNWIND_VERSION */
	uint32_t compiler;		/* CFI_COMPILE_VERSION */
	uint32_t reserved;		/* 0 */
	char ember_version[32];		/* who wrote it (information only) */
	char build_id[48];		/* hex, NUL-padded */
	uint64_t blob_len;
	uint64_t checksum;		/* table_store_checksum() of the blob */
};

struct table_store_stats {
	uint64_t hits;			/* tables loaded from the cache */
	uint64_t misses;		/* not there (or stale): built */
	uint64_t stores;		/* tables written */
	uint64_t rejected;		/* entries corrupt or hostile: removed */
	uint64_t write_failures;	/* full disk, quota, any write error */
	uint64_t evicted;		/* entries removed for the size cap */
	uint64_t load_ns;		/* time reading and checking entries */
	uint64_t bytes;			/* the directory's entries now */
	uint32_t entries;
};

struct table_store;

/*
 * Open (creating it 0700 if missing, parents too) the cache directory
 * dir, bounded to max_bytes (0: TABLE_STORE_DEFAULT_MAX). NULL after one
 * warning on stderr saying why when it cannot or must not be used.
 */
struct table_store *table_store_open(const char *dir, uint64_t max_bytes);
/*
 * The table stored for build_id (lowercase hex): 0 with *blob (malloc'ed,
 * passed ember_unwind_table_check()) and *len; -ENOENT when there is none
 * or it is stale; -EBADMSG when the entry was bad (warned about, named
 * by name, and removed).
 */
int table_store_load(struct table_store *ts, const char *build_id,
		     const char *name, void **blob, size_t *len);
/* Keep blob (a checked table) for build_id; failures only warn. */
void table_store_save(struct table_store *ts, const char *build_id,
		      const void *blob, size_t len);
void table_store_get_stats(const struct table_store *ts,
			   struct table_store_stats *st);
void table_store_close(struct table_store *ts);
/*
 * What dir holds (ember status): its entries and their bytes, read
 * without creating or changing anything, at most TABLE_STORE_MAX_ENTRIES
 * looked at. -errno when it cannot be read (-ENOENT: not made yet).
 */
int table_store_usage(const char *dir, uint32_t *entries, uint64_t *bytes);

/* The checksum of the header: 64 bits, not cryptographic (see .c). */
uint64_t table_store_checksum(const void *p, size_t len);

#endif
