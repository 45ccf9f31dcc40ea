// SPDX-License-Identifier: GPL-2.0-only
/*
 * lockwork: ground truth for `ember record -e lock` (issue 27). Threads
 * contend, from distinct noinline call sites, on
 *	M1 (pthread mutex)  site_a_m1 (1 thread, holds 2 ms), site_b_m1 (1, 1 ms)
 *	M2 (pthread mutex)  site_c_m2 (2 threads, 2 ms)
 *	RW (pthread rwlock) site_rd_rw (1 reader), site_wr_rw (1 writer)
 *	CV (condvar)        site_cv_wait (1 waiter), woken by signal_cv_in_signaller
 *	mmap_lock (kernel)  kmap_site / kunmap_site (mmap+munmap of 1 MiB,
 *			    MAP_POPULATE, --kthreads threads)
 * and measures its own waiting: every acquire tries the lock first; when
 * it is busy, the blocking call is timed (CLOCK_MONOTONIC) and counts one
 * contention; a wait of at least --min-us (the --lock-min given to ember)
 * is "kept". Each lock is held, and released, in a distinct noinline
 * function (hold_m1_in_site_a, hold_m1_in_site_b, hold_m2_in_site_c,
 * hold_rw_read, hold_rw_write, signal_cv_in_signaller) so the waker's stack
 * can be checked to name it. Holders sleep while holding (1-2 ms) and
 * every thread sleeps between acquires (1-3 ms at random), longer than a
 * wake-up takes, and no mutex has more than two threads, so a woken waiter
 * is not overtaken (barged) and waits once per contention. The rwlock
 * prefers writers (see init_rwlock). validate-truth.sh checks this against
 * the kernel's own futex syscall trace: per site, futex waits of at least
 * 10 us (and 100 us) vs contentions kept: counts within 0-3% and time
 * within 0.3% on the host; counts within 1.5% and time within 3.3% on 5.10
 * and 6.1 under TCG. (glibc's default, readers-first rwlock made many
 * waits of a few us of phase hand-over, where a wait timed at 12 us was a
 * 9 us futex call: its counts drifted by 6-10%.)
 * The condvar has one waiter. Measured from the start (no warm-up unless
 * --warmup).
 *
 * At exit it prints one line per call site, per lock and per kernel site:
 *	SITE name=site_a_m1 lock=M1 kind=mutex holder=hold_m1_ addr=0x... size=40
 *	     acquires=N contentions=N wait_ns=N kept=N kept_ns=N
 *	LOCK name=M1 kind=mutex addr=0x... size=40 contentions=N wait_ns=N kept=N kept_ns=N
 *	KSITE name=kmap_site lock=mmap_lock holder=kmap_site|kunmap_site calls=N sys_ns=N
 *	RUN secs=S min_us=N threads=N
 * (holder: the prefix, or |-separated prefixes, of the functions that
 * release the lock; the kernel sites' waits are inside their syscalls,
 * sys_ns bounds them from above).
 *
 * usage: lockwork [--secs S] [--min-us N] [--warmup S] [--kthreads N]
 *        lockwork --bench S [--bench-kind handoff|mutex] [--threads N]
 *	--bench: a futex-heavy loop for S seconds, nothing else; prints
 *	"BENCH kind=K ops=N secs=S ops_per_s=X cpu_s=Y". handoff (default):
 *	two threads pass a turn through a mutex and a condition variable, every
 *	op one condvar wait and one wake; mutex: N threads (2) take one mutex
 *	around a tiny critical section as fast as they can.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* keeps a call from being the function's last instruction (no tail call) */
#define BARRIER() __asm__ __volatile__("" ::: "memory")
#define MS 1000000L
/*
 * Between a mutex's acquires a thread sleeps THINK, 1-3 ms at random (so
 * that threads do not fall into lock step, where one site never waits),
 * longer than a woken waiter takes to run even under emulation: with two
 * threads per mutex the only thread that could take the lock before the
 * woken waiter does (and make it wait a second time, one contention in two
 * futex waits) is the one that just released it.
 */
#define THINK think_ns()

static pthread_mutex_t M1 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t M2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t RW = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t CVM = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t CV = PTHREAD_COND_INITIALIZER;
static int cv_flag;

static volatile int stop;
static uint64_t t_start, t_measure, t_end;
static uint64_t min_ns = 10000;
static volatile unsigned long sink;

enum { S_A, S_B, S_C, S_RD, S_WR, S_CV, NSITES };
enum { K_MAP, K_UNMAP, NKSITES };

struct site {
	const char *name, *lock, *kind, *holder;
	const void *addr;
	size_t size;
	pthread_mutex_t mu;
	unsigned long acquires, contentions, kept;
	uint64_t wait_ns, kept_ns;
};

static struct site sites[NSITES] = {
	[S_A] = { .name = "site_a_m1", .lock = "M1", .kind = "mutex",
		.holder = "hold_m1_", .addr = &M1, .size = sizeof(M1) },
	[S_B] = { .name = "site_b_m1", .lock = "M1", .kind = "mutex",
		.holder = "hold_m1_", .addr = &M1, .size = sizeof(M1) },
	[S_C] = { .name = "site_c_m2", .lock = "M2", .kind = "mutex",
		.holder = "hold_m2_", .addr = &M2, .size = sizeof(M2) },
	[S_RD] = { .name = "site_rd_rw", .lock = "RW", .kind = "rwlock",
		.holder = "hold_rw_", .addr = &RW, .size = sizeof(RW) },
	[S_WR] = { .name = "site_wr_rw", .lock = "RW", .kind = "rwlock",
		.holder = "hold_rw_", .addr = &RW, .size = sizeof(RW) },
	[S_CV] = { .name = "site_cv_wait", .lock = "CV", .kind = "condvar",
		.holder = "signal_cv_in_signaller", .addr = &CV, .size = sizeof(CV) },
};

static struct ksite {
	const char *name;
	pthread_mutex_t mu;
	unsigned long calls;
	uint64_t sys_ns;
} ksites[NKSITES] = { { .name = "kmap_site" }, { .name = "kunmap_site" } };

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static long think_ns(void)
{
	static __thread uint64_t x;

	if (!x)
		x = now() | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return MS + (long)(x % (2 * MS));
}

static void sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* one acquire at site s: busy = it had to block, waited = how long */
static void account(struct site *s, int busy, uint64_t waited)
{
	if (now() < t_measure)
		return;
	pthread_mutex_lock(&s->mu);
	s->acquires++;
	if (busy) {
		s->contentions++;
		s->wait_ns += waited;
		if (waited >= min_ns) {
			s->kept++;
			s->kept_ns += waited;
		}
	}
	pthread_mutex_unlock(&s->mu);
}

/* ---- M1 and M2: waiting call sites ---- */
static NOINLINE void lock_mutex_at(pthread_mutex_t *m, struct site *s)
{
	uint64_t t0, t1;

	if (pthread_mutex_trylock(m) == 0) {
		account(s, 0, 0);
		return;
	}
	t0 = now();
	pthread_mutex_lock(m);
	t1 = now();
	account(s, 1, t1 - t0);
}

/* each site is its own frame above the shared helper */
static NOINLINE void site_a_m1(void) { lock_mutex_at(&M1, &sites[S_A]); BARRIER(); }
static NOINLINE void site_b_m1(void) { lock_mutex_at(&M1, &sites[S_B]); BARRIER(); }
static NOINLINE void site_c_m2(void) { lock_mutex_at(&M2, &sites[S_C]); BARRIER(); }

/* ---- holders: hold, then release from a named frame ---- */
static NOINLINE void hold_m1_in_site_a(void)
{
	sleep_ns(2 * MS);
	pthread_mutex_unlock(&M1);
	BARRIER();
	sink++;
}

static NOINLINE void hold_m1_in_site_b(void)
{
	sleep_ns(MS);
	pthread_mutex_unlock(&M1);
	BARRIER();
	sink++;
}

static NOINLINE void hold_m2_in_site_c(void)
{
	sleep_ns(2 * MS);
	pthread_mutex_unlock(&M2);
	BARRIER();
	sink++;
}

static void *worker_a(void *arg)
{
	(void)arg;
	while (!stop) {
		site_a_m1();
		hold_m1_in_site_a();
		sleep_ns(THINK);
	}
	return NULL;
}

static void *worker_b(void *arg)
{
	(void)arg;
	while (!stop) {
		site_b_m1();
		hold_m1_in_site_b();
		sleep_ns(THINK);
	}
	return NULL;
}

static void *worker_c(void *arg)
{
	(void)arg;
	while (!stop) {
		site_c_m2();
		hold_m2_in_site_c();
		sleep_ns(THINK);
	}
	return NULL;
}

/*
 * ---- RW: one reader, one writer ----
 * One reader, not two: with a second reader, a reader that arrives while
 * the other holds the lock and the writer waits first blocks on the
 * writer-preference gate (__readers), then, once the writer has the lock,
 * on __wrphase_futex for its whole hold: one contention, two futex waits
 * of >= 10 us. That made the kernel's count of site_rd_rw's waits exceed
 * lockwork's contentions by 0-5% (6.12 under TCG: +5.0%). With one reader
 * it only ever waits for the writer's hold, and the writer for its.
 */
static NOINLINE void site_rd_rw(void)
{
	uint64_t t0, t1;

	if (pthread_rwlock_tryrdlock(&RW) == 0) {
		account(&sites[S_RD], 0, 0);
		return;
	}
	t0 = now();
	pthread_rwlock_rdlock(&RW);
	t1 = now();
	account(&sites[S_RD], 1, t1 - t0);
}

static NOINLINE void site_wr_rw(void)
{
	uint64_t t0, t1;

	if (pthread_rwlock_trywrlock(&RW) == 0) {
		account(&sites[S_WR], 0, 0);
		return;
	}
	t0 = now();
	pthread_rwlock_wrlock(&RW);
	t1 = now();
	account(&sites[S_WR], 1, t1 - t0);
}

/*
 * Writers first: with glibc's default (readers first) most reader waits
 * are a few us of phase hand-over, not a writer's hold, and a wait that
 * lockwork times at 12 us can be two futex calls of 5 us. Preferring
 * writers, readers queue behind a waiting writer and wait for its whole
 * hold, the writer for the readers' holds.
 */
static void init_rwlock(void)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&RW, &a);
	pthread_rwlockattr_destroy(&a);
}

static NOINLINE void hold_rw_read(void)
{
	sleep_ns(2 * MS);
	pthread_rwlock_unlock(&RW);
	BARRIER();
	sink++;
}

static NOINLINE void hold_rw_write(void)
{
	sleep_ns(2 * MS);
	pthread_rwlock_unlock(&RW);
	BARRIER();
	sink++;
}

static void *worker_rd(void *arg)
{
	(void)arg;
	while (!stop) {
		site_rd_rw();
		hold_rw_read();
		sleep_ns(THINK);
	}
	return NULL;
}

static void *worker_wr(void *arg)
{
	(void)arg;
	while (!stop) {
		site_wr_rw();
		hold_rw_write();
		sleep_ns(THINK);
	}
	return NULL;
}

/* ---- CV: a waiter woken by a signaller every 2 ms ---- */
static NOINLINE void site_cv_wait(void)
{
	uint64_t t0, t1;
	int busy = 0;

	pthread_mutex_lock(&CVM);
	t0 = now();
	while (!cv_flag && !stop) {
		busy = 1;
		pthread_cond_wait(&CV, &CVM);
	}
	t1 = now();
	cv_flag = 0;
	pthread_mutex_unlock(&CVM);
	account(&sites[S_CV], busy, t1 - t0);
}

/* the flag is set under the mutex, the signal sent after releasing it, so
 * the woken waiter does not also wait for the mutex */
static NOINLINE void signal_cv_in_signaller(void)
{
	pthread_mutex_lock(&CVM);
	cv_flag = 1;
	pthread_mutex_unlock(&CVM);
	pthread_cond_signal(&CV);
	BARRIER();
	sink++;
}

static void *worker_cv(void *arg)
{
	(void)arg;
	while (!stop)
		site_cv_wait();
	return NULL;
}

static void *worker_signal(void *arg)
{
	(void)arg;
	while (!stop) {
		sleep_ns(2 * MS);
		signal_cv_in_signaller();
	}
	signal_cv_in_signaller();
	return NULL;
}

/* ---- mmap_lock: mmap (populated, so it holds the lock a while) and munmap ---- */
#define KBYTES (1UL << 20)

static void kaccount(struct ksite *k, uint64_t ns)
{
	if (now() < t_measure)
		return;
	pthread_mutex_lock(&k->mu);
	k->calls++;
	k->sys_ns += ns;
	pthread_mutex_unlock(&k->mu);
}

static NOINLINE void *kmap_site(void)
{
	uint64_t t0 = now();
	void *p = mmap(NULL, KBYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	kaccount(&ksites[K_MAP], now() - t0);
	if (p == MAP_FAILED) {
		perror("lockwork: mmap");
		exit(1);
	}
	return p;
}

static NOINLINE void kunmap_site(void *p)
{
	uint64_t t0 = now();

	munmap(p, KBYTES);
	kaccount(&ksites[K_UNMAP], now() - t0);
}

/* bursts of 1 ms then a 1 ms rest: contention without taking both CPUs */
static void *worker_kernel(void *arg)
{
	(void)arg;
	while (!stop) {
		uint64_t until = now() + MS;

		while (now() < until)
			kunmap_site(kmap_site());
		sleep_ns(MS);
	}
	return NULL;
}

/* ---- the throughput mode (bench/) ---- */
static unsigned long bench_ops[64];
static int turn;

static void *bench_handoff(void *arg)
{
	long me = (long)arg;
	unsigned long n = 0;

	pthread_mutex_lock(&CVM);
	while (!stop) {
		while (turn != me && !stop)
			pthread_cond_wait(&CV, &CVM);
		turn = !me;
		n++;
		pthread_cond_signal(&CV);
	}
	pthread_cond_broadcast(&CV);
	pthread_mutex_unlock(&CVM);
	bench_ops[me] = n;
	return NULL;
}

static void *bench_mutex(void *arg)
{
	long me = (long)arg;
	unsigned long n = 0;

	while (!stop) {
		pthread_mutex_lock(&M1);
		sink++;
		pthread_mutex_unlock(&M1);
		n++;
	}
	bench_ops[me] = n;
	return NULL;
}

static int run_bench(double secs, const char *kind, int nthreads)
{
	pthread_t th[64];
	struct timespec c0, c1;
	unsigned long ops = 0;
	uint64_t t0, t1;
	int handoff = strcmp(kind, "handoff") == 0;

	if (handoff)
		nthreads = 2;
	else if (strcmp(kind, "mutex") != 0) {
		fprintf(stderr, "lockwork: --bench-kind wants handoff or mutex\n");
		return 2;
	}
	if (nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "lockwork: --threads wants 1..64\n");
		return 2;
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	t0 = now();
	for (long i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, handoff ? bench_handoff : bench_mutex,
			       (void *)i);
	sleep_ns((long)(secs * 1e9));
	stop = 1;
	if (handoff) {
		pthread_mutex_lock(&CVM);
		pthread_cond_broadcast(&CV);
		pthread_mutex_unlock(&CVM);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		ops += bench_ops[i];
	}
	t1 = now();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	printf("BENCH kind=%s threads=%d ops=%lu secs=%.3f ops_per_s=%.0f cpu_s=%.3f\n",
	       kind, nthreads, ops, (t1 - t0) / 1e9, ops / ((t1 - t0) / 1e9),
	       (c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) / 1e9);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: lockwork [--secs S] [--min-us N] [--warmup S] [--kthreads N]\n"
			"       lockwork --bench S [--bench-kind handoff|mutex] [--threads N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	void *(*fns[])(void *) = { worker_a, worker_b, worker_c, worker_c,
				   worker_rd, worker_wr, worker_cv,
				   worker_signal };
	/* thread names: which site a thread's waits belong to, for tools
	 * that only see thread ids */
	const char *names[] = { "lw_a", "lw_b", "lw_c", "lw_c", "lw_rd",
				"lw_wr", "lw_cv", "lw_signal" };
	int nfn = sizeof(fns) / sizeof(fns[0]);
	double secs = 4, warmup = 0, bench = 0;
	const char *bench_kind = "handoff";
	int kthreads = 2, nthreads = 2, n = 0;
	pthread_t th[64];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(a, "--secs"))
			secs = atof(v);
		else if (!strcmp(a, "--min-us"))
			min_ns = strtoull(v, NULL, 10) * 1000;
		else if (!strcmp(a, "--warmup"))
			warmup = atof(v);
		else if (!strcmp(a, "--kthreads"))
			kthreads = atoi(v);
		else if (!strcmp(a, "--bench"))
			bench = atof(v);
		else if (!strcmp(a, "--bench-kind"))
			bench_kind = v;
		else if (!strcmp(a, "--threads"))
			nthreads = atoi(v);
		else
			usage();
		i++;
	}
	if (bench > 0)
		return run_bench(bench, bench_kind, nthreads);
	if (secs <= 0 || warmup < 0 || kthreads < 0 || kthreads > 16)
		usage();
	for (int i = 0; i < NSITES; i++)
		pthread_mutex_init(&sites[i].mu, NULL);
	init_rwlock();
	for (int i = 0; i < NKSITES; i++)
		pthread_mutex_init(&ksites[i].mu, NULL);

	t_start = now();
	t_measure = t_start + (uint64_t)(warmup * 1e9);
	for (int i = 0; i < nfn; i++) {
		pthread_create(&th[n], NULL, fns[i], NULL);
		pthread_setname_np(th[n++], names[i]);
	}
	for (int i = 0; i < kthreads; i++) {
		pthread_create(&th[n], NULL, worker_kernel, NULL);
		pthread_setname_np(th[n++], "lw_kernel");
	}
	sleep_ns((long)((warmup + secs) * 1e9));
	stop = 1;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	t_end = now();

	for (int i = 0; i < NSITES; i++) {
		struct site *s = &sites[i];

		printf("SITE name=%s lock=%s kind=%s holder=%s addr=%p size=%zu "
		       "acquires=%lu contentions=%lu wait_ns=%llu kept=%lu kept_ns=%llu\n",
		       s->name, s->lock, s->kind, s->holder, s->addr, s->size,
		       s->acquires, s->contentions, (unsigned long long)s->wait_ns,
		       s->kept, (unsigned long long)s->kept_ns);
	}
	/* per lock: the sum of its sites */
	for (int i = 0; i < NSITES; i++) {
		unsigned long c = 0, k = 0;
		uint64_t w = 0, kn = 0;
		int first = 1;

		for (int j = 0; j < NSITES; j++) {
			if (strcmp(sites[j].lock, sites[i].lock))
				continue;
			if (j < i)
				first = 0;
			c += sites[j].contentions;
			w += sites[j].wait_ns;
			k += sites[j].kept;
			kn += sites[j].kept_ns;
		}
		if (first)
			printf("LOCK name=%s kind=%s addr=%p size=%zu contentions=%lu "
			       "wait_ns=%llu kept=%lu kept_ns=%llu\n", sites[i].lock,
			       sites[i].kind, sites[i].addr, sites[i].size, c,
			       (unsigned long long)w, k, (unsigned long long)kn);
	}
	for (int i = 0; i < NKSITES; i++)
		printf("KSITE name=%s lock=mmap_lock holder=kmap_site|kunmap_site "
		       "calls=%lu sys_ns=%llu\n", ksites[i].name, ksites[i].calls,
		       (unsigned long long)ksites[i].sys_ns);
	printf("RUN secs=%.3f measured_secs=%.3f min_us=%llu threads=%d pid=%d\n",
	       (t_end - t_start) / 1e9, (t_end - t_measure) / 1e9,
	       (unsigned long long)(min_ns / 1000), n, (int)getpid());
	return 0;
}
