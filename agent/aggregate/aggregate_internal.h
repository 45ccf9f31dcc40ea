/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inside the profile builder: what aggregate.c (aggregation of records) and
 * profile_freeze.c (symbolization into a struct profile) share. Nothing
 * else includes this.
 */
#ifndef EMBER_AGGREGATE_INTERNAL_H
#define EMBER_AGGREGATE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "aggregate/live_blocks.h"
#include "aggregate/lock_join.h"
#include "aggregate/aggregate.h"
#include "proc/proc.h"

#define PB_MAX_INLINE		16	/* frames per address incl. inlines */

/* One unique (pid, tid, comm, event, stack) and what it accumulated. */
struct agg_entry {
	struct agg_entry *next;		/* hash chain */
	uint64_t hash;
	uint64_t count, weight_ns;
	uint64_t cgroup_id;
	uint64_t *timestamps;		/* CLOCK_MONOTONIC ns, up to max */
	uint32_t nr_timestamps;
	uint32_t pid, tid;
	uint16_t nr_kernel, nr_user;
	uint8_t event;
	bool user_cut;			/* root frame is the [cut] marker */
	bool user_complete;		/* the unwinder reached the outermost
					 * frame (EMBER_SF_USER_COMPLETE) */
	bool user_expected;		/* a user task: a stack without a
					 * proven root gets the [cut] marker */
	uint32_t records;		/* samples aggregated here */
	uint32_t nr_live;		/* PROF_EV_INUSE: blocks not freed */
	uint8_t state;			/* PROF_EV_OFFCPU: enum ember_offcpu_state */
	char comm[EMBER_COMM_LEN];
	/* PROF_EV_LOCK: the lock, and the waker's stack after the waiter's */
	uint64_t lock_addr;
	uint16_t lock_flags;		/* EMBER_LOCK_F_* */
	uint8_t lock_kind;		/* enum ember_lock_kind */
	bool has_waker;
	uint16_t wk_nr_kernel, wk_nr_user;
	uint16_t wk_flags;		/* the waker record's EMBER_SF_* */
	uint32_t wk_pid;
	char wk_comm[EMBER_COMM_LEN];
	/* kernel leaf..root, user leaf..root; then the waker's, the same */
	uint64_t ips[];
};

struct profile_builder {
	struct pb_options opt;
	struct symbolizer *sym;
	uint32_t *pids;			/* sorted copy of the filter */
	size_t nr_pids;

	struct agg_entry **buckets;
	size_t nr_buckets;		/* power of two */
	size_t nr_entries;

	struct proc_table *procs;	/* the process model (proc/proc.h) */
	bool own_procs;			/* made by pb_new(), freed by pb_free() */

	struct live_blocks live;	/* -e alloc: sampled blocks not freed */
	struct lock_join locks;		/* -e lock: waits and wakers joined */

	struct pb_counters c;
};

static inline uint64_t pb_mix64(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* -e lock: hand every wait still waiting for its waker on (a flush point). */
void pb_flush_locks(struct profile_builder *pb);

#endif
