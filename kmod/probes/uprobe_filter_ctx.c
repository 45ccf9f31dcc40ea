// SPDX-License-Identifier: GPL-2.0
/* uprobe_consumer.filter takes an enum uprobe_filter_ctx (up to 6.9) */
#include <linux/uprobes.h>

static bool ember_probe_filter(struct uprobe_consumer *self,
			       enum uprobe_filter_ctx ctx,
			       struct mm_struct *mm)
{
	return true;
}

static struct uprobe_consumer ember_probe_uc __used = {
	.filter = ember_probe_filter,
};
