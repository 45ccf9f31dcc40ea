/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The unwind service: gives the backend the CFI tables and process
 * bindings its user-stack unwinder needs, on a thread of its own so the
 * ring reader never waits for a file.
 *
 * The reader only calls unwind_service_request() (a process missed a table,
 * or exec'd) and unwind_service_forget() (it exited): both take a mutex for
 * a few instructions and never block on I/O. The worker reads
 * /proc/PID/maps, compiles each executable file's CFI once (cfi_compile.c;
 * one table per file, keyed by build-id or device/inode/size/mtime, shared
 * by every process that maps it; or takes it from the persistent cache,
 * table_store.h), loads it through the backend's
 * unwind_load op, and binds the process's mappings with unwind_bind.
 * Tables nobody has mapped for UNWIND_GRACE_S are dropped again.
 */
#ifndef EMBER_UNWIND_SERVICE_H
#define EMBER_UNWIND_SERVICE_H

#include <stdbool.h>
#include <stdint.h>
#include "proc/proc.h"
#include "source/source.h"
#include "unwind/table_store.h"

struct unwind_service;

struct unwind_service_stats {
	uint64_t requests;		/* pids asked for */
	uint64_t requests_dropped;	/* queue full */
	uint64_t binds;			/* processes bound (or rebound) */
	/* from the record that asked (exec, miss) to the binding in place:
	 * how soon a new program gets complete stacks */
	uint64_t bind_latency_ns_sum, bind_latency_ns_max;
	uint64_t bind_errors;
	/* follow-up reads of the maps of recently bound processes, and the
	 * bindings they led to (mappings added with no sample to say so) */
	uint64_t rechecks, recheck_binds;
	uint64_t tables_loaded;
	uint64_t tables_failed;		/* no CFI, unreadable or refused */
	uint64_t tables_dropped;	/* unused for the grace period */
	uint64_t table_bytes;		/* bytes of tables loaded now */
	uint64_t build_ns;		/* time compiling CFI */
	uint64_t tables_built;		/* compiled from CFI (the rest: cached) */
	bool store_on;			/* the persistent cache is in use */
	struct table_store_stats store;	/* its hits, misses, stores... */
	uint32_t tables;		/* loaded now */
	uint32_t bound;			/* processes bound now */
};

struct unwind_service_opts {
	bool verbose;			/* one stderr line per table */
	/* the persistent table cache (table_store.h); NULL or "": none */
	const char *table_dir;
	uint64_t table_max;		/* its size cap in bytes; 0: default */
	/*
	 * Do not look for CPython (agent/python/): native frames only. For
	 * tests that bind a struct ember_py_proc of their own.
	 */
	bool no_python;
	/*
	 * New processes' mappings as the kernel told them (proc/kmaps.h):
	 * asked before /proc/PID/maps. NULL: /proc only.
	 */
	struct kmaps *kmaps;
	/*
	 * Every table made, and every file without one, published for the
	 * stack replay (table_share.h; outlives the service). NULL: none.
	 */
	struct table_share *share;
};

/*
 * Start the worker for this backend; NULL (and no error) when the backend
 * has no unwind ops. Its bindings live in procs, the process model, in
 * PROC_SLOT_UNWIND (stop the service before freeing procs). A table cache
 * directory that cannot be used costs one warning, not the service.
 */
struct unwind_service *unwind_service_start(const struct ember_source_ops *ops,
					    struct ember_source *src,
					    struct proc_table *procs,
					    const struct unwind_service_opts *opt);
/*
 * A process needs (new) bindings; cheap, never blocks on I/O. since_ns:
 * CLOCK_MONOTONIC time of the record that asked (0 = now), for the
 * latency figures.
 */
void unwind_service_request(struct unwind_service *us, uint32_t pid,
			    uint64_t since_ns);
/*
 * Process pid exec'd at since_ns: bound EXEC_BIND_DELAY_MS later unless a
 * miss asks sooner (most processes of an exec-heavy host are gone by then).
 */
void unwind_service_exec(struct unwind_service *us, uint32_t pid,
			 uint64_t since_ns);
/*
 * Never bind this process. The session excludes ember itself: in a
 * whole-system recording its own ~45 libraries would be compiled first
 * and delay everyone else's tables (2.5 s under emulation); its frames
 * keep the frame-pointer walk.
 */
void unwind_service_exclude(struct unwind_service *us, uint32_t pid);
/* A process exited at since_ns (0: unknown): release its binding. */
void unwind_service_forget(struct unwind_service *us, uint32_t pid,
			   uint64_t since_ns);
/* Wait until every queued request is done (tests, `record -- CMD` start). */
void unwind_service_flush(struct unwind_service *us, int timeout_ms);
void unwind_service_get_stats(struct unwind_service *us,
			      struct unwind_service_stats *st);
/*
 * The backend is about to end its session (`ember record`'s end), which
 * takes every table and binding with it: the worker stops now, so that no
 * request races the end, and unwind_service_stop() only frees what the
 * worker held. Unloading into an ended session made the module answer
 * "no session is running", printed once per binding and table.
 */
void unwind_service_source_stopping(struct unwind_service *us);
/* Stop the worker and drop everything it loaded (but see above). */
void unwind_service_stop(struct unwind_service *us);

#endif
