/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The unwind tables the worker made, shared read-only with the stack
 * replay (stack_replay.h) on the consuming thread: the replay unwinds a
 * copy with the same tables and steps the backend would have used had
 * the process been bound (copy_walk.h), in microseconds, where libdwfl
 * set up a session per process (~300 us on the host, 6-10 ms in a TCG
 * guest) for the same answer.
 *
 * Files are known by device and inode, as a process's maps name them
 * (the kernel's mapping records, an exec snapshot, /proc/PID/maps); the
 * vDSO by dev 0, ino 0. An entry may have no table (a file without CFI:
 * frame-pointer steps, as in the backend). Tables are refcounted: one
 * dropped or evicted while the replay walks with it stays until the
 * replay lets go. The bytes kept are capped (the backend holds the
 * tables too): past the cap the least recently used go, and a replay
 * that needs one then falls back to libdwfl.
 *
 * Any thread; one mutex, held for lookups and puts only.
 */
#ifndef EMBER_TABLE_SHARE_H
#define EMBER_TABLE_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "uapi/ember.h"

#define TABLE_SHARE_DEFAULT_BYTES	(1u << 20)
#define TABLE_SHARE_MAX_SEGS		8

struct table_share;
struct table_blob;

struct table_share_seg {
	uint64_t vaddr, offset, filesz;
};

/* What a file's entry holds; table NULL: the file has no table. */
struct table_ref {
	struct table_blob *blob;	/* the reference to let go of */
	const struct ember_unwind_table *table;
	struct table_share_seg segs[TABLE_SHARE_MAX_SEGS];
	uint32_t nr_segs;
};

/* max_bytes: table bytes kept at once (0: TABLE_SHARE_DEFAULT_BYTES). */
struct table_share *table_share_new(size_t max_bytes);
void table_share_free(struct table_share *ts);
/*
 * A table for its bytes (a checked table, copied), or NULL (no memory,
 * or bigger than the cap). The caller's reference.
 */
struct table_blob *table_blob_new(struct table_share *ts, const void *table,
				  size_t len);
/* Let go of a reference (NULL: nothing). */
void table_blob_put(struct table_share *ts, struct table_blob *b);
/*
 * The file dev/ino has table b (NULL: none) and executable segments
 * segs: a new reference to b is kept. tag names the table for
 * table_share_forget() (the worker's table id). Replaces what was there.
 */
void table_share_put(struct table_share *ts, uint64_t dev, uint64_t ino,
		     const struct table_share_seg *segs, uint32_t nr_segs,
		     struct table_blob *b, uint32_t tag);
/*
 * Forget the file if its entry holds the table tagged tag (the worker
 * dropped that table; a newer entry for the same inode, a file changed
 * in place, stays).
 */
void table_share_forget(struct table_share *ts, uint64_t dev, uint64_t ino,
			uint32_t tag);
/*
 * The file's entry into *ref (a reference: table_share_unref() it);
 * false when the share does not know the file.
 */
bool table_share_get(struct table_share *ts, uint64_t dev, uint64_t ino,
		     struct table_ref *ref);
void table_share_unref(struct table_share *ts, struct table_ref *ref);
/*
 * Bias of a mapping at start with file offset pgoff in a file with these
 * executable segments: file vaddr = pc - bias. false when none holds
 * pgoff.
 */
bool table_segs_bias(const struct table_share_seg *segs, uint32_t nr_segs,
		     uint64_t start, uint64_t pgoff, uint64_t *bias);
/*
 * The same by ref's segments:
 * file vaddr = pc - bias. false when no executable segment holds pgoff.
 */
bool table_ref_bias(const struct table_ref *ref, uint64_t start,
		    uint64_t pgoff, uint64_t *bias);

struct table_share_stats {
	uint64_t bytes;		/* table bytes held now */
	uint32_t files;		/* entries now */
	uint64_t evicted;	/* tables let go for the cap */
};
void table_share_get_stats(struct table_share *ts, struct table_share_stats *st);

#endif
