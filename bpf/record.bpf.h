/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/record.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * A record's way out: the fields every sample-shaped record starts with,
 * and the emit (ring buffer with batched wake-ups, or perf buffers),
 * counting each record as written or lost.
 */
#ifndef EMBER_RECORD_BPF_H
#define EMBER_RECORD_BPF_H

#include "common.bpf.h"

/*
 * -e lock's kernel contention (lock.bpf.h) fires inside the ring's own
 * spinlock too: on 5.19..6.15 the ring buffer's lock is a raw spinlock
 * whose slow path has the lock:contention_* tracepoints, and
 * contention_end runs with that lock held. A contention_end program that
 * emitted then would take the same lock again on this CPU: deadlock. So
 * while a program of ours is in the ring on this CPU, the contention
 * programs ignore what they see (per-CPU count, only when they run).
 */
const volatile bool lock_kernel_on;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} emitting SEC(".maps");

static __always_inline __u32 *emit_enter(void)
{
	__u32 zero = 0, *n;

	if (!lock_kernel_on)
		return NULL;
	n = bpf_map_lookup_elem(&emitting, &zero);
	if (n)
		(*n)++;
	return n;
}

static __always_inline void emit_leave(__u32 *n)
{
	if (n)
		(*n)--;
}

/*
 * The wake-up flag of a ring record: batched, the reader also polls with
 * a timeout. Every record takes it: the ring's default (flags 0) wakes
 * the reader whenever it has caught up, through an irq_work, whose
 * self-IPI cost ~5 us a record on a host whose IPIs leave the guest.
 */
static __always_inline __u64 ring_wake(bool urgent)
{
	if (urgent ||
	    bpf_ringbuf_query(&ringbuf, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* Hand a record to the ring; count it as written or lost. */
static __always_inline void emit_wake(void *ctx, void *data, __u64 size,
				      struct ember_bpf_stats *st, bool urgent)
{
	__u32 *busy = emit_enter();
	long err;

	if (use_perfbuf)
		err = bpf_perf_event_output(ctx, &perfbuf, BPF_F_CURRENT_CPU,
					    data, size);
	else
		err = bpf_ringbuf_output(&ringbuf, data, size,
					 ring_wake(urgent));
	emit_leave(busy);
	if (err)
		st->lost++;
	else
		st->records++;
}

static __always_inline void emit(void *ctx, void *data, __u64 size,
				 struct ember_bpf_stats *st)
{
	emit_wake(ctx, data, size, st, false);
}

static __always_inline void fill_common(struct ember_sample *s, __u16 type,
					__u64 now, __u32 tgid, __u32 tid)
{
	s->hdr.type = type;
	s->hdr.__reserved = 0;
	s->time_ns = now;
	s->weight_ns = 0;
	s->cgroup_id = bpf_get_current_cgroup_id();
	s->pid = tgid;
	s->tid = tid;
	s->cpu = bpf_get_smp_processor_id();
	s->state = EMBER_STATE_NONE;
	s->periods = 0;
	s->__reserved2 = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
}

#endif /* EMBER_RECORD_BPF_H */
