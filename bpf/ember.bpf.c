// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember's eBPF backend: on-CPU samples, off-CPU intervals and process
 * lifecycle records, in exactly the record format the kernel module writes
 * (include/uapi/ember.h), so the agent cannot tell the two apart.
 *
 * Programs:
 *   ember_oncpu            perf_event on each CPU's cpu-clock (or cycles) event
 *   ember_switch_btf/_raw  sched_switch: note when and how a thread leaves
 *   ember_back_fentry/_kprobe  finish_task_switch, in the returning thread:
 *                          emit its interval with its stacks (deferred mode)
 *   ember_back_tp_btf/_raw the same at the end of __schedule
 *                          (sched_exit_tp, 6.16+), no kprobe/fentry needed
 * Two off-CPU designs, measured (see agent/source_bpf.c):
 *   deferred (default): sched_switch stores only a timestamp; the stacks
 *     are taken when the thread is back on CPU and current again (its user
 *     and kernel stacks are unchanged since it left), and only for
 *     intervals above the threshold.
 *   parked (fallback when no switch-in hook attaches): the stacks
 *     are taken at every switch-out and parked until the thread returns.
 *   ember_exec_btf/_raw    sched_process_exec
 *   ember_exit_btf/_raw    sched_process_exit, last thread of a process
 * The loader keeps the tp_btf flavour and falls back to raw_tp when the
 * kernel refuses it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "../include/uapi/ember.h"
#include "ember_bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Stable kernel values not in BTF (they are #defines). */
#define PF_EXITING		0x00000004
#define PF_KTHREAD		0x00200000
#define TASK_INTERRUPTIBLE	0x0001
#define TASK_UNINTERRUPTIBLE	0x0002
#define TASK_DEAD		0x0080

/* Set by the loader before load (frozen: the verifier sees constants). */
const volatile bool include_idle;
const volatile bool use_perfbuf;
const volatile __u32 kstack_max;	/* frames kept */
const volatile __u32 kstack_req;	/* frames asked: more means truncated */
const volatile __u32 ustack_max;
const volatile __u32 ustack_req;
const volatile __u64 fixed_weight_ns;	/* 0: the event's period is in ns */
const volatile __u64 wakeup_bytes;	/* ring fill that wakes the reader */
const volatile __u64 offcpu_min_ns;
const volatile __u32 offcpu_ppm;	/* 0: keep every interval */
const volatile __u32 inflight_value_size;
const volatile bool offcpu_deferred;

/* Filters, changed at run time through the mmap'ed .bss. */
__u32 filter_pids_on;
__u64 filter_cgroup;
__u32 filter_cgroup_level;

/* Room for the largest record: a sample with both stacks at their limit. */
struct scratch {
	__u64 raw[sizeof(struct ember_sample) / 8 + EMBER_BPF_SCRATCH_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);		/* resized by the loader */
} ringbuf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perfbuf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_NR_SLOTS);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_bpf_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_MAX_FILTER_PIDS);
	__type(key, __u32);
	__type(value, __u8);
} filter_pids SEC(".maps");

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

/*
 * Processes whose EXIT was emitted: tgid -> its signal_struct. Every
 * thread that reaches sched_process_exit after the last one dropped
 * signal->live to 0 sees live == 0 (a joined thread is still on its way
 * to the tracepoint when pthread_join returns), so "live == 0" alone gave
 * two EXIT records on the 6.1 VM. The signal_struct tells a reused pid
 * apart. LRU: bounded, and an old entry is only ever needed briefly.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} exited SEC(".maps");

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

/* Kernels before 6.0 keep ancestor ids instead of ancestor pointers. */
struct cgroup___old {
	int level;
	__u64 ancestor_ids[];
} __attribute__((preserve_access_index));

/* Before 5.14 the task state field is "state" (a long). */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

/*
 * The perf_event context starts with the x86-64 pt_regs of the UAPI (fixed
 * layout, not CO-RE: the verifier checks context offsets). vmlinux.h's
 * pt_regs cannot be used: from 6.9 its cs is a 2-byte union member (FRED),
 * which CO-RE would refuse to relocate to the 8-byte field of older
 * kernels. Context loads must be whole words, hence the volatile.
 */
struct uapi_x86_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	__u64 ax, cx, dx, si, di, orig_ax, ip;
	volatile __u64 cs;
	__u64 flags, sp, ss;
};

static __always_inline struct ember_bpf_stats *get_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stats, &zero);
}

static __always_inline struct scratch *get_scratch(__u32 slot)
{
	return bpf_map_lookup_elem(&scratch, &slot);
}

/* cgroup v2 id of the task's ancestor at this level (itself at its own). */
static __always_inline __u64 ancestor_cgroup_id(struct task_struct *task,
						__u32 level)
{
	struct cgroup___old *old;
	struct cgroup *cg, *anc = NULL;
	__u64 id = 0;

	cg = BPF_CORE_READ(task, cgroups, dfl_cgrp);
	if (!cg || (int)level > BPF_CORE_READ(cg, level))
		return 0;
	old = (void *)cg;
	if (bpf_core_field_exists(old->ancestor_ids)) {
		bpf_core_read(&id, sizeof(id), &old->ancestor_ids[level]);
		return id;
	}
	bpf_core_read(&anc, sizeof(anc), &cg->ancestors[level]);
	if (!anc)
		return 0;
	return BPF_CORE_READ(anc, kn, id);
}

/* The process and cgroup filters, evaluated before any stack work. */
static __always_inline bool pass_filters(struct task_struct *task, __u32 tgid)
{
	__u64 cg = filter_cgroup;

	if (filter_pids_on && !bpf_map_lookup_elem(&filter_pids, &tgid))
		return false;
	if (cg && ancestor_cgroup_id(task, filter_cgroup_level) != cg)
		return false;
	return true;
}

static __always_inline long task_state(struct task_struct *task)
{
	struct task_struct___old *old = (void *)task;

	if (bpf_core_field_exists(old->state))
		return BPF_CORE_READ(old, state);
	return BPF_CORE_READ(task, __state);
}

/*
 * Kernel and/or user stack of the current task into s->ips, kernel first.
 * Each kind is asked for one frame more than kept (when the
 * perf_event_max_stack sysctl allows) so a full answer means truncation.
 */
static __always_inline __u16 fill_stacks(void *ctx, struct ember_sample *s,
					 bool kernel, bool user)
{
	__u32 nk = 0, nu = 0;
	__u16 flags = 0;
	long n;

	if (kernel && kstack_req) {
		n = bpf_get_stack(ctx, &s->ips[0], kstack_req * sizeof(__u64), 0);
		if (n > 0) {
			nk = n / sizeof(__u64);
			if (nk >= kstack_req)
				flags |= EMBER_SF_KERNEL_TRUNC;
			if (nk > kstack_max)
				nk = kstack_max;
		}
	}
	if (nk > EMBER_MAX_FRAMES)	/* for the verifier: never true */
		nk = EMBER_MAX_FRAMES;
	if (user && ustack_req) {
		n = bpf_get_stack(ctx, &s->ips[nk], ustack_req * sizeof(__u64),
				  BPF_F_USER_STACK);
		if (n > 0) {
			nu = n / sizeof(__u64);
			if (nu >= ustack_req)
				flags |= EMBER_SF_USER_TRUNC;
			if (nu > ustack_max)
				nu = ustack_max;
		}
	}
	s->nr_kernel = nk;
	s->nr_user = nu;
	s->hdr.size = sizeof(*s) + (nk + nu) * sizeof(__u64);
	return flags;
}

/* Hand a record to the ring; count it as written or lost. */
static __always_inline void emit(void *ctx, void *data, __u64 size,
				 struct ember_bpf_stats *st)
{
	__u64 wake = BPF_RB_NO_WAKEUP;
	long err;

	if (use_perfbuf) {
		err = bpf_perf_event_output(ctx, &perfbuf, BPF_F_CURRENT_CPU,
					    data, size);
	} else {
		/* Batch wake-ups: the reader also polls with a timeout. */
		if (bpf_ringbuf_query(&ringbuf, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
			wake = BPF_RB_FORCE_WAKEUP;
		err = bpf_ringbuf_output(&ringbuf, data, size, wake);
	}
	if (err)
		st->lost++;
	else
		st->records++;
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
	s->__reserved = 0;
	s->__reserved2 = 0;
	bpf_get_current_comm(s->comm, sizeof(s->comm));
}

SEC("perf_event")
int ember_oncpu(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct ember_bpf_stats *st = get_stats();
	bool in_kernel, kthread;
	struct scratch *sc;
	struct ember_sample *s;
	__u16 flags = 0;
	__u64 size;

	if (!st)
		return 0;
	st->samples++;
	if (tid == 0) {
		if (!include_idle) {
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
	if (!sc)
		return 0;
	s = (void *)sc;

	in_kernel = !(((struct uapi_x86_regs *)ctx)->cs & 3);
	kthread = BPF_CORE_READ(task, flags) & PF_KTHREAD;
	if (in_kernel)
		flags |= EMBER_SF_IN_KERNEL;
	if (kthread)
		flags |= EMBER_SF_KTHREAD;

	fill_common(s, EMBER_REC_SAMPLE, bpf_ktime_get_ns(), tgid, tid);
	s->weight_ns = fixed_weight_ns ? fixed_weight_ns : ctx->sample_period;
	flags |= fill_stacks(ctx, s, in_kernel, !kthread);
	s->flags = flags;

	size = s->hdr.size;
	if (size > sizeof(*sc))
		return 0;
	emit(ctx, s, size, st);
	return 0;
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
	s->flags |= fill_stacks(ctx, s, true, !(flags & EMBER_SF_KTHREAD));
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
	s->flags = flags | fill_stacks(ctx, s, true, !(flags & EMBER_SF_KTHREAD));
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

static __always_inline int handle_exec(void *ctx, struct task_struct *p,
				       struct linux_binprm *bprm)
{
	struct ember_bpf_stats *st = get_stats();
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct ember_exec *e;
	struct scratch *sc;
	const char *fn;
	long len;
	__u32 i, end;

	if (!st || !pass_filters(p, tgid))
		return 0;
	sc = get_scratch(EMBER_SLOT_LIFECYCLE);
	if (!sc)
		return 0;
	e = (void *)sc;
	e->hdr.type = EMBER_REC_EXEC;
	e->hdr.__reserved = 0;
	e->time_ns = bpf_ktime_get_ns();
	e->pid = tgid;
	e->tid = BPF_CORE_READ(p, pid);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->__reserved = 0;
	fn = BPF_CORE_READ(bprm, filename);
	len = bpf_probe_read_kernel_str(e->filename, EMBER_BPF_FILENAME_MAX, fn);
	if (len <= 0) {
		e->filename[0] = '\0';
		len = 1;
	}
	len &= EMBER_BPF_FILENAME_MAX - 1;
	e->filename_len = len;
	/* Zero the padding up to the 8-byte boundary. */
	end = (len + 7) & ~7U;
	for (i = 0; i < 7; i++) {
		__u32 off = (len + i) & (EMBER_BPF_FILENAME_MAX - 1);

		if (len + i >= end)
			break;
		((char *)e->filename)[off] = '\0';
	}
	e->hdr.size = sizeof(*e) + end;
	if (e->hdr.size > sizeof(*sc))
		return 0;
	emit(ctx, e, e->hdr.size, st);
	return 0;
}

static __always_inline int handle_exit(void *ctx, struct task_struct *p)
{
	struct ember_bpf_stats *st = get_stats();
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct ember_exit *e;
	struct scratch *sc;
	__u64 sig, *prev_sig;

	/* do_exit() drops signal->live before this tracepoint. */
	if (!st || BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	if (!pass_filters(p, tgid))
		return 0;
	sig = (__u64)BPF_CORE_READ(p, signal);
	if (bpf_map_update_elem(&exited, &tgid, &sig, BPF_NOEXIST)) {
		prev_sig = bpf_map_lookup_elem(&exited, &tgid);
		if (prev_sig && *prev_sig == sig)
			return 0;	/* another thread of it emitted the EXIT */
		bpf_map_update_elem(&exited, &tgid, &sig, BPF_ANY);
	}
	sc = get_scratch(EMBER_SLOT_LIFECYCLE);
	if (!sc)
		return 0;
	e = (void *)sc;
	e->hdr.type = EMBER_REC_EXIT;
	e->hdr.__reserved = 0;
	e->hdr.size = sizeof(*e);
	e->time_ns = bpf_ktime_get_ns();
	e->pid = tgid;
	e->tid = BPF_CORE_READ(p, pid);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->exit_code = BPF_CORE_READ(p, exit_code);
	e->__reserved = 0;
	emit(ctx, e, sizeof(*e), st);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ember_exec_btf, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	return handle_exec(ctx, p, bprm);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(ember_exec_raw, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	return handle_exec(ctx, p, bprm);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ember_exit_btf, struct task_struct *p)
{
	return handle_exit(ctx, p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(ember_exit_raw, struct task_struct *p)
{
	return handle_exit(ctx, p);
}
