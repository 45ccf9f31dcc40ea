// SPDX-License-Identifier: GPL-2.0-only
/*
 * spin: a fixed CPU-bound workload for make bench. One thread per CPU (or
 * -t N) runs the same integer work loop for -d seconds; the result is the
 * number of work units done per second of wall time, so any CPU a profiler
 * takes (interrupt handlers on the sampled CPUs, its agent process) shows
 * up as lost throughput. The loop goes through a few non-inlined calls so
 * that stacks have some depth, like a real program.
 *
 *   spin [-t THREADS] [-d SECONDS]
 * prints: ops=N secs=S ops_per_s=X cpu_s=C threads=T
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

struct worker {
	pthread_t tid;
	uint64_t ops;
	uint64_t sink;
};

__attribute__((noinline)) static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

__attribute__((noinline)) static uint64_t unit(uint64_t seed)
{
	uint64_t acc = seed;

	for (int i = 0; i < 256; i++)
		acc = mix(acc + (uint64_t)i);
	return acc;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t acc = (uint64_t)(uintptr_t)w;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		acc = unit(acc);
		w->ops++;
	}
	w->sink = acc;
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long threads = sysconf(_SC_NPROCESSORS_ONLN);
	double secs = 5;
	int c;

	while ((c = getopt(argc, argv, "t:d:")) != -1) {
		if (c == 't')
			threads = atol(optarg);
		else if (c == 'd')
			secs = atof(optarg);
		else {
			fprintf(stderr, "usage: spin [-t THREADS] [-d SECONDS]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > 1024 || secs <= 0) {
		fprintf(stderr, "spin: need 1..1024 threads and a positive duration\n");
		return 2;
	}
	struct worker *w = calloc(threads, sizeof(*w));

	if (!w)
		return 1;
	double t0 = now();

	for (long i = 0; i < threads; i++)
		if (pthread_create(&w[i].tid, NULL, run, &w[i])) {
			perror("spin: pthread_create");
			return 1;
		}
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };

	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	uint64_t ops = 0;

	for (long i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		ops += w[i].ops;
	}
	double el = now() - t0;
	/* exact on-CPU time (sum_exec_runtime), which also holds the time
	 * interrupt handlers ran on top of these threads */
	struct timespec cts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cts);
	double cpu = cts.tv_sec + cts.tv_nsec / 1e9;
	printf("ops=%llu secs=%.6f ops_per_s=%.1f cpu_s=%.6f threads=%ld\n",
	       (unsigned long long)ops, el, ops / el, cpu, threads);
	free(w);
	return 0;
}
