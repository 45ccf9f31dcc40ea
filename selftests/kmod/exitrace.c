// SPDX-License-Identifier: GPL-2.0
/*
 * exitrace ROUNDS THREADS: forks ROUNDS multi-threaded children, one at a
 * time, and prints "child PID" for each. Even rounds join their threads and
 * return from main; odd rounds call exit() while the threads still spin.
 * Both make several threads reach the sched_process_exit tracepoint after
 * signal->live fell to 0 (a joined thread is still on its way there when
 * pthread_join returns), the case that gave a process two EXIT records.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;

static void *quick(void *arg)
{
	return arg;
}

static void *spin(void *arg)
{
	while (!stop)
		;
	return arg;
}

static void child(int round, int threads)
{
	pthread_t t[64];
	int i;

	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, round & 1 ? spin : quick, NULL);
	if (round & 1) {
		usleep(2000);
		exit(0);	/* exit_group with the spinners running */
	}
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	exit(0);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	int threads = argc > 2 ? atoi(argv[2]) : 4;
	int r;

	if (threads < 1 || threads > 64)
		threads = 4;
	for (r = 0; r < rounds; r++) {
		pid_t p;

		/* a child's exit() must not flush a copy of our buffer */
		fflush(stdout);
		p = fork();

		if (p == 0)
			child(r, threads);
		if (p < 0)
			return 1;
		printf("child %d\n", p);
		waitpid(p, NULL, 0);
	}
	return 0;
}
