/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The unwind worker's insides, shared by its two files:
 * unwind_service.c (the request queue and the thread) and unwind_bind.c
 * (each process's binding: its place in the process model, the files it
 * maps, the backend's bind op). Not for other users: unwind_service.h.
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
#include "unwind/unwind_service.h"

#define QUEUE_LEN		1024
#define MAX_PROCS		8192	/* bound processes tracked */
#define UNWIND_GRACE_S		30	/* unused tables live this long */

/*
 * After a new binding, the process's maps are read again this long later,
 * then after the next delay, and so on: a program that is still starting
 * (ld.so mapping libc, dlopen) and then sleeps produces no samples, so no
 * miss would tell us its new mappings before it runs again. A change
 * found rebinds and starts the series over.
 */
static const uint32_t recheck_ms[] = { 100, 500, 2000 };
#define NR_RECHECKS	(sizeof(recheck_ms) / sizeof(recheck_ms[0]))

/*
 * An exec is bound this long after it, not at once: most processes of an
 * exec-heavy host (shell pipelines, build steps, wrappers) are gone by
 * then and cost nothing; one sampled sooner sends a miss, which binds at
 * once. On a build host that was 2 of every 3 bindings.
 */
#define EXEC_BIND_DELAY_MS	10

/*
 * What the worker remembers of a process: its binding. It lives in the
 * process model (proc/proc.h), in the process's PROC_SLOT_UNWIND slot,
 * so that a pid reused is a new process here too, and it belongs to this
 * thread alone: when its process goes from the table, unwind_proc_gone() hands
 * it back through the orphans list and this thread unbinds and frees it.
 *
 * Which process a record names is the table's guess (pid plus time, the
 * exit known only once the main thread has read it); a wrong guess costs
 * a rebind or an early unbind that the next miss repairs, never a wrong
 * table: a binding is always made from the pid's maps as they are now.
 */
struct unwind_proc {
	uint32_t pid;
	bool dead;			/* unbound, its process gone: free it */
	uint64_t maps_hash;		/* of its executable mappings */
	uint64_t bound_ns;
	uint64_t recheck_ns;		/* next follow-up read of its maps, 0: none */
	uint64_t exec_ns;		/* its exec record, until the first binding */
	uint32_t rechecks;		/* follow-ups done since the last change */
	uint32_t *owners;		/* table_cache entries it holds refs on */
	uint32_t nr_owners;
	struct unwind_proc *prev, *next;	/* us->live (worker) */
	struct unwind_proc *orphan_next;	/* us->orphans (under lock) */
};

struct unwind_service {
	const struct ember_source_ops *ops;
	struct ember_source *src;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake, idle;
	/* queue, under lock: pids to (re)bind (+) or forget (high bit), with
	 * the CLOCK_MONOTONIC time of the record that asked */
	uint32_t queue[QUEUE_LEN];
	uint64_t queued_ns[QUEUE_LEN];
	uint32_t head, tail;
	bool busy, stopping;
	struct unwind_service_stats st;	/* under lock */
	/* handed back by the process model (unwind_proc_gone()), under lock */
	struct unwind_proc *orphans;
	/* worker-only state */
	struct proc_table *procs;	/* the process model the bindings live in */
	struct table_cache cache;
	struct unwind_proc *live;	/* every binding this thread owns */
	struct unwind_proc *spare;	/* allocated, not yet attached */
	uint32_t nr_live;
	uint32_t excluded;		/* never bound (the agent itself) */
	uint64_t trimmed_at;		/* cache.build_ns at the last trim */
};

#define FORGET_BIT	0x80000000U
#define EXEC_BIT	0x40000000U	/* pids stay below 2^22 */

/* ---- unwind_bind.c: bindings (worker thread only) ---- */

struct unwind_proc *unwind_proc_attach(struct unwind_service *us,
				       uint32_t pid, uint64_t time_ns);
void unwind_proc_unbind(struct unwind_service *us, struct unwind_proc *up);
void unwind_proc_free(struct unwind_service *us, struct unwind_proc *up);
void unwind_proc_forget(struct unwind_service *us, struct unwind_proc *up);
/* PROC_SLOT_UNWIND's free function (any thread, under the table's lock) */
void unwind_proc_gone(void *data, void *ctx);
void unwind_take_orphans(struct unwind_service *us);
int unwind_bind_proc(struct unwind_service *us, uint32_t pid,
		     uint64_t time_ns, struct unwind_proc *up);

#endif
