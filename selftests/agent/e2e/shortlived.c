// SPDX-License-Identifier: GPL-2.0-only
/*
 * A program that lives ~20 ms (check-shortlived.sh runs it 100 times
 * under `ember record -a`): its own functions, built -O2 without frame
 * pointers as distributions build, must come out named although the
 * process is gone long before the profile is built.
 */
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void sl_leaf(void)
{
	for (int i = 0; i < 1000; i++)
		sink += (unsigned long)i * (unsigned long)i;
}

__attribute__((noinline)) static void sl_mid(void)
{
	for (int i = 0; i < 20; i++)
		sl_leaf();
}

__attribute__((noinline)) static void sl_outer(double end)
{
	while (now() < end)
		sl_mid();
}

int main(void)
{
	sl_outer(now() + 0.02);
	return 0;
}
