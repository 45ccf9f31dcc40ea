// SPDX-License-Identifier: GPL-2.0
/*
 * ticker SECONDS HZ: a reference for the rate test. Wakes on an absolute
 * HZ grid with clock_nanosleep() and, like perf's cpu-clock hrtimer
 * (hrtimer_forward_now), skips the periods it woke up too late for. Prints
 * "ticker rate_hz=R": the timer rate this (virtual) machine delivers right
 * now, so a rate shortfall can be told apart from a module fault.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long ns(const struct timespec *t)
{
	return t->tv_sec * 1000000000LL + t->tv_nsec;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 4;
	long long period, next, end, now, ticks = 0, start;
	struct timespec t;

	period = (long long)(1e9 / (argc > 2 ? atof(argv[2]) : 99));
	clock_gettime(CLOCK_MONOTONIC, &t);
	start = ns(&t);
	next = start + period;
	end = start + (long long)(secs * 1e9);
	while (next < end) {
		t.tv_sec = next / 1000000000LL;
		t.tv_nsec = next % 1000000000LL;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
		now = ns(&t);
		ticks++;
		/* the next deadline still ahead of now, as hrtimer_forward does */
		next += period * ((now - next) / period + 1);
	}
	printf("ticker rate_hz=%.1f\n", ticks / ((end - start) / 1e9));
	return 0;
}
