// SPDX-License-Identifier: GPL-2.0-only
/*
 * The allocation sampler (preload/ember_alloc.c) on its own, run with
 * LD_PRELOAD=libember-alloc.so: this program defines ember_alloc_probe and
 * ember_free_probe itself (calls from the library go through its PLT, so
 * ours win) and turns the semaphore on, then allocates known bytes in
 * three size classes, frees some, forks, and runs threads. Checks:
 *  - the sampled weights add up to the bytes allocated, per size class
 *    (the estimator is unbiased: within 10%, about 3 standard deviations);
 *  - in-use bytes (sampled minus freed) match what is still allocated;
 *  - no sample when the semaphore is off; fork and threads are fine;
 *  - C++'s new and new[] (libstdc++'s, loaded here: they call malloc,
 *    and new[] calls new, all of them the sampler's) are counted once,
 *    and their deletes followed.
 * Prints PASS/FAIL lines and one "# cost" line (ns per malloc+free pair).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RATE	16384

static volatile unsigned short *sem;
static double w_small, w_mid, w_big, w_all;
static double inuse_mid;
static unsigned long probes, frees;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *mid_sampled[1 << 16];
static double mid_weight[1 << 16];
static int nr_mid_sampled;

static void lock_probe(void)
{
	pthread_mutex_lock(&lock);
}

static void unlock_probe(void)
{
	pthread_mutex_unlock(&lock);
}

void ember_alloc_probe(void *p, size_t size, size_t weight)
{
	pthread_mutex_lock(&lock);
	probes++;
	w_all += weight;
	if (size == 64)
		w_small += weight;
	else if (size == 100000) {
		w_mid += weight;
		if (nr_mid_sampled < (1 << 16)) {
			mid_sampled[nr_mid_sampled] = p;
			mid_weight[nr_mid_sampled++] = weight;
		}
	} else if (size == 4 << 20)
		w_big += weight;
	pthread_mutex_unlock(&lock);
}

void ember_free_probe(void *p)
{
	pthread_mutex_lock(&lock);
	frees++;
	for (int i = 0; i < nr_mid_sampled; i++)
		if (mid_sampled[i] == p) {
			mid_sampled[i] = NULL;
			break;
		}
	pthread_mutex_unlock(&lock);
}

static int failures;

static void check(const char *name, int ok, const char *fmt, double a, double b)
{
	if (ok) {
		printf("PASS: %s\n", name);
	} else {
		printf("FAIL: %s: ", name);
		printf(fmt, a, b);
		printf("\n");
		failures++;
	}
}

static int near(double got, double want, double tol)
{
	return got >= want * (1 - tol) && got <= want * (1 + tol);
}

static void *thread_work(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100000; i++)
		free(malloc(64));
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef void *(*new_fn)(size_t);
typedef void (*delete_fn)(void *);
typedef void (*sized_delete_fn)(void *, size_t);

/* new and new[] of 100 kB blocks, half deleted: weights and in-use */
static void cxx_checks(void)
{
	static void *blk[2000];
	new_fn nw, na;
	sized_delete_fn dl;
	delete_fn da;

	if (!dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL)) {
		check("alloc_sampler_cxx_loaded", 0, "%s%.0f", 0, 0);
		return;
	}
	nw = (new_fn)dlsym(RTLD_DEFAULT, "_Znwm");
	na = (new_fn)dlsym(RTLD_DEFAULT, "_Znam");
	dl = (sized_delete_fn)dlsym(RTLD_DEFAULT, "_ZdlPvm");
	da = (delete_fn)dlsym(RTLD_DEFAULT, "_ZdaPv");
	if (!nw || !na || !dl || !da) {
		check("alloc_sampler_cxx_loaded", 0, "no operator new%.0f%.0f", 0, 0);
		return;
	}
	pthread_mutex_lock(&lock);
	w_mid = inuse_mid = 0;
	nr_mid_sampled = 0;
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < 2000; i++)
		blk[i] = (i & 1 ? na : nw)(100000);
	for (int i = 0; i < 2000; i += 4) {
		dl(blk[i], 100000);
		da(blk[i + 1]);
	}
	for (int i = 0; i < nr_mid_sampled; i++)
		if (mid_sampled[i])
			inuse_mid += mid_weight[i];
	check("alloc_sampler_cxx_new_counted_once", near(w_mid, 2000.0 * 100000, 0.10),
	      "new/new[] of 100 kB: sampled weight %.0f, allocated %.0f", w_mid, 2000.0 * 100000);
	check("alloc_sampler_cxx_delete_followed", near(inuse_mid, 1000.0 * 100000, 0.10),
	      "in use after deleting half: %.0f, truth %.0f", inuse_mid, 1000.0 * 100000);
	for (int i = 2; i < 2000; i += 4) {
		dl(blk[i], 100000);
		da(blk[i + 1]);
	}
}

int main(void)
{
	static void *mid[2000];
	double t0, per_pair;
	unsigned long before;
	pthread_t th[4];
	pid_t pid;
	int st;

	sem = dlsym(RTLD_DEFAULT, "ember_alloc_semaphore");
	if (!sem || getenv("EMBER_ALLOC_RATE") == NULL ||
	    atoi(getenv("EMBER_ALLOC_RATE")) != RATE) {
		printf("FAIL: alloc_sampler_loaded: run with LD_PRELOAD=libember-alloc.so EMBER_ALLOC_RATE=%d\n", RATE);
		return 1;
	}
	/* off: nothing crosses to the probe */
	for (int i = 0; i < 100000; i++)
		free(malloc(1000));
	check("alloc_sampler_silent_when_detached", probes == 0,
	      "%.0f probes with the semaphore off%.0f", (double)probes, 0);

	*sem = 1;
	for (int i = 0; i < 200000; i++)
		free(malloc(64));
	for (int i = 0; i < 2000; i++)
		mid[i] = malloc(100000);
	for (int i = 0; i < 50; i++)
		free(malloc(4 << 20));
	/* free half the mid blocks: in-use must follow */
	for (int i = 0; i < 2000; i += 2)
		free(mid[i]);
	for (int i = 0; i < nr_mid_sampled; i++)
		if (mid_sampled[i])
			inuse_mid += mid_weight[i];
	check("alloc_sampler_unbiased_small", near(w_small, 200000.0 * 64, 0.10),
	      "64-byte blocks: sampled weight %.0f, allocated %.0f", w_small, 200000.0 * 64);
	check("alloc_sampler_unbiased_mid", near(w_mid, 2000.0 * 100000, 0.10),
	      "100 kB blocks: sampled weight %.0f, allocated %.0f", w_mid, 2000.0 * 100000);
	check("alloc_sampler_unbiased_big", near(w_big, 50.0 * (4 << 20), 0.02),
	      "4 MiB blocks: sampled weight %.0f, allocated %.0f", w_big, 50.0 * (4 << 20));
	check("alloc_sampler_inuse_follows_frees", near(inuse_mid, 1000.0 * 100000, 0.10),
	      "in use after freeing half: %.0f, truth %.0f", inuse_mid, 1000.0 * 100000);
	for (int i = 1; i < 2000; i += 2)
		free(mid[i]);
	cxx_checks();

	/* threads and fork: this stand-in probe's lock is held across fork
	 * (the library has no lock; the kernel's probe has none either) */
	pthread_atfork(lock_probe, unlock_probe, unlock_probe);
	before = probes;
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, thread_work, NULL);
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 100000; i++)
			free(malloc(64));
		_exit(0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	waitpid(pid, &st, 0);
	check("alloc_sampler_threads_and_fork",
	      WIFEXITED(st) && WEXITSTATUS(st) == 0 && probes > before,
	      "child status %.0f, %.0f new probes", (double)st, (double)(probes - before));

	/* the cost of the wrapped pair, detached (what a service pays) */
	*sem = 0;
	t0 = now();
	for (int i = 0; i < 5000000; i++)
		free(malloc(32));
	per_pair = (now() - t0) / 5e6 * 1e9;
	printf("# cost: %.1f ns per malloc+free pair with the sampler loaded\n", per_pair);
	return failures ? 1 : 0;
}
