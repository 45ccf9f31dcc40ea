/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/lock.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * Lock contention (EMBER_EV_LOCK, include/uapi/ember.h):
 *   ember_futex_enter / ember_waitv_enter (syscalls/sys_enter_futex,
 *     sys_enter_futex_waitv; perf tracepoint programs): a WAIT-type futex
 *     call notes its start in lock_futex (tid -> wait);
 *   ember_futex_exit (sys_exit_futex and sys_exit_futex_waitv, one
 *     program on both): the wait is over; one EMBER_REC_LOCK with the
 *     waiter's user stack (the call site that waited) when it lasted
 *     lock_min_ns;
 *   ember_lock_begin_* / ember_lock_end_* (lock:contention_begin/_end,
 *     5.19+, tp_btf or raw_tp): the same for kernel locks, lock_kernel,
 *     with the kernel stack too;
 *   ember_waking_* (sched_waking, with EMBER_F_LOCK_WAKER): in the
 *     waker's context, one EMBER_REC_LOCK_WAKER with its stacks when the
 *     woken thread is in a wait already lock_min_ns long, and the wait
 *     notes who woke it.
 * The tables are preallocated hashes (no allocation in these hooks); a
 * wait that finds its table full is counted in lock_overflow and not
 * followed.
 */
#ifndef EMBER_LOCK_BPF_H
#define EMBER_LOCK_BPF_H

#include "common.bpf.h"
#include "filter.bpf.h"
#include "record.bpf.h"
#include "stack.bpf.h"

/* futex(2) commands (op & FUTEX_CMD_MASK); stable UAPI values */
#define FUTEX_WAIT_		0
#define FUTEX_LOCK_PI_		6
#define FUTEX_WAIT_BITSET_	9
#define FUTEX_WAIT_REQUEUE_PI_	11
#define FUTEX_LOCK_PI2_		13
#define FUTEX_CMD_MASK_		(~(128 | 256))	/* PRIVATE, CLOCK_REALTIME */
/* errors a futex wait ends with when no waker ended it */
#define ETIMEDOUT_		110
#define EINTR_			4
#define ERESTARTSYS_		512
#define ERESTARTNOINTR_		513
#define ERESTARTNOHAND_		514
#define ERESTART_RESTARTBLOCK_	516

/* Set by the loader before load (frozen: the verifier sees constants). */
const volatile __u64 lock_min_ns;
const volatile bool lock_waker;		/* EMBER_F_LOCK_WAKER */

/* One wait in flight, per thread. */
struct lock_wait {
	__u64 start_ns;		/* 0: no wait (an entry kept for reuse) */
	__u64 addr;
	__u32 waker_tid;	/* set once, by the first waker */
	__u32 nest;		/* kernel: contention_begin inside this one */
	__u8 kind;
	__u8 futex_op;
	__u16 flags;
	__u32 __pad;
};

/*
 * A wait taken out of its table to be emitted, per CPU and scratch slot:
 * off the program's stack, which with the walks' global functions under
 * it must stay within 512 bytes on 5.10-6.12 (uw_regs_buf likewise).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_NR_SLOTS);
	__type(key, __u32);
	__type(value, struct lock_wait);
} lock_wait_out SEC(".maps");

/* tid -> futex wait (sys_enter .. sys_exit). Sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_BPF_LOCK_FUTEX_DEFAULT);
	__type(key, __u32);
	__type(value, struct lock_wait);
} lock_futex SEC(".maps");

/* tid -> kernel lock wait (contention_begin .. _end). Sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_BPF_LOCK_KERNEL_DEFAULT);
	__type(key, __u32);
	__type(value, struct lock_wait);
} lock_kernel SEC(".maps");

/* Slots in use on this CPU (see enum ember_bpf_slot). */
struct lock_busy {
	__u32 kernel, waker;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lock_busy);
} lock_busy SEC(".maps");

/* The syscall tracepoints' records (fixed layout: trace event format). */
struct futex_enter_ctx {
	__u64 common;
	__s32 nr;
	__u32 __pad;
	__u64 uaddr;
	__u64 op;
	__u64 val;
	__u64 utime;
	__u64 uaddr2;
	__u64 val3;
};

struct waitv_enter_ctx {
	__u64 common;
	__s32 nr;
	__u32 __pad;
	__u64 waiters;		/* struct futex_waitv __user * */
	__u64 nr_futexes;
};

struct sys_exit_ctx {
	__u64 common;
	__s32 nr;
	__u32 __pad;
	__s64 ret;
};

/* struct futex_waitv (UAPI): the address is its second word */
#define FUTEX_WAITV_UADDR_OFF	8

/* Note the start of a futex wait by the current thread. */
static __always_inline void futex_wait_start(__u64 addr, __u8 kind, __u8 op)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct task_struct *task = (void *)bpf_get_current_task();
	struct ember_bpf_stats *st = get_stats();
	struct lock_wait w = {
		.addr = addr,
		.kind = kind,
		.futex_op = op,
	};

	if (!st || tid == 0)
		return;
	if (!pass_filters(task, tgid)) {
		st->filtered++;
		return;
	}
	w.start_ns = bpf_ktime_get_ns();
	/* BPF_ANY: a leftover entry of this tid (a wait whose exit was not
	 * seen) is simply replaced */
	if (bpf_map_update_elem(&lock_futex, &tid, &w, BPF_ANY)) {
		st->lock_overflow++;
		return;
	}
	st->lock_waits++;
}

SEC("tracepoint/syscalls/sys_enter_futex")
int ember_futex_enter(struct futex_enter_ctx *ctx)
{
	__u32 cmd = (__u32)ctx->op & FUTEX_CMD_MASK_;
	__u8 kind;

	switch (cmd) {
	case FUTEX_WAIT_:
	case FUTEX_WAIT_BITSET_:
	case FUTEX_WAIT_REQUEUE_PI_:
		kind = EMBER_LOCK_FUTEX;
		break;
	case FUTEX_LOCK_PI_:
	case FUTEX_LOCK_PI2_:
		kind = EMBER_LOCK_FUTEX_PI;
		break;
	default:
		return 0;	/* wakes, requeues, unlocks: not a wait */
	}
	futex_wait_start(ctx->uaddr, kind, cmd);
	return 0;
}

/* futex_waitv(2), 5.16+: addr is the first waiter's */
SEC("tracepoint/syscalls/sys_enter_futex_waitv")
int ember_waitv_enter(struct waitv_enter_ctx *ctx)
{
	__u64 addr = 0;

	if (ctx->nr_futexes == 0)
		return 0;
	/* unreadable (bad pointer): the syscall fails at once, addr 0 */
	bpf_probe_read_user(&addr, sizeof(addr),
			    (void *)(ctx->waiters + FUTEX_WAITV_UADDR_OFF));
	futex_wait_start(addr, EMBER_LOCK_FUTEX_WAITV, FUTEX_WAIT_);
	return 0;
}

/*
 * ips[nk + nu] onwards: the 3 words of struct ember_lock_wait (or _waker),
 * given as words; hdr.size grows by them. 0, or -1 when they do not fit.
 */
static __always_inline int put_trailer(struct scratch *sc, __u64 w0, __u64 w1,
				       __u64 w2)
{
	struct ember_sample *s = (void *)sc;
	__u32 at = s->nr_kernel + s->nr_user;

	if (at > EMBER_BPF_SCRATCH_FRAMES - 3)
		return -1;
	sc->raw[SCRATCH_IPS + at] = w0;
	sc->raw[SCRATCH_IPS + at + 1] = w1;
	sc->raw[SCRATCH_IPS + at + 2] = w2;
	s->hdr.size += 3 * sizeof(__u64);
	return s->hdr.size > sizeof(*sc) ? -1 : 0;
}

/* struct ember_lock_wait's last word: waker_tid, kind, futex_op, flags */
static __always_inline __u64 wait_word(__u32 waker_tid, __u8 kind, __u8 op,
				       __u16 flags)
{
	return (__u64)waker_tid | (__u64)kind << 32 | (__u64)op << 40 |
	       (__u64)flags << 48;
}

/*
 * The waiter's EMBER_REC_LOCK in scratch slot sc: the current thread's
 * stacks (kernel ones for kernel locks only: a futex record's kernel
 * stack would be the syscall exit path), then the trailer; emitted.
 */
static __always_inline void emit_wait(void *ctx, struct scratch *sc,
				      __u32 slot, const struct lock_wait *w,
				      __u64 now, __u16 flags,
				      struct ember_bpf_stats *st)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	struct ember_sample *s = (void *)sc;
	bool kthread = BPF_CORE_READ(task, flags) & PF_KTHREAD;
	bool kernel = w->kind == EMBER_LOCK_KERNEL;
	__u32 waker = w->waker_tid;
	__u64 size;

	if (flags & (EMBER_LOCK_F_TIMEOUT | EMBER_LOCK_F_INTR))
		waker = 0;	/* the waker, if any, is an orphan */
	fill_common(s, EMBER_REC_LOCK, now, id >> 32, (__u32)id);
	s->weight_ns = now - w->start_ns;
	s->flags = fill_stacks(ctx, s, kernel, !kthread, slot, NULL);
	if (kernel)
		s->flags |= EMBER_SF_IN_KERNEL;
	if (kthread)
		s->flags |= EMBER_SF_KTHREAD;
	if (put_trailer(sc, w->addr, w->start_ns,
			wait_word(waker, w->kind, w->futex_op, flags)))
		return;
	size = s->hdr.size;
	if (size > sizeof(*sc))
		return;
	emit(ctx, s, size, st);
}

/* sys_exit of futex and futex_waitv: the wait is over. */
SEC("tracepoint/syscalls/sys_exit_futex")
int ember_futex_exit(struct sys_exit_ctx *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ember_bpf_stats *st;
	struct lock_wait *v, *w;
	struct scratch *sc;
	__s64 ret = ctx->ret;
	__u32 key = tid;	/* one stack slot for both keys: see lock_wait_out */
	__u64 now;
	__u16 flags = 0;

	v = bpf_map_lookup_elem(&lock_futex, &key);
	key = EMBER_SLOT_LOCK;
	w = bpf_map_lookup_elem(&lock_wait_out, &key);
	if (!v || !w)
		return 0;
	now = bpf_ktime_get_ns();
	*w = *v;
	key = tid;
	bpf_map_delete_elem(&lock_futex, &key);
	if (!w->start_ns || now - w->start_ns < lock_min_ns)
		return 0;
	if (ret == -ETIMEDOUT_)
		flags = EMBER_LOCK_F_TIMEOUT;
	else if (ret == -EINTR_ || ret == -ERESTARTSYS_ ||
		 ret == -ERESTARTNOINTR_ || ret == -ERESTARTNOHAND_ ||
		 ret == -ERESTART_RESTARTBLOCK_)
		flags = EMBER_LOCK_F_INTR;
	st = get_stats();
	/* perf tracepoint programs never nest on a CPU: the slot is free */
	sc = get_scratch(EMBER_SLOT_LOCK);
	if (!st || !sc)
		return 0;
	emit_wait(ctx, sc, EMBER_SLOT_LOCK, w, now, flags, st);
	return 0;
}

/* Stable kernel value not in BTF (a #define). */
#define LCB_F_MASK_		0x3fU

/* mm_struct's mmap_lock was mmap_sem before 5.8 (no contention
 * tracepoints there either); only its address is needed. */
static __always_inline __u64 mmap_lock_addr(void)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);

	if (!mm || !bpf_core_field_exists(mm->mmap_lock))
		return 0;
	return (__u64)mm + bpf_core_field_offset(struct mm_struct, mmap_lock);
}

static __always_inline struct lock_busy *get_busy(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&lock_busy, &zero);
}

/*
 * Contention seen while this CPU is inside the ring's lock for one of our
 * records, or inside our own contention_end program (an IRQ's spinlock
 * under it: the kernel skips the nested contention_end run as recursion,
 * so its begin must not count either, or the thread's entry would stay
 * nested for good): ignored.
 */
static __always_inline bool lock_ignore(struct lock_busy *busy)
{
	__u32 zero = 0, *n = bpf_map_lookup_elem(&emitting, &zero);

	return (n && *n) || !busy || busy->kernel;
}

static __always_inline int handle_contention_begin(__u64 lock, __u32 lcb)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct task_struct *task = (void *)bpf_get_current_task();
	struct ember_bpf_stats *st;
	struct lock_wait *v, w = {};
	__u16 flags = lcb & LCB_F_MASK_;

	if (tid == 0 || lock_ignore(get_busy()))
		return 0;
	v = bpf_map_lookup_elem(&lock_kernel, &tid);
	if (v && v->start_ns && v->addr != lock) {
		/* nested (an IRQ's spinlock inside this thread's wait): the
		 * inner one and its end are ignored */
		v->nest++;
		return 0;
	}
	if (v && v->start_ns) {
		/* the same lock again: a mutex that spun and now sleeps. The
		 * wait began at the first begin; only its kind changes */
		v->flags = (v->flags & EMBER_LOCK_F_MMAP_LOCK) | flags;
		return 0;
	}
	/* (the same lock again: the end of the one noted was never seen) */
	st = get_stats();
	if (!st)
		return 0;
	if (!pass_filters(task, tgid)) {
		st->filtered++;
		return 0;
	}
	if (lock && lock == mmap_lock_addr())
		flags |= EMBER_LOCK_F_MMAP_LOCK;
	if (v) {
		/* an entry left by an end whose delete failed: reuse it,
		 * start_ns last (a waker reads it first) */
		v->start_ns = 0;
		v->addr = lock;
		v->waker_tid = 0;
		v->nest = 0;
		v->kind = EMBER_LOCK_KERNEL;
		v->futex_op = 0;
		v->flags = flags;
		v->start_ns = bpf_ktime_get_ns();
		st->lock_waits++;
		return 0;
	}
	w.addr = lock;
	w.kind = EMBER_LOCK_KERNEL;
	w.flags = flags;
	w.start_ns = bpf_ktime_get_ns();
	if (bpf_map_update_elem(&lock_kernel, &tid, &w, BPF_NOEXIST)) {
		st->lock_overflow++;
		return 0;
	}
	st->lock_waits++;
	return 0;
}

static __always_inline void contention_end(void *ctx, __u64 lock, __u32 tid)
{
	struct ember_bpf_stats *st;
	struct lock_wait *v, *w;
	__u32 key = tid;	/* one stack slot for both keys: see lock_wait_out */
	struct scratch *sc;
	__u64 now;

	v = bpf_map_lookup_elem(&lock_kernel, &key);
	if (!v || !v->start_ns)
		return;
	/* an inner end; or the noted lock's, should an inner end have been
	 * missed (the wait is then whole anyway) */
	if (v->nest && v->addr != lock) {
		v->nest--;
		return;
	}
	if (v->addr != lock)
		return;	/* not the wait noted: its begin was missed */
	key = EMBER_SLOT_LOCK_KERNEL;
	w = bpf_map_lookup_elem(&lock_wait_out, &key);
	if (!w)
		return;
	now = bpf_ktime_get_ns();
	*w = *v;
	v->start_ns = 0;	/* done, should the delete fail */
	key = tid;
	bpf_map_delete_elem(&lock_kernel, &key);
	if (now - w->start_ns < lock_min_ns)
		return;
	st = get_stats();
	sc = get_scratch(EMBER_SLOT_LOCK_KERNEL);
	if (!st || !sc)
		return;
	emit_wait(ctx, sc, EMBER_SLOT_LOCK_KERNEL, w, now, w->flags, st);
}

static __always_inline int handle_contention_end(void *ctx, __u64 lock)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct lock_busy *busy = get_busy();

	if (tid == 0 || lock_ignore(busy) || !busy)
		return 0;
	/* the slot, and the begin/end of anything under us, are ours */
	busy->kernel = 1;
	contention_end(ctx, lock, tid);
	busy->kernel = 0;
	return 0;
}

SEC("tp_btf/contention_begin")
int BPF_PROG(ember_lock_begin_btf, void *lock, unsigned int flags)
{
	return handle_contention_begin((__u64)lock, flags);
}

SEC("raw_tp/contention_begin")
int BPF_PROG(ember_lock_begin_raw, void *lock, unsigned int flags)
{
	return handle_contention_begin((__u64)lock, flags);
}

SEC("tp_btf/contention_end")
int BPF_PROG(ember_lock_end_btf, void *lock, int ret)
{
	return handle_contention_end(ctx, (__u64)lock);
}

SEC("raw_tp/contention_end")
int BPF_PROG(ember_lock_end_raw, void *lock, int ret)
{
	return handle_contention_end(ctx, (__u64)lock);
}

/*
 * In the waker's context, p about to be woken. Only when p is in a
 * followed wait already lock_min_ns long that has no waker yet: the
 * waker's stacks as EMBER_REC_LOCK_WAKER, and the wait notes its tid.
 * The kernel wait first: a futex syscall can block on a kernel lock, and
 * that is what is being woken then.
 *
 * Two wakers never both write for one wait: sched_waking fires in
 * try_to_wake_up() under p->pi_lock, after the check that p still sleeps
 * (ttwu_state_match), so wake-ups of one p are serialized and only the
 * first one that finds it asleep gets here; the one exception, p waking
 * itself (p == current, no pi_lock), is skipped below. That holds on
 * every kernel from 5.10 (which has no BPF cmpxchg) on, so the check and
 * the write need no atomic.
 * A waker in IRQ context (a timeout's hrtimer, a signal sent from an
 * interrupt) is the interrupted task: its record is written, and the
 * wait usually ends with -ETIMEDOUT or -EINTR, so its EMBER_REC_LOCK
 * carries no waker_tid and the reader drops the orphan. Not always: when
 * a real FUTEX_WAKE on another CPU dequeues the waiter while its timer
 * fires, the wait returns 0 and keeps the interrupted task as its waker.
 * The module checks in_task(); here that needs preempt_count through a
 * per-CPU ksym, left for later (docs/NOTES.md).
 */
static __always_inline int handle_waking(void *ctx, struct task_struct *p)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	__u32 ptid = BPF_CORE_READ(p, pid);
	struct task_struct *task;
	struct ember_bpf_stats *st;
	struct lock_busy *busy;
	struct ember_sample *s;
	struct lock_wait *v;
	struct scratch *sc;
	__u64 now, start, addr, size;
	bool kthread;

	if (tid == 0 || ptid == 0 || ptid == tid)
		return 0;
	v = bpf_map_lookup_elem(&lock_kernel, &ptid);
	if (!v || !v->start_ns)
		v = bpf_map_lookup_elem(&lock_futex, &ptid);
	if (!v || v->waker_tid)
		return 0;
	start = v->start_ns;
	now = bpf_ktime_get_ns();
	if (!start || now < start || now - start < lock_min_ns)
		return 0;
	addr = v->addr;
	st = get_stats();
	busy = get_busy();
	sc = get_scratch(EMBER_SLOT_LOCK_WAKER);
	if (!st || !busy || !sc)
		return 0;
	if (busy->waker) {
		st->lost++;
		return 0;
	}
	/* the element may have been freed and taken for another thread's
	 * wait since the lookup (preallocated hash): its start tells */
	if (v->start_ns != start || v->addr != addr)
		return 0;
	v->waker_tid = tid;
	busy->waker = 1;
	task = (void *)bpf_get_current_task();
	kthread = BPF_CORE_READ(task, flags) & PF_KTHREAD;
	s = (void *)sc;
	fill_common(s, EMBER_REC_LOCK_WAKER, now, tgid, tid);
	s->weight_ns = now - start;
	s->flags = fill_stacks(ctx, s, true, !kthread, EMBER_SLOT_LOCK_WAKER,
			       NULL);
	if (kthread)
		s->flags |= EMBER_SF_KTHREAD;
	s->flags |= EMBER_SF_IN_KERNEL;
	if (!put_trailer(sc, start, addr,
			 (__u64)BPF_CORE_READ(p, tgid) | (__u64)ptid << 32)) {
		size = s->hdr.size;
		if (size <= sizeof(*sc)) {
			st->lock_wakers++;
			emit(ctx, s, size, st);
		}
	}
	busy->waker = 0;
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(ember_waking_btf, struct task_struct *p)
{
	return handle_waking(ctx, p);
}

SEC("raw_tp/sched_waking")
int BPF_PROG(ember_waking_raw, struct task_struct *p)
{
	return handle_waking(ctx, p);
}

#endif /* EMBER_LOCK_BPF_H */
