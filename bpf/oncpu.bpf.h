/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/oncpu.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * On-CPU: ember_oncpu, on each CPU's cpu-clock (or cycles) perf event.
 * perf_sample() is also the page-fault perf event's path (faults.bpf.h).
 */
#ifndef EMBER_ONCPU_BPF_H
#define EMBER_ONCPU_BPF_H

#include "common.bpf.h"
#include "filter.bpf.h"
#include "record.bpf.h"
#include "stack.bpf.h"
#include "../include/ember_clock.h"

/* Set by the loader before load (frozen: the verifier sees constants). */
const volatile bool include_idle;
const volatile __u64 fixed_weight_ns;	/* 0: the event's period is in ns */
const volatile bool stack_copy;		/* test mode: EMBER_REC_USER_STACK */
const volatile __u64 fault_page_size = 4096;	/* bytes per faulted page */

/*
 * Each CPU's clock event: the expiry its next firing is for, and the
 * sampling periods its last firing stood for (include/uapi/ember.h,
 * ember_sample.periods).
 */
struct oncpu_fire {
	struct ember_clock clock;
	__u64 periods;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct oncpu_fire);
} oncpu_fire SEC(".maps");

/*
 * At every firing of this CPU's clock event, filtered or not
 * (include/ember_clock.h); the kernel also skips the program while
 * another one runs on the CPU: a gap counted the same way. A cycles
 * event counts only what runs: never late that way. Not inlined, nor
 * oncpu_periods(): their frames stay out of ember_oncpu's (README:
 * <= 288 bytes, for the combined limit on 5.10 and 6.1).
 */
static __noinline int oncpu_fired(__u64 period)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 now = bpf_ktime_get_ns();
	__u32 zero = 0;
	struct oncpu_fire *f = bpf_map_lookup_elem(&oncpu_fire, &zero);

	if (!f)
		return 0;
	f->periods = fixed_weight_ns ? 1 :
		     ember_clock_periods(&f->clock, now, period,
					 (__u32)bpf_get_current_pid_tgid(),
					 BPF_CORE_READ(task, nvcsw) +
					 BPF_CORE_READ(task, nivcsw));
	return 0;
}

static __noinline __u64 oncpu_periods(void)
{
	__u32 zero = 0;
	struct oncpu_fire *f = bpf_map_lookup_elem(&oncpu_fire, &zero);

	return f && f->periods ? f->periods : 1;
}

/*
 * A perf_event sample: on-CPU (cpu-clock/cycles) or a sampled page fault.
 * Both share EMBER_SLOT_ONCPU: the kernel never nests one perf_event
 * program inside another on a CPU (bpf_prog_active), so they cannot use
 * the slot at once.
 */
static __always_inline int perf_sample(struct bpf_perf_event_data *ctx,
				       __u16 type)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct ember_bpf_stats *st = get_stats();
	bool in_kernel, kthread;
	struct uw_regs *ur;
	struct scratch *sc;
	struct ember_sample *s;
	__u16 flags = 0;
	__u64 size;

	if (!st)
		return 0;
	if (type == EMBER_REC_SAMPLE)
		st->samples++;
	if (tid == 0) {
		if (!include_idle || type != EMBER_REC_SAMPLE) {
			st->filtered++;
			return 0;
		}
		flags |= EMBER_SF_IDLE;
	}
	if (!pass_filters(task, tgid)) {
		st->filtered++;
		return 0;
	}
	sc = get_scratch(EMBER_SLOT_ONCPU);
	ur = uw_regs_slot(EMBER_SLOT_ONCPU);
	if (!sc || !ur)
		return 0;
	s = (void *)sc;

	in_kernel = !ARCH_USER_MODE((const struct uapi_regs *)ctx);
	kthread = BPF_CORE_READ(task, flags) & PF_KTHREAD;
	if (in_kernel)
		flags |= EMBER_SF_IN_KERNEL;
	if (kthread)
		flags |= EMBER_SF_KTHREAD;

	fill_common(s, type, bpf_ktime_get_ns(), tgid, tid);
	if (type == EMBER_REC_FAULT) {
		/*
		 * Bytes: faults this sample stands for x the base page size.
		 * The software event does not tell the size of the page a
		 * fault mapped: a huge-page fault counts as one base page.
		 */
		s->weight_ns = ctx->sample_period * fault_page_size;
	} else {
		s->periods = oncpu_periods();
		s->weight_ns = (fixed_weight_ns ? fixed_weight_ns :
						  ctx->sample_period) * s->periods;
	}
	if (!in_kernel)
		arch_uw_regs((const void *)ctx, ur);
	flags |= fill_stacks(ctx, s, in_kernel, !kthread, EMBER_SLOT_ONCPU,
			     in_kernel ? NULL : ur);
	/* before the sample: the agent holds the copy when it reads it */
	if (stack_copy_wanted(flags, s->nr_user) && !stack_copy &&
	    stack_copy_out(s->time_ns, ((__u64)tgid << 32) | tid) >= 0)
		flags |= EMBER_SF_USER_COPIED;
	s->flags = flags;

	size = s->hdr.size;
	if (size > sizeof(*sc))
		return 0;
	emit(ctx, s, size, st);
	/* not for 32-bit tasks: their registers are not the record's */
	if (stack_copy && type == EMBER_REC_SAMPLE && !kthread && s->nr_user &&
	    !(flags & EMBER_SF_COMPAT))
		copy_user_stack(s, in_kernel ? NULL : ctx);
	return 0;
}

SEC("perf_event")
int ember_oncpu(struct bpf_perf_event_data *ctx)
{
	oncpu_fired(ctx->sample_period);
	return perf_sample(ctx, EMBER_REC_SAMPLE);
}

#endif /* EMBER_ONCPU_BPF_H */
