/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU record rings shared with user space through mmap of /dev/ember.
 * Layout and protocol: include/uapi/ember.h ("Rings").
 */
#ifndef EMBER_RING_H
#define EMBER_RING_H

#include <linux/irq_work.h>
#include <linux/kref.h>
#include <asm/local.h>

#include "ember_kmod.h"

struct ember_ring {
	struct ember_ring_ctrl *ctrl;	/* first page of the mapping */
	u8 *data;			/* data_size bytes after it */
	unsigned long size;		/* power of two */
	unsigned int cpu;
	/*
	 * The kernel's own positions: user space can scribble over the
	 * control page, so nothing but ctrl->consumer is ever read back,
	 * and that one only to compute free space.
	 */
	local_t head;			/* bytes reserved so far */
	local_t nest;			/* writers in flight on this CPU */
	local_t lost;
	unsigned long last_wake;	/* head at the last wake-up */
	unsigned int watermark;
	struct irq_work wake_work;
};

struct ember_ringset {
	struct kref ref;		/* session + every mapping */
	unsigned int nr;		/* nr_cpu_ids */
	unsigned long data_size;
	struct ember_ring *rings[];	/* NULL for impossible CPUs */
};

struct ember_ringset *ember_ringset_alloc(unsigned long data_size,
					  unsigned int watermark);
void ember_ringset_get(struct ember_ringset *set);
void ember_ringset_put(struct ember_ringset *set);
void ember_ringset_sync(struct ember_ringset *set);

void *ember_ring_reserve(struct ember_ring *rb, u32 len);
void ember_ring_commit(struct ember_ring *rb);
unsigned long ember_ring_unread(struct ember_ring *rb);

#endif /* EMBER_RING_H */
