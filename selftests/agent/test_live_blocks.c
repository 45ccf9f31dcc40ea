// SPDX-License-Identifier: GPL-2.0-only
/*
 * agent/aggregate/live_blocks.c: the table of sampled blocks not freed yet,
 * checked against a plain array on random adds, takes and prunes
 * (backward-shift deletion must never lose or duplicate a block), and its
 * bounds: full is refused, not grown; address 0 and duplicates are refused.
 */
#include <stdint.h>
#include <string.h>

#include "aggregate/live_blocks.h"
#include "test_util.h"

#define N 3000

static struct { uint64_t addr; uint32_t pid; int live; } ref[N];

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static bool drop_odd_pid(const struct live_block *b, void *ctx)
{
	(void)ctx;
	return b->pid & 1;
}

int main(void)
{
	struct live_blocks lb;
	struct live_block b, out;
	bool ok = true;
	size_t live = 0, full_refused = 0;

	T_CHECK("live_init", !live_init(&lb, 4096) && lb.cap >= 4096 * 4 / 3,
		"cap %zu", lb.cap);
	for (int i = 0; i < N; i++) {
		/* clustered addresses and few pids: long probe runs */
		ref[i].addr = 0x10000 + (next() % 5000) * 16;
		ref[i].pid = 100 + (uint32_t)(next() % 4);
	}
	for (int round = 0; round < 200000 && ok; round++) {
		int i = (int)(next() % N);

		if (!ref[i].live) {
			b = (struct live_block){ .addr = ref[i].addr,
						 .pid = ref[i].pid, .bytes = i };
			/* the same (pid, addr) may be live under another i */
			bool dup = false;

			for (int j = 0; j < N && !dup; j++)
				dup = ref[j].live && ref[j].addr == ref[i].addr &&
				      ref[j].pid == ref[i].pid;
			if (live_add(&lb, &b)) {
				ok = !dup;
				ref[i].live = 1;
				live++;
			} else if (!dup) {
				full_refused++;
			}
		} else {
			ok = live_take(&lb, ref[i].pid, ref[i].addr, &out) &&
			     out.bytes == (uint64_t)i &&
			     !live_take(&lb, ref[i].pid, ref[i].addr, &out);
			ref[i].live = 0;
			live--;
		}
		ok = ok && lb.used == live;
	}
	T_CHECK("live_random_add_take_consistent", ok && !full_refused,
		"used %zu live %zu refused %zu", lb.used, live, full_refused);

	live_prune(&lb, drop_odd_pid, NULL);
	for (int i = 0; i < N && ok; i++)
		if (ref[i].live) {
			bool there = live_take(&lb, ref[i].pid, ref[i].addr, &out);

			ok = there == !(ref[i].pid & 1);
		}
	T_CHECK("live_prune_exact", ok && lb.used == 0, "used %zu", lb.used);

	b = (struct live_block){ .addr = 0, .pid = 1 };
	T_CHECK("live_refuses_address_0", !live_add(&lb, &b), "added");
	for (size_t i = 0; i < lb.cap; i++) {
		b = (struct live_block){ .addr = 16 * (i + 1), .pid = 7 };
		if (!live_add(&lb, &b))
			break;
	}
	T_CHECK("live_full_refused_not_grown", lb.used * 4 <= lb.cap * 3 &&
		lb.used >= lb.cap / 2, "used %zu cap %zu", lb.used, lb.cap);
	live_release(&lb);
	T_EXIT();
}
