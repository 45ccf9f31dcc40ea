/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Sampled allocations not freed yet, by (pid, address): what in-use
 * memory per stack is made of (-e alloc). A fixed-size open-addressing
 * table allocated once: a process that never frees costs a counted
 * "untracked" block when it is full, never more memory.
 */
#ifndef EMBER_LIVE_BLOCKS_H
#define EMBER_LIVE_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct live_block {
	uint64_t addr;		/* 0: free slot */
	uint32_t pid;
	uint32_t objects;	/* allocations the sample stands for */
	uint64_t bytes;		/* bytes it stands for */
	void *owner;		/* the caller's aggregate for its stack */
};

struct live_blocks {
	struct live_block *slot;
	size_t cap;		/* power of two */
	size_t used;
};

/* cap: blocks followed at most (rounded up to a power of two). */
int live_init(struct live_blocks *lb, size_t cap);
void live_release(struct live_blocks *lb);

/* false when the table is full (or addr is 0): the block is not followed */
bool live_add(struct live_blocks *lb, const struct live_block *b);

/* Remove (pid, addr) into *out; false if it is not followed. */
bool live_take(struct live_blocks *lb, uint32_t pid, uint64_t addr,
	       struct live_block *out);

/* Remove every block drop() says so of (after passing it to drop). */
void live_prune(struct live_blocks *lb,
		bool (*drop)(const struct live_block *b, void *ctx), void *ctx);

#endif /* EMBER_LIVE_BLOCKS_H */
