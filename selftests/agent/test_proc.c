// SPDX-License-Identifier: GPL-2.0-only
/*
 * agent/proc/proc.c, the process model, on a fake /proc tree: what a
 * process's first sample reads, pid reuse (a record after an exit is a new
 * process; a late one belongs to the old), exit with samples not yet
 * written then release, the cap (eviction of written live processes only,
 * refusal counted), malformed and oversized /proc files, the bounded
 * maps reader (proc_maps_read(): executable lines, hash), users' slots
 * (freed with their process, the older process of a reused pid), and the table
 * used by several threads at once (run under -fsanitize=thread by
 * selftests/suites/10-agent-unit.sh).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/safe_file.h"
#include "proc/proc.h"
#include "proc/proc_maps.h"
#include "proc/proc_read.h"
#include "test_util.h"

static char root[64];

static void put(uint32_t pid, const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/%s", root, pid, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* A stat line whose comm holds a space and a parenthesis. */
static void fake_proc(uint32_t pid, const char *comm, unsigned start)
{
	char stat[512], path[256];

	snprintf(stat, sizeof(stat), "%u (%s) S 1 %u %u 0 -1 4194560 100 0 0 0 "
		 "1 2 0 0 20 0 1 0 %u 1000 100 18446744073709551615\n",
		 pid, comm, pid, pid, start);
	put(pid, "stat", stat);
	put(pid, "cgroup", "0::/system.slice/docker-"
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	    ".scope\n");
	snprintf(path, sizeof(path), "%s/%u/exe", root, pid);
	if (symlink("/usr/bin/fake prog", path))
		perror("symlink");
}

struct found {
	uint32_t pid;
	int n;
	struct proc_info last;
	char comm[PROC_COMM_LEN], exe[64], cg[128], id[80];
};

static int find_cb(const struct proc_info *p, void *ctx)
{
	struct found *f = ctx;

	if (p->pid != f->pid)
		return 0;
	f->n++;
	f->last = *p;
	snprintf(f->comm, sizeof(f->comm), "%s", p->comm);
	snprintf(f->exe, sizeof(f->exe), "%s", p->exe_path ? p->exe_path : "-");
	snprintf(f->cg, sizeof(f->cg), "%s", p->cgroup_path ? p->cgroup_path : "-");
	snprintf(f->id, sizeof(f->id), "%s", p->container_id ? p->container_id : "-");
	return 0;
}

static struct found find(struct proc_table *t, uint32_t pid)
{
	struct found f = { .pid = pid };

	proc_table_visit(t, proc_table_generation(t), find_cb, &f);
	return f;
}

/*
 * proc_mapped_open(): a mapping's own file through map_files, by name in
 * the process's root when there is no range, and nothing for a deleted
 * name, no name, or a FIFO by that name.
 */
static void test_mapped_open(void)
{
	char path[] = "/tmp/ember-mapped-XXXXXX", fifo[64];
	struct stat st, got;
	const char *why;
	void *p;
	int fd, fd2, fd3, fd4, fd5;

	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, 8192) || fstat(fd, &st)) {
		T_CHECK("mapped_open_setup", 0, "no temporary file");
		return;
	}
	p = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
	fd2 = p == MAP_FAILED ? -1 :
	      proc_mapped_open(getpid(), (uintptr_t)p, (uintptr_t)p + 8192,
			       NULL, NULL, 1 << 20, &got, &why);
	T_CHECK("mapped_open_map_files", fd2 >= 0 && got.st_ino == st.st_ino,
		"fd %d (%s)", fd2, why ? why : "");
	fd3 = proc_mapped_open(getpid(), 0, 0, path, NULL, 1 << 20, &got, &why);
	T_CHECK("mapped_open_by_name_in_root", fd3 >= 0 && got.st_ino == st.st_ino,
		"fd %d (%s)", fd3, why ? why : "");
	snprintf(fifo, sizeof(fifo), "%s.fifo", path);
	fd4 = mkfifo(fifo, 0600) ? -2 :
	      proc_mapped_open(getpid(), 0, 0, fifo, NULL, 1 << 20, NULL, &why);
	T_CHECK("mapped_open_fifo_refused", fd4 == -1 && why && safe_refused(why),
		"fd %d (%s)", fd4, why ? why : "");
	fd5 = proc_mapped_open(getpid(), 0, 0, "/usr/bin/true (deleted)", NULL,
			       1 << 20, NULL, &why);
	T_CHECK("mapped_open_no_deleted_name", fd5 < 0 &&
		proc_mapped_open(getpid(), 0, 0, NULL, NULL, 1 << 20, NULL, &why) < 0,
		"a deleted name or no name was opened");
	T_CHECK("mapped_open_too_big_refused",
		p != MAP_FAILED &&
		proc_mapped_open(getpid(), (uintptr_t)p, (uintptr_t)p + 8192, path,
				 NULL, 4096, NULL, &why) < 0 && why && safe_refused(why),
		"a file over max_bytes was opened, or by name after the refusal");
	if (p != MAP_FAILED)
		munmap(p, 8192);
	/* its tail replaced by another mapping (arm64's loader puts data
	 * over an image's tail): the range told before still opens it */
	p = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p != MAP_FAILED &&
	    mmap((char *)p + 4096, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED |
		 MAP_ANONYMOUS, -1, 0) != MAP_FAILED) {
		int fd6 = proc_mapped_open(getpid(), (uintptr_t)p,
					   (uintptr_t)p + 8192, NULL, NULL,
					   1 << 20, &got, &why);

		T_CHECK("mapped_open_told_range_past_end",
			fd6 >= 0 && got.st_ino == st.st_ino, "fd %d (%s)", fd6,
			why ? why : "");
		if (fd6 >= 0)
			close(fd6);
	}
	if (p != MAP_FAILED)
		munmap(p, 8192);
	{
		int fds[] = { fd, fd2, fd3, fd4, fd5 };

		for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	unlink(fifo);
	unlink(path);
}

/* /proc/stat's steal (the 8th number of the "cpu" line), and bad files */
static void test_steal(void)
{
	const char *cases[] = {
		"cpu  10 0 20 3000 4 0 5 77 0 0\ncpu0 5 0 10 1500 2 0 2 40 0 0\n",
		"cpu  10 0 20 3000 4 0 5\n",	/* a kernel before steal */
		"cpux 1 2 3 4 5 6 7 8\n",
	};
	char path[256];
	uint64_t t = 0;
	bool ok[3];

	for (int i = 0; i < 3; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/stat", root);
		f = fopen(path, "w");
		if (f) {
			fputs(cases[i], f);
			fclose(f);
		}
		ok[i] = proc_steal_ticks(root, &t);
		if (i == 0)
			T_CHECK("proc_steal_ticks", ok[0] && t == 77, "%d %llu",
				ok[0], (unsigned long long)t);
	}
	T_CHECK("proc_steal_ticks_malformed", !ok[1] && !ok[2], "%d %d",
		ok[1], ok[2]);
	unlink(path);
}

static void test_first_sight(void)
{
	struct proc_table_options o = { .root = root };
	struct proc_table *t = proc_table_new(&o);
	struct found f;

	fake_proc(100, "we(ird) na", 4242);
	T_CHECK("proc_first_sample", proc_table_sample(t, 100, 10, "thread", false, 7) == 1,
		"not the first");
	T_CHECK("proc_second_sample", proc_table_sample(t, 100, 11, "thread", false, 7) == 0,
		"first again");
	f = find(t, 100);
	T_CHECK("proc_stat_comm", f.n == 1 && !strcmp(f.comm, "we(ird) na"),
		"n %d comm '%s'", f.n, f.comm);
	T_CHECK("proc_start_ticks", f.last.start_ticks == 4242 && f.last.start_ns == 10,
		"%llu %llu", (unsigned long long)f.last.start_ticks,
		(unsigned long long)f.last.start_ns);
	T_CHECK("proc_exe", !strcmp(f.exe, "/usr/bin/fake prog"), "'%s'", f.exe);
	T_CHECK("proc_cgroup", !strncmp(f.cg, "/system.slice/docker-0123", 25) &&
		!strncmp(f.id, "0123456789abcdef", 16) && f.last.cgroup_id == 7,
		"'%s' '%s'", f.cg, f.id);
	/* the leader's comm names the process */
	proc_table_sample(t, 100, 12, "leader", true, 7);
	f = find(t, 100);
	T_CHECK("proc_leader_comm", !strcmp(f.comm, "leader"), "'%s'", f.comm);
	/* an exec record brings comm and the file: /proc is read for cgroup only */
	proc_table_exec(t, 100, 13, "newimage", "/bin/new");
	f = find(t, 100);
	T_CHECK("proc_exec_names", !strcmp(f.comm, "newimage") && !strcmp(f.exe, "/bin/new"),
		"'%s' '%s'", f.comm, f.exe);
	/* unknown to /proc: the sample's comm, nothing else */
	proc_table_sample(t, 555, 10, "ghost", true, 0);
	f = find(t, 555);
	T_CHECK("proc_gone_from_proc", f.n == 1 && !strcmp(f.comm, "ghost") &&
		!strcmp(f.exe, "-") && f.last.start_ticks == 0, "n %d '%s'", f.n, f.comm);
	proc_table_free(t);
}

static void test_pid_reuse(void)
{
	struct proc_table_options o = { .root = root };
	struct proc_table *t = proc_table_new(&o);
	struct proc_table_stats st;
	struct found f;

	fake_proc(200, "old", 1);
	proc_table_sample(t, 200, 100, "old", true, 1);
	proc_table_exit(t, 200, 200, "old", false);
	T_CHECK("proc_exited", proc_table_exited(t, 200), "not exited");
	/* a sample taken before the exit, read late from another CPU's ring */
	T_CHECK("proc_late_sample_old", proc_table_sample(t, 200, 150, "old", true, 1) == 0,
		"not the old process");
	proc_table_get_stats(t, &st);
	T_CHECK("proc_late_no_new", st.created == 1 && st.reused == 0,
		"created %llu", (unsigned long long)st.created);
	/* a record after the exit: the pid was reused */
	proc_table_exec(t, 200, 300, "new", "/bin/new");
	proc_table_get_stats(t, &st);
	T_CHECK("proc_reuse_counted", st.created == 2 && st.reused == 1 && st.exited == 1,
		"created %llu reused %llu exited %u", (unsigned long long)st.created,
		(unsigned long long)st.reused, st.exited);
	T_CHECK("proc_reuse_live", !proc_table_exited(t, 200), "newest exited");
	proc_table_sample(t, 200, 310, "new", true, 1);
	f = find(t, 200);
	T_CHECK("proc_reuse_newest_shown", f.n == 1 && !strcmp(f.comm, "new") &&
		f.last.start_ns == 300, "n %d '%s'", f.n, f.comm);
	/* the old one goes with its samples' generation; the new one stays */
	proc_table_release(t, proc_table_advance(t));
	proc_table_get_stats(t, &st);
	T_CHECK("proc_reuse_old_released", st.procs == 1 && st.released == 1,
		"procs %u released %llu", st.procs, (unsigned long long)st.released);
	proc_table_free(t);
}

/*
 * The last thread is still sampled after its exit record, while do_exit()
 * tears its memory down: those samples are its process's, not a new one's
 * (which /proc would no longer describe: no exe path). Times in ns.
 */
static void test_exit_tail(void)
{
	struct proc_table_options o = { .root = root };
	struct proc_table *t = proc_table_new(&o);
	struct proc_table_stats st;
	const uint64_t ms = 1000000;

	fake_proc(210, "tail", 1);
	proc_table_exec(t, 210, 1000 * ms, "tail", "/usr/bin/tail");
	proc_table_sample(t, 210, 1001 * ms, "tail", true, 1);
	proc_table_exit(t, 210, 1500 * ms, "tail", false);
	proc_table_sample(t, 210, 1520 * ms, "tail", true, 1);
	proc_table_get_stats(t, &st);
	T_CHECK("proc_exit_tail_sample_same_process", st.created == 1 && st.reused == 0,
		"created %llu reused %llu", (unsigned long long)st.created,
		(unsigned long long)st.reused);
	T_CHECK("proc_exit_tail_keeps_exe", find(t, 210).n == 1 &&
		!strcmp(find(t, 210).exe, "/usr/bin/tail"), "exe '%s'", find(t, 210).exe);
	/* a second later the pid can only be another process's */
	proc_table_sample(t, 210, 2600 * ms, "other", true, 1);
	proc_table_get_stats(t, &st);
	T_CHECK("proc_after_exit_tail_new_process", st.created == 2 && st.reused == 1,
		"created %llu reused %llu", (unsigned long long)st.created,
		(unsigned long long)st.reused);
	proc_table_free(t);
}

static void test_release(void)
{
	struct proc_table_options o = { .root = root };
	struct proc_table *t = proc_table_new(&o);
	struct proc_table_stats st;
	uint32_t g1, g2;

	fake_proc(300, "short", 5);
	proc_table_sample(t, 300, 10, "short", true, 1);
	g1 = proc_table_advance(t);	/* interval 1 handed to the writer */
	/* in interval 2: a last sample, then the exit */
	proc_table_sample(t, 300, 20, "short", true, 1);
	proc_table_exit(t, 300, 30, "short", false);
	proc_table_release(t, g1);	/* interval 1 written */
	proc_table_get_stats(t, &st);
	T_CHECK("proc_exit_pending_kept", st.procs == 1 && st.exited == 1 &&
		find(t, 300).n == 1, "procs %u exited %u", st.procs, st.exited);
	g2 = proc_table_advance(t);
	proc_table_release(t, g2);	/* interval 2 written */
	proc_table_get_stats(t, &st);
	T_CHECK("proc_exit_released", st.procs == 0 && st.released == 1 &&
		st.bytes == 0, "procs %u released %llu bytes %zu", st.procs,
		(unsigned long long)st.released, st.bytes);
	/* an exit of an unknown process: kept only when asked */
	proc_table_exit(t, 301, 40, "x", false);
	proc_table_exit(t, 302, 40, "y", true);
	proc_table_get_stats(t, &st);
	T_CHECK("proc_exit_create", st.procs == 1 && proc_table_exited(t, 302) &&
		!proc_table_exited(t, 301), "procs %u", st.procs);
	/* never sampled: released at the next release */
	proc_table_release(t, proc_table_advance(t));
	proc_table_get_stats(t, &st);
	T_CHECK("proc_unsampled_released", st.procs == 0, "procs %u", st.procs);
	proc_table_free(t);
}

/*
 * Sampled processes that exited wait for their interval to be written,
 * across every sweep of the unsampled ones (which the sweep no longer
 * walks again: they move to their own list).
 */
static void test_sweep_keeps_sampled(void)
{
	struct proc_table_options o = { .root = root };
	struct proc_table *t = proc_table_new(&o);
	struct proc_table_stats st;
	uint64_t late = 20 + 2000000000ull;
	int found = 0;

	for (uint32_t pid = 500; pid < 510; pid++) {
		proc_table_sample(t, pid, 10, "s", true, 1);
		proc_table_exit(t, pid, 20, "s", false);
	}
	for (uint32_t pid = 520; pid < 530; pid++) {
		proc_table_exec(t, pid, 10, "u", "/bin/u");
		proc_table_exit(t, pid, 20, "u", false);
	}
	/* exits of unknown processes, past the grace: two sweeps */
	proc_table_exit(t, 999, late, "x", false);
	proc_table_exit(t, 998, late + 1000000000ull, "x", false);
	proc_table_get_stats(t, &st);
	for (uint32_t pid = 500; pid < 510; pid++)
		found += find(t, pid).n == 1;
	T_CHECK("proc_sweep_frees_unsampled_keeps_sampled",
		st.procs == 10 && found == 10 && st.released == 10,
		"procs %u found %d released %llu", st.procs, found,
		(unsigned long long)st.released);
	proc_table_release(t, proc_table_advance(t));
	proc_table_get_stats(t, &st);
	T_CHECK("proc_kept_released_once_written",
		st.procs == 0 && st.released == 20 && st.bytes == 0,
		"procs %u released %llu bytes %zu", st.procs,
		(unsigned long long)st.released, st.bytes);
	proc_table_free(t);
}

static void test_cap(void)
{
	struct proc_table_options o = { .root = root, .max_procs = 4 };
	struct proc_table *t = proc_table_new(&o);
	struct proc_table_stats st;

	for (uint32_t pid = 1; pid <= 4; pid++)
		proc_table_sample(t, 1000 + pid, 1, "p", true, 0);
	T_CHECK("proc_cap_refused", proc_table_sample(t, 1005, 1, "p", true, 0) == -1,
		"kept past the cap");
	proc_table_get_stats(t, &st);
	T_CHECK("proc_cap_refused_counted", st.refused == 1 && st.procs == 4,
		"refused %llu procs %u", (unsigned long long)st.refused, st.procs);
	/* written: the least recently used live process makes room */
	proc_table_sample(t, 1001, 2, "p", true, 0);
	proc_table_release(t, proc_table_advance(t));
	T_CHECK("proc_cap_evicts", proc_table_sample(t, 1005, 3, "p", true, 0) == 1,
		"refused");
	proc_table_get_stats(t, &st);
	T_CHECK("proc_cap_evicted_lru", st.evicted == 1 && st.procs == 4 &&
		find(t, 1002).n == 0, "evicted %llu", (unsigned long long)st.evicted);
	/* exited processes waiting for their samples are never evicted */
	proc_table_exit(t, 1003, 5, "p", false);
	proc_table_exit(t, 1004, 5, "p", false);
	proc_table_exit(t, 1001, 5, "p", false);
	proc_table_sample(t, 1003, 4, "p", true, 0);
	proc_table_sample(t, 1004, 4, "p", true, 0);
	proc_table_sample(t, 1001, 4, "p", true, 0);
	T_CHECK("proc_cap_keeps_exited", proc_table_sample(t, 1006, 6, "p", true, 0) == -1,
		"evicted one");
	proc_table_release(t, proc_table_advance(t));
	proc_table_get_stats(t, &st);
	T_CHECK("proc_cap_after_release", st.procs == 1 && st.released == 3,
		"procs %u released %llu", st.procs, (unsigned long long)st.released);
	/* an exited process that never took a sample goes first, oldest exit first */
	proc_table_sample(t, 1007, 7, "p", true, 0);
	proc_table_exec(t, 1008, 7, "e", "/bin/e");
	proc_table_exit(t, 1008, 8, "e", false);
	proc_table_exec(t, 1009, 7, "e", "/bin/e");
	proc_table_exit(t, 1009, 9, "e", false);
	T_CHECK("proc_cap_evicts_oldest_exited",
		proc_table_sample(t, 1010, 10, "p", true, 0) == 1 &&
		proc_table_exited(t, 1009) && !proc_table_exited(t, 1008),
		"not the oldest exited");
	proc_table_free(t);
}

static void test_malformed(void)
{
	struct proc_table_options o = { .root = root };
	struct proc_table *t = proc_table_new(&o);
	char big[20000];
	struct found f;

	put(400, "stat", "400 (no closing paren S 1 2 3\n");
	put(401, "stat", "401 (short) S 1 2\n");
	put(402, "stat", "402 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 notanumber 0\n");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put(403, "stat", big);
	put(403, "cgroup", big);
	put(404, "cgroup", "garbage without colons\n1:cpu:\n");
	for (uint32_t pid = 400; pid <= 404; pid++)
		proc_table_sample(t, pid, 1, "sample", true, 0);
	f = find(t, 400);
	T_CHECK("proc_stat_unclosed", f.n == 1 && !strcmp(f.comm, "sample") &&
		f.last.start_ticks == 0, "'%s'", f.comm);
	f = find(t, 401);
	T_CHECK("proc_stat_short", f.n == 1 && f.last.start_ticks == 0, "%llu",
		(unsigned long long)f.last.start_ticks);
	f = find(t, 402);
	T_CHECK("proc_stat_not_number", f.n == 1 && f.last.start_ticks == 0, "%llu",
		(unsigned long long)f.last.start_ticks);
	f = find(t, 403);
	T_CHECK("proc_oversized_files", f.n == 1 && !strcmp(f.cg, "-") &&
		!strcmp(f.id, "-"), "'%.20s'", f.cg);
	f = find(t, 404);
	T_CHECK("proc_cgroup_garbage", f.n == 1 && !strcmp(f.cg, "-") &&
		!strcmp(f.id, "-"), "'%.20s'", f.cg);
	proc_table_free(t);
}

struct maps_seen {
	int n;
	uint64_t first_start;
	char last_path[64];
};

static bool maps_cb(void *ctx, struct sym_map_line *m)
{
	struct maps_seen *ms = ctx;

	if (!ms->n++)
		ms->first_start = m->start;
	snprintf(ms->last_path, sizeof(ms->last_path), "%.*s",
		 (int)m->path_len, m->path);
	return true;
}

/*
 * proc_maps_read_cut(): a file past PROC_MAPS_MAX_BYTES (a process with a
 * huge map count) is read up to the budget and said cut, so that nobody
 * takes a mapping missing from its lines for one that is not there.
 */
static void test_maps_cut(void)
{
	static const char data[] = "7e0000000000-7e0000001000 rw-p 00000000 00:00 0\n";
	size_t n = PROC_MAPS_MAX_BYTES / (sizeof(data) - 1) + 16, i;
	struct maps_seen ms = { 0 };
	bool cut = true;
	char *text, *p;

	text = malloc(n * (sizeof(data) - 1) + 256);
	if (!text) {
		T_CHECK("maps_cut_said", false, "no memory");
		return;
	}
	p = text + sprintf(text, "00400000-00401000 r-xp 00000000 08:01 42 /first\n");
	for (i = 0; i < n; i++, p += sizeof(data) - 1)
		memcpy(p, data, sizeof(data) - 1);
	sprintf(p, "7f0000000000-7f0000001000 r-xp 00000000 08:01 44 /last\n");
	put(503, "maps", text);
	free(text);
	T_CHECK("maps_cut_said", proc_maps_read_cut(root, 503, maps_cb, &ms, NULL,
						    &cut) == 0 && cut &&
		ms.n == 1 && !strcmp(ms.last_path, "/first"),
		"cut %d n %d '%s'", cut, ms.n, ms.last_path);
	memset(&ms, 0, sizeof(ms));
	T_CHECK("maps_whole_not_cut", proc_maps_read_cut(root, 500, maps_cb, &ms,
							 NULL, &cut) == 0 && !cut &&
		ms.n == 1, "cut %d n %d", cut, ms.n);
}

/* proc_maps_read(): executable lines only, bounded, malformed skipped. */
static void test_maps(void)
{
	struct maps_seen ms = { 0 };
	uint64_t h1 = 0, h2 = 0, h3 = 0;
	char *text, *p;
	size_t cap = 64 << 10;

	put(500, "maps",
	    "00400000-00401000 r-xp 00000000 08:01 42 /usr/bin/prog\n"
	    "00600000-00601000 rw-p 00000000 08:01 42 /usr/bin/prog\n"
	    "garbage line\n"
	    "7f00-7e00 r-xp 00000000 08:01 43 /lib/backwards.so\n"
	    "7f0000000000-7f0000001000 r-xp 00000000 08:01 44 /lib/libc.so.6 (deleted)\n");
	T_CHECK("maps_read_ok", proc_maps_read(root, 500, maps_cb, &ms, &h1) == 0,
		"failed");
	T_CHECK("maps_exec_only", ms.n == 2 && ms.first_start == 0x400000 &&
		!strcmp(ms.last_path, "/lib/libc.so.6"), "n %d last '%s'", ms.n,
		ms.last_path);
	proc_maps_read(root, 500, maps_cb, &ms, &h2);
	T_CHECK("maps_hash_stable", h1 == h2, "hash changed");
	/* a data mapping more: the executable lines are the same */
	put(500, "maps",
	    "00400000-00401000 r-xp 00000000 08:01 42 /usr/bin/prog\n"
	    "00500000-00501000 rw-p 00000000 00:00 0\n"
	    "7f0000000000-7f0000001000 r-xp 00000000 08:01 44 /lib/libc.so.6 (deleted)\n");
	proc_maps_read(root, 500, maps_cb, &ms, &h3);
	T_CHECK("maps_hash_exec_lines", h3 == h1, "hash changed");
	put(500, "maps", "00400000-00402000 r-xp 00000000 08:01 42 /usr/bin/prog\n");
	proc_maps_read(root, 500, maps_cb, &ms, &h3);
	T_CHECK("maps_hash_changes", h3 != h1, "same hash");
	T_CHECK("maps_gone", proc_maps_read(root, 501, maps_cb, &ms, NULL) < 0,
		"read a missing file");
	/* a path longer than any that opens: that line skipped, not the rest */
	text = malloc(cap);
	if (!text)
		return;
	p = text + sprintf(text, "00400000-00401000 r-xp 00000000 08:01 42 /");
	memset(p, 'x', 9000);
	p += 9000;
	sprintf(p, "\n00800000-00801000 r-xp 00000000 08:01 45 /after\n");
	put(502, "maps", text);
	free(text);
	memset(&ms, 0, sizeof(ms));
	proc_maps_read(root, 502, maps_cb, &ms, NULL);
	T_CHECK("maps_long_line_skipped", ms.n == 1 && !strcmp(ms.last_path, "/after"),
		"n %d '%s'", ms.n, ms.last_path);
	{
		bool cut = false;

		proc_maps_read_cut(root, 502, maps_cb, &ms, NULL, &cut);
		T_CHECK("maps_long_line_said_cut", cut, "whole");
	}
	test_maps_cut();
}

static int slot_frees;

static void slot_free(void *data, void *ctx)
{
	slot_frees += ctx == (void *)&slot_frees;
	free(data);
}

static int slot_count(void *data, void *ctx)
{
	(void)data;
	(*(int *)ctx)++;
	return 0;
}

/* A user's data on a process goes with it: release, eviction, drop. */
static void test_slots(void)
{
	struct proc_table_options o = { .root = root, .max_procs = 3 };
	struct proc_table *t = proc_table_new(&o);
	void **sl, *old;
	int n = 0;

	proc_table_slot_owner(t, PROC_SLOT_SYM, slot_free, &slot_frees);
	fake_proc(600, "slotted", 9);
	sl = proc_table_slot(t, 600, PROC_SLOT_SYM, true);
	T_CHECK("slot_created_bare", sl && !*sl && find(t, 600).n == 0, "no slot");
	*sl = old = malloc(8);
	/* its first sample reads what the slot's user did not */
	proc_table_sample(t, 600, 10, NULL, false, 0);
	T_CHECK("slot_entry_read_at_sample", !strcmp(find(t, 600).comm, "slotted"),
		"'%s'", find(t, 600).comm);
	proc_table_exit(t, 600, 20, NULL, false);
	proc_table_exec(t, 600, 30, "again", "/bin/again");	/* reused */
	sl = proc_table_slot(t, 600, PROC_SLOT_SYM, false);
	T_CHECK("slot_new_process_empty", sl && !*sl, "slot of the old process");
	*sl = malloc(8);
	T_CHECK("slot_older", proc_table_slot_older(t, 600, PROC_SLOT_SYM, *sl) == old &&
		!proc_table_slot_older(t, 600, PROC_SLOT_SYM, old), "wrong older");
	proc_table_release(t, proc_table_advance(t));
	T_CHECK("slot_freed_at_release", slot_frees == 1, "%d frees", slot_frees);
	/* evicted with its process at the cap */
	*proc_table_slot(t, 601, PROC_SLOT_SYM, true) = malloc(8);
	proc_table_sample(t, 602, 40, "x", true, 0);
	proc_table_release(t, proc_table_advance(t));
	proc_table_sample(t, 603, 50, "y", true, 0);
	/* the least recently used of 600 (exec'd, never sampled) and 601 */
	T_CHECK("slot_freed_at_eviction", slot_frees == 2 &&
		!proc_table_slot(t, 600, PROC_SLOT_SYM, false), "%d frees", slot_frees);
	proc_table_slot_visit(t, PROC_SLOT_SYM, slot_count, &n);
	T_CHECK("slot_visit", n == 1, "%d", n);
	proc_table_slot_drop(t, PROC_SLOT_SYM);
	n = 0;
	proc_table_slot_visit(t, PROC_SLOT_SYM, slot_count, &n);
	T_CHECK("slot_drop", slot_frees == 3 && n == 0, "%d frees, %d left",
		slot_frees, n);
	proc_table_free(t);
}

/*
 * An exited process that never took a sample goes a second after its
 * exit (at a later exit record), not at the interval's end; one with
 * samples waits for its release.
 */
static void test_unsampled_exit(void)
{
	struct proc_table_options o = { .root = root };
	struct proc_table *t = proc_table_new(&o);
	const uint64_t s1 = 1000000000ull;
	struct proc_table_stats st;

	proc_table_exec(t, 800, 1 * s1, "quick", "/bin/quick");
	proc_table_exit(t, 800, 1 * s1 + 5, NULL, false);
	proc_table_sample(t, 801, 1 * s1, "sampled", true, 0);
	proc_table_exit(t, 801, 1 * s1 + 6, NULL, false);
	proc_table_exec(t, 802, 1 * s1 + 500000000ull, "later", "/bin/later");
	proc_table_exit(t, 802, 1 * s1 + 600000000ull, NULL, false);
	proc_table_get_stats(t, &st);
	T_CHECK("unsampled_exit_kept_in_grace", st.procs == 3 && st.released == 0,
		"procs %u released %llu", st.procs, (unsigned long long)st.released);
	/* another exit 1.5 s later: 800 goes, 801 (sampled) and 802 stay */
	proc_table_exec(t, 803, 2 * s1 + 500000000ull, "x", "/bin/x");
	proc_table_exit(t, 803, 2 * s1 + 500000000ull, NULL, false);
	proc_table_get_stats(t, &st);
	T_CHECK("unsampled_exit_freed_after_grace",
		st.procs == 3 && st.released == 1 && !proc_table_exited(t, 800) &&
		proc_table_exited(t, 801) && proc_table_exited(t, 802),
		"procs %u released %llu", st.procs, (unsigned long long)st.released);
	proc_table_release(t, proc_table_advance(t));
	proc_table_get_stats(t, &st);
	T_CHECK("unsampled_exit_sampled_at_release", st.procs == 0,
		"procs %u", st.procs);
	proc_table_free(t);
}

/* What a slot of another thread got back from the table. */
static void *slot_gone[4];
static int nr_slot_gone;

static void slot_hand_back(void *data, void *ctx)
{
	(void)ctx;
	if (nr_slot_gone < 4)
		slot_gone[nr_slot_gone++] = data;
}

/*
 * The unwind worker's slot: attached by pid and time like a sample, never
 * evicting, taken off again, handed back (not freed) when its process
 * goes, and adopted by the newest process of a reused pid.
 */
static void test_other_thread_slots(void)
{
	struct proc_table_options o = { .root = root, .max_procs = 3 };
	struct proc_table *t = proc_table_new(&o);
	struct proc_table_stats st;
	int a, b, c;
	void *held = &a;

	proc_table_slot_owner(t, PROC_SLOT_UNWIND, slot_hand_back, NULL);
	T_CHECK("other_slot_lookup_adds_nothing",
		!proc_table_slot_attach(t, 700, 10, PROC_SLOT_UNWIND, NULL) &&
		find(t, 700).n == 0, "made a process");
	T_CHECK("other_slot_attached",
		proc_table_slot_attach(t, 700, 10, PROC_SLOT_UNWIND, &a) == &a &&
		proc_table_slot_attach(t, 700, 11, PROC_SLOT_UNWIND, &b) == &a,
		"second attach replaced the first");
	/* a record before the exit is the old process's, after it a new one's */
	proc_table_exit(t, 700, 20, NULL, false);
	T_CHECK("other_slot_late_record_old_process",
		proc_table_slot_attach(t, 700, 15, PROC_SLOT_UNWIND, &b) == &a,
		"not the old process");
	T_CHECK("other_slot_reused_pid_new_process",
		proc_table_slot_attach(t, 700, 30, PROC_SLOT_UNWIND, &b) == &b,
		"same process");
	proc_table_get_stats(t, &st);
	T_CHECK("other_slot_reuse_counted", st.reused == 1 && st.procs == 2,
		"reused %llu procs %u", (unsigned long long)st.reused, st.procs);
	/* at the cap: refused, nothing evicted */
	proc_table_sample(t, 701, 31, "x", true, 0);
	proc_table_release(t, proc_table_advance(t));	/* frees old 700 */
	T_CHECK("other_slot_handed_back_at_release",
		nr_slot_gone == 1 && slot_gone[0] == &a, "%d handed back",
		nr_slot_gone);
	proc_table_sample(t, 702, 32, "y", true, 0);
	proc_table_release(t, proc_table_advance(t));
	held = proc_table_slot_attach(t, 703, 40, PROC_SLOT_UNWIND, &c);
	proc_table_get_stats(t, &st);
	T_CHECK("other_slot_never_evicts", !held && st.evicted == 0 &&
		st.procs == 3, "evicted %llu", (unsigned long long)st.evicted);
	/* taken off, then adopted by the live newest process of its pid */
	T_CHECK("other_slot_detach",
		proc_table_slot_detach(t, 700, PROC_SLOT_UNWIND, &b) &&
		!proc_table_slot_detach(t, 700, PROC_SLOT_UNWIND, &b),
		"detached twice");
	T_CHECK("other_slot_adopted",
		proc_table_slot_adopt(t, 700, PROC_SLOT_UNWIND, &a, &held) &&
		!held && proc_table_slot_attach(t, 700, 0, PROC_SLOT_UNWIND,
						 NULL) == &a, "not adopted");
	T_CHECK("other_slot_not_adopted_when_held",
		!proc_table_slot_adopt(t, 700, PROC_SLOT_UNWIND, &b, &held) &&
		held == &a, "replaced");
	proc_table_exit(t, 701, 50, NULL, false);
	T_CHECK("other_slot_not_adopted_by_exited",
		!proc_table_slot_adopt(t, 701, PROC_SLOT_UNWIND, &c, &held) &&
		!held, "adopted by an exited process");
	proc_table_free(t);
	T_CHECK("other_slot_handed_back_at_free", nr_slot_gone == 2 &&
		slot_gone[1] == &a, "%d handed back", nr_slot_gone);
}

/* The aggregation's thread and another (the unwind worker) at once. */
struct worker {
	struct proc_table *t;
	uint32_t base;
};

static int count_cb(const struct proc_info *p, void *ctx)
{
	(*(int *)ctx) += p->comm[0] != 0;
	return 0;
}

static void *hammer(void *arg)
{
	struct worker *w = arg;

	for (uint32_t i = 0; i < 20000; i++) {
		uint32_t pid = w->base + i % 500;
		int n = 0;

		proc_table_sample(w->t, pid, 2 * i + 1, "h", true, 0);
		/* the unwind worker's calls, against the other thread's */
		if (i % 3 == 0) {
			void *d = proc_table_slot_attach(w->t, pid, 2 * i + 1,
							 PROC_SLOT_UNWIND, w);

			if (d)
				proc_table_slot_detach(w->t, pid, PROC_SLOT_UNWIND, d);
		}
		if (i % 7 == 0)
			proc_table_exit(w->t, pid, 2 * i + 2, "h", false);
		if (i % 1000 == 0) {
			proc_table_visit(w->t, proc_table_generation(w->t), count_cb, &n);
			proc_table_release(w->t, proc_table_advance(w->t));
		}
		(void)proc_table_exited(w->t, pid);
	}
	return NULL;
}

static void test_threads(void)
{
	struct proc_table_options o = { .root = root, .max_procs = 600 };
	struct proc_table *t = proc_table_new(&o);
	struct worker w[2] = { { t, 5000 }, { t, 5200 } };
	struct proc_table_stats st;
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, hammer, &w[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	proc_table_get_stats(t, &st);
	T_CHECK("proc_threads_bounded", st.procs <= 600 && st.created > 0,
		"procs %u", st.procs);
	proc_table_free(t);
}

int main(void)
{
	char cmd[128];

	snprintf(root, sizeof(root), "/tmp/ember-test-proc-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_first_sight();
	test_pid_reuse();
	test_exit_tail();
	test_release();
	test_sweep_keeps_sampled();
	test_cap();
	test_malformed();
	test_maps();
	test_slots();
	test_other_thread_slots();
	test_unsampled_exit();
	test_threads();
	test_mapped_open();
	test_steal();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", root);
	T_EXIT();
}
