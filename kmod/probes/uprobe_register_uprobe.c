// SPDX-License-Identifier: GPL-2.0
/*
 * uprobe_register() returns the struct uprobe, unregistering is split in
 * uprobe_unregister_nosync() and uprobe_unregister_sync() (6.12+)
 */
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/uprobes.h>

static int __used ember_probe(struct inode *inode, struct uprobe_consumer *uc)
{
	struct uprobe *u = uprobe_register(inode, 0, 0, uc);

	if (IS_ERR(u))
		return PTR_ERR(u);
	uprobe_unregister_nosync(u, uc);
	uprobe_unregister_sync();
	return 0;
}
