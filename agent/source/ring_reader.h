/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The reader: one thread that drains the backend's rings (the module's
 * per-CPU rings or the BPF ring buffer) into a bounded queue in memory,
 * and does nothing else: no file I/O, no symbolization, no encoding. The
 * thread that aggregates, symbolizes and builds profiles consumes the
 * queue; while it is busy (a profile being built at an interval edge) the
 * kernel's rings keep being emptied. When the queue is full a record is
 * dropped and counted, never waited for.
 */
#ifndef EMBER_RING_READER_H
#define EMBER_RING_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "source/source.h"

struct ring_reader;

/* Queue bound when none is given: what a lagging consumer may cost. */
#define RING_READER_DEFAULT_BYTES	(16u << 20)

/*
 * Start the thread on src (already started). hint, if not NULL, sees each
 * record on the reader's thread before it is queued: for the few that
 * must not wait for the consumer (a process that needs unwind tables).
 * NULL on failure (errno set).
 */
struct ring_reader *ring_reader_start(const struct ember_source_ops *ops,
				      struct ember_source *src,
				      ember_record_fn hint, void *hint_ctx,
				      size_t max_bytes);
/*
 * Hand queued records to fn, in order, waiting up to timeout_ms for the
 * first: the number handed, 0 on timeout, or the reader's error (negative
 * errno) once the queue is empty after the reader failed.
 */
int ring_reader_consume(struct ring_reader *rr, int timeout_ms,
			ember_record_fn fn, void *ctx);
/*
 * Return once the reader has drained every ring in a poll that began
 * after this call, so that the hint has seen every record the kernel
 * wrote before it (a held command's mapping records, before its binding
 * reads kmaps), or after timeout_ms: whether it did. The backend's wait
 * is cut short (ops->wake) where it can be.
 */
bool ring_reader_sync(struct ring_reader *rr, int timeout_ms);
/*
 * Stop reading: the thread drains the rings one last time (bounded) and
 * exits; what it queued stays for ring_reader_consume.
 */
void ring_reader_stop(struct ring_reader *rr);
/*
 * Stack copies (EMBER_REC_USER_STACK) not queued because the queue was
 * half full: a copy is an optional extra to its sample, which stays as
 * walked, and must never take the room a sample or a mapping record
 * needs (a consumer that lags under TCG while copies flood in).
 */
uint64_t ring_reader_copies_shed(struct ring_reader *rr);
/* Records dropped because the queue was full. */
uint64_t ring_reader_dropped(struct ring_reader *rr);
/* Stop (if needed) and free, queued records included. */
void ring_reader_free(struct ring_reader *rr);

#endif
