// SPDX-License-Identifier: GPL-2.0
/*
 * Both start with a 1.5 s pause, so a profiler started right after them
 * sees all of the measured part.
 *
 * offcpu-work blocks SECONDS: blocks in known functions for known times and
 *   measures them itself: sleep_30ms() (nanosleep), sleep_10ms() (nanosleep)
 *   and pipe_wait() (a pipe read a helper thread answers after 20 ms).
 *   Prints "own sleep_30ms=NS sleep_10ms=NS pipe_wait=NS" at the end.
 * offcpu-work pingpong SECONDS: two threads bounce a byte over two pipes as
 *   fast as they can (a context-switch storm); prints "own round_trips=N".
 * Syscalls are issued from frame-pointer functions of this program (libc's
 * wrappers have no frame pointer and would hide their caller).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int go_pipe[2], done_pipe[2];
static volatile int stop;

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noinline)) long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;

#if defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	ret = x0;
#else
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
#endif
	return ret;
}

__attribute__((noinline)) void raw_nanosleep(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	raw_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
}

__attribute__((noinline)) long raw_read1(int fd)
{
	char c;

	return raw_syscall3(SYS_read, fd, (long)&c, 1);
}

__attribute__((noinline)) long raw_write1(int fd)
{
	char c = 1;

	return raw_syscall3(SYS_write, fd, (long)&c, 1);
}

__attribute__((noinline)) void sleep_30ms(void)
{
	raw_nanosleep(30000000L);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void sleep_10ms(void)
{
	raw_nanosleep(10000000L);
	__asm__ volatile("" ::: "memory");
}

/* asks the helper to answer in 20 ms; kept out of the timed pipe_wait() */
__attribute__((noinline)) void pipe_kick(void)
{
	raw_write1(go_pipe[1]);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void pipe_wait(void)
{
	raw_read1(done_pipe[0]);
	__asm__ volatile("" ::: "memory");
}

static void *helper(void *arg)
{
	(void)arg;
	while (raw_read1(go_pipe[0]) == 1) {
		raw_nanosleep(20000000L);
		raw_write1(done_pipe[1]);
	}
	return NULL;
}

__attribute__((noinline)) void work_loop(long deadline)
{
	long t, s30 = 0, s10 = 0, pw = 0, n = 0;

	while (now_ns() < deadline) {
		n++;
		t = now_ns();
		sleep_30ms();
		s30 += now_ns() - t;
		t = now_ns();
		sleep_10ms();
		s10 += now_ns() - t;
		pipe_kick();
		t = now_ns();
		pipe_wait();
		pw += now_ns() - t;
	}
	printf("own sleep_30ms=%ld sleep_10ms=%ld pipe_wait=%ld iterations=%ld\n",
	       s30, s10, pw, n);
}

static void *pong(void *arg)
{
	(void)arg;
	while (raw_read1(go_pipe[0]) == 1 && !stop)
		raw_write1(done_pipe[1]);
	return NULL;
}

__attribute__((noinline)) void ping_loop(long deadline)
{
	long n = 0;

	while (now_ns() < deadline) {
		raw_write1(go_pipe[1]);
		raw_read1(done_pipe[0]);
		n++;
	}
	stop = 1;
	raw_write1(go_pipe[1]);
	printf("own round_trips=%ld\n", n);
}

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 2;
	long deadline;
	pthread_t t;

	if (argc < 2 || pipe(go_pipe) || pipe(done_pipe)) {
		fprintf(stderr, "usage: offcpu-work blocks|pingpong SECONDS\n");
		return 2;
	}
	usleep(1500000);
	deadline = now_ns() + (long)(secs * 1e9);
	if (!strcmp(argv[1], "pingpong")) {
		pthread_create(&t, NULL, pong, NULL);
		ping_loop(deadline);
	} else {
		pthread_create(&t, NULL, helper, NULL);
		work_loop(deadline);
		close(go_pipe[1]);
	}
	pthread_join(t, NULL);
	return 0;
}
