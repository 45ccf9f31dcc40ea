/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/*
 * The kernel types ember.bpf.c uses, for build hosts without
 * /sys/kernel/btf/vmlinux (bpf/bpf.mk copies this to bpf/.output/vmlinux.h
 * then). Written by hand for ember, not generated: only the fields the
 * programs touch, with their kernel names. Layout does not matter for the
 * kernel structs: preserve_access_index makes every access a CO-RE
 * relocation that libbpf resolves against the running kernel's BTF at load
 * time. The UAPI types (BPF flags, the perf_event program context) come
 * from the system's linux/ headers (linux-libc-dev), whose layout is ABI.
 *
 * Keep it in step with ember.bpf.c: the 20-bpf suite builds and loads the
 * programs with this header too.
 */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef _Bool bool;
enum { false = 0, true = 1 };
typedef int pid_t;

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

typedef struct {
	int counter;
} atomic_t;

struct kernfs_node {
	u64 id;
};

struct cgroup {
	int level;
	struct kernfs_node *kn;
	struct cgroup *ancestors[];
};

struct css_set {
	struct cgroup *dfl_cgrp;
};

struct signal_struct {
	atomic_t live;
};

struct sched_entity {
	u64 sum_exec_runtime;
};

struct rw_semaphore {
	long count;
};
typedef struct {
	void *vdso;
} mm_context_t;
struct mm_struct {
	struct rw_semaphore mmap_lock;
	unsigned long start_code;
	mm_context_t context;
};

/* bpf/mmap.bpf.h: a new executable mapping, its file and its path */
struct qstr {
	u32 len;
	const unsigned char *name;
};
struct super_block {
	u32 s_dev;
};
struct inode {
	unsigned long i_ino;
	unsigned int i_nlink;
	struct super_block *i_sb;
};
struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
};
struct vfsmount {
	struct dentry *mnt_root;
};
struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
};
struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
};
struct file {
	struct path f_path;
	struct inode *f_inode;
};
struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	struct mm_struct *vm_mm;
	unsigned long vm_flags;
	unsigned long vm_pgoff;
	struct file *vm_file;
};
/* the user thread pointer (bpf/arch.bpf.h: arch_thread_pointer()) */
#if defined(__TARGET_ARCH_arm64)
struct thread_struct {
	struct {
		unsigned long tp_value;
	} uw;
};
#else
struct thread_struct {
	unsigned long fsbase;
};
#endif

struct task_struct {
	unsigned int __state;
	struct sched_entity se;
	unsigned int flags;
	int exit_code;
	pid_t pid;
	pid_t tgid;
	struct signal_struct *signal;
	struct css_set *cgroups;
	void *stack;
	int pagefault_disabled;
	struct mm_struct *mm;
	unsigned long nvcsw;	/* context switches: bpf/oncpu.bpf.h */
	unsigned long nivcsw;
	struct thread_struct thread;
};

struct linux_binprm {
	const char *filename;
};

#pragma clang attribute pop

#endif /* __VMLINUX_H__ */
