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
 * Without ALLOC_PID the uprobes carry no filter: the semaphore is raised
 * and the breakpoint placed in every process mapping the file, and the
 * handler applies the session's pid/cgroup filter, as every other event
 * source does, so SET_FILTER applies at once.
 *
 * With ALLOC_PID (needed by the allocator entry points, a library every
 * process maps) a uprobe_consumer filter keeps the breakpoints to that
 * process's address space, so no other process traps; one that got them
 * anyway (a fork copies them) has them removed by its first hit. There
 * every call traps and the handler samples by bytes: a countdown per set
 * and CPU, redrawn from an exponential distribution (mean ALLOC_RATE) at
 * each sample, as preload/ember_alloc.c draws per thread. Sampling each
 * byte with probability 1/rate is memoryless, so it does not matter which
 * thread's bytes a countdown consumes: per CPU needs no table, no lookup
 * and no allocation in the handler. The record is the sampled probe's,
 * with weight 0 (the reader scales by the rate, as for the eBPF backend's
 * entry programs).
 *
 * With ALLOC_INUSE the blocks are followed to their free, as the eBPF
 * backend does. Each entry probe's consumer has a ret_handler too (a
 * uretprobe): a sampled entry parks its size in the set's pend[] slot of
 * its thread, and the return writes the record then, its stack as at the
 * entry (the function's address, then the caller's stack from the return
 * regs), with the address returned, which goes into the set's blocks[]
 * table. ENTRY_FREE probes (free, operator delete) and ENTRY_REALLOC
 * (its old pointer) take addresses out of blocks[] and write EMBER_REC_FREE
 * for them. A set is one address space: addresses alone are the keys.
 * blocks[] is open addressing (EMBER_ALLOC_LIVE_SLOTS, a lookup looks at
 * EMBER_ALLOC_LIVE_PROBE slots from the hash): the many frees of blocks
 * never sampled read it without a lock (a block is returned before any
 * thread can free it, so the entry a free looks for is never being
 * written); changes take blocks_lock. Full there, or a thread's pend[]
 * slot held by another thread, the record is written without an address
 * and with EMBER_SF_ALLOC_UNTRACKED (the reader counts them). Nothing is
 * allocated in the handlers; both tables are allocated at ATTACH.
 */
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/pid.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
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
#include "arch.h"
#include "alloc.h"

struct ember_alloc_set;

#define EMBER_ALLOC_LIVE_BITS	14	/* sampled blocks followed, per set */
#define EMBER_ALLOC_LIVE_SLOTS	BIT(EMBER_ALLOC_LIVE_BITS)
#define EMBER_ALLOC_LIVE_PROBE	32	/* slots a lookup looks at */
#define EMBER_ALLOC_FREED	1	/* a blocks[] slot freed (tombstone) */
#define EMBER_ALLOC_PEND_BITS	8	/* threads in a sampled call at once */
#define EMBER_ALLOC_PEND_SLOTS	BIT(EMBER_ALLOC_PEND_BITS)
/* a slot held this long is a call that never returned: taken over */
#define EMBER_ALLOC_PEND_STALE_NS	NSEC_PER_SEC

/* A sampled call between its entry and its return. */
struct ember_alloc_pend {
	u32 tid;		/* 0: free; taken with cmpxchg */
	u64 since;		/* when it was taken */
	u64 size;
	u64 memptr;		/* posix_memalign: where the address goes */
};

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
	struct list_head node;		/* ember_alloc_sets, then _gone */
	struct path path;		/* pins inode */
	struct inode *inode;		/* the one the uprobes name */
	struct mm_struct *mm;		/* ALLOC_PID's (mmgrab); NULL: all */
	u64 rate;			/* entry probes: mean bytes per sample */
	u64 __percpu *left;		/* entry probes: bytes to the next one */
	struct ember_alloc_pend *pend;	/* ALLOC_INUSE: by thread, or NULL */
	u64 *blocks;			/* ALLOC_INUSE: sampled blocks */
	spinlock_t blocks_lock;		/* changes of blocks[] */
	bool live;			/* handlers write records (READ_ONCE) */
	bool stopped;			/* ember_lock: moved to ember_alloc_gone */
	unsigned int nr;
	struct ember_alloc_uprobe probes[EMBER_MAX_ALLOC_PROBES];
};

/*
 * Lock order: ember_alloc_lock -> mmap_lock -> ember_lock.
 * ember_alloc_lock: uprobe (un)registration and the registered flags.
 * ember_lock: ember_alloc_sets, ember_alloc_gone, stopped, switching live
 * on. The filter and the handler take no lock: the handler runs in the
 * probed task, on its way back to user space, reads live and updates its
 * CPU's countdown with preemption off; the filter reads only what is
 * fixed before registration (mm).
 */
static DEFINE_MUTEX(ember_alloc_lock);
/* the running session's sets (placed, or being placed by ATTACH) */
static LIST_HEAD(ember_alloc_sets);
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

/*
 * -ln(U) x 1024 for U uniform in (0, 1], from a random 32-bit value:
 * bpf/alloc.bpf.h's neg_ln_1024(), so both backends draw alike (bin
 * midpoints of log2(1 + i/16): the mean gap is the rate to 0.02%).
 */
static u64 ember_alloc_neg_ln_1024(u32 r)
{
	static const u16 log2_frac[16] = {
		45, 132, 214, 292, 366, 436, 504, 568,
		629, 689, 745, 800, 853, 904, 953, 1001,
	};
	u32 msb = fls(r | 1) - 1;
	u32 x;

	x = msb >= 4 ? (r >> (msb - 4)) & 15 : (r << (4 - msb)) & 15;
	/* -log2(r / 2^32) = 32 - msb - log2(1 + fraction); x ln 2 */
	return ((32 * 1024 - msb * 1024 - log2_frac[x]) * 710) >> 10;
}

/* Bytes to the next sample: >= 1, rate <= EMBER_MAX_ALLOC_RATE (2^40) */
static u64 ember_alloc_distance(u64 rate)
{
	/* -ln(U) x 1024 < 2^15: no overflow */
	return ((rate * ember_alloc_neg_ln_1024(get_random_u32())) >> 10) + 1;
}

/* The size an allocator entry point was asked for (0: none, or too big). */
static u64 ember_alloc_entry_size(u32 kind, const struct pt_regs *regs)
{
	u64 nmemb, size;

	switch (kind) {
	case EMBER_PROBE_ENTRY_SIZE_RDI:
		return ember_regs_arg(regs, 0);
	case EMBER_PROBE_ENTRY_SIZE_RSI:
		return ember_regs_arg(regs, 1);
	case EMBER_PROBE_ENTRY_SIZE_RDX:
		return ember_regs_arg(regs, 2);
	case EMBER_PROBE_ENTRY_NMEMB_SIZE:
		/*
		 * operands under 2^32 cannot overflow; a calloc of 4G
		 * elements or 4 GiB each is not sampled (as in BPF)
		 */
		nmemb = ember_regs_arg(regs, 0);
		size = ember_regs_arg(regs, 1);
		if ((nmemb | size) >> 32)
			return 0;
		return nmemb * size;
	default:
		return 0;
	}
}

/* An allocator entry point sampled by bytes (realloc too). */
static bool ember_alloc_is_entry(u32 kind)
{
	return (kind >= EMBER_PROBE_ENTRY_SIZE_RDI &&
		kind <= EMBER_PROBE_ENTRY_SIZE_RDX) ||
	       kind == EMBER_PROBE_ENTRY_REALLOC;
}

/* A kind that frees its first argument (ALLOC_INUSE only). */
static bool ember_alloc_frees(u32 kind)
{
	return kind == EMBER_PROBE_ENTRY_FREE ||
	       kind == EMBER_PROBE_ENTRY_REALLOC;
}

/* blocks[] holds addr: take it out. Whether it did. */
static bool ember_alloc_live_take(struct ember_alloc_set *set, u64 addr)
{
	u32 h = hash_64(addr, EMBER_ALLOC_LIVE_BITS);
	bool found = false;
	unsigned int i;

	if (addr <= EMBER_ALLOC_FREED)
		return false;
	for (i = 0; i < EMBER_ALLOC_LIVE_PROBE; i++) {
		u64 *slot = &set->blocks[(h + i) & (EMBER_ALLOC_LIVE_SLOTS - 1)];
		u64 v = READ_ONCE(*slot);

		if (!v)		/* never used: addr is not further on */
			return false;
		if (v != addr)
			continue;
		spin_lock(&set->blocks_lock);
		/* a double free may race with itself: one wins */
		if (*slot == addr) {
			WRITE_ONCE(*slot, EMBER_ALLOC_FREED);
			found = true;
		}
		spin_unlock(&set->blocks_lock);
		return found;
	}
	return false;
}

/* Puts addr in blocks[]; false when its slots are all taken. */
static bool ember_alloc_live_put(struct ember_alloc_set *set, u64 addr)
{
	u32 h = hash_64(addr, EMBER_ALLOC_LIVE_BITS);
	u64 *free_slot = NULL;
	unsigned int i;

	if (addr <= EMBER_ALLOC_FREED)
		return false;
	spin_lock(&set->blocks_lock);
	for (i = 0; i < EMBER_ALLOC_LIVE_PROBE; i++) {
		u64 *slot = &set->blocks[(h + i) & (EMBER_ALLOC_LIVE_SLOTS - 1)];

		if (*slot == addr) {	/* its free was missed: reused */
			free_slot = NULL;
			break;
		}
		if (*slot <= EMBER_ALLOC_FREED && !free_slot)
			free_slot = slot;
		if (!*slot)
			break;
	}
	if (free_slot)
		WRITE_ONCE(*free_slot, addr);
	spin_unlock(&set->blocks_lock);
	return free_slot || i < EMBER_ALLOC_LIVE_PROBE;
}

/*
 * A sampled entry of the current thread: its size parked until the
 * return. False when another thread holds the slot.
 */
static bool ember_alloc_park(struct ember_alloc_set *set, u64 size,
			     u64 memptr, u64 now)
{
	u32 tid = current->pid;
	struct ember_alloc_pend *pd =
		&set->pend[hash_32(tid, EMBER_ALLOC_PEND_BITS)];
	u32 old = READ_ONCE(pd->tid);

	if (old != tid) {
		if (old && now - READ_ONCE(pd->since) < EMBER_ALLOC_PEND_STALE_NS)
			return false;
		if (cmpxchg(&pd->tid, old, tid) != old)
			return false;
	}
	/* the slot is this thread's: only its own return reads these */
	pd->since = now;
	pd->size = size;
	pd->memptr = memptr;
	return true;
}

/* The current thread's parked call, taken out; its size, 0 for none. */
static u64 ember_alloc_unpark(struct ember_alloc_set *set, u64 *memptr)
{
	u32 tid = current->pid;
	struct ember_alloc_pend *pd =
		&set->pend[hash_32(tid, EMBER_ALLOC_PEND_BITS)];
	u64 size;

	if (READ_ONCE(pd->tid) != tid)
		return 0;
	size = pd->size;
	*memptr = pd->memptr;
	/* read before another thread may take the slot and write them */
	smp_store_release(&pd->tid, 0);
	return size;
}

/* Only set for a set with ALLOC_PID: its address space alone. */
static bool ember_alloc_filter(EMBER_UPROBE_FILTER_PROTO)
{
	struct ember_alloc_uprobe *p =
		container_of(self, struct ember_alloc_uprobe, u.uc);

	return p->set->mm == mm;
}

/*
 * A free of a followed block (ALLOC_INUSE): its record. Preemptible:
 * takes the live lock, then preemption off for the ring.
 */
static void ember_alloc_freed(struct ember_alloc_set *set, u64 addr)
{
	struct ember_cpu_stats *st;

	if (!ember_alloc_live_take(set, addr))
		return;
	preempt_disable();
	if (READ_ONCE(set->live)) {
		st = this_cpu_ptr(ember_stats);
		local64_inc(&st->alloc_hits);
		ember_emit_free(ktime_get_mono_fast_ns(), addr, st);
	}
	preempt_enable();
}

static int ember_alloc_handler(EMBER_UPROBE_HANDLER_PROTO)
{
	struct ember_alloc_uprobe *p =
		container_of(self, struct ember_alloc_uprobe, u.uc);
	struct ember_alloc_set *set = p->set;
	struct ember_cpu_stats *st;
	u64 now, size = 0, *left;
	u16 untracked = 0;

	/*
	 * Another process has the breakpoint (a fork of the profiled one
	 * copies it): the filter says no to it, so this takes it out of
	 * that address space, unless another consumer wants it there.
	 */
	if (set->mm && current->mm != set->mm)
		return UPROBE_HANDLER_REMOVE;
	/* the kinds' arguments are in a 64-bit task's registers (arch.h) */
	if (!ember_regs_native(regs))
		return 0;
	/* free(ptr), realloc(ptr, size): only blocks[] is looked at */
	if (set->blocks && ember_alloc_frees(p->kind))
		ember_alloc_freed(set, ember_regs_arg(regs, 0));
	if (p->kind == EMBER_PROBE_ENTRY_FREE)
		return 0;
	if (ember_alloc_is_entry(p->kind)) {
		size = ember_alloc_entry_size(p->kind, regs);
		if (!size)
			return 0;
	}
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
	if (size) {
		/* the byte countdown: most calls end here */
		left = this_cpu_ptr(set->left);
		if (size < *left) {
			*left -= size;
			goto out;
		}
		*left = ember_alloc_distance(set->rate);
	}
	now = ktime_get_mono_fast_ns();
	if (size && set->pend) {
		/* the record waits for the address (the return) */
		if (ember_alloc_park(set, size, p->kind ==
				     EMBER_PROBE_ENTRY_SIZE_RDX ?
				     ember_regs_arg(regs, 0) : 0,
				     now))
			goto out;
		untracked = EMBER_SF_ALLOC_UNTRACKED;
	}
	local64_inc(&st->alloc_hits);
	switch (p->kind) {
	case EMBER_PROBE_SAMPLED_ALLOC:
		/* ember_alloc_probe(ptr, size, weight) */
		ember_emit_alloc(regs, now, ember_regs_arg(regs, 2),
				 ember_regs_arg(regs, 0), ember_regs_arg(regs, 1),
				 st);
		break;
	case EMBER_PROBE_SAMPLED_FREE:
		/* ember_free_probe(ptr) */
		ember_emit_free(now, ember_regs_arg(regs, 0), st);
		break;
	default:
		/* weighed by the reader, not followed to its free */
		ember_emit_alloc_at(regs, 0, now, 0, 0, size, untracked, st);
		break;
	}
out:
	preempt_enable();
	return 0;
}

/*
 * The return of an entry point (ALLOC_INUSE): the thread's parked call,
 * if it was sampled, gets its record now, with the block's address.
 */
static int ember_alloc_ret_handler(EMBER_UPROBE_RET_HANDLER_PROTO)
{
	struct ember_alloc_uprobe *p =
		container_of(self, struct ember_alloc_uprobe, u.uc);
	struct ember_alloc_set *set = p->set;
	struct ember_cpu_stats *st;
	u64 size, memptr = 0, addr;
	u16 untracked = 0;

	/* a fork's copy of a pending return: not the profiled process */
	if (current->mm != set->mm || !ember_regs_native(regs))
		return 0;
	size = ember_alloc_unpark(set, &memptr);
	if (!size)
		return 0;	/* not sampled: most returns end here */
	addr = ember_regs_ret(regs);
	if (memptr) {
		/* posix_memalign returns 0 and stores the address */
		if (addr || copy_from_user_nofault(&addr,
						   (const void __user *)memptr,
						   sizeof(addr)))
			addr = 0;
	}
	if (!addr)
		return 0;	/* nothing was allocated */
	if (!ember_alloc_live_put(set, addr)) {
		untracked = EMBER_SF_ALLOC_UNTRACKED;
		addr = 0;
	}
	preempt_disable();
	if (READ_ONCE(set->live)) {
		st = this_cpu_ptr(ember_stats);
		local64_inc(&st->alloc_hits);
		ember_emit_alloc_at(regs, func, ktime_get_mono_fast_ns(), 0,
				    addr, size, untracked, st);
	}
	preempt_enable();
	return 0;
}

/* What needs no file: kinds, reserved fields, alignment, duplicates. */
static int ember_alloc_check_probes(const struct ember_alloc_probe *p,
				    unsigned int nr, u32 pid, bool inuse,
				    struct netlink_ext_ack *extack)
{
	unsigned int i, j;

	if (inuse && !pid) {
		NL_SET_ERR_MSG(extack, "ALLOC_INUSE needs ALLOC_PID");
		return -EINVAL;
	}
	for (i = 0; i < nr; i++) {
		if (p[i].kind != EMBER_PROBE_SAMPLED_ALLOC &&
		    p[i].kind != EMBER_PROBE_SAMPLED_FREE &&
		    !ember_alloc_is_entry(p[i].kind) &&
		    !ember_alloc_frees(p[i].kind)) {
			NL_SET_ERR_MSG(extack,
				       "ALLOC_PROBES: unknown probe kind");
			return -EINVAL;
		}
		if ((ember_alloc_is_entry(p[i].kind) ||
		     ember_alloc_frees(p[i].kind)) && !pid) {
			/* a library every process maps: all would trap */
			NL_SET_ERR_MSG(extack,
				       "ALLOC_PROBES: allocator entry points need ALLOC_PID");
			return -EINVAL;
		}
		if (ember_alloc_frees(p[i].kind) && !inuse) {
			NL_SET_ERR_MSG(extack,
				       "ALLOC_PROBES: ENTRY_FREE and ENTRY_REALLOC need ALLOC_INUSE");
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

/* ember_lock held: the session's, and a new (file, process). */
static int ember_alloc_check_session(const struct ember_alloc_set *set,
				     u32 portid, struct net *net,
				     struct netlink_ext_ack *extack)
{
	const struct ember_alloc_set *s;
	unsigned int n = 0;
	int ret = ember_owner_check(portid, net, extack);

	if (ret)
		return ret;
	if (!(ember_cfg.events & EMBER_EV_ALLOC)) {
		NL_SET_ERR_MSG(extack,
			       "the session was started without EMBER_EV_ALLOC");
		return -EINVAL;
	}
	list_for_each_entry(s, &ember_alloc_sets, node) {
		if (s->inode == set->inode && s->mm == set->mm) {
			NL_SET_ERR_MSG(extack,
				       "allocation probes are already attached to that file for that process: ALLOC_DETACH them first");
			return -EBUSY;
		}
		n++;
	}
	if (n >= EMBER_MAX_ALLOC_SETS) {
		NL_SET_ERR_MSG(extack,
			       "EMBER_MAX_ALLOC_SETS ALLOC_ATTACHes already: ALLOC_DETACH them first");
		return -ENOSPC;
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

/* What ember_alloc_attach() took, no uprobe registered. */
static void ember_alloc_free(struct ember_alloc_set *set)
{
	if (set->mm)
		mmdrop(set->mm);
	kvfree(set->blocks);
	kvfree(set->pend);
	free_percpu(set->left);
	if (set->path.dentry)
		path_put(&set->path);
	kfree(set);
}

/* ember_alloc_lock held: removes the uprobes, then frees the set. */
static void ember_alloc_destroy(struct ember_alloc_set *set)
{
	/* after the sync no handler can still be reading the set */
	if (ember_alloc_unregister(set))
		ember_uprobe_sync();
	ember_alloc_free(set);
}

/* The address space of process nr (in the caller's pid namespace). */
static struct mm_struct *ember_alloc_pid_mm(u32 nr,
					    struct netlink_ext_ack *extack)
{
	struct task_struct *task;
	struct mm_struct *mm;

	rcu_read_lock();
	task = pid_task(find_vpid(nr), PIDTYPE_TGID);
	if (task)
		get_task_struct(task);
	rcu_read_unlock();
	if (!task) {
		NL_SET_ERR_MSG(extack, "ALLOC_PID: no such process");
		return ERR_PTR(-ESRCH);
	}
	mm = get_task_mm(task);
	put_task_struct(task);
	if (!mm) {
		NL_SET_ERR_MSG(extack,
			       "ALLOC_PID: the process has no address space (exiting, or a kernel thread)");
		return ERR_PTR(-ESRCH);
	}
	/* the struct only, to compare with: not the address space */
	mmgrab(mm);
	mmput(mm);
	return mm;
}

/* ALLOC_INUSE's tables (ember_alloc_free() frees them). */
static int ember_alloc_inuse_init(struct ember_alloc_set *set)
{
	spin_lock_init(&set->blocks_lock);
	set->pend = kvcalloc(EMBER_ALLOC_PEND_SLOTS, sizeof(*set->pend),
			     GFP_KERNEL);
	set->blocks = kvcalloc(EMBER_ALLOC_LIVE_SLOTS, sizeof(*set->blocks),
			       GFP_KERNEL);
	return set->pend && set->blocks ? 0 : -ENOMEM;
}

int ember_alloc_attach(const char *path, const struct ember_alloc_probe *req,
		       unsigned int nr, u32 pid, u64 rate, bool inuse,
		       u32 portid, struct net *net,
		       struct netlink_ext_ack *extack)
{
	struct ember_alloc_set *set;
	struct inode *inode;
	bool queued = false;
	unsigned int i, cpu;
	int ret;

	ret = ember_alloc_check_probes(req, nr, pid, inuse, extack);
	if (ret)
		return ret;
	set = kzalloc(sizeof(*set), GFP_KERNEL);
	if (!set)
		return -ENOMEM;
	if (inuse) {
		ret = ember_alloc_inuse_init(set);
		if (ret)
			goto free;
	}
	set->rate = rate;
	set->left = alloc_percpu(u64);
	if (!set->left) {
		ret = -ENOMEM;
		goto free;
	}
	/* a first distance of its own on every CPU, as after a sample */
	for_each_possible_cpu(cpu) {
		u64 *left = per_cpu_ptr(set->left, cpu);

		*left = ember_alloc_distance(rate);
	}
	if (pid) {
		set->mm = ember_alloc_pid_mm(pid, extack);
		if (IS_ERR(set->mm)) {
			ret = PTR_ERR(set->mm);
			set->mm = NULL;
			goto free;
		}
	}
	/* outside every lock of ours: a lookup may sleep for long */
	ret = kern_path(path, LOOKUP_FOLLOW, &set->path);
	if (ret) {
		NL_SET_ERR_MSG(extack, "ALLOC_PATH cannot be resolved");
		set->path.dentry = NULL;
		goto free;
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
		/* where a sampled call's record gets its address */
		if (inuse && ember_alloc_is_entry(req[i].kind))
			p->u.uc.ret_handler = ember_alloc_ret_handler;
		if (set->mm)
			p->u.uc.filter = ember_alloc_filter;
		p->set = set;
		p->offset = req[i].offset;
		p->ref_ctr_offset = req[i].ref_ctr_offset;
		p->kind = req[i].kind;
	}

	mutex_lock(&ember_alloc_lock);
	mutex_lock(&ember_lock);
	ret = ember_alloc_check_session(set, portid, net, extack);
	if (!ret)	/* the same (file, process) again is refused now */
		list_add_tail(&set->node, &ember_alloc_sets);
	mutex_unlock(&ember_lock);
	if (ret)
		goto unlock;

	ret = ember_alloc_register(set, extack);

	mutex_lock(&ember_lock);
	if (set->stopped) {
		/* the session stopped meanwhile and queued the set */
		queued = true;
		if (!ret) {
			NL_SET_ERR_MSG(extack,
				       "the session stopped while the probes were placed");
			ret = -ENOENT;
		}
	} else if (ret) {
		list_del(&set->node);
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
	ember_alloc_free(set);
	return ret;
}

/* ember_lock held. */
void ember_alloc_stop(void)
{
	struct ember_alloc_set *set;
	bool was_live = false;

	list_for_each_entry(set, &ember_alloc_sets, node) {
		set->stopped = true;
		if (READ_ONCE(set->live)) {
			WRITE_ONCE(set->live, false);
			was_live = true;
		}
	}
	list_splice_tail_init(&ember_alloc_sets, &ember_alloc_gone);
	/* handlers past the live check run with preemption off */
	if (was_live)
		synchronize_rcu();
}

int ember_alloc_detach(u32 portid, struct net *net,
		       struct netlink_ext_ack *extack)
{
	int ret;

	mutex_lock(&ember_lock);
	ret = ember_owner_check(portid, net, extack);
	if (!ret && list_empty(&ember_alloc_sets)) {
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
