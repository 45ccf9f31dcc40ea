/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * ember_clock.h: the sampling periods a firing of a CPU's cpu-clock event
 * stands for (include/uapi/ember.h, ember_sample.periods), one definition
 * for the module (kmod/oncpu.c), the eBPF program (bpf/oncpu.bpf.h) and
 * the agent's tests. Plain C: no allocation, no locking, 64-bit division
 * (the module builds for 64-bit architectures only).
 */
#ifndef EMBER_CLOCK_H
#define EMBER_CLOCK_H

#include "uapi/ember.h"

/* One CPU's clock event, as its firings saw it. */
struct ember_clock {
	__u64 next_ns;		/* the expiry the next firing is for; 0: none */
	__u64 tid;		/* the task the last firing interrupted */
	__u64 switches;		/* its context switches then */
};

/*
 * A late timer fires once for every expiry it passed. perf's cpu-clock
 * timer expires on a grid of period steps (hrtimer_forward_now), so a
 * firing at now stands for the grid points passed since the expiry it
 * was for, c->next_ns as seen from here; a firing before it means the
 * estimate sits late on the grid, and it moves to that firing, so that it
 * stays within the timer's least latency of the true grid.
 *
 * Only while one task ran throughout: the one the last firing
 * interrupted, not switched out since (tid and switches, its nvcsw +
 * nivcsw). A CPU that goes idle may take no firing until it runs again
 * (measured: an idle CPU of the 6.18 test host took none in 3 s), and
 * the gap is then not the woken task's time: one period, and the grid
 * starts again there. A gap over EMBER_SAMPLE_MAX_PERIODS is not a late
 * timer either (a CPU back online, a new event): one period.
 */
static inline __u64 ember_clock_periods(struct ember_clock *c, __u64 now,
					__u64 period, __u64 tid,
					__u64 switches)
{
	__u64 n = 1;
	int ran_through = c->next_ns && c->tid == tid &&
			  c->switches == switches;

	c->tid = tid;
	c->switches = switches;
	if (!period)
		return 1;
	if (ran_through && now >= c->next_ns)
		n = 1 + (now - c->next_ns) / period;
	if (ran_through && now >= c->next_ns &&
	    n <= EMBER_SAMPLE_MAX_PERIODS) {
		c->next_ns += n * period;	/* on the grid */
	} else {
		n = 1;
		c->next_ns = now + period;
	}
	return n;
}

#endif /* EMBER_CLOCK_H */
