/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Snapshots of new processes' executable mappings (exec_snap.c), taken on
 * a thread of their own as soon as an exec record is read.
 *
 * The consuming thread reads a new process's /proc/PID/maps when it
 * handles its exec record, which can be hundreds of ms after the exec on
 * a slow or busy machine (under emulation: while it builds a profile or
 * symbolizes). A process that lived less than that is gone by then, and
 * its samples would stay bare addresses. This thread only reads maps: it
 * takes one snapshot at the exec (the executable and ld.so) and one
 * EXEC_SNAP_AGAIN_NS later (the libraries ld.so mapped), each with a
 * handle on the process's root directory, so the files can still be
 * opened, inside that root, once the process has exited. The symbolizer
 * turns to a snapshot only when /proc no longer answers.
 *
 * Bounded: EXEC_SNAP_SLOTS processes of at most EXEC_SNAP_BYTES each (the
 * least recently taken replaced), EXEC_SNAP_QUEUE pending takes (more are
 * dropped and counted: an exec storm costs this thread, never the rings).
 */
#ifndef EMBER_PROC_EXEC_SNAP_H
#define EMBER_PROC_EXEC_SNAP_H

#include <stdint.h>
#include "proc/proc_maps.h"

#define EXEC_SNAP_SLOTS		64
#define EXEC_SNAP_BYTES		(32u << 10)
#define EXEC_SNAP_QUEUE		256
#define EXEC_SNAP_AGAIN_NS	5000000ull	/* ld.so has mapped libraries */

struct exec_snaps;

struct exec_snap_stats {
	uint64_t taken;		/* snapshots made */
	uint64_t gone;		/* the process was gone before its take */
	uint64_t dropped;	/* takes not queued: the queue was full */
	uint64_t used;		/* read by the symbolizer */
};

/* root: where /proc is (NULL: "/proc"; tests fake it). NULL on failure. */
struct exec_snaps *exec_snaps_start(const char *root);
/* Stops the thread, closes every root handle. NULL is fine. */
void exec_snaps_stop(struct exec_snaps *es);

/* pid exec'd: snapshot it now and again shortly. Any thread; no I/O. */
void exec_snaps_note(struct exec_snaps *es, uint32_t pid);

/*
 * The newest snapshot of pid: fn for each executable mapping, as
 * proc_maps_read() would. 0, or -ENOENT when there is no snapshot of pid.
 */
int exec_snaps_read(struct exec_snaps *es, uint32_t pid, proc_maps_fn fn,
		    void *ctx);
/*
 * A handle on the root directory pid had (O_PATH, the caller's to close):
 * its mapped files are opened inside it. -1 when there is none.
 */
int exec_snaps_root(struct exec_snaps *es, uint32_t pid);

void exec_snaps_get_stats(struct exec_snaps *es, struct exec_snap_stats *st);

#endif
