/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef EMBER_LOCAL_STORE_H
#define EMBER_LOCAL_STORE_H

#include <stddef.h>
#include <stdint.h>

/*
 * ember run --local-dir: each interval's OTLP request is also kept as a
 * file (DIR/ember-<unix ms>-<seq>.otlp, what `ember decode` reads), at
 * most max_bytes of them: the oldest go first. A write that fails (disk
 * full, read-only, I/O error) is counted and returned, never ignored.
 */
struct local_store;

struct local_store_stats {
	uint64_t written;	/* profiles kept */
	uint64_t removed;	/* older ones removed for the size bound */
	uint64_t failed;	/* profiles that could not be kept */
	uint64_t files, bytes;	/* what the directory holds now */
};

/* mkdir (0700) and a test write; NULL with err set when unusable. */
struct local_store *local_store_open(const char *dir, uint64_t max_bytes,
				     char *err, size_t err_len);
/* 0, or -errno with err saying what failed. buf stays the caller's. */
int local_store_put(struct local_store *ls, const uint8_t *buf, size_t len,
		    char *err, size_t err_len);
void local_store_stats(const struct local_store *ls, struct local_store_stats *st);
void local_store_close(struct local_store *ls);

#endif
