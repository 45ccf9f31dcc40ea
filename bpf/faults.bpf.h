/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/faults.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * Page faults (EMBER_REC_FAULT): ember_faults on each CPU's page-fault
 * software event (perf_sample() of oncpu.bpf.h, the default), or
 * ember_fault_tp on x86's exceptions:page_fault_user/_kernel tracepoints
 * with a per-CPU count (EMBER_FAULTS_HOOK=tp).
 */
#ifndef EMBER_FAULTS_BPF_H
#define EMBER_FAULTS_BPF_H

#include "common.bpf.h"
#include "filter.bpf.h"
#include "record.bpf.h"
#include "stack.bpf.h"
#include "oncpu.bpf.h"

/* Set by the loader before load (frozen: the verifier sees constants). */
const volatile __u32 fault_period = 512;	/* ember_fault_tp: faults per record */

/* Every fault_period-th page fault on a CPU (PERF_COUNT_SW_PAGE_FAULTS). */
SEC("perf_event")
int ember_faults(struct bpf_perf_event_data *ctx)
{
	return perf_sample(ctx, EMBER_REC_FAULT);
}

/*
 * The tracepoint path for page faults (EMBER_FAULTS_HOOK=tp): a fault that
 * is not sampled costs one per-CPU increment instead of perf's swevent
 * hash walk, but every fault also pays the raw_tp program call, which
 * measured dearer than the whole software event on the 6.18 host
 * (docs/NOTES.md), so the perf event stays the default. Counting is per CPU like
 * the perf event's period, and every fault counts whoever takes it, so a
 * sample still stands for fault_period faults and the totals stay
 * unbiased; the filters apply to the sampled fault only.
 */
struct fault_count {
	__u32 seen;	/* faults since the last record */
	__u32 busy;	/* a record is being written on this CPU */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fault_count);
} fault_count SEC(".maps");

/* The record of a sampled fault: regs are the faulting context's. */
static __always_inline void fault_record(void *ctx,
					 const struct uapi_regs *regs,
					 bool user_mode)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct ember_bpf_stats *st = get_stats();
	struct uw_regs *ur;
	struct scratch *sc;
	struct ember_sample *s;
	__u16 flags = 0;
	bool kthread;
	__u64 size;

	if (!st)
		return;
	if (tid == 0 || !pass_filters(task, tgid)) {
		st->filtered++;
		return;
	}
	sc = get_scratch(EMBER_SLOT_FAULT);
	ur = uw_regs_slot(EMBER_SLOT_FAULT);
	if (!sc || !ur)
		return;
	s = (void *)sc;
	kthread = BPF_CORE_READ(task, flags) & PF_KTHREAD;
	if (!user_mode)
		flags |= EMBER_SF_IN_KERNEL;
	if (kthread)
		flags |= EMBER_SF_KTHREAD;
	fill_common(s, EMBER_REC_FAULT, bpf_ktime_get_ns(), tgid, tid);
	/* as in perf_sample: a huge-page fault counts as one base page */
	s->weight_ns = (__u64)fault_period * fault_page_size;
	if (user_mode && uw_regs_from(regs, ur))
		return;
	/*
	 * A fault from user mode has no kernel stack of its own (the perf
	 * path gives none either); one taken in the kernel on a user address
	 * (copy_to_user into fresh pages) has, from the tracepoint down.
	 */
	flags |= fill_stacks(ctx, s, !user_mode, !kthread, EMBER_SLOT_FAULT,
			     user_mode ? ur : NULL);
	s->flags = flags;
	size = s->hdr.size;
	if (size > sizeof(*sc))
		return;
	emit(ctx, s, size, st);
}

/* A fault in the kernel with page faults disabled: a nofault read. */
static __always_inline bool kernel_nofault(void)
{
	struct task_struct *task = (void *)bpf_get_current_task();

	return BPF_CORE_READ(task, pagefault_disabled) != 0;
}

/*
 * Attached to both page_fault_user and page_fault_kernel (one program:
 * one more verification, not two); the mode saved in regs tells which, as
 * it tells the kernel (arch_user_mode_at()). A fault on a kernel address (vmalloc) or with page faults
 * disabled (a nofault read, any BPF program's user-stack read included)
 * is not a page-fault event for perf and is not counted here either.
 * busy: a fault in this program's own reads is such a nofault read and
 * returns above; the flag only guards the slot should one ever get
 * through (5.10 has no recursion check of its own for raw_tp).
 */
SEC("raw_tp")
int BPF_PROG(ember_fault_tp, unsigned long address,
	     const struct uapi_regs *regs, unsigned long error_code)
{
	struct fault_count *fc;
	__u32 zero = 0;
	bool user_mode;

	fc = bpf_map_lookup_elem(&fault_count, &zero);
	if (!fc)
		return 0;
	user_mode = arch_user_mode_at(regs);
	if (!user_mode && ((long)address < 0 || kernel_nofault()))
		return 0;
	if (++fc->seen < fault_period || fc->busy)
		return 0;
	fc->seen -= fault_period;
	fc->busy = 1;
	fault_record(ctx, regs, user_mode);
	fc->busy = 0;
	return 0;
}

#endif /* EMBER_FAULTS_BPF_H */
