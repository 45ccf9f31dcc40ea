/* SPDX-License-Identifier: GPL-2.0-only */
/* The time now on a clock, as one number: the agent's one copy of it. */
#ifndef EMBER_CLOCK_H
#define EMBER_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on clock id (CLOCK_MONOTONIC, CLOCK_REALTIME...). */
static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC: for intervals, timeouts and ages. */
static inline uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t mono_ms(void)
{
	return mono_ns() / 1000000u;
}

#endif
