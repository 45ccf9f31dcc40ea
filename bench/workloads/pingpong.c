// SPDX-License-Identifier: GPL-2.0-only
/*
 * pingpong: a context-switch-heavy workload for make bench (like
 * `perf bench sched pipe`, but bounded by time instead of by count, so a
 * run's length does not depend on how slow the profiler makes it). Pairs of
 * threads bounce one byte over two pipes; every round trip is two blocking
 * reads, i.e. two sched_switch events per side, which is what an off-CPU
 * profiler pays for.
 *
 *   pingpong [-P PAIRS] [-d SECONDS] [-c CPU]
 *
 * -c pins the whole process to one CPU. Unpinned, the rate depends on
 * where the scheduler puts the two threads: same CPU (a direct switch)
 * or two (a cross-CPU wakeup through idle, 4 switches a round trip), and
 * on this 2-vCPU VM one run read 37k and the next 367k round trips/s.
 * Pinned, every round trip is exactly 2 switches between the pair.
 *
 * prints: roundtrips=N secs=S roundtrips_per_s=X cpu_s=C pairs=P
 */
#define _GNU_SOURCE
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

struct pair {
	int ab[2], ba[2];
	uint64_t trips;
	pthread_t ping, pong;
};

static void *pong(void *arg)
{
	struct pair *p = arg;
	char b;

	while (read(p->ab[0], &b, 1) == 1 && b)
		if (write(p->ba[1], &b, 1) != 1)
			break;
	return NULL;
}

static void *ping(void *arg)
{
	struct pair *p = arg;
	char b = 1;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (write(p->ab[1], &b, 1) != 1 || read(p->ba[0], &b, 1) != 1)
			break;
		p->trips++;
	}
	b = 0;	/* tells pong to finish */
	if (write(p->ab[1], &b, 1) != 1)
		perror("pingpong: write");
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
	long pairs = 1;
	double secs = 5;
	int c, cpu = -1;

	while ((c = getopt(argc, argv, "P:d:c:")) != -1) {
		if (c == 'P')
			pairs = atol(optarg);
		else if (c == 'd')
			secs = atof(optarg);
		else if (c == 'c')
			cpu = atoi(optarg);
		else {
			fprintf(stderr, "usage: pingpong [-P PAIRS] [-d SECONDS] [-c CPU]\n");
			return 2;
		}
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		/* threads created later inherit it */
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("pingpong: sched_setaffinity");
			return 2;
		}
	}
	if (pairs < 1 || pairs > 256 || secs <= 0) {
		fprintf(stderr, "pingpong: need 1..256 pairs and a positive duration\n");
		return 2;
	}
	struct pair *p = calloc(pairs, sizeof(*p));

	if (!p)
		return 1;
	double t0 = now();

	for (long i = 0; i < pairs; i++) {
		if (pipe(p[i].ab) || pipe(p[i].ba)) {
			perror("pingpong: pipe");
			return 1;
		}
		if (pthread_create(&p[i].pong, NULL, pong, &p[i]) ||
		    pthread_create(&p[i].ping, NULL, ping, &p[i])) {
			perror("pingpong: pthread_create");
			return 1;
		}
	}
	struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };

	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	uint64_t trips = 0;

	for (long i = 0; i < pairs; i++) {
		pthread_join(p[i].ping, NULL);
		pthread_join(p[i].pong, NULL);
		trips += p[i].trips;
	}
	double el = now() - t0;
	/* exact on-CPU time, with the scheduler hooks that ran in our context */
	struct timespec cts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cts);
	printf("roundtrips=%llu secs=%.6f roundtrips_per_s=%.1f cpu_s=%.6f pairs=%ld\n",
	       (unsigned long long)trips, el, trips / el,
	       cts.tv_sec + cts.tv_nsec / 1e9, pairs);
	free(p);
	return 0;
}
