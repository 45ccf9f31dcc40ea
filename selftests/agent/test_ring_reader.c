// SPDX-License-Identifier: GPL-2.0-only
/*
 * The reader thread (agent/source/ring_reader.c) against a fake backend whose
 * poll hands out numbered records of varied sizes:
 *  - every record arrives once, in order, with its bytes intact, across
 *    chunk boundaries, while the consumer takes them in small bites;
 *  - the hint sees each record on the reader's thread before the consumer;
 *  - a consumer that does not consume makes the queue drop and count,
 *    never grow past its bound or block the reader;
 *  - stop takes what the backend still holds (the final drain) and the
 *    queue keeps it for the consumer;
 *  - a failing poll reaches the consumer as an error once the queue is
 *    empty;
 *  - ring_reader_sync() returns once a record written before it went
 *    through the hint, at once where the backend can be woken.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/wake_fd.h"
#include "uapi/ember.h"
#include "source/ring_reader.h"
#include "test_util.h"

struct fake_rec {
	struct ember_rec_header hdr;
	uint64_t seq;
	uint8_t fill[];			/* (seq & 0xff) repeated */
};

static atomic_ulong produced;		/* records handed out by poll */
static atomic_ulong limit;		/* poll stops producing here */
static atomic_int fail;			/* poll returns -EIO */
static atomic_int odd_copies;		/* odd seqs are EMBER_REC_USER_STACK */
static pthread_t reader_thread;
static atomic_int hint_on_other_thread, hints;

static size_t size_of(uint64_t seq)
{
	/* 24 .. 8,000 bytes: many per chunk, some crossing chunk ends */
	return sizeof(struct fake_rec) + (seq * 7919) % 8000;
}

static int f_poll(struct ember_source *src, int timeout_ms,
		  ember_record_fn fn, void *ctx)
{
	static uint8_t buf[16384] __attribute__((aligned(8)));
	struct fake_rec *r = (struct fake_rec *)buf;
	int n = 0;

	(void)src;
	reader_thread = pthread_self();
	if (fail)
		return -EIO;
	while (n < 500 && produced < limit) {
		uint64_t seq = produced;
		size_t sz = size_of(seq);

		memset(r, 0, sizeof(*r));
		r->hdr.type = odd_copies && (seq & 1) ? EMBER_REC_USER_STACK :
							EMBER_REC_SAMPLE;
		r->hdr.size = (uint16_t)sz;
		r->seq = seq;
		memset(r->fill, (int)(seq & 0xff), sz - sizeof(*r));
		fn(&r->hdr, ctx);
		produced++;
		n++;
	}
	if (!n && timeout_ms > 0)
		usleep(1000);
	return n;
}

static const struct ember_source_ops fake_ops = { .name = "fake", .poll = f_poll };

static void hint(const struct ember_rec_header *rec, void *ctx)
{
	(void)rec; (void)ctx;
	hints++;
	if (!pthread_equal(pthread_self(), reader_thread))
		hint_on_other_thread = 1;
}

struct seen {
	uint64_t next, bad;
	int gaps_ok;			/* after drops: in order, not consecutive */
};

static void consume(const struct ember_rec_header *rec, void *ctx)
{
	const struct fake_rec *r = (const void *)rec;
	struct seen *s = ctx;
	size_t fill = rec->size - sizeof(*r);

	if ((s->gaps_ok ? r->seq < s->next : r->seq != s->next) ||
	    rec->size != size_of(r->seq))
		s->bad++;
	for (size_t i = 0; i < fill; i++)
		if (r->fill[i] != (uint8_t)(r->seq & 0xff)) {
			s->bad++;
			break;
		}
	s->next = r->seq + 1;
}

struct by_type {
	uint64_t samples, copies, bad;
};

static void count_types(const struct ember_rec_header *rec, void *ctx)
{
	const struct fake_rec *r = (const void *)rec;
	struct by_type *b = ctx;

	if (rec->type == EMBER_REC_USER_STACK)
		b->copies++;
	else if (!(r->seq & 1))
		b->samples++;
	else
		b->bad++;
}

/*
 * 6. ring_reader_sync(): a backend that waits long between drains (a
 * ring whose watermark a few mapping records never reach), with and
 * without a wake op. A record written before the call has been through
 * the hint when it returns; with the op it returns at once, not at the
 * end of the wait.
 */
static atomic_int sync_written, sync_hinted;
static int sync_efd = -1;

static int s_poll(struct ember_source *src, int timeout_ms,
		  ember_record_fn fn, void *ctx)
{
	struct pollfd p = { .fd = sync_efd, .events = POLLIN };
	struct fake_rec r = { .hdr = { .type = EMBER_REC_MMAP,
				       .size = sizeof(r) } };
	/* what the ring holds as the poll begins: a poll that began
	 * before the record was written does not deliver it (its drain
	 * may have passed that ring already) */
	int written = atomic_load(&sync_written);

	(void)src;
	/* the backend's own wait: far longer than READ_WAIT_MS */
	if (timeout_ms && poll(&p, 1, 2000) > 0)
		wake_fd_clear(sync_efd);
	if (written && atomic_exchange(&sync_written, 0)) {
		fn(&r.hdr, ctx);
		return 1;
	}
	return 0;
}

static void s_wake(struct ember_source *src)
{
	(void)src;
	wake_fd_signal(sync_efd);
}

static void s_hint(const struct ember_rec_header *rec, void *ctx)
{
	(void)ctx;
	if (rec->type == EMBER_REC_MMAP)
		sync_hinted++;
}

static void sync_case(const char *name, const struct ember_source_ops *ops,
		      int want_ms)
{
	struct ring_reader *rr = ring_reader_start(ops, NULL, s_hint, NULL, 0);
	char tn[64];
	bool ok;
	uint64_t t0, ms;

	usleep(20000);		/* the reader waits in its poll now */
	sync_hinted = 0;
	sync_written = 1;	/* the kernel wrote a record */
	t0 = mono_ns();
	ok = ring_reader_sync(rr, 10000);
	ms = (mono_ns() - t0) / 1000000;
	snprintf(tn, sizeof(tn), "ring_reader_sync_%s_hinted", name);
	T_CHECK(tn, ok && sync_hinted == 1, "sync %d, %d hints", ok,
		(int)sync_hinted);
	snprintf(tn, sizeof(tn), "ring_reader_sync_%s_prompt", name);
	T_CHECK(tn, ms < (uint64_t)want_ms, "%llu ms (want < %d)",
		(unsigned long long)ms, want_ms);
	ring_reader_free(rr);
}

static void test_sync(void)
{
	static const struct ember_source_ops waking = {
		.name = "waking", .poll = s_poll, .wake = s_wake
	};
	static const struct ember_source_ops plain = {
		.name = "plain", .poll = s_poll
	};

	sync_efd = wake_fd_open();
	/* woken: well under the backend's 2 s wait */
	sync_case("woken", &waking, 1000);
	/* not woken: the wait runs out, then one more drain */
	sync_case("unwoken", &plain, 6000);
	close(sync_efd);
}

/*
 * 5. copies and samples, a consumer that does not keep up: past half the
 * queue's bound copies are shed (counted), and no sample is lost.
 */
static void test_copies_shed(void)
{
	struct by_type b = { 0 };
	struct ring_reader *rr;
	uint64_t start;

	odd_copies = 1;
	fail = 0;
	start = produced;
	limit = produced + 2400;	/* ~9.6 MB in all, samples ~4.8 MB */
	rr = ring_reader_start(&fake_ops, NULL, NULL, NULL, 8u << 20);
	for (int i = 0; rr && i < 500 && produced < limit; i++)
		usleep(10000);
	ring_reader_stop(rr);
	while (rr && ring_reader_consume(rr, 0, count_types, &b) > 0)
		;
	T_CHECK("ring_reader_copies_shed_past_half",
		rr && ring_reader_copies_shed(rr) > 0 &&
		b.copies + ring_reader_copies_shed(rr) == (limit - start) / 2,
		"%lu shed, %lu copies handed", rr ?
		(unsigned long)ring_reader_copies_shed(rr) : 0,
		(unsigned long)b.copies);
	T_CHECK("ring_reader_samples_kept_over_copies",
		rr && b.samples == (limit - start) / 2 && !b.bad &&
		ring_reader_dropped(rr) == 0,
		"%lu of %lu samples, %lu dropped", (unsigned long)b.samples,
		(unsigned long)(limit - start) / 2,
		rr ? (unsigned long)ring_reader_dropped(rr) : 0);
	ring_reader_free(rr);
	odd_copies = 0;
}

int main(void)
{
	struct seen s = { 0 };
	struct ring_reader *rr;
	int n, err;

	/* 1. all in order, intact (~40 MB: within the bound whatever the
	 * consumer's pace) */
	limit = 10000;
	rr = ring_reader_start(&fake_ops, NULL, hint, NULL, 64u << 20);
	T_CHECK("ring_reader_starts", rr != NULL, "errno %d", errno);
	if (!rr)
		T_EXIT();
	for (int i = 0; i < 20000 && s.next < 10000; i++)
		ring_reader_consume(rr, 10, consume, &s);
	T_CHECK("ring_reader_in_order_intact", s.next == 10000 && s.bad == 0,
		"%lu of 10000 records, %lu bad", (unsigned long)s.next,
		(unsigned long)s.bad);
	T_CHECK("ring_reader_hint_on_reader_thread", hints >= 10000 &&
		!hint_on_other_thread, "%d hints, other thread %d", hints,
		hint_on_other_thread);
	T_CHECK("ring_reader_nothing_dropped", ring_reader_dropped(rr) == 0,
		"%lu dropped", (unsigned long)ring_reader_dropped(rr));

	/* 2. a consumer that sleeps: bounded queue, drops counted */
	limit = produced + 100000;
	for (int i = 0; i < 200 && produced < limit; i++)
		usleep(10000);
	T_CHECK("ring_reader_never_blocks_reader", produced == limit,
		"the fake backend produced %lu of %lu", (unsigned long)produced,
		(unsigned long)limit);
	T_CHECK("ring_reader_full_queue_drops_and_counts",
		ring_reader_dropped(rr) > 0, "nothing dropped");

	/* 3. stop: the final drain, then everything queued is handed out */
	{
		uint64_t handed = 0, before;

		s.gaps_ok = 1;		/* part 2 dropped some */
		while (ring_reader_consume(rr, 0, consume, &s) > 0)
			;
		before = produced;
		s.next = before;
		s.gaps_ok = 0;
		s.bad = 0;
		limit = produced + 300;	/* written "before the stop" */
		ring_reader_stop(rr);
		while ((n = ring_reader_consume(rr, 0, consume, &s)) > 0)
			handed += (uint64_t)n;
		T_CHECK("ring_reader_stop_drains_backend", produced == before + 300,
			"final drain took %lu of 300",
			(unsigned long)(produced - before));
		T_CHECK("ring_reader_queue_kept_after_stop", handed == 300 &&
			s.bad == 0 && s.next == produced,
			"%lu handed after stop, %lu bad", (unsigned long)handed,
			(unsigned long)s.bad);
	}
	ring_reader_free(rr);

	/* 4. a failing backend: the error reaches the consumer */
	fail = 1;
	rr = ring_reader_start(&fake_ops, NULL, NULL, NULL, 0);
	err = 0;
	for (int i = 0; rr && i < 100 && !err; i++) {
		n = ring_reader_consume(rr, 10, consume, &s);
		if (n < 0)
			err = n;
	}
	T_CHECK("ring_reader_error_reaches_consumer", err == -EIO, "got %d", err);
	ring_reader_free(rr);
	test_copies_shed();
	test_sync();
	T_EXIT();
}
