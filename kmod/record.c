// SPDX-License-Identifier: GPL-2.0
/*
 * Building records. Stacks are unwound into a per-CPU scratch buffer (one
 * per context level, so an NMI or hardirq sample nested inside a tracepoint
 * writer never shares a buffer) and then copied into the ring with the exact
 * size: reserving the worst case in the ring would waste most of it.
 */
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/preempt.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/percpu.h>
#include <linux/uaccess.h>

#include "ember_kmod.h"
#include "arch.h"
#include "ring.h"

#define EMBER_NR_LEVELS 4	/* task, softirq, hardirq, NMI */

static void *ember_scratch;	/* nr_cpu_ids * EMBER_NR_LEVELS slots */
static size_t ember_slot_size;
static DEFINE_PER_CPU(u8 [EMBER_NR_LEVELS], ember_scratch_busy);
static unsigned int ember_kmax, ember_umax;
static bool ember_stack_copy;
static u32 ember_copy_bytes;	/* EMBER_A_STACK_COPY: cut/unbound samples */

int ember_record_init(const struct ember_config *cfg)
{
	ember_kmax = cfg->kstack_max;
	ember_umax = cfg->ustack_max;
	ember_stack_copy = cfg->flags & EMBER_F_STACK_COPY;
	/* test mode copies every sample already, after it */
	ember_copy_bytes = ember_stack_copy ? 0 : cfg->stack_copy;
	ember_slot_size = sizeof(struct ember_sample) +
			  (size_t)(EMBER_MAX_FRAMES * 2) * sizeof(u64);
	ember_scratch = kvcalloc((size_t)nr_cpu_ids * EMBER_NR_LEVELS,
				 ember_slot_size, GFP_KERNEL);
	return ember_scratch ? 0 : -ENOMEM;
}

/*
 * The user slots a stack of nk kernel frames may take in a scratch slot
 * when its process's Python frames are walked: two slots each on top of
 * the native frames' ember_umax, within a record's EMBER_MAX_FRAMES and
 * leaving the slot room for a tail of 3.
 */
static unsigned int ember_py_umax(unsigned int nk)
{
	unsigned int m = min_t(unsigned int,
			       ember_umax + 2 * EMBER_MAX_PY_FRAMES,
			       EMBER_MAX_FRAMES);

	return min_t(unsigned int, m, EMBER_MAX_FRAMES * 2 - 3 - nk);
}

void ember_record_exit(void)
{
	kvfree(ember_scratch);
	ember_scratch = NULL;
}

static unsigned int ember_ctx_level(void)
{
	if (in_nmi())
		return 3;
	if (hardirq_count())
		return 2;
	if (in_serving_softirq())
		return 1;
	return 0;
}

/*
 * Returns this CPU's scratch buffer for the current context level, or NULL
 * if it is in use (a recursion that should not happen). Preemption must be
 * off.
 */
void *ember_scratch_get(unsigned int *level)
{
	unsigned int l = ember_ctx_level();
	u8 *busy = *this_cpu_ptr(&ember_scratch_busy);

	if (busy[l])
		return NULL;
	busy[l] = 1;
	barrier();
	*level = l;
	return (u8 *)ember_scratch +
	       ((size_t)smp_processor_id() * EMBER_NR_LEVELS + l) *
	       ember_slot_size;
}

void ember_scratch_put(unsigned int level)
{
	barrier();
	this_cpu_write(ember_scratch_busy[level], 0);
}

void ember_fill_sample_header(struct ember_sample *s, u16 type,
			      struct task_struct *t, u64 time_ns, u64 weight_ns)
{
	s->hdr.type = type;
	s->hdr.__reserved = 0;
	s->time_ns = time_ns;
	s->weight_ns = weight_ns;
	s->cgroup_id = ember_task_cgroup_id(t);
	s->pid = t->tgid;
	s->tid = t->pid;
	s->cpu = smp_processor_id();
	s->flags = 0;
	s->state = 0;
	s->periods = 0;
	s->nr_kernel = 0;
	s->nr_user = 0;
	s->__reserved2 = 0;
	/* comm can change under us (prctl): copy, then terminate */
	memcpy(s->comm, t->comm, EMBER_COMM_LEN);
	s->comm[EMBER_COMM_LEN - 1] = '\0';
	if (is_idle_task(t))
		s->flags |= EMBER_SF_IDLE;
	if (t->flags & PF_KTHREAD || !t->mm)
		s->flags |= EMBER_SF_KTHREAD;
}

/* Copies a finished record into this CPU's ring; counts record or loss. */
int ember_emit_buf(const void *rec, u32 size, struct ember_cpu_stats *st)
{
	struct ember_ringset *set = READ_ONCE(ember_active_set);
	struct ember_ring *rb;
	void *dst;

	if (!set)
		return -ENODEV;
	rb = set->rings[smp_processor_id()];
	dst = ember_ring_reserve(rb, size);
	if (!dst) {
		local64_inc(&st->lost);
		return -ENOSPC;
	}
	memcpy(dst, rec, size);
	ember_ring_commit(rb);
	local64_inc(&st->records);
	return 0;
}

/*
 * current's user stack from uregs into ips (ember_unwind_user(): max
 * slots, py_max >= max for a process whose Python frames are walked).
 * The one way an EMBER_REC_UNWIND_MISS reaches the ring: the unwinder
 * only says which miss to report, and it is written here, before the
 * record whose stack missed. Preemption must be off.
 */
unsigned int ember_record_user_stack(struct pt_regs *uregs, bool at_entry,
				     u64 *ips, unsigned int max,
				     unsigned int py_max, u16 *flags,
				     struct ember_cpu_stats *st)
{
	struct ember_unwind_miss miss;
	unsigned int n;

	n = ember_unwind_user(uregs, at_entry, ips, max, py_max, flags, &miss);
	if (miss.hdr.size) {
		local64_inc(&st->unwind_miss);
		ember_emit_buf(&miss, sizeof(miss), st);
	}
	return n;
}

/*
 * The user registers and a copy of max bytes of the user stack, written
 * straight into the ring: test mode (EMBER_F_STACK_COPY) after each sample,
 * for the agent's libdwfl oracle; EMBER_A_STACK_COPY before a cut or
 * unbound sample, which the agent unwinds again with it. A stack ending
 * sooner gives what it has (the copy stops at the first page that cannot
 * be read). Never sleeps: nofault reads. false: nothing written.
 */
static bool ember_emit_stack_copy(struct pt_regs *u, const struct ember_sample *s,
				  u32 max, struct ember_cpu_stats *st)
{
	struct ember_ringset *set = READ_ONCE(ember_active_set);
	const u32 size = sizeof(struct ember_user_stack) + max;
	struct ember_user_stack *r;
	unsigned long sp = ember_regs_sp(u);
	u32 got = 0;

	if (!set || !ember_regs_native(u))
		return false;
	/*
	 * The replay's copies give way to the records: none once a quarter
	 * of the ring waits to be read (a lagging reader, a burst of
	 * unbound samples), so copies never make a sample lost.
	 */
	if (!ember_stack_copy &&
	    ember_ring_unread(set->rings[smp_processor_id()]) >
	    set->rings[smp_processor_id()]->size / 4)
		return false;
	r = ember_ring_reserve(set->rings[smp_processor_id()], size);
	if (!r) {
		local64_inc(&st->lost);
		return false;
	}
	memset(r, 0, sizeof(*r));
	r->hdr.type = EMBER_REC_USER_STACK;
	r->hdr.size = size;
	r->time_ns = s->time_ns;
	r->pid = s->pid;
	r->tid = s->tid;
	ember_regs_copy(r->regs, u);
	/*
	 * Page by page (the first up to its end): the copy stops where the
	 * stack mapping does, keeping what lies before.
	 */
	while (got < max && sp + got < TASK_SIZE_MAX - PAGE_SIZE) {
		u32 n = PAGE_SIZE - ((sp + got) & ~PAGE_MASK);

		if (n > max - got)
			n = max - got;
		if (copy_from_user_nofault(r->stack + got,
					   (const void __user *)(sp + got), n))
			break;
		got += n;
	}
	memset(r->stack + got, 0, max - got);
	r->stack_len = got;
	ember_ring_commit(set->rings[smp_processor_id()]);
	local64_inc(&st->records);
	return true;
}

/*
 * EMBER_A_STACK_COPY: a user walk that was cut or ran without tables
 * (not bound yet, code mapped later) gets its stack copied for the agent.
 * Not for Python runs (the copy would lose their frames), 32-bit tasks,
 * nor a uretprobe's stack (its lead frame is not in the registers).
 */
static bool ember_wants_copy(u16 flags, unsigned int nu, u64 lead)
{
	if (!ember_copy_bytes || !nu || lead)
		return false;
	/*
	 * Python samples too: the agent puts their activations back. Not a
	 * walk proven whole: cut only in its Python chain, or with a
	 * frame-pointer step where no CFI is, which the replay (the same
	 * files' CFI) cannot mend either; each copy is 12 KiB of ring.
	 */
	if (flags & (EMBER_SF_COMPAT | EMBER_SF_KTHREAD |
		     EMBER_SF_USER_COMPLETE))
		return false;
	return !(flags & EMBER_SF_USER_CFI) ||
	       (flags & (EMBER_SF_USER_CUT | EMBER_SF_USER_FP));
}

/*
 * How an allocation's user stack starts: at_entry, regs are at a
 * function's first instruction (uprobe); else with lead nonzero, regs are
 * at that function's return (uretprobe), and lead, its address, is the
 * first frame, as it would have been at its entry. flags are added to
 * the record's.
 */
struct ember_stack_how {
	bool at_entry;
	u8 periods;		/* ember_sample.periods */
	u64 lead;
	u16 flags;
	/* regs NULL: current's kernel stack from this probe frame (callers only) */
	const void *kfirst;
};

/*
 * A stack sample of current at regs: kernel frames when regs are in the
 * kernel, then the user stack; nr_tail u64 follow ips[] (hdr.size counts
 * them). how: NULL for an interrupted task. Preemption must be off.
 */
static void ember_emit_stack(u16 type, struct pt_regs *regs,
			     const struct ember_stack_how *how,
			     u64 time_ns, u64 weight_ns, const u64 *tail,
			     unsigned int nr_tail, struct ember_cpu_stats *st)
{
	bool at_entry = how && how->at_entry;
	u64 lead = how && !at_entry ? how->lead : 0;
	struct task_struct *t = current;
	struct ember_sample *s;
	unsigned int level, nk = 0, nu = 0, i;
	u16 flags;
	u32 size;

	s = ember_scratch_get(&level);
	if (!s) {
		local64_inc(&st->lost);
		return;
	}
	ember_fill_sample_header(s, type, t, time_ns, weight_ns);
	if (how)
		s->periods = how->periods;
	flags = s->flags;
	if (regs && !user_mode(regs)) {
		flags |= EMBER_SF_IN_KERNEL;
		if (ember_kmax)
			nk = ember_unwind_kernel(t, regs, s->ips, ember_kmax,
						 &flags);
	} else if (!regs && how && how->kfirst) {
		flags |= EMBER_SF_IN_KERNEL;
		if (ember_kmax)
			nk = ember_unwind_kernel_here(how->kfirst, s->ips,
						      ember_kmax, &flags);
		/* the tracepoint's iterator, where it called the probe */
		if (nk && ember_tp_in_iterator(s->ips[0]))
			memmove(s->ips, s->ips + 1, --nk * sizeof(u64));
	}
	if (ember_umax && !(flags & (EMBER_SF_KTHREAD | EMBER_SF_IDLE))) {
		struct pt_regs *uregs = regs && user_mode(regs) ?
					regs : task_pt_regs(t);

		if (lead)
			s->ips[nk + nu++] = lead;
		if (ember_umax > nu)
			nu += ember_record_user_stack(uregs, at_entry,
						      s->ips + nk + nu,
						      ember_umax - nu,
						      ember_py_umax(nk) - nu,
						      &flags, st);
		if (flags & EMBER_SF_USER_CFI)
			local64_inc(&st->ustack_cfi);
		if (flags & EMBER_SF_USER_FP)
			local64_inc(&st->ustack_fp);
		if (flags & EMBER_SF_USER_CUT)
			local64_inc(&st->ustack_cut);
		/* before the sample, so the agent has it when the sample comes */
		if (ember_wants_copy(flags, nu, lead) &&
		    ember_emit_stack_copy(uregs, s, ember_copy_bytes, st))
			flags |= EMBER_SF_USER_COPIED;
	}
	s->flags = flags | (how ? how->flags : 0);
	s->nr_kernel = nk;
	s->nr_user = nu;
	/* the slot holds 2 * EMBER_MAX_FRAMES: room for a short tail */
	for (i = 0; i < nr_tail; i++)
		s->ips[nk + nu + i] = tail[i];
	size = sizeof(*s) + (nk + nu + nr_tail) * sizeof(u64);
	s->hdr.size = size;
	ember_emit_buf(s, size, st);
	if (ember_stack_copy && nu && type == EMBER_REC_SAMPLE)
		ember_emit_stack_copy(regs && user_mode(regs) ? regs :
				      task_pt_regs(t), s, EMBER_STACK_COPY_MAX,
				      st);
	ember_scratch_put(level);
}

/*
 * An on-CPU sample of current, interrupted with regs, standing for
 * periods sampling periods (ember_sample.periods; 0 when not a clock's).
 * Runs in hardirq (cpu-clock) or NMI (hardware events) context.
 */
void ember_emit_sample(u16 type, struct pt_regs *regs, u64 time_ns,
		       u64 weight_ns, u8 periods, struct ember_cpu_stats *st)
{
	struct ember_stack_how how = { .periods = periods };

	ember_emit_stack(type, regs, &how, time_ns, weight_ns, NULL, 0, st);
}

/*
 * EMBER_REC_ALLOC from a uprobe at the entry of an allocation probe
 * function: the user stack from its regs (no kernel frames: they are
 * user regs), then the block's address and the size asked for.
 * Preemption must be off.
 */
void ember_emit_alloc(struct pt_regs *regs, u64 time_ns, u64 weight,
		      u64 addr, u64 size, struct ember_cpu_stats *st)
{
	ember_emit_alloc_at(regs, 0, time_ns, weight, addr, size, 0, st);
}

/*
 * The same with lead nonzero: regs at the return of the function at lead
 * (a uretprobe), the stack as at its entry; flags: EMBER_SF_* added.
 */
void ember_emit_alloc_at(struct pt_regs *regs, u64 lead, u64 time_ns,
			 u64 weight, u64 addr, u64 size, u16 flags,
			 struct ember_cpu_stats *st)
{
	const struct ember_stack_how how = {
		.at_entry = !lead,
		.lead = lead,
		.flags = flags,
	};
	const u64 tail[2] = { addr, size };

	ember_emit_stack(EMBER_REC_ALLOC, regs, &how, time_ns, weight, tail,
			 ARRAY_SIZE(tail), st);
}

/* EMBER_REC_FREE: a sampled block was freed. Preemption must be off. */
void ember_emit_free(u64 time_ns, u64 addr, struct ember_cpu_stats *st)
{
	struct ember_free r = {
		.hdr.type = EMBER_REC_FREE,
		.hdr.size = sizeof(r),
		.time_ns = time_ns,
		.pid = current->tgid,
		.tid = current->pid,
		.addr = addr,
	};

	ember_emit_buf(&r, sizeof(r), st);
}

/*
 * Lock records of current from a tracepoint probe (lock.c): kernel frames
 * from kfirst, the probe's frame, when not NULL (a futex wait's kernel
 * stack at syscall exit says nothing, so it passes NULL), then the user
 * stack from task_pt_regs(), then the 24-byte trailer the format puts
 * after ips[]. Preemption must be off.
 */
static void ember_emit_lock_rec(u16 type, const void *kfirst, u64 time_ns,
				u64 weight_ns, const void *trailer,
				struct ember_cpu_stats *st)
{
	const struct ember_stack_how how = { .kfirst = kfirst };
	u64 tail[3];

	BUILD_BUG_ON(sizeof(struct ember_lock_wait) != sizeof(tail));
	BUILD_BUG_ON(sizeof(struct ember_lock_waker) != sizeof(tail));
	memcpy(tail, trailer, sizeof(tail));
	ember_emit_stack(type, NULL, &how, time_ns, weight_ns, tail,
			 ARRAY_SIZE(tail), st);
}

/* EMBER_REC_LOCK: the waiter (current) at the end of its wait */
void ember_emit_lock(const struct ember_lock_wait *w, const void *kfirst,
		     u64 time_ns, u64 weight_ns, struct ember_cpu_stats *st)
{
	ember_emit_lock_rec(EMBER_REC_LOCK, kfirst, time_ns, weight_ns, w, st);
}

/* EMBER_REC_LOCK_WAKER: the waker (current) of a kept wait */
void ember_emit_lock_waker(const struct ember_lock_waker *w,
			   const void *kfirst, u64 time_ns, u64 weight_ns,
			   struct ember_cpu_stats *st)
{
	ember_emit_lock_rec(EMBER_REC_LOCK_WAKER, kfirst, time_ns, weight_ns,
			    w, st);
}
