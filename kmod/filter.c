// SPDX-License-Identifier: GPL-2.0
/*
 * Which tasks are profiled: a set of thread-group ids and/or a cgroup v2
 * subtree. Checked first in every sampling path, before any unwinding, so
 * profiling one service costs only that service. When both are given a
 * task must match both. Readers run in hardirq/NMI/tracepoint context under
 * RCU; writers replace the whole filter and free the old one after a grace
 * period.
 */
#include <linux/bsearch.h>
#include <linux/cgroup.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/sort.h>

#include "ember_kmod.h"

struct ember_filter {
	struct rcu_head rcu;
	u64 cgroup_id;		/* 0: any cgroup */
	unsigned int nr_pids;	/* 0: any process */
	u32 pids[];		/* sorted */
};

static struct ember_filter __rcu *ember_filter;

static int ember_cmp_u32(const void *a, const void *b)
{
	u32 x = *(const u32 *)a, y = *(const u32 *)b;

	return x < y ? -1 : x > y;
}

static void ember_filter_replace(struct ember_filter *f)
{
	struct ember_filter *old;

	old = rcu_replace_pointer(ember_filter, f, true);
	if (old)
		kfree_rcu(old, rcu);
}

int ember_filter_set(const u32 *pids, unsigned int nr_pids, u64 cgroup_id)
{
	struct ember_filter *f;

	if (!nr_pids && !cgroup_id) {
		ember_filter_clear();
		return 0;
	}
	f = kzalloc(struct_size(f, pids, nr_pids), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	f->cgroup_id = cgroup_id;
	f->nr_pids = nr_pids;
	memcpy(f->pids, pids, nr_pids * sizeof(u32));
	sort(f->pids, nr_pids, sizeof(u32), ember_cmp_u32, NULL);
	ember_filter_replace(f);
	return 0;
}

void ember_filter_clear(void)
{
	ember_filter_replace(NULL);
}

/* The task's cgroup v2 id; 0 without cgroups. Any context. */
u64 ember_task_cgroup_id(struct task_struct *t)
{
	u64 id = 0;

#ifdef CONFIG_CGROUPS
	rcu_read_lock();
	id = cgroup_id(task_dfl_cgroup(t));
	rcu_read_unlock();
#endif
	return id;
}

/* Walks up the task's cgroup v2 ancestry; the hierarchy is shallow. */
static bool ember_in_cgroup(struct task_struct *t, u64 id)
{
#ifdef CONFIG_CGROUPS
	struct cgroup *cgrp;

	for (cgrp = task_dfl_cgroup(t); cgrp; cgrp = cgroup_parent(cgrp))
		if (cgroup_id(cgrp) == id)
			return true;
#endif
	return false;
}

bool ember_filter_pass(struct task_struct *t)
{
	struct ember_filter *f;
	bool pass = true;
	u32 tgid = t->tgid;

	rcu_read_lock();
	f = rcu_dereference(ember_filter);
	if (f) {
		if (f->nr_pids && !bsearch(&tgid, f->pids, f->nr_pids,
					   sizeof(u32), ember_cmp_u32))
			pass = false;
		else if (f->cgroup_id && !ember_in_cgroup(t, f->cgroup_id))
			pass = false;
	}
	rcu_read_unlock();
	return pass;
}
