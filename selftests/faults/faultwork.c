// SPDX-License-Identifier: GPL-2.0-only
/*
 * faultwork: ground truth for `ember record -e faults`. It touches fresh
 * anonymous memory (mmap, one write per page, munmap) from three known
 * call chains in fixed shares of bytes:
 *	main;run_rounds;touch_a;touch_region	60%
 *	main;run_rounds;touch_b;touch_region	30%
 *	main;run_rounds;touch_c;touch_region	10%
 * interleaved round by round, and prints what it did:
 *	TOUCH <function> <bytes> <minor faults measured around it>
 *	TOTAL <bytes> <minor faults> <page size>
 * Huge pages are turned off for the regions (MADV_NOHUGEPAGE) so every
 * page is one fault. Built -O2 with frame pointers (leaf ones too).
 *
 * usage: faultwork [ROUNDS]          (default 60; 40 MiB per round)
 *        faultwork --bench SECONDS   touch and free memory for SECONDS,
 *                                    print "BENCH faults_per_s N
 *                                    cpu_ns_per_fault N ..."
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define CHUNK (4UL << 20)	/* bytes per call */

static long page;

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* Every fault of the workload happens here, at the volatile store. */
static NOINLINE void touch_region(size_t bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("faultwork: mmap");
		exit(1);
	}
	madvise(p, bytes, MADV_NOHUGEPAGE);
	for (size_t off = 0; off < bytes; off += page)
		*(volatile char *)(p + off) = 1;
	munmap(p, bytes);
}

static unsigned long bytes_a, bytes_b, bytes_c;
static long flt_a, flt_b, flt_c;

static NOINLINE void touch_a(void)
{
	long f = minflt();

	touch_region(CHUNK);
	bytes_a += CHUNK;
	flt_a += minflt() - f;
}

static NOINLINE void touch_b(void)
{
	long f = minflt();

	touch_region(CHUNK);
	bytes_b += CHUNK;
	flt_b += minflt() - f;
}

static NOINLINE void touch_c(void)
{
	long f = minflt();

	touch_region(CHUNK);
	bytes_c += CHUNK;
	flt_c += minflt() - f;
}

static NOINLINE void run_rounds(int rounds)
{
	for (int r = 0; r < rounds; r++) {
		/* 6:3:1, spread through the round */
		touch_a(); touch_b(); touch_a(); touch_c(); touch_a();
		touch_b(); touch_a(); touch_a(); touch_b(); touch_a();
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * faults_per_s is wall-clock throughput (what other load on the host
 * disturbs); cpu_ns_per_fault is this process's own CPU time (user and
 * system, the fault handling and any profiler hook in it) per fault.
 */
static NOINLINE int bench(double secs)
{
	double t0 = now(), c0 = cpu_now(), t;
	long f0 = minflt(), f;
	unsigned long n = 0;

	do {
		touch_region(CHUNK);
		n++;
		t = now();
	} while (t - t0 < secs);
	f = minflt() - f0;
	printf("BENCH faults_per_s %.0f cpu_ns_per_fault %.0f faults %ld seconds %.3f\n",
	       f / (t - t0), (cpu_now() - c0) * 1e9 / (f ? f : 1), f, t - t0);
	return n ? 0 : 1;
}

int main(int argc, char **argv)
{
	int rounds = 60;
	long f0;

	page = sysconf(_SC_PAGESIZE);
	if (argc == 3 && !strcmp(argv[1], "--bench"))
		return bench(atof(argv[2]));
	if (argc == 2)
		rounds = atoi(argv[1]);
	if (rounds < 1) {
		fprintf(stderr, "usage: faultwork [ROUNDS] | --bench SECONDS\n");
		return 2;
	}
	f0 = minflt();
	run_rounds(rounds);
	printf("TOUCH touch_a %lu %ld\n", bytes_a, flt_a);
	printf("TOUCH touch_b %lu %ld\n", bytes_b, flt_b);
	printf("TOUCH touch_c %lu %ld\n", bytes_c, flt_c);
	printf("TOTAL %lu %ld %ld\n", bytes_a + bytes_b + bytes_c,
	       minflt() - f0, page);
	return 0;
}
