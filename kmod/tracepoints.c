// SPDX-License-Identifier: GPL-2.0
/*
 * Scheduler tracepoints are not exported to modules by symbol; they are
 * looked up by name among the kernel's tracepoints.
 */
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "ember_kmod.h"

struct ember_tp_lookup {
	const char *name;
	struct tracepoint *tp;
};

static void ember_tp_match(struct tracepoint *tp, void *priv)
{
	struct ember_tp_lookup *l = priv;

	if (!l->tp && !strcmp(tp->name, l->name))
		l->tp = tp;
}

void *ember_find_tracepoint(const char *name)
{
	struct ember_tp_lookup l = { .name = name };

	for_each_kernel_tracepoint(ember_tp_match, &l);
	return l.tp;
}
