// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shared FNV-1a hash and hash index (agent/lib/hash_index.h): known hash
 * values (the SVG colours depend on them), colliding hashes told apart by
 * the caller's compare, growth past the initial capacity.
 */
#include <string.h>
#include "lib/hash_index.h"
#include "test_util.h"

#define N 5000

static uint32_t keys[N];

static bool key_eq(void *ctx, uint32_t entry, const void *key)
{
	(void)ctx;
	return keys[entry] == *(const uint32_t *)key;
}

int main(void)
{
	struct hash_index ix = { 0 };
	bool ok = true;
	uint32_t k;

	/* FNV-1a 64 reference values (the FNV test vectors). */
	T_CHECK("hash_fnv1a_vectors", hash_bytes("", 0) == 0xcbf29ce484222325ULL &&
		hash_bytes("a", 1) == 0xaf63dc4c8601ec8cULL &&
		hash_bytes("foobar", 6) == 0x85944171f73967e8ULL &&
		hash_bytes_more(hash_bytes("foo", 3), "bar", 3) ==
		hash_bytes("foobar", 6), "%016llx",
		(unsigned long long)hash_bytes("foobar", 6));

	k = 7;
	T_CHECK("hash_index_empty_find", hash_index_find(&ix, 1, &k, key_eq, NULL) == -1,
		"found in an empty index");

	/* Every key under only 16 distinct hashes: long collision runs. */
	for (uint32_t i = 0; i < N && ok; i++) {
		keys[i] = i * 3;
		ok = hash_index_get(&ix, i % 16, &keys[i], key_eq, NULL, i) == i;
	}
	for (uint32_t i = 0; i < N && ok; i++) {
		k = i * 3;
		ok = hash_index_get(&ix, i % 16, &k, key_eq, NULL, N) == i &&
		     hash_index_find(&ix, (i + 1) % 16, &k, key_eq, NULL) == -1;
	}
	T_CHECK("hash_index_collisions_and_growth", ok && ix.used == N && ix.cap >= 2 * N,
		"used %zu cap %zu", ix.used, ix.cap);
	hash_index_free(&ix);
	T_CHECK("hash_index_free_resets", !ix.cap && !ix.hash && !ix.slot, "not reset");
	T_EXIT();
}
