// SPDX-License-Identifier: GPL-2.0
/* sched_switch probes get prev_state as a 4th argument (5.18+) */
#include <linux/sched.h>
#include <trace/events/sched.h>

static void ember_probe(void *data, bool preempt, struct task_struct *prev,
			struct task_struct *next, unsigned int prev_state)
{
}

static int __used ember_probe_register(void)
{
	return register_trace_sched_switch(ember_probe, NULL);
}
