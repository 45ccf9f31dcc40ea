// SPDX-License-Identifier: GPL-2.0
/*
 * uprobe_register_refctr() and uprobe_unregister(inode, offset, uc)
 * (4.20 .. 6.11): a uprobe is named by its inode and offset
 */
#include <linux/fs.h>
#include <linux/uprobes.h>

static int __used ember_probe(struct inode *inode, struct uprobe_consumer *uc)
{
	int ret = uprobe_register_refctr(inode, 0, 0, uc);

	uprobe_unregister(inode, 0, uc);
	return ret;
}
