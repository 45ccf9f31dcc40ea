/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one hash and hash index the agent's interning tables share: FNV-1a 64
 * over a key's bytes, and an open-addressing index (linear probing, power of
 * two, load factor under 1/2) from a key's hash to an entry number.
 *
 * The index stores no keys: each caller keeps its entries in its own array
 * (entry numbers are the caller's, usually insertion order) and compares
 * keys through a callback, because every table stores its keys differently.
 * The index's layout therefore never shows in any output.
 */
#ifndef EMBER_HASH_INDEX_H
#define EMBER_HASH_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HASH_BYTES_INIT 0xcbf29ce484222325ULL

/*
 * FNV-1a 64: short keys, and no adversary can make a lookup worse than a
 * probe run (keys come from our own profile and symbol tables).
 */
uint64_t hash_bytes(const void *data, size_t len);
/* Continue hash h (HASH_BYTES_INIT or an earlier result) over more bytes. */
uint64_t hash_bytes_more(uint64_t h, const void *data, size_t len);

/* Zero-initialise; the first insertion allocates. */
struct hash_index {
	uint64_t *hash;
	uint32_t *slot;		/* entry number + 1, 0 = empty */
	size_t cap, used;
};

/* Whether entry holds key. */
typedef bool (*hash_index_eq_fn)(void *ctx, uint32_t entry, const void *key);

/* The entry whose hash is h and eq() accepts key, or -1 when none. */
int64_t hash_index_find(const struct hash_index *ix, uint64_t h, const void *key,
			hash_index_eq_fn eq, void *ctx);
/* Record entry under h (its key must not be there yet): 0 or -ENOMEM. */
int hash_index_add(struct hash_index *ix, uint64_t h, uint32_t entry);
/*
 * Find key; if absent, record new_entry for it, which the caller must then
 * create. Returns the entry found (or new_entry when added), or -ENOMEM.
 */
int64_t hash_index_get(struct hash_index *ix, uint64_t h, const void *key,
		       hash_index_eq_fn eq, void *ctx, uint32_t new_entry);
/* Heap bytes the index holds. */
size_t hash_index_bytes(const struct hash_index *ix);
void hash_index_free(struct hash_index *ix);

#endif /* EMBER_HASH_INDEX_H */
