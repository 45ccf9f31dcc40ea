// SPDX-License-Identifier: GPL-2.0
/* sched_switch probes get prev_state as a 4th argument (5.18+) */
#include <linux/mm.h>
#include <linux/sched.h>
#include <trace/events/sched.h>

static void ember_probe(void *data, bool preempt, struct task_struct *prev,
			struct task_struct *next, unsigned int prev_state)
{
}

static void __used ember_probe_check(void)
{
	check_trace_callback_type_sched_switch(ember_probe);
}
