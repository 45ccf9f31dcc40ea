// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember record -e alloc (record_alloc.h): which processes get the
 * sampler library's probes and which their allocator's entry points
 * (-p, --cgroup), and what each is told about the cost.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/record_alloc.h"

/* Does process pid map the file path? */
static bool maps_file(uint32_t pid, const char *path)
{
	char maps[64], line[PATH_MAX + 128];
	size_t n = strlen(path);
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\n");

		found = len >= n && !memcmp(line + len - n, path, n);
	}
	fclose(f);
	return found;
}

/*
 * What following sampled blocks to their free adds under -p: a return
 * probe on each entry point and a probe on free (bench section 8:
 * 2565 ns an allocation against 1022 without, 142 unprobed).
 */
#define ALLOC_INUSE_COST "in-use bytes followed: returns and frees trap too, 2-3 times the cost of the entry probes alone; --alloc-no-inuse leaves them out"

/*
 * Probes on the sampler library: the command ember starts preloads it;
 * running processes (-p) must have been started with it, which is said
 * per process rather than silently giving an empty profile.
 */
int record_alloc_start(struct session *s, const struct ember_opts *o,
			      const char *lib, char *err, size_t err_len)
{
	int r = session_alloc_attach(s, lib, err, err_len);

	if (r)
		return r;
	for (size_t i = 0; i < o->nr_pids; i++) {
		char what[PATH_MAX];

		if (maps_file(o->pids[i], lib))
			continue;
		r = session_alloc_attach_entry(s, o->pids[i], what,
					       sizeof(what), err, err_len);
		if (r) {
			fprintf(stderr, "ember: -e alloc: process %u was not started with LD_PRELOAD=%s and its allocator cannot be probed: %s\n",
				o->pids[i], lib, err);
			continue;
		}
		fprintf(stderr, "ember: -e alloc: process %u runs without ember's sampler: uprobes on %s's malloc family trap on every call (about 1-10 us each: an allocation-heavy program can run many times slower; %s); start it with LD_PRELOAD=%s to sample in the process instead\n",
			o->pids[i], what, err[0] ? err : ALLOC_INUSE_COST, lib);
	}
	err[0] = '\0';
	if (!o->command && !o->nr_pids && !o->cgroup_path)
		fprintf(stderr, "ember: -e alloc: sampling the allocations of processes started with LD_PRELOAD=%s\n",
			lib);
	return 0;
}

/*
 * --cgroup with -e alloc: each process of the cgroup (or of a cgroup below
 * it, as the backends' filter counts them) that runs without the sampler
 * gets its allocator's entry points probed for its own pid only, so a
 * process outside the cgroup never traps even when it maps the same libc.
 * Rechecked at each scan of session_run: processes that join the cgroup,
 * or exec another program, are probed then. At most ALLOC_CG_PROCS
 * processes, said once when reached.
 */
#define ALLOC_CG_PROCS	256
#define ALLOC_CG_DEPTH	8	/* cgroup levels walked below --cgroup */
#define ALLOC_CG_TRIES	5	/* scans a process that cannot be probed gets */

struct alloc_cgroup {
	struct session *s;
	const char *lib;
	const char *dir;
	struct {
		uint32_t pid;
		uint64_t exe;	/* exe_id(): another program after an exec */
		char probed[PATH_MAX];	/* the allocator file probed, or "" */
		uint8_t failures;	/* tried again up to ALLOC_CG_TRIES */
	} seen[ALLOC_CG_PROCS];
	size_t nr;
	bool full_said;
	bool cap_said;	/* the backend's probes per session ran out */
};

/* Which program pid runs (its executable's device and inode), 0 if gone. */
static uint64_t exe_id(uint32_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	if (stat(path, &st))
		return 0;
	return ((uint64_t)st.st_dev << 40) ^ (uint64_t)st.st_ino;
}

/*
 * The module takes EMBER_MAX_ALLOC_SETS attaches per session (the
 * sampler's, then one per process and program, kept until the session
 * ends even when the process is gone): said once, not retried until the
 * process runs another program.
 */
static void alloc_cgroup_cap_hit(struct alloc_cgroup *ac, uint32_t pid,
				 const char *err)
{
	if (!ac->cap_said)
		fprintf(stderr, "ember: -e alloc: the %s backend takes at most %d allocator probe sets per session (the sampler's, then one per process of cgroup %s and program it ran, exited ones included): process %u and later ones are not probed; --backend bpf takes more (%s)\n",
			ac->s->ops->name, EMBER_MAX_ALLOC_SETS, ac->dir, pid,
			err);
	ac->cap_said = true;
}

/* Probe pid unless it is known with the same program; say what was done. */
static void alloc_cgroup_probe(struct alloc_cgroup *ac, uint32_t pid)
{
	uint64_t exe = exe_id(pid);
	char what[PATH_MAX], err[512];
	size_t i;
	int r;

	for (i = 0; i < ac->nr && ac->seen[i].pid != pid; i++)
		;
	if (i < ac->nr && ac->seen[i].exe == exe)
		return;
	if (i == ALLOC_CG_PROCS) {
		if (!ac->full_said)
			fprintf(stderr, "ember: -e alloc: cgroup %s has more than %d processes: process %u and later ones are not probed\n",
				ac->dir, ALLOC_CG_PROCS, pid);
		ac->full_said = true;
		return;
	}
	if (i == ac->nr) {
		ac->nr++;
		ac->seen[i].probed[0] = '\0';
		ac->seen[i].failures = 0;
	}
	ac->seen[i].pid = pid;
	ac->seen[i].exe = exe;
	/* gone, a kernel thread, or sampled in-process by the sampler */
	if (!exe || maps_file(pid, ac->lib))
		return;
	/*
	 * After an exec the eBPF backend's probes of this pid follow it into
	 * its new program where it maps the same file: probing again would
	 * count each call twice. The module's end with the old address
	 * space: the new program needs its own.
	 */
	if (ac->s->ops->alloc_pid_follows_exec && ac->seen[i].probed[0] &&
	    maps_file(pid, ac->seen[i].probed))
		return;
	r = session_alloc_attach_entry(ac->s, pid, what, sizeof(what), err,
				       sizeof(err));
	if (r == -ENOSPC) {
		alloc_cgroup_cap_hit(ac, pid, err);
		return;
	}
	if (r) {
		/* maybe in the middle of an exec: tried again, said once */
		if (++ac->seen[i].failures < ALLOC_CG_TRIES)
			ac->seen[i].exe = 0;
		if (ac->seen[i].failures == 1)
			fprintf(stderr, "ember: -e alloc: process %u of cgroup %s runs without ember's sampler and its allocator cannot be probed: %s\n",
				pid, ac->dir, err);
		return;
	}
	snprintf(ac->seen[i].probed, sizeof(ac->seen[i].probed), "%s", what);
	fprintf(stderr, "ember: -e alloc: process %u of cgroup %s runs without ember's sampler: uprobes on %s's malloc family (for this process only) trap on every call (%s)\n",
		pid, ac->dir, what, err[0] ? err : ALLOC_INUSE_COST);
}

static void alloc_cgroup_walk(struct alloc_cgroup *ac, const char *dir,
			      int depth)
{
	char path[PATH_MAX + 32];
	struct dirent *de;
	unsigned long pid;
	int lines = 0;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (f) {
		while (lines++ <= ALLOC_CG_PROCS && fscanf(f, "%lu", &pid) == 1)
			alloc_cgroup_probe(ac, (uint32_t)pid);
		fclose(f);
	}
	if (depth >= ALLOC_CG_DEPTH || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		alloc_cgroup_walk(ac, path, depth + 1);
	}
	closedir(d);
}

static void alloc_cgroup_scan(void *ctx)
{
	struct alloc_cgroup *ac = ctx;

	alloc_cgroup_walk(ac, ac->dir, 0);
}

int alloc_cgroup_start(struct session *s, const char *dir,
			      const char *lib, struct alloc_cgroup **out,
			      char *err, size_t err_len)
{
	struct alloc_cgroup *ac;

	ac = calloc(1, sizeof(*ac));
	if (!ac) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	ac->s = s;
	ac->lib = lib;
	ac->dir = dir;
	fprintf(stderr, "ember: -e alloc: cgroup %s: processes started with LD_PRELOAD=%s are sampled in-process, the others through uprobes on their allocator (those that join or exec later too)\n",
		dir, lib);
	alloc_cgroup_scan(ac);
	s->on_scan = alloc_cgroup_scan;
	s->scan_ctx = ac;
	*out = ac;
	return 0;
}
