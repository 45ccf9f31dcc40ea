// SPDX-License-Identifier: GPL-2.0-only
/*
 * String interning for the symbolizer: every function, file and module name
 * handed out in a sym_frame is stored once here, so equal strings have
 * equal pointers (output writers compare and hash pointers) and names stay
 * valid after the ELF file they came from is evicted from the cache.
 *
 * Strings live in large chunks (no per-string malloc) and are found
 * through an open-addressing hash table of pointers.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "sym_internal.h"

#define CHUNK_SIZE (64 * 1024)

struct chunk {
	struct chunk *next;
	size_t used, size;
	char data[];
};

struct sym_strings {
	const char **slots;	/* open addressing, power of two */
	uint32_t *hashes;
	size_t nr_slots, count;
	struct chunk *chunks;
	size_t bytes;
};

static uint32_t hash_bytes(const char *s, size_t len)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

struct sym_strings *sym_strings_new(void)
{
	struct sym_strings *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nr_slots = 1024;
	t->slots = calloc(t->nr_slots, sizeof(*t->slots));
	t->hashes = calloc(t->nr_slots, sizeof(*t->hashes));
	if (!t->slots || !t->hashes) {
		sym_strings_free(t);
		return NULL;
	}
	t->bytes = sizeof(*t) + t->nr_slots * (sizeof(*t->slots) + 4);
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
	free(t->slots);
	free(t->hashes);
	free(t);
}

static bool grow(struct sym_strings *t)
{
	size_t n = t->nr_slots * 2;
	const char **slots = calloc(n, sizeof(*slots));
	uint32_t *hashes = calloc(n, sizeof(*hashes));

	if (!slots || !hashes) {
		free(slots);
		free(hashes);
		return false;
	}
	for (size_t i = 0; i < t->nr_slots; i++) {
		size_t j;

		if (!t->slots[i])
			continue;
		for (j = t->hashes[i] & (n - 1); slots[j]; j = (j + 1) & (n - 1))
			;
		slots[j] = t->slots[i];
		hashes[j] = t->hashes[i];
	}
	free(t->slots);
	free(t->hashes);
	t->bytes += (n - t->nr_slots) * (sizeof(*slots) + sizeof(*hashes));
	t->slots = slots;
	t->hashes = hashes;
	t->nr_slots = n;
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
	uint32_t h;
	size_t i;
	char *p;

	if (!t || !str)
		return NULL;
	h = hash_bytes(str, len);
	for (i = h & (t->nr_slots - 1); t->slots[i]; i = (i + 1) & (t->nr_slots - 1)) {
		if (t->hashes[i] == h && strncmp(t->slots[i], str, len) == 0 &&
		    t->slots[i][len] == '\0')
			return t->slots[i];
	}
	if ((t->count + 1) * 4 > t->nr_slots * 3) {
		if (!grow(t))
			return NULL;
		for (i = h & (t->nr_slots - 1); t->slots[i];
		     i = (i + 1) & (t->nr_slots - 1))
			;
	}
	p = store(t, str, len);
	if (!p)
		return NULL;
	t->slots[i] = p;
	t->hashes[i] = h;
	t->count++;
	return p;
}

const char *sym_intern(struct sym_strings *t, const char *str)
{
	return str ? sym_intern_n(t, str, strlen(str)) : NULL;
}

size_t sym_strings_bytes(const struct sym_strings *t)
{
	return t ? t->bytes : 0;
}

size_t sym_heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}
