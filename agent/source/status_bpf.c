// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember status, eBPF part: what a running ember (record or run) has loaded
 * into the kernel, seen from outside that process. Its programs are found
 * by name ("ember_*"), their maps through the programs' map ids; each
 * map's memory is the kernel's own accounting (memlock in fdinfo), the
 * statistics map is summed over CPUs and the processes bound for
 * unwinding are counted in uw_procs. Read-only: nothing is changed.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uapi/ember.h"
#include "ember_bpf.h"
#include "source/bpf_stats.h"
#include "source/status_bpf.h"

#define MAX_PROGS	32
#define MAX_MAPS	64

struct seen_map {
	uint32_t id;
	struct bpf_map_info info;
	uint64_t memlock;
	int fd;
};

/* The kernel's accounting of a map's memory, from our fd's fdinfo. */
static uint64_t map_memlock(int fd)
{
	char path[64], line[256];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %" SCNu64, &v) == 1)
			break;
	fclose(f);
	return v;
}

static void add_map(struct seen_map *maps, unsigned int *nr, uint32_t id)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	unsigned int i;
	int fd;

	for (i = 0; i < *nr; i++)
		if (maps[i].id == id)
			return;
	if (*nr >= MAX_MAPS)
		return;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0)
		return;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		close(fd);
		return;
	}
	maps[*nr] = (struct seen_map){ id, info, map_memlock(fd), fd };
	(*nr)++;
}

/* Entries of a hash map, counted up to its size. */
static unsigned int count_keys(int fd, const struct bpf_map_info *info)
{
	unsigned char key[64], next[64];
	unsigned int n = 0;
	void *prev = NULL;

	if (info->key_size > sizeof(key))
		return 0;
	while (n < info->max_entries && !bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, info->key_size);
		prev = key;
		n++;
	}
	return n;
}

static void print_stats(int fd)
{
	int ncpu = libbpf_num_possible_cpus();
	struct bpf_map_info info;
	__u32 len = sizeof(info);
	struct ember_bpf_stats st;

	if (ncpu <= 0)
		return;
	/* another ember version's counters are laid out differently */
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
	    info.value_size != sizeof(st)) {
		printf("    counters: from another version of ember (%u bytes a CPU, "
		       "this one reads %zu)\n", info.value_size, sizeof(st));
		return;
	}
	if (bpf_stats_sum(fd, ncpu, &st))
		return;
	printf("    since it started: %" PRIu64 " samples, %" PRIu64
	       " context switches, %" PRIu64 " records, %" PRIu64
	       " lost, %" PRIu64 " off-CPU table overflows\n",
	       (uint64_t)st.samples, (uint64_t)st.switches, (uint64_t)st.records,
	       (uint64_t)st.lost, (uint64_t)st.offcpu_overflow);
	printf("    user stacks by tables: %" PRIu64 " (%" PRIu64
	       " with frame-pointer steps, %" PRIu64 " cut); table requests %"
	       PRIu64 "\n", (uint64_t)st.ustack_cfi, (uint64_t)st.ustack_fp,
	       (uint64_t)st.ustack_cut, (uint64_t)st.unwind_miss);
	if (st.alloc_hits)
		printf("    allocation probes: %" PRIu64 " records (-e alloc), %"
		       PRIu64 " sampled blocks not followed to their free "
		       "(table of %u full)\n", (uint64_t)st.alloc_hits,
		       (uint64_t)st.alloc_untracked, EMBER_ALLOC_LIVE_MAX);
}

/* The process holding prog id `id` open (ember's skeleton keeps its
 * programs' fds), or 0. Scans /proc/PID/fdinfo: fine for a status
 * command, bounded by the processes and fds there are. */
static int prog_owner(uint32_t id)
{
	char path[600], line[128];
	struct dirent *p, *fd;
	DIR *procs, *fds;
	int owner = 0;

	procs = opendir("/proc");
	if (!procs)
		return 0;
	while (!owner && (p = readdir(procs))) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fdinfo", p->d_name);
		fds = opendir(path);
		if (!fds)
			continue;
		while (!owner && (fd = readdir(fds))) {
			FILE *f;

			if (fd->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s",
				 p->d_name, fd->d_name);
			f = fopen(path, "re");
			if (!f)
				continue;
			while (fgets(line, sizeof(line), f)) {
				unsigned int v;

				if (sscanf(line, "prog_id: %u", &v) == 1) {
					if (v == id)
						owner = atoi(p->d_name);
					break;
				}
			}
			fclose(f);
		}
		closedir(fds);
	}
	closedir(procs);
	return owner;
}

/* One loaded copy of ember.bpf.c: the programs that share its stats map. */
struct instance {
	uint32_t stats_id;
	uint32_t prog_ids[MAX_PROGS];
	unsigned int nr_progs;
	struct seen_map maps[MAX_MAPS];
	unsigned int nr_maps;
};

static void print_instance(struct instance *in)
{
	uint64_t total = 0;
	unsigned int i;
	int pid = in->nr_progs ? prog_owner(in->prog_ids[0]) : 0;

	if (pid)
		printf("  ember process %d has loaded:\n", pid);
	else
		printf("  an ember process has loaded:\n");
	for (i = 0; i < in->nr_progs; i++) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(in->prog_ids[i]);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
			printf("    program %-16s %10llu runs", info.name,
			       (unsigned long long)info.run_cnt);
			if (info.run_cnt && info.run_time_ns)
				printf(", %.2f us per run (kernel.bpf_stats_enabled)",
				       info.run_time_ns / 1e3 / info.run_cnt);
			printf("\n");
		}
		close(fd);
	}
	for (i = 0; i < in->nr_maps; i++)
		total += in->maps[i].memlock;
	printf("    maps: %u, %.1f MiB of kernel memory:", in->nr_maps,
	       total / 1048576.0);
	for (i = 0; i < in->nr_maps; i++)
		if (in->maps[i].memlock >= 1 << 20)
			printf(" %s %.1f MiB", in->maps[i].info.name,
			       in->maps[i].memlock / 1048576.0);
	printf("\n");
	for (i = 0; i < in->nr_maps; i++) {
		if (!strcmp(in->maps[i].info.name, "stats"))
			print_stats(in->maps[i].fd);
		else if (!strcmp(in->maps[i].info.name, "uw_procs"))
			printf("    processes bound for unwinding: %u of %u\n",
			       count_keys(in->maps[i].fd, &in->maps[i].info),
			       in->maps[i].info.max_entries);
	}
	for (i = 0; i < in->nr_maps; i++)
		close(in->maps[i].fd);
}

void status_bpf_running(void)
{
	static struct instance inst[4];
	unsigned int nr = 0, i, j;
	__u32 id = 0;

	memset(inst, 0, sizeof(inst));
	while (!bpf_prog_get_next_id(id, &id)) {
		__u32 map_ids[MAX_MAPS], len;
		struct bpf_prog_info info;
		struct instance *in = NULL;
		struct seen_map maps[MAX_MAPS];
		unsigned int nr_maps = 0;
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		info.nr_map_ids = MAX_MAPS;
		info.map_ids = (__u64)(unsigned long)map_ids;
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
		    strncmp(info.name, "ember_", 6)) {
			close(fd);
			continue;
		}
		close(fd);
		for (i = 0; i < info.nr_map_ids && i < MAX_MAPS; i++)
			add_map(maps, &nr_maps, map_ids[i]);
		/* which instance: the one whose statistics map it uses */
		for (i = 0; i < nr_maps && !in; i++) {
			if (strcmp(maps[i].info.name, "stats"))
				continue;
			for (j = 0; j < nr && !in; j++)
				if (inst[j].stats_id == maps[i].id)
					in = &inst[j];
			if (!in && nr < 4) {
				in = &inst[nr++];
				in->stats_id = maps[i].id;
			}
		}
		if (in && in->nr_progs < MAX_PROGS)
			in->prog_ids[in->nr_progs++] = id;
		for (i = 0; i < nr_maps; i++) {
			if (in) {
				add_map(in->maps, &in->nr_maps, maps[i].id);
			}
			close(maps[i].fd);
		}
	}
	if (!nr) {
		printf("  no ember eBPF programs loaded (no ember record/run uses eBPF now)\n");
		return;
	}
	for (i = 0; i < nr; i++)
		print_instance(&inst[i]);
}
