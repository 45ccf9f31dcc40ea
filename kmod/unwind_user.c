// SPDX-License-Identifier: GPL-2.0
/*
 * User stacks by frame-pointer walk, the way perf_callchain_user() does it
 * in arch/x86/events/core.c (that code is not exported): nofault reads with
 * page faults disabled, each frame inside the user address range, aligned,
 * above the stack pointer and above the previous frame, so a corrupt or
 * hostile stack ends the walk instead of looping or reading kernel memory.
 */
#include <linux/sched.h>
#include <linux/uaccess.h>
#include <linux/compat.h>
#include <asm/ptrace.h>

#include "ember_kmod.h"

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

static unsigned int ember_walk32(struct pt_regs *regs, u64 *ips,
				 unsigned int n, unsigned int max, u16 *flags)
{
	unsigned long fp = (u32)regs->bp, sp = (u32)regs->sp;
	struct ember_frame32 f;

	*flags |= EMBER_SF_COMPAT;
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

unsigned int ember_unwind_user(struct pt_regs *regs, u64 *ips,
			       unsigned int max, u16 *flags)
{
	unsigned long fp, sp;
	struct ember_frame64 f;
	unsigned int n = 0;

	if (!max || !regs || !ember_user_mem_ok())
		return 0;
	ips[n++] = regs->ip;
	if (!user_64bit_mode(regs))
		return ember_walk32(regs, ips, n, max, flags);

	fp = regs->bp;
	sp = regs->sp;
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
		if (!f.ret)
			break;
		ips[n++] = f.ret;
		/* frames go up the stack; anything else is a loop or garbage */
		if (f.next && f.next <= fp) {
			*flags |= EMBER_SF_USER_FAULT;
			break;
		}
		fp = f.next;
	}
	return n;
}
