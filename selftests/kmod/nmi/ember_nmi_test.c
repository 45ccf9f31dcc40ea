// SPDX-License-Identifier: GPL-2.0
/*
 * ember_nmi_test.ko: runs ember's sampling path in NMI context on machines
 * without a PMU (qemu TCG). It claims the NMIs that nothing else claims
 * (run-vm.sh --nmi-every injects them through the qemu monitor) and hands
 * each one's interrupted registers to ember_selftest_nmi_sample(), which
 * only a test build of ember.ko (make module-selftest) has. "hits" counts
 * the NMIs seen.
 */
#include <linux/atomic.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <asm/nmi.h>

void ember_selftest_nmi_sample(struct pt_regs *regs);

static atomic_t ember_nmi_hits = ATOMIC_INIT(0);

static int ember_nmi_hits_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&ember_nmi_hits));
}

static const struct kernel_param_ops ember_nmi_hits_ops = {
	.get = ember_nmi_hits_get,
};
module_param_cb(hits, &ember_nmi_hits_ops, NULL, 0444);
MODULE_PARM_DESC(hits, "NMIs handed to ember so far");

static int ember_nmi_test_handler(unsigned int type, struct pt_regs *regs)
{
	atomic_inc(&ember_nmi_hits);
	ember_selftest_nmi_sample(regs);
	return NMI_HANDLED;
}

static int __init ember_nmi_test_init(void)
{
	return register_nmi_handler(NMI_UNKNOWN, ember_nmi_test_handler, 0,
				    "ember_test");
}

static void __exit ember_nmi_test_exit(void)
{
	unregister_nmi_handler(NMI_UNKNOWN, "ember_test");
}

module_init(ember_nmi_test_init);
module_exit(ember_nmi_test_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ember test: sampling from NMI context without a PMU");
