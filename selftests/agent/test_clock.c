// SPDX-License-Identifier: GPL-2.0-only
/*
 * include/ember_clock.h, the periods a cpu-clock firing stands for, as
 * the module and the eBPF program count them: against a simulated perf
 * timer (expiries on a period grid, each firing late by a latency, an
 * expiry passed while late is missed), the periods counted add up to the
 * grid points passed, however late the timer runs.
 */
#include <stdint.h>
#include <string.h>
#include "ember_clock.h"
#include "test_util.h"

#define P 2004008ull	/* 499 Hz */

static __u64 rng = 88172645463325252ull;

static __u64 next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * A perf timer started at start: n firings, each late by a latency drawn
 * by late_fn; returns the periods counted and sets *passed to the grid
 * points the timer passed (what the firings stand for).
 */
static __u64 simulate(__u64 start, int n, __u64 (*late_fn)(int),
			 __u64 *passed, __u64 *worst_err)
{
	struct ember_clock c = { 0 };
	__u64 expiry = start, counted = 0, grid = 0;

	*worst_err = 0;
	for (int i = 0; i < n; i++) {
		__u64 now = expiry + late_fn(i), k;

		/* hrtimer_forward_now: the first grid point after now */
		k = (now - expiry) / P + 1;
		grid += k;
		counted += ember_clock_periods(&c, now, P, 7, 0);
		if (grid > counted && grid - counted > *worst_err)
			*worst_err = grid - counted;
		if (counted > grid && counted - grid > *worst_err)
			*worst_err = counted - grid;
		expiry += k * P;
	}
	*passed = grid;
	return counted;
}

static __u64 on_time(int i)
{
	return 3000 + (__u64)(i % 7) * 500;	/* a few us of latency */
}

/* a VM's vCPU held by its host now and then: up to 20 periods late */
static __u64 held(int i)
{
	__u64 r = next_rand();

	(void)i;
	if (r % 10 == 0)
		return P * (r % 20) + (r >> 40) % P;
	return 2000 + (r >> 20) % 20000;
}

/* late by less than a period each time: no expiry missed */
static __u64 jittery(int i)
{
	(void)i;
	return (next_rand() >> 11) % (P - 1);
}

int main(void)
{
	struct ember_clock c = { 0 };
	__u64 passed, counted, err;

	counted = simulate(1000000000ull, 10000, on_time, &passed, &err);
	T_CHECK("clock_on_time_one_each", counted == 10000 && passed == 10000,
		"%llu counted, %llu passed", (unsigned long long)counted,
		(unsigned long long)passed);
	counted = simulate(5000000000ull, 20000, held, &passed, &err);
	T_CHECK("clock_held_vcpu_counts_passed",
		counted <= passed && passed - counted <= passed / 200 && err <= 2,
		"%llu counted, %llu passed, drift %llu", (unsigned long long)counted,
		(unsigned long long)passed, (unsigned long long)err);
	counted = simulate(7000000000ull, 20000, jittery, &passed, &err);
	T_CHECK("clock_jitter_not_periods",
		passed == 20000 && counted <= passed && passed - counted <= 200,
		"%llu counted, %llu passed", (unsigned long long)counted,
		(unsigned long long)passed);
	/* first firing; a gap beyond the maximum (a CPU back online) */
	T_CHECK("clock_first_one", ember_clock_periods(&c, 1000, P, 7, 0) == 1 &&
		c.next_ns == 1000 + P, "next %llu", (unsigned long long)c.next_ns);
	T_CHECK("clock_late_three",
		ember_clock_periods(&c, 1000 + 3 * P + 50, P, 7, 0) == 3,
		"next %llu", (unsigned long long)c.next_ns);
	T_CHECK("clock_long_gap_one",
		ember_clock_periods(&c, c.next_ns + (EMBER_SAMPLE_MAX_PERIODS + 5) * P,
				    P, 7, 0) == 1,
		"a gap beyond the maximum counted");
	/*
	 * An idle CPU takes no firing: the gap before a task that woke (or
	 * the same task back after a switch) is not its time.
	 */
	T_CHECK("clock_other_task_one",
		ember_clock_periods(&c, c.next_ns + 10 * P, P, 8, 0) == 1,
		"another task's gap counted");
	T_CHECK("clock_switched_back_one",
		ember_clock_periods(&c, c.next_ns + 10 * P, P, 8, 2) == 1,
		"a gap across the task's own switches counted");
	T_CHECK("clock_ran_through_counts",
		ember_clock_periods(&c, c.next_ns + 4 * P + 9, P, 8, 2) == 5,
		"a late firing of a task that ran through not counted");
	T_CHECK("clock_no_period_one", ember_clock_periods(&c, 5, 0, 8, 2) == 1,
		"period 0");
	T_EXIT();
}
