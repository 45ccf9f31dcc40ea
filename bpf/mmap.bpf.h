/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/mmap.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * EMBER_REC_MMAP: every new executable mapping of a profiled process:
 * ember_mmap_fexit at mmap_region's return (every mmap, and exec's own
 * mappings of the executable and the loader), or ember_mmap_kprobe at
 * perf_event_mmap(vma) where trampolines are missing but kprobes are not. The agent then needs no
 * /proc/PID/maps for a process that exec'd while it ran (agent/proc/kmaps.c).
 *
 * The path: bpf_d_path() is not allowed at this hook, so the dentries are
 * walked up to the process's namespace root, crossing mounts, at most
 * MMAP_PATH_DEPTH names; a deeper or longer path is cut (EMBER_MMAP_F_CUT)
 * and the agent falls back to /proc for that process. Built backwards in a
 * per-CPU buffer of its own (with a busy flag: a preempted run is never
 * overwritten by another on the same CPU), so the frame stays small.
 */
#ifndef EMBER_MMAP_BPF_H
#define EMBER_MMAP_BPF_H

#include "common.bpf.h"
#include "filter.bpf.h"
#include "record.bpf.h"

#define MMAP_VM_READ		0x1
#define MMAP_VM_WRITE		0x2
#define MMAP_VM_EXEC		0x4
#define MMAP_VM_SHARED		0x8
#define MMAP_PATH_DEPTH		48
#define MMAP_PATH_MASK		(EMBER_MMAP_PATH_MAX - 1)

const volatile __u64 mmap_gen_key;	/* random per session (the loader) */

struct mmap_scratch {
	__u32 busy;
	__u32 __pad;
	__u64 rec[(sizeof(struct ember_mmap) + EMBER_MMAP_PATH_MAX) / 8];
	char tmp[2 * EMBER_MMAP_PATH_MAX];	/* masked offsets stay inside */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mmap_scratch);
} mmap_scratch SEC(".maps");

/*
 * The path of f as the process sees it, into sc->tmp ending at
 * tmp[MMAP_PATH_MASK] (the NUL); returns the offset of its first byte.
 */
static __always_inline __u32 mmap_path(struct mmap_scratch *sc,
				       struct file *f, __u32 *flags)
{
	struct dentry *d = BPF_CORE_READ(f, f_path.dentry);
	struct vfsmount *vmnt = BPF_CORE_READ(f, f_path.mnt);
	struct mount *mnt = container_of(vmnt, struct mount, mnt);
	__u32 off = MMAP_PATH_MASK, i;

	sc->tmp[MMAP_PATH_MASK] = '\0';
	for (i = 0; i < MMAP_PATH_DEPTH; i++) {
		struct dentry *parent = BPF_CORE_READ(d, d_parent);
		struct dentry *root = BPF_CORE_READ(vmnt, mnt_root);
		const unsigned char *name;
		__u32 len;

		if (d == root || d == parent) {
			struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

			if (d != root || up == mnt || !up)
				break;	/* the namespace's root */
			d = BPF_CORE_READ(mnt, mnt_mountpoint);
			mnt = up;
			vmnt = &up->mnt;
			continue;
		}
		len = BPF_CORE_READ(d, d_name.len);
		name = BPF_CORE_READ(d, d_name.name);
		if (len + 2 > off) {
			*flags |= EMBER_MMAP_F_CUT;
			break;
		}
		/* masked: every iteration's state looks alike to the
		 * verifier, which then prunes instead of walking 2^depth */
		off = (off - len - 1) & MMAP_PATH_MASK;
		sc->tmp[off & MMAP_PATH_MASK] = '/';
		bpf_probe_read_kernel(&sc->tmp[(off + 1) & MMAP_PATH_MASK],
				      len & MMAP_PATH_MASK, name);
		d = parent;
	}
	if (i == MMAP_PATH_DEPTH)
		*flags |= EMBER_MMAP_F_CUT;
	if (off == MMAP_PATH_MASK) {	/* the root itself */
		off--;
		sc->tmp[off & MMAP_PATH_MASK] = '/';
	}
	return off;
}

/* One executable mapping of the current process: its record. */
static __always_inline int emit_mmap(void *ctx, __u64 start, __u64 len,
				     __u64 pgoff, __u64 vmf, struct file *f,
				     struct mm_struct *mm)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	struct ember_bpf_stats *st;
	struct mmap_scratch *sc;
	struct ember_mmap *r;
	__u32 zero = 0, tgid, off, len_p, end, i;

	if (!(vmf & MMAP_VM_EXEC) || !len)
		return 0;
	tgid = bpf_get_current_pid_tgid() >> 32;
	if (!pass_filters(task, tgid))
		return 0;
	st = get_stats();
	sc = bpf_map_lookup_elem(&mmap_scratch, &zero);
	if (!st || !sc)
		return 0;
	if (sc->busy) {
		st->lost++;
		return 0;
	}
	sc->busy = 1;
	r = (void *)sc->rec;
	r->hdr.type = EMBER_REC_MMAP;
	r->hdr.__reserved = 0;
	r->time_ns = bpf_ktime_get_ns();
	r->pid = tgid;
	r->tid = (__u32)bpf_get_current_pid_tgid();
	r->start = start;
	r->len = len;
	r->pgoff = pgoff << 12;
	r->cgroup_id = bpf_get_current_cgroup_id();
	r->prot = EMBER_MMAP_PROT_EXEC;
	if (vmf & MMAP_VM_READ)
		r->prot |= EMBER_MMAP_PROT_READ;
	if (vmf & MMAP_VM_WRITE)
		r->prot |= EMBER_MMAP_PROT_WRITE;
	if (vmf & MMAP_VM_SHARED)
		r->prot |= EMBER_MMAP_SHARED;
	r->flags = 0;
	r->mm_gen = (__u32)((((__u64)mm ^ mmap_gen_key) *
			     0x9E3779B97F4A7C15ULL) >> 32);
	r->vdso = (__u64)BPF_CORE_READ(mm, context.vdso);
	if (f) {
		struct inode *ino = BPF_CORE_READ(f, f_inode);
		__u32 dev = BPF_CORE_READ(ino, i_sb, s_dev);

		r->ino = BPF_CORE_READ(ino, i_ino);
		r->dev_major = dev >> 20;
		r->dev_minor = dev & 0xfffff;
		if (!BPF_CORE_READ(ino, i_nlink))
			r->flags |= EMBER_MMAP_F_DELETED;
		off = mmap_path(sc, f, &r->flags);
	} else {
		r->ino = 0;
		r->dev_major = 0;
		r->dev_minor = 0;
		off = MMAP_PATH_MASK;
		sc->tmp[MMAP_PATH_MASK] = '\0';
		if (start == r->vdso) {
			r->flags |= EMBER_MMAP_F_VDSO;
			off -= 6;
			__builtin_memcpy(&sc->tmp[MMAP_PATH_MASK - 6], "[vdso]", 6);
		} else {
			r->flags |= EMBER_MMAP_F_ANON;
		}
	}
	off &= MMAP_PATH_MASK;
	len_p = EMBER_MMAP_PATH_MAX - off;	/* NUL included, <= 4095 */
	if (len_p > MMAP_PATH_MASK || !off) {
		len_p = 1;
		off = MMAP_PATH_MASK;
	}
	bpf_probe_read_kernel(r->path, len_p & MMAP_PATH_MASK, &sc->tmp[off]);
	r->path_len = len_p;
	end = (len_p + 7) & ~7U;
	for (i = 0; i < 7; i++) {
		if (len_p + i >= end)
			break;
		r->path[(len_p + i) & MMAP_PATH_MASK] = '\0';
	}
	r->hdr.size = sizeof(*r) + end;
	if (r->hdr.size <= sizeof(sc->rec))
		emit(ctx, r, r->hdr.size, st);
	sc->busy = 0;
	return 0;
}

/*
 * mmap_region(file, addr, len, vm_flags, pgoff, uf), the same on 5.10
 * through 6.18: every mmap and exec's own mappings (kernel/events is
 * built without ftrace, so perf_event_mmap itself takes no fentry).
 * Not seen here: an mprotect that adds exec, and the vDSO (in every
 * record's vdso instead).
 */
SEC("fexit/mmap_region")
int BPF_PROG(ember_mmap_fexit, struct file *file, unsigned long addr,
	     unsigned long len, unsigned long vm_flags, unsigned long pgoff,
	     void *uf, unsigned long ret)
{
	if (ret >= (unsigned long)-4095)
		return 0;	/* an error */
	return emit_mmap(ctx, ret, len, pgoff, vm_flags, file,
			 BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), mm));
}

/* perf_event_mmap(vma), where kprobes exist: also mprotect and the vDSO */
SEC("kprobe/perf_event_mmap")
int ember_mmap_kprobe(struct uapi_regs *ctx)
{
	struct vm_area_struct *vma = (void *)ARCH_ARG1(ctx);
	__u64 start = BPF_CORE_READ(vma, vm_start);

	return emit_mmap(ctx, start, BPF_CORE_READ(vma, vm_end) - start,
			 BPF_CORE_READ(vma, vm_pgoff), BPF_CORE_READ(vma, vm_flags),
			 BPF_CORE_READ(vma, vm_file), BPF_CORE_READ(vma, vm_mm));
}

/*
 * Where neither trampolines nor kprobes exist (this project's 6.18 test
 * host), tracepoints and bpf_find_vma() (5.17+): mmap's syscall exit
 * finds the vma at the address it returned, and exec's own mappings are
 * found at sched_process_exec (the executable's text at mm->start_code,
 * the loader's at the entry point the new registers hold). Not seen: an
 * mprotect that adds exec, and mmap from io_uring or a 32-bit process.
 */
struct mmap_vma {
	__u64 start, end, pgoff, flags;
	struct file *file;
	struct mm_struct *mm;
};

static long mmap_vma_cb(struct task_struct *task, struct vm_area_struct *vma,
			struct mmap_vma *v)
{
	v->start = BPF_CORE_READ(vma, vm_start);
	v->end = BPF_CORE_READ(vma, vm_end);
	v->pgoff = BPF_CORE_READ(vma, vm_pgoff);
	v->flags = BPF_CORE_READ(vma, vm_flags);
	v->file = BPF_CORE_READ(vma, vm_file);
	v->mm = BPF_CORE_READ(vma, vm_mm);
	return 0;
}

/* The executable mapping of the current task at addr, if any. */
static __always_inline void emit_vma_at(void *ctx, __u64 addr, __u64 skip)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mmap_vma v = {};

	if (bpf_find_vma(task, addr, mmap_vma_cb, &v, 0) || v.start == skip)
		return;
	emit_mmap(ctx, v.start, v.end - v.start, v.pgoff, v.flags, v.file, v.mm);
}

struct mmap_exit_ctx {
	__u64 common;
	__s32 nr;
	__u32 __pad;
	__s64 ret;
};

SEC("tracepoint/syscalls/sys_exit_mmap")
int ember_mmap_tp(struct mmap_exit_ctx *ctx)
{
	__s64 ret = ctx->ret;

	if (ret < 0 && ret >= -4095)
		return 0;
	emit_vma_at(ctx, (__u64)ret, 1);
	return 0;
}

static __always_inline int mmap_at_exec(void *ctx, struct task_struct *p)
{
	struct uapi_regs *regs = (void *)bpf_task_pt_regs(p);
	__u64 text = BPF_CORE_READ(p, mm, start_code);
	__u64 entry = 0;
	struct task_struct *task = bpf_get_current_task_btf();
	struct mmap_vma v = {};

	/* the new image's first instruction: the loader's, or its own */
	bpf_probe_read_kernel(&entry, sizeof(entry), (const void *)&ARCH_PC(regs));
	if (!bpf_find_vma(task, text, mmap_vma_cb, &v, 0))
		emit_mmap(ctx, v.start, v.end - v.start, v.pgoff, v.flags,
			  v.file, v.mm);
	/* a static program's entry is in its own text: once is enough */
	emit_vma_at(ctx, entry, v.start);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ember_mmap_exec_btf, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	return mmap_at_exec(ctx, p);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(ember_mmap_exec_raw, struct task_struct *p, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	return mmap_at_exec(ctx, p);
}

#endif /* EMBER_MMAP_BPF_H */
