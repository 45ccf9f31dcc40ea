/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Stack replay (--stack-copy): a backend that could not unwind a sample's
 * user stack whole (the process was not bound to tables yet, or code was
 * mapped after its binding: a late dlopen) writes the registers and a
 * bounded copy of the stack (EMBER_REC_USER_STACK) just before the sample,
 * which carries EMBER_SF_USER_COPIED. The replay holds the copies it reads
 * (a bounded set; the oldest goes, counted, when full) and, when their
 * sample comes, unwinds the copy with the backend's own tables
 * (copy_walk.h), or where those cannot tell with libdwfl (oracle.h), over
 * the process's current mappings, and puts the result in place of the sample's user
 * frames when it is longer or proven whole. A sample with Python frames
 * is replaced only by a replay proven whole whose eval-loop frames take
 * its activations back one for one (python.h, py_splice()); else it stays
 * as walked, its Python frames kept. A process already gone is
 * replayed over the mappings its exec snapshot saw (proc/exec_snap.h,
 * through gone_fn); without one its samples stay as walked (kept).
 */
#ifndef EMBER_STACK_REPLAY_H
#define EMBER_STACK_REPLAY_H

#include <stdint.h>
#include "uapi/ember.h"
#include "python/python.h"
#include "proc/proc_maps.h"
#include "unwind/oracle.h"
#include "unwind/table_share.h"

struct stack_replay_stats {
	uint64_t copies;	/* EMBER_REC_USER_STACK records read */
	uint64_t copy_bytes;	/* ... their stack bytes */
	uint64_t replayed;	/* samples whose user frames the copy replaced */
	uint64_t proven;	/* ... of them, walked to the outermost frame */
	uint64_t kept;		/* samples with a copy left as walked: the
				 * replay found no more (process gone, no CFI) */
	uint64_t unpaired;	/* samples marked copied whose copy is not held */
	uint64_t dropped;	/* copies pushed out before their sample came */
	uint64_t skipped;	/* samples left as walked: over the time budget,
				 * or of a process whose last FUTILE_AFTER (4)
				 * replays found nothing (for a second) */
	uint64_t replay_ns;	/* CPU time spent unwinding copies */
	uint64_t py_spliced;	/* of replayed: Python activations put back */
	uint64_t py_kept;	/* of kept: with Python frames, not placeable */
	uint64_t by_tables;	/* copies walked with the shared tables */
	uint64_t by_libdwfl;	/* ... by libdwfl: the tables could not tell */
	uint64_t built;		/* tables built here: files the worker never saw */
};

/*
 * The replay runs on the thread that feeds the profile: at most this
 * much CPU time per mille of wall time, in bursts of at most
 * STACK_REPLAY_BURST_NS (a longer stall of that thread lets new
 * processes' exec snapshots be recycled before it symbolizes them), so a
 * system starting thousands of processes (-a beside a build) cannot slow
 * the reading of the rings (late exec snapshots, lost records). Samples
 * past the budget are left as walked and counted (skipped).
 */
#define STACK_REPLAY_BUDGET_PERMILLE	100
#define STACK_REPLAY_BURST_NS		20000000ll
/*
 * Nor while the consumer lags: a sample read this long after it was
 * taken is passed on as walked (skipped), so a backlog drains first
 * (the symbolizer must read new processes' maps before they are gone).
 */
#define STACK_REPLAY_MAX_LAG_NS		500000000ull

/*
 * libdwfl sessions kept at once: each holds its process's modules and
 * their CFI (a few MB with debug files): with 64, as the unwind check
 * keeps, `record -a` beside a shell loop peaked at 118 MB against 31 MB
 * without copies (suite 42); copies come in runs per process, so a few
 * are enough.
 */
#define STACK_REPLAY_PROCS	2

/* The number of copies held at once: RECENT x (16 KiB + header). */
#define STACK_REPLAY_HELD	32

struct stack_replay;

/*
 * pac_mask: aarch64, as for the oracle (unwind_check_set_pac_mask()).
 * gone (may be NULL): the mappings of a process that exited before its
 * samples were replayed (the session's exec snapshots).
 */
struct stack_replay *stack_replay_new(uint64_t pac_mask, oracle_gone_fn gone,
				      void *gone_ctx);
/*
 * Where pid's interpreter loop is (false: not known), for samples with
 * Python frames; called on the replay's thread. Without one such samples
 * stay as walked.
 */
typedef bool stack_replay_eval_fn(void *ctx, uint32_t pid,
				  struct py_eval_ranges *ev);
void stack_replay_set_python(struct stack_replay *r, stack_replay_eval_fn *fn,
			     void *ctx);
/*
 * Where a process's executable mappings are without reading /proc (the
 * kernel's mapping records, an exec snapshot): fn for each, 0; or -errno
 * when not known there.
 */
typedef int stack_replay_maps_fn(void *ctx, uint32_t pid, proc_maps_fn fn,
				 void *fn_ctx);
/*
 * Walk copies with the worker's tables (table_share.h) first, over the
 * mappings maps_fn gives (else /proc/PID/maps): the backend's own walk,
 * microseconds where libdwfl costs a session per process. libdwfl stays
 * for what the tables cannot tell (copy_walk.h). share NULL: libdwfl only.
 */
void stack_replay_set_tables(struct stack_replay *r, struct table_share *share,
			     stack_replay_maps_fn *maps_fn, void *ctx);
/*
 * Every valid record in ring order (ember_record_valid()). Returns rec
 * itself, or a rewritten copy of a sample (valid until the next call), or
 * NULL for a record the replay took (EMBER_REC_USER_STACK): not to be
 * passed on.
 */
const struct ember_rec_header *
stack_replay_record(struct stack_replay *r, const struct ember_rec_header *rec);
void stack_replay_get(const struct stack_replay *r,
		      struct stack_replay_stats *st);
void stack_replay_free(struct stack_replay *r);

#endif
