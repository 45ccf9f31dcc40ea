// SPDX-License-Identifier: GPL-2.0-only
/*
 * offcpu-wait: blocks in known functions for known times and measures them
 * itself (CLOCK_MONOTONIC around each wait), then prints its totals:
 *   wait_sleep30   nanosleep 30 ms          (kernel: do_nanosleep)
 *   wait_sleep10   nanosleep 10 ms          (kernel: do_nanosleep)
 *   wait_pipe20    read() on a pipe a helper thread writes after 20 ms
 *                                           (kernel: pipe_read)
 * Runs argv[1] rounds (default 40). Raw syscalls, so the user stack (frame
 * pointers, clang) reaches main without libc frames.
 * Output: "MEASURED wait_sleep30=<ns> wait_sleep10=<ns> wait_pipe20=<ns>".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int pfd[2];
static unsigned long long t_sleep30, t_sleep10, t_pipe20;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * libc's syscall() keeps no frame, so the function calling it is missing
 * from a frame-pointer walk: these wrappers are that function, and the
 * wait_* functions the tests look for sit one level above.
 */
__attribute__((noinline)) static void sleep_ns(long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };

	syscall(SYS_nanosleep, &ts, NULL);
}

__attribute__((noinline)) void wait_sleep30(void)
{
	unsigned long long a = now_ns();

	sleep_ns(30000000);
	t_sleep30 += now_ns() - a;
}

__attribute__((noinline)) void wait_sleep10(void)
{
	unsigned long long a = now_ns();

	sleep_ns(10000000);
	t_sleep10 += now_ns() - a;
}

__attribute__((noinline)) static long read_one(int fd, char *c)
{
	return syscall(SYS_read, fd, c, 1);
}

/*
 * The releaser is one long-lived thread: told to go through pipe "go", it
 * sleeps 20 ms and writes to pipe "pfd". No thread is created inside the
 * timed window (a clone there adds scheduling noise the wait is not about).
 */
static int go[2];

static void *releaser(void *arg)
{
	char c = 'x';

	(void)arg;
	while (read_one(go[0], &c) == 1 && c == 'g') {
		sleep_ns(20000000);
		if (syscall(SYS_write, pfd[1], &c, 1) != 1)
			abort();
	}
	return NULL;
}

__attribute__((noinline)) void wait_pipe20(void)
{
	unsigned long long a;
	char c = 'g';

	if (syscall(SYS_write, go[1], &c, 1) != 1)
		abort();
	a = now_ns();
	if (read_one(pfd[0], &c) != 1)
		abort();
	t_pipe20 += now_ns() - a;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40;

	pthread_t th;
	char q = 'q';

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
