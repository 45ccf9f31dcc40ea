// SPDX-License-Identifier: GPL-2.0-only
/*
 * A recording session (session.h): backend + symbolizer + profile builder,
 * and the loop that moves records from the rings into the builder.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "alloc/alloc_lib.h"
#include "lib/clock.h"
#include "proc/exec_snap.h"
#include "proc/kmaps.h"
#include "proc/pac_mask.h"
#include "proc/proc.h"
#include "source/backend.h"
#include "source/ring_reader.h"
#include "session/session.h"

#define SESSION_POLL_MS		100
#define SESSION_SCAN_MS		200	/* descendants scan, pid-filter mode */

/*
 * aarch64: the kernel's PAC mask for the backend's unwinder (0 elsewhere
 * and without PAC). Unreadable, it stays 0 and PAC-signed return
 * addresses cut stacks: said once.
 */
static void session_pac_mask(struct ember_source_config *src, bool quiet)
{
	int r = proc_pac_insn_mask(&src->pac_mask);

	if (r && !quiet)
		fprintf(stderr, "ember: cannot read the kernel's pointer-authentication mask "
			"(ptrace NT_ARM_PAC_MASK: %s): user stacks stop at the first signed "
			"return address (allow ptrace of our own child: Yama ptrace_scope <= 2, "
			"no seccomp policy against ptrace)\n", strerror(-r));
}

struct gone_maps {
	FILE *f;
	unsigned int lines;
};

/*
 * One executable mapping of a snapshot as a maps line for libdwfl, which
 * takes a module's load address from its first line: the snapshot holds
 * the executable segment only, so the line starts where the file's
 * offset 0 would be mapped (start - pgoff: the layout of ld.so's loads).
 */
static bool gone_line(void *ctx, struct sym_map_line *m)
{
	struct gone_maps *g = ctx;

	if (m->path_len == 6 && !memcmp(m->path, "[vdso]", 6)) {
		fprintf(g->f, "%" PRIx64 "-%" PRIx64 " r-xp 00000000 00:00 0 "
			"[vdso]\n", m->start, m->end);
		return true;
	}
	if (!m->path_len || m->path[0] != '/' || m->deleted ||
	    m->pgoff > m->start || (m->pgoff & 0xfff))
		return true;
	fprintf(g->f, "%" PRIx64 "-%" PRIx64 " r-xp 00000000 %02x:%02x %" PRIu64
		" %.*s\n", m->start - m->pgoff, m->end, major(m->dev),
		minor(m->dev), m->ino, (int)m->path_len, m->path);
	g->lines++;
	return true;
}

/*
 * Whether a maps line (as gone_line() wrote it) of a process that is
 * gone names, in our own tree, the very file the kernel mapped (same
 * device and inode, not a symlink). A process of another mount
 * namespace, or a file replaced since, fails: its line is left out and
 * the replay keeps the sample as walked rather than unwinding with
 * another file's tables.
 */
static bool same_file_here(char *line)
{
	struct sym_map_line m;
	char path[PATH_MAX];
	struct stat st;

	if (!sym_maps_parse_line(line, &m))
		return false;
	if (!m.path_len || m.path[0] != '/')
		return true;		/* [vdso] */
	if (m.path_len >= sizeof(path))
		return false;
	memcpy(path, m.path, m.path_len);
	path[m.path_len] = '\0';
	return !lstat(path, &st) && S_ISREG(st.st_mode) &&
	       st.st_dev == m.dev && st.st_ino == m.ino;
}

/*
 * Keep the lines of *text whose files are the same here; done after
 * kmaps_read(), not in its callback: an lstat() (a hung FUSE mount, say)
 * must not hold kmaps' lock, which the ring reader needs.
 */
static int keep_same_files(char **text, size_t *n)
{
	char *kept = NULL, *line, *next, copy[PATH_MAX + 128];
	unsigned int lines = 0;
	size_t kn = 0, len;
	bool file;
	FILE *f = open_memstream(&kept, &kn);

	if (!f)
		return -ENOMEM;
	for (line = *text; line < *text + *n; line = next) {
		next = memchr(line, '\n', *text + *n - line);
		next = next ? next + 1 : *text + *n;
		len = next - line;
		if (len >= sizeof(copy))
			continue;
		/* the parser takes the line without its newline */
		memcpy(copy, line, len);
		copy[len && line[len - 1] == '\n' ? len - 1 : len] = '\0';
		file = strstr(copy, " /") != NULL;
		if (!same_file_here(copy))
			continue;
		fwrite(line, 1, len, f);
		lines += file;
	}
	free(*text);
	*text = NULL;
	if (fclose(f) || !lines) {
		free(kept);
		return -ENOENT;
	}
	*text = kept;
	*n = kn;
	return 0;
}

/*
 * pid's maps text into *text and *n, from kmaps (via_kmaps) or the exec
 * snapshot: 0, or -ENOENT when that source does not know pid.
 */
static int gone_maps_text(struct session *s, uint32_t pid, bool via_kmaps,
			  bool gone, char **text, size_t *n)
{
	struct gone_maps g = { 0 };
	int r;

	*text = NULL;
	*n = 0;
	g.f = open_memstream(text, n);
	if (!g.f)
		return -ENOMEM;
	if (via_kmaps)
		r = kmaps_read(s->kmaps, pid, gone_line, &g, NULL);
	else
		r = exec_snaps_read(s->snaps, pid, gone_line, &g);
	if (fclose(g.f) || r || !g.lines) {
		free(*text);
		*text = NULL;
		return r ? r : -ENOENT;
	}
	return via_kmaps && gone ? keep_same_files(text, n) : 0;
}

/*
 * oracle_gone_fn for the stack replay: pid's executable mappings as the
 * kernel told them (kmaps: no /proc/PID/maps read, and kept a while
 * after the exit), else its exec snapshot. A live process's files are
 * then opened through /proc/PID (root_fd -1); a gone one's through the
 * snapshot's root, or for kmaps our own root where the file is the same.
 */
static int session_gone_maps(void *ctx, uint32_t pid, char **maps,
			     size_t *len, int *root_fd)
{
	struct session *s = ctx;
	char proc[32];
	bool gone;

	*root_fd = -1;
	snprintf(proc, sizeof(proc), "/proc/%u", pid);
	gone = access(proc, F_OK) != 0;
	if (s->kmaps && !gone_maps_text(s, pid, true, gone, maps, len)) {
		if (gone)
			*root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		return 0;
	}
	if (gone_maps_text(s, pid, false, gone, maps, len))
		return -ENOENT;
	*root_fd = exec_snaps_root(s->snaps, pid);
	return 0;
}

/*
 * stack_replay_maps_fn: pid's executable mappings as the kernel told
 * them, else as its exec snapshot saw them; the replay reads /proc when
 * neither knows.
 */
static int session_replay_maps(void *ctx, uint32_t pid, proc_maps_fn fn,
			       void *fn_ctx)
{
	struct session *s = ctx;

	if (s->kmaps && !kmaps_read(s->kmaps, pid, fn, fn_ctx, NULL))
		return 0;
	if (s->snaps && !exec_snaps_read(s->snaps, pid, fn, fn_ctx))
		return 0;
	return -ENOENT;
}

/* stack_replay_eval_fn: the symbolizer's finding of pid's interpreter */
static bool session_py_eval(void *ctx, uint32_t pid, struct py_eval_ranges *ev)
{
	struct session *s = ctx;

	return sym_python_eval(s->sym, pid, ev);
}

static bool vdso_line(void *ctx, struct sym_map_line *m)
{
	if (m->type != SYM_MAP_VDSO)
		return true;
	*(uint64_t *)ctx = m->end - m->start;
	return false;
}

/* The vDSO's size: the kernel maps the same one in every 64-bit process. */
static uint64_t own_vdso_len(void)
{
	uint64_t len = 0;

	proc_maps_read(NULL, (uint32_t)getpid(), vdso_line, &len, NULL);
	return len;
}

int session_open(struct session *s, const struct session_options *opt,
		 char *err, size_t err_len)
{
	struct ember_source_config src;
	struct pb_options pbo = opt->pb;
	struct sym_options symo = opt->sym;
	int r;

	memset(s, 0, sizeof(*s));
	/* where the kernel subtracts steal, a late timer's periods are not
	 * all CPU time (aggregate.h) */
	pbo.late_periods_are_cpu = !proc_steal_accounted();
	s->ops = backend_choose(opt->backend, s->backend_why,
				sizeof(s->backend_why), err, err_len);
	if (!s->ops)
		return -ENOTSUP;
	if (!opt->quiet)
		fprintf(stderr, "ember: %s\n", s->backend_why);

	s->events = opt->src.events;
	s->want_unwind = !opt->no_unwind_tables;
	s->verbose_unwind = opt->verbose_unwind;
	s->table_cache_dir = opt->table_cache_dir;
	s->table_cache_max = opt->table_cache_max;
	s->freq_hz = opt->src.freq_hz ? opt->src.freq_hz : EMBER_DEFAULT_FREQ;
	s->fault_period = opt->src.fault_period ? opt->src.fault_period :
			  EMBER_DEFAULT_FAULT_PERIOD;
	s->lock_min_ns = opt->src.lock_min_ns;
	/* one process model for the aggregation and the symbolizer */
	s->procs = proc_table_new(NULL);
	symo.procs = s->procs;
	/*
	 * None (EMBER_EXEC_SNAPS=0, or no thread): a process gone before
	 * its exec record is handled stays addresses, as before.
	 */
	if (!getenv("EMBER_EXEC_SNAPS") || strcmp(getenv("EMBER_EXEC_SNAPS"), "0"))
		s->snaps = exec_snaps_start(NULL);
	symo.exec_snaps = s->snaps;
	/* EMBER_KMAPS=0: every process's maps from /proc, as before */
	if (!getenv("EMBER_KMAPS") || strcmp(getenv("EMBER_KMAPS"), "0"))
		s->kmaps = kmaps_new(0, 0);
	kmaps_set_vdso_len(s->kmaps, own_vdso_len());
	symo.kmaps = s->kmaps;
	s->sym = s->procs ? sym_new(&symo) : NULL;
	if (!s->sym) {
		exec_snaps_stop(s->snaps);
		s->snaps = NULL;
		kmaps_free(s->kmaps);
		s->kmaps = NULL;
		proc_table_free(s->procs);
		s->procs = NULL;
		snprintf(err, err_len, "cannot create the symbolizer: out of memory");
		return -ENOMEM;
	}
	pbo.pids = opt->src.pids;
	pbo.nr_pids = opt->src.nr_pids;
	/*
	 * Not pbo.cgroup_id: the backends keep the cgroup's descendants too,
	 * which an id comparison here cannot see.
	 */
	pbo.include_idle = opt->src.include_idle;
	pbo.procs = s->procs;
	s->pb = pb_new(&pbo, s->sym);
	if (!s->pb) {
		snprintf(err, err_len, "cannot create the profile builder: out of memory");
		session_close(s);
		return -ENOMEM;
	}
	if (opt->check_unwind && !(s->check = unwind_check_new())) {
		snprintf(err, err_len, "cannot create the unwind check: out of memory");
		session_close(s);
		return -ENOMEM;
	}
	src = opt->src;
	session_pac_mask(&src, opt->quiet);
	/* test mode copies every sample for its own comparison */
	if (opt->check_unwind)
		src.stack_copy_bytes = 0;
	if (src.stack_copy_bytes &&
	    !(s->replay = stack_replay_new(src.pac_mask,
					   s->snaps || s->kmaps ?
					   session_gone_maps : NULL,
					   s))) {
		snprintf(err, err_len, "cannot create the stack replay: out of memory");
		session_close(s);
		return -ENOMEM;
	}
	if (s->replay)
		stack_replay_set_python(s->replay, session_py_eval, s);
	/*
	 * The worker's tables, for the replay: with them it walks as the
	 * backend does, libdwfl only where they cannot tell. Without the
	 * memory, libdwfl does all.
	 */
	if (s->replay && (s->tables = table_share_new(0)))
		stack_replay_set_tables(s->replay, s->tables,
					session_replay_maps, s);
	/* the oracle strips with it where a record carries no mask */
	if (s->check)
		unwind_check_set_pac_mask(s->check, src.pac_mask);
	err[0] = '\0';
	r = s->ops->open(&s->src, &src, err, err_len);
	if (r) {
		if (!err[0])
			snprintf(err, err_len, "cannot open the %s backend: %s",
				 s->ops->name, strerror(-r));
		s->src = NULL;
		session_close(s);
		return r;
	}
	if ((s->events & EMBER_EV_LOCK) && s->ops->lock_caps) {
		char note[256];

		s->lock_caps = s->ops->lock_caps(s->src);
		if (!opt->quiet && session_lock_note(s->lock_caps, s->ops->name,
						     note, sizeof(note)))
			fprintf(stderr, "ember: %s\n", note);
	}
	return 0;
}

bool session_lock_note(uint64_t caps, const char *backend, char *buf,
		       size_t len)
{
	bool futex = caps & EMBER_CAP_LOCK_FUTEX;
	bool kernel = caps & EMBER_CAP_LOCK_KERNEL;
	bool waitv = caps & EMBER_CAP_LOCK_WAITV;

	if (futex && kernel && waitv)
		return false;
	if (!futex && !kernel)
		snprintf(buf, len, "-e lock: the %s backend records no lock waits "
			 "on this kernel", backend);
	else if (!futex)
		snprintf(buf, len, "-e lock: kernel lock contention only: the %s "
			 "backend records no futex waits on this kernel", backend);
	else if (!kernel && !waitv)
		snprintf(buf, len, "-e lock: futex waits only: kernel lock "
			 "contention needs Linux 5.19+ (lock:contention_begin/end) "
			 "and futex_waitv 5.16+, which this kernel or the %s "
			 "backend does not have", backend);
	else if (!kernel)
		snprintf(buf, len, "-e lock: no kernel lock contention: it needs "
			 "the lock:contention_begin/end tracepoints (Linux 5.19+), "
			 "which this kernel or the %s backend does not have",
			 backend);
	else
		snprintf(buf, len, "-e lock: no futex_waitv waits: the syscall "
			 "needs Linux 5.16+, which this kernel or the %s backend "
			 "does not have", backend);
	return true;
}

static void source_counters(struct session *s, uint64_t *lost,
			    uint64_t *corrupt)
{
	struct ember_source_stats st = { 0 };

	*lost = *corrupt = 0;
	if (s->src && s->ops->stats && !s->ops->stats(s->src, &st)) {
		*lost = st.lost;
		*corrupt = st.corrupt;
	} else if (s->src && s->ops->stats) {
		/* partial stats are still better than none */
		*lost = st.lost;
		*corrupt = st.corrupt;
	}
	/* records the reader read but had no room to queue */
	*lost += ring_reader_dropped(s->reader);
}

static void session_hint_cb(const struct ember_rec_header *rec, void *ctx);

int session_start(struct session *s, char *err, size_t err_len)
{
	int r = s->ops->start(s->src);

	if (r) {
		snprintf(err, err_len, "cannot start the %s backend: %s",
			 s->ops->name, strerror(-r));
		return r;
	}
	s->started = true;
	if (s->want_unwind) {
		struct unwind_service_opts uo = {
			.verbose = s->verbose_unwind,
			.table_dir = s->table_cache_dir,
			.table_max = s->table_cache_max,
			.kmaps = s->kmaps,
			.share = s->tables,
		};

		s->unwind = unwind_service_start(s->ops, s->src, s->procs, &uo);
		unwind_service_exclude(s->unwind, (uint32_t)getpid());
		for (size_t i = 0; i < s->nr_watch_pids; i++)
			unwind_service_request(s->unwind, s->watch_pids[i], 0);
	}
	s->start_real_ns = clock_ns(CLOCK_REALTIME);
	source_counters(s, &s->lost_base, &s->corrupt_base);
	s->kmaps_lost_seen = s->lost_base;
	/*
	 * The rings get their own thread: while this one builds a profile
	 * (an interval edge of ember run) or reads /proc, they keep being
	 * drained. EMBER_READER_THREAD=0 reads them here, as before.
	 */
	if (!getenv("EMBER_READER_THREAD") ||
	    strcmp(getenv("EMBER_READER_THREAD"), "0")) {
		s->reader = ring_reader_start(s->ops, s->src, session_hint_cb, s, 0);
		if (!s->reader)
			fprintf(stderr, "ember: no reader thread (%s): reading the "
				"rings between profiles instead\n", strerror(errno));
	}
	return 0;
}

int session_alloc_attach(struct session *s, const char *lib, char *err,
			 size_t err_len)
{
	struct ember_alloc_probe probes[2];
	int n;

	if (!s->ops->alloc_attach) {
		snprintf(err, err_len, "the %s backend has no allocation probes",
			 s->ops->name);
		return -EOPNOTSUPP;
	}
	n = alloc_lib_probes(lib, probes, err, err_len);
	if (n < 0)
		return n;
	return s->ops->alloc_attach(s->src, 0, lib, probes, (size_t)n, err,
				    err_len);
}

int session_alloc_attach_entry(struct session *s, uint32_t pid, char *what,
			       size_t what_len, char *err, size_t err_len)
{
	struct ember_alloc_probe probes[EMBER_MAX_ALLOC_PROBES];
	char path[128];
	int n, r;

	if (!s->ops->alloc_attach) {
		snprintf(err, err_len, "the %s backend has no allocation probes",
			 s->ops->name);
		return -EOPNOTSUPP;
	}
	n = alloc_entry_probes(pid, path, sizeof(path), what, what_len, probes,
			       EMBER_MAX_ALLOC_PROBES, err, err_len);
	if (n < 0)
		return n;
	/* entry points alone: asked, or all the backend can do */
	if (s->alloc_no_inuse || (s->ops->alloc_follows_free &&
				  !s->ops->alloc_follows_free(s->src)))
		n = (int)alloc_probes_without_inuse(probes, (size_t)n);
	/* on success: what is not followed, if anything */
	if (err_len)
		err[0] = '\0';
	r = s->ops->alloc_attach(s->src, pid, path, probes, (size_t)n, err,
				 err_len);
	if (!r && s->alloc_no_inuse)
		snprintf(err, err_len, "in-use bytes not followed (--alloc-no-inuse)");
	return r;
}

/*
 * A stack cut short may mean new code the backend could not report (its
 * miss record lost in a full ring): ask for a rebind, at most once a
 * second per process (a direct-mapped table; collisions only delay).
 */
#define CUT_SLOTS	64

static void request_after_cut(struct session *s, const struct ember_sample *smp)
{
	static struct { uint32_t pid; uint64_t ns; } seen[CUT_SLOTS];
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	unsigned int i = smp->pid % CUT_SLOTS;

	if (seen[i].pid == smp->pid && now - seen[i].ns < 1000000000ull)
		return;
	seen[i].pid = smp->pid;
	seen[i].ns = now;
	unwind_service_request(s->unwind, smp->pid, smp->time_ns);
}

/*
 * An exec, exit or unwind miss of a kept process goes to the process
 * model, once: it updates the process and its slots' owners (the
 * symbolizer) react. false: not such a record, or an invalid one (the
 * aggregation counts those).
 */
static bool session_lifecycle(struct session *s,
			      const struct ember_rec_header *rec)
{
	struct proc_event ev = { 0 };

	switch (rec->type) {
	case EMBER_REC_EXEC:
	case EMBER_REC_EXIT:
	case EMBER_REC_UNWIND_MISS:
		if (!ember_record_valid(rec, rec->size))
			return false;
		break;
	case EMBER_REC_MMAP:
		return true;	/* the reader thread gave it to kmaps */
	default:
		return false;
	}
	switch (rec->type) {
	case EMBER_REC_EXEC: {
		const struct ember_exec *x = (const void *)rec;

		if (!pb_keeps_pid(s->pb, x->pid))
			return true;
		ev = (struct proc_event){ .type = PROC_EV_EXEC, .pid = x->pid,
					  .time_ns = x->time_ns,
					  .comm = x->comm,
					  .filename = x->filename,
					  .cgroup_id = kmaps_cgroup(s->kmaps, x->pid) };
		break;
	}
	case EMBER_REC_EXIT: {
		const struct ember_exit *x = (const void *)rec;
		bool kept = pb_keeps_pid(s->pb, x->pid);

		/*
		 * Every exit, kept or not, marks its process (kept until
		 * the profile with its last samples is written); one
		 * unknown is added when it may own sampled blocks.
		 */
		ev = (struct proc_event){ .type = PROC_EV_EXIT, .pid = x->pid,
					  .time_ns = x->time_ns,
					  .comm = x->comm,
					  .create = kept && pb_holds_blocks(s->pb) };
		break;
	}
	case EMBER_REC_UNWIND_MISS: {
		const struct ember_unwind_miss *m = (const void *)rec;

		if (!m->pc || !pb_keeps_pid(s->pb, m->pid))
			return true;
		ev = (struct proc_event){ .type = PROC_EV_MISS, .pid = m->pid,
					  .time_ns = m->time_ns };
		break;
	}
	}
	proc_table_event(s->procs, &ev);
	return true;
}

/*
 * A sample whose Python activations the backend wrote one eval-loop frame
 * early (python.h, py_unshift()): in the true order, in s->unshifted
 * (valid until the next record); else rec itself.
 */
static const struct ember_rec_header *
session_py_unshift(struct session *s, const struct ember_rec_header *rec)
{
	const struct ember_sample *in = (const void *)rec;
	uint64_t *user = (uint64_t *)s->unshifted.s.ips + in->nr_kernel;
	const uint64_t *walk = (const uint64_t *)in->ips + in->nr_kernel;
	struct ember_sample *out;
	struct py_eval_ranges ev;
	bool cut;
	int n;

	if (!ember_record_has_stack(rec->type) ||
	    !(in->flags & EMBER_SF_PYTHON))
		return rec;
	/* rare (a sample at the leaf loop's entry or exit): look up the
	 * interpreter only then */
	if (py_shift_at(walk, in->nr_user) < 0)
		return rec;
	n = py_unshift(walk, in->nr_user, user,
		       sym_python_eval(s->sym, in->pid, &ev) ? &ev : NULL, &cut);
	out = n < 0 ? NULL : ember_sample_with_user(in, user, (unsigned int)n,
						     &s->unshifted.s);
	if (!out)
		return rec;
	if (cut) {
		out->flags |= EMBER_SF_USER_CUT;
		out->flags &= (uint16_t)~EMBER_SF_USER_COMPLETE;
	}
	return &out->hdr;
}

/*
 * How far this thread got, in record time, for kmaps' keep time (a gone
 * process's mappings must outlast its samples here). Every 10 ms of
 * record time: one lock, not one per record.
 */
static void session_tell_consumed(struct session *s,
				  const struct ember_rec_header *rec)
{
	uint64_t t;

	if (!ember_record_has_stack(rec->type))
		return;
	t = ((const struct ember_sample *)rec)->time_ns;
	if (t < s->kmaps_told_ns + 10000000ull)
		return;
	s->kmaps_told_ns = t;
	kmaps_consumed(s->kmaps, t);
}

/*
 * Every record, on the consuming thread: a process's exec, exit or miss
 * to the process model, the others (samples, allocations, frees, lost)
 * to the profile builder.
 */
static void session_consume_cb(const struct ember_rec_header *rec, void *ctx)
{
	struct session *s = ctx;
	/* once: the rewrites below make valid records of valid ones */
	bool valid = ember_record_valid(rec, rec->size);

	if (valid) {
		session_tell_consumed(s, rec);
		rec = session_py_unshift(s, rec);
	}
	/* a copy is held, its sample comes back with the replayed stack */
	if (s->replay && valid && !(rec = stack_replay_record(s->replay, rec)))
		return;
	if (!session_lifecycle(s, rec))
		pb_add_record(s->pb, rec);
	if (s->check && valid)
		unwind_check_record(s->check, rec);
}

/*
 * The few records that tell the unwind service a process needs tables (a
 * miss, an exec) or none any more (exit) are passed on to it as soon as
 * they are read, on the reader's thread: a queue insertion each.
 */
static void session_hint_cb(const struct ember_rec_header *rec, void *ctx)
{
	struct session *s = ctx;

	if (!ember_record_valid(rec, rec->size))
		return;
	/* the kernel's word on mappings: no I/O, a table insertion */
	if (rec->type == EMBER_REC_MMAP || rec->type == EMBER_REC_EXEC ||
	    rec->type == EMBER_REC_EXIT || rec->type == EMBER_REC_UNWIND_MISS)
		kmaps_record(s->kmaps, rec);
	if (rec->type == EMBER_REC_LOST)
		kmaps_lost(s->kmaps);
	/*
	 * its maps, before a program of a few ms is gone (no I/O here);
	 * not when the backend tells mappings (kmaps knows them)
	 */
	if (rec->type == EMBER_REC_EXEC && !kmaps_active(s->kmaps))
		exec_snaps_note(s->snaps, ((const struct ember_exec *)rec)->pid);
	if (!s->unwind)
		return;
	switch (rec->type) {
	case EMBER_REC_SAMPLE:
	case EMBER_REC_OFFCPU:
	case EMBER_REC_LOCK:
	case EMBER_REC_LOCK_WAKER:
		if (((const struct ember_sample *)rec)->flags & EMBER_SF_USER_CUT)
			request_after_cut(s, (const struct ember_sample *)rec);
		break;
	case EMBER_REC_UNWIND_MISS:
		unwind_service_request(s->unwind,
				       ((const struct ember_unwind_miss *)rec)->pid,
				       ((const struct ember_unwind_miss *)rec)->time_ns);
		break;
	case EMBER_REC_EXEC:
		unwind_service_exec(s->unwind,
				       ((const struct ember_exec *)rec)->pid,
				       ((const struct ember_exec *)rec)->time_ns);
		break;
	case EMBER_REC_EXIT:
		unwind_service_forget(s->unwind,
				      ((const struct ember_exit *)rec)->pid,
				      ((const struct ember_exit *)rec)->time_ns);
		break;
	default:
		break;
	}
}

/* Both, when this thread reads the rings itself. */
static void session_record_cb(const struct ember_rec_header *rec, void *ctx)
{
	session_consume_cb(rec, ctx);
	session_hint_cb(rec, ctx);
}

/*
 * A record lost may have been a mapping: kmaps then trusts none of the
 * processes it knows (their maps are read from /proc again). The
 * backends count their losses; compared a few times a second.
 */
static void session_kmaps_check(struct session *s)
{
	uint64_t now, lost, corrupt;

	if (!s->kmaps || !s->started)
		return;
	now = clock_ns(CLOCK_MONOTONIC);
	if (now - s->kmaps_check_ns < 200000000ull)
		return;
	s->kmaps_check_ns = now;
	source_counters(s, &lost, &corrupt);
	if (lost != s->kmaps_lost_seen)
		kmaps_lost(s->kmaps);
	s->kmaps_lost_seen = lost;
	if (!s->kmaps_warned) {
		struct kmaps_stats ks;

		kmaps_get_stats(s->kmaps, &ks);
		if (ks.evicted) {
			s->kmaps_warned = true;
			fprintf(stderr, "ember: more new processes than the %u whose mappings are kept (an exec storm): the oldest are read from /proc when needed, which costs more CPU; nothing is lost\n",
				KMAPS_MAX_PROCS);
		}
	}
}

int session_poll(struct session *s, int timeout_ms)
{
	uint64_t due = sym_run_due(s->sym);
	int r;

	/* wake for the symbolizer's timed re-reads of new processes' maps */
	if (due != UINT64_MAX && timeout_ms > 0 &&
	    due / 1000000 + 1 < (uint64_t)timeout_ms)
		timeout_ms = (int)(due / 1000000) + 1;
	if (s->reader)
		r = ring_reader_consume(s->reader, timeout_ms, session_consume_cb, s);
	else
		r = s->ops->poll(s->src, timeout_ms, session_record_cb, s);
	sym_run_due(s->sym);
	session_kmaps_check(s);
	return r;
}

void session_unwind_request(struct session *s, uint32_t pid)
{
	unwind_service_request(s->unwind, pid, 0);
}

/* A drain of the rings, for a binding that must see the latest records. */
#define SYNC_TIMEOUT_MS	2000

bool session_unwind_bind_now(struct session *s, uint32_t pid, int timeout_ms)
{
	if (!s->unwind)
		return false;
	/*
	 * Held at its exec or right after its loader mapped a library: the
	 * kernel has written the mapping records, the reader thread may
	 * not have taken them yet (it waits up to 50 ms between drains).
	 * Bound before, the binding misses them: /proc read at the exec,
	 * the library left unbound, its first samples cut, and Python not
	 * found without libc. One drain asked for now keeps /proc unread.
	 */
	if (s->reader && !ring_reader_sync(s->reader, SYNC_TIMEOUT_MS) &&
	    !s->sync_warned) {
		s->sync_warned = true;
		fprintf(stderr, "ember: the ring reader did not drain within "
			"%d ms: pid %u's first samples may be cut\n",
			SYNC_TIMEOUT_MS, pid);
	}
	unwind_service_request(s->unwind, pid, 0);
	unwind_service_flush(s->unwind, timeout_ms);
	return true;
}

void session_stop_source(struct session *s)
{
	unwind_service_source_stopping(s->unwind);
	if (s->ops->stop)
		s->ops->stop(s->src);
}

void session_drain(struct session *s)
{
	if (s->reader) {
		/* its last drain of the rings, then what it queued */
		ring_reader_stop(s->reader);
		while (ring_reader_consume(s->reader, 0, session_consume_cb, s) > 0)
			;
		return;
	}
	/* bounded: a producer still writing cannot keep us here forever */
	for (int i = 0; i < 64; i++) {
		int n = session_poll(s, 0);

		if (n <= 0 && n != -EINTR)
			break;
	}
}

int session_set_pids(struct session *s, const uint32_t *pids, size_t nr)
{
	int r = pb_set_pids(s->pb, pids, nr);

	if (!r && s->ops->set_filter)
		r = s->ops->set_filter(s->src, pids, nr, 0);
	return r;
}

struct profile *session_snapshot(struct session *s)
{
	struct prof_meta meta = { 0 };
	char host[256] = "";
	uint64_t lost, corrupt;
	struct profile *p;

	gethostname(host, sizeof(host) - 1);
	source_counters(s, &lost, &corrupt);
	meta.host_name = host;
	meta.backend = s->ops->name;
	if (s->events & EMBER_EV_ONCPU)
		meta.events |= 1u << PROF_EV_CPU;
	if (s->events & EMBER_EV_OFFCPU)
		meta.events |= 1u << PROF_EV_OFFCPU;
	if (s->events & EMBER_EV_FAULTS)
		meta.events |= 1u << PROF_EV_FAULTS;
	if (s->events & EMBER_EV_ALLOC)
		meta.events |= 1u << PROF_EV_ALLOC | 1u << PROF_EV_INUSE;
	if (s->events & EMBER_EV_LOCK) {
		meta.events |= 1u << PROF_EV_LOCK;
		meta.lock_min_ns = s->lock_min_ns;
	}
	meta.alloc_rate = s->alloc_rate;
	meta.freq_hz = s->freq_hz;
	meta.period_ns = 1000000000ull / s->freq_hz;
	if (s->events & EMBER_EV_FAULTS)
		meta.fault_period = s->fault_period;
	meta.start_ns = s->start_real_ns;
	meta.end_ns = clock_ns(CLOCK_REALTIME);
	meta.lost = lost >= s->lost_base ? lost - s->lost_base : lost;
	meta.bad_records = corrupt >= s->corrupt_base ? corrupt - s->corrupt_base : 0;
	if (s->replay) {
		struct stack_replay_stats st;

		stack_replay_get(s->replay, &st);
		meta.stack_copy_on = true;
		meta.stack_copies = st.copies - s->replay_base.copies;
		meta.stack_copy_bytes = st.copy_bytes - s->replay_base.copy_bytes;
		meta.stack_replayed = st.replayed - s->replay_base.replayed;
		meta.stack_replay_kept = (st.kept - s->replay_base.kept) +
					 (st.unpaired - s->replay_base.unpaired);
		meta.stack_copy_dropped = st.dropped - s->replay_base.dropped +
					  ring_reader_copies_shed(s->reader) -
					  s->copies_shed_base;
		meta.stack_replay_skipped = st.skipped - s->replay_base.skipped;
		meta.stack_replay_ns = st.replay_ns - s->replay_base.replay_ns;
		meta.stack_replay_python = st.py_spliced -
					   s->replay_base.py_spliced;
		meta.stack_replay_tables = st.by_tables -
					   s->replay_base.by_tables;
		meta.stack_replay_libdwfl = st.by_libdwfl -
					    s->replay_base.by_libdwfl;
		meta.stack_replay_built = st.built - s->replay_base.built;
	}
	p = pb_finish(s->pb, &meta);
	/* DWARF and file pages are only needed while a profile is built */
	sym_trim(s->sym);
	return p;
}

void session_reset(struct session *s)
{
	pb_reset(s->pb);
	if (s->replay)
		stack_replay_get(s->replay, &s->replay_base);
	s->copies_shed_base = ring_reader_copies_shed(s->reader);
	s->start_real_ns = clock_ns(CLOCK_REALTIME);
	source_counters(s, &s->lost_base, &s->corrupt_base);
}

void session_close(struct session *s)
{
	/* first: it reads the source and feeds the unwind service */
	ring_reader_free(s->reader);
	s->reader = NULL;
	/* before the source: the service drops its tables through it */
	unwind_service_stop(s->unwind);
	s->unwind = NULL;
	unwind_check_free(s->check);
	s->check = NULL;
	stack_replay_free(s->replay);
	s->replay = NULL;
	table_share_free(s->tables);
	s->tables = NULL;
	if (s->src)
		s->ops->close(s->src);
	s->src = NULL;
	pb_free(s->pb);
	s->pb = NULL;
	/* before the process model: it takes its state off the processes */
	if (s->sym)
		sym_free(s->sym);
	s->sym = NULL;
	exec_snaps_stop(s->snaps);
	s->snaps = NULL;
	if (s->kmaps && getenv("EMBER_BPF_VERBOSE")) {
		struct kmaps_stats ks;

		kmaps_get_stats(s->kmaps, &ks);
		fprintf(stderr, "ember: kmaps: %" PRIu64 " mapping records (%" PRIu64 " refused), %" PRIu64 " processes known whole, maps read %" PRIu64 " times from them and %" PRIu64 " times not known; %" PRIu64 " over the mapping bound, %" PRIu64 " evicted, %" PRIu64 " losses (processes mended after one %" PRIu64 " times), %" PRIu64 " with untold code, %" PRIu64 " misses in no code; %u processes, %zu bytes now\n",
			ks.records, ks.bad, ks.complete, ks.reads, ks.misses,
			ks.over_maps, ks.evicted, ks.lost, ks.mended, ks.untold,
			ks.no_code, ks.procs,
			ks.bytes);
	}
	kmaps_free(s->kmaps);
	s->kmaps = NULL;
	proc_table_free(s->procs);
	s->procs = NULL;
}

/* ---- pid-filter mode: follow the children of a command ---------------- */

static uint32_t parent_of(uint32_t pid)
{
	char path[64], buf[512], *p;
	unsigned int ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f)) {
		/* comm may hold spaces and parentheses: parse after the last ')' */
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 1, " %*c %u", &ppid) != 1)
			ppid = 0;
	}
	fclose(f);
	return ppid;
}

static bool any_alive(const uint32_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!kill(pids[i], 0) || errno != ESRCH)
			return true;
	return false;
}

static bool in_set(const uint32_t *set, size_t n, uint32_t v)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == v)
			return true;
	return false;
}

/*
 * Add every live descendant of the pids in set (set[0] is the command).
 * Processes already in the set stay: their samples may still be in rings.
 */
static size_t scan_descendants(uint32_t *set, size_t n, size_t max)
{
	bool grew = true;

	while (grew && n < max) {
		DIR *d = opendir("/proc");
		struct dirent *de;

		grew = false;
		if (!d)
			break;
		while ((de = readdir(d)) && n < max) {
			uint32_t pid = strtoul(de->d_name, NULL, 10);

			if (!pid || in_set(set, n, pid))
				continue;
			if (in_set(set, n, parent_of(pid))) {
				set[n++] = pid;
				grew = true;
			}
		}
		closedir(d);
	}
	return n;
}

int session_run(struct session *s, uint64_t duration_ms,
		volatile sig_atomic_t *stop, pid_t child, int *child_status)
{
	uint64_t start = clock_ns(CLOCK_MONOTONIC), last_scan = start;
	uint64_t end = duration_ms ? start + duration_ms * 1000000ull : 0;
	uint32_t *tracked = NULL;
	size_t nr_tracked = 0;

	if (child > 0 && s->track_children) {
		tracked = calloc(EMBER_MAX_FILTER_PIDS, sizeof(*tracked));
		if (tracked) {
			tracked[0] = child;
			nr_tracked = 1;
		}
	}
	for (;;) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		int timeout = SESSION_POLL_MS, r;

		if (stop && *stop)
			break;
		if (end && now >= end)
			break;
		if (end && (end - now) / 1000000 < (uint64_t)timeout)
			timeout = (end - now) / 1000000 + 1;
		r = session_poll(s, timeout);
		if (r < 0 && r != -EINTR) {
			fprintf(stderr, "ember: reading the %s backend failed: %s\n",
				s->ops->name, strerror(-r));
			free(tracked);
			return r;
		}
		if (child > 0) {
			pid_t w = waitpid(child, child_status, WNOHANG);

			if (w == child)
				break;
			if (w < 0 && errno == ECHILD)
				break;
		}
		if (s->nr_watch_pids && now - last_scan >= SESSION_SCAN_MS * 1000000ull &&
		    !any_alive(s->watch_pids, s->nr_watch_pids))
			break;
		if (tracked && now - last_scan >= SESSION_SCAN_MS * 1000000ull) {
			size_t n = scan_descendants(tracked, nr_tracked,
						    EMBER_MAX_FILTER_PIDS);

			if (n != nr_tracked) {
				nr_tracked = n;
				session_set_pids(s, tracked, nr_tracked);
			}
		}
		if (now - last_scan >= SESSION_SCAN_MS * 1000000ull) {
			if (s->on_scan)
				s->on_scan(s->scan_ctx);
			last_scan = now;
		}
	}
	free(tracked);
	return 0;
}
