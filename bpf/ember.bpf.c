// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember's eBPF backend: on-CPU samples, off-CPU intervals and process
 * lifecycle records, in exactly the record format the kernel module writes
 * (include/uapi/ember.h), so the agent cannot tell the two apart.
 *
 * Programs:
 *   ember_oncpu            perf_event on each CPU's cpu-clock (or cycles) event
 *   ember_faults           perf_event on each CPU's page-fault software event
 *                          (every fault_period-th fault): EMBER_REC_FAULT
 *   ember_fault_tp         the same from x86's exceptions:page_fault_user
 *                          and _kernel tracepoints with a per-CPU count
 *                          (EMBER_FAULTS_HOOK=tp; measured dearer here)
 *   ember_switch_btf/_raw  sched_switch: note when and how a thread leaves
 *   ember_back_fentry/_kprobe  finish_task_switch, in the returning thread:
 *                          emit its interval with its stacks (deferred mode)
 *   ember_back_tp_btf/_raw the same at the end of __schedule
 *                          (sched_exit_tp, 6.16+), no kprobe/fentry needed
 * Two off-CPU designs, measured (see agent/source/source_bpf.c):
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
const volatile bool stack_copy;		/* test mode: EMBER_REC_USER_STACK */
const volatile __u64 fault_page_size = 4096;	/* bytes per faulted page */
const volatile __u32 fault_period = 512;	/* ember_fault_tp: faults per record */

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
	__u64 r15, r14, r13, r12;
	volatile __u64 bp;
	__u64 bx, r11, r10, r9, r8;
	__u64 ax, cx, dx, si, di, orig_ax;
	volatile __u64 ip;
	volatile __u64 cs;
	__u64 flags;
	volatile __u64 sp;
	__u64 ss;
};

/* The same, every field read on its own (context loads must stay whole). */
struct uapi_x86_regs_v {
	volatile __u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	volatile __u64 ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

/* The user registers the unwinder starts from. */
struct uw_regs {
	__u64 pc, sp, fp;
};

#include "unwind.bpf.h"

/* THREAD_SIZE on x86-64 without KASAN (every kernel ember supports). */
#define EMBER_THREAD_SIZE	(16384)

/* ips[0] of a scratch slot, counted in u64 from its start */
#define SCRATCH_IPS		(sizeof(struct ember_sample) / 8)

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

/* Hand a record to the ring; count it as written or lost. */
static __always_inline void emit_wake(void *ctx, void *data, __u64 size,
				      struct ember_bpf_stats *st, bool urgent)
{
	__u64 wake = BPF_RB_NO_WAKEUP;
	long err;

	if (use_perfbuf) {
		err = bpf_perf_event_output(ctx, &perfbuf, BPF_F_CURRENT_CPU,
					    data, size);
	} else {
		/* Batch wake-ups: the reader also polls with a timeout. */
		if (urgent ||
		    bpf_ringbuf_query(&ringbuf, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
			wake = BPF_RB_FORCE_WAKEUP;
		err = bpf_ringbuf_output(&ringbuf, data, size, wake);
	}
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

/*
 * The current task's user registers saved at kernel entry (the syscall or
 * interrupt it is in), found with bpf_task_pt_regs() where the kernel has
 * it (5.15+) and at the top of the task's stack before that (5.10: no
 * padding there on x86-64). 0, or -1 when they cannot be read.
 */
static __always_inline int entry_uregs(struct uapi_x86_regs *u)
{
	struct task_struct *task;
	void *regs;

	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs) &&
	    bpf_core_enum_value_exists(enum bpf_func_id,
				       BPF_FUNC_get_current_task_btf)) {
		task = bpf_get_current_task_btf();
		regs = (void *)bpf_task_pt_regs(task);
	} else {
		task = (void *)bpf_get_current_task();
		regs = (void *)((__u64)BPF_CORE_READ(task, stack) +
				EMBER_THREAD_SIZE - sizeof(*u));
	}
	return bpf_probe_read_kernel(u, sizeof(*u), regs) ? -1 : 0;
}

/*
 * The user registers of the current task: from the sample's own context
 * when it interrupted user mode, else those saved at kernel entry.
 */
static __always_inline int current_uregs(const struct uw_regs *given,
					 struct uw_state *w)
{
	struct uapi_x86_regs u;

	if (given) {
		w->pc = given->pc;
		w->sp = given->sp;
		w->fp = given->fp;
		return 0;
	}
	if (entry_uregs(&u))
		return -1;
	w->pc = u.ip;
	w->sp = u.sp;
	w->fp = u.bp;
	return 0;
}

/* EMBER_REC_UNWIND_MISS for the sample's process, rate-limited. */
static __always_inline void unwind_miss(void *ctx, const struct ember_sample *s,
					__u64 pc, struct ember_bpf_stats *st)
{
	struct ember_unwind_miss m = {
		.hdr = { .type = EMBER_REC_UNWIND_MISS, .size = sizeof(m) },
		.time_ns = s->time_ns,
		.pid = s->pid,
		.tid = s->tid,
		.pc = pc,
	};

	if (!uw_miss_allowed(s->pid, s->time_ns)) {
		st->unwind_miss_limited++;
		return;
	}
	st->unwind_miss++;
	/* wake the reader now: the agent is waiting for it to bind tables */
	emit_wake(ctx, &m, sizeof(m), st, true);
}

/*
 * Walks up to UW_FRAMES_PER_CALL frames of the walk in uw_state[slot],
 * writing them into scratch[slot]; 1 when the walk is over. Global: the
 * verifier checks it once, not once per caller and iteration.
 */
__noinline int uw_frames(__u32 slot)
{
	struct uw_state *w = bpf_map_lookup_elem(&uw_state, &slot);
	struct scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	const struct ember_unwind_mapping *m;
	struct ember_unwind_rule rule;
	struct uw_rule_cached *c;
	struct uw_proc *p;
	__u32 idx, mi, ckey;
	__u64 packed, vaddr;
	int i, r;

	if (!w || !sc)
		return 1;
	if (w->done)
		return 1;
	p = bpf_map_lookup_elem(&uw_proc_slots, &w->pslot);
	if (!p) {
		w->flags |= EMBER_SF_USER_CUT;
		w->done = 1;
		return 1;
	}
	for (i = 0; i < UW_FRAMES_PER_CALL; i++) {
		__u64 lpc = w->exact ? w->pc : w->pc - 1;

		if (w->n >= w->max) {
			w->flags |= EMBER_SF_USER_TRUNC;
			w->done = 1;
			break;
		}
		/*
		 * The hint and a cached rule are checked here, without the
		 * calls: with the SRSO safe-RET mitigation (this host's AMD
		 * CPUs) every return costs, and two calls a frame showed.
		 */
		mi = 0;
		if (w->mi) {
			m = &p->m[(w->mi - 1) & (EMBER_BPF_MAX_MAPPINGS - 1)];
			if (lpc >= m->start && lpc < m->end)
				mi = w->mi;
		}
		if (!mi)
			mi = uw_mapping_at(w->pslot, lpc, 0);
		/* the leaf is real wherever it is; a return address outside
		 * the process's code is not: cut, never an invented frame */
		if (!mi && w->n > 0) {
			w->flags |= EMBER_SF_USER_CUT;
			w->miss_pc = w->pc;
			w->done = 1;
			break;
		}
		idx = w->base + w->n;
		if (idx >= EMBER_BPF_SCRATCH_FRAMES) {
			w->done = 1;
			break;
		}
		sc->raw[SCRATCH_IPS + idx] = w->pc;
		w->n++;
		if (!mi || mi > EMBER_BPF_MAX_MAPPINGS) {
			w->flags |= EMBER_SF_USER_CUT;
			w->miss_pc = w->pc;
			w->done = 1;
			break;
		}
		w->mi = mi;
		m = &p->m[(mi - 1) & (EMBER_BPF_MAX_MAPPINGS - 1)];
		packed = UW_RULE_NONE;
		if (m->table_id) {
			vaddr = lpc - m->bias;
			ckey = uw_rule_cache_key(m->table_id, vaddr);
			c = slot == EMBER_SLOT_ONCPU ?
			    bpf_map_lookup_elem(&uw_rule_cache, &ckey) : NULL;
			if (c && c->table_id == m->table_id && c->vaddr == vaddr)
				packed = c->packed;
			else
				packed = uw_rule_at(m->table_id, vaddr,
						    slot == EMBER_SLOT_ONCPU);
		}
		if (packed != UW_RULE_NONE) {
			uw_rule_unpack(packed, &rule);
			w->flags |= EMBER_SF_USER_CFI;
			r = uw_step(&rule, w);
		} else {
			w->flags |= EMBER_SF_USER_FP;
			r = uw_fp_step_at(w);
			if (r == EMBER_STEP_NEXT &&
			    !uw_mapping_at(w->pslot, w->pc - 1, mi))
				r = EMBER_STEP_CUT;
		}
		if (r == EMBER_STEP_END) {
			w->flags |= EMBER_SF_USER_COMPLETE;
			w->done = 1;
			break;
		}
		if (r != EMBER_STEP_NEXT) {
			w->flags |= EMBER_SF_USER_CUT;
			w->done = 1;
			break;
		}
	}
	return w->done;
}

/*
 * The user stack by unwind tables when the agent has bound the process:
 * 0 with *nu frames written after the nk kernel ones, or -1 when the
 * process is not bound (the caller walks frame pointers as before, and a
 * rate-limited miss asks the agent for tables).
 */
static __always_inline int unwind_cfi(void *ctx, struct ember_sample *s,
				      __u32 nk, __u32 slot,
				      const struct uw_regs *given,
				      __u32 *nu, __u16 *flags)
{
	struct ember_bpf_stats *st = get_stats();
	struct uw_state *w;
	__u32 tgid = s->pid;
	int i, pslot;

	if (!st)
		return -1;
	pslot = uw_proc_slot_of(tgid);
	if (pslot < 0) {
		unwind_miss(ctx, s, 0, st);
		return -1;
	}
	w = bpf_map_lookup_elem(&uw_state, &slot);
	if (!w || current_uregs(given, w))
		return -1;
	w->fp_ok = 1;
	w->exact = 1;
	w->tgid = tgid;
	w->pslot = pslot;
	w->mi = 0;
	w->n = 0;
	w->base = nk;
	w->max = ustack_max;
	w->flags = 0;
	w->done = 0;
	w->miss_pc = 0;
	w->win_base = UW_WIN_NONE;
	for (i = 0; i < UW_MAX_CALLS; i++)
		if (uw_frames(slot))
			break;
	*nu = w->n;
	*flags |= w->flags;
	st->ustack_cfi++;
	if (w->flags & EMBER_SF_USER_FP)
		st->ustack_fp++;
	if (w->flags & EMBER_SF_USER_CUT)
		st->ustack_cut++;
	if (w->miss_pc)
		unwind_miss(ctx, s, w->miss_pc, st);
	return 0;
}

/*
 * Kernel and/or user stack of the current task into s->ips, kernel first.
 * Each kind is asked for one frame more than kept (when the
 * perf_event_max_stack sysctl allows) so a full answer means truncation.
 */
static __always_inline __u16 fill_stacks(void *ctx, struct ember_sample *s,
					 bool kernel, bool user,
					 __u32 uregs_slot,
					 const struct uw_regs *uregs)
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
	s->nr_kernel = nk;
	if (user && ustack_req && uregs_slot < EMBER_NR_SLOTS &&
	    unwind_cfi(ctx, s, nk, uregs_slot, uregs, &nu, &flags) == 0)
		user = false;	/* the process is bound: done with tables */
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
	s->nr_user = nu;
	s->hdr.size = sizeof(*s) + (nk + nu) * sizeof(__u64);
	return flags;
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

/*
 * Test mode (--check-unwind): the sample's user registers and up to
 * EMBER_STACK_COPY_MAX bytes of its stack, in 4 KiB pieces so a stack
 * that ends sooner still gives what it has, for the agent's libdwfl
 * oracle to unwind the same sample.
 */
static __always_inline void copy_user_stack(const struct ember_sample *s,
					    const void *ctx_regs)
{
	struct uapi_x86_regs u;
	struct ember_user_stack *r;
	__u32 got = 0;
	int i;

	if (use_perfbuf)
		return;
	if (ctx_regs) {
		const struct uapi_x86_regs_v *c = ctx_regs;

		u.ax = c->ax;
		u.dx = c->dx;
		u.cx = c->cx;
		u.bx = c->bx;
		u.si = c->si;
		u.di = c->di;
		u.bp = c->bp;
		u.sp = c->sp;
		u.r8 = c->r8;
		u.r9 = c->r9;
		u.r10 = c->r10;
		u.r11 = c->r11;
		u.r12 = c->r12;
		u.r13 = c->r13;
		u.r14 = c->r14;
		u.r15 = c->r15;
		u.ip = c->ip;
	} else if (entry_uregs(&u)) {
		return;
	}
	r = bpf_ringbuf_reserve(&ringbuf, sizeof(*r) + EMBER_STACK_COPY_MAX, 0);
	if (!r)
		return;
	r->hdr.type = EMBER_REC_USER_STACK;
	r->hdr.__reserved = 0;
	r->hdr.size = sizeof(*r) + EMBER_STACK_COPY_MAX;
	r->time_ns = s->time_ns;
	r->pid = s->pid;
	r->tid = s->tid;
	/* DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */
	r->regs[0] = u.ax;
	r->regs[1] = u.dx;
	r->regs[2] = u.cx;
	r->regs[3] = u.bx;
	r->regs[4] = u.si;
	r->regs[5] = u.di;
	r->regs[6] = u.bp;
	r->regs[7] = u.sp;
	r->regs[8] = u.r8;
	r->regs[9] = u.r9;
	r->regs[10] = u.r10;
	r->regs[11] = u.r11;
	r->regs[12] = u.r12;
	r->regs[13] = u.r13;
	r->regs[14] = u.r14;
	r->regs[15] = u.r15;
	r->regs[16] = u.ip;
	r->__reserved = 0;
	/*
	 * Constant 256-byte pieces (what every verifier can bound): the copy
	 * stops at the first piece that crosses the end of the stack
	 * mapping, losing at most 255 bytes of its top.
	 */
	for (i = 0; i < EMBER_STACK_COPY_MAX / 256; i++) {
		if (bpf_probe_read_user(&r->stack[i * 256], 256,
					(void *)(u.sp + i * 256)))
			break;
		got += 256;
	}
	r->stack_len = got;
	bpf_ringbuf_submit(r, 0);
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
	struct uw_regs ur = { 0 };
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
	if (!sc)
		return 0;
	s = (void *)sc;

	in_kernel = !(((struct uapi_x86_regs *)ctx)->cs & 3);
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
	if (!in_kernel) {
		const struct uapi_x86_regs *r = (const void *)ctx;

		ur.pc = r->ip;
		ur.sp = r->sp;
		ur.fp = r->bp;
	}
	flags |= fill_stacks(ctx, s, in_kernel, !kthread, EMBER_SLOT_ONCPU,
			     in_kernel ? NULL : &ur);
	s->flags = flags;

	size = s->hdr.size;
	if (size > sizeof(*sc))
		return 0;
	emit(ctx, s, size, st);
	if (stack_copy && type == EMBER_REC_SAMPLE && !kthread && s->nr_user)
		copy_user_stack(s, in_kernel ? NULL : ctx);
	return 0;
}

SEC("perf_event")
int ember_oncpu(struct bpf_perf_event_data *ctx)
{
	return perf_sample(ctx, EMBER_REC_SAMPLE);
}

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
					 const struct uapi_x86_regs *regs,
					 bool user_mode)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct ember_bpf_stats *st = get_stats();
	struct uw_regs ur = { 0 };
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
	if (!sc)
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
	if (user_mode) {
		struct uapi_x86_regs u;

		if (bpf_probe_read_kernel(&u, sizeof(u), regs))
			return;
		ur.pc = u.ip;
		ur.sp = u.sp;
		ur.fp = u.bp;
	}
	/*
	 * A fault from user mode has no kernel stack of its own (the perf
	 * path gives none either); one taken in the kernel on a user address
	 * (copy_to_user into fresh pages) has, from the tracepoint down.
	 */
	flags |= fill_stacks(ctx, s, !user_mode, !kthread, EMBER_SLOT_FAULT,
			     user_mode ? &ur : NULL);
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
 * one more verification, not two); regs->cs tells which, as it tells the
 * kernel. A fault on a kernel address (vmalloc) or with page faults
 * disabled (a nofault read, any BPF program's user-stack read included)
 * is not a page-fault event for perf and is not counted here either.
 * busy: a fault in this program's own reads is such a nofault read and
 * returns above; the flag only guards the slot should one ever get
 * through (5.10 has no recursion check of its own for raw_tp).
 */
SEC("raw_tp")
int BPF_PROG(ember_fault_tp, unsigned long address,
	     const struct uapi_x86_regs *regs, unsigned long error_code)
{
	struct fault_count *fc;
	__u32 zero = 0;
	__u64 cs = 0;
	bool user_mode;

	fc = bpf_map_lookup_elem(&fault_count, &zero);
	if (!fc)
		return 0;
	bpf_probe_read_kernel(&cs, sizeof(cs), (const void *)&regs->cs);
	user_mode = cs & 3;
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

/*
 * Allocation probes (EMBER_EV_ALLOC): uprobes the agent puts on
 * preload/ember_alloc.c's ember_alloc_probe(ptr, size, weight) and
 * ember_free_probe(ptr), which only sampled calls reach (the sampling
 * decision is made in the process, before any trap). The user stack is
 * the probe's caller chain; the agent trims the sampler's own frames.
 */
/* A uprobe's context: the user registers, x86_64's struct pt_regs. */
#define R(ctx)	((const struct uapi_x86_regs *)(ctx))

/*
 * An EMBER_REC_ALLOC for the current task in its CPU's scratch slot, its
 * user stack unwound from the uprobe's registers, when the filters pass:
 * weight bytes (0: the reader scales it by the rate), the block's address
 * (0: not followed) and size. NULL when filtered or it does not fit.
 */
static __always_inline struct ember_sample *build_alloc(void *ctx,
							 __u64 weight,
							 __u64 addr,
							 __u64 size)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct ember_bpf_stats *st = get_stats();
	struct uw_regs ur;
	struct scratch *sc;
	struct ember_sample *s;
	__u32 at;

	if (!st)
		return NULL;
	if (!pass_filters(task, tgid)) {
		st->filtered++;
		return NULL;
	}
	st->alloc_hits++;
	sc = get_scratch(EMBER_SLOT_ALLOC);
	if (!sc)
		return NULL;
	s = (void *)sc;
	fill_common(s, EMBER_REC_ALLOC, bpf_ktime_get_ns(), tgid, tid);
	s->weight_ns = weight;
	ur.pc = R(ctx)->ip;
	ur.sp = R(ctx)->sp;
	ur.fp = R(ctx)->bp;
	s->flags = fill_stacks(ctx, s, false, true, EMBER_SLOT_ALLOC, &ur);
	/* the block's address and size follow the frames */
	at = s->nr_kernel + s->nr_user;
	if (at > EMBER_BPF_SCRATCH_FRAMES - 2)
		return NULL;
	sc->raw[SCRATCH_IPS + at] = addr;
	sc->raw[SCRATCH_IPS + at + 1] = size;
	s->hdr.size += 2 * sizeof(__u64);
	if (s->hdr.size > sizeof(*sc))
		return NULL;
	return s;
}

static __always_inline int emit_alloc(void *ctx, __u64 weight, __u64 addr,
				      __u64 size)
{
	struct ember_sample *s = build_alloc(ctx, weight, addr, size);
	struct ember_bpf_stats *st = get_stats();
	__u32 len;

	if (!s || !st)
		return 0;
	/* read once and bounded here: the verifier checks the emit */
	len = s->hdr.size;
	if (len <= sizeof(struct scratch))
		emit(ctx, s, len, st);
	return 0;
}

SEC("uprobe")
int ember_alloc(void *ctx)
{
	/* ember_alloc_probe(ptr, size, weight) */
	return emit_alloc(ctx, R(ctx)->dx, R(ctx)->di, R(ctx)->si);
}

/*
 * An allocator's entry point in a process without the sampler
 * (EMBER_PROBE_ENTRY_*): every call lands here, so the sampling decision
 * is a per-thread byte countdown with exponentially distributed gaps of
 * alloc_rate bytes on average, as the preloaded sampler draws them.
 */
__u64 alloc_rate = 512 * 1024;		/* set by the loader (.data) */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);			/* tid */
	__type(value, __s64);			/* bytes to the next sample */
} alloc_countdown SEC(".maps");

/* -ln(U) x 1024 for U uniform in (0, 1], from a random 32-bit value */
static __always_inline __u64 neg_ln_1024(__u32 r)
{
	/*
	 * log2(1 + (i + 0.5)/16) x 1024: bin midpoints, so the mean gap is
	 * the rate (0.9998 of it over 200k draws, in integer arithmetic).
	 * On the stack: as a global (static const, in .rodata with the
	 * loader's settings) it made the 6.18 verifier give up on every
	 * program ("sequence of 8193 jumps is too complex" in the unwinder).
	 */
	const __u16 log2_frac[16] = {
		45, 132, 214, 292, 366, 436, 504, 568,
		629, 689, 745, 800, 853, 904, 953, 1001,
	};
	__u32 msb = 0, x = r | 1;

	if (x >> 16) { x >>= 16; msb += 16; }
	if (x >> 8) { x >>= 8; msb += 8; }
	if (x >> 4) { x >>= 4; msb += 4; }
	if (x >> 2) { x >>= 2; msb += 2; }
	if (x >> 1) msb += 1;
	/* -log2(r / 2^32) = 32 - msb - log2(1 + fraction); x ln 2 */
	x = msb >= 4 ? (r >> (msb - 4)) & 15 : (r << (4 - msb)) & 15;
	return ((32 * 1024 - msb * 1024 - log2_frac[x & 15]) * 710) >> 10;
}

static __always_inline __s64 next_distance(void)
{
	return (__s64)(alloc_rate * neg_ln_1024(bpf_get_prandom_u32()) >> 10) + 1;
}

/*
 * In-use tracking (EMBER_PROBE_ENTRY_FREE/REALLOC; alloc_inuse set by
 * the loader): a sampled entry's record, stack and all, waits in
 * alloc_pending under its thread's id until the call returns
 * (ember_entry_ret, a uretprobe on the same entry), which writes the
 * address in, emits it and puts the address in alloc_live, where the
 * free probes look for it. A thread is in one sampled call at a time (a
 * nested one, glibc's realloc(NULL) entering malloc, takes the slot over:
 * one record). LRU: a call that never returns (probes removed meanwhile)
 * leaves a slot that ages out. alloc_live is a plain hash: full, the
 * block is not followed and its record says so.
 */
const volatile bool alloc_inuse;	/* set by the loader (.rodata) */

/* ember_sample.__reserved of a parked record: its address slot holds
 * where the call stores the address (posix_memalign's memptr) */
#define ALLOC_PEND_MEMPTR	1

struct alloc_live_key {
	__u32 tgid;
	__u32 pad;
	__u64 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);		/* 1 without in-use (loader) */
	__type(key, __u32);			/* tid */
	__type(value, struct scratch);
} alloc_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_ALLOC_LIVE_MAX);	/* 1 without in-use */
	__type(key, struct alloc_live_key);
	__type(value, __u8);
} alloc_live SEC(".maps");

/* memptr: posix_memalign's, where the address will be; 0 otherwise */
static __always_inline int alloc_entry(void *ctx, __u64 size, __u64 memptr)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ember_bpf_stats *st;
	struct ember_sample *s;
	__s64 *left, first;
	__u32 len;

	if (!size)
		return 0;
	left = bpf_map_lookup_elem(&alloc_countdown, &tid);
	if (!left) {
		first = next_distance();
		bpf_map_update_elem(&alloc_countdown, &tid, &first, BPF_ANY);
		left = bpf_map_lookup_elem(&alloc_countdown, &tid);
		if (!left)
			return 0;
	}
	*left -= (__s64)size;
	if (*left > 0)
		return 0;
	*left = next_distance();
	/* one unwinder inlined, whichever way the record goes */
	s = build_alloc(ctx, 0, alloc_inuse ? memptr : 0, size);
	if (!s)
		return 0;
	if (!alloc_inuse) {
		/* weighed by the reader, not followed to its free */
		st = get_stats();
		len = s->hdr.size;
		if (st && len <= sizeof(struct scratch))
			emit(ctx, s, len, st);
		return 0;
	}
	if (memptr)
		s->__reserved = ALLOC_PEND_MEMPTR;
	bpf_map_update_elem(&alloc_pending, &tid, s, BPF_ANY);
	return 0;
}

SEC("uprobe")
int ember_entry_rdi(void *ctx)
{
	return alloc_entry(ctx, R(ctx)->di, 0);
}

SEC("uprobe")
int ember_entry_rsi(void *ctx)
{
	return alloc_entry(ctx, R(ctx)->si, 0);
}

SEC("uprobe")
int ember_entry_nmemb(void *ctx)
{
	__u64 n = R(ctx)->di, size = R(ctx)->si;

	/* operands under 2^32 cannot overflow; bigger ones (a calloc of
	 * 4G elements or 4 GiB each) are not sampled */
	if ((n | size) >> 32)
		return 0;
	return alloc_entry(ctx, n * size, 0);
}

SEC("uprobe")
int ember_entry_rdx(void *ctx)
{
	/* posix_memalign(memptr, alignment, size) */
	return alloc_entry(ctx, R(ctx)->dx, R(ctx)->di);
}

/*
 * The return of an entry probe's call: a parked record gets the address
 * and goes out. Without one (the call was not sampled) this is the whole
 * cost: one lookup.
 */
SEC("uretprobe")
int ember_entry_ret(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct alloc_live_key k = { .tgid = id >> 32 };
	struct ember_bpf_stats *st = get_stats();
	struct ember_sample *s;
	struct scratch *sc;
	__u8 one = 1;
	__u32 at, len;

	sc = bpf_map_lookup_elem(&alloc_pending, &tid);
	if (!sc || !st)
		return 0;
	s = (void *)sc;
	at = s->nr_kernel + s->nr_user;
	if (at > EMBER_BPF_SCRATCH_FRAMES - 2)
		goto out;
	k.addr = R(ctx)->ax;
	if (s->__reserved == ALLOC_PEND_MEMPTR) {
		/* posix_memalign returns 0 and stores the address */
		s->__reserved = 0;
		if (k.addr || bpf_probe_read_user(&k.addr, sizeof(k.addr),
				(const void *)sc->raw[SCRATCH_IPS + at]))
			k.addr = 0;
	}
	len = s->hdr.size;
	/* NULL: nothing was allocated */
	if (!k.addr || len > sizeof(*sc))
		goto out;
	if (bpf_map_update_elem(&alloc_live, &k, &one, BPF_ANY)) {
		st->alloc_untracked++;
		s->flags |= EMBER_SF_ALLOC_UNTRACKED;
		k.addr = 0;
	}
	sc->raw[SCRATCH_IPS + at] = k.addr;
	emit(ctx, s, len, st);
out:
	bpf_map_delete_elem(&alloc_pending, &tid);
	return 0;
}

/* A free of addr in the current process: a record if it was followed. */
static __always_inline int alloc_free(void *ctx, __u64 addr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct alloc_live_key k = { .tgid = id >> 32, .addr = addr };
	struct ember_bpf_stats *st;
	struct ember_free f = {
		.hdr = { .type = EMBER_REC_FREE, .size = sizeof(f) },
		.pid = id >> 32,
		.tid = (__u32)id,
		.addr = addr,
	};

	/* most frees end here: not a sampled block */
	if (!addr || bpf_map_delete_elem(&alloc_live, &k))
		return 0;
	st = get_stats();
	if (!st)
		return 0;
	st->alloc_hits++;
	f.time_ns = bpf_ktime_get_ns();
	emit(ctx, &f, sizeof(f), st);
	return 0;
}

SEC("uprobe")
int ember_entry_free(void *ctx)
{
	return alloc_free(ctx, R(ctx)->di);
}

SEC("uprobe")
int ember_entry_realloc(void *ctx)
{
	/* realloc(ptr, size): ptr is gone once it returns (or moved into
	 * the new block, which is followed anew if sampled) */
	alloc_free(ctx, R(ctx)->di);
	return alloc_entry(ctx, R(ctx)->si, 0);
}

SEC("uprobe")
int ember_free(void *ctx)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct ember_bpf_stats *st = get_stats();
	struct ember_free f = {
		.hdr = { .type = EMBER_REC_FREE, .size = sizeof(f) },
		.pid = tgid,
		.tid = (__u32)id,
	};

	if (!st)
		return 0;
	if (!pass_filters(task, tgid)) {
		st->filtered++;
		return 0;
	}
	st->alloc_hits++;
	f.time_ns = bpf_ktime_get_ns();
	f.addr = R(ctx)->di;
	emit(ctx, &f, sizeof(f), st);
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

	if (!st)
		return 0;
	/* the old image's mappings are gone: never unwind the new one with
	 * them (the agent binds the new image on this record) */
	bpf_map_delete_elem(&uw_procs, &tgid);
	if (!pass_filters(p, tgid))
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
	/* a new program: the agent rebinds its tables as soon as it can */
	emit_wake(ctx, e, e->hdr.size, st, true);
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
