/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A recording session: a backend chosen and opened, a symbolizer and a
 * profile builder, and the loop that drains rings into the builder. Shared
 * by `ember record` (one profile at the end) and `ember run` (a profile
 * per interval: session_snapshot() then session_reset()).
 */
#ifndef EMBER_SESSION_H
#define EMBER_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include "aggregate/profile.h"
#include "aggregate/aggregate.h"
#include "source/source.h"
#include "symbolize/symbolize.h"
#include "unwind/unwind_check.h"
#include "unwind/unwind_service.h"
#include "unwind/stack_replay.h"

struct session_options {
	const char *backend;		/* "auto" (NULL), "kmod" or "bpf" */
	struct ember_source_config src;	/* events, freq, filters... */
	struct pb_options pb;		/* aggregation bounds; filters copied from src */
	struct sym_options sym;
	bool quiet;			/* no backend line on stderr */
	bool no_unwind_tables;		/* frame pointers only (--no-cfi) */
	bool verbose_unwind;		/* a line per unwind table built */
	/* the persistent unwind-table cache: NULL = none; 0 = default cap */
	const char *table_cache_dir;
	uint64_t table_cache_max;
	bool check_unwind;		/* test mode: compare with libdwfl */
};

struct session {
	const struct ember_source_ops *ops;
	struct ember_source *src;
	struct symbolizer *sym;
	struct profile_builder *pb;
	struct proc_table *procs;	/* the process model (proc/proc.h) */
	struct unwind_service *unwind;	/* CFI tables for the backend, or NULL */
	struct unwind_check *check;	/* --check-unwind, or NULL */
	struct stack_replay *replay;	/* --stack-copy > 0, or NULL */
	struct table_share *tables;	/* the worker's tables, for the replay */
	struct stack_replay_stats replay_base;	/* at start/last reset */
	uint64_t copies_shed_base;	/* ring_reader_copies_shed(), likewise */
	/* session_py_unshift()'s rewritten sample */
	union {
		struct ember_sample s;
		uint8_t bytes[sizeof(struct ember_sample) +
			      (EMBER_MAX_FRAMES * 2 + 3) * sizeof(uint64_t)];
	} unshifted;
	struct ring_reader *reader;	/* the rings' own thread, or NULL */
	struct exec_snaps *snaps;	/* new processes' maps (proc/exec_snap.h) */
	struct kmaps *kmaps;		/* ... as the kernel told them (proc/kmaps.h) */
	uint64_t kmaps_lost_seen;	/* source lost count kmaps last heard of */
	uint64_t kmaps_check_ns;	/* when it was last compared */
	bool kmaps_warned;		/* its bound was said once */
	bool sync_warned;		/* a held binding's drain timed out */
	uint64_t kmaps_told_ns;		/* record time kmaps_consumed() last had */
	bool want_unwind, verbose_unwind;
	const char *table_cache_dir;	/* session_options' (not owned) */
	uint64_t table_cache_max;
	char backend_why[256];		/* the reason the backend was chosen */
	uint32_t events;		/* EMBER_EV_* asked */
	uint32_t freq_hz;
	uint32_t fault_period;
	uint64_t alloc_rate;		/* -e alloc: bytes between samples */
	uint64_t lock_min_ns;		/* -e lock: shorter waits not recorded */
	uint64_t lock_caps;		/* -e lock: EMBER_CAP_LOCK_* the
					 * backend has (0: it did not say) */
	bool alloc_no_inuse;		/* -e alloc: entry points only */
	uint64_t start_real_ns;		/* CLOCK_REALTIME of start/last reset */
	uint64_t lost_base;		/* source lost count at start/last reset */
	uint64_t corrupt_base;
	bool started;
	/*
	 * session_run follows a child's descendants by scanning /proc and
	 * updating the pid filter (when no cgroup can hold the command).
	 */
	bool track_children;
	/* session_run stops once none of these processes exists (-p) */
	const uint32_t *watch_pids;
	size_t nr_watch_pids;
	/* called by session_run at each of its /proc scans, when set */
	void (*on_scan)(void *ctx);
	void *scan_ctx;
};

/*
 * Choose the backend (stderr gets one line saying which and why unless
 * quiet), open it, create symbolizer and builder. 0 or negative errno with
 * a message for the user in err.
 */
int session_open(struct session *s, const struct session_options *opt,
		 char *err, size_t err_len);
int session_start(struct session *s, char *err, size_t err_len);
/*
 * -e lock: the one line that says what the backend's EMBER_CAP_LOCK_*
 * caps leave out (kernel contention before 5.19, futex_waitv before
 * 5.16), into buf; false when nothing is missing. session_open() prints
 * it unless quiet.
 */
bool session_lock_note(uint64_t caps, const char *backend, char *buf,
		       size_t len);
/* Wait up to timeout_ms and drain every ring into the builder. */
int session_poll(struct session *s, int timeout_ms);
/*
 * -e alloc: uprobes on the probe points of the sampler library lib (an
 * absolute path, alloc_lib.h) in every process that maps it, until the
 * session stops. 0, or a negative errno with a sentence in err.
 */
int session_alloc_attach(struct session *s, const char *lib, char *err,
			 size_t err_len);
/*
 * -e alloc for a process running without the sampler: uprobes on its
 * allocator's entry points (alloc_entry_probes()), every call trapping;
 * what gets the allocator's file name. On success err is empty, or says
 * that in-use bytes are not followed (the backend cannot).
 */
int session_alloc_attach_entry(struct session *s, uint32_t pid, char *what,
			       size_t what_len, char *err, size_t err_len);
/* Ask for unwind tables of a process now (a command ember started). */
void session_unwind_request(struct session *s, uint32_t pid);
/*
 * Bind pid's tables now and return once bound, or after timeout_ms. false
 * when this session binds no tables (frame pointers only).
 */
bool session_unwind_bind_now(struct session *s, uint32_t pid, int timeout_ms);
/*
 * End the backend's session (record's end): the unwind worker stops first,
 * so that nothing it sends races the end or is sent into an ended session.
 */
void session_stop_source(struct session *s);
/* Drain until the rings are empty (after the workload stopped). */
void session_drain(struct session *s);
/* Change the tgid / cgroup filters of both the source and the builder. */
int session_set_pids(struct session *s, const uint32_t *pids, size_t nr);
/*
 * The profile of everything since start or the last reset; caller frees it
 * with profile_free() before session_close().
 */
struct profile *session_snapshot(struct session *s);
void session_reset(struct session *s);
void session_close(struct session *s);

/*
 * ember record's loop: poll until *stop is set, duration_ms elapsed (0 =
 * no limit) or, when child > 0, that process has exited (its wait status
 * goes to *child_status).
 */
int session_run(struct session *s, uint64_t duration_ms,
		volatile sig_atomic_t *stop, pid_t child, int *child_status);

#endif /* EMBER_SESSION_H */
