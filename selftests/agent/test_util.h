/* SPDX-License-Identifier: GPL-2.0-only */
/* Minimal test helpers: one "PASS: name" / "FAIL: name: why" line per check. */
#ifndef EMBER_TEST_UTIL_H
#define EMBER_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>

static int t_failures;

#define T_CHECK(name, cond, ...) do {					\
	if (cond) {							\
		printf("PASS: %s\n", name);				\
	} else {							\
		printf("FAIL: %s: ", name);				\
		printf(__VA_ARGS__);					\
		printf(" (%s:%d)\n", __FILE__, __LINE__);		\
		t_failures++;						\
	}								\
} while (0)

#define T_EXIT() return t_failures ? 1 : 0

#endif
