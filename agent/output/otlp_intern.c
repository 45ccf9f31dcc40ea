// SPDX-License-Identifier: GPL-2.0-only
/* Arena and intern table for the OTLP encoder (see otlp_intern.h). */
#include <stdlib.h>
#include <string.h>
#include "lib/hash_index.h"
#include "output/otlp_intern.h"
#include "lib/utf8.h"

struct otlp_arena_chunk {
	struct otlp_arena_chunk *next;
	size_t used, size;
	_Alignas(16) unsigned char data[];
};

#define ARENA_CHUNK (64 * 1024)

void *otlp_arena_alloc(struct otlp_arena *a, size_t size)
{
	struct otlp_arena_chunk *c = a->head;
	void *p;

	size = (size + 15) & ~(size_t)15;
	if (!c || c->size - c->used < size) {
		size_t csize = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->next = a->head;
		c->used = 0;
		c->size = csize;
		a->head = c;
		a->bytes += csize;
	}
	p = c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

/* Every arena string ends up in a proto3 string field: see utf8.h. */
char *otlp_arena_strdup(struct otlp_arena *a, const char *s)
{
	char *owned;
	const char *v = utf8_sanitize(s, &owned);
	size_t n;
	char *d;

	if (!v)
		return NULL;
	n = strlen(v) + 1;
	d = otlp_arena_alloc(a, n);
	if (d)
		memcpy(d, v, n);
	free(owned);
	return d;
}

void otlp_arena_free(struct otlp_arena *a)
{
	struct otlp_arena_chunk *c = a->head, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->bytes = 0;
}

struct otlp_intern_entry {
	const void *key;
	size_t len;
};

struct intern_key {
	const void *data;
	size_t len;
};

static bool entry_eq(void *ctx, uint32_t entry, const void *key)
{
	const struct otlp_intern_entry *e = &((struct otlp_intern *)ctx)->entries[entry];
	const struct intern_key *k = key;

	return e->len == k->len && !memcmp(e->key, k->data, k->len);
}

int64_t otlp_intern(struct otlp_intern *t, const void *key, size_t len,
		    bool *is_new)
{
	const struct intern_key k = { key, len };
	uint64_t h = hash_bytes(key, len);
	struct otlp_intern_entry *e;
	int64_t found;
	void *copy;

	*is_new = false;
	found = hash_index_find(&t->index, h, &k, entry_eq, t);
	if (found >= 0)
		return found;
	if (t->nr >= INT32_MAX - 1)
		return -1;	/* OTLP indices are int32 */
	if (t->nr == t->alloc) {
		size_t n = t->alloc ? t->alloc * 2 : 256;
		struct otlp_intern_entry *ne = realloc(t->entries, n * sizeof(*ne));

		if (!ne)
			return -1;
		t->entries = ne;
		t->alloc = n;
	}
	copy = otlp_arena_alloc(&t->keys, len ? len : 1);
	if (!copy || hash_index_add(&t->index, h, (uint32_t)t->nr))
		return -1;
	memcpy(copy, key, len);
	e = &t->entries[t->nr];
	e->key = copy;
	e->len = len;
	*is_new = true;
	return (int64_t)t->nr++;
}

int64_t otlp_intern_str(struct otlp_intern *t, const char *s, bool *is_new)
{
	char *owned;
	const char *v;
	int64_t idx;

	*is_new = false;
	/*
	 * Sanitise before interning: the table then holds only valid UTF-8,
	 * and names that differ only in their invalid bytes share one entry.
	 */
	v = utf8_sanitize(s, &owned);
	if (!v)
		return -1;
	idx = otlp_intern(t, v, strlen(v) + 1, is_new);
	free(owned);
	return idx;
}

const void *otlp_intern_key(const struct otlp_intern *t, size_t idx)
{
	return idx < t->nr ? t->entries[idx].key : NULL;
}

void otlp_intern_free(struct otlp_intern *t)
{
	otlp_arena_free(&t->keys);
	free(t->entries);
	hash_index_free(&t->index);
	memset(t, 0, sizeof(*t));
}
