/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `ember record --check-unwind`: compare the backend's user stacks with the
 * libdwfl oracle's unwinding of the same samples (oracle.h), frame by
 * frame, and report the agreement. Test mode: the backend copies every
 * sample's user stack into the ring (EMBER_F_STACK_COPY).
 */
#ifndef EMBER_UNWIND_CHECK_H
#define EMBER_UNWIND_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include "uapi/ember.h"

struct unwind_check_stats {
	uint64_t copies;	/* stack copies seen */
	uint64_t unpaired;	/* copies without their sample right before */
	uint64_t oracle_failed;	/* libdwfl could not start (process gone) */
	uint64_t not_cfi;	/* samples walked by frame pointers: skipped */
	uint64_t compared;	/* samples compared */
	uint64_t agree;		/* ... whose frames all agree */
	uint64_t frames, frames_agree;
};

struct unwind_check;

struct unwind_check *unwind_check_new(void);
/* Feed every record in ring order. */
void unwind_check_record(struct unwind_check *c,
			 const struct ember_rec_header *rec);
/*
 * aarch64: the kernel's PAC mask (0: none), which the oracle strips from
 * return addresses as the backends do, for records that do not carry the
 * mask they were taken with. Set it before the first record.
 */
void unwind_check_set_pac_mask(struct unwind_check *c, uint64_t mask);
void unwind_check_get(const struct unwind_check *c,
		      struct unwind_check_stats *st);
/* One paragraph: the agreement and the first disagreements. */
void unwind_check_report(const struct unwind_check *c, FILE *out);
void unwind_check_free(struct unwind_check *c);

#endif
