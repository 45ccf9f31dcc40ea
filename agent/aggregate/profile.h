/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The aggregated, symbolized profile: what every output writer reads
 * (output_folded.c, output_svg.c, output_pprof.c, output_otlp.c).
 *
 * aggregate.c builds it: raw records are aggregated by identical stack while
 * recording (bounded memory), then symbolized once per unique address and
 * frozen into this read-only shape. Writers never touch records, rings or
 * ELF files.
 */
#ifndef EMBER_PROFILE_H
#define EMBER_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include "uapi/ember.h"

enum prof_event {
	PROF_EV_CPU,		/* on-CPU samples */
	PROF_EV_OFFCPU,		/* off-CPU intervals */
	PROF_EV_FAULTS,		/* sampled page faults: weight in bytes */
	PROF_EV_ALLOC,		/* sampled allocations: bytes, count objects */
	PROF_EV_INUSE,		/* of those, not freed yet: bytes, objects */
	PROF_EV_LOCK,		/* contended lock waits: count, delay in ns */
	PROF_EV__COUNT,
};

enum prof_frame_kind {
	PROF_FRAME_KERNEL,
	PROF_FRAME_NATIVE,
	PROF_FRAME_JIT,		/* from /tmp/perf-PID.map */
	PROF_FRAME_UNKNOWN,	/* no mapping, or nothing resolved */
	PROF_FRAME_PYTHON,	/* a CPython frame (EMBER_IP_PY): function is
				 * co_qualname, source_file co_filename */
};

/*
 * One frame of a frozen profile, as the symbolizer resolved it (freezing
 * copies its struct sym_frame into this). Strings are interned: equal
 * strings have equal pointers, and they live as long as the symbolizer
 * the profile was built with.
 */
struct prof_frame {
	enum prof_frame_kind kind;
	const char *function;	/* demangled; NULL when unresolved */
	const char *module;	/* file path, "[kernel.kallsyms]" or module name */
	const char *build_id;	/* hex GNU build-id, NULL when none */
	const char *source_file;	/* NULL without DWARF line info */
	uint32_t line;
	bool inlined;		/* an inline frame inside the next one */
	uint64_t address;	/* the address looked up */
	uint64_t module_offset;	/* file offset of address in module */
	uint64_t map_start, map_end, map_pgoff;	/* the mapping, if any */
};

/* A process that contributed samples. */
struct prof_process {
	uint32_t pid;
	const char *comm;	/* process name (thread-group leader's comm) */
	const char *exe_path;	/* /proc/PID/exe at first sight, NULL if unknown */
	const char *exe_build_id;	/* hex, NULL if none */
	uint64_t cgroup_id;
	const char *cgroup_path;	/* v2 path, NULL if unknown */
	const char *container_id;	/* from the cgroup path, NULL if none */
};

/*
 * One unique (thread, event, stack). frames[] is leaf first and already
 * expanded: an inlined call contributes one frame per inline level. Kernel
 * frames (kind PROF_FRAME_KERNEL) come before user frames, as on the stack.
 */
struct prof_sample {
	const struct prof_process *process;
	uint32_t tid;
	const char *thread_name;	/* the thread's comm */
	enum prof_event event;
	uint32_t nr_frames;
	const struct prof_frame *const *frames;
	uint64_t count;		/* samples, off-CPU intervals or fault samples;
				 * objects allocated (PROF_EV_ALLOC, _INUSE);
				 * contentions (PROF_EV_LOCK) */
	uint64_t weight_ns;	/* sum of periods, of off-CPU time, or bytes
				 * faulted in (PROF_EV_FAULTS), allocated or
				 * in use (PROF_EV_ALLOC, _INUSE); the time
				 * waited (PROF_EV_LOCK) */
	/* Up to nr_timestamps CLOCK_REALTIME sample times (bounded, may be 0). */
	uint32_t nr_timestamps;
	const uint64_t *timestamps_ns;
	/* PROF_EV_OFFCPU: how the thread left the CPU (enum
	 * ember_offcpu_state; EMBER_STATE_NONE when the backend did not say).
	 * Last: fixtures initialize the fields above by position. */
	uint8_t offcpu_state;
	/*
	 * PROF_EV_LOCK: which lock. frames[] then holds, leaf first, the
	 * waker's "[waker COMM]" frame and its stack root first (when one was
	 * joined: lock_waker), the lock's frame (prof_lock_frame_name()),
	 * then the waiter's stack: folded output shows waiter root .. leaf,
	 * [lock ...], waker leaf .. root, [waker COMM], as offwaketime does.
	 */
	uint64_t lock_addr;	/* futex uaddr or kernel lock address */
	const char *lock_kind;	/* "mutex", "rwlock", "condvar", "rwsem-write"... */
	const char *lock_name;	/* kernel lock's symbol ("mmap_lock"), or NULL */
	uint16_t lock_flags;	/* EMBER_LOCK_F_* */
	bool lock_waker;	/* frames[] starts with the waker's */
	/*
	 * lock_addr is not an address but a per-run id: a kernel lock's
	 * address would give away the kernel's layout (KASLR) to whoever
	 * reads the profile, so it is replaced by a keyed hash of it.
	 */
	bool lock_addr_is_id;
};

struct prof_meta {
	const char *host_name;
	const char *backend;		/* "kmod" or "bpf" */
	uint32_t events;		/* bit (1 << enum prof_event) per event recorded */
	uint32_t freq_hz;		/* on-CPU sampling frequency */
	uint64_t period_ns;		/* 1e9 / freq_hz */
	uint32_t fault_period;		/* page faults per PROF_EV_FAULTS sample */
	uint64_t alloc_rate;		/* bytes between PROF_EV_ALLOC samples */
	/* sampled blocks whose free could not be followed (table full) */
	uint64_t inuse_untracked;
	uint64_t start_ns, end_ns;	/* CLOCK_REALTIME */
	uint64_t samples[PROF_EV__COUNT];	/* records aggregated per event */
	uint64_t lost;			/* records the producers dropped */
	uint64_t bad_records;		/* corrupt or unknown records skipped */
	uint64_t dropped_stacks;	/* not aggregated: memory bound reached */
	/*
	 * On-CPU samples whose timer fired late, and the periods they
	 * stand for beyond their own (ember_sample.periods); late_applied:
	 * those periods are in the samples' counts and values (the kernel
	 * keeps no steal out of CPU time), else only reported.
	 */
	uint64_t late_samples, late_periods;
	bool late_applied;
	/*
	 * Samples whose user stack was cut short: the CFI unwinder could not
	 * go on (EMBER_SF_USER_CUT), or a frame-pointer walk through code
	 * built without frame pointers read data as a return address. Their
	 * root frame is prof_cut_frame.
	 */
	uint64_t cut_user_stacks;
	/*
	 * Of those, the samples whose unwinder stopped without a fault but
	 * whose root is not an outermost function (_start, clone, a thread
	 * start...) and that no CFI proved complete, or that went through a
	 * return address outside every mapping: a frame-pointer walk that
	 * stopped early, most often before a process's tables were bound.
	 */
	uint64_t unproven_user_stacks;
	/*
	 * --stack-copy (unwind/stack_replay.h): user-stack copies the
	 * backend wrote and their bytes, samples whose user stack the
	 * agent's replay of the copy replaced, samples left as walked
	 * (process gone, copy lost, nothing better found), copies pushed
	 * out before their sample came, samples past the replay's time
	 * budget (left as walked), and the time the replay took.
	 */
	bool stack_copy_on;
	uint64_t stack_copies, stack_copy_bytes, stack_replayed;
	uint64_t stack_replay_kept, stack_copy_dropped;
	uint64_t stack_replay_skipped;	/* over the replay's time budget */
	uint64_t stack_replay_ns;	/* the agent's time replaying */
	uint64_t stack_replay_python;	/* replayed with Python frames put back */
	uint64_t stack_replay_tables;	/* copies walked with ember's tables */
	uint64_t stack_replay_libdwfl;	/* ... with libdwfl (tables could not tell) */
	uint64_t stack_replay_built;	/* tables the replay built (unseen files) */
	/*
	 * -e lock: waits joined with their waker's record, waits whose waker
	 * record never came (aggregated without it), waker records whose
	 * wait never came or kept none (a timeout), and waker records
	 * evicted from the bounded pending table.
	 */
	uint64_t lock_wakers_joined, lock_waker_missing;
	uint64_t lock_waker_orphans, lock_waker_evicted;
	uint64_t lock_min_ns;		/* shorter waits were not recorded */
	/*
	 * Folded and SVG output end off-CPU stacks with a frame naming the
	 * wait state ([sleeping], [disk], [preempted]: --off-cpu-state).
	 */
	bool offcpu_state_frames;
	/* the root frames of folded and SVG output (--group-by) */
	enum prof_group_by {
		PROF_GROUP_PROCESS,	/* comm (the default) */
		PROF_GROUP_CONTAINER,	/* container or cgroup, then comm */
		PROF_GROUP_NONE,	/* no root: every process merged */
	} group_by;
};

struct profile {
	struct prof_meta meta;
	size_t nr_processes;
	const struct prof_process *processes;
	size_t nr_samples;
	const struct prof_sample *samples;
};

/*
 * The frame at the root of a user stack that was cut short (the unwinder
 * found no rule, a bad frame, or a return address outside the process's
 * code): counted in meta.cut_user_stacks, shown as this name.
 */
#define PROF_CUT_FRAME "[cut]"
extern const struct prof_frame prof_cut_frame;

/* By name, so writers built without the builder recognise it too. */
static inline bool prof_frame_is_cut(const struct prof_frame *f)
{
	return f && f->kind == PROF_FRAME_UNKNOWN && f->function &&
	       !strcmp(f->function, PROF_CUT_FRAME);
}

/*
 * An off-CPU state as outputs name it: "preempted" (runnable), "sleeping"
 * (interruptible wait), "disk" (uninterruptible, D: mostly I/O), "other"
 * (stopped, traced); NULL for EMBER_STATE_NONE. Inline, so writers built
 * without the builder have it too.
 */
static inline const char *prof_offcpu_state_name(uint8_t state)
{
	switch (state) {
	case EMBER_STATE_RUNNABLE:
		return "preempted";
	case EMBER_STATE_SLEEPING:
		return "sleeping";
	case EMBER_STATE_UNINTERRUPTIBLE:
		return "disk";
	case EMBER_STATE_OTHER:
		return "other";
	default:
		return NULL;
	}
}

/*
 * The frame between a lock wait's waiter and waker stacks:
 * "[lock 0x7f12... mutex]", "[lock mmap_lock rwsem-write]". Into buf.
 */
static inline const char *prof_lock_frame_name(const struct prof_sample *s,
					       char *buf, size_t len)
{
	const char *kind = s->lock_kind ? s->lock_kind : "lock";

	if (s->lock_name && s->lock_name[0])
		snprintf(buf, len, "[lock %s %s]", s->lock_name, kind);
	else if (s->lock_addr_is_id)
		snprintf(buf, len, "[lock #%08llx %s]",
			 (unsigned long long)s->lock_addr, kind);
	else
		snprintf(buf, len, "[lock 0x%llx %s]",
			 (unsigned long long)s->lock_addr, kind);
	return buf;
}

#define PROF_GROUP_NAME_MAX	4112	/* a cgroup path (PATH_MAX) and "[cgroup ]" */

/*
 * The group frame of a sample under --group-by container: "[container
 * ID]" (12 characters of the id, as docker ps shows), else "[cgroup
 * PATH]", else "[host]" (the root cgroup or unknown). Into buf.
 */
static inline const char *prof_group_name(const struct prof_process *p,
					  char *buf, size_t len)
{
	if (p && p->container_id && p->container_id[0])
		snprintf(buf, len, "[container %.12s]", p->container_id);
	else if (p && p->cgroup_path && p->cgroup_path[0] &&
		 strcmp(p->cgroup_path, "/"))
		snprintf(buf, len, "[cgroup %s]", p->cgroup_path);
	else
		snprintf(buf, len, "[host]");
	return buf;
}

/*
 * A lock wait's kind as outputs name it: kernel locks by their flags
 * ("mutex", "rwsem-write", "spinlock"...), "pi-mutex", "waitv", and other
 * futex waits by the first function of the waiter's user stack that
 * tells (frames leaf first): "mutex", "rwlock", "condvar", "semaphore",
 * "barrier", else "futex". Defined in profile_freeze.c.
 */
const char *prof_lock_kind(uint8_t kind, uint16_t flags,
			   const struct prof_frame *const *frames, size_t nr);

/*
 * How an output shows a frame: function name, else "file+0xoff", else
 * "0xaddr"; a Python frame as "qualname (file.py:line)" (the file's base
 * name; its line when known).
 */
const char *prof_frame_label(const struct profile *p, const struct prof_frame *f);

#endif /* EMBER_PROFILE_H */
