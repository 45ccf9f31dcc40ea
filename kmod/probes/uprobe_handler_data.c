// SPDX-License-Identifier: GPL-2.0
/* uprobe_consumer.handler takes a __u64 *data (session uprobes, 6.13+) */
#include <linux/uprobes.h>

static int ember_probe_handler(struct uprobe_consumer *self,
			       struct pt_regs *regs, u64 *data)
{
	return 0;
}

static struct uprobe_consumer ember_probe_uc __used = {
	.handler = ember_probe_handler,
};
