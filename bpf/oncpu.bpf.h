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

/* Set by the loader before load (frozen: the verifier sees constants). */
const volatile bool include_idle;
const volatile __u64 fixed_weight_ns;	/* 0: the event's period is in ns */
const volatile bool stack_copy;		/* test mode: EMBER_REC_USER_STACK */
const volatile __u64 fault_page_size = 4096;	/* bytes per faulted page */

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
	if (type == EMBER_REC_FAULT)
		/*
		 * Bytes: faults this sample stands for x the base page size.
		 * The software event does not tell the size of the page a
		 * fault mapped: a huge-page fault counts as one base page.
		 */
		s->weight_ns = ctx->sample_period * fault_page_size;
	else
		s->weight_ns = fixed_weight_ns ? fixed_weight_ns :
						 ctx->sample_period;
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
	return perf_sample(ctx, EMBER_REC_SAMPLE);
}

#endif /* EMBER_ONCPU_BPF_H */
