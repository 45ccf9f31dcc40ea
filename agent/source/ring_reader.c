// SPDX-License-Identifier: GPL-2.0-only
/*
 * The reader thread and its queue (ring_reader.h).
 *
 * The queue is a list of chunks, appended by the reader and consumed by
 * one consumer, under one mutex held only to move offsets: a record is
 * copied in by the reader and handed out in place (the consumer owns the
 * head chunk until it moves past it). The reader writes past the tail
 * chunk's published end without the lock and publishes a run of records
 * at once (per poll, per WAKE_BATCH records, or when it needs another
 * chunk): one lock round trip per record, with the consumer waking on
 * the same mutex, was a sixth of the agent's CPU beside an exec storm.
 * Chunks are mapped as needed and unmapped once read, so an idle queue
 * costs one chunk, not its bound.
 * mmap, not malloc: glibc raises its mmap threshold to a freed mapping's
 * size, and later chunks would come from the heap and keep its pages.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "lib/clock.h"
#include "lib/deadline.h"
#include "source/ring_reader.h"

#define CHUNK_BYTES	(256u << 10)	/* > the largest record of any backend */
#define READ_WAIT_MS	50		/* the reader's poll: also its stop latency */
#define FINAL_DRAINS	64		/* bounded: a producer may still write */
#define CONSUME_BUDGET	65536		/* records per call, then the caller's turn */
/*
 * Records are published once per poll of the rings, or after this many
 * records within one: a wake-up per record cost two context switches
 * each (an exec's burst of mapping records; 5-10% of the agent's CPU
 * beside an exec storm).
 */
#define WAKE_BATCH	256
/*
 * The consumer is woken for WAKE_BATCH records, or for any once the
 * oldest has waited this long: it wakes on its own timeout too (100-200
 * ms), and nothing it does is urgent (the reader's hint starts bindings
 * and keeps mappings). A wake-up per poll, 20-30 a second, each waking a
 * thread that preempted the reader on a busy CPU, was a tenth of the
 * agent's CPU beside an exec storm.
 */
#define CONSUMER_WAKE_NS	100000000ull

struct chunk {
	struct chunk *next;
	size_t used;			/* bytes appended */
	uint8_t data[];
};

struct ring_reader {
	const struct ember_source_ops *ops;
	struct ember_source *src;
	ember_record_fn hint;
	void *hint_ctx;
	pthread_t thread;
	bool started;

	pthread_mutex_t lock;
	pthread_cond_t ready;
	/* under lock */
	struct chunk *head, *tail, *spare;
	size_t head_off;		/* consumer's offset in head */
	size_t bytes;			/* of all chunks held, spare excluded */
	size_t max_bytes;
	uint64_t dropped;
	uint64_t copies_shed;
	int error;			/* the reader's poll failed */
	uint32_t unsig;			/* records published, consumer not woken */
	uint64_t unsig_ns;		/* ... since (CLOCK_MONOTONIC) */
	bool stopping, done, waiting;
	/* ring_reader_sync(): calls made, and the last whose poll is done */
	uint64_t sync_asked, sync_done;
	pthread_cond_t synced;

	/*
	 * The reader's own, no lock: bytes written past tail->used, not yet
	 * published (tail changes only under the lock, and only by the
	 * reader), their records, the copies shed since the last publish,
	 * and the queue's size as of the last publish.
	 */
	size_t pend, bytes_seen;
	uint32_t pend_recs;
	uint64_t shed_pend;
	bool deferred;			/* a wake-up put off (queued()) */
};

static struct chunk *chunk_new(void)
{
	void *p = mmap(NULL, sizeof(struct chunk) + CHUNK_BYTES,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void chunk_free(struct chunk *c)
{
	if (c)
		munmap(c, sizeof(*c) + CHUNK_BYTES);
}

static size_t rec_space(size_t size)
{
	return (size + 7) & ~(size_t)7;	/* records stay 8-byte aligned */
}

/* A chunk with room for n more bytes at the tail, or NULL. Under lock. */
static struct chunk *tail_with_room(struct ring_reader *rr, size_t n)
{
	struct chunk *c = rr->tail;

	if (c && CHUNK_BYTES - c->used >= n)
		return c;
	if (rr->bytes + CHUNK_BYTES > rr->max_bytes)
		return NULL;
	if (rr->spare) {
		c = rr->spare;
		rr->spare = NULL;
	} else if (!(c = chunk_new())) {
		return NULL;
	}
	c->next = NULL;
	c->used = 0;
	if (rr->tail)
		rr->tail->next = c;
	else
		rr->head = c;
	rr->tail = c;
	rr->bytes += CHUNK_BYTES;
	return c;
}

/* n more records are the consumer's: whether to wake it. Under lock. */
static bool queued(struct ring_reader *rr, uint32_t n)
{
	uint64_t now = mono_ns();

	if (n && !rr->unsig)
		rr->unsig_ns = now;
	rr->unsig += n;
	rr->deferred = false;
	if (!rr->unsig || !rr->waiting)
		return false;
	if (rr->unsig < WAKE_BATCH && now - rr->unsig_ns < CONSUMER_WAKE_NS) {
		rr->deferred = true;	/* poll_done() looks again */
		return false;
	}
	rr->unsig = 0;
	return true;
}

/*
 * What the reader wrote becomes the consumer's: under lock. Returns
 * whether to wake the consumer (signalled once the lock is dropped:
 * signalled under it, the consumer woke only to block on the mutex).
 */
static bool publish(struct ring_reader *rr)
{
	uint32_t n = rr->pend_recs;

	if (rr->pend) {
		rr->tail->used += rr->pend;
		rr->pend = 0;
	}
	rr->pend_recs = 0;
	rr->copies_shed += rr->shed_pend;
	rr->shed_pend = 0;
	rr->bytes_seen = rr->bytes;
	return queued(rr, n);
}

static void publish_and_wake(struct ring_reader *rr)
{
	bool wake;

	pthread_mutex_lock(&rr->lock);
	wake = publish(rr);
	pthread_mutex_unlock(&rr->lock);
	if (wake)
		pthread_cond_signal(&rr->ready);
}

/* A record that does not fit after what is pending: a new chunk. */
static void enqueue_slow(struct ring_reader *rr,
			 const struct ember_rec_header *rec, size_t n)
{
	struct chunk *c;
	bool wake;

	pthread_mutex_lock(&rr->lock);
	wake = publish(rr);
	if (n > CHUNK_BYTES || rec->size < sizeof(*rec) ||
	    !(c = tail_with_room(rr, n))) {
		rr->dropped++;
	} else {
		memcpy(c->data + c->used, rec, rec->size);
		c->used += n;
		wake = queued(rr, 1) || wake;
	}
	rr->bytes_seen = rr->bytes;
	pthread_mutex_unlock(&rr->lock);
	if (wake)
		pthread_cond_signal(&rr->ready);
}

/* The reader's callback: copy the record in, or count it dropped. */
static void enqueue(const struct ember_rec_header *rec, void *ctx)
{
	struct ring_reader *rr = ctx;
	size_t n = rec_space(rec->size);
	struct chunk *c = rr->tail;

	if (rr->hint)
		rr->hint(rec, rr->hint_ctx);
	if (rec->type == EMBER_REC_USER_STACK &&
	    rr->bytes_seen + rr->pend + n > rr->max_bytes / 2) {
		rr->shed_pend++;
		return;
	}
	if (!c || rec->size < sizeof(*rec) ||
	    CHUNK_BYTES - c->used - rr->pend < n) {
		enqueue_slow(rr, rec, n);
		return;
	}
	/* past the published end: the consumer reads below it only */
	memcpy(c->data + c->used + rr->pend, rec, rec->size);
	rr->pend += n;
	if (++rr->pend_recs >= WAKE_BATCH)
		publish_and_wake(rr);
}

/* After a poll: what it queued goes to the consumer, woken when due. */
static void poll_done(struct ring_reader *rr)
{
	if (rr->pend_recs || rr->shed_pend || rr->deferred)
		publish_and_wake(rr);
}

static void *reader(void *arg)
{
	struct ring_reader *rr = arg;
	int r = 0;

	/* top -H, perf and ember itself tell the threads apart */
	pthread_setname_np(pthread_self(), "ember-reader");

	for (;;) {
		uint64_t asked;

		pthread_mutex_lock(&rr->lock);
		if (rr->stopping) {
			pthread_mutex_unlock(&rr->lock);
			break;
		}
		asked = rr->sync_asked;
		pthread_mutex_unlock(&rr->lock);
		/* a sync waits: this poll's drain comes after its call */
		r = rr->ops->poll(rr->src, asked != rr->sync_done ? 0 :
				  READ_WAIT_MS, enqueue, rr);
		poll_done(rr);
		/* a failed poll drained nothing: the reader stops, and sync
		 * returns without it (rr->done) */
		if (asked != rr->sync_done && (r >= 0 || r == -EINTR)) {
			pthread_mutex_lock(&rr->lock);
			rr->sync_done = asked;
			pthread_cond_broadcast(&rr->synced);
			pthread_mutex_unlock(&rr->lock);
		}
		if (r < 0 && r != -EINTR)
			break;
		r = 0;
	}
	/* what was written before the backend stopped */
	for (int i = 0; !r && i < FINAL_DRAINS; i++) {
		int n = rr->ops->poll(rr->src, 0, enqueue, rr);

		poll_done(rr);
		if (n <= 0 && n != -EINTR)
			break;
	}
	pthread_mutex_lock(&rr->lock);
	rr->error = r;
	rr->done = true;
	pthread_cond_broadcast(&rr->ready);
	pthread_cond_broadcast(&rr->synced);
	pthread_mutex_unlock(&rr->lock);
	return NULL;
}

/* The reader's poll returns now rather than at the end of its wait. */
static void wake_reader(struct ring_reader *rr)
{
	if (rr->ops->wake)
		rr->ops->wake(rr->src);
}

struct ring_reader *ring_reader_start(const struct ember_source_ops *ops,
				      struct ember_source *src,
				      ember_record_fn hint, void *hint_ctx,
				      size_t max_bytes)
{
	struct ring_reader *rr = calloc(1, sizeof(*rr));
	pthread_condattr_t ca;
	sigset_t all, old;
	int r;

	if (!rr)
		return NULL;
	rr->ops = ops;
	rr->src = src;
	rr->hint = hint;
	rr->hint_ctx = hint_ctx;
	rr->max_bytes = max_bytes ? max_bytes : RING_READER_DEFAULT_BYTES;
	if (rr->max_bytes < CHUNK_BYTES)
		rr->max_bytes = CHUNK_BYTES;
	pthread_mutex_init(&rr->lock, NULL);
	pthread_cond_init(&rr->ready, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rr->synced, &ca);
	pthread_condattr_destroy(&ca);
	/* signals (Ctrl-C, SIGCHLD, SIGHUP) stay with the calling thread */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&rr->thread, NULL, reader, rr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		pthread_cond_destroy(&rr->synced);
		pthread_cond_destroy(&rr->ready);
		pthread_mutex_destroy(&rr->lock);
		free(rr);
		errno = r;
		return NULL;
	}
	rr->started = true;
	return rr;
}

/* Wait (under lock) until a record is queued, the reader is done, or the
 * deadline passes. */
static void wait_for_record(struct ring_reader *rr, int timeout_ms)
{
	struct timespec ts;

	if (timeout_ms <= 0)
		return;
	ts = deadline_after_ns(CLOCK_REALTIME, (uint64_t)timeout_ms * 1000000u);
	while (!rr->done && !(rr->head && rr->head_off < rr->head->used)) {
		rr->waiting = true;
		if (pthread_cond_timedwait(&rr->ready, &rr->lock, &ts) == ETIMEDOUT)
			break;
	}
	rr->waiting = false;
}

/*
 * Move past the head record of n bytes. Under lock; returns a chunk to
 * unmap once the lock is dropped, or NULL.
 */
static struct chunk *advance(struct ring_reader *rr, size_t n)
{
	struct chunk *c = rr->head;

	rr->head_off += n;
	if (rr->head_off < c->used || c == rr->tail)
		return NULL;
	/* read to its end and the reader writes elsewhere: let it go */
	rr->head = c->next;
	rr->head_off = 0;
	rr->bytes -= CHUNK_BYTES;
	if (!rr->spare) {
		rr->spare = c;
		return NULL;
	}
	return c;
}

int ring_reader_consume(struct ring_reader *rr, int timeout_ms,
			ember_record_fn fn, void *ctx)
{
	int n = 0;

	pthread_mutex_lock(&rr->lock);
	wait_for_record(rr, timeout_ms);
	rr->unsig = 0;		/* what is published is taken now */
	while (n < CONSUME_BUDGET && rr->head) {
		const struct ember_rec_header *rec;
		struct chunk *dead, *c;
		size_t off, end, at;

		if (rr->head_off == rr->head->used) {
			if (rr->head == rr->tail)
				break;	/* all read */
			dead = advance(rr, 0);
			if (dead) {
				pthread_mutex_unlock(&rr->lock);
				chunk_free(dead);
				pthread_mutex_lock(&rr->lock);
			}
			continue;
		}
		/*
		 * What the head chunk holds now is the consumer's: handled
		 * without the lock, which is taken once per run of records
		 * (the reader only appends past it)
		 */
		c = rr->head;
		off = rr->head_off;
		end = c->used;
		pthread_mutex_unlock(&rr->lock);
		for (at = off; at < end && n < CONSUME_BUDGET; n++) {
			rec = (const void *)(c->data + at);
			at += rec_space(rec->size);
			fn(rec, ctx);
		}
		pthread_mutex_lock(&rr->lock);
		dead = advance(rr, at - off);
		if (dead) {
			pthread_mutex_unlock(&rr->lock);
			chunk_free(dead);
			pthread_mutex_lock(&rr->lock);
		}
	}
	if (!n && rr->done && rr->error)
		n = rr->error;
	pthread_mutex_unlock(&rr->lock);
	return n;
}

bool ring_reader_sync(struct ring_reader *rr, int timeout_ms)
{
	struct timespec ts;
	uint64_t mine;
	bool done;

	if (!rr || !rr->started)
		return false;
	ts = deadline_after_ns(CLOCK_MONOTONIC, (uint64_t)timeout_ms * 1000000u);
	pthread_mutex_lock(&rr->lock);
	mine = ++rr->sync_asked;
	pthread_mutex_unlock(&rr->lock);
	wake_reader(rr);
	pthread_mutex_lock(&rr->lock);
	while (rr->sync_done < mine && !rr->done &&
	       pthread_cond_timedwait(&rr->synced, &rr->lock, &ts) != ETIMEDOUT)
		;
	done = rr->sync_done >= mine;
	pthread_mutex_unlock(&rr->lock);
	return done;
}

void ring_reader_stop(struct ring_reader *rr)
{
	if (!rr || !rr->started)
		return;
	pthread_mutex_lock(&rr->lock);
	rr->stopping = true;
	pthread_mutex_unlock(&rr->lock);
	wake_reader(rr);
	pthread_join(rr->thread, NULL);
	rr->started = false;
}

uint64_t ring_reader_copies_shed(struct ring_reader *rr)
{
	uint64_t n;

	if (!rr)
		return 0;
	pthread_mutex_lock(&rr->lock);
	n = rr->copies_shed;
	pthread_mutex_unlock(&rr->lock);
	return n;
}

uint64_t ring_reader_dropped(struct ring_reader *rr)
{
	uint64_t d;

	if (!rr)
		return 0;
	pthread_mutex_lock(&rr->lock);
	d = rr->dropped;
	pthread_mutex_unlock(&rr->lock);
	return d;
}

void ring_reader_free(struct ring_reader *rr)
{
	if (!rr)
		return;
	ring_reader_stop(rr);
	while (rr->head) {
		struct chunk *c = rr->head;

		rr->head = c->next;
		chunk_free(c);
	}
	chunk_free(rr->spare);
	pthread_cond_destroy(&rr->synced);
	pthread_cond_destroy(&rr->ready);
	pthread_mutex_destroy(&rr->lock);
	free(rr);
}
