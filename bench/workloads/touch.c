// SPDX-License-Identifier: GPL-2.0-only
/*
 * touch: a page-fault-heavy workload for make bench's -e faults cost. One
 * thread maps 4 MiB of anonymous memory, writes one byte per page (a
 * minor fault each, with the kernel zeroing the page), unmaps it, and
 * again, for -d seconds after -w seconds of waiting (for a profiler that
 * starts it to attach).
 *
 *   touch [-d SECONDS] [-w SECONDS]
 * prints: ops=N secs=S ops_per_s=X cpu_s=C   (ops = pages touched)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REGION (4u << 20)

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static uint64_t touch_region(long page)
{
	char *p = mmap(NULL, REGION, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t n = 0;

	if (p == MAP_FAILED)
		return 0;
	for (size_t off = 0; off < REGION; off += (size_t)page, n++)
		p[off] = 1;
	munmap(p, REGION);
	return n;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	double secs = 2, wait = 0, t0, c0, t;
	uint64_t ops = 0;
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
		ops += touch_region(page);
		t = now(CLOCK_MONOTONIC) - t0;
	} while (t < secs);
	printf("ops=%llu secs=%.6f ops_per_s=%.0f cpu_s=%.6f\n",
	       (unsigned long long)ops, t, ops / t,
	       now(CLOCK_PROCESS_CPUTIME_ID) - c0);
	return 0;
}
