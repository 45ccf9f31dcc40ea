/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The unwind service's insides (unwind_service.c: the request queue and
 * the thread). Its bindings are unwind_bind.c's (unwind_bind.h), which
 * know nothing of these. Not for other users: unwind_service.h.
 */
#ifndef EMBER_UNWIND_SERVICE_INTERNAL_H
#define EMBER_UNWIND_SERVICE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "lib/clock.h"
#include "proc/proc.h"
#include "unwind/table_cache.h"
#include "unwind/unwind_bind.h"
#include "unwind/unwind_service.h"

#define QUEUE_LEN		1024
#define UNWIND_GRACE_S		30	/* unused tables live this long */

/*
 * An exec is bound this long after it, not at once: most processes of an
 * exec-heavy host (shell pipelines, build steps, wrappers) are gone by
 * then and cost nothing; one sampled sooner sends a miss, which binds at
 * once. On a build host that was 2 of every 3 bindings.
 */
#define EXEC_BIND_DELAY_MS	10
/*
 * An exec's or an exit's request does not wake a worker that wakes within
 * this anyway (its grid of delayed bindings, RECHECK_GRID_NS): two
 * wake-ups and a mutex hand-off per new process were a fifth of the
 * agent's CPU beside an exec storm. A miss (a sample waiting for its
 * binding) always wakes it, and so does a queue a quarter full; so do
 * ORPHANS_WAKE bindings handed back by the process model.
 */
#define LAZY_WAKE_NS		(2 * EXEC_BIND_DELAY_MS * 1000000ull)
/* Bindings handed back that wake a worker that would wake soon anyway. */
#define ORPHANS_WAKE		256
/*
 * Lazy requests and hand-backs a second (this second or the last) that
 * make an exec storm: the worker then wakes every LAZY_WAKE_NS on its
 * own, so that they never have to wake it. Fewer wake it themselves:
 * no more often than the storm's own wake-ups.
 */
#define LAZY_STORM_RATE		(1000000000ull / LAZY_WAKE_NS)

struct unwind_service {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake, idle;
	/* queue, under lock: pids to (re)bind (+) or forget (high bit), with
	 * the CLOCK_MONOTONIC time of the record that asked */
	uint32_t queue[QUEUE_LEN];
	uint64_t queued_ns[QUEUE_LEN];
	uint32_t head, tail;
	bool busy, stopping;
	/* the worker waits, until wake_at_ns (CLOCK_MONOTONIC) at the latest */
	bool sleeping;
	uint64_t wake_at_ns;
	/* the worker thread is gone, its tables went with the session */
	bool source_stopped;
	struct unwind_service_stats st;	/* under lock */
	/* handed back by the process model (unwind_proc_gone()), under lock */
	struct unwind_proc *orphans;
	uint32_t nr_orphans;
	/* lazy requests and hand-backs in the second from lazy_window_ns,
	 * and in the second before it */
	uint64_t lazy_window_ns;
	uint32_t lazy_count, lazy_last;
	/* worker-only state */
	struct unwind_bindings b;	/* ops, source, process model, cache */
	struct table_store *store;	/* the persistent cache, or NULL */
	uint32_t excluded;		/* never bound (the agent itself) */
	uint64_t trimmed_at;		/* cache.build_ns at the last trim */
};

#define FORGET_BIT	0x80000000U
#define EXEC_BIT	0x40000000U	/* pids stay below 2^22 */


#endif
