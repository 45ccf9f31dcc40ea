/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The root frame that tells events apart when a profile holds several
 * (folded stacks and the SVG flame graph show the same one).
 */
#ifndef EMBER_EVENT_FRAME_H
#define EMBER_EVENT_FRAME_H

#include "aggregate/profile.h"

static inline const char *event_frame(enum prof_event ev)
{
	switch (ev) {
	case PROF_EV_OFFCPU:
		return "[offcpu]";
	case PROF_EV_FAULTS:
		return "[faults]";
	case PROF_EV_ALLOC:
		return "[alloc]";
	case PROF_EV_INUSE:
		return "[inuse]";
	case PROF_EV_LOCK:
		return "[lock]";
	default:
		return "[cpu]";
	}
}

#endif /* EMBER_EVENT_FRAME_H */
