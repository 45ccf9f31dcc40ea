// SPDX-License-Identifier: GPL-2.0
/* lock:contention_begin/contention_end and their prototypes (5.19+) */
#include <linux/types.h>
#include <trace/events/lock.h>

static void ember_probe_begin(void *data, void *lock, unsigned int flags)
{
}

static void ember_probe_end(void *data, void *lock, int ret)
{
}

static void __used ember_probe_check(void)
{
	check_trace_callback_type_contention_begin(ember_probe_begin);
	check_trace_callback_type_contention_end(ember_probe_end);
}
