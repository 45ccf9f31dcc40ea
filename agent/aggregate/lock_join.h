/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * -e lock: joining a wait (EMBER_REC_LOCK) with the stack of the thread
 * that woke it (EMBER_REC_LOCK_WAKER), on (waiter tid, wait start).
 *
 * The two records may come from different CPUs' rings, so in either
 * order. A waker waits in a bounded pending table for its wait; a wait
 * that says it has a waker (waker_tid != 0) whose record has not come yet
 * waits in a smaller bounded queue until the waker comes, LOCK_JOIN_WAIT_NS
 * of record time pass, or the next flush point (a profile is built): then
 * it is handed on without a waker (counted missing). A waker whose wait
 * never comes, or came without one (a timeout), is dropped after
 * LOCK_JOIN_ORPHAN_NS (counted). Both tables hold at most a fixed number
 * of records and bytes: the oldest goes first, counted.
 *
 * Everything handed on goes through one emit callback, with the waker or
 * NULL. Records given here must have passed ember_record_valid().
 */
#ifndef EMBER_LOCK_JOIN_H
#define EMBER_LOCK_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "uapi/ember.h"

#define LOCK_JOIN_MAX_WAKERS	4096
#define LOCK_JOIN_MAX_WAITS	1024
#define LOCK_JOIN_MAX_BYTES	(8u << 20)	/* per table */
#define LOCK_JOIN_WAIT_NS	200000000ull	/* 200 ms of record time */
#define LOCK_JOIN_ORPHAN_NS	1000000000ull	/* 1 s */

typedef void (*lock_emit_fn)(void *ctx, const struct ember_sample *wait,
			     const struct ember_sample *waker);

struct lock_pend;

/* One table: a hash on (tid, start_ns) and a FIFO, oldest first. */
struct lock_pend_table {
	struct lock_pend **buckets;
	size_t nr_buckets;		/* power of two; 0 until first use */
	struct lock_pend *oldest, *newest;
	size_t nr, max, bytes, max_bytes;
};

struct lock_join_counters {
	uint64_t joined;	/* waits aggregated with their waker */
	uint64_t missing;	/* waits with waker_tid whose waker never came */
	uint64_t orphans;	/* wakers whose wait never came or had none */
	uint64_t evicted;	/* wakers dropped: pending table full */
};

struct lock_join {
	struct lock_pend_table wakers, waits;
	uint64_t now_ns;	/* the latest record time seen */
	struct lock_join_counters c;
};

void lock_join_init(struct lock_join *j);
void lock_join_release(struct lock_join *j);

/* An EMBER_REC_LOCK record; emits it now or later. */
void lock_join_wait(struct lock_join *j, const struct ember_sample *s,
		    lock_emit_fn emit, void *ctx);
/* An EMBER_REC_LOCK_WAKER record. */
void lock_join_waker(struct lock_join *j, const struct ember_sample *s,
		     lock_emit_fn emit, void *ctx);
/* A flush point: every queued wait is emitted without its waker. */
void lock_join_flush(struct lock_join *j, lock_emit_fn emit, void *ctx);
/* Records held (both tables) and their bytes. */
size_t lock_join_held(const struct lock_join *j, size_t *bytes);

#endif /* EMBER_LOCK_JOIN_H */
