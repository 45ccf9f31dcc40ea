// SPDX-License-Identifier: GPL-2.0-only
/*
 * -e alloc -p's probe list (agent/alloc/alloc_lib.c): the entry points
 * of this process's own libc come with free and realloc (in-use), the
 * free probe past glibc's NULL test, and the list a backend without
 * in-use takes (a module older than EMBER_CAP_ALLOC_INUSE).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "alloc/alloc_lib.h"
#include "test_util.h"

static size_t count_kind(const struct ember_alloc_probe *p, size_t n,
			 uint32_t kind)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += p[i].kind == kind;
	return c;
}

static void test_own_libc(void)
{
	struct ember_alloc_probe p[EMBER_MAX_ALLOC_PROBES];
	char path[128], what[4096], err[512];
	int n = alloc_entry_probes((uint32_t)getpid(), path, sizeof(path),
				   what, sizeof(what), p,
				   EMBER_MAX_ALLOC_PROBES, err, sizeof(err));
	bool distinct = true;

	T_CHECK("alloc_entry_probes_own_libc", n > 0 && strstr(what, "libc"),
		"%d probes on %s: %s", n, what, n < 0 ? err : "");
	if (n <= 0)
		return;
	T_CHECK("alloc_entry_probes_follow_frees",
		count_kind(p, (size_t)n, EMBER_PROBE_ENTRY_FREE) == 1 &&
		count_kind(p, (size_t)n, EMBER_PROBE_ENTRY_REALLOC) == 1 &&
		count_kind(p, (size_t)n, EMBER_PROBE_ENTRY_SIZE_RDI) >= 1,
		"%d probes: free %zu realloc %zu", n,
		count_kind(p, (size_t)n, EMBER_PROBE_ENTRY_FREE),
		count_kind(p, (size_t)n, EMBER_PROBE_ENTRY_REALLOC));
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			distinct = distinct && p[i].offset != p[j].offset;
	T_CHECK("alloc_entry_probes_distinct_offsets", distinct,
		"two probes at one offset");

	n = (int)alloc_probes_without_inuse(p, (size_t)n);
	T_CHECK("alloc_without_inuse_entry_points_only", n > 0 &&
		n <= ALLOC_PROBES_WITHOUT_INUSE &&
		!count_kind(p, (size_t)n, EMBER_PROBE_ENTRY_FREE) &&
		!count_kind(p, (size_t)n, EMBER_PROBE_ENTRY_REALLOC) &&
		count_kind(p, (size_t)n, EMBER_PROBE_ENTRY_SIZE_RSI) >= 1,
		"%d left", n);
}

static void test_without_inuse(void)
{
	struct ember_alloc_probe p[EMBER_MAX_ALLOC_PROBES];
	size_t n;

	/* a full list, frees between: 8 entry points kept, in order */
	for (size_t i = 0; i < EMBER_MAX_ALLOC_PROBES; i++)
		p[i] = (struct ember_alloc_probe){
			.offset = 0x100 * (i + 1),
			.kind = i % 3 == 1 ? EMBER_PROBE_ENTRY_FREE :
				i == 0 ? EMBER_PROBE_ENTRY_REALLOC :
				EMBER_PROBE_ENTRY_SIZE_RDI,
		};
	n = alloc_probes_without_inuse(p, EMBER_MAX_ALLOC_PROBES);
	T_CHECK("alloc_without_inuse_drops_frees", n == 8 &&
		p[0].kind == EMBER_PROBE_ENTRY_SIZE_RSI && p[0].offset == 0x100 &&
		p[1].offset == 0x300 && p[2].offset == 0x400 &&
		!count_kind(p, n, EMBER_PROBE_ENTRY_FREE),
		"%zu left, first kind %u", n, p[0].kind);
	T_CHECK("alloc_without_inuse_empty", !alloc_probes_without_inuse(p, 0),
		"not empty");
}

int main(void)
{
	test_own_libc();
	test_without_inuse();
	T_EXIT();
}
