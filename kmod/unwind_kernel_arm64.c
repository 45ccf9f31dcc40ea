// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel stacks on arm64 by frame records ({x29, x30} at x29: the kernel
 * is built with frame pointers). Neither arch_stack_walk() nor
 * stack_trace_save_regs() is exported (stack_trace_save_tsk() only from
 * 6.12 on, stack_trace_save() only from the caller's own frame), so the
 * module follows the records itself, the way the kernel's unwinder does:
 * every record inside a stack the walk may be on (the task's stack, or,
 * for current, the IRQ stack this code runs on), 8-aligned, strictly
 * upward within a stack, from the IRQ stack to the task's and never back,
 * read with copy_from_kernel_nofault(). Starting from the interrupted
 * registers, from a task that is not running, or from a probe's own frame
 * keeps ember's and perf's frames out of the stack.
 *
 * Return addresses lose their PAC (CONFIG_ARM64_PTR_AUTH_KERNEL). An
 * exception inside the kernel leaves a record {x29, elr} in its pt_regs
 * (up to 6.12), so the walk goes on through the interrupted code; the
 * record of an entry from user space is {0, 0} and ends it. A leaf that
 * has not saved x30 yet loses its caller, as in the kernel's unwinder.
 * Not handled (the walk ends or shows the trampoline): the overflow and
 * SDEI stacks, function-graph tracer and kretprobe return trampolines.
 */
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/uaccess.h>
#include <asm/memory.h>
#include <asm/stack_pointer.h>

#include "ember_kmod.h"
#include "arch.h"

struct ember_kstack {
	unsigned long low;
	unsigned long high;	/* exclusive */
};

struct ember_kwalk {
	struct ember_kstack stacks[2];	/* IRQ stack, then the task's */
	unsigned int cur;		/* the stack of the last record */
	unsigned long last;		/* the last record's address */
};

struct ember_krecord {
	unsigned long fp;
	unsigned long lr;
};

static void ember_kwalk_init(struct ember_kwalk *w, struct task_struct *task)
{
	unsigned long base = (unsigned long)task_stack_page(task);
	unsigned long sp = current_stack_pointer;

	memset(w, 0, sizeof(*w));
	w->stacks[1].low = base;
	w->stacks[1].high = base + THREAD_SIZE;
	/*
	 * current in an interrupt runs on its CPU's IRQ stack, whose
	 * frames lie above this one. With CONFIG_VMAP_STACK the IRQ stacks
	 * are vmalloc'ed THREAD_ALIGN-aligned, so the one holding sp is
	 * found by rounding down; without it its bounds are not known to
	 * a module and the walk keeps to the task's stack.
	 */
	if (IS_ENABLED(CONFIG_VMAP_STACK) && task == current &&
	    (sp < base || sp >= base + THREAD_SIZE)) {
		w->stacks[0].low = sp;
		w->stacks[0].high = ALIGN_DOWN(sp, IRQ_STACK_SIZE) +
				    IRQ_STACK_SIZE;
	}
}

/* Whether the record at fp may be read: see the rules at the top. */
static bool ember_kwalk_ok(struct ember_kwalk *w, unsigned long fp)
{
	unsigned int i;

	if (fp & 7)
		return false;
	for (i = w->cur; i < ARRAY_SIZE(w->stacks); i++) {
		const struct ember_kstack *s = &w->stacks[i];

		if (fp < s->low || fp > s->high - sizeof(struct ember_krecord))
			continue;
		if (i == w->cur && w->last && fp <= w->last)
			return false;
		w->cur = i;
		w->last = fp;
		return true;
	}
	return false;
}

static unsigned int ember_kwalk(struct ember_kwalk *w, unsigned long fp,
				u64 *ips, unsigned int n, unsigned int max,
				u16 *flags)
{
	struct ember_krecord r;

	while (fp) {
		if (!ember_kwalk_ok(w, fp) ||
		    copy_from_kernel_nofault(&r, (const void *)fp, sizeof(r)))
			break;
		r.lr = ember_strip_kernel_pac(r.lr);
		if (!r.lr)
			break;
		if (n == max) {
			*flags |= EMBER_SF_KERNEL_TRUNC;
			break;
		}
		ips[n++] = r.lr;
		fp = r.fp;
	}
	return n;
}

/*
 * From regs: the interrupted pc first, then the records from its x29.
 * A task that is not running: from where it switched out (cpu_switch_to's
 * saved pc and x29). current without regs: from this function's caller.
 */
unsigned int ember_unwind_kernel(struct task_struct *task,
				 struct pt_regs *regs, u64 *ips,
				 unsigned int max, u16 *flags)
{
	struct ember_kwalk w;
	unsigned long fp;
	unsigned int n = 0;

	if (!max)
		return 0;
	ember_kwalk_init(&w, task);
	if (regs) {
		ips[n++] = ember_strip_kernel_pac(regs->pc);
		fp = regs->regs[29];
	} else if (task == current) {
		fp = (unsigned long)__builtin_frame_address(0);
	} else {
		ips[n++] = ember_strip_kernel_pac(thread_saved_pc(task));
		fp = thread_saved_fp(task);
	}
	return ember_kwalk(&w, fp, ips, n, max, flags);
}

/*
 * current's kernel stack from inside a probe: first is the probe's own
 * frame record (__builtin_frame_address(0) there), whose x30 returns into
 * its caller: the report starts there and no ember frame shows.
 */
unsigned int ember_unwind_kernel_here(const void *first, u64 *ips,
				      unsigned int max, u16 *flags)
{
	struct ember_kwalk w;

	if (!max)
		return 0;
	ember_kwalk_init(&w, current);
	return ember_kwalk(&w, (unsigned long)first, ips, 0, max, flags);
}
