// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel stacks through the exported x86 unwinder API (ORC on Debian
 * kernels). Starting from the interrupted registers, or from a task that is
 * not running, keeps ember's and perf's own frames out of the stack.
 */
#include <linux/sched.h>
#include <asm/unwind.h>

#include "ember_kmod.h"

unsigned int ember_unwind_kernel(struct task_struct *task,
				 struct pt_regs *regs, u64 *ips,
				 unsigned int max, u16 *flags)
{
	struct unwind_state state;
	unsigned int n = 0;
	unsigned long addr;

	for (__unwind_start(&state, task, regs, NULL); !unwind_done(&state);
	     unwind_next_frame(&state)) {
		addr = unwind_get_return_address(&state);
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
