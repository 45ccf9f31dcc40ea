// SPDX-License-Identifier: GPL-2.0
/*
 * A session: the configuration, the rings and the event sources started by
 * one controller. It belongs to the generic netlink socket that started it
 * and stops when that socket is closed (NETLINK_URELEASE), so a crashed
 * agent never leaves the kernel sampling for nobody. Who the owner is, and
 * the check that a request comes from it, are owner.c's.
 */
#include <linux/netlink.h>
#include <linux/notifier.h>
#include <linux/percpu.h>
#include <linux/workqueue.h>
#include <net/net_namespace.h>

#include "ember_kmod.h"
#include "alloc.h"
#include "ring.h"

/* the generation (ember_owner_gen()) of a session whose owner closed */
static u32 ember_gone_gen;

static void ember_stats_reset(void)
{
	unsigned int cpu;

	for_each_possible_cpu(cpu) {
		struct ember_cpu_stats *st = per_cpu_ptr(ember_stats, cpu);

		local64_set(&st->samples, 0);
		local64_set(&st->filtered, 0);
		local64_set(&st->records, 0);
		local64_set(&st->lost, 0);
		local64_set(&st->handler_ns, 0);
		local64_set(&st->offcpu_switches, 0);
		local64_set(&st->offcpu_overflow, 0);
		local64_set(&st->offcpu_ns, 0);
		local64_set(&st->alloc_hits, 0);
		local64_set(&st->lock_waits, 0);
		local64_set(&st->lock_overflow, 0);
		local64_set(&st->lock_wakers, 0);
		st->online = false;
	}
}

/* Called with ember_lock held and no session running. */
int ember_session_start(const struct ember_config *req, u32 portid,
			struct net *net, struct netlink_ext_ack *extack)
{
	struct ember_config cfg = *req;
	struct ember_ringset *set;
	int ret;

	set = ember_ringset_alloc(cfg.ring_size, cfg.watermark);
	if (!set) {
		NL_SET_ERR_MSG(extack, "cannot allocate the rings (lower RING_SIZE)");
		return -ENOMEM;
	}
	ret = ember_record_init(&cfg);
	if (ret) {
		ember_ringset_put(set);
		NL_SET_ERR_MSG(extack, "cannot allocate unwind buffers");
		return ret;
	}
	ember_stats_reset();
	/* the last session's rings stay mapped by whoever mapped them */
	ember_ringset_put(ember_cur_set);
	ember_cur_set = set;
	WRITE_ONCE(ember_active_set, set);

	if (cfg.events & EMBER_EV_LIFECYCLE) {
		ret = ember_lifecycle_start(extack);
		if (ret)
			goto fail;
	}
	if (cfg.events & EMBER_EV_OFFCPU) {
		ret = ember_offcpu_start(&cfg, extack);
		if (ret)
			goto fail;
	}
	if (cfg.events & EMBER_EV_LOCK) {
		ret = ember_lock_start(&cfg, extack);
		if (ret)
			goto fail;
	}
	if (cfg.events & EMBER_EV_ONCPU) {
		ret = ember_oncpu_start(&cfg, extack);
		if (ret)
			goto fail;
	}
	if (cfg.events & EMBER_EV_FAULTS) {
		ret = ember_faults_start(&cfg, extack);
		if (ret)
			goto fail;
	}
	ember_cfg = cfg;
	ember_owner_set(portid, net);
	ember_running = true;
	return 0;

fail:
	ember_cfg = cfg;
	ember_running = true;
	ember_session_stop();
	return ret;
}

/*
 * Called with ember_lock held. Idempotent. Allocation probes stop
 * writing here but stay placed: the caller calls ember_alloc_reap() once
 * it has released ember_lock.
 */
void ember_session_stop(void)
{
	if (!ember_running)
		return;
	/* after these return no writer runs any more */
	ember_alloc_stop();
	ember_faults_stop();
	ember_oncpu_stop();
	ember_offcpu_stop();
	ember_lock_stop();
	ember_lifecycle_stop();
	WRITE_ONCE(ember_active_set, NULL);
	ember_ringset_sync(ember_cur_set);
	ember_record_exit();
	ember_filter_clear();
	/* no sampler runs any more: tables and bindings go */
	ember_unwind_clear();
	ember_running = false;
	ember_owner_clear();
	/* let a poller drain what is left */
	wake_up_interruptible_all(&ember_wq);
}

static void ember_release_work_fn(struct work_struct *work)
{
	mutex_lock(&ember_lock);
	if (ember_running && ember_owner_gen() == READ_ONCE(ember_gone_gen)) {
		pr_info("ember: controlling socket closed, stopping session\n");
		ember_session_stop();
	}
	mutex_unlock(&ember_lock);
	ember_alloc_reap();
}

static DECLARE_WORK(ember_release_work, ember_release_work_fn);

static int ember_netlink_event(struct notifier_block *nb, unsigned long event,
			       void *ptr)
{
	struct netlink_notify *n = ptr;
	u32 gen;

	if (event != NETLINK_URELEASE || n->protocol != NETLINK_GENERIC)
		return NOTIFY_DONE;
	if (!ember_owner_is_socket(n->portid, n->net, &gen))
		return NOTIFY_DONE;
	/* stopping sleeps; some kernels call this chain atomically */
	WRITE_ONCE(ember_gone_gen, gen);
	schedule_work(&ember_release_work);
	return NOTIFY_DONE;
}

static struct notifier_block ember_netlink_nb = {
	.notifier_call = ember_netlink_event,
};

int ember_session_init(void)
{
	return netlink_register_notifier(&ember_netlink_nb);
}

void ember_session_exit(void)
{
	netlink_unregister_notifier(&ember_netlink_nb);
	flush_work(&ember_release_work);
	mutex_lock(&ember_lock);
	ember_session_stop();
	ember_ringset_put(ember_cur_set);
	ember_cur_set = NULL;
	mutex_unlock(&ember_lock);
	ember_alloc_reap();
}
