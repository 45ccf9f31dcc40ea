// SPDX-License-Identifier: GPL-2.0-only
/*
 * mallocs: an allocation-heavy workload for make bench's -e alloc cost.
 * One thread allocates small blocks (16 to 256 bytes), fills and hashes
 * each (about 100 ns of work, so ~10M allocations a second, the load the
 * issue names), and frees them in a ring of 64 live ones, for -d seconds
 * after -w seconds of waiting (for a profiler that starts it to attach),
 * through a couple of non-inlined calls like a real program.
 *
 *   mallocs [-d SECONDS] [-w SECONDS]
 * prints: ops=N secs=S ops_per_s=X cpu_s=C   (ops = malloc+free pairs)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LIVE 64

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t sink;

__attribute__((noinline)) static void *make_node(size_t n)
{
	unsigned char *p = malloc(n);
	uint64_t h = n;

	if (!p)
		return NULL;
	memset(p, (int)n, n);	/* used: the pair cannot be elided */
	for (size_t i = 0; i < n; i++) {
		h ^= p[i] + i;
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	sink += h;
	return p;
}

__attribute__((noinline)) static uint64_t churn(void **ring, uint64_t i)
{
	static const size_t sizes[8] = { 16, 24, 32, 48, 64, 96, 128, 256 };
	size_t k = i % LIVE;

	free(ring[k]);
	ring[k] = make_node(sizes[(i * 7) & 7]);
	return ring[k] ? 1 : 0;
}

int main(int argc, char **argv)
{
	double secs = 2, wait = 0, t0, c0, t;
	void *ring[LIVE] = { 0 };
	uint64_t ops = 0, ok = 0;
	int c;

	while ((c = getopt(argc, argv, "d:w:")) != -1) {
		if (c == 'd')
			secs = atof(optarg);
		else if (c == 'w')
			wait = atof(optarg);
		else
			return 2;
	}
	if (wait > 0)
		usleep((useconds_t)(wait * 1e6));
	t0 = now(CLOCK_MONOTONIC);
	c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	do {
		for (int j = 0; j < 4096; j++)
			ok += churn(ring, ops++);
		t = now(CLOCK_MONOTONIC) - t0;
	} while (t < secs);
	printf("ops=%llu secs=%.6f ops_per_s=%.0f cpu_s=%.6f ok=%llu\n",
	       (unsigned long long)ops, t, ops / t,
	       now(CLOCK_PROCESS_CPUTIME_ID) - c0, (unsigned long long)ok);
	for (int i = 0; i < LIVE; i++)
		free(ring[i]);
	return 0;
}
