// SPDX-License-Identifier: GPL-2.0-only
/*
 * The live-block table (live_blocks.h): linear probing kept at most 3/4
 * full, deletion by backward shift (no tombstones, so lookups stay short
 * however many blocks come and go).
 */
#include <errno.h>
#include <stdlib.h>
#include "aggregate/live_blocks.h"

static size_t home(const struct live_blocks *lb, uint32_t pid, uint64_t addr)
{
	uint64_t h = (addr >> 4) ^ ((uint64_t)pid << 40);

	h *= 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20) & (lb->cap - 1);
}

int live_init(struct live_blocks *lb, size_t cap)
{
	size_t n = 16;

	while (n < cap + cap / 3)
		n *= 2;
	lb->slot = calloc(n, sizeof(*lb->slot));
	lb->cap = lb->slot ? n : 0;
	lb->used = 0;
	return lb->slot ? 0 : -ENOMEM;
}

void live_release(struct live_blocks *lb)
{
	free(lb->slot);
	lb->slot = NULL;
	lb->cap = lb->used = 0;
}

bool live_add(struct live_blocks *lb, const struct live_block *b)
{
	size_t i;

	if (!b->addr || !lb->cap || (lb->used + 1) * 4 > lb->cap * 3)
		return false;
	for (i = home(lb, b->pid, b->addr); lb->slot[i].addr;
	     i = (i + 1) & (lb->cap - 1))
		if (lb->slot[i].addr == b->addr && lb->slot[i].pid == b->pid)
			return false;	/* reported twice: keep the first */
	lb->slot[i] = *b;
	lb->used++;
	return true;
}

/* Empty slot i, moving later entries of the run back into the gap. */
static void remove_at(struct live_blocks *lb, size_t i)
{
	size_t mask = lb->cap - 1, j = i;

	for (;;) {
		size_t h;

		j = (j + 1) & mask;
		if (!lb->slot[j].addr)
			break;
		h = home(lb, lb->slot[j].pid, lb->slot[j].addr);
		/* j may move to i when its home is not in (i, j] */
		if (((j - h) & mask) >= ((j - i) & mask)) {
			lb->slot[i] = lb->slot[j];
			i = j;
		}
	}
	lb->slot[i].addr = 0;
	lb->used--;
}

bool live_take(struct live_blocks *lb, uint32_t pid, uint64_t addr,
	       struct live_block *out)
{
	size_t i;

	if (!lb->cap || !addr)
		return false;
	for (i = home(lb, pid, addr); lb->slot[i].addr;
	     i = (i + 1) & (lb->cap - 1)) {
		if (lb->slot[i].addr == addr && lb->slot[i].pid == pid) {
			*out = lb->slot[i];
			remove_at(lb, i);
			return true;
		}
	}
	return false;
}

void live_prune(struct live_blocks *lb,
		bool (*drop)(const struct live_block *b, void *ctx), void *ctx)
{
	size_t i = 0;

	while (i < lb->cap) {
		/* a removal may shift a later block into i: look again */
		if (lb->slot[i].addr && drop(&lb->slot[i], ctx))
			remove_at(lb, i);
		else
			i++;
	}
}
