// SPDX-License-Identifier: GPL-2.0
/*
 * fpbusy SECONDS [THREADS]: CPU-bound, built with frame pointers everywhere
 * (clang, -mno-omit-leaf-frame-pointer, no sibling calls), so a correct
 * frame-pointer walk from any sample in leaf_spin() gives exactly
 * leaf_spin <- level3 <- level2 <- level1 <- main (or <- thread_main).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double deadline;
volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void leaf_spin(void)
{
	unsigned long i, x = sink;

	for (i = 0; i < 200000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) void level3(void)
{
	leaf_spin();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void level2(void)
{
	level3();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void level1(void)
{
	level2();
	__asm__ volatile("" ::: "memory");
}

/*
 * The clock is read once per 8 rounds: under TCG the clocksource is often
 * not vDSO-capable, and clock_gettime's syscall then took a fifth of the
 * samples (main > clock_gettime > [kernel]), not leaf_spin's chain. A
 * macro, so the chain stays exactly main (or thread_main) > level1.
 */
#define SPIN_UNTIL_DEADLINE()						\
	do {								\
		int round_;						\
		while (now() < deadline)				\
			for (round_ = 0; round_ < 8; round_++)		\
				level1();				\
	} while (0)

static void *thread_main(void *arg)
{
	(void)arg;
	SPIN_UNTIL_DEADLINE();
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 1, i;
	pthread_t t[64];

	deadline = now() + (argc > 1 ? atof(argv[1]) : 3);
	if (threads > 64)
		threads = 64;
	for (i = 1; i < threads; i++)
		pthread_create(&t[i], NULL, thread_main, NULL);
	SPIN_UNTIL_DEADLINE();
	for (i = 1; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
