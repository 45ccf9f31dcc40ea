// SPDX-License-Identifier: GPL-2.0-only
/*
 * String interning for the symbolizer: every function, file and module name
 * handed out in a sym_frame is stored once here, so equal strings have
 * equal pointers (output writers compare and hash pointers) and names stay
 * valid after the ELF file they came from is evicted from the cache.
 *
 * Strings live in large chunks (no per-string malloc) and are found
 * through the shared hash index (hash_index.h) over an array of pointers.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hash_index.h"
#include "symbolize/symbolize_internal.h"

#define CHUNK_SIZE (64 * 1024)

struct chunk {
	struct chunk *next;
	size_t used, size;
	char data[];
};

struct sym_strings {
	const char **strs;	/* entry number -> string */
	size_t count, cap;
	struct hash_index index;	/* string -> entry number */
	struct chunk *chunks;
	size_t bytes;		/* chunks and *this; see sym_strings_bytes() */
};

struct sym_strings *sym_strings_new(void)
{
	struct sym_strings *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->bytes = sizeof(*t);
	return t;
}

void sym_strings_free(struct sym_strings *t)
{
	if (!t)
		return;
	while (t->chunks) {
		struct chunk *c = t->chunks;

		t->chunks = c->next;
		free(c);
	}
	free(t->strs);
	hash_index_free(&t->index);
	free(t);
}

struct str_key {
	const char *str;
	size_t len;
};

static bool str_eq(void *ctx, uint32_t entry, const void *key)
{
	const char *s = ((const struct sym_strings *)ctx)->strs[entry];
	const struct str_key *k = key;

	return strncmp(s, k->str, k->len) == 0 && s[k->len] == '\0';
}

/* Room for one more string pointer. */
static bool grow_strs(struct sym_strings *t)
{
	size_t n = t->cap ? t->cap * 2 : 1024;
	const char **strs;

	if (t->count < t->cap)
		return true;
	strs = realloc(t->strs, n * sizeof(*strs));
	if (!strs)
		return false;
	t->strs = strs;
	t->cap = n;
	return true;
}

static char *store(struct sym_strings *t, const char *str, size_t len)
{
	struct chunk *c = t->chunks;
	char *p;

	if (!c || c->size - c->used < len + 1) {
		size_t size = len + 1 > CHUNK_SIZE ? len + 1 : CHUNK_SIZE;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		c->used = 0;
		/* A big string gets its own chunk behind the current one. */
		if (t->chunks && size > CHUNK_SIZE) {
			c->next = t->chunks->next;
			t->chunks->next = c;
		} else {
			c->next = t->chunks;
			t->chunks = c;
		}
		t->bytes += sizeof(*c) + size;
	}
	p = c->data + c->used;
	memcpy(p, str, len);
	p[len] = '\0';
	c->used += len + 1;
	return p;
}

const char *sym_intern_n(struct sym_strings *t, const char *str, size_t len)
{
	struct str_key key = { str, len };
	uint64_t h;
	int64_t found;
	char *p;

	if (!t || !str)
		return NULL;
	h = hash_bytes(str, len);
	found = hash_index_find(&t->index, h, &key, str_eq, t);
	if (found >= 0)
		return t->strs[found];
	if (t->count >= UINT32_MAX - 1 || !grow_strs(t))
		return NULL;
	/*
	 * Stored before indexed, so the index never names an entry without a
	 * string; when indexing fails the stored copy is merely unused.
	 */
	p = store(t, str, len);
	if (!p || hash_index_add(&t->index, h, t->count))
		return NULL;
	t->strs[t->count++] = p;
	return p;
}

const char *sym_intern(struct sym_strings *t, const char *str)
{
	return str ? sym_intern_n(t, str, strlen(str)) : NULL;
}

size_t sym_strings_bytes(const struct sym_strings *t)
{
	if (!t)
		return 0;
	return t->bytes + t->cap * sizeof(*t->strs) + hash_index_bytes(&t->index);
}

size_t sym_heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}
