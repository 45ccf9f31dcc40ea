/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * Definitions shared by the eBPF programs (ember.bpf.c) and their loader
 * (agent/source_bpf.c). The records themselves are defined only in
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
	EMBER_NR_SLOTS,
};

/* Frames a scratch slot can hold: both stacks at their maximum, plus the
 * one extra frame asked for to detect truncation, for each kind. */
#define EMBER_BPF_SCRATCH_FRAMES	(2 * (EMBER_MAX_FRAMES + 1))

/* Longest exec filename recorded (longer ones are cut, still NUL-ended). */
#define EMBER_BPF_FILENAME_MAX		4096

/* Default number of threads that can be off CPU and tracked at once. */
#define EMBER_BPF_INFLIGHT_DEFAULT	4096

#endif /* EMBER_BPF_H */
