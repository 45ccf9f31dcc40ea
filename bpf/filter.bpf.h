/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/filter.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * The process and cgroup filters, checked by every program before any
 * stack work; changed while running through the mmap'ed .bss (on/off,
 * cgroup id and level) and the filter_pids hash.
 */
#ifndef EMBER_FILTER_BPF_H
#define EMBER_FILTER_BPF_H

#include "common.bpf.h"

/* Filters, changed at run time through the mmap'ed .bss. */
__u32 filter_pids_on;
__u64 filter_cgroup;
__u32 filter_cgroup_level;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_MAX_FILTER_PIDS);
	__type(key, __u32);
	__type(value, __u8);
} filter_pids SEC(".maps");

/* Kernels before 6.0 keep ancestor ids instead of ancestor pointers. */
struct cgroup___old {
	int level;
	__u64 ancestor_ids[];
} __attribute__((preserve_access_index));

/* cgroup v2 id of the task's ancestor at this level (itself at its own). */
static __always_inline __u64 ancestor_cgroup_id(struct task_struct *task,
						__u32 level)
{
	struct cgroup___old *old;
	struct cgroup *cg, *anc = NULL;
	__u64 id = 0;

	cg = BPF_CORE_READ(task, cgroups, dfl_cgrp);
	if (!cg || (int)level > BPF_CORE_READ(cg, level))
		return 0;
	old = (void *)cg;
	if (bpf_core_field_exists(old->ancestor_ids)) {
		bpf_core_read(&id, sizeof(id), &old->ancestor_ids[level]);
		return id;
	}
	bpf_core_read(&anc, sizeof(anc), &cg->ancestors[level]);
	if (!anc)
		return 0;
	return BPF_CORE_READ(anc, kn, id);
}

/* The process and cgroup filters, evaluated before any stack work. */
static __always_inline bool pass_filters(struct task_struct *task, __u32 tgid)
{
	__u64 cg = filter_cgroup;

	if (filter_pids_on && !bpf_map_lookup_elem(&filter_pids, &tgid))
		return false;
	if (cg && ancestor_cgroup_id(task, filter_cgroup_level) != cg)
		return false;
	return true;
}

#endif /* EMBER_FILTER_BPF_H */
