// SPDX-License-Identifier: GPL-2.0-only
/*
 * deep: a CPU-bound workload with deep stacks and no frame pointers, for
 * the per-sample cost of the table-driven user unwinder (make bench,
 * section 2). Built -O2 -fomit-frame-pointer: every frame needs the CFI
 * tables. One thread per CPU (or -t N) descends through ten distinct
 * functions, each with its own frame size, -s times around (default 3:
 * ~33 user frames with main and the thread start), then spins in a leaf.
 *
 *   deep [-t THREADS] [-d SECONDS] [-s ROUNDS]
 * prints: ops=N secs=S ops_per_s=X threads=T depth=D
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static atomic_int stop;
static int rounds = 3;

struct worker {
	pthread_t tid;
	uint64_t ops;
};

NOINLINE static uint64_t leaf(uint64_t x)
{
	for (int i = 0; i < 4096; i++) {
		x ^= x >> 33;
		x *= 0xff51afd7ed558ccdULL;
	}
	return x;
}

typedef uint64_t (*lvl_fn)(int d, uint64_t x);
static lvl_fn lvl[10];

/* Each level keeps a local array of its own size live across the call
 * (a distinct CFA offset per function) and uses the callee's result (no
 * tail call). */
#define LEVEL(k, words)							\
NOINLINE static uint64_t lvl##k(int d, uint64_t x)			\
{									\
	volatile uint64_t pad[words];					\
	uint64_t r;							\
									\
	pad[0] = x;							\
	if (d <= 0)							\
		r = leaf(x);						\
	else								\
		r = lvl[(k + 1) % 10](d - 1, x + k);			\
	return r + pad[0];						\
}
LEVEL(0, 1) LEVEL(1, 3) LEVEL(2, 5) LEVEL(3, 2) LEVEL(4, 7)
LEVEL(5, 4) LEVEL(6, 9) LEVEL(7, 6) LEVEL(8, 11) LEVEL(9, 8)

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t acc = (uint64_t)(uintptr_t)w;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		acc = lvl[0](rounds * 10 - 1, acc);
		w->ops++;
	}
	return (void *)(uintptr_t)(acc & 1);
}

int main(int argc, char **argv)
{
	long threads = sysconf(_SC_NPROCESSORS_ONLN);
	double secs = 10;
	struct timespec a, b;
	struct worker *w;
	uint64_t ops = 0;
	int c;

	while ((c = getopt(argc, argv, "t:d:s:")) != -1) {
		switch (c) {
		case 't': threads = atol(optarg); break;
		case 'd': secs = atof(optarg); break;
		case 's': rounds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: deep [-t THREADS] [-d SECONDS] [-s ROUNDS]\n");
			return 2;
		}
	}
	if (threads < 1 || rounds < 1 || rounds > 100)
		return 2;
	lvl[0] = lvl0; lvl[1] = lvl1; lvl[2] = lvl2; lvl[3] = lvl3; lvl[4] = lvl4;
	lvl[5] = lvl5; lvl[6] = lvl6; lvl[7] = lvl7; lvl[8] = lvl8; lvl[9] = lvl9;
	w = calloc(threads, sizeof(*w));
	if (!w)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < threads; i++)
		pthread_create(&w[i].tid, NULL, run, &w[i]);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		double left = secs - (b.tv_sec - a.tv_sec) - (b.tv_nsec - a.tv_nsec) / 1e9;
		if (left <= 0)
			break;
		usleep(left > 0.1 ? 100000 : (useconds_t)(left * 1e6) + 1);
	}
	atomic_store(&stop, 1);
	for (long i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		ops += w[i].ops;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	secs = b.tv_sec - a.tv_sec + (b.tv_nsec - a.tv_nsec) / 1e9;
	printf("ops=%llu secs=%.3f ops_per_s=%.1f threads=%ld depth=%d\n",
	       (unsigned long long)ops, secs, ops / secs, threads, rounds * 10 + 3);
	return 0;
}
