/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A process's executable mappings copied out of proc_maps_read() (whose
 * lines live only during its callback), for tests that hand an array on
 * (py_detect(), kmaps_settle_from_proc()). Paths past 255 bytes are cut.
 */
#ifndef EMBER_TEST_MAPS_H
#define EMBER_TEST_MAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "proc/proc_maps.h"

#define TEST_MAPS_MAX	512

struct test_maps {
	struct sym_map_line v[TEST_MAPS_MAX];
	char p[TEST_MAPS_MAX][256];
	uint32_t n;
};

/* proc_maps_fn: one more line into ctx (a struct test_maps) */
static inline bool test_maps_add(void *ctx, struct sym_map_line *m)
{
	struct test_maps *a = ctx;
	size_t len = m->path_len < 255 ? m->path_len : 255;

	if (a->n == TEST_MAPS_MAX)
		return false;
	a->v[a->n] = *m;
	memcpy(a->p[a->n], m->path, len);
	a->p[a->n][len] = 0;
	a->v[a->n].path = a->p[a->n];
	a->n++;
	return true;
}

#endif
