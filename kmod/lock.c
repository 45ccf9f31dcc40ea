// SPDX-License-Identifier: GPL-2.0
/*
 * Lock contention (EMBER_EV_LOCK): futex waits from the raw syscall
 * tracepoints, kernel lock contention from lock:contention_begin/_end
 * (5.19+), and with EMBER_F_LOCK_WAKER the thread that woke a waiter,
 * from sched_waking.
 *
 * A wait starts at sys_enter of a waiting futex operation (or futex_waitv)
 * or at contention_begin: the thread parks start time, address, kind and
 * flags in a fixed table of in-flight waits (one for futex waits, one for
 * kernel contention: a thread may wait for a kernel lock inside a futex
 * syscall). At sys_exit / contention_end the wait is measured and, if it
 * lasted lock_min_ns, one EMBER_REC_LOCK is written with the waiter's
 * stack at that point. Nothing is allocated in these paths; a full table
 * is counted in LOCK_OVERFLOW.
 *
 * sched_waking runs in the waker. It reads another thread's slot while
 * that thread may be ending its wait, so each slot carries a sequence
 * number (odd: a wait is published) read before and after the snapshot,
 * and the waker claims the wait with a cmpxchg on `wake`, tagged with that
 * sequence; the waiter closes `wake` with an xchg before it writes its
 * record. A waker that loses any of these races writes nothing.
 */
#include <linux/compat.h>
#include <linux/errno.h>
#include <linux/futex.h>
#include <linux/hash.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <asm/syscall.h>
#include <trace/events/sched.h>
#include <trace/events/syscalls.h>

#include "ember_kmod.h"

#define EMBER_LOCK_SLOTS_MIN	64U
#define EMBER_LOCK_SLOTS_MAX	(1024U * 1024)
#define EMBER_LOCK_WINDOW	8	/* slots tried per thread */
#define EMBER_WAKE_CLOSED	U64_MAX

static unsigned int ember_lock_slots = 4096;
module_param_named(lock_slots, ember_lock_slots, uint, 0444);
MODULE_PARM_DESC(lock_slots,
		 "threads whose futex waits (and, apart, kernel lock contentions) are followed at once (64..1048576, rounded up to a power of two)");

struct ember_lock_slot {
	u32 tid;	/* 0: free; claimed with cmpxchg by the waiter */
	/* odd while a wait is published; only the owner changes it */
	u32 seq;
	/*
	 * 0, (seq << 32 | waker tid) once a waker record is written,
	 * EMBER_WAKE_CLOSED when the wait ends
	 */
	u64 wake;
	u64 start_ns;
	u64 addr;
	u16 flags;	/* EMBER_LOCK_F_* */
	u8 kind;	/* enum ember_lock_kind */
	u8 futex_op;
	u32 __pad;
};

struct ember_lock_table {
	struct ember_lock_slot *slots;
	unsigned int mask;
};

static struct ember_lock_table ember_futex_tbl, ember_kern_tbl;
static u64 ember_min_ns;
static struct tracepoint *ember_tp_enter, *ember_tp_exit, *ember_tp_waking;
static struct tracepoint *ember_tp_cbegin, *ember_tp_cend;

/*
 * The architecture: syscall numbers and arguments. Native syscalls only,
 * numbered by the target's own <asm/unistd.h> (x86-64: futex 202,
 * futex_waitv 449; arm64: 98, 449) and read with its <asm/syscall.h>;
 * a 32-bit (compat) task's futex calls have other numbers and are not
 * followed.
 */
static bool ember_is_waitv_nr(long nr)
{
	/* -1 is also what a syscall skipped by seccomp or ptrace shows */
	return EMBER_NR_FUTEX_WAITV >= 0 && nr == EMBER_NR_FUTEX_WAITV;
}

static bool ember_is_futex_nr(long nr)
{
	return nr == __NR_futex || ember_is_waitv_nr(nr);
}

static bool ember_native_syscall(void)
{
	return !in_compat_syscall();
}

/* ---- the in-flight tables ---- */

static struct ember_lock_slot *ember_lslot(struct ember_lock_table *t,
					   unsigned int i)
{
	return &t->slots[i & t->mask];
}

/* The owner's own slot (only the owner writes its tid into one). */
static struct ember_lock_slot *ember_lock_find(struct ember_lock_table *t,
					       u32 tid)
{
	unsigned int h = hash_32(tid, 32), i;
	struct ember_lock_slot *s;

	for (i = 0; i < EMBER_LOCK_WINDOW; i++) {
		s = ember_lslot(t, h + i);
		if (READ_ONCE(s->tid) == tid)
			return s;
	}
	return NULL;
}

/* The owner's slot, or a free one claimed; NULL: the window is full. */
static struct ember_lock_slot *ember_lock_claim(struct ember_lock_table *t,
						u32 tid)
{
	unsigned int h = hash_32(tid, 32), i;
	struct ember_lock_slot *s;

	s = ember_lock_find(t, tid);
	if (s)
		return s;
	for (i = 0; i < EMBER_LOCK_WINDOW; i++) {
		s = ember_lslot(t, h + i);
		if (!READ_ONCE(s->tid) && cmpxchg(&s->tid, 0, tid) == 0)
			return s;
	}
	return NULL;
}

/* Owner: no wait published (seq even) before the fields change. */
static void ember_lock_unpublish(struct ember_lock_slot *s)
{
	u32 seq = s->seq;

	if (seq & 1) {
		WRITE_ONCE(s->seq, seq + 1);
		/* even seq before the fields change (ember_wake_one) */
		smp_wmb();
	}
}

static void ember_lock_publish(struct ember_lock_slot *s, u64 now, u64 addr,
			       u8 kind, u8 op, u16 flags)
{
	ember_lock_unpublish(s);	/* a wait whose end was never seen */
	s->start_ns = now;
	s->addr = addr;
	s->kind = kind;
	s->futex_op = op;
	s->flags = flags;
	WRITE_ONCE(s->wake, 0);
	/* the fields above are visible before the odd seq */
	smp_store_release(&s->seq, s->seq + 1);
}

static void ember_lock_release(struct ember_lock_slot *s)
{
	ember_lock_unpublish(s);
	/* our accesses to the slot complete before another thread claims it */
	smp_store_release(&s->tid, 0);
}

/* Starts following a wait of current; filters and counts it. */
static void ember_wait_begin(struct ember_lock_table *t, u64 addr, u8 kind,
			     u8 op, u16 flags)
{
	struct ember_cpu_stats *st = this_cpu_ptr(ember_stats);
	struct ember_lock_slot *s;

	if (!ember_filter_pass(current))
		return;
	s = ember_lock_claim(t, current->pid);
	if (!s) {
		local64_inc(&st->lock_overflow);
		return;
	}
	local64_inc(&st->lock_waits);
	ember_lock_publish(s, ktime_get_mono_fast_ns(), addr, kind, op, flags);
}

/*
 * The end of current's wait in s: the record when it lasted long enough.
 * kfirst: the probe's frame for a kernel stack, or NULL.
 */
static void ember_wait_end(struct ember_lock_slot *s, u16 end_flags,
			   const void *kfirst)
{
	struct ember_cpu_stats *st = this_cpu_ptr(ember_stats);
	u64 now = ktime_get_mono_fast_ns();
	struct ember_lock_wait w;
	u64 wake;

	if (!(s->seq & 1))
		goto release;
	/* no waker can claim this wait any more */
	wake = xchg(&s->wake, EMBER_WAKE_CLOSED);
	/* signed: the fast clock read on another CPU may be a little behind */
	if ((s64)(now - s->start_ns) < (s64)ember_min_ns)
		goto release;
	memset(&w, 0, sizeof(w));
	w.addr = s->addr;
	w.start_ns = s->start_ns;
	w.kind = s->kind;
	w.futex_op = s->futex_op;
	w.flags = s->flags | end_flags;
	if (!end_flags && wake != EMBER_WAKE_CLOSED &&
	    (u32)(wake >> 32) == s->seq)
		w.waker_tid = (u32)wake;
	ember_emit_lock(&w, kfirst, now, now - s->start_ns, st);
release:
	ember_lock_release(s);
}

/* ---- futex waits ---- */

/* FUTEX_* command -> kind; EMBER_LOCK_NONE for operations that wake */
static u8 ember_futex_kind(unsigned int cmd)
{
	switch (cmd) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
	case FUTEX_WAIT_REQUEUE_PI:
		return EMBER_LOCK_FUTEX;
	case FUTEX_LOCK_PI:
	case 13:	/* FUTEX_LOCK_PI2, 5.14+ headers */
		return EMBER_LOCK_FUTEX_PI;
	default:
		return EMBER_LOCK_NONE;
	}
}

/* futex_waitv(2): the first waiter's address, 0 when unreadable */
static u64 ember_waitv_addr(unsigned long uwaiters)
{
	u64 addr = 0;

	/* struct futex_waitv { u64 val; u64 uaddr; u32 flags, __reserved; } */
	if (copy_from_user_nofault(&addr,
				   (const void __user *)(uwaiters + 8),
				   sizeof(addr)))
		return 0;
	return addr;
}

static void ember_futex_enter(struct pt_regs *regs, long id)
{
	unsigned long args[6];
	unsigned int cmd;
	u8 kind;

	if (!ember_native_syscall())
		return;
	syscall_get_arguments(current, regs, args);
	if (ember_is_waitv_nr(id)) {
		ember_wait_begin(&ember_futex_tbl, ember_waitv_addr(args[0]),
				 EMBER_LOCK_FUTEX_WAITV, 0, 0);
		return;
	}
	cmd = args[1] & FUTEX_CMD_MASK;
	kind = ember_futex_kind(cmd);
	if (kind != EMBER_LOCK_NONE)
		ember_wait_begin(&ember_futex_tbl, args[0], kind, cmd, 0);
}

/*
 * Syscall tracepoints may call their probes preemptible (faultable
 * tracepoints, 6.13+); the per-CPU stats and scratch buffers want
 * preemption off, whatever the kernel does.
 */
static void ember_sys_enter(void *data, struct pt_regs *regs, long id)
{
	if (!ember_is_futex_nr(id))
		return;
	preempt_disable_notrace();
	ember_futex_enter(regs, id);
	preempt_enable_notrace();
}

static u16 ember_end_flags(long ret)
{
	switch (ret) {
	case -ETIMEDOUT:
		return EMBER_LOCK_F_TIMEOUT;
	case -EINTR:
	case -ERESTARTSYS:
	case -ERESTARTNOINTR:
	case -ERESTARTNOHAND:
	case -ERESTART_RESTARTBLOCK:
		return EMBER_LOCK_F_INTR;
	default:
		return 0;
	}
}

static void ember_sys_exit(void *data, struct pt_regs *regs, long ret)
{
	struct ember_lock_slot *s;

	if (!ember_is_futex_nr(syscall_get_nr(current, regs)) ||
	    !ember_native_syscall())
		return;
	preempt_disable_notrace();
	s = ember_lock_find(&ember_futex_tbl, current->pid);
	if (s)
		ember_wait_end(s, ember_end_flags(ret), NULL);
	preempt_enable_notrace();
}

/* ---- kernel lock contention (5.19+) ---- */

static void ember_contention_begin(void *data, void *lock, unsigned int flags)
{
	struct ember_lock_slot *s;
	u16 f = flags & EMBER_LOCK_F_KERNEL_MASK;
	struct mm_struct *mm = current->mm;

	/* per thread: contention in interrupts is not this thread's wait */
	if (!in_task() || !current->pid)
		return;
	if (mm && lock == (void *)&mm->mmap_lock)
		f |= EMBER_LOCK_F_MMAP_LOCK;
	/*
	 * Nested (a mutex's optimistic spin, then its sleep; an rwsem's
	 * wait_lock): the outer wait goes on. The same lock again says how
	 * the wait goes on (a mutex that stopped spinning): only the owner
	 * reads flags.
	 */
	s = ember_lock_find(&ember_kern_tbl, current->pid);
	if (s && (READ_ONCE(s->seq) & 1)) {
		if (s->addr == (unsigned long)lock)
			s->flags = f;
		return;
	}
	ember_wait_begin(&ember_kern_tbl, (unsigned long)lock,
			 EMBER_LOCK_KERNEL, 0, f);
}

static void ember_contention_end(void *data, void *lock, int ret)
{
	struct ember_lock_slot *s;

	if (!in_task() || !current->pid)
		return;
	s = ember_lock_find(&ember_kern_tbl, current->pid);
	/* the end of an ignored inner contention */
	if (!s || s->addr != (unsigned long)lock)
		return;
	ember_wait_end(s, ret ? EMBER_LOCK_F_INTR : 0,
		       __builtin_frame_address(0));
}

/* ---- wakers ---- */

/*
 * p's wait in t, if it is published and long enough: claims it for
 * current as its waker and writes the waker record. false: p has no wait
 * in t (the caller tries the other table).
 */
static bool ember_wake_one(struct ember_lock_table *t, struct task_struct *p,
			   u64 now, const void *kfirst)
{
	unsigned int h = hash_32(p->pid, 32), i;
	struct ember_lock_waker w;
	struct ember_lock_slot *s = NULL;
	u64 start = 0, addr = 0, wake = 0;
	u32 seq = 0;

	for (i = 0; i < EMBER_LOCK_WINDOW; i++) {
		s = ember_lslot(t, h + i);
		/* the fields are read after seq: pairs with ember_lock_publish() */
		seq = smp_load_acquire(&s->seq);
		if (!(seq & 1) || READ_ONCE(s->tid) != p->pid)
			continue;
		start = READ_ONCE(s->start_ns);
		addr = READ_ONCE(s->addr);
		wake = READ_ONCE(s->wake);
		/* fields before seq again (ember_lock_unpublish's wmb) */
		smp_rmb();
		if (READ_ONCE(s->seq) != seq)
			return true;	/* it is ending: no waker */
		break;
	}
	if (i == EMBER_LOCK_WINDOW)
		return false;
	/* signed: a wait published after now was read starts after it */
	if ((s64)(now - start) < (s64)ember_min_ns || wake == EMBER_WAKE_CLOSED ||
	    (wake && (u32)(wake >> 32) == seq))
		return true;
	if (cmpxchg(&s->wake, wake, (u64)seq << 32 | current->pid) != wake)
		return true;
	/* a tag on a reused slot carries an old seq and is ignored */
	if (READ_ONCE(s->seq) != seq)
		return true;
	w.start_ns = start;
	w.addr = addr;
	w.waiter_pid = p->tgid;
	w.waiter_tid = p->pid;
	ember_emit_lock_waker(&w, kfirst, now, now - start,
			      this_cpu_ptr(ember_stats));
	local64_inc(&this_cpu_ptr(ember_stats)->lock_wakers);
	return true;
}

static void ember_sched_waking(void *data, struct task_struct *p)
{
	u64 now;

	if (!in_task() || !current->pid || is_idle_task(current) ||
	    !p->pid || p == current)
		return;
	now = ktime_get_mono_fast_ns();
	/* a kernel lock's wake-up is for the innermost wait */
	if (ember_kern_tbl.slots &&
	    ember_wake_one(&ember_kern_tbl, p, now,
			   __builtin_frame_address(0)))
		return;
	ember_wake_one(&ember_futex_tbl, p, now, __builtin_frame_address(0));
}

/* ---- start and stop ---- */

int ember_lock_check_params(void)
{
	if (ember_lock_slots < EMBER_LOCK_SLOTS_MIN ||
	    ember_lock_slots > EMBER_LOCK_SLOTS_MAX) {
		pr_err("ember: lock_slots must be in [%u, %u]\n",
		       EMBER_LOCK_SLOTS_MIN, EMBER_LOCK_SLOTS_MAX);
		return -EINVAL;
	}
	return 0;
}

/* At load: what this kernel can follow (EMBER_CAP_LOCK_*). */
u64 ember_lock_caps(void)
{
	u64 caps = 0;

	if (!ember_find_tracepoint("sys_enter") ||
	    !ember_find_tracepoint("sys_exit") ||
	    !ember_find_tracepoint("sched_waking"))
		return 0;
	caps |= EMBER_CAP_LOCK_FUTEX;
	if (EMBER_NR_FUTEX_WAITV >= 0)
		caps |= EMBER_CAP_LOCK_WAITV;
	if (EMBER_LOCK_CONTENTION &&
	    ember_find_tracepoint("contention_begin") &&
	    ember_find_tracepoint("contention_end"))
		caps |= EMBER_CAP_LOCK_KERNEL;
	return caps;
}

static int ember_table_alloc(struct ember_lock_table *t)
{
	t->mask = roundup_pow_of_two(ember_lock_slots) - 1;
	/* its size is the administrator's choice: a failure is no kernel bug */
	t->slots = __vmalloc(array_size((size_t)t->mask + 1, sizeof(*t->slots)),
			     GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN);
	return t->slots ? 0 : -ENOMEM;
}

static void ember_table_free(struct ember_lock_table *t)
{
	vfree(t->slots);
	t->slots = NULL;
}

/* Registers fn on the tracepoint named name; *slot set once it is on. */
static int ember_lock_attach(struct tracepoint **slot, const char *name,
			     void *fn, struct netlink_ext_ack *extack)
{
	struct tracepoint *tp = ember_find_tracepoint(name);
	int ret;

	if (!tp) {
		NL_SET_ERR_MSG(extack, "a lock tracepoint is missing");
		return -EOPNOTSUPP;
	}
	ret = tracepoint_probe_register(tp, fn, NULL);
	if (ret) {
		NL_SET_ERR_MSG(extack, "cannot attach to a lock tracepoint");
		return ret;
	}
	*slot = tp;
	return 0;
}

static void ember_lock_detach(struct tracepoint **slot, void *fn)
{
	if (*slot)
		tracepoint_probe_unregister(*slot, fn, NULL);
	*slot = NULL;
}

static void ember_lock_detach_all(void)
{
	ember_lock_detach(&ember_tp_enter, ember_sys_enter);
	ember_lock_detach(&ember_tp_exit, ember_sys_exit);
	ember_lock_detach(&ember_tp_cbegin, ember_contention_begin);
	ember_lock_detach(&ember_tp_cend, ember_contention_end);
	ember_lock_detach(&ember_tp_waking, ember_sched_waking);
	/* no probe runs once this returns: the tables can go */
	tracepoint_synchronize_unregister();
	ember_table_free(&ember_futex_tbl);
	ember_table_free(&ember_kern_tbl);
}

/*
 * The wakers' probe goes on first and the waits' last, so a wait is never
 * followed without the probes that end it; on failure everything that was
 * attached comes off again.
 */
int ember_lock_start(const struct ember_config *cfg,
		     struct netlink_ext_ack *extack)
{
	bool kernel = ember_caps & EMBER_CAP_LOCK_KERNEL;
	int ret;

	/* the prototypes must match this kernel's tracepoints */
	check_trace_callback_type_sys_enter(ember_sys_enter);
	check_trace_callback_type_sys_exit(ember_sys_exit);
	check_trace_callback_type_sched_waking(ember_sched_waking);
	ember_check_contention_probes(ember_contention_begin,
				      ember_contention_end);

	if (!(ember_caps & EMBER_CAP_LOCK_FUTEX)) {
		NL_SET_ERR_MSG(extack, "this kernel has no syscall tracepoints: no lock profile");
		return -EOPNOTSUPP;
	}
	ember_min_ns = cfg->lock_min_ns;
	if (ember_table_alloc(&ember_futex_tbl) ||
	    (kernel && ember_table_alloc(&ember_kern_tbl))) {
		NL_SET_ERR_MSG(extack,
			       "cannot allocate the lock tables (lower the lock_slots parameter)");
		ret = -ENOMEM;
		goto fail;
	}
	if (cfg->flags & EMBER_F_LOCK_WAKER) {
		ret = ember_lock_attach(&ember_tp_waking, "sched_waking",
					ember_sched_waking, extack);
		if (ret)
			goto fail;
	}
	if (kernel) {
		ret = ember_lock_attach(&ember_tp_cend, "contention_end",
					ember_contention_end, extack);
		if (!ret)
			ret = ember_lock_attach(&ember_tp_cbegin,
						"contention_begin",
						ember_contention_begin, extack);
		if (ret)
			goto fail;
	}
	ret = ember_lock_attach(&ember_tp_exit, "sys_exit", ember_sys_exit,
				extack);
	if (!ret)
		ret = ember_lock_attach(&ember_tp_enter, "sys_enter",
					ember_sys_enter, extack);
	if (ret)
		goto fail;
	return 0;

fail:
	ember_lock_detach_all();
	return ret;
}

void ember_lock_stop(void)
{
	if (!ember_futex_tbl.slots)
		return;
	ember_lock_detach_all();
}
