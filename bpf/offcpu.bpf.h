/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/offcpu.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * Off-CPU intervals (EMBER_REC_OFFCPU), in two designs chosen by the
 * loader (offcpu_deferred):
 *   deferred: sched_switch (ember_switch_btf/_raw) notes when and how the
 *     thread left (offstart); back on the CPU (ember_back_tp_btf/_raw at
 *     sched_exit_tp, ember_back_fentry/_kprobe at finish_task_switch) the
 *     thread takes its own stacks, only for intervals above the threshold.
 *   parked: the stacks are taken at every switch-out and parked in
 *     inflight until sched_switch sees the thread come back.
 */
#ifndef EMBER_OFFCPU_BPF_H
#define EMBER_OFFCPU_BPF_H

#include "common.bpf.h"
#include "filter.bpf.h"
#include "record.bpf.h"
#include "stack.bpf.h"

/* Stable kernel values not in BTF (they are #defines). */
#define PF_EXITING		0x00000004
#define TASK_INTERRUPTIBLE	0x0001
#define TASK_UNINTERRUPTIBLE	0x0002
#define TASK_DEAD		0x0080

/* Set by the loader before load (frozen: the verifier sees constants). */
const volatile __u64 offcpu_min_ns;
const volatile __u32 offcpu_ppm;	/* 0: keep every interval */
const volatile __u32 inflight_value_size;
const volatile bool offcpu_deferred;

/*
 * Threads off CPU: tid -> the record to emit when it runs again, stacks
 * already taken (the user stack can only be read while the thread is
 * current, i.e. at switch-out). Preallocated, so the scheduler path never
 * allocates; the loader sizes values to the configured frame limits.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_BPF_INFLIGHT_DEFAULT);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct ember_sample) + 256 * sizeof(__u64));
} inflight SEC(".maps");

/* Deferred mode: tid -> how and when it left. Preallocated. */
struct offcpu_start {
	__u64 start_ns;
	__u16 flags;
	__u8 state;
	__u8 __pad[5];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_BPF_INFLIGHT_DEFAULT);
	__type(key, __u32);
	__type(value, struct offcpu_start);
} offstart SEC(".maps");

/* Before 5.14 the task state field is "state" (a long). */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *task)
{
	struct task_struct___old *old = (void *)task;

	if (bpf_core_field_exists(old->state))
		return BPF_CORE_READ(old, state);
	return BPF_CORE_READ(task, __state);
}

static __always_inline __u8 offcpu_state(bool preempt, long state)
{
	if (preempt || state == 0)
		return EMBER_STATE_RUNNABLE;
	if (state & TASK_UNINTERRUPTIBLE)
		return EMBER_STATE_UNINTERRUPTIBLE;
	if (state & TASK_INTERRUPTIBLE)
		return EMBER_STATE_SLEEPING;
	return EMBER_STATE_OTHER;
}

/*
 * Parked mode: a thread leaves the CPU while its previous interval is
 * still parked, i.e. the kernel switched it in without a sched_switch
 * event. Seen on this project's 6.18 host (a sandbox kernel): switching
 * away from some of the sandbox's own tasks fires no sched_switch at all
 * (ftrace's own sched_switch event is missing too). The thread has run
 * without a break since that unseen return (every switch away from it is
 * seen), for exactly its CPU time since it left, so the return was at
 * now - (cpu_now - cpu_then). The record keeps the stacks parked when it
 * left; the CPU it came back on is not known and is given as this one.
 */
static __always_inline void emit_unseen_return(void *ctx,
					       struct ember_sample *v,
					       __u64 now, __u64 cpu_now,
					       struct ember_bpf_stats *st)
{
	__u64 ran = cpu_now - v->weight_ns, size = v->hdr.size, back;

	if (cpu_now < v->weight_ns || now < v->time_ns ||
	    ran > now - v->time_ns)
		return;
	back = now - ran;
	if (back - v->time_ns < offcpu_min_ns || size < sizeof(*v) ||
	    size > inflight_value_size)
		return;
	v->weight_ns = back - v->time_ns;
	v->time_ns = back;
	v->cpu = bpf_get_smp_processor_id();
	st->offcpu_recovered++;
	emit(ctx, v, size, st);
}

/*
 * A dying thread leaving the CPU with an interval still parked came back
 * unseen and ran to its end (a short-lived "sleep 0.4" does exactly that):
 * emit that interval now, or it is lost and its entry stays in the map
 * for good.
 */
static __always_inline void flush_unseen_return(void *ctx,
						struct task_struct *prev,
						__u32 tid, __u64 now,
						struct ember_bpf_stats *st)
{
	struct ember_sample *v = bpf_map_lookup_elem(&inflight, &tid);

	if (!v)
		return;
	st->offcpu_stale++;
	emit_unseen_return(ctx, v, now,
			   BPF_CORE_READ(prev, se.sum_exec_runtime), st);
	bpf_map_delete_elem(&inflight, &tid);
}

/*
 * The thread leaving the CPU: note the time (deferred mode) or take and
 * park its stacks (parked mode) until it runs again.
 */
static __always_inline void switch_out(void *ctx, bool preempt,
				       struct task_struct *prev, __u64 now,
				       struct ember_bpf_stats *st)
{
	__u32 tid = BPF_CORE_READ(prev, pid);
	__u32 tgid = BPF_CORE_READ(prev, tgid);
	long state = task_state(prev);
	__u32 pflags = BPF_CORE_READ(prev, flags);
	struct offcpu_start start;
	struct ember_sample *s, *v;
	struct scratch *sc;
	__u16 flags;

	if (tid == 0)
		return;
	/* dying (it may never come back): not parked, as the module does */
	if ((state & TASK_DEAD) || (pflags & PF_EXITING)) {
		if (!offcpu_deferred)
			flush_unseen_return(ctx, prev, tid, now, st);
		return;
	}
	if (offcpu_ppm && bpf_get_prandom_u32() % 1000000 >= offcpu_ppm)
		return;
	if (!pass_filters(prev, tgid)) {
		st->filtered++;
		return;
	}
	flags = EMBER_SF_IN_KERNEL;
	if (pflags & PF_KTHREAD)
		flags |= EMBER_SF_KTHREAD;

	if (offcpu_deferred) {
		start.start_ns = now;
		start.flags = flags;
		start.state = offcpu_state(preempt, state);
		if (!bpf_map_update_elem(&offstart, &tid, &start, BPF_NOEXIST))
			return;
		if (bpf_map_lookup_elem(&offstart, &tid)) {
			st->offcpu_stale++;
			bpf_map_update_elem(&offstart, &tid, &start, BPF_EXIST);
		} else {
			st->offcpu_overflow++;
		}
		return;
	}

	sc = get_scratch(EMBER_SLOT_OFFCPU);
	if (!sc)
		return;
	s = (void *)sc;
	/* sched_switch runs in prev's context: "current" helpers see prev. */
	fill_common(s, EMBER_REC_OFFCPU, now, tgid, tid);
	s->state = offcpu_state(preempt, state);
	s->flags = flags;
	s->flags |= fill_stacks(ctx, s, true, !(flags & EMBER_SF_KTHREAD),
				EMBER_SLOT_OFFCPU, NULL);
	/* until the thread returns, weight_ns holds its CPU time so far */
	s->weight_ns = BPF_CORE_READ(prev, se.sum_exec_runtime);
	if (!bpf_map_update_elem(&inflight, &tid, s, BPF_NOEXIST))
		return;
	/* still parked: its return to the CPU was never seen */
	v = bpf_map_lookup_elem(&inflight, &tid);
	if (v) {
		st->offcpu_stale++;
		emit_unseen_return(ctx, v, now, s->weight_ns, st);
		bpf_map_update_elem(&inflight, &tid, s, BPF_EXIST);
	} else {
		st->offcpu_overflow++;
	}
}

/* The thread coming back: emit its interval if long enough. */
static __always_inline void switch_in(void *ctx, struct task_struct *next,
				      __u64 now, struct ember_bpf_stats *st)
{
	__u32 tid = BPF_CORE_READ(next, pid);
	struct ember_sample *v;
	__u64 size, delta;

	if (tid == 0)
		return;
	v = bpf_map_lookup_elem(&inflight, &tid);
	if (!v)
		return;
	delta = now - v->time_ns;
	size = v->hdr.size;
	if (delta >= offcpu_min_ns && size >= sizeof(*v) &&
	    size <= inflight_value_size) {
		v->weight_ns = delta;
		v->time_ns = now;
		v->cpu = bpf_get_smp_processor_id();
		emit(ctx, v, size, st);
	}
	bpf_map_delete_elem(&inflight, &tid);
}

static __always_inline int handle_switch(void *ctx, bool preempt,
					 struct task_struct *prev,
					 struct task_struct *next)
{
	struct ember_bpf_stats *st = get_stats();
	__u64 now = bpf_ktime_get_ns();

	if (!st)
		return 0;
	st->switches++;
	switch_out(ctx, preempt, prev, now, st);
	/*
	 * next runs only once this program is done: a fresh timestamp keeps
	 * the time spent parking prev's stacks inside next's interval.
	 */
	if (!offcpu_deferred)
		switch_in(ctx, next, bpf_ktime_get_ns(), st);
	return 0;
}

/*
 * Deferred mode: the thread is back and current again; its stacks are as
 * they were when it left (it has not run since), so take them now, and
 * only for intervals worth a record.
 */
static __always_inline int handle_back(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct ember_bpf_stats *st;
	struct offcpu_start *v;
	struct ember_sample *s;
	struct scratch *sc;
	__u64 now, delta, size;
	__u16 flags;
	__u8 state;

	if (tid == 0)
		return 0;
	v = bpf_map_lookup_elem(&offstart, &tid);
	if (!v)
		return 0;
	now = bpf_ktime_get_ns();
	delta = now - v->start_ns;
	flags = v->flags;
	state = v->state;
	bpf_map_delete_elem(&offstart, &tid);
	st = get_stats();
	sc = get_scratch(EMBER_SLOT_OFFCPU);
	if (delta < offcpu_min_ns || !st || !sc)
		return 0;
	s = (void *)sc;
	fill_common(s, EMBER_REC_OFFCPU, now, tgid, tid);
	s->weight_ns = delta;
	s->state = state;
	s->flags = flags | fill_stacks(ctx, s, true, !(flags & EMBER_SF_KTHREAD),
				       EMBER_SLOT_OFFCPU, NULL);
	size = s->hdr.size;
	if (size > sizeof(*sc))
		return 0;
	emit(ctx, s, size, st);
	return 0;
}

SEC("fentry/finish_task_switch")
int BPF_PROG(ember_back_fentry)
{
	return handle_back(ctx);
}

/*
 * Kernels from 6.16 have a bare tracepoint at the end of __schedule(),
 * sched_exit_tp: after a switch it runs in the thread switched in, after
 * finish_task_switch, with the thread's kernel stack still in its wait
 * (__schedule, schedule, do_nanosleep...). Every way back onto the CPU
 * passes there (voluntary sleeps, preemption in the kernel or on the way
 * to user space); only a new task's first run (schedule_tail) does not,
 * and it has nothing in offstart. A tracepoint: no kprobes, no fentry
 * needed (this project's 6.18 host refuses every fentry/fexit program
 * with EPERM and has no kprobes). It also fires when __schedule picked
 * the same task again; that thread has no offstart entry.
 */
SEC("tp_btf/sched_exit_tp")
int BPF_PROG(ember_back_tp_btf, bool is_switch)
{
	return handle_back(ctx);
}

SEC("raw_tp/sched_exit_tp")
int BPF_PROG(ember_back_tp_raw, bool is_switch)
{
	return handle_back(ctx);
}

/* attached by name: the symbol is often finish_task_switch.isra.0 */
SEC("kprobe")
int ember_back_kprobe(struct pt_regs *ctx)
{
	return handle_back(ctx);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ember_switch_btf, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return handle_switch(ctx, preempt, prev, next);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(ember_switch_raw, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	return handle_switch(ctx, preempt, prev, next);
}

#endif /* EMBER_OFFCPU_BPF_H */
