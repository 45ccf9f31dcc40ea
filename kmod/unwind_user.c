// SPDX-License-Identifier: GPL-2.0
/*
 * User stacks: with the agent's CFI tables when the process is bound
 * (unwind_table.c), else by frame-pointer walk, the way
 * perf_callchain_user() does it in arch/x86/events/core.c and
 * arch/arm64/kernel/stacktrace.c (that code is not exported). The frame
 * records of both ({rbp, ret} at rbp, {x29, x30} at x29) have one layout;
 * on arm64 a frame's return address is in x30 until it saves it, and
 * return addresses carry a pointer-authentication code that is stripped
 * with the kernel's mask. Either way: nofault reads with page faults disabled,
 * each slot inside the user address range and aligned, frames going up
 * the stack, a bounded number of steps, so a corrupt or hostile stack ends
 * the walk instead of looping or reading kernel memory. In a bound
 * Python process, a frame in the interpreter loop gives way to the Python
 * frames it runs (unwind_python.c), in both walks.
 */
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <linux/compat.h>
#include <asm/ptrace.h>

#include "ember_kmod.h"
#include "arch.h"
#include "../include/ember_unwind.h"

struct ember_frame64 {
	u64 next;
	u64 ret;
};

struct ember_frame32 {
	u32 next;
	u32 ret;
};

/*
 * Reading user memory is only meaningful when the user page tables loaded
 * on this CPU are current's. Outside NMI context that always holds for a
 * user task (switch_mm runs with interrupts off). In NMI context
 * copy_from_user_nofault() checks it itself on the kernels that have
 * nmi_uaccess_okay(); stay conservative about lazy-TLB kernel code.
 */
static bool ember_user_mem_ok(void)
{
	struct task_struct *t = current;

	if (!t->mm || t->flags & PF_KTHREAD)
		return false;
	if (in_nmi() && t->mm != t->active_mm)
		return false;
	return true;
}

#if EMBER_ARCH_COMPAT_FP
static unsigned int ember_walk32(struct pt_regs *regs, u64 *ips,
				 unsigned int n, unsigned int max, u16 *flags)
{
	unsigned long fp = (u32)ember_regs_fp(regs);
	unsigned long sp = (u32)ember_regs_sp(regs);
	struct ember_frame32 f;

	while (fp) {
		if (n == max) {
			*flags |= EMBER_SF_USER_TRUNC;
			break;
		}
		if ((fp & 3) || fp < sp || fp > U32_MAX - sizeof(f) ||
		    copy_from_user_nofault(&f, (const void __user *)fp,
					   sizeof(f))) {
			*flags |= EMBER_SF_USER_FAULT;
			break;
		}
		if (!f.ret)
			break;
		ips[n++] = f.ret;
		if (f.next && f.next <= fp) {
			*flags |= EMBER_SF_USER_FAULT;
			break;
		}
		fp = f.next;
	}
	return n;
}
#endif

/*
 * A 32-bit task: its PC, then on x86 the frame chain of i386 code
 * ({ebp, ret} at ebp). AArch32 code has no frame record one can trust
 * (ARM and Thumb keep the frame pointer in different registers, APCS and
 * AAPCS lay the record out differently), so there the stack is the PC
 * alone, marked cut: never a frame that cannot be proven.
 */
static unsigned int ember_walk_compat(struct pt_regs *regs, u64 *ips,
				      unsigned int max, u16 *flags)
{
	*flags |= EMBER_SF_COMPAT;
	ips[0] = (u32)ember_regs_pc(regs);
#if EMBER_ARCH_COMPAT_FP
	return ember_walk32(regs, ips, 1, max, flags);
#else
	*flags |= EMBER_SF_USER_CUT;
	return 1;
#endif
}

/*
 * At a function's first instruction (a uprobe there) no frame of its own
 * exists yet: the return address is at sp (x86) or in x30 (arm64), and
 * the frame pointer is still the caller's, so a frame-pointer step would
 * skip the caller. Returns it (0 when unreadable), moving *sp past it.
 */
static u64 ember_entry_ret(struct pt_regs *regs, u64 pac_mask,
			   unsigned long *sp)
{
	u64 ra;

	if (EMBER_ARCH_HAS_LR)
		return ember_regs_lr(regs) & ~pac_mask;
	if ((*sp & 7) || *sp > TASK_SIZE_MAX - sizeof(ra) ||
	    copy_from_user_nofault(&ra, (const void __user *)*sp, sizeof(ra)))
		return 0;
	*sp += sizeof(ra);
	return ra;
}

/*
 * One frame at pc (exact: the interrupted instruction, else a return
 * address; sp its stack pointer, 0 when not known: frame pointers) into
 * ips[n], n < max: in the eval loop of a bound Python process, the
 * Python frames of that activation instead (unwind_python.c). Returns
 * the new n.
 */
static unsigned int ember_put_frame(struct ember_py_walk *py, u64 pc,
				    u64 sp, bool exact, u64 *ips,
				    unsigned int n, unsigned int max, u16 *flags)
{
	unsigned int m = ember_py_activation(py, exact ? pc : pc - 1, sp, ips,
					     n, max, flags);

	if (m != n || n >= max)
		return m;
	ips[n++] = pc;
	return n;
}

/*
 * The frame-pointer walk of a 64-bit task (no tables for it). On arm64 a
 * leaf that has not saved x30 leaves x29 on its caller's record: the
 * caller is then missing, as in perf, rather than guessed from x30.
 */
static unsigned int ember_walk_fp(struct ember_py_walk *py,
				  struct pt_regs *regs, bool at_entry,
				  u64 *ips, unsigned int max, u16 *flags)
{
	u64 pac_mask = ember_user_pac_mask();
	unsigned long fp, sp;
	struct ember_frame64 f;
	unsigned int n = 0;

	n = ember_put_frame(py, ember_regs_pc(regs), 0, true, ips, n, max,
			    flags);
	fp = ember_regs_fp(regs);
	sp = ember_regs_sp(regs);
	if (at_entry && n < max) {
		u64 ra = ember_entry_ret(regs, pac_mask, &sp);

		if (!ra) {
			*flags |= EMBER_SF_USER_FAULT;
			return n;
		}
		n = ember_put_frame(py, ra, 0, false, ips, n, max, flags);
	}
	while (fp) {
		if (n == max) {
			*flags |= EMBER_SF_USER_TRUNC;
			break;
		}
		if ((fp & 7) || fp < sp || fp > TASK_SIZE_MAX - sizeof(f) ||
		    copy_from_user_nofault(&f, (const void __user *)fp,
					   sizeof(f))) {
			*flags |= EMBER_SF_USER_FAULT;
			break;
		}
		f.ret &= ~pac_mask;
		if (!f.ret)
			break;
		n = ember_put_frame(py, f.ret, 0, false, ips, n, max, flags);
		/* frames go up the stack; anything else is a loop or garbage */
		if (f.next && f.next <= fp) {
			*flags |= EMBER_SF_USER_FAULT;
			break;
		}
		fp = f.next;
	}
	return n;
}

/*
 * Unbound processes: at most one miss per process every 50 ms per CPU,
 * from a few recently reported pids (lossy: a miss is only a request).
 */
#define EMBER_MISS_SEEN		4

struct ember_miss_seen {
	pid_t pid;
	u64 time_ns;
};

static DEFINE_PER_CPU(struct ember_miss_seen[EMBER_MISS_SEEN], ember_miss_seen);

static bool ember_unbound_miss_allowed(pid_t tgid, u64 now)
{
	struct ember_miss_seen *seen = *this_cpu_ptr(&ember_miss_seen);
	unsigned int i, oldest = 0;

	for (i = 0; i < EMBER_MISS_SEEN; i++) {
		if (seen[i].pid == tgid) {
			if (now - seen[i].time_ns < 50 * NSEC_PER_MSEC)
				return false;
			seen[i].time_ns = now;
			return true;
		}
		if (seen[i].time_ns < seen[oldest].time_ns)
			oldest = i;
	}
	seen[oldest].pid = tgid;
	seen[oldest].time_ns = now;
	return true;
}

/*
 * Whether to ask the agent for tables at pc (0: the process is not
 * bound): if so, *m is the EMBER_REC_UNWIND_MISS record for the caller to
 * write (record.c), else m->hdr.size stays 0. The unwinder writes no
 * record itself.
 */
static void ember_unwind_want_miss(const struct ember_uw_binding *b, u64 pc,
				   struct ember_unwind_miss *m)
{
	u64 now = ktime_get_mono_fast_ns();

	if (!ember_unwind_active())
		return;		/* nobody loads tables in this session */
	if (b ? !ember_unwind_miss_allowed(b, now) :
		!ember_unbound_miss_allowed(current->tgid, now)) {
		local64_inc(&this_cpu_ptr(ember_stats)->unwind_miss_limited);
		return;
	}
	memset(m, 0, sizeof(*m));
	m->hdr.type = EMBER_REC_UNWIND_MISS;
	m->hdr.size = sizeof(*m);
	m->time_ns = now;
	m->pid = current->tgid;
	m->tid = current->pid;
	m->pc = pc;
}

/*
 * Table-driven walk (the process is bound): per frame, the mapping that
 * holds the PC, its table's rule, one step of include/ember_unwind.h.
 * Where no table covers the PC, one frame-pointer step, kept only if the
 * return address it finds lies in the process's code. A return address
 * outside every mapping ends the walk as cut: never an invented frame.
 */
struct ember_uw_walk {
	const struct ember_uw_binding *b;
	u64 miss_pc;
	struct ember_py_walk py;
};

static int ember_uw_read(void *ctx, __u64 addr, __u64 *val)
{
	if ((addr & 7) || addr > TASK_SIZE_MAX - sizeof(*val))
		return -1;
	return copy_from_user_nofault(val, (const void __user *)addr,
				      sizeof(*val)) ? -1 : 0;
}

/*
 * The frame-pointer step from the interrupted instruction itself, which
 * on x86 may be a frame-pointer prologue or a ret (ember_unwind_leaf_fp()).
 * arm64 code gives no such sign: x29 is followed, as perf does.
 */
static int ember_fp_step_at(struct ember_uregs *r)
{
	u32 insn;

	if (EMBER_ARCH_LEAF_INSN && r->exact &&
	    !copy_from_user_nofault(&insn, (const void __user *)r->pc,
				    sizeof(insn))) {
		switch (ember_unwind_leaf_fp(insn)) {
		case EMBER_LEAF_AT_RA:
			return ember_unwind_entry_step(r, EMBER_ARCH_HAS_LR,
						       ember_uw_read, NULL);
		case EMBER_LEAF_PUSHED:
			r->fp = r->sp;
			r->fp_ok = 1;
			break;
		default:
			break;
		}
	}
	return ember_unwind_fp_step(r, ember_uw_read, NULL);
}

static unsigned int ember_walk_cfi(struct ember_uw_walk *w,
				   struct pt_regs *regs, bool at_entry,
				   u64 *ips, unsigned int max, u16 *flags)
{
	struct ember_uregs r = {
		.pc = ember_regs_pc(regs), .sp = ember_regs_sp(regs),
		.fp = ember_regs_fp(regs), .pac_mask = ember_user_pac_mask(),
		.fp_ok = 1, .lr_ok = EMBER_ARCH_HAS_LR, .exact = 1,
	};
	const struct ember_unwind_rule *rule;
	const struct ember_uw_map *m;
	unsigned int n = 0, steps;
	/* sp is a lower bound (after an arm64 frame-pointer step) */
	bool sp_low = false;
	int s;

	r.lr = ember_regs_lr(regs) & ~r.pac_mask;

	*flags |= EMBER_SF_USER_CFI;
	for (steps = 0; steps < EMBER_MAX_FRAMES; steps++) {
		u64 lpc = ember_unwind_lookup_pc(&r);

		if (n == max) {
			*flags |= EMBER_SF_USER_TRUNC;
			break;
		}
		m = ember_unwind_mapping(w->b, lpc);
		if (!m && n) {
			/* a return address outside the process's code */
			*flags |= EMBER_SF_USER_CUT;
			w->miss_pc = r.pc;
			break;
		}
		n = ember_put_frame(&w->py, r.pc, r.sp, r.exact, ips, n, max,
				    flags);
		if (!m) {
			*flags |= EMBER_SF_USER_CUT;
			w->miss_pc = r.pc;
			break;
		}
		rule = ember_unwind_rule_at(m, lpc);
		if (rule && rule->cfa_type != EMBER_CFA_NONE &&
		    !(sp_low && ember_unwind_rule_on_sp(rule))) {
			s = ember_unwind_step(rule, &r, ember_uw_read, NULL);
			sp_low = false;	/* sp = a CFA from an exact base */
		} else if (at_entry && n == 1) {
			/* no rule needed: the return address is at sp / in x30 */
			s = ember_unwind_entry_step(&r, EMBER_ARCH_HAS_LR,
						    ember_uw_read, NULL);
			if (s == EMBER_STEP_NEXT &&
			    !ember_unwind_mapping(w->b, r.pc - 1))
				s = EMBER_STEP_CUT;
		} else {
			/*
			 * no rule, or one that needs the exact sp an arm64
			 * frame-pointer step did not give: the frame record
			 */
			*flags |= EMBER_SF_USER_FP;
			s = ember_fp_step_at(&r);
			if (s == EMBER_STEP_NEXT &&
			    !ember_unwind_mapping(w->b, r.pc - 1))
				s = EMBER_STEP_CUT;
			sp_low = EMBER_ARCH_HAS_LR;
		}
		if (s == EMBER_STEP_END) {
			*flags |= EMBER_SF_USER_COMPLETE;
			break;
		}
		if (s == EMBER_STEP_FP_END)
			break;
		if (s != EMBER_STEP_NEXT) {
			*flags |= EMBER_SF_USER_CUT;
			break;
		}
	}
	return n;
}

/*
 * at_entry: regs stop at the first instruction of a function (a uprobe on
 * it), where no frame of its own exists yet. *miss: a miss record to
 * write when miss->hdr.size is set (ember_unwind_want_miss()).
 */
unsigned int ember_unwind_user(struct pt_regs *regs, bool at_entry,
			       u64 *ips, unsigned int max, unsigned int py_max,
			       u16 *flags, struct ember_unwind_miss *miss)
{
	struct ember_uw_walk w = { NULL, 0 };
	unsigned int n;

	miss->hdr.size = 0;
	if (!max || !regs || !ember_user_mem_ok())
		return 0;
	if (!ember_regs_native(regs))
		return ember_walk_compat(regs, ips, max, flags);
	rcu_read_lock();
	w.py.py = ember_py_lookup(current);
	/* Python frames take two slots each, on top of the native ones */
	if (w.py.py && py_max > max)
		max = py_max;
	w.b = ember_unwind_binding(current);
	if (!w.b) {
		n = ember_walk_fp(&w.py, regs, at_entry, ips, max, flags);
		n = ember_py_rest(&w.py, ips, n, max, flags);
		rcu_read_unlock();
		ember_unwind_want_miss(NULL, 0, miss);
		return n;
	}
	n = ember_walk_cfi(&w, regs, at_entry, ips, max, flags);
	n = ember_py_rest(&w.py, ips, n, max, flags);
	if (w.miss_pc)
		ember_unwind_want_miss(w.b, w.miss_pc, miss);
	rcu_read_unlock();
	return n;
}
