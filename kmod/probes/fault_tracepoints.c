// SPDX-License-Identifier: GPL-2.0
/* x86's exceptions:page_fault_user/_kernel tracepoints and their prototype */
#include <linux/ptrace.h>
#include <asm/trace/exceptions.h>

static void ember_probe_fault(void *data, unsigned long address,
			      struct pt_regs *regs, unsigned long error_code)
{
}

static void __used ember_probe_check(void)
{
	check_trace_callback_type_page_fault_user(ember_probe_fault);
	check_trace_callback_type_page_fault_kernel(ember_probe_fault);
}
