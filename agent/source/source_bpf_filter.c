// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF backend's filters (bpf/filter.bpf.h): the pid hash and the
 * cgroup v2 id with its level in the hierarchy (the programs compare the
 * task's ancestor at that level, so descendants match), changed while
 * running through the mmap'ed .bss.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <mntent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include "source/source_bpf_internal.h"

/* Depth of the cgroup v2 directory whose inode is id, or -1. */
static uint64_t want_cgid;
static int found_level;

static int cg_visit(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)path;
	if (flag == FTW_D && (uint64_t)st->st_ino == want_cgid) {
		found_level = ftw->level;
		return 1;
	}
	return 0;
}

static int cgroup_level(uint64_t id)
{
	struct mntent *m;
	char root[PATH_MAX] = "";
	FILE *f = setmntent("/proc/self/mounts", "r");

	if (!f)
		return -1;
	while ((m = getmntent(f))) {
		if (!strcmp(m->mnt_type, "cgroup2")) {
			snprintf(root, sizeof(root), "%s", m->mnt_dir);
			break;
		}
	}
	endmntent(f);
	if (!root[0])
		return -1;
	want_cgid = id;
	found_level = -1;
	nftw(root, cg_visit, 16, FTW_PHYS | FTW_MOUNT);
	return found_level;
}

int bpf_set_filter(struct ember_source *s, const uint32_t *pids,
		   size_t nr_pids, uint64_t cgroup_id)
{
	int fd = bpf_map__fd(s->skel->maps.filter_pids);
	uint32_t key, next, *pkey = NULL;
	uint8_t one = 1;
	int level = 0;
	size_t i;

	if (nr_pids > EMBER_MAX_FILTER_PIDS || (nr_pids && !pids))
		return -EINVAL;
	if (cgroup_id) {
		level = cgroup_level(cgroup_id);
		if (level < 0)
			return -ENOENT;
	}
	for (i = 0; i < nr_pids; i++) {
		if (bpf_map_update_elem(fd, &pids[i], &one, BPF_ANY))
			return -errno;
	}
	/* then drop the keys that are no longer wanted */
	while (!bpf_map_get_next_key(fd, pkey, &next)) {
		bool keep = false;

		for (i = 0; i < nr_pids && !keep; i++)
			keep = pids[i] == next;
		if (!keep && !bpf_map_delete_elem(fd, &next)) {
			pkey = NULL;	/* restart: the iteration order changed */
			continue;
		}
		key = next;
		pkey = &key;
	}
	s->skel->bss->filter_pids_on = nr_pids > 0;
	s->skel->bss->filter_cgroup_level = level;
	__atomic_store_n(&s->skel->bss->filter_cgroup, cgroup_id, __ATOMIC_RELEASE);
	return 0;
}
