// SPDX-License-Identifier: GPL-2.0
/*
 * Process lifecycle records for the agent: EMBER_REC_EXEC once a new image
 * is in place (so it can read the new mappings at once) and EMBER_REC_EXIT
 * when the last thread of a process is gone (so it can forget the process).
 * Same filters as the samples.
 */
#include <linux/atomic.h>
#include <linux/binfmts.h>
#include <linux/hash.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <trace/events/sched.h>

#include "ember_kmod.h"

static struct tracepoint *ember_tp_exec, *ember_tp_exit;

/*
 * Processes whose EXIT was just emitted. Every thread that reaches
 * sched_process_exit after the last one dropped signal->live to 0 sees
 * live == 0 (a joined thread is still on its way to the tracepoint when
 * pthread_join returns; exit_group makes all threads race there), so
 * "live == 0" alone gave some processes two EXIT records. The first
 * thread swaps its process's key into a slot chosen by tgid; a second
 * thread finding the same key there is a duplicate. The key mixes the
 * signal_struct, shared by the threads of one process only, with the
 * tgid, so a signal_struct reused by the next process from the slab is
 * not mistaken for the last one. A slot taken over by another exiting
 * process in between can at worst let one duplicate through.
 */
#define EMBER_EXITED_BITS	10
static atomic_long_t ember_exited[1 << EMBER_EXITED_BITS];

static bool ember_exit_first(struct task_struct *p)
{
	unsigned long key = (unsigned long)p->signal ^
			    ((unsigned long)p->tgid * GOLDEN_RATIO_PRIME);
	u32 h = hash_32(p->tgid, EMBER_EXITED_BITS);

	return atomic_long_xchg(&ember_exited[h], key) != key;
}

/* Tracepoint probes run with preemption off; stay on this CPU anyway. */
static void ember_exec_emit(struct task_struct *p, struct linux_binprm *bprm)
{
	struct ember_cpu_stats *st = this_cpu_ptr(ember_stats);
	unsigned int level;
	struct ember_exec *r;
	size_t len;

	r = ember_scratch_get(&level);
	if (!r) {
		local64_inc(&st->lost);
		return;
	}
	/* the scratch slot holds far more than PATH_MAX */
	len = strnlen(bprm->filename, PATH_MAX - 1) + 1;
	r->hdr.type = EMBER_REC_EXEC;
	r->hdr.__reserved = 0;
	r->hdr.size = ALIGN(sizeof(*r) + len, 8);
	r->time_ns = ktime_get_mono_fast_ns();
	r->pid = p->tgid;
	r->tid = p->pid;
	memcpy(r->comm, p->comm, EMBER_COMM_LEN);
	r->comm[EMBER_COMM_LEN - 1] = '\0';
	r->filename_len = len;
	r->__reserved = 0;
	memcpy(r->filename, bprm->filename, len - 1);
	/* NUL and zero padding: no stale scratch bytes reach user space */
	memset(r->filename + len - 1, 0, r->hdr.size - sizeof(*r) - len + 1);
	ember_emit_buf(r, r->hdr.size, st);
	ember_scratch_put(level);
}

static void ember_exec_probe(void *data, struct task_struct *p,
			     pid_t old_pid, struct linux_binprm *bprm)
{
	if (!ember_filter_pass(p))
		return;
	preempt_disable_notrace();
	ember_exec_emit(p, bprm);
	preempt_enable_notrace();
}

static void ember_exit_probe(void *data, struct task_struct *p)
{
	struct ember_exit r;

	/* do_exit() drops signal->live before this tracepoint */
	if (atomic_read(&p->signal->live) || !ember_filter_pass(p) ||
	    !ember_exit_first(p))
		return;
	memset(&r, 0, sizeof(r));
	r.hdr.type = EMBER_REC_EXIT;
	r.hdr.size = sizeof(r);
	r.time_ns = ktime_get_mono_fast_ns();
	r.pid = p->tgid;
	r.tid = p->pid;
	memcpy(r.comm, p->comm, EMBER_COMM_LEN);
	r.comm[EMBER_COMM_LEN - 1] = '\0';
	r.exit_code = p->exit_code;
	preempt_disable_notrace();
	ember_emit_buf(&r, sizeof(r), this_cpu_ptr(ember_stats));
	preempt_enable_notrace();
}

int ember_lifecycle_start(struct netlink_ext_ack *extack)
{
	int ret;

	/* fail the build, not the kernel, if a prototype ever changes */
	check_trace_callback_type_sched_process_exec(ember_exec_probe);
	check_trace_callback_type_sched_process_exit(ember_exit_probe);

	ember_tp_exec = ember_find_tracepoint("sched_process_exec");
	ember_tp_exit = ember_find_tracepoint("sched_process_exit");
	if (!ember_tp_exec || !ember_tp_exit) {
		NL_SET_ERR_MSG(extack, "process tracepoints not found");
		ember_tp_exec = NULL;
		ember_tp_exit = NULL;
		return -EOPNOTSUPP;
	}
	ret = tracepoint_probe_register(ember_tp_exec, ember_exec_probe, NULL);
	if (ret)
		goto err;
	ret = tracepoint_probe_register(ember_tp_exit, ember_exit_probe, NULL);
	if (ret) {
		tracepoint_probe_unregister(ember_tp_exec, ember_exec_probe,
					    NULL);
		tracepoint_synchronize_unregister();
		goto err;
	}
	return 0;
err:
	NL_SET_ERR_MSG(extack, "cannot attach to the process tracepoints");
	ember_tp_exec = NULL;
	ember_tp_exit = NULL;
	return ret;
}

void ember_lifecycle_stop(void)
{
	if (!ember_tp_exec)
		return;
	tracepoint_probe_unregister(ember_tp_exec, ember_exec_probe, NULL);
	tracepoint_probe_unregister(ember_tp_exit, ember_exit_probe, NULL);
	tracepoint_synchronize_unregister();
	ember_tp_exec = NULL;
	ember_tp_exit = NULL;
}
