// SPDX-License-Identifier: GPL-2.0-only
/*
 * -e lock: waits joined with their wakers (lock_join.h says the rules).
 *
 * Each held record is a copy trimmed to what is known (the sample, its
 * frames and the lock trailer), in one allocation with its links: a hash
 * chain for the lookup by (tid, start_ns) and a FIFO list, so that the
 * oldest is evicted or expired first without a scan.
 */
#include <stdlib.h>
#include <string.h>
#include "aggregate/lock_join.h"

struct lock_pend {
	struct lock_pend *hnext;		/* hash chain */
	struct lock_pend *older, *newer;	/* FIFO */
	uint64_t start_ns;
	uint64_t seen_ns;	/* lock_join.now_ns when it came */
	uint32_t tid;
	size_t bytes;
	uint64_t rec[];		/* the record: struct ember_sample + trailer */
};

static uint64_t key_hash(uint32_t tid, uint64_t start_ns)
{
	uint64_t h = start_ns ^ ((uint64_t)tid * 0x9e3779b97f4a7c15ull);

	h ^= h >> 31;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

static void table_init(struct lock_pend_table *t, size_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
	t->max_bytes = LOCK_JOIN_MAX_BYTES;
}

static struct lock_pend **bucket(struct lock_pend_table *t, uint32_t tid,
				 uint64_t start_ns)
{
	return &t->buckets[key_hash(tid, start_ns) & (t->nr_buckets - 1)];
}

/* Unlink p from both lists; the caller frees it or hands it on. */
static void table_unlink(struct lock_pend_table *t, struct lock_pend *p)
{
	struct lock_pend **pp = bucket(t, p->tid, p->start_ns);

	while (*pp && *pp != p)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = p->hnext;
	if (p->older)
		p->older->newer = p->newer;
	else
		t->oldest = p->newer;
	if (p->newer)
		p->newer->older = p->older;
	else
		t->newest = p->older;
	t->nr--;
	t->bytes -= p->bytes;
}

static struct lock_pend *table_take(struct lock_pend_table *t, uint32_t tid,
				    uint64_t start_ns)
{
	struct lock_pend *p;

	if (!t->nr)
		return NULL;
	for (p = *bucket(t, tid, start_ns); p; p = p->hnext)
		if (p->tid == tid && p->start_ns == start_ns)
			break;
	if (p)
		table_unlink(t, p);
	return p;
}

static struct lock_pend *table_pop_oldest(struct lock_pend_table *t)
{
	struct lock_pend *p = t->oldest;

	if (p)
		table_unlink(t, p);
	return p;
}

/* Would a record of bytes fit without evicting? */
static bool table_fits(const struct lock_pend_table *t, size_t bytes)
{
	return t->nr < t->max && t->bytes + bytes <= t->max_bytes;
}

/* A trimmed copy of s keyed by (tid, start_ns); NULL when out of memory. */
static struct lock_pend *pend_new(const struct ember_sample *s, uint32_t tid,
				  uint64_t start_ns, uint64_t now)
{
	size_t len = sizeof(*s) +
		     8 * ((size_t)s->nr_kernel + s->nr_user + 3);
	struct lock_pend *p = malloc(sizeof(*p) + len);
	struct ember_sample *copy;

	if (!p)
		return NULL;
	memcpy(p->rec, s, len);
	copy = (struct ember_sample *)p->rec;
	copy->hdr.size = (uint32_t)len;
	p->hnext = p->older = p->newer = NULL;
	p->tid = tid;
	p->start_ns = start_ns;
	p->seen_ns = now;
	p->bytes = sizeof(*p) + len;
	return p;
}

static bool table_add(struct lock_pend_table *t, struct lock_pend *p)
{
	struct lock_pend **b;

	if (!t->nr_buckets) {
		size_t n = 16;

		while (n < 2 * t->max)
			n *= 2;
		t->buckets = calloc(n, sizeof(*t->buckets));
		if (!t->buckets)
			return false;
		t->nr_buckets = n;
	}
	b = bucket(t, p->tid, p->start_ns);
	p->hnext = *b;
	*b = p;
	p->older = t->newest;
	p->newer = NULL;
	if (t->newest)
		t->newest->newer = p;
	else
		t->oldest = p;
	t->newest = p;
	t->nr++;
	t->bytes += p->bytes;
	return true;
}

static void table_release(struct lock_pend_table *t)
{
	struct lock_pend *p, *next;

	for (p = t->oldest; p; p = next) {
		next = p->newer;
		free(p);
	}
	free(t->buckets);
	memset(t, 0, sizeof(*t));
}

static const struct ember_sample *pend_sample(const struct lock_pend *p)
{
	return (const struct ember_sample *)p->rec;
}

void lock_join_init(struct lock_join *j)
{
	memset(j, 0, sizeof(*j));
	table_init(&j->wakers, LOCK_JOIN_MAX_WAKERS);
	table_init(&j->waits, LOCK_JOIN_MAX_WAITS);
}

void lock_join_release(struct lock_join *j)
{
	table_release(&j->wakers);
	table_release(&j->waits);
}

size_t lock_join_held(const struct lock_join *j, size_t *bytes)
{
	if (bytes)
		*bytes = j->wakers.bytes + j->waits.bytes;
	return j->wakers.nr + j->waits.nr;
}

/* A queued wait whose waker did not come: on its own. */
static void emit_missing(struct lock_join *j, struct lock_pend *p,
			 lock_emit_fn emit, void *ctx)
{
	j->c.missing++;
	emit(ctx, pend_sample(p), NULL);
	free(p);
}

/*
 * Record time moves on (the latest seen: rings are read in turn, a
 * record's own time may be older): expire what waited too long.
 */
static void advance(struct lock_join *j, uint64_t time_ns, lock_emit_fn emit,
		    void *ctx)
{
	struct lock_pend *p;

	if (time_ns > j->now_ns)
		j->now_ns = time_ns;
	while ((p = j->waits.oldest) &&
	       j->now_ns - p->seen_ns > LOCK_JOIN_WAIT_NS)
		emit_missing(j, table_pop_oldest(&j->waits), emit, ctx);
	while ((p = j->wakers.oldest) &&
	       j->now_ns - p->seen_ns > LOCK_JOIN_ORPHAN_NS) {
		free(table_pop_oldest(&j->wakers));
		j->c.orphans++;
	}
}

void lock_join_wait(struct lock_join *j, const struct ember_sample *s,
		    lock_emit_fn emit, void *ctx)
{
	const struct ember_lock_wait *w = EMBER_LOCK_WAIT(s);
	struct lock_pend *waker, *p;

	advance(j, s->time_ns, emit, ctx);
	waker = table_take(&j->wakers, s->tid, w->start_ns);
	if (!w->waker_tid) {
		/* a timeout or a signal: a waker written anyway is an orphan */
		if (waker) {
			j->c.orphans++;
			free(waker);
		}
		emit(ctx, s, NULL);
		return;
	}
	if (waker) {
		j->c.joined++;
		emit(ctx, s, pend_sample(waker));
		free(waker);
		return;
	}
	/* its waker is still in another CPU's ring, or lost */
	p = pend_new(s, s->tid, w->start_ns, j->now_ns);
	while (p && !table_fits(&j->waits, p->bytes) && j->waits.nr)
		emit_missing(j, table_pop_oldest(&j->waits), emit, ctx);
	if (!p || !table_fits(&j->waits, p->bytes) || !table_add(&j->waits, p)) {
		free(p);
		j->c.missing++;
		emit(ctx, s, NULL);
	}
}

void lock_join_waker(struct lock_join *j, const struct ember_sample *s,
		     lock_emit_fn emit, void *ctx)
{
	const struct ember_lock_waker *k = EMBER_LOCK_WAKER(s);
	struct lock_pend *wait, *p;

	advance(j, s->time_ns, emit, ctx);
	wait = table_take(&j->waits, k->waiter_tid, k->start_ns);
	if (wait) {
		j->c.joined++;
		emit(ctx, pend_sample(wait), s);
		free(wait);
		return;
	}
	p = pend_new(s, k->waiter_tid, k->start_ns, j->now_ns);
	while (p && !table_fits(&j->wakers, p->bytes) && j->wakers.nr) {
		free(table_pop_oldest(&j->wakers));
		j->c.evicted++;
	}
	if (!p || !table_fits(&j->wakers, p->bytes) ||
	    !table_add(&j->wakers, p)) {
		free(p);
		j->c.evicted++;
	}
}

void lock_join_flush(struct lock_join *j, lock_emit_fn emit, void *ctx)
{
	struct lock_pend *p;

	while ((p = table_pop_oldest(&j->waits)))
		emit_missing(j, p, emit, ctx);
}
