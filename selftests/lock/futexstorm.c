// SPDX-License-Identifier: GPL-2.0-only
/*
 * futexstorm: bad input for `ember record -e lock` (issue 27). It hammers
 * the futex paths the lock profile hooks, for a fixed time:
 *
 *	efault    waits (FUTEX_WAIT, WAIT_BITSET, LOCK_PI, WAIT_REQUEUE_PI,
 *		  futex_waitv) on unmapped and kernel addresses: every call
 *		  fails at once with EFAULT (a wait that starts and never
 *		  waits)
 *	distinct  FUTEX_WAIT with 20-60 us timeouts on a million distinct
 *		  addresses (4 MiB of futex words), from many threads: every
 *		  wait is long enough to be kept, each at a new address
 *	storm     pairs of threads ping-pong through raw FUTEX_WAIT/WAKE as
 *		  fast as they can (every wait ends in a wake-up)
 *
 * and prints "STORM mode=M threads=N secs=S calls=N waits=N errors=N
 * timeouts=N" (waits: calls that returned 0).
 *
 * usage: futexstorm efault|distinct|storm [SECONDS (3)] [THREADS (8)]
 */
#define _GNU_SOURCE
#include <errno.h>
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

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif

#define NWORDS (1u << 20)	/* distinct futex words */

struct waitv {			/* struct futex_waitv, absent from old headers */
	uint64_t val, uaddr;
	uint32_t flags, reserved;
};

static volatile int stop;
static uint32_t *words;
static int nthreads = 8;
static unsigned long calls[64], waits[64], errors[64], timeouts[64];

static long futex(void *uaddr, int op, uint32_t val, const struct timespec *ts,
		  void *uaddr2, uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, ts, uaddr2, val3);
}

static void count(long me, long r)
{
	calls[me]++;
	if (r == 0)
		waits[me]++;
	else if (errno == ETIMEDOUT)
		timeouts[me]++;
	else
		errors[me]++;
}

static void *efault(void *arg)
{
	long me = (long)arg;
	/* a hole (mapped then unmapped), NULL-ish and a kernel address */
	void *hole = mmap(NULL, 1 << 16, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *bad[] = { hole, (char *)hole + 4096 * me, (void *)16,
			(void *)0xffffffffff600000ul, (void *)0xffff888000000000ul };
	struct timespec ts = { 0, 1000 };
	struct waitv wv[2] = { { 0, (uintptr_t)hole, 2, 0 },
			       { 0, 0xffff888000000000ul, 2, 0 } };
	unsigned int i = 0;

	munmap(hole, 1 << 16);
	while (!stop) {
		void *a = bad[i++ % 5];

		count(me, futex(a, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0));
		count(me, futex(a, FUTEX_WAIT_BITSET_PRIVATE, 0, &ts, NULL, ~0u));
		count(me, futex(a, FUTEX_LOCK_PI_PRIVATE, 0, &ts, NULL, 0));
		count(me, futex(a, FUTEX_LOCK_PI2 | FUTEX_PRIVATE_FLAG, 0, &ts, NULL, 0));
		count(me, futex(a, FUTEX_WAIT_REQUEUE_PI_PRIVATE, 0, &ts, a, 0));
		count(me, syscall(SYS_futex_waitv, wv, 2, 0, NULL, CLOCK_MONOTONIC));
	}
	return NULL;
}

static void *distinct(void *arg)
{
	long me = (long)arg;
	uint32_t i = (uint32_t)me * (NWORDS / 64);

	while (!stop) {
		struct timespec ts = { 0, 20000 + (i % 5) * 10000 };

		count(me, futex(&words[i++ % NWORDS], FUTEX_WAIT_PRIVATE, 0, &ts,
				NULL, 0));
	}
	return NULL;
}

/* thread 2k and 2k+1 share words[k]: whoever sees its value waits for the
 * other to flip it */
static void *storm(void *arg)
{
	long me = (long)arg;
	uint32_t *w = &words[me / 2 * 16];
	uint32_t mine = me & 1;
	struct timespec ts = { 0, 10 * 1000 * 1000 };

	while (!stop) {
		if (__atomic_load_n(w, __ATOMIC_ACQUIRE) == mine) {
			__atomic_store_n(w, !mine, __ATOMIC_RELEASE);
			futex(w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
			calls[me]++;
		} else {
			count(me, futex(w, FUTEX_WAIT_PRIVATE, !mine, &ts, NULL, 0));
		}
	}
	futex(w, FUTEX_WAKE_PRIVATE, 2, NULL, NULL, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*fn)(void *) = NULL;
	double secs = argc > 2 ? atof(argv[2]) : 3;
	pthread_t th[64];
	unsigned long c = 0, w = 0, e = 0, t = 0;
	struct timespec ts;

	if (argc > 3)
		nthreads = atoi(argv[3]);
	if (argc > 1 && !strcmp(argv[1], "efault"))
		fn = efault;
	else if (argc > 1 && !strcmp(argv[1], "distinct"))
		fn = distinct;
	else if (argc > 1 && !strcmp(argv[1], "storm"))
		fn = storm;
	if (!fn || secs <= 0 || nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "usage: futexstorm efault|distinct|storm [SECONDS] [THREADS]\n");
		return 2;
	}
	if (fn == storm && nthreads % 2)
		nthreads++;
	words = mmap(NULL, NWORDS * sizeof(*words), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (words == MAP_FAILED) {
		perror("futexstorm: mmap");
		return 1;
	}
	for (long i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, fn, (void *)i);
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	stop = 1;
	for (int i = 0; i < nthreads; i++) {
		if (fn == storm)
			futex(&words[i / 2 * 16], FUTEX_WAKE_PRIVATE, 2, NULL, NULL, 0);
		pthread_join(th[i], NULL);
		c += calls[i];
		w += waits[i];
		e += errors[i];
		t += timeouts[i];
	}
	printf("STORM mode=%s threads=%d secs=%.1f calls=%lu waits=%lu errors=%lu timeouts=%lu\n",
	       argv[1], nthreads, secs, c, w, e, t);
	return 0;
}
