// SPDX-License-Identifier: GPL-2.0
/*
 * lockwork-mini: lock contention with a known answer, for the -e lock
 * tests of ember.ko (selftests/kmod/guest-lock.sh). Every mode first
 * pauses 1.5 s so a profiler started right after sees all of it.
 *
 * lockwork-mini mutex SECONDS
 *   threads a and b take one pthread mutex in turn and hold it ~2 ms
 *   (nanosleep inside), each measuring its own pthread_mutex_lock() calls
 *   that took >= 50 us; thread c waits on a condition variable that the
 *   main thread signals every 20 ms. Prints one line at the end:
 *   "own pid= mutex=0x.. cond=0x.. cond_size= a_tid= b_tid= c_tid=
 *    main_tid= a_waits= a_wait_ns= b_waits= b_wait_ns= cond_rounds="
 * lockwork-mini mmap SECONDS
 *   8 threads mmap, touch and munmap 1 MiB in a loop: mm->mmap_lock
 *   contention in the kernel. Prints "own pid= rounds=".
 * lockwork-mini many SECONDS
 *   256 threads in 50 ms FUTEX_WAITs at once: more than a small in-flight
 *   table holds (lock_slots=64). Prints "own pid= mode=many rounds=".
 * lockwork-mini getppid SECONDS
 *   getppid(2) in a loop, no pause: "own mode=getppid calls= ns_per_call="
 *   (what TIF_SYSCALL_TRACEPOINT costs every syscall under -e lock).
 * lockwork-mini storm SECONDS
 *   8 threads: an uncontended-then-contended mutex with no hold time,
 *   FUTEX_WAIT on unmapped and on a million distinct addresses, and 1 us
 *   timed waits. Bad input for the module: bounded, no warning.
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MIN_WAIT_NS 50000L

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cmtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static volatile int stop, ready;
static long deadline;

struct worker {
	pthread_t th;
	long tid, waits, wait_ns, rounds;
	unsigned int seed;
};

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void hold_mutex(struct worker *w)
{
	long t0 = now_ns(), d;

	pthread_mutex_lock(&mtx);
	d = now_ns() - t0;
	if (d >= MIN_WAIT_NS) {
		w->waits++;
		w->wait_ns += d;
	}
	sleep_ns(2000000);
	pthread_mutex_unlock(&mtx);
}

static void *mutex_worker(void *arg)
{
	struct worker *w = arg;

	w->tid = syscall(SYS_gettid);
	while (now_ns() < deadline) {
		hold_mutex(w);
		/* let the other one in: glibc mutexes are not fair */
		sleep_ns(300000);
	}
	return NULL;
}

__attribute__((noinline)) static void cond_wait_once(void)
{
	pthread_mutex_lock(&cmtx);
	while (!ready && !stop)
		pthread_cond_wait(&cond, &cmtx);
	ready = 0;
	pthread_mutex_unlock(&cmtx);
}

static void *cond_waiter(void *arg)
{
	struct worker *w = arg;

	w->tid = syscall(SYS_gettid);
	while (!stop) {
		cond_wait_once();
		w->rounds++;
	}
	return NULL;
}

static int mode_mutex(double secs)
{
	struct worker a = { 0 }, b = { 0 }, c = { 0 };
	long rounds = 0;

	deadline = now_ns() + (long)(secs * 1e9);
	pthread_create(&c.th, NULL, cond_waiter, &c);
	pthread_create(&a.th, NULL, mutex_worker, &a);
	pthread_create(&b.th, NULL, mutex_worker, &b);
	while (now_ns() < deadline) {
		sleep_ns(20000000);
		pthread_mutex_lock(&cmtx);
		ready = 1;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&cmtx);
		rounds++;
	}
	pthread_join(a.th, NULL);
	pthread_join(b.th, NULL);
	pthread_mutex_lock(&cmtx);
	stop = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&cmtx);
	pthread_join(c.th, NULL);
	printf("own pid=%d mutex=%p cond=%p cond_size=%zu a_tid=%ld b_tid=%ld c_tid=%ld main_tid=%ld a_waits=%ld a_wait_ns=%ld b_waits=%ld b_wait_ns=%ld cond_rounds=%ld\n",
	       getpid(), (void *)&mtx, (void *)&cond, sizeof(cond), a.tid,
	       b.tid, c.tid, (long)syscall(SYS_gettid), a.waits, a.wait_ns,
	       b.waits, b.wait_ns, rounds);
	return 0;
}

static void *mmap_worker(void *arg)
{
	struct worker *w = arg;

	while (now_ns() < deadline) {
		char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			continue;
		p[0] = 1;
		p[(1 << 20) - 1] = 1;
		munmap(p, 1 << 20);
		w->rounds++;
	}
	return NULL;
}

static long futex(void *uaddr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

static void *storm_worker(void *arg)
{
	static const struct timespec us1 = { 0, 1000 };
	struct worker *w = arg;
	int word = 0;

	while (now_ns() < deadline) {
		unsigned int r = rand_r(&w->seed);

		pthread_mutex_lock(&mtx);
		pthread_mutex_unlock(&mtx);
		/* unmapped: EFAULT at once */
		futex((void *)(uintptr_t)(0x10000000000ULL + (r & ~3U)),
		      FUTEX_WAIT_PRIVATE, 0, &us1);
		/* a million distinct (mostly unmapped) addresses */
		futex((char *)&word + 4 * (long)(r % 1000000),
		      FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 1, &us1);
		/* a real, timed wait */
		futex(&word, FUTEX_WAIT_PRIVATE, 0, &us1);
		w->rounds++;
	}
	return NULL;
}

static void *many_worker(void *arg)
{
	static const struct timespec ms50 = { 0, 50000000 };
	struct worker *w = arg;
	int word = 0;

	while (now_ns() < deadline) {
		futex(&word, FUTEX_WAIT_PRIVATE, 0, &ms50);
		w->rounds++;
	}
	return NULL;
}

#define MAX_THREADS 256

static int mode_threads(double secs, void *(*fn)(void *), const char *what,
			int n)
{
	static struct worker w[MAX_THREADS];
	long rounds = 0;
	int i;

	deadline = now_ns() + (long)(secs * 1e9);
	for (i = 0; i < n; i++) {
		w[i].seed = i + 1;
		pthread_create(&w[i].th, NULL, fn, &w[i]);
	}
	for (i = 0; i < n; i++) {
		pthread_join(w[i].th, NULL);
		rounds += w[i].rounds;
	}
	printf("own pid=%d mode=%s rounds=%ld\n", getpid(), what, rounds);
	return 0;
}

static int mode_getppid(double secs)
{
	long t0 = now_ns(), end = t0 + (long)(secs * 1e9), calls = 0, t;

	do {
		for (int i = 0; i < 1000; i++)
			syscall(SYS_getppid);
		calls += 1000;
		t = now_ns();
	} while (t < end);
	printf("own mode=getppid calls=%ld ns_per_call=%ld\n", calls,
	       (t - t0) / calls);
	return 0;
}

int main(int argc, char **argv)
{
	double secs;

	if (argc != 3) {
		fprintf(stderr, "usage: lockwork-mini mutex|mmap|storm|many|getppid SECONDS\n");
		return 2;
	}
	secs = atof(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "getppid"))
		return mode_getppid(secs);
	sleep_ns(1500000000L);
	if (!strcmp(argv[1], "mutex"))
		return mode_mutex(secs);
	if (!strcmp(argv[1], "mmap"))
		return mode_threads(secs, mmap_worker, "mmap", 8);
	if (!strcmp(argv[1], "storm"))
		return mode_threads(secs, storm_worker, "storm", 8);
	if (!strcmp(argv[1], "many"))
		return mode_threads(secs, many_worker, "many", MAX_THREADS);
	fprintf(stderr, "lockwork-mini: unknown mode %s\n", argv[1]);
	return 2;
}
