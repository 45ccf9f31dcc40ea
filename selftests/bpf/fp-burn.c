// SPDX-License-Identifier: GPL-2.0-only
/*
 * fp-burn: CPU-bound with a known call chain, built with frame pointers
 * (clang, leaf included): main -> fp_level1 -> fp_level2 -> fp_leaf.
 * Runs for argv[1] seconds (default 5).
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void fp_leaf(void)
{
	for (int i = 0; i < 100000; i++)
		sink += i * 7;
}

__attribute__((noinline)) void fp_level2(void)
{
	fp_leaf();
	sink++;
}

__attribute__((noinline)) void fp_level1(void)
{
	fp_level2();
	sink++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 100; i++)
			fp_level1();
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
	return 0;
}
