// SPDX-License-Identifier: GPL-2.0-only
/*
 * offcpu-wait: blocks in known functions for known times and measures them
 * itself, then prints its totals of off-CPU time per wait: wall time
 * (CLOCK_MONOTONIC) around each wait minus the thread's own CPU time
 * (CLOCK_THREAD_CPUTIME_ID) in the same window:
 *   wait_sleep30   nanosleep 30 ms          (kernel: do_nanosleep)
 *   wait_sleep10   nanosleep 10 ms          (kernel: do_nanosleep)
 *   wait_pipe20    read() on a pipe a helper thread writes after 20 ms
 *                                           (kernel: pipe_read)
 * Runs argv[1] rounds (default 40). Every syscall inside a timed window is
 * made right here with the syscall instruction (no libc, no vDSO: they keep
 * no frame pointers), so whatever stops the thread inside a window, a wait
 * or a preemption, has wait_* in its user stack (frame pointers, clang).
 * Output: "MEASURED wait_sleep30=<ns> wait_sleep10=<ns> wait_pipe20=<ns>".
 *
 * Why the CPU time is subtracted: the window also holds the syscalls'
 * entry and exit and the clock reads, on CPU and so in no off-CPU
 * interval. On a host that is microseconds, but under qemu TCG an on-CPU
 * stretch lasts as long as the host lets the vCPU thread run: around the
 * pipe wait both threads are awake at once (the releaser going back to its
 * read while the main thread returns from its own), and 6.1 guests showed
 * 2-5 ms of such on-CPU time per pipe window, 7-14% of the wait, with every
 * off-CPU interval present in the dump. The scheduler's CPU time of the
 * thread counts exactly those stretches, whatever the vCPU's speed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int pfd[2];
static unsigned long long t_sleep30, t_sleep10, t_pipe20;

__attribute__((noinline)) static long sys3(long nr, long a, long b, long c)
{
	long ret;

#if defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;

	asm volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	ret = x0;
#else
	asm volatile("syscall"
		     : "=a"(ret)
		     : "0"(nr), "D"(a), "S"(b), "d"(c)
		     : "rcx", "r11", "memory");
#endif
	return ret;
}

__attribute__((noinline)) static unsigned long long now_ns(void)
{
	struct timespec ts;

	sys3(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* the calling thread's CPU time, as the scheduler accounts it */
__attribute__((noinline)) static unsigned long long cpu_ns(void)
{
	struct timespec ts;

	sys3(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (long)&ts, 0);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* a wait's window: wall time first in, last out */
struct window {
	unsigned long long wall, cpu;
};

__attribute__((noinline)) static void window_open(struct window *w)
{
	w->wall = now_ns();
	w->cpu = cpu_ns();
}

/* off-CPU time of the window: wall time minus the thread's CPU time */
__attribute__((noinline)) static unsigned long long window_close(struct window *w)
{
	unsigned long long cpu = cpu_ns() - w->cpu;

	return now_ns() - w->wall - cpu;
}

__attribute__((noinline)) static void sleep_ns(long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	sys3(SYS_nanosleep, (long)&ts, 0, 0);
}

__attribute__((noinline)) void wait_sleep30(void)
{
	struct window w;

	window_open(&w);
	sleep_ns(30000000);
	t_sleep30 += window_close(&w);
}

__attribute__((noinline)) void wait_sleep10(void)
{
	struct window w;

	window_open(&w);
	sleep_ns(10000000);
	t_sleep10 += window_close(&w);
}

__attribute__((noinline)) static long read_one(int fd, char *c)
{
	return sys3(SYS_read, fd, (long)c, 1);
}

/*
 * The releaser is one long-lived thread: told to go through pipe "go", it
 * sleeps 20 ms and writes to pipe "pfd". No thread is created inside the
 * timed window (a clone there adds scheduling noise the wait is not about).
 */
static int go[2];

/*
 * Main thread and releaser on different CPUs when there are two: waking
 * the releaser must not preempt the main thread inside a timed window
 * (under emulation such a preemption lasts milliseconds).
 */
static void pin_to(int cpu)
{
	cpu_set_t set;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *releaser(void *arg)
{
	char c = 'x';

	(void)arg;
	pin_to(1);
	while (read_one(go[0], &c) == 1 && c == 'g') {
		sleep_ns(20000000);
		if (syscall(SYS_write, pfd[1], &c, 1) != 1)
			abort();
	}
	return NULL;
}

__attribute__((noinline)) void wait_pipe20(void)
{
	struct window w;
	char c = 'g';

	if (sys3(SYS_write, go[1], (long)&c, 1) != 1)
		abort();
	window_open(&w);
	if (read_one(pfd[0], &c) != 1)
		abort();
	t_pipe20 += window_close(&w);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40;

	pthread_t th;
	char q = 'q';

	pin_to(0);
	if (pipe(pfd) || pipe(go) || pthread_create(&th, NULL, releaser, NULL))
		return 1;
	for (int i = 0; i < rounds; i++) {
		wait_sleep30();
		wait_sleep10();
		wait_pipe20();
	}
	if (syscall(SYS_write, go[1], &q, 1) != 1 || pthread_join(th, NULL))
		return 1;
	printf("MEASURED wait_sleep30=%llu wait_sleep10=%llu wait_pipe20=%llu\n",
	       t_sleep30, t_sleep10, t_pipe20);
	return 0;
}
