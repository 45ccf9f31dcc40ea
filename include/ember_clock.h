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

/*
 * A late timer fires once for every expiry it passed. perf's cpu-clock
 * timer expires on a grid of period steps (hrtimer_forward_now), so a
 * firing at now stands for the grid points passed since the expiry it
 * was for; *next_ns is that expiry as seen from here (0: none yet).
 * A firing before it means the estimate sits late on the grid: it moves
 * to the earliest firing seen, so that it stays within the timer's
 * least latency of the true grid. A gap of more than
 * EMBER_SAMPLE_MAX_PERIODS is not a late timer (a CPU back online, a new
 * event): one period.
 */
static inline __u64 ember_clock_periods(__u64 *next_ns, __u64 now,
					__u64 period)
{
	__u64 next = *next_ns, n = 1;

	if (!period)
		return 1;
	if (next && now >= next)
		n = 1 + (now - next) / period;
	if (next && now >= next && n <= EMBER_SAMPLE_MAX_PERIODS) {
		*next_ns = next + n * period;	/* on the grid */
	} else {
		n = 1;
		*next_ns = now + period;
	}
	return n;
}

#endif /* EMBER_CLOCK_H */
