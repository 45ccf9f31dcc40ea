// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tables shared with the stack replay (table_share.h): a chained hash of
 * files by device and inode, each entry holding a reference to its
 * table's bytes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/table_share.h"

#define SHARE_BUCKETS	1024

struct table_blob {
	uint32_t refs;		/* references: entries and walks */
	uint32_t entries;	/* entries holding it: its bytes count while > 0 */
	size_t len;
	uint64_t data[];	/* the table, 8-aligned */
};

struct share_entry {
	struct share_entry *next;
	uint64_t dev, ino;
	uint64_t used;		/* the share's clock at its last get */
	uint32_t tag;		/* table_share_put()'s */
	struct table_blob *blob;
	struct table_share_seg segs[TABLE_SHARE_MAX_SEGS];
	uint32_t nr_segs;
};

struct table_share {
	pthread_mutex_t lock;
	size_t max_bytes;
	uint64_t clock;
	struct table_share_stats st;
	struct share_entry *bucket[SHARE_BUCKETS];
};

struct table_share *table_share_new(size_t max_bytes)
{
	struct table_share *ts = calloc(1, sizeof(*ts));

	if (!ts)
		return NULL;
	pthread_mutex_init(&ts->lock, NULL);
	ts->max_bytes = max_bytes ? max_bytes : TABLE_SHARE_DEFAULT_BYTES;
	return ts;
}

static void blob_put_locked(struct table_blob *b)
{
	if (b && !--b->refs)
		free(b);
}

static void entry_free_locked(struct table_share *ts, struct share_entry *e)
{
	struct table_blob *b = e->blob;

	if (b && !--b->entries)
		ts->st.bytes -= b->len;
	blob_put_locked(b);
	ts->st.files--;
	free(e);
}

void table_share_free(struct table_share *ts)
{
	if (!ts)
		return;
	for (int i = 0; i < SHARE_BUCKETS; i++) {
		struct share_entry *e = ts->bucket[i], *next;

		for (; e; e = next) {
			next = e->next;
			entry_free_locked(ts, e);
		}
	}
	pthread_mutex_destroy(&ts->lock);
	free(ts);
}

struct table_blob *table_blob_new(struct table_share *ts, const void *table,
				  size_t len)
{
	struct table_blob *b;

	if (!ts || len > ts->max_bytes)
		return NULL;
	b = malloc(sizeof(*b) + len);
	if (!b)
		return NULL;
	b->refs = 1;
	b->entries = 0;
	b->len = len;
	memcpy(b->data, table, len);
	return b;
}

void table_blob_put(struct table_share *ts, struct table_blob *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&ts->lock);
	blob_put_locked(b);
	pthread_mutex_unlock(&ts->lock);
}

static struct share_entry **slot_of(struct table_share *ts, uint64_t dev,
				    uint64_t ino)
{
	uint64_t h = (dev * 0x9e3779b97f4a7c15ull) ^ (ino * 0xff51afd7ed558ccdull);
	struct share_entry **p = &ts->bucket[(h >> 32) % SHARE_BUCKETS];

	while (*p && ((*p)->dev != dev || (*p)->ino != ino))
		p = &(*p)->next;
	return p;
}

static void unlink_locked(struct table_share *ts, struct share_entry **p)
{
	struct share_entry *e = *p;

	*p = e->next;
	entry_free_locked(ts, e);
}

/* The least recently used entry with a table, or NULL. */
static struct share_entry **lru_locked(struct table_share *ts)
{
	struct share_entry **victim = NULL;

	for (int i = 0; i < SHARE_BUCKETS; i++)
		for (struct share_entry **p = &ts->bucket[i]; *p; p = &(*p)->next)
			if ((*p)->blob && (!victim || (*p)->used < (*victim)->used))
				victim = p;
	return victim;
}

void table_share_put(struct table_share *ts, uint64_t dev, uint64_t ino,
		     const struct table_share_seg *segs, uint32_t nr_segs,
		     struct table_blob *b, uint32_t tag)
{
	struct share_entry **p, *e;

	if (!ts)
		return;
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->dev = dev;
	e->ino = ino;
	e->tag = tag;
	e->nr_segs = nr_segs < TABLE_SHARE_MAX_SEGS ? nr_segs : TABLE_SHARE_MAX_SEGS;
	memcpy(e->segs, segs, e->nr_segs * sizeof(*segs));
	pthread_mutex_lock(&ts->lock);
	p = slot_of(ts, dev, ino);
	if (*p)
		unlink_locked(ts, p);
	if (b) {
		b->refs++;
		if (!b->entries++)
			ts->st.bytes += b->len;
	}
	e->blob = b;
	e->used = ++ts->clock;
	p = slot_of(ts, dev, ino);
	*p = e;
	ts->st.files++;
	while (ts->st.bytes > ts->max_bytes) {
		struct share_entry **v = lru_locked(ts);

		if (!v)
			break;
		unlink_locked(ts, v);
		ts->st.evicted++;
	}
	pthread_mutex_unlock(&ts->lock);
}

void table_share_forget(struct table_share *ts, uint64_t dev, uint64_t ino,
			uint32_t tag)
{
	struct share_entry **p;

	if (!ts)
		return;
	pthread_mutex_lock(&ts->lock);
	p = slot_of(ts, dev, ino);
	if (*p && (*p)->tag == tag)
		unlink_locked(ts, p);
	pthread_mutex_unlock(&ts->lock);
}

bool table_share_get(struct table_share *ts, uint64_t dev, uint64_t ino,
		     struct table_ref *ref)
{
	struct share_entry *e;

	memset(ref, 0, sizeof(*ref));
	if (!ts)
		return false;
	pthread_mutex_lock(&ts->lock);
	e = *slot_of(ts, dev, ino);
	if (e) {
		e->used = ++ts->clock;
		ref->blob = e->blob;
		if (e->blob) {
			e->blob->refs++;
			ref->table = (const void *)e->blob->data;
		}
		memcpy(ref->segs, e->segs, sizeof(ref->segs));
		ref->nr_segs = e->nr_segs;
	}
	pthread_mutex_unlock(&ts->lock);
	return e != NULL;
}

void table_share_unref(struct table_share *ts, struct table_ref *ref)
{
	table_blob_put(ts, ref->blob);
	memset(ref, 0, sizeof(*ref));
}

bool table_segs_bias(const struct table_share_seg *segs, uint32_t nr_segs,
		     uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	for (uint32_t i = 0; i < nr_segs; i++) {
		const struct table_share_seg *s = &segs[i];
		uint64_t page_off = s->offset & ~0xfffULL;

		if (pgoff >= page_off && pgoff < s->offset + s->filesz) {
			*bias = start - s->vaddr + s->offset - pgoff;
			return true;
		}
	}
	return false;
}

bool table_ref_bias(const struct table_ref *ref, uint64_t start,
		    uint64_t pgoff, uint64_t *bias)
{
	return table_segs_bias(ref->segs, ref->nr_segs, start, pgoff, bias);
}

void table_share_get_stats(struct table_share *ts, struct table_share_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!ts)
		return;
	pthread_mutex_lock(&ts->lock);
	*st = ts->st;
	pthread_mutex_unlock(&ts->lock);
}
