// SPDX-License-Identifier: GPL-2.0-only
/*
 * agent/proc/kmaps.c, new processes' mappings from EMBER_REC_MMAP: when a
 * process counts as known (exec with its new address space, in either
 * order; a forked child's copy never), a new mapping over old ones
 * (inside, across an edge, around: trimmed and split with the file
 * offset moved), the vDSO made up from the record's address, the bounds
 * (mappings per process, processes, bytes; exited ones kept, then
 * dropped), hostile records (sizes, unterminated paths, pid 0, cut
 * paths), losses, a reused pid, and several threads at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include "lib/clock.h"
#include "proc/kmaps.h"
#include "uapi/ember.h"
#include "test_maps.h"
#include "test_util.h"

static uint64_t now_ns = 1000000000ull;

/* A record in buf (room for the longest path). */
static struct ember_mmap *mk(void *buf, uint32_t pid, uint32_t gen,
			     uint64_t start, uint64_t len, uint64_t pgoff,
			     const char *path, uint32_t flags)
{
	struct ember_mmap *m = buf;
	size_t n = strlen(path) + 1;

	memset(m, 0, sizeof(*m) + ((n + 7) & ~7ul));
	m->hdr.type = EMBER_REC_MMAP;
	m->hdr.size = sizeof(*m) + ((n + 7) & ~7ul);
	m->time_ns = now_ns++;
	m->pid = m->tid = pid;
	m->start = start;
	m->len = len;
	m->pgoff = pgoff;
	m->ino = 1000 + (start >> 12);
	m->dev_major = 254;
	m->dev_minor = 1;
	m->cgroup_id = 77;
	m->prot = EMBER_MMAP_PROT_READ | EMBER_MMAP_PROT_EXEC;
	m->flags = flags;
	m->mm_gen = gen;
	m->path_len = (uint32_t)n;
	memcpy(m->path, path, n);
	return m;
}

static void mmap_rec(struct kmaps *k, uint32_t pid, uint32_t gen,
		     uint64_t start, uint64_t len, uint64_t pgoff,
		     const char *path)
{
	uint64_t buf[(sizeof(struct ember_mmap) + 4096) / 8 + 1];

	kmaps_record(k, &mk(buf, pid, gen, start, len, pgoff, path, 0)->hdr);
}

static void exec_rec(struct kmaps *k, uint32_t pid)
{
	uint64_t buf[(sizeof(struct ember_exec) + 16) / 8];
	struct ember_exec *e = (void *)buf;

	memset(buf, 0, sizeof(buf));
	e->hdr.type = EMBER_REC_EXEC;
	e->hdr.size = sizeof(buf);
	e->time_ns = now_ns++;
	e->pid = e->tid = pid;
	e->filename_len = 2;
	e->filename[0] = 'x';
	kmaps_record(k, &e->hdr);
}

static void exit_rec(struct kmaps *k, uint32_t pid, uint64_t t)
{
	struct ember_exit x;

	memset(&x, 0, sizeof(x));
	x.hdr.type = EMBER_REC_EXIT;
	x.hdr.size = sizeof(x);
	x.time_ns = t;
	x.pid = x.tid = pid;
	kmaps_record(k, &x.hdr);
}

/* What kmaps_read() gave, as "start-end:pgoff:path:type" lines. */
struct got {
	char text[4096];
	int n;
};

static bool collect(void *ctx, struct sym_map_line *m)
{
	struct got *g = ctx;
	size_t len = strlen(g->text);

	snprintf(g->text + len, sizeof(g->text) - len, "%llx-%llx:%llx:%.*s:%d%s ",
		 (unsigned long long)m->start, (unsigned long long)m->end,
		 (unsigned long long)m->pgoff, (int)m->path_len, m->path,
		 (int)m->type, m->dev == makedev(254, 1) || !m->ino ? "" : ":baddev");
	g->n++;
	return true;
}

static int rd(struct kmaps *k, uint32_t pid, struct got *g)
{
	memset(g, 0, sizeof(*g));
	return kmaps_read(k, pid, collect, g, NULL);
}

static void test_complete(void)
{
	struct kmaps *k = kmaps_new(0, 0);
	struct got g;

	/* the mmap hooks: the exec's own mappings, then EXEC */
	mmap_rec(k, 10, 1, 0x1000, 0x1000, 0, "/bin/a");
	T_CHECK("kmaps_not_before_exec", rd(k, 10, &g) == -ENOENT, "read before the exec");
	mmap_rec(k, 10, 2, 0x400000, 0x2000, 0x1000, "/usr/bin/prog");
	mmap_rec(k, 10, 2, 0x7f0000, 0x3000, 0x2000, "/lib/ld.so");
	exec_rec(k, 10);
	T_CHECK("kmaps_exec_after_mmaps", rd(k, 10, &g) == 0 && g.n == 2 &&
		!strcmp(g.text, "400000-402000:1000:/usr/bin/prog:0 7f0000-7f3000:2000:/lib/ld.so:0 "),
		"%d: %s", g.n, g.text);
	/* the tracepoint hook: EXEC, then its mappings */
	mmap_rec(k, 11, 5, 0x1000, 0x1000, 0, "/bin/sh");	/* forked copy */
	exec_rec(k, 11);
	mmap_rec(k, 11, 6, 0x500000, 0x1000, 0, "/usr/bin/other");
	T_CHECK("kmaps_exec_before_mmaps", rd(k, 11, &g) == 0 && g.n == 1 &&
		strstr(g.text, "/usr/bin/other"), "%d: %s", g.n, g.text);
	/* a forked child that never exec'd: its copy was never told */
	mmap_rec(k, 12, 9, 0x1000, 0x1000, 0, "/lib/late.so");
	T_CHECK("kmaps_fork_copy_unknown", rd(k, 12, &g) == -ENOENT, "known");
	/* an unknown pid */
	T_CHECK("kmaps_unknown_pid", rd(k, 13, &g) == -ENOENT, "known");
	/* a later dlopen joins the known process */
	mmap_rec(k, 10, 2, 0x900000, 0x1000, 0, "/lib/dl.so");
	T_CHECK("kmaps_dlopen", rd(k, 10, &g) == 0 && g.n == 3, "%d", g.n);
	/* a second exec: its address space replaces everything */
	mmap_rec(k, 10, 3, 0x600000, 0x1000, 0, "/usr/bin/next");
	T_CHECK("kmaps_exec_again", rd(k, 10, &g) == 0 && g.n == 1 &&
		strstr(g.text, "/usr/bin/next"), "%d: %s", g.n, g.text);
	T_CHECK("kmaps_cgroup", kmaps_cgroup(k, 10) == 77 && kmaps_cgroup(k, 99) == 0,
		"%llu", (unsigned long long)kmaps_cgroup(k, 10));
	kmaps_free(k);
}

static void test_overlap(void)
{
	struct kmaps *k = kmaps_new(0, 0);
	struct got g;

	exec_rec(k, 20);
	mmap_rec(k, 20, 1, 0x10000, 0x10000, 0x0, "/a");	/* 10000-20000 */
	mmap_rec(k, 20, 1, 0x30000, 0x2000, 0x0, "/b");
	/* around: /a split in two, the right part's offset moved */
	mmap_rec(k, 20, 1, 0x14000, 0x1000, 0x0, "/c");
	T_CHECK("kmaps_split", rd(k, 20, &g) == 0 && g.n == 4 &&
		!strcmp(g.text, "10000-14000:0:/a:0 14000-15000:0:/c:0 "
			"15000-20000:5000:/a:0 30000-32000:0:/b:0 "),
		"%d: %s", g.n, g.text);
	/* across edges: the left /a trimmed at its end, /b at its start,
	 * /c and the right /a inside: gone */
	mmap_rec(k, 20, 1, 0x12000, 0x1f000, 0x0, "/d");	/* 12000-31000 */
	T_CHECK("kmaps_trim", rd(k, 20, &g) == 0 && g.n == 3 &&
		!strcmp(g.text, "10000-12000:0:/a:0 12000-31000:0:/d:0 "
			"31000-32000:1000:/b:0 "),
		"%d: %s", g.n, g.text);
	/* exactly over: replaced */
	mmap_rec(k, 20, 1, 0x12000, 0x1f000, 0x0, "/e");
	T_CHECK("kmaps_replace", rd(k, 20, &g) == 0 && g.n == 3 &&
		strstr(g.text, "/e") && !strstr(g.text, "/d"), "%s", g.text);
	kmaps_free(k);
}

static void test_vdso_types(void)
{
	uint64_t buf[(sizeof(struct ember_mmap) + 64) / 8];
	struct kmaps *k = kmaps_new(0, 0);
	struct ember_mmap *m;
	struct got g;

	kmaps_set_vdso_len(k, 0x2000);
	exec_rec(k, 30);
	m = mk(buf, 30, 1, 0x400000, 0x1000, 0, "/usr/bin/x", 0);
	m->vdso = 0x7ffd0000;
	kmaps_record(k, &m->hdr);
	kmaps_record(k, &mk(buf, 30, 1, 0x500000, 0x1000, 0, "", EMBER_MMAP_F_ANON)->hdr);
	kmaps_record(k, &mk(buf, 30, 1, 0x600000, 0x1000, 0, "/memfd:jit", EMBER_MMAP_F_DELETED)->hdr);
	T_CHECK("kmaps_vdso_made_up", rd(k, 30, &g) == 0 && g.n == 4 &&
		strstr(g.text, "7ffd0000-7ffd2000:0:[vdso]:3 ") &&
		strstr(g.text, "500000-501000:0::2 ") &&
		strstr(g.text, "/memfd:jit:1 "), "%d: %s", g.n, g.text);
	/* a told vDSO is not made up again */
	m = mk(buf, 30, 1, 0x7ffd0000, 0x2000, 0, "[vdso]", EMBER_MMAP_F_VDSO);
	m->vdso = 0x7ffd0000;
	kmaps_record(k, &m->hdr);
	T_CHECK("kmaps_vdso_once", rd(k, 30, &g) == 0 && g.n == 4, "%d: %s", g.n, g.text);
	kmaps_free(k);

	/*
	 * x86's map_vdso() sets mm->context.vdso after installing the
	 * pages: the vDSO's own record comes anonymous and without a vdso
	 * address, the next ones carry it. One vDSO line, no overlapping
	 * anonymous one (the module refuses a binding that overlaps).
	 */
	k = kmaps_new(0, 0);
	kmaps_set_vdso_len(k, 0x2000);
	exec_rec(k, 31);
	kmaps_record(k, &mk(buf, 31, 1, 0x7ffd0000, 0x2000, 0, "", EMBER_MMAP_F_ANON)->hdr);
	m = mk(buf, 31, 1, 0x400000, 0x1000, 0, "/usr/bin/x", 0);
	m->vdso = 0x7ffd0000;
	kmaps_record(k, &m->hdr);
	kmaps_record(k, &mk(buf, 31, 1, 0x7ffe0000, 0x1000, 0, "", EMBER_MMAP_F_ANON)->hdr);
	T_CHECK("kmaps_vdso_told_anonymous", rd(k, 31, &g) == 0 && g.n == 3 &&
		strstr(g.text, "400000-401000:0:/usr/bin/x:0 7ffd0000-7ffd2000:0:[vdso]:3 7ffe0000-7ffe1000:0::2 "),
		"%d: %s", g.n, g.text);
	kmaps_free(k);
}

/*
 * A JIT's code made executable by mprotect is told by no hook but the
 * kprobe: the backend's miss on a PC kmaps does not hold either sends
 * the process to /proc; a miss inside a known mapping does not.
 */
static void miss_rec(struct kmaps *k, uint32_t pid, uint64_t pc, uint64_t t)
{
	struct ember_unwind_miss m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = EMBER_REC_UNWIND_MISS;
	m.hdr.size = sizeof(m);
	m.time_ns = t;
	m.pid = m.tid = pid;
	m.pc = pc;
	kmaps_record(k, &m.hdr);
}

static void test_untold_code(void)
{
	struct kmaps *k = kmaps_new(0, 0);
	struct kmaps_stats st;
	struct got g;

	exec_rec(k, 40);
	mmap_rec(k, 40, 1, 0x400000, 0x1000, 0, "/usr/bin/x");
	miss_rec(k, 40, 0x400800, now_ns++);
	T_CHECK("kmaps_miss_inside_known", rd(k, 40, &g) == 0 && g.n == 1,
		"%d: %s", g.n, g.text);
	miss_rec(k, 40, 0x7f0000001000, now_ns++);
	T_CHECK("kmaps_miss_untold_reads_proc", rd(k, 40, &g) == -ENOENT, "%s",
		g.text);
	kmaps_get_stats(k, &st);
	T_CHECK("kmaps_miss_untold_counted", st.untold == 1, "%llu",
		(unsigned long long)st.untold);
	kmaps_free(k);
}

/*
 * A binding read /proc because of a pending miss: what /proc shows
 * settles the misses from before the read. One in no code (a return
 * address from a bad frame) is dropped, and kmaps answers again; one in
 * code /proc shows waits for its record (read later from another CPU's
 * ring); one taken after the read began waits for the next.
 */
static void test_settle_from_proc(void)
{
	struct sym_map_line text = { .start = 0x400000, .end = 0x401000 };
	struct sym_map_line both[2] = {
		{ .start = 0x400000, .end = 0x401000 },
		{ .start = 0x7e0000000000, .end = 0x7e0000010000 },
	};
	struct kmaps *k = kmaps_new(0, 0);
	struct kmaps_stats st;
	struct got g;
	uint64_t t;

	exec_rec(k, 42);
	mmap_rec(k, 42, 1, 0x400000, 0x1000, 0, "/usr/bin/x");
	miss_rec(k, 42, 0x6080ceac8d3b9300ull, now_ns++);	/* garbage */
	t = now_ns++;
	miss_rec(k, 42, 0x7d0000000000ull, now_ns++);		/* after t */
	kmaps_settle_from_proc(k, 42, t, &text, 1);
	T_CHECK("kmaps_settle_later_miss_waits", rd(k, 42, &g) == -ENOENT,
		"%s", g.text);
	kmaps_settle_from_proc(k, 42, now_ns++, &text, 1);
	T_CHECK("kmaps_settle_no_code_answers_again",
		rd(k, 42, &g) == 0 && g.n == 1, "%d: %s", g.n, g.text);
	kmaps_get_stats(k, &st);
	T_CHECK("kmaps_settle_no_code_counted", st.no_code == 2, "%llu",
		(unsigned long long)st.no_code);
	/* code that /proc shows: pending until its record is read */
	miss_rec(k, 42, 0x7e0000000100ull, now_ns++);
	kmaps_settle_from_proc(k, 42, now_ns++, both, 2);
	T_CHECK("kmaps_settle_code_on_proc_stays_pending",
		rd(k, 42, &g) == -ENOENT, "%s", g.text);
	mmap_rec(k, 42, 1, 0x7e0000000000ull, 0x10000, 0, "/usr/lib/late.so");
	T_CHECK("kmaps_settle_code_on_proc_known_after_its_record",
		rd(k, 42, &g) == 0 && g.n == 2, "%d: %s", g.n, g.text);
	kmaps_free(k);
}

/*
 * The rings are per CPU and read in turn: a miss can be taken before the
 * mapping record an earlier CPU wrote first. Once that record is taken,
 * the process is known again; a miss of the address space before the
 * exec (the forked copy's code) never sends it to /proc.
 */
static void test_miss_before_its_mapping(void)
{
	struct kmaps *k = kmaps_new(0, 0);
	uint64_t buf[(sizeof(struct ember_mmap) + 4096) / 8 + 1];
	struct ember_mmap *lib;
	struct got g;
	uint64_t t_old = now_ns++;

	exec_rec(k, 41);
	mmap_rec(k, 41, 1, 0x400000, 0x1000, 0, "/usr/bin/x");
	/* libc's record, written before the miss, taken after it */
	lib = mk(buf, 41, 1, 0x7f0000000000, 0x20000, 0, "/lib/libc.so.6", 0);
	miss_rec(k, 41, 0x7f0000000100, now_ns++);
	T_CHECK("kmaps_miss_early_reads_proc_meanwhile",
		rd(k, 41, &g) == -ENOENT, "%s", g.text);
	kmaps_record(k, &lib->hdr);
	T_CHECK("kmaps_miss_early_known_after_its_mapping",
		rd(k, 41, &g) == 0 && g.n == 2, "%d: %s", g.n, g.text);
	/* a miss in the parent's code, from before the exec */
	miss_rec(k, 41, 0x5500000000, t_old);
	T_CHECK("kmaps_miss_of_old_image_ignored",
		rd(k, 41, &g) == 0 && g.n == 2, "%d: %s", g.n, g.text);
	/* more untold PCs than can wait: /proc for good */
	for (int i = 0; i < 5; i++)
		miss_rec(k, 41, 0x6600000000 + 0x1000 * i, now_ns++);
	mmap_rec(k, 41, 1, 0x6600000000, 0x10000, 0, "/usr/lib/late.so");
	T_CHECK("kmaps_miss_too_many_reads_proc", rd(k, 41, &g) == -ENOENT,
		"%s", g.text);
	kmaps_free(k);
}

static void test_hostile(void)
{
	uint64_t buf[(sizeof(struct ember_mmap) + 4096 + 64) / 8];
	struct kmaps *k = kmaps_new(0, 0);
	struct kmaps_stats st;
	struct ember_mmap *m;
	char longp[5000];
	struct got g;

	exec_rec(k, 40);
	mmap_rec(k, 40, 1, 0x1000, 0x1000, 0, "/ok");
	/* unterminated path */
	m = mk(buf, 40, 1, 0x2000, 0x1000, 0, "/abcdefg", 0);
	memset(m->path, 'x', m->path_len);
	kmaps_record(k, &m->hdr);
	/* path_len past the record */
	m = mk(buf, 40, 1, 0x3000, 0x1000, 0, "/a", 0);
	m->path_len = 4000;
	kmaps_record(k, &m->hdr);
	/* path_len 0, len 0, a range that wraps, pid 0, a short record */
	m = mk(buf, 40, 1, 0x4000, 0x1000, 0, "/a", 0);
	m->path_len = 0;
	kmaps_record(k, &m->hdr);
	kmaps_record(k, &mk(buf, 40, 1, 0x5000, 0, 0, "/a", 0)->hdr);
	kmaps_record(k, &mk(buf, 40, 1, ~0ull - 10, 0x1000, 0, "/a", 0)->hdr);
	kmaps_record(k, &mk(buf, 0, 1, 0x6000, 0x1000, 0, "/a", 0)->hdr);
	m = mk(buf, 40, 1, 0x7000, 0x1000, 0, "/a", 0);
	m->hdr.size = sizeof(*m) - 8;
	kmaps_record(k, &m->hdr);
	kmaps_get_stats(k, &st);
	T_CHECK("kmaps_hostile_refused", st.bad == 7 && rd(k, 40, &g) == 0 && g.n == 1,
		"bad %llu, %d maps: %s", (unsigned long long)st.bad, g.n, g.text);
	/* a path the backend cut: the process is not known any more */
	memset(longp, 'a', sizeof(longp));
	longp[0] = '/';
	longp[4094] = '\0';
	kmaps_record(k, &mk(buf, 40, 1, 0x8000, 0x1000, 0, longp, EMBER_MMAP_F_CUT)->hdr);
	T_CHECK("kmaps_cut_path_unknown", rd(k, 40, &g) == -ENOENT, "known");
	/* its next address space is a fresh start */
	mmap_rec(k, 40, 2, 0x9000, 0x1000, 0, "/next");
	T_CHECK("kmaps_cut_then_exec", rd(k, 40, &g) == 0 && g.n == 1, "%d", g.n);
	kmaps_free(k);
}

static void test_bounds(void)
{
	struct kmaps *k = kmaps_new(16, 1u << 20);
	struct kmaps_stats st;
	struct got g;
	uint32_t i;

	/* mappings per process */
	exec_rec(k, 50);
	for (i = 0; i <= KMAPS_MAX_MAPS; i++)
		mmap_rec(k, 50, 1, 0x100000 + (uint64_t)i * 0x2000, 0x1000, 0, "/lib/many.so");
	kmaps_get_stats(k, &st);
	T_CHECK("kmaps_max_maps", st.over_maps == 1 && rd(k, 50, &g) == -ENOENT,
		"over %llu", (unsigned long long)st.over_maps);
	/* processes: 16 at most, exited ones go first */
	for (i = 0; i < 40; i++) {
		exec_rec(k, 100 + i);
		mmap_rec(k, 100 + i, 1, 0x1000, 0x1000, 0, "/bin/p");
		if (i == 5)
			exit_rec(k, 105, now_ns++);
	}
	kmaps_get_stats(k, &st);
	T_CHECK("kmaps_max_procs", st.procs <= 16 && st.evicted >= 24 &&
		rd(k, 139, &g) == 0 && rd(k, 100, &g) == -ENOENT,
		"%u procs, %llu evicted", st.procs, (unsigned long long)st.evicted);
	/* an exited process is kept a while, then dropped at a later exit */
	exit_rec(k, 139, now_ns);
	T_CHECK("kmaps_exited_kept", rd(k, 139, &g) == 0, "gone at once");
	now_ns += KMAPS_KEEP_NS + 1;
	exit_rec(k, 138, now_ns);
	T_CHECK("kmaps_exited_dropped", rd(k, 139, &g) == -ENOENT, "still there");
	/* a late record of the exited process is not a new one; a later is */
	mmap_rec(k, 138, 1, 0x2000, 0x1000, 0, "/late");
	T_CHECK("kmaps_late_record", rd(k, 138, &g) == 0 && !strstr(g.text, "/late"),
		"%s", g.text);
	now_ns += 10;
	mmap_rec(k, 138, 1, 0x2000, 0x1000, 0, "/new");
	T_CHECK("kmaps_reused_pid", rd(k, 138, &g) == -ENOENT, "the new one is known already");
	/* bytes: long paths in a small budget */
	{
		struct kmaps *b = kmaps_new(0, 64u << 10);
		char p[3000];

		memset(p, 'b', sizeof(p));
		p[0] = '/';
		p[sizeof(p) - 1] = '\0';
		for (i = 0; i < 200; i++) {
			exec_rec(b, 1000 + i);
			mmap_rec(b, 1000 + i, 1, 0x1000, 0x1000, 0, p);
		}
		kmaps_get_stats(b, &st);
		T_CHECK("kmaps_max_bytes", st.bytes <= (64u << 10) && st.evicted > 0 &&
			rd(b, 1199, &g) == 0,
			"%zu bytes, %llu evicted", st.bytes, (unsigned long long)st.evicted);
		kmaps_free(b);
	}
	kmaps_free(k);
}

/*
 * The reader feeds kmaps; the thread that symbolizes may be seconds
 * behind it (a loaded or emulated machine). A short-lived process's
 * mappings are kept KMAPS_KEEP_NS past its exit on that thread's clock,
 * and answered even with a miss no mapping explains (no /proc is left).
 */
static void test_consumer_behind(void)
{
	struct kmaps *k = kmaps_new(0, 0);
	struct got g;
	uint64_t t_exit;

	kmaps_consumed(k, now_ns);
	exec_rec(k, 60);
	mmap_rec(k, 60, 1, 0x400000, 0x1000, 0, "/usr/bin/short");
	t_exit = now_ns++;
	exit_rec(k, 60, t_exit);
	/* the reader is 6 s further; the consumer has not reached the exit */
	now_ns += KMAPS_KEEP_NS + 1000000000ull;
	exec_rec(k, 61);
	exit_rec(k, 61, now_ns++);
	T_CHECK("kmaps_kept_for_a_late_consumer",
		rd(k, 60, &g) == 0 && g.n == 1, "%d: %s", g.n, g.text);
	/* the consumer gets past the keep time: gone at the next exit */
	kmaps_consumed(k, t_exit + KMAPS_KEEP_NS + 1);
	exit_rec(k, 61, now_ns++);
	exec_rec(k, 62);
	exit_rec(k, 62, now_ns++);
	T_CHECK("kmaps_dropped_once_consumed", rd(k, 60, &g) == -ENOENT,
		"%d: %s", g.n, g.text);
	/* a miss that no record explains: /proc while alive, the told
	 * mappings once exited */
	exec_rec(k, 63);
	mmap_rec(k, 63, 1, 0x400000, 0x1000, 0, "/usr/bin/short");
	miss_rec(k, 63, 0x7f0000001000, now_ns++);
	T_CHECK("kmaps_untold_miss_alive_reads_proc", rd(k, 63, &g) == -ENOENT,
		"%s", g.text);
	exit_rec(k, 63, now_ns++);
	T_CHECK("kmaps_untold_miss_exited_answers",
		rd(k, 63, &g) == 0 && g.n == 1, "%d: %s", g.n, g.text);
	kmaps_free(k);
}

static void test_lost(void)
{
	struct kmaps *k = kmaps_new(0, 0);
	struct got g;

	exec_rec(k, 60);
	mmap_rec(k, 60, 1, 0x1000, 0x1000, 0, "/a");
	kmaps_lost(k);
	T_CHECK("kmaps_lost_unknown", rd(k, 60, &g) == -ENOENT, "still known");
	/*
	 * An exec told from before the loss notice (its records read late)
	 * may have lost some: /proc. One told after it is whole.
	 */
	exec_rec(k, 61);
	mmap_rec(k, 61, 1, 0x1000, 0x1000, 0, "/a");
	T_CHECK("kmaps_lost_exec_before_notice_unknown",
		rd(k, 61, &g) == -ENOENT, "known: %s", g.text);
	now_ns = mono_ns() + 1000000000ull;	/* records after the notice */
	mmap_rec(k, 60, 2, 0x1000, 0x1000, 0, "/b");
	T_CHECK("kmaps_lost_next_exec", rd(k, 60, &g) == 0, "not known after its next exec");
	exec_rec(k, 62);
	mmap_rec(k, 62, 1, 0x1000, 0x1000, 0, "/c");
	T_CHECK("kmaps_lost_exec_after_notice_known", rd(k, 62, &g) == 0,
		"not known");
	/* a record of 62's from before the notice, read late */
	now_ns = 1000;
	mmap_rec(k, 62, 1, 0x5000, 0x1000, 0, "/c2");
	T_CHECK("kmaps_lost_late_old_record_unknown", rd(k, 62, &g) == -ENOENT,
		"known: %s", g.text);
	now_ns = mono_ns() + 2000000000ull;
	T_CHECK("kmaps_null_safe", kmaps_read(NULL, 1, collect, &g, NULL) == -ENOENT &&
		!kmaps_active(NULL) && kmaps_cgroup(NULL, 1) == 0, "NULL");
	kmaps_free(k);
}

/*
 * After a loss, a process is read from /proc; when a whole read begun
 * after the loss shows only mappings kmaps holds (plus the vsyscall
 * page), kmaps answers for it again. A line it lacks (a lost record's
 * library), another file at a start it holds, a read begun before the
 * loss, a process broken for a bound, or one never complete: /proc still.
 */
static void test_lost_mended(void)
{
	struct sym_map_line lines[4] = {
		{ .start = 0x400000, .end = 0x401000, .ino = 1000 + 0x400,
		  .dev = makedev(254, 1), .type = SYM_MAP_FILE },
		{ .start = 0x7f0000000000, .end = 0x7f0000002000,
		  .ino = 1000 + (0x7f0000000000 >> 12), .dev = makedev(254, 1),
		  .type = SYM_MAP_FILE },
		{ .start = 0xffffffffff600000, .end = 0xffffffffff601000,
		  .type = SYM_MAP_VSYSCALL },
		{ .start = 0x7f1000000000, .end = 0x7f1000001000, .ino = 9,
		  .dev = makedev(254, 1), .type = SYM_MAP_FILE },
	};
	uint64_t buf[(sizeof(struct ember_mmap) + 64) / 8 + 1];
	struct kmaps *k = kmaps_new(0, 0);
	uint64_t before = mono_ns();
	struct kmaps_stats st;
	struct got g;

	exec_rec(k, 70);
	mmap_rec(k, 70, 1, 0x400000, 0x1000, 0, "/usr/bin/x");
	/* told longer than the mapping (arm64's loader: kmaps.h) */
	mmap_rec(k, 70, 1, 0x7f0000000000, 0x3000, 0, "/lib/a.so");
	kmaps_lost(k);
	kmaps_settle_from_proc(k, 70, before, lines, 3);
	T_CHECK("kmaps_lost_read_before_loss_not_mended",
		rd(k, 70, &g) == -ENOENT, "%s", g.text);
	kmaps_settle_from_proc(k, 70, mono_ns(), lines, 4);
	T_CHECK("kmaps_lost_line_lacking_not_mended",
		rd(k, 70, &g) == -ENOENT, "%s", g.text);
	lines[1].ino = 5;
	kmaps_settle_from_proc(k, 70, mono_ns(), lines, 3);
	lines[1].ino = 1000 + (0x7f0000000000 >> 12);
	T_CHECK("kmaps_lost_other_file_not_mended",
		rd(k, 70, &g) == -ENOENT, "%s", g.text);
	lines[1].dev = makedev(8, 1);
	kmaps_settle_from_proc(k, 70, mono_ns(), lines, 3);
	lines[1].dev = makedev(254, 1);
	T_CHECK("kmaps_lost_other_device_not_mended",
		rd(k, 70, &g) == -ENOENT, "%s", g.text);
	lines[1].pgoff = 0x1000;
	kmaps_settle_from_proc(k, 70, mono_ns(), lines, 3);
	lines[1].pgoff = 0;
	T_CHECK("kmaps_lost_other_offset_not_mended",
		rd(k, 70, &g) == -ENOENT, "%s", g.text);
	kmaps_settle_from_proc(k, 70, mono_ns(), NULL, 0);
	kmaps_settle_from_proc(k, 70, mono_ns(), &lines[2], 1);
	T_CHECK("kmaps_lost_no_file_not_mended",
		rd(k, 70, &g) == -ENOENT, "%s", g.text);
	/* mapped after the read began: in no line, but told while lost */
	mmap_rec(k, 70, 1, 0x7f2000000000, 0x1000, 0, "/lib/new.so");
	kmaps_settle_from_proc(k, 70, mono_ns(), lines, 3);
	kmaps_get_stats(k, &st);
	T_CHECK("kmaps_lost_mended", rd(k, 70, &g) == 0 && g.n == 3 &&
		strstr(g.text, "/lib/new.so") && st.mended == 1,
		"%d: %s (mended %llu)", g.n, g.text,
		(unsigned long long)st.mended);
	/* broken for a bound after the loss: a cut path */
	exec_rec(k, 71);
	mmap_rec(k, 71, 1, 0x400000, 0x1000, 0, "/usr/bin/x");
	kmaps_lost(k);
	kmaps_record(k, &mk(buf, 71, 1, 0x500000, 0x1000, 0, "/cut",
			    EMBER_MMAP_F_CUT)->hdr);
	kmaps_settle_from_proc(k, 71, mono_ns(), lines, 1);
	T_CHECK("kmaps_lost_then_cut_not_mended", rd(k, 71, &g) == -ENOENT,
		"%s", g.text);
	/* never complete: no exec seen (a process older than the session) */
	mmap_rec(k, 72, 1, 0x400000, 0x1000, 0, "/usr/bin/x");
	kmaps_lost(k);
	kmaps_settle_from_proc(k, 72, mono_ns(), lines, 1);
	T_CHECK("kmaps_lost_never_complete_not_mended",
		rd(k, 72, &g) == -ENOENT, "%s", g.text);
	kmaps_free(k);
}

/*
 * The same on this process's own /proc/self/maps: its executable lines
 * told as records (the files, the vDSO through a record's vdso field, as
 * the backends tell it), then a loss: its next whole read mends it.
 */
static void test_lost_mended_live(void)
{
	uint64_t buf[(sizeof(struct ember_mmap) + 320) / 8 + 1];
	struct kmaps *k = kmaps_new(0, 0);
	static struct test_maps ll;
	uint32_t pid = (uint32_t)getpid(), files = 0;
	uint64_t vdso = 0, t;
	struct ember_mmap *m;
	bool cut = true;
	struct got g;

	ll.n = 0;
	if (proc_maps_read_cut(NULL, pid, test_maps_add, &ll, NULL, &cut) ||
	    cut || ll.n == TEST_MAPS_MAX) {
		T_CHECK("kmaps_lost_mended_live", false, "cannot read own maps");
		kmaps_free(k);
		return;
	}
	for (uint32_t i = 0; i < ll.n; i++)
		if (ll.v[i].type == SYM_MAP_VDSO)
			vdso = ll.v[i].start;
	kmaps_set_vdso_len(k, 0x2000);
	exec_rec(k, pid);
	/* each file's record carries the vDSO's address, as the backends' */
	for (uint32_t i = 0; i < ll.n; i++) {
		const struct sym_map_line *l = &ll.v[i];

		if (l->type != SYM_MAP_FILE)
			continue;
		m = mk(buf, pid, 1, l->start, l->end - l->start, l->pgoff,
		       l->path, 0);
		m->ino = l->ino;
		m->dev_major = major(l->dev);
		m->dev_minor = minor(l->dev);
		m->vdso = vdso;
		kmaps_record(k, &m->hdr);
		files++;
	}
	kmaps_lost(k);
	T_CHECK("kmaps_lost_live_unknown", rd(k, pid, &g) == -ENOENT, "%s",
		g.text);
	/* the binder's read: begun after the loss */
	t = mono_ns();
	ll.n = 0;
	if (proc_maps_read_cut(NULL, pid, test_maps_add, &ll, NULL, &cut) ||
	    cut)
		ll.n = 0;
	kmaps_settle_from_proc(k, pid, t, ll.v, ll.n);
	T_CHECK("kmaps_lost_mended_live", files && rd(k, pid, &g) == 0 &&
		g.n == (int)files + !!vdso, "%u files, vdso %d: %d: %s", files,
		!!vdso, g.n, g.text);
	kmaps_free(k);
}

static struct kmaps *shared;

static void *feeder(void *arg)
{
	uint32_t base = (uint32_t)(uintptr_t)arg;

	for (uint32_t i = 0; i < 20000; i++) {
		uint32_t pid = base + i % 500;

		if (i % 7 == 0)
			exec_rec(shared, pid);
		mmap_rec(shared, pid, i / 1000, 0x1000 * (i % 64), 0x1000, 0, "/lib/t.so");
		if (i % 13 == 0)
			exit_rec(shared, pid, now_ns++);
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct got g;

	(void)arg;
	for (uint32_t i = 0; i < 20000; i++)
		rd(shared, 1 + i % 500, &g);
	return NULL;
}

static void test_threads(void)
{
	pthread_t a, b;
	struct kmaps_stats st;

	shared = kmaps_new(300, 0);
	pthread_create(&a, NULL, feeder, (void *)(uintptr_t)1);
	pthread_create(&b, NULL, reader, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	kmaps_get_stats(shared, &st);
	T_CHECK("kmaps_threads", st.procs <= 300 && st.records == 20000,
		"%u procs, %llu records", st.procs, (unsigned long long)st.records);
	kmaps_free(shared);
}

int main(void)
{
	test_complete();
	test_overlap();
	test_vdso_types();
	test_untold_code();
	test_settle_from_proc();
	test_miss_before_its_mapping();
	test_hostile();
	test_bounds();
	test_consumer_behind();
	test_lost();
	test_lost_mended();
	test_lost_mended_live();
	test_threads();
	T_EXIT();
}
