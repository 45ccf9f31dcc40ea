/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The unwind worker's bindings (unwind_bind.c): each process's binding
 * of its executable mappings to loaded tables, its place in the process
 * model, the backend's bind op. The service (unwind_service.c: the
 * request queue and the thread) calls these; they never call the
 * service: what the process model hands back (unwind_proc_gone()) the
 * service collects and gives to unwind_take_orphans().
 */
#ifndef EMBER_UNWIND_BIND_H
#define EMBER_UNWIND_BIND_H

#include <stdbool.h>
#include <stdint.h>
#include "proc/proc.h"
#include "source/source.h"
#include "unwind/table_cache.h"

#define MAX_PROCS		8192	/* bound processes tracked */

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
 * What the worker remembers of a process: its binding. It lives in the
 * process model (proc/proc.h), in the process's PROC_SLOT_UNWIND slot,
 * so that a pid reused is a new process here too, and it belongs to this
 * thread alone: when its process goes from the table, the service's
 * unwind_proc_gone() hands it back through its orphans list and this
 * thread unbinds and frees it (unwind_take_orphans()).
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
	struct ember_py_proc *py;	/* CPython bound in the backend, or NULL */
	uint32_t *owners;		/* table_cache entries it holds refs on */
	uint32_t nr_owners;
	struct unwind_proc *prev, *next;	/* ub->live (worker) */
	struct unwind_proc *orphan_next;	/* the service's orphans list */
};

/* The worker's bindings and what they are made of (worker thread only). */
struct unwind_bindings {
	const struct ember_source_ops *ops;
	struct ember_source *src;
	struct proc_table *procs;	/* the process model the bindings live in */
	struct table_cache cache;
	struct unwind_proc *live;	/* every binding this thread owns */
	struct unwind_proc *spare;	/* allocated, not yet attached */
	uint32_t nr_live;
	bool no_python;			/* unwind_service_opts.no_python */
	struct kmaps *kmaps;		/* unwind_service_opts.kmaps */
};

/* ---- unwind_bind.c: bindings (worker thread only) ---- */

struct unwind_proc *unwind_proc_attach(struct unwind_bindings *ub,
				       uint32_t pid, uint64_t time_ns);
void unwind_proc_unbind(struct unwind_bindings *ub, struct unwind_proc *up);
void unwind_proc_free(struct unwind_bindings *ub, struct unwind_proc *up);
void unwind_proc_forget(struct unwind_bindings *ub, struct unwind_proc *up);
/* Bindings the process model handed back (linked by orphan_next). */
void unwind_take_orphans(struct unwind_bindings *ub, struct unwind_proc *up);
int unwind_bind_proc(struct unwind_bindings *ub, uint32_t pid,
		     uint64_t time_ns, struct unwind_proc *up);

#endif
