// SPDX-License-Identifier: GPL-2.0-only
/* FNV-1a and the open-addressing hash index (see hash_index.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hash_index.h"

#define HASH_INDEX_MIN_CAP 1024

uint64_t hash_bytes_more(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

uint64_t hash_bytes(const void *data, size_t len)
{
	return hash_bytes_more(HASH_BYTES_INIT, data, len);
}

/* The slot where h's probe run ends (at key's entry, or empty). */
static size_t probe_end(const struct hash_index *ix, uint64_t h, const void *key,
			hash_index_eq_fn eq, void *ctx)
{
	size_t mask = ix->cap - 1, j;

	for (j = h & mask; ix->slot[j]; j = (j + 1) & mask)
		if (ix->hash[j] == h && eq && eq(ctx, ix->slot[j] - 1, key))
			break;
	return j;
}

static int grow(struct hash_index *ix)
{
	struct hash_index n = {
		.cap = ix->cap ? ix->cap * 2 : HASH_INDEX_MIN_CAP,
		.used = ix->used,
	};

	n.hash = calloc(n.cap, sizeof(*n.hash));
	n.slot = calloc(n.cap, sizeof(*n.slot));
	if (!n.hash || !n.slot) {
		hash_index_free(&n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ix->cap; i++) {
		size_t j;

		if (!ix->slot[i])
			continue;
		j = probe_end(&n, ix->hash[i], NULL, NULL, NULL);
		n.hash[j] = ix->hash[i];
		n.slot[j] = ix->slot[i];
	}
	hash_index_free(ix);
	*ix = n;
	return 0;
}

int64_t hash_index_find(const struct hash_index *ix, uint64_t h, const void *key,
			hash_index_eq_fn eq, void *ctx)
{
	size_t j;

	if (!ix->cap)
		return -1;
	j = probe_end(ix, h, key, eq, ctx);
	return ix->slot[j] ? (int64_t)ix->slot[j] - 1 : -1;
}

int hash_index_add(struct hash_index *ix, uint64_t h, uint32_t entry)
{
	size_t j;

	if (entry == UINT32_MAX)
		return -ENOMEM;		/* slot holds entry + 1 */
	/* Keep the load factor under 1/2 so probe runs stay short. */
	if ((ix->used + 1) * 2 > ix->cap && grow(ix))
		return -ENOMEM;
	j = probe_end(ix, h, NULL, NULL, NULL);
	ix->hash[j] = h;
	ix->slot[j] = entry + 1;
	ix->used++;
	return 0;
}

int64_t hash_index_get(struct hash_index *ix, uint64_t h, const void *key,
		       hash_index_eq_fn eq, void *ctx, uint32_t new_entry)
{
	int64_t found = hash_index_find(ix, h, key, eq, ctx);

	if (found >= 0)
		return found;
	if (hash_index_add(ix, h, new_entry))
		return -ENOMEM;
	return new_entry;
}

size_t hash_index_bytes(const struct hash_index *ix)
{
	return ix->cap * (sizeof(*ix->hash) + sizeof(*ix->slot));
}

void hash_index_free(struct hash_index *ix)
{
	free(ix->hash);
	free(ix->slot);
	memset(ix, 0, sizeof(*ix));
}
