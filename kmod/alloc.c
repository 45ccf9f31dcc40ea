// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation probes: uprobes on the functions through which an in-process
 * sampler (preload/ember_alloc.c) reports the allocations it sampled and
 * the frees of those blocks. The sampler decides what to report, so every
 * hit becomes a record: EMBER_REC_ALLOC (user stack, weight in bytes, the
 * block's address and the size asked for) or EMBER_REC_FREE. A probe may
 * name a __u16 semaphore the kernel raises in every process mapping the
 * file while the probe is attached (uprobe ref_ctr), so the sampler calls
 * nothing while nobody listens.
 *
 * The probes belong to the running session: one ALLOC_ATTACH per session,
 * all its probes placed or none, removed by ALLOC_DETACH, by the session's
 * stop (STOP, the owner's socket closing, module unload) and never
 * outliving it. Placing and removing uprobes sleeps and takes the mmap_lock
 * of the processes that map the file, which ember_dev_mmap() holds while
 * it takes ember_lock: so it happens under ember_alloc_lock, outside
 * ember_lock (order in ember_kmod.h). A session stop, under ember_lock,
 * only switches the probes' records off and queues them; the caller
 * removes them with ember_alloc_reap() once it has dropped ember_lock.
 *
 * The uprobes carry no filter: the semaphore is raised and the breakpoint
 * placed in every process mapping the file, and the handler applies the
 * session's pid/cgroup filter, as every other event source does, so
 * SET_FILTER applies at once.
 */
#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/namei.h>
#include <linux/path.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <asm/ptrace.h>

#include "ember_kmod.h"
#include "alloc.h"

struct ember_alloc_set;

struct ember_alloc_uprobe {
	struct ember_uprobe u;		/* u.uc is what the handler gets */
	struct ember_alloc_set *set;
	u64 offset;
	u64 ref_ctr_offset;
	u32 kind;			/* enum ember_alloc_probe_kind */
	bool registered;		/* ember_alloc_lock */
};

/* The probes of one ALLOC_ATTACH. */
struct ember_alloc_set {
	struct list_head node;		/* on ember_alloc_gone */
	struct path path;		/* pins inode */
	struct inode *inode;		/* the one the uprobes name */
	bool live;			/* handlers write records (READ_ONCE) */
	unsigned int nr;
	struct ember_alloc_uprobe probes[EMBER_MAX_ALLOC_PROBES];
};

/*
 * Lock order: ember_alloc_lock -> mmap_lock -> ember_lock.
 * ember_alloc_lock: uprobe (un)registration and the registered flags.
 * ember_lock: ember_alloc_cur, ember_alloc_gone and switching live on.
 * The handler takes no lock: it runs in the probed task, on its way back
 * to user space, and only reads live with preemption off.
 */
static DEFINE_MUTEX(ember_alloc_lock);
/* the running session's probes (placed, or being placed by ATTACH) */
static struct ember_alloc_set *ember_alloc_cur;
/* stopped sets whose uprobes ember_alloc_reap() removes */
static LIST_HEAD(ember_alloc_gone);

bool ember_alloc_available(void)
{
#ifdef EMBER_HAVE_UPROBE_API
	return IS_ENABLED(CONFIG_UPROBES);
#else
	return false;
#endif
}

static int ember_alloc_handler(EMBER_UPROBE_HANDLER_PROTO)
{
	struct ember_alloc_uprobe *p =
		container_of(self, struct ember_alloc_uprobe, u.uc);
	struct ember_cpu_stats *st;
	u64 now;

	/* the probe kinds take x86_64 ABI arguments */
	if (!user_64bit_mode(regs))
		return 0;
	/*
	 * Preemption stays off from the live check to the end of the ring
	 * write: ember_alloc_stop()'s synchronize_rcu() waits for handlers
	 * in that section before the session frees its scratch buffers.
	 */
	preempt_disable();
	if (!READ_ONCE(p->set->live))
		goto out;
	st = this_cpu_ptr(ember_stats);
	/* filters first: a filtered hit costs no unwinding */
	if (!ember_filter_pass(current)) {
		local64_inc(&st->filtered);
		goto out;
	}
	local64_inc(&st->alloc_hits);
	now = ktime_get_mono_fast_ns();
	/* ember_alloc_probe(ptr, size, weight), ember_free_probe(ptr) */
	if (p->kind == EMBER_PROBE_SAMPLED_ALLOC)
		ember_emit_alloc(regs, now, regs->dx, regs->di, regs->si, st);
	else
		ember_emit_free(now, regs->di, st);
out:
	preempt_enable();
	return 0;
}

/* What needs no file: kinds, reserved fields, alignment, duplicates. */
static int ember_alloc_check_probes(const struct ember_alloc_probe *p,
				    unsigned int nr,
				    struct netlink_ext_ack *extack)
{
	unsigned int i, j;

	for (i = 0; i < nr; i++) {
		if (p[i].kind != EMBER_PROBE_SAMPLED_ALLOC &&
		    p[i].kind != EMBER_PROBE_SAMPLED_FREE) {
			NL_SET_ERR_MSG(extack,
				       "ALLOC_PROBES: unknown probe kind");
			return -EINVAL;
		}
		if (p[i].__reserved) {
			NL_SET_ERR_MSG(extack,
				       "ALLOC_PROBES: __reserved must be 0");
			return -EINVAL;
		}
		/* the kernel updates it as a short, never across pages */
		if (p[i].ref_ctr_offset & 1) {
			NL_SET_ERR_MSG(extack,
				       "ALLOC_PROBES: ref_ctr_offset must be even (a __u16 semaphore)");
			return -EINVAL;
		}
		for (j = 0; j < i; j++) {
			if (p[j].offset == p[i].offset) {
				NL_SET_ERR_MSG(extack,
					       "ALLOC_PROBES: two probes at one offset");
				return -EINVAL;
			}
		}
	}
	return 0;
}

/* Offsets inside the file (uprobe_register() checks only the first). */
static int ember_alloc_check_file(const struct ember_alloc_probe *p,
				  unsigned int nr, struct inode *inode,
				  struct netlink_ext_ack *extack)
{
	u64 size = i_size_read(inode);
	unsigned int i;

	for (i = 0; i < nr; i++) {
		if (p[i].offset >= size) {
			NL_SET_ERR_MSG(extack,
				       "ALLOC_PROBES: offset past the end of the file");
			return -EINVAL;
		}
		if (p[i].ref_ctr_offset && (p[i].ref_ctr_offset >= size ||
					    size - p[i].ref_ctr_offset < 2)) {
			NL_SET_ERR_MSG(extack,
				       "ALLOC_PROBES: ref_ctr_offset past the end of the file");
			return -EINVAL;
		}
	}
	return 0;
}

/* ember_lock held. */
static int ember_alloc_check_session(u32 portid, struct net *net,
				     struct netlink_ext_ack *extack)
{
	int ret = ember_session_check_owner(portid, net, extack);

	if (ret)
		return ret;
	if (!(ember_cfg.events & EMBER_EV_ALLOC)) {
		NL_SET_ERR_MSG(extack,
			       "the session was started without EMBER_EV_ALLOC");
		return -EINVAL;
	}
	if (ember_alloc_cur) {
		NL_SET_ERR_MSG(extack,
			       "allocation probes are already attached: ALLOC_DETACH them first");
		return -EBUSY;
	}
	return 0;
}

/* ember_alloc_lock held. Whether any uprobe was registered. */
static bool ember_alloc_unregister(struct ember_alloc_set *set)
{
	bool any = false;
	unsigned int i;

	for (i = 0; i < set->nr; i++) {
		struct ember_alloc_uprobe *p = &set->probes[i];

		if (!p->registered)
			continue;
		ember_uprobe_unregister_nosync(&p->u);
		p->registered = false;
		any = true;
	}
	return any;
}

/* ember_alloc_lock held: all or none. */
static int ember_alloc_register(struct ember_alloc_set *set,
				struct netlink_ext_ack *extack)
{
	unsigned int i;
	int ret;

	for (i = 0; i < set->nr; i++) {
		struct ember_alloc_uprobe *p = &set->probes[i];

		ret = ember_uprobe_register(&p->u, set->inode, p->offset,
					    p->ref_ctr_offset);
		if (ret) {
			pr_info("ember: no uprobe at %pd+0x%llx (ref_ctr 0x%llx): %d\n",
				set->path.dentry, p->offset,
				p->ref_ctr_offset, ret);
			NL_SET_ERR_MSG(extack,
				       "cannot place a uprobe there (not an instruction, the semaphore not in writable data, or another probe there with another semaphore): see dmesg");
			if (ember_alloc_unregister(set))
				ember_uprobe_sync();
			return ret;
		}
		p->registered = true;
	}
	return 0;
}

/* ember_alloc_lock held: removes the uprobes, then frees the set. */
static void ember_alloc_destroy(struct ember_alloc_set *set)
{
	/* after the sync no handler can still be reading the set */
	if (ember_alloc_unregister(set))
		ember_uprobe_sync();
	path_put(&set->path);
	kfree(set);
}

int ember_alloc_attach(const char *path, const struct ember_alloc_probe *req,
		       unsigned int nr, u32 portid, struct net *net,
		       struct netlink_ext_ack *extack)
{
	struct ember_alloc_set *set;
	struct inode *inode;
	bool queued = false;
	unsigned int i;
	int ret;

	ret = ember_alloc_check_probes(req, nr, extack);
	if (ret)
		return ret;
	set = kzalloc(sizeof(*set), GFP_KERNEL);
	if (!set)
		return -ENOMEM;
	/* outside every lock of ours: a lookup may sleep for long */
	ret = kern_path(path, LOOKUP_FOLLOW, &set->path);
	if (ret) {
		NL_SET_ERR_MSG(extack, "ALLOC_PATH cannot be resolved");
		kfree(set);
		return ret;
	}
	if (!d_is_reg(set->path.dentry)) {
		NL_SET_ERR_MSG(extack, "ALLOC_PATH is not a regular file");
		ret = -EINVAL;
		goto free;
	}
	/*
	 * Processes map the file that holds the data: on overlayfs (a
	 * container's image) that is the inode underneath, as for
	 * tracefs uprobe_events.
	 */
	inode = d_real_inode(set->path.dentry);
	set->inode = inode;
	ret = ember_alloc_check_file(req, nr, inode, extack);
	if (ret)
		goto free;
	set->nr = nr;
	for (i = 0; i < nr; i++) {
		struct ember_alloc_uprobe *p = &set->probes[i];

		p->u.uc.handler = ember_alloc_handler;
		p->set = set;
		p->offset = req[i].offset;
		p->ref_ctr_offset = req[i].ref_ctr_offset;
		p->kind = req[i].kind;
	}

	mutex_lock(&ember_alloc_lock);
	mutex_lock(&ember_lock);
	ret = ember_alloc_check_session(portid, net, extack);
	if (!ret)
		ember_alloc_cur = set;	/* a second ATTACH is refused now */
	mutex_unlock(&ember_lock);
	if (ret)
		goto unlock;

	ret = ember_alloc_register(set, extack);

	mutex_lock(&ember_lock);
	if (ember_alloc_cur != set) {
		/* the session stopped meanwhile and queued the set */
		queued = true;
		if (!ret) {
			NL_SET_ERR_MSG(extack,
				       "the session stopped while the probes were placed");
			ret = -ENOENT;
		}
	} else if (ret) {
		ember_alloc_cur = NULL;
	} else {
		/* records only once every probe is in place */
		WRITE_ONCE(set->live, true);
	}
	mutex_unlock(&ember_lock);
unlock:
	if (ret && !queued)
		ember_alloc_destroy(set);
	mutex_unlock(&ember_alloc_lock);
	if (queued)
		ember_alloc_reap();
	return ret;

free:
	path_put(&set->path);
	kfree(set);
	return ret;
}

/* ember_lock held. */
void ember_alloc_stop(void)
{
	struct ember_alloc_set *set = ember_alloc_cur;

	if (!set)
		return;
	ember_alloc_cur = NULL;
	list_add_tail(&set->node, &ember_alloc_gone);
	if (READ_ONCE(set->live)) {
		WRITE_ONCE(set->live, false);
		/* handlers past the live check run with preemption off */
		synchronize_rcu();
	}
}

int ember_alloc_detach(u32 portid, struct net *net,
		       struct netlink_ext_ack *extack)
{
	int ret;

	mutex_lock(&ember_lock);
	ret = ember_session_check_owner(portid, net, extack);
	if (!ret && !ember_alloc_cur) {
		NL_SET_ERR_MSG(extack, "no allocation probes are attached");
		ret = -ENOENT;
	}
	if (!ret)
		ember_alloc_stop();
	mutex_unlock(&ember_lock);
	if (!ret)
		ember_alloc_reap();
	return ret;
}

void ember_alloc_reap(void)
{
	struct ember_alloc_set *set, *tmp;
	LIST_HEAD(sets);

	might_sleep();
	mutex_lock(&ember_alloc_lock);
	mutex_lock(&ember_lock);
	list_splice_init(&ember_alloc_gone, &sets);
	mutex_unlock(&ember_lock);
	list_for_each_entry_safe(set, tmp, &sets, node) {
		list_del(&set->node);
		ember_alloc_destroy(set);
	}
	mutex_unlock(&ember_alloc_lock);
}
