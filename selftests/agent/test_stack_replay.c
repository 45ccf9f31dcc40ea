// SPDX-License-Identifier: GPL-2.0-only
/*
 * The stack replay (agent/unwind/stack_replay.h) on a real stack: this
 * program copies its own stack at t_leaf (main -> t_outer -> t_mid ->
 * t_leaf) the way a backend does, writes the sample a frame-pointer walk
 * would have cut after the first frame, and the replay must give back the
 * exact chain (the return addresses the functions saw), proven whole;
 * over /proc/self/maps, and over a "gone" process's snapshot. Then the
 * bounds: a sample whose copy never came, a copy of another PC, a full
 * set of held copies. x86_64 only (the test reads registers in asm).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include "unwind/copy_walk.h"
#include "unwind/stack_replay.h"
#include "unwind/table_cache.h"
#include "test_util.h"

#define NOINLINE __attribute__((noinline))

static uint8_t rec_buf[sizeof(struct ember_user_stack) + EMBER_STACK_COPY_MAX]
	__attribute__((aligned(8)));
static uint64_t ra_leaf, ra_mid, ra_outer;
/* sample times: now (CLOCK_MONOTONIC, the records' clock), or the
 * replay takes them for a backlog */
static uint64_t tb;
static volatile int sink;

/* The end of this thread's [stack] mapping. */
static uint64_t stack_end(void)
{
	unsigned long long s, e, end = 0;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") && sscanf(line, "%llx-%llx", &s, &e) == 2)
			end = e;
	if (f)
		fclose(f);
	return end;
}

#if defined(__x86_64__)
static NOINLINE void t_leaf(void)
{
	struct ember_user_stack *u = (void *)rec_buf;
	uint64_t r[EMBER_NR_UREGS] = { 0 }, end, len;

	ra_leaf = (uint64_t)__builtin_return_address(0);
	/* DWARF order: rbx 3, rbp 6, rsp 7, r12..r15 12..15, rip 16 */
	__asm__ volatile("mov %%rbx, %0\n\tmov %%rbp, %1\n\tmov %%rsp, %2\n\t"
			 "mov %%r12, %3\n\tmov %%r13, %4\n\tmov %%r14, %5\n\t"
			 "mov %%r15, %6\n\tlea 0(%%rip), %7"
			 : "=m"(r[3]), "=m"(r[6]), "=m"(r[7]), "=m"(r[12]),
			   "=m"(r[13]), "=m"(r[14]), "=m"(r[15]), "=r"(r[16]));
	end = stack_end();
	len = end > r[7] ? end - r[7] : 0;
	if (len > EMBER_STACK_COPY_MAX - 1024)
		len = EMBER_STACK_COPY_MAX - 1024;
	len &= ~7ull;
	memset(u, 0, sizeof(*u));
	u->hdr.type = EMBER_REC_USER_STACK;
	u->hdr.size = (uint32_t)(sizeof(*u) + len);
	u->time_ns = tb + 1000;
	u->pid = (uint32_t)getpid();
	u->tid = (uint32_t)gettid();
	memcpy(u->regs, r, sizeof(r));
	u->stack_len = (uint32_t)len;
	/* what the stack held at the asm: everything above rsp */
	memcpy(u->stack, (const void *)r[7], len);
	sink++;
}

static NOINLINE void t_mid(void)
{
	ra_mid = (uint64_t)__builtin_return_address(0);
	t_leaf();
	sink++;
}

static NOINLINE void t_outer(void)
{
	ra_outer = (uint64_t)__builtin_return_address(0);
	t_mid();
	sink++;
}

/* A sample of the copy's thread, first frame pc, marked copied. */
static struct ember_sample *sample(uint64_t time_ns, uint64_t pc)
{
	static uint64_t buf[(sizeof(struct ember_sample) + 64) / 8];
	struct ember_sample *s = (void *)buf;

	memset(buf, 0, sizeof(buf));
	s->hdr.type = EMBER_REC_SAMPLE;
	s->hdr.size = sizeof(*s) + 8;
	s->time_ns = time_ns;
	s->weight_ns = 1000000;
	s->pid = (uint32_t)getpid();
	s->tid = (uint32_t)gettid();
	s->flags = EMBER_SF_USER_FP | EMBER_SF_USER_CUT | EMBER_SF_USER_COPIED;
	s->nr_user = 1;
	strcpy(s->comm, "test");
	s->ips[0] = pc;
	return s;
}

static bool chain_ok(const struct ember_sample *o)
{
	return o->nr_user >= 4 && o->ips[1] == ra_leaf && o->ips[2] == ra_mid &&
	       o->ips[3] == ra_outer;
}

/*
 * Python: t_outer stands for the eval loop (ra_mid returns into it), and
 * the walk cut after the leaf kept one activation (uapi: "When the native
 * walk stops short").
 */
#define PY_CODE		(EMBER_IP_PY | 0x7f0000001000ull)
#define PY_WORD		(7ull << 32 | 24)
static bool eval_known = true;
static int eval_frames = 1;	/* 2: t_mid counts as one too */

static bool eval_of(void *ctx, uint32_t pid, struct py_eval_ranges *ev)
{
	(void)ctx;
	(void)pid;
	memset(ev, 0, sizeof(*ev));
	ev->start[0] = ra_mid - 1;
	ev->end[0] = ra_mid;
	if (eval_frames == 2) {
		ev->start[1] = ra_leaf - 1;
		ev->end[1] = ra_leaf;
	}
	return eval_known;
}

static struct ember_sample *py_sample(uint64_t time_ns, uint64_t pc,
				      uint64_t marker)
{
	static uint64_t buf[(sizeof(struct ember_sample) + 64) / 8];
	struct ember_sample *s = (void *)buf;

	memcpy(buf, sample(time_ns, pc), sizeof(*s) + 8);
	s->flags = EMBER_SF_USER_CFI | EMBER_SF_USER_CUT |
		   EMBER_SF_USER_COPIED | EMBER_SF_PYTHON;
	s->ips[1] = marker;
	s->ips[2] = PY_CODE;
	s->ips[3] = PY_WORD;
	s->nr_user = 4;
	s->hdr.size = sizeof(*s) + 4 * 8;
	return s;
}

/* One run of the replay of a Python sample: the output's user frames. */
static const struct ember_sample *py_replay(struct stack_replay *r,
					    uint64_t t, uint64_t pc,
					    uint64_t marker)
{
	struct ember_user_stack *u = (void *)rec_buf;

	u->time_ns = t;
	stack_replay_record(r, &u->hdr);
	return (const void *)stack_replay_record(r,
						 &py_sample(t, pc, marker)->hdr);
}

static void test_python(uint64_t pc)
{
	const uint64_t gap = EMBER_IP_PY_CUT | EMBER_PY_CUT_NATIVE;
	struct stack_replay *r = stack_replay_new(0, NULL, NULL);
	struct ember_user_stack *u = (void *)rec_buf;
	struct stack_replay_stats st;
	const struct ember_sample *o;

	if (!r)
		return;
	u->pid = (uint32_t)getpid();
	/* without the interpreter's place: kept, Python frames and all */
	o = py_replay(r, tb + 3000, pc, gap);
	T_CHECK("stack_replay_python_no_eval_kept",
		o && o->nr_user == 4 && o->ips[2] == PY_CODE,
		"a Python sample was replaced without its eval loop known");
	stack_replay_set_python(r, eval_of, NULL);
	o = py_replay(r, tb + 3001, pc, gap);
	T_CHECK("stack_replay_python_spliced",
		o && o->nr_user >= 6 && o->ips[0] == pc && o->ips[1] == ra_leaf &&
		o->ips[2] == PY_CODE && o->ips[3] == PY_WORD &&
		o->ips[4] == ra_outer &&
		(o->flags & EMBER_SF_USER_COMPLETE) &&
		(o->flags & EMBER_SF_PYTHON) && !(o->flags & EMBER_SF_USER_CUT),
		"%u frames, flags %#x: %#lx %#lx %#lx %#lx", o ? o->nr_user : 0,
		o ? o->flags : 0, o ? (long)o->ips[1] : 0L,
		o ? (long)o->ips[2] : 0L, o ? (long)o->ips[3] : 0L,
		o ? (long)o->ips[4] : 0L);
	/* two eval-loop frames for one activation: which one is not known */
	eval_frames = 2;
	o = py_replay(r, tb + 3002, pc, gap);
	T_CHECK("stack_replay_python_ambiguous_kept",
		o && o->nr_user == 4 && o->ips[1] == gap,
		"an activation was placed with two eval frames to choose from");
	eval_frames = 1;
	/* a Python cut in the walk: the chain is not whole, nothing placed */
	o = py_replay(r, tb + 3003, pc,
		      EMBER_IP_PY_CUT | EMBER_PY_CUT_DEPTH);
	T_CHECK("stack_replay_python_cut_kept",
		o && o->nr_user == 4 && o->ips[2] == PY_CODE,
		"a sample with a Python cut was replayed");
	stack_replay_get(r, &st);
	T_CHECK("stack_replay_python_counts",
		st.py_spliced == 1 && st.py_kept == 3 && st.replayed == 1,
		"spliced %lu kept %lu replayed %lu",
		(unsigned long)st.py_spliced, (unsigned long)st.py_kept,
		(unsigned long)st.replayed);
	stack_replay_free(r);
}

/* oracle_gone_fn: this process's maps stand for a snapshot */
static int gone_self(void *ctx, uint32_t pid, char **maps, size_t *len,
		     int *root_fd)
{
	char buf[65536];
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY);

	(void)ctx;
	(void)pid;
	*root_fd = -1;
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || !(*maps = malloc((size_t)n)))
		return -1;
	memcpy(*maps, buf, (size_t)n);
	*len = (size_t)n;
	*root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	return 0;
}

/*
 * The shared tables: this process's files' tables as the worker makes
 * them (table_cache with a backend that keeps nothing), published.
 */
static int keep_nothing(struct ember_source *src, uint32_t id,
			const void *table, size_t len, char *err, size_t err_len)
{
	(void)src, (void)id, (void)table, (void)len, (void)err, (void)err_len;
	return 0;
}

static int drop_nothing(struct ember_source *src, uint32_t id)
{
	(void)src, (void)id;
	return 0;
}

static const struct ember_source_ops stub_ops = {
	.unwind_load = keep_nothing,
	.unwind_drop = drop_nothing,
};

static bool cache_file(void *ctx, struct sym_map_line *m)
{
	struct table_cache *c = ctx;
	char path[512];
	struct stat st;
	int fd;

	if (m->type == SYM_MAP_VDSO) {
		table_cache_vdso(c);
		return true;
	}
	if (m->type != SYM_MAP_FILE || m->path_len >= sizeof(path))
		return true;
	memcpy(path, m->path, m->path_len);
	path[m->path_len] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &st))
		table_cache_get(c, fd, &st, path);
	if (fd >= 0)
		close(fd);
	return true;
}

/* stack_replay_maps_fn: this process's maps, as if the kernel told them */
static int maps_self(void *ctx, uint32_t pid, proc_maps_fn fn, void *fn_ctx)
{
	(void)ctx;
	(void)pid;
	return proc_maps_read(NULL, (uint32_t)getpid(), fn, fn_ctx, NULL);
}

/* One sample's replay: its output, and the counters after. */
static const struct ember_sample *replay_one(struct stack_replay *r,
					     uint32_t pid, uint64_t t,
					     uint64_t pc)
{
	struct ember_user_stack *u = (void *)rec_buf;
	struct ember_sample *s = sample(t, pc);

	u->pid = pid;
	u->time_ns = t;
	s->pid = pid;
	stack_replay_record(r, &u->hdr);
	return (const void *)stack_replay_record(r, &s->hdr);
}

/*
 * Garbage in the copy (a hostile or torn stack): every walk ends, within
 * max frames, and every return address it gives lies in a mapping.
 */
static void test_walk_garbage(const struct copy_walk_maps *maps, uint64_t pc,
			      uint64_t sp)
{
	static uint8_t junk[4096];
	uint64_t ips[EMBER_MAX_FRAMES], seed = 88172645463325252ull;
	int bad = 0, longest = 0;

	for (int round = 0; round < 2000; round++) {
		struct copy_walk_in in = {
			.maps = maps, .stack = junk, .stack_len = sizeof(junk),
			.regs = { .pc = pc, .sp = sp, .fp = sp + 64, .fp_ok = 1,
				  .exact = 1 },
		};
		enum copy_walk_end end;
		int n, unknown;

		for (size_t i = 0; i < sizeof(junk); i += 8) {
			uint64_t v;

			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			/* half of the words: addresses in the copy or the code */
			v = seed % 4 == 0 ? sp + (seed >> 8) % sizeof(junk) :
			    seed % 4 == 1 ? pc + (seed >> 8) % 65536 - 32768 : seed;
			memcpy(junk + i, &v, 8);
		}
		in.regs.fp = sp + (seed >> 20) % sizeof(junk);
		n = copy_walk(&in, ips, EMBER_MAX_FRAMES, &end, &unknown);
		if (n > longest)
			longest = n;
		for (int i = 1; i < n; i++) {
			bool in_map = false;

			for (uint32_t k = 0; k < maps->n && !in_map; k++)
				in_map = ips[i] - 1 >= maps->v[k].start &&
					 ips[i] - 1 < maps->v[k].end;
			bad += !in_map;
		}
	}
	T_CHECK("copy_walk_garbage_bounded", bad == 0 && longest <= EMBER_MAX_FRAMES,
		"%d frames outside every mapping, longest walk %d", bad, longest);
}

/*
 * A binding trusts a kernel-told device and inode only for an entry a
 * stat matched lately (unwind_bind.c's bind_seen()).
 */
static void test_find_seen(struct table_cache *c)
{
	struct table_file *f = c->nr ? &c->files[0] : NULL;
	uint64_t now = 100ull * 1000000000;
	bool ok;

	if (!f) {
		T_CHECK("table_cache_find_seen", false, "no entry cached");
		return;
	}
	f->seen_ns = 0;
	ok = !table_cache_find_seen(c, f->dev, f->ino, now, 10 * 1000000000ull);
	f->seen_ns = now - 1000000000ull;
	ok = ok && table_cache_find_seen(c, f->dev, f->ino, now,
					 10 * 1000000000ull) == f;
	ok = ok && !table_cache_find_seen(c, f->dev, f->ino + 1, now,
					  10 * 1000000000ull);
	f->seen_ns = now - 11 * 1000000000ull;
	ok = ok && !table_cache_find_seen(c, f->dev, f->ino, now,
					  10 * 1000000000ull);
	f->seen_ns = 0;
	T_CHECK("table_cache_find_seen", ok,
		"an entry not stat-matched lately was trusted, or a fresh one not");
}

#define BUILDS_MAX_TEST	4	/* stack_replay.c's BUILDS_PER_REPLAY */

static void test_tables(uint64_t pc)
{
	struct ember_user_stack *u = (void *)rec_buf;
	/* room for every table of this process: the walk is tested, not the cap */
	struct table_share *share = table_share_new(64u << 20);
	struct table_cache cache;
	struct copy_walk_maps maps;
	struct stack_replay_stats st;
	const struct ember_sample *o;
	struct stack_replay *r;
	uint32_t full_len = u->stack_len;

	T_CHECK("stack_replay_tables_share", share != NULL, "out of memory");
	if (!share)
		return;
	/*
	 * a share that can hold no table: the files the walk needs cannot
	 * be built into it (said once each, then not tried for a while),
	 * libdwfl walks
	 */
	{
		struct table_share *tiny = table_share_new(64);

		r = stack_replay_new(0, NULL, NULL);
		stack_replay_set_tables(r, tiny, NULL, NULL);
		o = replay_one(r, (uint32_t)getpid(), tb + 7000, pc);
		stack_replay_get(r, &st);
		T_CHECK("stack_replay_tables_unbuildable_libdwfl",
			o && chain_ok(o) && st.by_libdwfl == 1 &&
			st.by_tables == 0 && st.built == 0,
			"by libdwfl %lu, by tables %lu, built %lu",
			(unsigned long)st.by_libdwfl,
			(unsigned long)st.by_tables, (unsigned long)st.built);
		stack_replay_free(r);
		table_share_free(tiny);
	}
	/*
	 * set, but empty: a live process's files are the worker's to build
	 * (libdwfl meanwhile); a gone one's are built on the spot
	 */
	{
		struct table_share *empty = table_share_new(64u << 20);

		r = stack_replay_new(0, NULL, NULL);
		stack_replay_set_tables(r, empty, NULL, NULL);
		o = replay_one(r, (uint32_t)getpid(), tb + 6999, pc);
		stack_replay_get(r, &st);
		T_CHECK("stack_replay_tables_live_not_built",
			o && chain_ok(o) && st.by_libdwfl == 1 && st.built == 0,
			"by libdwfl %lu, built %lu", (unsigned long)st.by_libdwfl,
			(unsigned long)st.built);
		stack_replay_free(r);
		r = stack_replay_new(0, NULL, NULL);
		stack_replay_set_tables(r, empty, maps_self, NULL);
		o = replay_one(r, 0x7ffffff0, tb + 7000, pc);
		stack_replay_get(r, &st);
		T_CHECK("stack_replay_tables_built_on_the_spot",
			o && chain_ok(o) && (o->flags & EMBER_SF_USER_COMPLETE) &&
			st.by_tables == 1 && st.by_libdwfl == 0 &&
			st.built >= 1 && st.built <= BUILDS_MAX_TEST,
			"by libdwfl %lu, by tables %lu, built %lu",
			(unsigned long)st.by_libdwfl,
			(unsigned long)st.by_tables, (unsigned long)st.built);
		stack_replay_free(r);
		table_share_free(empty);
	}

	table_cache_init(&cache, &stub_ops, NULL, NULL, false);
	table_cache_set_share(&cache, share);
	proc_maps_read(NULL, (uint32_t)getpid(), cache_file, &cache, NULL);

	{
		struct table_share_stats ss;
		uint32_t held = 0, tables = 0;

		for (uint32_t i = 0; i < cache.nr; i++) {
			held += cache.files[i].blob != NULL;
			tables += cache.files[i].table_id != 0;
		}
		table_share_get_stats(share, &ss);
		/* the share's cap is what bounds the bytes: the cache keeps none */
		T_CHECK("table_cache_publishes_keeps_no_bytes",
			tables > 1 && !held && ss.files >= tables && ss.bytes > 0,
			"%u of %u entries hold bytes; share: %u files, %lu bytes",
			held, tables, ss.files, (unsigned long)ss.bytes);
	}
	test_find_seen(&cache);
	r = stack_replay_new(0, NULL, NULL);
	stack_replay_set_tables(r, share, NULL, NULL);
	o = replay_one(r, (uint32_t)getpid(), tb + 7001, pc);
	stack_replay_get(r, &st);
	T_CHECK("stack_replay_tables_exact_chain",
		o && chain_ok(o) && (o->flags & EMBER_SF_USER_COMPLETE) &&
		!(o->flags & EMBER_SF_USER_CUT) && st.by_tables == 1 &&
		st.by_libdwfl == 0 && st.proven == 1,
		"%u frames, flags %#x, by tables %lu, by libdwfl %lu",
		o ? o->nr_user : 0, o ? o->flags : 0,
		(unsigned long)st.by_tables, (unsigned long)st.by_libdwfl);
	/* a copy cut short: what it has, never proven whole */
	u->stack_len = 64;
	o = replay_one(r, (uint32_t)getpid(), tb + 7002, pc);
	T_CHECK("stack_replay_tables_short_copy_not_whole",
		o && !(o->flags & EMBER_SF_USER_COMPLETE),
		"a walk past the copy's end was called whole");
	u->stack_len = full_len;
	stack_replay_free(r);

	/* a process gone: the maps the kernel told, no /proc/PID */
	r = stack_replay_new(0, NULL, NULL);
	stack_replay_set_tables(r, share, maps_self, NULL);
	o = replay_one(r, 0x7ffffff0, tb + 7003, pc);
	stack_replay_get(r, &st);
	T_CHECK("stack_replay_tables_gone_process",
		o && chain_ok(o) && (o->flags & EMBER_SF_USER_COMPLETE) &&
		st.by_tables == 1,
		"%u frames, by tables %lu", o ? o->nr_user : 0,
		(unsigned long)st.by_tables);
	stack_replay_free(r);

	copy_walk_maps_init(&maps, share, (uint32_t)getpid());
	proc_maps_read(NULL, (uint32_t)getpid(), copy_walk_maps_add, &maps, NULL);
	copy_walk_maps_done(&maps);
	test_walk_garbage(&maps, pc, u->regs[EMBER_UREG_SP]);
	copy_walk_maps_clear(&maps);
	u->pid = (uint32_t)getpid();
	table_cache_free(&cache, false);
	table_share_free(share);
}

int main(void)
{
	struct ember_user_stack *u = (void *)rec_buf;
	const struct ember_rec_header *out;
	const struct ember_sample *o;
	struct stack_replay_stats st;
	struct stack_replay *r;
	struct timespec ts;
	uint64_t pc;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	tb = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	t_outer();
	pc = u->regs[EMBER_UREG_PC];
	T_CHECK("stack_replay_setup", u->stack_len > 512, "copy of %u bytes",
		u->stack_len);

	r = stack_replay_new(0, NULL, NULL);
	T_CHECK("stack_replay_new", r != NULL, "out of memory");
	if (!r)
		T_EXIT();
	out = stack_replay_record(r, &u->hdr);
	T_CHECK("stack_replay_holds_copy", out == NULL, "the copy was passed on");
	out = stack_replay_record(r, &sample(tb + 1000, pc)->hdr);
	o = (const void *)out;
	T_CHECK("stack_replay_exact_chain", out && chain_ok(o),
		"%u frames: %#lx %#lx %#lx, want %#lx %#lx %#lx",
		out ? o->nr_user : 0, out && o->nr_user > 1 ? (long)o->ips[1] : 0L,
		out && o->nr_user > 2 ? (long)o->ips[2] : 0L,
		out && o->nr_user > 3 ? (long)o->ips[3] : 0L, (long)ra_leaf,
		(long)ra_mid, (long)ra_outer);
	T_CHECK("stack_replay_flags", out && (o->flags & EMBER_SF_USER_CFI) &&
		(o->flags & EMBER_SF_USER_COMPLETE) &&
		!(o->flags & (EMBER_SF_USER_CUT | EMBER_SF_USER_FP)),
		"flags %#x", out ? o->flags : 0);
	T_CHECK("stack_replay_size", out && out->size ==
		sizeof(struct ember_sample) + 8u * o->nr_user,
		"size %u for %u frames", out ? out->size : 0, out ? o->nr_user : 0);

	/* the copy was used: the same sample again has none */
	out = stack_replay_record(r, &sample(tb + 1000, pc)->hdr);
	T_CHECK("stack_replay_unpaired", out && ((const struct ember_sample *)out)->nr_user == 1,
		"a sample without its copy changed");
	/* a copy of another PC than the sample's first frame: kept */
	stack_replay_record(r, &u->hdr);
	out = stack_replay_record(r, &sample(tb + 1000, pc + 1)->hdr);
	T_CHECK("stack_replay_other_pc_kept",
		out && ((const struct ember_sample *)out)->nr_user == 1,
		"a sample was replaced by another PC's unwinding");
	/* more copies than held: the oldest go, counted */
	for (int i = 0; i < STACK_REPLAY_HELD + 3; i++) {
		u->time_ns = tb + 5000 + (uint64_t)i;
		stack_replay_record(r, &u->hdr);
	}
	stack_replay_get(r, &st);
	T_CHECK("stack_replay_counts", st.copies == STACK_REPLAY_HELD + 5 &&
		st.replayed == 1 && st.proven == 1 && st.unpaired == 1 &&
		st.kept == 1 && st.dropped == 3 &&
		st.copy_bytes == (uint64_t)u->stack_len * st.copies,
		"copies %lu replayed %lu proven %lu unpaired %lu kept %lu dropped %lu",
		(unsigned long)st.copies, (unsigned long)st.replayed,
		(unsigned long)st.proven, (unsigned long)st.unpaired,
		(unsigned long)st.kept, (unsigned long)st.dropped);
	/* the newest copies are still there */
	out = stack_replay_record(r, &sample(tb + 5000 + STACK_REPLAY_HELD + 2, pc)->hdr);
	T_CHECK("stack_replay_newest_held", out && chain_ok((const void *)out),
		"the newest copy was not held");
	stack_replay_free(r);

	/* a process that is gone: its snapshot's maps, no /proc/PID */
	r = stack_replay_new(0, gone_self, NULL);
	if (r) {
		u->pid = 0x7ffffff0;	/* above any pid_max */
		u->time_ns = tb + 2000;
		stack_replay_record(r, &u->hdr);
		{
			struct ember_sample *s = sample(tb + 2000, pc);

			s->pid = u->pid;
			out = stack_replay_record(r, &s->hdr);
		}
		T_CHECK("stack_replay_gone_process_snapshot",
			out && chain_ok((const void *)out),
			"not replayed over the snapshot's maps");
		stack_replay_free(r);
	}
	/* and without one: left as walked */
	r = stack_replay_new(0, NULL, NULL);
	if (r) {
		stack_replay_record(r, &u->hdr);
		{
			struct ember_sample *s = sample(tb + 2000, pc);

			s->pid = u->pid;
			out = stack_replay_record(r, &s->hdr);
		}
		stack_replay_get(r, &st);
		T_CHECK("stack_replay_gone_process_kept",
			out && ((const struct ember_sample *)out)->nr_user == 1 &&
			st.kept == 1, "a gone process without snapshot changed");
		stack_replay_free(r);
	}
	test_python(pc);
	test_tables(pc);
	/* a sample read long after it was taken: passed on, skipped */
	r = stack_replay_new(0, NULL, NULL);
	if (r) {
		u->pid = (uint32_t)getpid();
		u->time_ns = tb - 1000000000ull;
		stack_replay_record(r, &u->hdr);
		out = stack_replay_record(r, &sample(tb - 1000000000ull, pc)->hdr);
		stack_replay_get(r, &st);
		T_CHECK("stack_replay_backlog_skipped",
			out && ((const struct ember_sample *)out)->nr_user == 1 &&
			st.skipped == 1 && st.replayed == 0,
			"a sample 1 s old was replayed (skipped %lu)",
			(unsigned long)st.skipped);
		stack_replay_free(r);
	}
	T_EXIT();
}
#else
int main(void)
{
	printf("SKIP: stack_replay: x86_64 only\n");
	return 0;
}
#endif
