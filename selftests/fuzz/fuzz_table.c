// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: bytes -> the shared unwind-table checker of
 * include/ember_unwind.h, the one the module runs on every table that
 * arrives over netlink (the VMs send it structure-aware mutations:
 * ember-test tablefuzz) and the agent runs on the tables it builds. A table
 * the checker accepts must be safe for every consumer: each row is found
 * at its own address, lookups never leave the table or return anything
 * but one of its rules, nothing is found outside the pages, and a step
 * with any accepted rule returns. ASan/UBSan see any read past the blob.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ember_unwind.h"

/* User memory where every aligned slot holds a value made from its address. */
static int fake_read(void *ctx, __u64 addr, __u64 *val)
{
	(void)ctx;
	if (addr & 7)
		return -1;
	*val = (addr * 0x9e3779b97f4a7c15ULL) >> (addr & 0x38);
	return 0;
}

static void step_with(const struct ember_unwind_rule *r, __u64 pc)
{
	struct ember_uregs regs = {
		.pc = pc, .sp = 0x7ffc00001000ULL, .fp = 0x7ffc00002000ULL,
		.fp_ok = 1, .exact = 1,
	};
	int s = ember_unwind_step(r, &regs, fake_read, NULL);

	if (s != EMBER_STEP_NEXT && s != EMBER_STEP_END && s != EMBER_STEP_CUT)
		abort();
}

/* Every row is the one found at its own first address. */
static void check_page(const struct ember_unwind_table *t, __u32 p)
{
	const struct ember_unwind_row *rows = ember_unwind_rows(t);
	const struct ember_unwind_rule *rules = ember_unwind_rules(t);
	const __u32 *page_row = ember_unwind_page_rows(t);
	__u64 page = t->base + ((__u64)p << EMBER_UNWIND_PAGE_SHIFT);
	const struct ember_unwind_rule *r;
	__u32 i;

	for (i = page_row[p]; i < page_row[p + 1]; i++) {
		r = ember_unwind_find(t, page + rows[i].pc_low);
		if (r != &rules[rows[i].rule])
			abort();
		step_with(r, page + rows[i].pc_low);
	}
	r = ember_unwind_find(t, page + 0xffff);
	if (r && (r < rules || r >= rules + t->nr_rules))
		abort();
	if (!r != (page_row[p] == page_row[p + 1]))
		abort();	/* a page with rows covers all of itself */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ember_unwind_table *t;
	const char *why = NULL;
	void *blob;
	__u32 p;

	/* a copy of exactly size bytes: ASan reports a read past it */
	blob = malloc(size ? size : 1);
	if (!blob)
		return 0;
	memcpy(blob, data, size);
	t = blob;
	if (ember_unwind_table_check(blob, size, &why)) {
		if (!why)
			abort();	/* a refusal always says why */
		goto out;
	}
	for (p = 0; p < t->nr_pages; p++)
		check_page(t, p);
	if (ember_unwind_find(t, t->base + ((__u64)t->nr_pages << EMBER_UNWIND_PAGE_SHIFT)) ||
	    (t->base && ember_unwind_find(t, t->base - 1)))
		abort();
out:
	free(blob);
	return 0;
}
