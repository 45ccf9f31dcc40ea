/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * Definitions shared by the eBPF programs (bpf/ember.bpf.c and its .bpf.h
 * parts) and their loader (agent/source/source_bpf*.c). It sits in include/ because both sides of
 * that boundary build against it. The records themselves are defined only in
 * include/uapi/ember.h.
 */
#ifndef EMBER_BPF_H
#define EMBER_BPF_H

/* Per-CPU counters (map "stats", one element). */
struct ember_bpf_stats {
	__u64 samples;		/* on-CPU program runs */
	__u64 filtered;		/* samples/switches dropped by filters or idle */
	__u64 records;		/* records handed to the ring */
	__u64 lost;		/* records the ring refused (full) */
	__u64 switches;		/* sched_switch program runs */
	__u64 offcpu_overflow;	/* in-flight table full: interval not tracked */
	__u64 offcpu_stale;	/* a thread left again before its return was seen */
	__u64 offcpu_recovered;	/* of those, emitted with the end recovered
				 * from the thread's CPU time (parked mode) */
	__u64 ustack_cfi;	/* user stacks walked with unwind tables */
	__u64 ustack_fp;	/* ... needing >= 1 frame-pointer step */
	__u64 ustack_cut;	/* ... cut short */
	__u64 unwind_miss;	/* miss records emitted */
	__u64 unwind_miss_limited;	/* misses not reported (rate limit) */
	__u64 alloc_hits;	/* allocation probe runs (EMBER_EV_ALLOC) */
	__u64 alloc_untracked;	/* sampled blocks not followed to their
				 * free: alloc_live was full */
	__u64 lock_waits;	/* futex waits / kernel contentions seen */
	__u64 lock_overflow;	/* in-flight wait table full: wait not followed */
	__u64 lock_wakers;	/* EMBER_REC_LOCK_WAKER written */
};

/*
 * Per-CPU scratch slots. A program that can interrupt another on the same
 * CPU (the perf_event program fires from an hrtimer while a lifecycle
 * program may run with interrupts enabled) must not share its slot.
 * sched_switch runs with interrupts off, so nothing nests inside it.
 */
enum ember_bpf_slot {
	EMBER_SLOT_ONCPU,
	EMBER_SLOT_OFFCPU,
	EMBER_SLOT_LIFECYCLE,
	EMBER_SLOT_ALLOC,	/* uprobes: task context, preemptible */
	EMBER_SLOT_FAULT,	/* page-fault tracepoints: inside any program's
				 * faulting user read, the perf one's too */
	/*
	 * -e lock (bpf/lock.bpf.h), one slot per program kind, because each
	 * can run on top of another on the same CPU: the futex syscall-exit
	 * program (task context; perf tracepoint programs never nest in one
	 * another) can be interrupted by an IRQ whose wake-up runs
	 * sched_waking, or whose spinlock contention runs contention_end;
	 * contention_end also fires inside another contention_end (task,
	 * then IRQ, on one CPU). The kernel and waker slots carry a per-CPU
	 * busy flag as well: a run that finds its slot in use is dropped.
	 */
	EMBER_SLOT_LOCK,	/* futex / futex_waitv syscall exit */
	EMBER_SLOT_LOCK_KERNEL,	/* lock:contention_end, any context */
	EMBER_SLOT_LOCK_WAKER,	/* sched_waking, any context */
	EMBER_NR_SLOTS,
};

/* Frames a scratch slot can hold: both stacks at their maximum, plus the
 * one extra frame asked for to detect truncation, for each kind. */
#define EMBER_BPF_SCRATCH_FRAMES	(2 * (EMBER_MAX_FRAMES + 1))

/* Longest exec filename recorded (longer ones are cut, still NUL-ended). */
#define EMBER_BPF_FILENAME_MAX		4096

/* CFI unwinding (bpf/unwind.bpf.h): bounds of its maps. */
#define EMBER_BPF_MAX_MAPPINGS		256	/* per process, power of two */
#define EMBER_BPF_MAX_TABLES		4096	/* files with a table loaded */
#define EMBER_BPF_MAX_PROCS		1024	/* processes bound, whole system */
#define EMBER_BPF_FEW_PROCS		128	/* ... with a pid filter */
#define EMBER_BPF_MAX_PROCS_LIMIT	65536
/* default pool sizes (entries); the loader may size them otherwise */
#define EMBER_BPF_POOL_PAGES		(1U << 16)	/* 4 GiB of text */
#define EMBER_BPF_POOL_ROWS		(2U << 20)	/* 8 MiB */
#define EMBER_BPF_POOL_RULES		(1U << 18)	/* 2 MiB */

/* Default number of threads that can be off CPU and tracked at once. */
#define EMBER_BPF_INFLIGHT_DEFAULT	4096

/* -e lock: threads followed at once in a futex wait, in a kernel lock wait */
#define EMBER_BPF_LOCK_FUTEX_DEFAULT	8192
#define EMBER_BPF_LOCK_KERNEL_DEFAULT	4096

#endif /* EMBER_BPF_H */
