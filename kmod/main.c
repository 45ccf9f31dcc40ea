// SPDX-License-Identifier: GPL-2.0
/*
 * ember.ko: on-CPU and off-CPU stack sampling into per-CPU rings that user
 * space maps from /dev/ember, controlled over the generic netlink family
 * "ember". See include/uapi/ember.h for the format and the protocol.
 *
 * This file loads and unloads the module: it checks the parameters,
 * probes the capabilities and starts the units in order. Nothing calls
 * into it; the shared state it sets up is in state.c.
 */
#include <linux/module.h>
#include <linux/log2.h>
#include <linux/percpu.h>
#include <linux/tracepoint.h>

#include "ember_kmod.h"
#include "alloc.h"

static int __init ember_init(void)
{
	int ret;

	ret = ember_offcpu_check_params();
	if (ret)
		return ret;
	ret = ember_lock_check_params();
	if (ret)
		return ret;
	if (!is_power_of_2(ember_param_ring_size) ||
	    ember_param_ring_size < EMBER_MIN_RING_SIZE ||
	    ember_param_ring_size > EMBER_MAX_RING_SIZE) {
		pr_err("ember: ring_size must be a power of two in [%u, %u]\n",
		       EMBER_MIN_RING_SIZE, EMBER_MAX_RING_SIZE);
		return -EINVAL;
	}
	ember_stats = alloc_percpu(struct ember_cpu_stats);
	if (!ember_stats)
		return -ENOMEM;

	ember_caps = EMBER_CAP_ONCPU | EMBER_CAP_USER_STACKS |
		     EMBER_CAP_KERNEL_STACKS | EMBER_CAP_UNWIND_CFI |
		     EMBER_CAP_PYTHON | EMBER_CAP_STACK_COPY;
	if (IS_ENABLED(CONFIG_CGROUPS))
		ember_caps |= EMBER_CAP_CGROUP_FILTER;
	if (ember_find_tracepoint("sched_switch"))
		ember_caps |= EMBER_CAP_OFFCPU;
	if (ember_find_tracepoint("sched_process_exec") &&
	    ember_find_tracepoint("sched_process_exit"))
		ember_caps |= EMBER_CAP_LIFECYCLE;
	if ((ember_caps & EMBER_CAP_LIFECYCLE) && ember_mmap_available())
		ember_caps |= EMBER_CAP_MMAP;
	if (ember_cycles_available())
		ember_caps |= EMBER_CAP_CYCLES;
	if (ember_faults_available())
		ember_caps |= EMBER_CAP_FAULTS;
	ember_caps |= ember_lock_caps();
	if (ember_alloc_available())
		ember_caps |= EMBER_CAP_ALLOC | EMBER_CAP_ALLOC_ENTRY |
			      EMBER_CAP_ALLOC_INUSE;

	ret = ember_session_init();
	if (ret)
		goto err_stats;
	ret = ember_chardev_init();
	if (ret)
		goto err_session;
	ret = ember_control_init();
	if (ret)
		goto err_chardev;
	pr_info("ember: loaded, ABI %u, %u rings of %u bytes by default\n",
		EMBER_ABI_VERSION, nr_cpu_ids, ember_param_ring_size);
	if ((ember_caps & EMBER_CAP_LOCK_FUTEX) &&
	    !(ember_caps & EMBER_CAP_LOCK_KERNEL))
		pr_info("ember: this kernel has no lock:contention_begin/end tracepoints (5.19+): lock profiles show futex waits only\n");
	return 0;

err_chardev:
	ember_chardev_exit();
err_session:
	ember_session_exit();
err_stats:
	free_percpu(ember_stats);
	return ret;
}

static void __exit ember_exit(void)
{
	/* no new commands, then no session, then no device */
	ember_control_exit();
	ember_session_exit();
	ember_chardev_exit();
	/* filters are freed with kfree_rcu */
	rcu_barrier();
	free_percpu(ember_stats);
	pr_info("ember: unloaded\n");
}

module_init(ember_init);
module_exit(ember_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("ember authors");
MODULE_DESCRIPTION("ember: on-CPU and off-CPU stack sampling profiler");
/* the release (./VERSION), passed by kmod/kmod.mk */
#ifndef EMBER_MODVERSION
#define EMBER_MODVERSION "0.0.0"
#endif
MODULE_VERSION(EMBER_MODVERSION);
