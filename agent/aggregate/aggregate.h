/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Turns a stream of ember records into a struct profile (profile.h).
 *
 * While recording, pb_add_record() aggregates identical
 * (pid, tid, comm, event, stack) in a bounded table and forwards exec/exit
 * lifecycle hints to the symbolizer. pb_finish() symbolizes each unique
 * address once and returns a frozen profile; pb_reset() then empties the
 * table so a daemon (ember run) can export one profile per interval:
 *
 *	pb = pb_new(&opt, sym);
 *	loop: source poll -> pb_add_record(pb, rec) ...
 *	      p = pb_finish(pb, &meta); write/export p; profile_free(p);
 *	      pb_reset(pb);
 *	pb_free(pb);
 *
 * A profile refers to strings owned by the symbolizer: free it before
 * sym_free(). Not thread-safe: one thread feeds and finishes a builder.
 */
#ifndef EMBER_AGGREGATE_H
#define EMBER_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "aggregate/profile.h"
#include "symbolize/symbolize.h"
#include "proc/proc.h"
#include "uapi/ember.h"

struct pb_options {
	size_t max_stacks;	/* unique stacks kept, 0 = default (65536) */
	size_t max_bytes;	/* memory for stacks, 0 = default (32 MiB) */
	uint32_t max_timestamps;	/* kept per unique stack, 0 = none */
	bool include_idle;	/* keep samples of the idle task */
	/*
	 * Keep only these tgids / this cgroup (0/NULL = all). The backends
	 * filter too; this makes the profile exact even if a backend cannot.
	 */
	const uint32_t *pids;
	size_t nr_pids;
	uint64_t cgroup_id;	/* exact match: descendants are not kept */
	/* sampled allocations followed until freed, 0 = default (65536) */
	size_t max_live_blocks;
	/* bytes between allocation samples: scales records of weight 0 */
	uint64_t alloc_rate;
	/*
	 * A late timer's on-CPU sample counts the periods it stands for
	 * (ember_sample.periods): the task's CPU clock counted that time.
	 * false on a guest that keeps steal out of CPU time
	 * (proc_steal_accounted()): there it stays one sample of one period.
	 */
	bool late_periods_are_cpu;
	/*
	 * The session's process model (proc/proc.h), shared with the other
	 * users of processes; NULL: the builder makes its own.
	 */
	struct proc_table *procs;
};

struct pb_counters {
	uint64_t records;	/* every record seen, valid or not */
	uint64_t samples[PROF_EV__COUNT];	/* aggregated */
	uint64_t bad_records;	/* invalid/unknown records skipped */
	uint64_t lost;		/* from EMBER_REC_LOST records */
	uint64_t dropped_stacks;	/* samples not kept: table full */
	uint64_t cut_user_stacks;	/* user stacks cut at a non-user address */
	uint64_t filtered;	/* samples outside the pid/cgroup filter */
	/* on-CPU samples of a late timer, and the periods they stand for
	 * beyond their own (in the samples' values if late_periods_are_cpu) */
	uint64_t late_samples, late_periods;
	size_t unique_stacks;
	size_t bytes;		/* memory held by the stack table */
	uint32_t processes;	/* distinct pids with samples */
	uint64_t inuse_untracked;	/* sampled blocks not followed: full */
	uint64_t frees_unknown;	/* frees of blocks not followed */
	/* -e lock (lock_join.h): waits joined with their waker's record,
	 * waits whose waker never came, wakers whose wait never came or had
	 * none, wakers evicted (pending table full); records held */
	uint64_t lock_joined, lock_missing, lock_orphans, lock_evicted;
	size_t lock_pending;
};

struct profile_builder;

/*
 * sym may be NULL (no symbolization: every frame unresolved). A sym made
 * on opt->procs learns of samples through it (proc_table_event()): give
 * both the same process model.
 */
struct profile_builder *pb_new(const struct pb_options *opt,
			       struct symbolizer *sym);
void pb_free(struct profile_builder *pb);

/*
 * Feed one record (any type). Invalid ones are counted and ignored; rec
 * must have rec->size readable bytes. Exec, exit and unwind-miss records
 * are the process model's (proc_table_event(), the session hands them
 * there): counted here, nothing else.
 */
void pb_add_record(struct profile_builder *pb,
		   const struct ember_rec_header *rec);
/* Matches ember_record_fn: pass it to a source's poll with ctx = pb. */
void pb_record_cb(const struct ember_rec_header *rec, void *ctx);

/*
 * Whether records of pid are kept (the tgid filter): the session hands
 * the process model only the exec, exit and miss records of those.
 */
bool pb_keeps_pid(const struct profile_builder *pb, uint32_t pid);
/*
 * Whether sampled blocks are followed now: the exit of a process the
 * model does not know must then add it (proc_table_exit()'s create), so
 * that its blocks leave in-use at the next reset.
 */
bool pb_holds_blocks(const struct profile_builder *pb);
/* Update the tgid filter (e.g. when a profiled command forks). */
int pb_set_pids(struct profile_builder *pb, const uint32_t *pids,
		size_t nr_pids);

void pb_get_counters(const struct profile_builder *pb, struct pb_counters *c);

/*
 * How many of a sample's user frames to keep: every frame before the first
 * one that cannot be a user-space address on x86-64 (kernel half or
 * non-canonical, >= 2^56 to allow 5-level paging's 56-bit user space).
 * Both backends' frame-pointer walks can read such garbage from a frame
 * of code built without frame pointers; everything after it is garbage too.
 * A return address of 0 beyond the leaf is the ABI's end of the stack
 * (the outermost frame): it ends the stack there, not cut.
 */
#define PB_USER_ADDR_LIMIT	(1ull << 56)
/*
 * Python slots (include/uapi/ember.h) are tagged above that limit and
 * are kept: EMBER_IP_PY | code (a code address, not 0) with the word
 * after it, and EMBER_IP_PY_CUT | reason. A PY slot without its word
 * (the last one) ends the stack before it.
 */
uint16_t pb_user_frames_valid(const __u64 *user_ips, uint16_t nr_user);

/*
 * Symbolize and freeze everything aggregated since pb_new()/pb_reset().
 * A flush point for -e lock: waits still waiting for their waker's record
 * are aggregated without it.
 * meta supplies what the builder cannot know (host, backend, events, freq,
 * times, lost from the source); the builder adds its own counts to
 * samples[], lost, bad_records and dropped_stacks. NULL on out of memory.
 */
struct profile *pb_finish(struct profile_builder *pb,
			  const struct prof_meta *meta);
/* Forget aggregated stacks and counters; keeps the symbolizer's caches. */
void pb_reset(struct profile_builder *pb);

void profile_free(struct profile *p);

#endif /* EMBER_AGGREGATE_H */
