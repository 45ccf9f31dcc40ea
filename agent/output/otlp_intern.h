/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers for building an OTLP ProfilesDictionary: a bump arena that owns
 * every message of one request (freed at once), and an intern table that
 * gives each distinct key (a string, a function tuple, a stack...) one
 * stable index, so every dictionary table holds each entry exactly once.
 */
#ifndef EMBER_OTLP_INTERN_H
#define EMBER_OTLP_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/hash_index.h"

struct otlp_arena {
	struct otlp_arena_chunk *head;
	size_t bytes;			/* total allocated, for bounds */
};

/* Zeroed, 16-byte aligned memory; NULL when out of memory. */
void *otlp_arena_alloc(struct otlp_arena *a, size_t size);
/* A copy of s that is valid UTF-8 (see utf8.h); NULL when out of memory. */
char *otlp_arena_strdup(struct otlp_arena *a, const char *s);
void otlp_arena_free(struct otlp_arena *a);

struct otlp_intern {
	struct otlp_arena keys;		/* copies of the keys */
	struct otlp_intern_entry *entries;
	size_t nr, alloc;
	struct hash_index index;	/* key -> entry index */
};

/*
 * The index of key (0-based, in insertion order), inserting it if new
 * (*is_new tells which). -1 when out of memory.
 */
int64_t otlp_intern(struct otlp_intern *t, const void *key, size_t len,
		    bool *is_new);
/*
 * otlp_intern() for a proto3 string: the key is s made valid UTF-8 (see
 * utf8.h) with its NUL, so the stored key can be used as a C string.
 */
int64_t otlp_intern_str(struct otlp_intern *t, const char *s, bool *is_new);
/* The stored copy of entry idx's key. */
const void *otlp_intern_key(const struct otlp_intern *t, size_t idx);
void otlp_intern_free(struct otlp_intern *t);

#endif /* EMBER_OTLP_INTERN_H */
