// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU rings: lock-free, nesting-safe writers.
 *
 * Every writer of ring N runs on CPU N (perf overflow handler in hardirq or
 * NMI, scheduler tracepoints, exec/exit tracepoints), so the only
 * concurrency is nesting: a writer interrupted by another writer on the same
 * CPU. The scheme is the one of kernel/events/ring_buffer.c: space is
 * reserved with a cmpxchg on a CPU-local head, a nest counter tells the
 * outermost writer to publish the producer position, and that writer
 * re-checks the head after publishing so a record reserved by a nested
 * writer in the window is never left unpublished. A record never wraps: when
 * it does not fit before the end of the data area a PAD record fills the
 * tail. A full ring drops the new record and counts it in ctrl->lost.
 */
#include <linux/vmalloc.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/cpumask.h>

#include "ring.h"

static void ember_ring_wake(struct irq_work *work)
{
	wake_up_interruptible_all(&ember_wq);
}

static void ember_ring_free(struct ember_ring *rb)
{
	if (!rb)
		return;
	vfree(rb->ctrl);
	kfree(rb);
}

static struct ember_ring *ember_ring_alloc(unsigned int cpu,
					   unsigned long data_size,
					   unsigned int watermark)
{
	struct ember_ring *rb;

	rb = kzalloc_node(sizeof(*rb), GFP_KERNEL, cpu_to_node(cpu));
	if (!rb)
		return NULL;
	/* vmalloc_user: zeroed and marked for remap_vmalloc_range() */
	rb->ctrl = vmalloc_user(PAGE_SIZE + data_size);
	if (!rb->ctrl) {
		kfree(rb);
		return NULL;
	}
	rb->data = (u8 *)rb->ctrl + PAGE_SIZE;
	rb->size = data_size;
	rb->cpu = cpu;
	rb->watermark = watermark;
	local_set(&rb->head, 0);
	local_set(&rb->nest, 0);
	local_set(&rb->lost, 0);
	init_irq_work(&rb->wake_work, ember_ring_wake);

	rb->ctrl->version = EMBER_ABI_VERSION;
	rb->ctrl->cpu = cpu;
	rb->ctrl->data_size = data_size;
	rb->ctrl->data_offset = PAGE_SIZE;
	return rb;
}

struct ember_ringset *ember_ringset_alloc(unsigned long data_size,
					  unsigned int watermark)
{
	struct ember_ringset *set;
	unsigned int cpu;

	set = kzalloc(struct_size(set, rings, nr_cpu_ids), GFP_KERNEL);
	if (!set)
		return NULL;
	kref_init(&set->ref);
	set->nr = nr_cpu_ids;
	set->data_size = data_size;
	for_each_possible_cpu(cpu) {
		set->rings[cpu] = ember_ring_alloc(cpu, data_size, watermark);
		if (!set->rings[cpu]) {
			ember_ringset_put(set);
			return NULL;
		}
	}
	return set;
}

/* Waits for queued wake-ups; call once no writer can touch the set. */
void ember_ringset_sync(struct ember_ringset *set)
{
	unsigned int i;

	for (i = 0; i < set->nr; i++)
		if (set->rings[i])
			irq_work_sync(&set->rings[i]->wake_work);
}

static void ember_ringset_release(struct kref *ref)
{
	struct ember_ringset *set = container_of(ref, struct ember_ringset, ref);
	unsigned int i;

	ember_ringset_sync(set);
	for (i = 0; i < set->nr; i++)
		ember_ring_free(set->rings[i]);
	kfree(set);
}

void ember_ringset_get(struct ember_ringset *set)
{
	kref_get(&set->ref);
}

void ember_ringset_put(struct ember_ringset *set)
{
	if (set)
		kref_put(&set->ref, ember_ringset_release);
}

/* Publishes the lost count; a nested writer's newer value always wins. */
static void ember_ring_publish_lost(struct ember_ring *rb)
{
	long v;

	do {
		v = local_read(&rb->lost);
		WRITE_ONCE(rb->ctrl->lost, v);
		barrier();
	} while (v != local_read(&rb->lost));
}

/*
 * Bytes between the consumer and the producer, for poll(). A consumer
 * position that makes no sense reads as "nothing to read".
 */
unsigned long ember_ring_unread(struct ember_ring *rb)
{
	unsigned long head = (unsigned long)local_read(&rb->head);
	unsigned long tail = READ_ONCE(rb->ctrl->consumer);

	if (head - tail > rb->size)
		return 0;
	return head - tail;
}

/*
 * Reserves len bytes (a multiple of 8, header included) and returns where
 * to write them, or NULL when the ring is full (the record is counted as
 * lost). On success the caller fills the record and calls
 * ember_ring_commit(). Safe in any context, nested or not.
 */
void *ember_ring_reserve(struct ember_ring *rb, u32 len)
{
	unsigned long head, tail, used, off, pad;
	struct ember_rec_header *ph;

	local_inc(&rb->nest);
	barrier();
	do {
		tail = READ_ONCE(rb->ctrl->consumer);
		head = (unsigned long)local_read(&rb->head);
		used = head - tail;
		/* a consumer ahead of us or too far behind is bogus: full */
		if (used > rb->size)
			goto full;
		off = head & (rb->size - 1);
		pad = off + len > rb->size ? rb->size - off : 0;
		if (pad + len > rb->size - used)
			goto full;
	} while (local_cmpxchg(&rb->head, (long)head,
			       (long)(head + pad + len)) != (long)head);
	/*
	 * Order the consumer load above before our stores into the data
	 * area; pairs with the reader's release store of consumer.
	 */
	smp_mb();
	if (pad) {
		ph = (struct ember_rec_header *)(rb->data + off);
		ph->type = EMBER_REC_PAD;
		ph->__reserved = 0;
		ph->size = pad;
	}
	return rb->data + ((head + pad) & (rb->size - 1));

full:
	local_inc(&rb->lost);
	ember_ring_publish_lost(rb);
	ember_ring_commit(rb);
	return NULL;
}

/* Ends a reservation; the outermost writer publishes the producer. */
void ember_ring_commit(struct ember_ring *rb)
{
	unsigned long head;

	if (local_read(&rb->nest) > 1) {
		local_dec(&rb->nest);
		return;
	}
again:
	head = (unsigned long)local_read(&rb->head);
	/* record contents before the producer; pairs with reader's acquire */
	smp_store_release(&rb->ctrl->producer, head);
	barrier();
	local_set(&rb->nest, 0);
	barrier();
	/* a nested writer reserved after our read: publish it too */
	if (unlikely(head != (unsigned long)local_read(&rb->head))) {
		local_set(&rb->nest, 1);
		goto again;
	}
	if (head - rb->last_wake >= rb->watermark) {
		rb->last_wake = head;
		irq_work_queue(&rb->wake_work);
	}
}
