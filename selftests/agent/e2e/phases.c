// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember-phases: a CPU-bound workload with known CPU shares per function,
 * for ember record's end-to-end tests. It measures its own per-thread CPU
 * time (CLOCK_THREAD_CPUTIME_ID) around each phase and prints
 *	PHASE <function> <cpu_ns>
 * so the test can compare the profile's shares with the truth.
 *
 * The main thread runs phase_alpha, phase_beta and phase_syscall (which
 * spends its time in the kernel: read() of /dev/zero issued with a raw
 * syscall instruction from the phase function itself, so even a
 * frame-pointer unwinder sees the phase under the kernel frames); a worker
 * thread runs phase_worker meanwhile. Every hot function is a non-leaf
 * with a frame pointer, so the whole chain is walkable.
 *
 * usage: ember-phases [SCALE]     (SCALE multiplies every duration)
 *        ember-phases --short     (burn ~200 ms in short_lived_burn, exit)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

#define ROUNDS 40

static volatile unsigned long sink;
static double scale = 1.0;

static unsigned long long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static unsigned long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Spin in the caller's frame: the caller is what the profile must show. */
#define SPIN_UNTIL(start, ns) do {					\
	while (thread_cpu_ns() - (start) < (ns))			\
		for (unsigned long i = 0; i < 50000; i++)		\
			sink += i * i;					\
} while (0)

NOINLINE void phase_alpha(unsigned long long ns)
{
	unsigned long long t = thread_cpu_ns();

	SPIN_UNTIL(t, ns);
}

NOINLINE void phase_beta(unsigned long long ns)
{
	unsigned long long t = thread_cpu_ns();

	SPIN_UNTIL(t, ns);
}

NOINLINE void phase_worker(unsigned long long ns)
{
	unsigned long long t = thread_cpu_ns();

	SPIN_UNTIL(t, ns);
}

static long raw_read(int fd, void *buf, unsigned long len)
{
	long ret;

	__asm__ volatile ("syscall"
			  : "=a"(ret)
			  : "a"((long)SYS_read), "D"((long)fd), "S"(buf), "d"(len)
			  : "rcx", "r11", "memory");
	return ret;
}

/* Kernel time: big reads from /dev/zero (clear_user in the kernel). */
NOINLINE void phase_syscall(unsigned long long ns)
{
	static char buf[256 << 10];
	unsigned long long t = thread_cpu_ns();
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0) {
		perror("/dev/zero");
		exit(1);
	}
	while (thread_cpu_ns() - t < ns)
		sink += raw_read(fd, buf, sizeof(buf));
	close(fd);
}

NOINLINE void short_lived_burn(void)
{
	unsigned long long t = mono_ns();

	/* wall clock: "a process that lives 200 ms" */
	while (mono_ns() - t < 200000000ull)
		for (unsigned long i = 0; i < 100000; i++)
			sink += i;
}

struct timed {
	const char *name;
	void (*fn)(unsigned long long);
	unsigned long long want_ns, got_ns;
};

NOINLINE void run_timed(struct timed *t, int rounds)
{
	unsigned long long s = thread_cpu_ns();

	t->fn(t->want_ns * scale / rounds);
	t->got_ns += thread_cpu_ns() - s;
}

static void *worker_main(void *arg)
{
	prctl(PR_SET_NAME, "phases-worker");
	for (int r = 0; r < ROUNDS; r++)
		run_timed(arg, ROUNDS);
	return NULL;
}

/*
 * The phases alternate in short slices rather than running one after the
 * other: in a VM under emulation, stalls of the virtual CPU cost samples,
 * and interleaving spreads that loss evenly over the phases.
 */
NOINLINE void run_phases(struct timed *main_phases, int n)
{
	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < n; i++)
			run_timed(&main_phases[i], ROUNDS);
}

int main(int argc, char **argv)
{
	struct timed phases[] = {
		{ "phase_alpha", phase_alpha, 1000000000ull, 0 },
		{ "phase_beta", phase_beta, 600000000ull, 0 },
		{ "phase_syscall", phase_syscall, 400000000ull, 0 },
	};
	struct timed worker = { "phase_worker", phase_worker, 800000000ull, 0 };
	pthread_t th;

	if (argc > 1 && !strcmp(argv[1], "--short")) {
		short_lived_burn();
		return 0;
	}
	if (argc > 1)
		scale = atof(argv[1]) > 0 ? atof(argv[1]) : 1.0;
	if (pthread_create(&th, NULL, worker_main, &worker))
		return 1;
	run_phases(phases, 3);
	pthread_join(th, NULL);
	for (int i = 0; i < 3; i++)
		printf("PHASE %s %llu\n", phases[i].name, phases[i].got_ns);
	printf("PHASE %s %llu\n", worker.name, worker.got_ns);
	return 0;
}
