// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel stacks through the exported x86 unwinder API (ORC on Debian
 * kernels). Starting from the interrupted registers, or from a task that is
 * not running, keeps ember's and perf's own frames out of the stack.
 */
#include <linux/sched.h>
#include <asm/unwind.h>

#include "ember_kmod.h"

static unsigned int ember_unwind_walk(struct unwind_state *state, u64 *ips,
				      unsigned int n, unsigned int max,
				      u16 *flags)
{
	unsigned long addr;

	for (; !unwind_done(state); unwind_next_frame(state)) {
		addr = unwind_get_return_address(state);
		if (!addr)
			break;
		if (n == max) {
			*flags |= EMBER_SF_KERNEL_TRUNC;
			break;
		}
		ips[n++] = addr;
	}
	return n;
}

/*
 * __unwind_start() wants the first frame to report, the way the inline
 * unwind_start() computes it. From registers, the interrupted ip is stored
 * here first (as perf_callchain_kernel() does) because kernels differ on
 * whether __unwind_start() leaves the state on the regs frame (5.10) or
 * already on its caller (5.12+); a state still on the regs frame is
 * stepped over so the ip is never reported twice.
 */
unsigned int ember_unwind_kernel(struct task_struct *task,
				 struct pt_regs *regs, u64 *ips,
				 unsigned int max, u16 *flags)
{
	struct unwind_state state;
	unsigned long *first;
	unsigned int n = 0;

	if (!max)
		return 0;
	if (regs) {
		ips[n++] = regs->ip;
		first = (unsigned long *)regs->sp;
	} else if (task == current) {
		first = __builtin_frame_address(0);
	} else {
		first = (unsigned long *)task->thread.sp;
	}
	__unwind_start(&state, task, regs, first);
	if (regs && !unwind_done(&state) && state.sp == regs->sp &&
	    unwind_get_return_address(&state) == regs->ip)
		unwind_next_frame(&state);
	return ember_unwind_walk(&state, ips, n, max, flags);
}

/*
 * current's kernel stack from inside a probe: first is the probe's own
 * frame (__builtin_frame_address(0) there), so the report starts at its
 * caller and no ember frame shows.
 */
unsigned int ember_unwind_kernel_here(const void *first, u64 *ips,
				      unsigned int max, u16 *flags)
{
	struct unwind_state state;

	if (!max)
		return 0;
	__unwind_start(&state, current, NULL, (unsigned long *)first);
	return ember_unwind_walk(&state, ips, 0, max, flags);
}
