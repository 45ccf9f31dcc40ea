/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/lifecycle.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * Process lifecycle: EXEC at sched_process_exec (ember_exec_btf/_raw;
 * also drops the old image's unwind binding) and EXIT when the last
 * thread leaves, at sched_process_exit (ember_exit_btf/_raw).
 */
#ifndef EMBER_LIFECYCLE_BPF_H
#define EMBER_LIFECYCLE_BPF_H

#include "common.bpf.h"
#include "filter.bpf.h"
#include "record.bpf.h"
#include "unwind.bpf.h"	/* uw_procs: EXEC drops the binding */

/*
 * Processes whose EXIT was emitted: tgid -> its signal_struct. Every
 * thread that reaches sched_process_exit after the last one dropped
 * signal->live to 0 sees live == 0 (a joined thread is still on its way
 * to the tracepoint when pthread_join returns), so "live == 0" alone gave
 * two EXIT records on the 6.1 VM. The signal_struct tells a reused pid
 * apart. LRU: bounded, and an old entry is only ever needed briefly.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} exited SEC(".maps");

/* EMBER_REC_MMAP records are on (the loader, mmap.bpf.h's hooks) */
const volatile bool mmap_records;

static __always_inline int handle_exec(void *ctx, struct task_struct *p,
				       struct linux_binprm *bprm)
{
	struct ember_bpf_stats *st = get_stats();
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct ember_exec *e;
	struct scratch *sc;
	const char *fn;
	long len;
	__u32 i, end;

	if (!st)
		return 0;
	/* the old image's mappings are gone: never unwind the new one with
	 * them (the agent binds the new image on this record) */
	bpf_map_delete_elem(&uw_procs, &tgid);
	if (!pass_filters(p, tgid))
		return 0;
	sc = get_scratch(EMBER_SLOT_LIFECYCLE);
	if (!sc)
		return 0;
	e = (void *)sc;
	e->hdr.type = EMBER_REC_EXEC;
	e->hdr.__reserved = 0;
	e->time_ns = bpf_ktime_get_ns();
	e->pid = tgid;
	e->tid = BPF_CORE_READ(p, pid);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->__reserved = 0;
	fn = BPF_CORE_READ(bprm, filename);
	len = bpf_probe_read_kernel_str(e->filename, EMBER_BPF_FILENAME_MAX, fn);
	if (len <= 0) {
		e->filename[0] = '\0';
		len = 1;
	}
	len &= EMBER_BPF_FILENAME_MAX - 1;
	e->filename_len = len;
	/* Zero the padding up to the 8-byte boundary. */
	end = (len + 7) & ~7U;
	for (i = 0; i < 7; i++) {
		__u32 off = (len + i) & (EMBER_BPF_FILENAME_MAX - 1);

		if (len + i >= end)
			break;
		((char *)e->filename)[off] = '\0';
	}
	e->hdr.size = sizeof(*e) + end;
	if (e->hdr.size > sizeof(*sc))
		return 0;
	/*
	 * a new program: the agent rebinds its tables and reads its maps as
	 * soon as it can, before a short-lived one is gone. With mapping
	 * records (mmap.bpf.h) it needs no /proc for that, so system-wide
	 * no wake-up per exec: the reader's batches (<= 50 ms) take it, and
	 * an exec storm costs the agent a few wake-ups a second, not three
	 * per process. Under a pid filter (the processes asked for) the
	 * wake-up stays: their tables are bound ~40 ms sooner, which a
	 * program of a few hundred ms shows (check-python's 0.3 s runs lost
	 * up to 10% of their whole chains under load without it).
	 */
	emit_wake(ctx, e, e->hdr.size, st, !mmap_records || filter_pids_on);
	return 0;
}

static __always_inline int handle_exit(void *ctx, struct task_struct *p)
{
	struct ember_bpf_stats *st = get_stats();
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct ember_exit *e;
	struct scratch *sc;
	__u64 sig, *prev_sig;

	/* do_exit() drops signal->live before this tracepoint. */
	if (!st || BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	if (!pass_filters(p, tgid))
		return 0;
	sig = (__u64)BPF_CORE_READ(p, signal);
	if (bpf_map_update_elem(&exited, &tgid, &sig, BPF_NOEXIST)) {
		prev_sig = bpf_map_lookup_elem(&exited, &tgid);
		if (prev_sig && *prev_sig == sig)
			return 0;	/* another thread of it emitted the EXIT */
		bpf_map_update_elem(&exited, &tgid, &sig, BPF_ANY);
	}
	sc = get_scratch(EMBER_SLOT_LIFECYCLE);
	if (!sc)
		return 0;
	e = (void *)sc;
	e->hdr.type = EMBER_REC_EXIT;
	e->hdr.__reserved = 0;
	e->hdr.size = sizeof(*e);
	e->time_ns = bpf_ktime_get_ns();
	e->pid = tgid;
	e->tid = BPF_CORE_READ(p, pid);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->exit_code = BPF_CORE_READ(p, exit_code);
	e->__reserved = 0;
	emit(ctx, e, sizeof(*e), st);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ember_exec_btf, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	return handle_exec(ctx, p, bprm);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(ember_exec_raw, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	return handle_exec(ctx, p, bprm);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ember_exit_btf, struct task_struct *p)
{
	return handle_exit(ctx, p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(ember_exit_raw, struct task_struct *p)
{
	return handle_exit(ctx, p);
}

#endif /* EMBER_LIFECYCLE_BPF_H */
