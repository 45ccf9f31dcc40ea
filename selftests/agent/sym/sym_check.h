/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The symbolizer tests' verdict lines (selftests/run.sh's protocol), one
 * copy for sym_test.c, sym_hostile.c and sym_go.c: check() prints PASS or
 * FAIL with why, and counts failures for the exit status.
 */
#ifndef EMBER_SYM_CHECK_H
#define EMBER_SYM_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int failures;

__attribute__((format(printf, 3, 4)))
static bool check(const char *name, bool ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("PASS: %s\n", name);
		return true;
	}
	printf("FAIL: %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures++;
	return false;
}

#endif
