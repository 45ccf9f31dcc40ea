// SPDX-License-Identifier: GPL-2.0
/*
 * The module's shared state: the lock, the running session's
 * configuration and rings, the per-CPU counters, the capabilities and the
 * parameters. It calls nothing; every other unit may read it, so it sits
 * below all of them and main.c, which starts them all, stays on top.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>

#include "ember_kmod.h"

/*
 * Serializes control commands, session changes, mmap and poll. Taken under
 * mmap_lock (ember_dev_mmap): see the lock order in ember_kmod.h.
 */
DEFINE_MUTEX(ember_lock);
struct ember_config ember_cfg;
bool ember_running;
struct ember_ringset *ember_cur_set;
struct ember_ringset *ember_active_set;
struct ember_cpu_stats __percpu *ember_stats;
DECLARE_WAIT_QUEUE_HEAD(ember_wq);
u64 ember_caps;

unsigned int ember_param_ring_size = 512 * 1024;
module_param_named(ring_size, ember_param_ring_size, uint, 0444);
MODULE_PARM_DESC(ring_size,
		 "default data bytes per CPU ring, power of two (16 KiB..64 MiB)");

/*
 * All rings of a session together: one per possible CPU, so a large
 * RING_SIZE on a many-CPU machine could otherwise pin gigabytes.
 */
unsigned int ember_param_ring_mem_max_mb = 1024;
module_param_named(ring_mem_max, ember_param_ring_mem_max_mb, uint, 0644);
MODULE_PARM_DESC(ring_mem_max,
		 "MiB all rings of a session may take together (default 1024)");
