// SPDX-License-Identifier: GPL-2.0
/*
 * Process lifecycle records for the agent: EMBER_REC_EXEC once a new image
 * is in place (so it can read the new mappings at once) and EMBER_REC_EXIT
 * when the last thread of a process is gone (so it can forget the process).
 * EMBER_REC_MMAP (EMBER_CAP_MMAP) for every new executable mapping, from a
 * kprobe on perf_event_mmap() (the kernel calls it wherever perf learns
 * of a mapping: mmap, an mprotect that adds exec, exec's own mappings, the
 * vDSO), so the agent needs no /proc/PID/maps for a new process. Same
 * filters as the samples.
 */
#include <linux/atomic.h>
#include <linux/binfmts.h>
#include <linux/dcache.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/mm_types.h>
#include <linux/random.h>
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

/* ---- EMBER_REC_MMAP ---------------------------------------------------- */

static u64 ember_mm_key;	/* mm_gen = a keyed hash, never the address */
static bool ember_mmap_registered;

static u32 ember_mmap_flags(struct vm_area_struct *vma)
{
	u32 prot = EMBER_MMAP_PROT_EXEC;

	if (vma->vm_flags & VM_READ)
		prot |= EMBER_MMAP_PROT_READ;
	if (vma->vm_flags & VM_WRITE)
		prot |= EMBER_MMAP_PROT_WRITE;
	if (vma->vm_flags & VM_SHARED)
		prot |= EMBER_MMAP_SHARED;
	return prot;
}

/*
 * Whether vma is the vDSO's text. x86's map_vdso() sets mm->context.vdso
 * only after installing the pages, so the record of the vDSO itself asks
 * the special mapping's name, as /proc/PID/maps does (for a special
 * mapping, vm_ops->name only reads its vm_special_mapping).
 */
static bool ember_vma_is_vdso(struct vm_area_struct *vma)
{
	const char *name;

	if (vma->vm_mm &&
	    (unsigned long)vma->vm_mm->context.vdso == vma->vm_start)
		return true;
	if (!vma->vm_ops || !vma->vm_ops->name)
		return false;
	name = vma->vm_ops->name(vma);
	return name && !strcmp(name, "[vdso]");
}

/*
 * The path of the mapped file as the process sees it (d_path against its
 * root: nothing here sleeps), into r->path: d_path writes at the end of
 * its buffer, then the path is moved to the start. Returns the bytes
 * used, NUL included.
 */
static u32 ember_mmap_path(struct ember_mmap *r, struct vm_area_struct *vma)
{
	char *buf = r->path, *p;
	struct file *f = vma->vm_file;
	size_t len;

	if (!f) {
		if (ember_vma_is_vdso(vma)) {
			/* its own record, before context.vdso is set */
			if (!r->vdso)
				r->vdso = vma->vm_start;
			r->flags |= EMBER_MMAP_F_VDSO;
			memcpy(r->path, "[vdso]", 7);
			return 7;
		}
		r->flags |= EMBER_MMAP_F_ANON;
		r->path[0] = '\0';
		return 1;
	}
	if (!file_inode(f)->i_nlink)
		r->flags |= EMBER_MMAP_F_DELETED;
	/*
	 * d_path's second pass (after a rename raced the first) takes
	 * rename_lock's spinlock: a sleeping lock on PREEMPT_RT, and this
	 * runs in a kprobe. There the path is left out (EMBER_MMAP_F_CUT:
	 * the agent reads the process's maps from /proc instead).
	 */
	if (IS_ENABLED(CONFIG_PREEMPT_RT)) {
		r->flags |= EMBER_MMAP_F_CUT;
		r->path[0] = '\0';
		return 1;
	}
	p = d_path(&f->f_path, buf, EMBER_MMAP_PATH_MAX);
	if (IS_ERR(p)) {
		r->flags |= EMBER_MMAP_F_CUT;
		r->path[0] = '\0';
		return 1;
	}
	len = strnlen(p, EMBER_MMAP_PATH_MAX - 1);
	/* /proc/PID/maps' own suffix: the flag says it instead */
	if ((r->flags & EMBER_MMAP_F_DELETED) && len > 10 &&
	    !memcmp(p + len - 10, " (deleted)", 10))
		len -= 10;
	memmove(r->path, p, len);
	r->path[len] = '\0';
	return len + 1;
}

static void ember_mmap_emit(struct vm_area_struct *vma)
{
	struct ember_cpu_stats *st = this_cpu_ptr(ember_stats);
	struct file *f = vma->vm_file;
	unsigned int level;
	struct ember_mmap *r;
	u32 len, end;

	/* room for the record and its path */
	BUILD_BUG_ON(sizeof(struct ember_mmap) + EMBER_MMAP_PATH_MAX >
		     sizeof(struct ember_sample) +
		     EMBER_MAX_FRAMES * 2 * sizeof(u64));
	r = ember_scratch_get(&level);
	if (!r) {
		local64_inc(&st->lost);
		return;
	}
	memset(r, 0, sizeof(*r));
	r->hdr.type = EMBER_REC_MMAP;
	r->time_ns = ktime_get_mono_fast_ns();
	r->pid = current->tgid;
	r->tid = current->pid;
	r->start = vma->vm_start;
	r->len = vma->vm_end - vma->vm_start;
	r->pgoff = (u64)vma->vm_pgoff << PAGE_SHIFT;
	r->cgroup_id = ember_task_cgroup_id(current);
	r->prot = ember_mmap_flags(vma);
	r->mm_gen = hash_64((u64)(unsigned long)vma->vm_mm ^ ember_mm_key, 32);
	if (vma->vm_mm)
		r->vdso = (u64)(unsigned long)vma->vm_mm->context.vdso;
	if (f) {
		struct inode *inode = file_inode(f);

		r->ino = inode->i_ino;
		r->dev_major = MAJOR(inode->i_sb->s_dev);
		r->dev_minor = MINOR(inode->i_sb->s_dev);
	}
	len = ember_mmap_path(r, vma);
	r->path_len = len;
	end = ALIGN(len, 8);
	/* zero padding: no stale scratch bytes reach user space */
	memset(r->path + len, 0, end - len);
	r->hdr.size = sizeof(*r) + end;
	ember_emit_buf(r, r->hdr.size, st);
	ember_scratch_put(level);
}

/* perf_event_mmap(vma): its first argument, the mapping just made */
static int ember_mmap_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct vm_area_struct *vma;

#if defined(CONFIG_X86_64)
	vma = (struct vm_area_struct *)regs->di;
#elif defined(CONFIG_ARM64)
	vma = (struct vm_area_struct *)regs->regs[0];
#else
	vma = NULL;
#endif
	if (!vma || !(vma->vm_flags & VM_EXEC) || !ember_filter_pass(current))
		return 0;
	preempt_disable_notrace();
	ember_mmap_emit(vma);
	preempt_enable_notrace();
	return 0;
}

static struct kprobe ember_mmap_kp = {
	.symbol_name = "perf_event_mmap",
	.pre_handler = ember_mmap_pre,
};

/* At load: whether the probe can be placed (EMBER_CAP_MMAP). */
bool ember_mmap_available(void)
{
	struct kprobe kp = {
		.symbol_name = "perf_event_mmap",
		.pre_handler = ember_mmap_pre,
	};

	if (register_kprobe(&kp))
		return false;
	unregister_kprobe(&kp);
	return true;
}

static void ember_mmap_start(void)
{
	if (!(ember_caps & EMBER_CAP_MMAP))
		return;
	ember_mm_key = get_random_u64();
	memset(&ember_mmap_kp, 0, sizeof(ember_mmap_kp));
	ember_mmap_kp.symbol_name = "perf_event_mmap";
	ember_mmap_kp.pre_handler = ember_mmap_pre;
	/* none: the agent reads /proc for every process, as before */
	ember_mmap_registered = !register_kprobe(&ember_mmap_kp);
	if (!ember_mmap_registered)
		pr_warn_once("ember: no mapping records: perf_event_mmap cannot be probed\n");
}

static void ember_mmap_stop(void)
{
	if (!ember_mmap_registered)
		return;
	unregister_kprobe(&ember_mmap_kp);
	ember_mmap_registered = false;
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
	ember_mmap_start();
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
	ember_mmap_stop();
	tracepoint_probe_unregister(ember_tp_exec, ember_exec_probe, NULL);
	tracepoint_probe_unregister(ember_tp_exit, ember_exit_probe, NULL);
	tracepoint_synchronize_unregister();
	ember_tp_exec = NULL;
	ember_tp_exit = NULL;
}
