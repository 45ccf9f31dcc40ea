/* SPDX-License-Identifier: GPL-2.0-only */
/* Absolute deadlines for the timed waits of the agent's threads. */
#ifndef EMBER_DEADLINE_H
#define EMBER_DEADLINE_H

#include <stdint.h>
#include <time.h>

/*
 * Now plus ns on clock id: what pthread_cond_timedwait wants (on the
 * clock its condition variable was made with; CLOCK_REALTIME by default).
 */
static inline struct timespec deadline_after_ns(clockid_t id, uint64_t ns)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec += (long)(ns % 1000000000u);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

#endif
