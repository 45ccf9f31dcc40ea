// SPDX-License-Identifier: GPL-2.0
/*
 * Smallest loadable module: proves that a module built against the KDIR
 * of scripts/fetch-kernels.sh loads and unloads in the VM of that kernel.
 */
#include <linux/init.h>
#include <linux/module.h>

static int __init ember_vm_hello_init(void)
{
	pr_info("ember_vm_hello: loaded\n");
	return 0;
}

static void __exit ember_vm_hello_exit(void)
{
	pr_info("ember_vm_hello: unloaded\n");
}

module_init(ember_vm_hello_init);
module_exit(ember_vm_hello_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ember VM harness self-test module");
