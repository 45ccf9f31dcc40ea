// SPDX-License-Identifier: GPL-2.0-only
/*
 * lock-wait: contended waits with known addresses and durations, for the
 * -e lock checks of selftests/suites/20-bpf.sh and 21-bpf-vm.sh
 * (bpf-check.py lock). Prints its own figures on stderr:
 *
 *   lock-wait contend ROUNDS
 *     a holder thread keeps a pthread mutex ~2 ms while a waiter blocks
 *     on it; then a condition variable waited on ~3 ms. Lines:
 *     MUTEX addr=0x.. holder=TID waiter=TID waits=N wait_ns=T
 *     COND addr=0x.. size=S signaller=TID waiter=TID waits=N wait_ns=T
 *     (wait_ns: the waiter's own clock around pthread_mutex_lock /
 *     pthread_cond_wait, waits over 100 us only)
 *   lock-wait mmap SECS THREADS
 *     THREADS threads mmap, touch and munmap for SECS seconds: the
 *     kernel's mmap_lock is contended (readers in page faults, writers
 *     in mmap/munmap). Line: MMAP threads=N rounds=R
 *   lock-wait storm N
 *     FUTEX_WAIT on N distinct addresses whose value does not match
 *     (EAGAIN at once), then on N unmapped addresses (EFAULT), then
 *     FUTEX_WAIT_BITSET and LOCK_PI on bad addresses. Line: STORM calls=C
 *   lock-wait many THREADS MS
 *     THREADS threads each in a FUTEX_WAIT of its own, timed out after
 *     MS ms, all at once (the in-flight table's bound). Line: MANY ...
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { ns / 1000000000ull, ns % 1000000000ull };

	nanosleep(&ts, NULL);
}

static pid_t gettid_(void)
{
	return syscall(SYS_gettid);
}

static long futex(void *addr, int op, uint32_t val, const struct timespec *ts,
		  uint32_t val3)
{
	return syscall(SYS_futex, addr, op, val, ts, NULL, val3);
}

/*
 * ---- contend: mutex and condition variable ----
 * The threads hand over with pipes, never by spinning: a thread spinning
 * (even with sched_yield) competes with the woken waiter for the CPU, and
 * under TCG the waiter then lost milliseconds between its futex syscall's
 * return and its own clock (5.10 VM: ember's waits 30% short of its own).
 */
static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cmtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int p_held[2], p_got[2], p_phase[2];
static int rounds, cond_ready;
static pid_t holder_tid, signaller_tid;

static void put(int *p)
{
	if (write(p[1], "x", 1) != 1)
		abort();
}

static void take(int *p)
{
	char c;

	if (read(p[0], &c, 1) != 1)
		abort();
}

/* holds the mutex ~2 ms a round while the waiter blocks on it */
__attribute__((noinline)) void lw_hold(void)
{
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&mtx);
		put(p_held);
		sleep_ns(2000000);
		pthread_mutex_unlock(&mtx);
		take(p_got);
	}
}

static void *holder(void *arg)
{
	(void)arg;
	holder_tid = gettid_();
	lw_hold();
	return NULL;
}

/* signals the condition variable ~3 ms after the waiter waits */
__attribute__((noinline)) void lw_signal(void)
{
	for (int i = 0; i < rounds; i++) {
		take(p_phase);
		sleep_ns(3000000);	/* the waiter is in pthread_cond_wait */
		pthread_mutex_lock(&cmtx);
		cond_ready = i + 1;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&cmtx);
	}
}

static void *signaller(void *arg)
{
	(void)arg;
	signaller_tid = gettid_();
	lw_signal();
	return NULL;
}

__attribute__((noinline)) uint64_t lw_mutex_wait(int *waits)
{
	uint64_t total = 0, t0, d;

	for (int i = 0; i < rounds; i++) {
		take(p_held);	/* the holder has it */
		t0 = now_ns();
		pthread_mutex_lock(&mtx);
		d = now_ns() - t0;
		pthread_mutex_unlock(&mtx);
		put(p_got);
		if (d > 100000) {
			total += d;
			(*waits)++;
		}
	}
	return total;
}

__attribute__((noinline)) uint64_t lw_cond_wait(int *waits)
{
	uint64_t total = 0, t0, d;

	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&cmtx);
		put(p_phase);
		t0 = now_ns();
		while (cond_ready < i + 1)
			pthread_cond_wait(&cond, &cmtx);
		d = now_ns() - t0;
		pthread_mutex_unlock(&cmtx);
		if (d > 100000) {
			total += d;
			(*waits)++;
		}
	}
	return total;
}

static int contend(int n)
{
	pthread_t t;
	uint64_t total;
	int waits = 0;

	rounds = n;
	if (pipe(p_held) || pipe(p_got) || pipe(p_phase))
		return 1;
	pthread_create(&t, NULL, holder, NULL);
	total = lw_mutex_wait(&waits);
	pthread_join(t, NULL);
	fprintf(stderr, "MUTEX addr=%p holder=%d waiter=%d waits=%d wait_ns=%llu\n",
		(void *)&mtx, holder_tid, gettid_(), waits, (unsigned long long)total);
	waits = 0;
	pthread_create(&t, NULL, signaller, NULL);
	total = lw_cond_wait(&waits);
	pthread_join(t, NULL);
	fprintf(stderr, "COND addr=%p size=%zu signaller=%d waiter=%d waits=%d wait_ns=%llu\n",
		(void *)&cond, sizeof(cond), signaller_tid, gettid_(), waits,
		(unsigned long long)total);
	return 0;
}

/* ---- mmap: the kernel's mmap_lock ---- */
static atomic_int stop_flag;
static atomic_long mmap_rounds;

__attribute__((noinline)) void lw_mmap_loop(void)
{
	while (!atomic_load(&stop_flag)) {
		size_t len = 256 * 1024;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			continue;
		for (size_t off = 0; off < len; off += 4096)
			p[off] = 1;	/* page faults: mmap_lock for reading */
		munmap(p, len);		/* ... for writing */
		atomic_fetch_add(&mmap_rounds, 1);
	}
}

static void *mmapper(void *arg)
{
	(void)arg;
	lw_mmap_loop();
	return NULL;
}

static int mmap_storm(double secs, int nthreads)
{
	pthread_t t[64];

	if (nthreads > 64)
		nthreads = 64;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, mmapper, NULL);
	sleep_ns(secs * 1e9);
	atomic_store(&stop_flag, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	fprintf(stderr, "MMAP threads=%d rounds=%ld\n", nthreads, atomic_load(&mmap_rounds));
	return 0;
}

/* ---- storm: bad and distinct futex addresses ---- */
static int storm(long n)
{
	size_t len = (size_t)n * sizeof(uint32_t);
	uint32_t *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *hole;
	long calls = 0, eagain = 0, efault = 0;

	if (a == MAP_FAILED)
		return 1;
	/* a mapped-then-unmapped range: addresses that fault */
	hole = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(hole, 1 << 20);
	for (long i = 0; i < n; i++) {
		if (futex(&a[i], FUTEX_WAIT_PRIVATE, 1, NULL, 0) && errno == EAGAIN)
			eagain++;
		calls++;
	}
	for (long i = 0; i < n; i++) {
		void *bad = hole + (i * 4) % (1 << 20);
		int op = (i & 3) == 0 ? FUTEX_WAIT : (i & 3) == 1 ?
			 FUTEX_WAIT_BITSET : (i & 3) == 2 ? FUTEX_LOCK_PI :
			 FUTEX_WAIT_PRIVATE;

		if (futex(bad, op, 0, NULL, ~0u) && errno == EFAULT)
			efault++;
		calls++;
	}
	fprintf(stderr, "STORM calls=%ld eagain=%ld efault=%ld\n", calls, eagain, efault);
	munmap(a, len);
	return 0;
}

/* ---- many: threads waiting at once ---- */
static uint32_t many_words[1024];
static long many_ms;

static void *many_waiter(void *arg)
{
	uint32_t *w = arg;
	struct timespec ts = { many_ms / 1000, (many_ms % 1000) * 1000000 };

	futex(w, FUTEX_WAIT_PRIVATE, 0, &ts, 0);
	return NULL;
}

static int many(int nthreads, long ms)
{
	pthread_t t[1024];

	if (nthreads > 1024)
		nthreads = 1024;
	many_ms = ms;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, many_waiter, &many_words[i]);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	fprintf(stderr, "MANY threads=%d ms=%ld\n", nthreads, ms);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "contend"))
		return contend(atoi(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "mmap"))
		return mmap_storm(atof(argv[2]), atoi(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "storm"))
		return storm(atol(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "many"))
		return many(atoi(argv[2]), atol(argv[3]));
	fprintf(stderr, "usage: see the top of lock-wait.c\n");
	return 2;
}
