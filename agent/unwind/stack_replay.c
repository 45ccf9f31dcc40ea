// SPDX-License-Identifier: GPL-2.0-only
/*
 * Stack replay (stack_replay.h). A copy comes before its sample: in a
 * per-CPU ring right before it, in a shared BPF ring with other CPUs'
 * records possibly between. Copies are held by (pid, tid, time_ns) in
 * STACK_REPLAY_HELD slots; the sample that names one takes it.
 */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/stat.h>

#include "lib/clock.h"
#include "lib/safe_file.h"
#include "proc/proc_maps.h"
#include "source/source.h"
#include "unwind/copy_walk.h"
#include "unwind/oracle.h"
#include "unwind/stack_replay.h"
#include "unwind/table_cache.h"

#define COPY_BYTES	(sizeof(struct ember_user_stack) + EMBER_STACK_COPY_MAX)

/*
 * Processes whose copies keep giving nothing better (JIT code: qemu, a
 * JVM; no CFI) are left alone for a while: their replays would eat the
 * budget the others need.
 */
#define FUTILE_SLOTS	64
#define STACK_REPLAY_TRIM_NS	1000000000ull
#define FUTILE_AFTER	4		/* failures in a row */
#define FUTILE_NS	1000000000ull	/* then skipped this long */
/*
 * One process's mappings (and table references) are kept between its
 * copies, which come in runs: this long at most, and never across its
 * exec.
 */
#define MAPS_KEEP_NS	100000000ull
/*
 * A file the worker never saw (its processes all exited before their
 * binding: a short-lived program run again and again) gets its table
 * built here, at most this many per replay; one that cannot be built is
 * not tried again for a while.
 */
#define BUILDS_PER_REPLAY	4
/*
 * Only for a process already gone (a live one is the worker's to bind:
 * building its tables here too would stall this thread for as long, e.g.
 * python3.11's 0.3 s under TCG, and put the replay's budget in debt for
 * seconds), and a file of at most this size.
 */
#define BUILD_MAX_FILE		(16u << 20)
#define BUILD_FAILED_SLOTS	32
#define BUILD_RETRY_NS		10000000000ull

struct build_failed {
	uint64_t dev, ino, until_ns;
};

struct futile {
	uint32_t pid;
	uint32_t fails;
	uint64_t until_ns;
};

struct held_copy {
	uint64_t seq;		/* 0: free */
	struct ember_user_stack *u;
};

struct stack_replay {
	struct oracle *oracle;
	uint64_t pac_mask;
	uint64_t seq;
	struct held_copy held[STACK_REPLAY_HELD];
	struct stack_replay_stats st;
	struct futile futile[FUTILE_SLOTS];
	int64_t budget_ns;		/* token bucket, STACK_REPLAY_BUDGET_PERMILLE */
	uint64_t budget_at;		/* CLOCK_MONOTONIC of its last refill */
	uint64_t trimmed_ns;		/* CLOCK_MONOTONIC of its last malloc_trim */
	stack_replay_eval_fn *eval_fn;	/* Python samples' eval loops */
	void *eval_ctx;
	struct table_share *share;	/* the worker's tables, or NULL */
	stack_replay_maps_fn *maps_fn;
	void *maps_ctx;
	struct copy_walk_maps maps;	/* of maps.pid, when maps_ns */
	uint64_t maps_ns;		/* CLOCK_MONOTONIC when read; 0: none */
	bool maps_from_proc;		/* read from /proc/PID/maps */
	struct build_failed failed[BUILD_FAILED_SLOTS];
	uint64_t spliced[EMBER_MAX_FRAMES];	/* rewrite_python()'s frames */
	/* the rewritten sample: header, frames, a trailer of up to 3 u64 */
	union {
		struct ember_sample s;
		uint8_t bytes[sizeof(struct ember_sample) +
			      (2 * EMBER_MAX_FRAMES + 8) * sizeof(uint64_t)];
	} out;
};

struct stack_replay *stack_replay_new(uint64_t pac_mask, oracle_gone_fn gone,
				      void *gone_ctx)
{
	struct stack_replay *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->pac_mask = pac_mask;
	r->oracle = oracle_new(STACK_REPLAY_PROCS);
	if (r->oracle)
		oracle_no_debuginfo(r->oracle);
	if (r->oracle && gone)
		oracle_set_gone_fn(r->oracle, gone, gone_ctx);
	for (int i = 0; i < STACK_REPLAY_HELD && r->oracle; i++)
		if (!(r->held[i].u = malloc(COPY_BYTES))) {
			stack_replay_free(r);
			return NULL;
		}
	if (!r->oracle) {
		free(r);
		return NULL;
	}
	return r;
}

void stack_replay_set_python(struct stack_replay *r, stack_replay_eval_fn *fn,
			     void *ctx)
{
	r->eval_fn = fn;
	r->eval_ctx = ctx;
}

void stack_replay_set_tables(struct stack_replay *r, struct table_share *share,
			     stack_replay_maps_fn *maps_fn, void *ctx)
{
	r->share = share;
	r->maps_fn = maps_fn;
	r->maps_ctx = ctx;
}

static void maps_forget(struct stack_replay *r)
{
	copy_walk_maps_clear(&r->maps);
	r->maps_ns = 0;
}

void stack_replay_free(struct stack_replay *r)
{
	if (!r)
		return;
	maps_forget(r);
	for (int i = 0; i < STACK_REPLAY_HELD; i++)
		free(r->held[i].u);
	oracle_free(r->oracle);
	free(r);
}

void stack_replay_get(const struct stack_replay *r,
		      struct stack_replay_stats *st)
{
	*st = r->st;
}

static void hold(struct stack_replay *r, const struct ember_user_stack *u)
{
	struct held_copy *slot = &r->held[0];
	size_t len = sizeof(*u) + u->stack_len;

	r->st.copies++;
	r->st.copy_bytes += u->stack_len;
	for (int i = 0; i < STACK_REPLAY_HELD; i++) {
		if (!r->held[i].seq) {
			slot = &r->held[i];
			break;
		}
		if (r->held[i].seq < slot->seq)
			slot = &r->held[i];
	}
	if (slot->seq)
		r->st.dropped++;
	memcpy(slot->u, u, len);
	slot->u->hdr.size = (uint32_t)len;
	slot->seq = ++r->seq;
}

static struct held_copy *take(struct stack_replay *r,
			      const struct ember_sample *s)
{
	for (int i = 0; i < STACK_REPLAY_HELD; i++) {
		struct held_copy *h = &r->held[i];

		if (h->seq && h->u->tid == s->tid && h->u->pid == s->pid &&
		    h->u->time_ns == s->time_ns)
			return h;
	}
	return NULL;
}

/*
 * The sample with the replayed user frames o[0..no) in place of its own,
 * its trailer kept; NULL when the replay is no better than the walk.
 */
static const struct ember_rec_header *
rewrite(struct stack_replay *r, const struct ember_sample *s,
	const uint64_t *o, int no, int complete)
{
	unsigned int nu = s->nr_user;
	struct ember_sample *d;
	uint16_t flags = s->flags;

	/* the same sample: the walk's first frame is the copy's PC */
	if (no < 1 || !nu || o[0] != s->ips[s->nr_kernel])
		return NULL;
	if (!complete && (unsigned int)no <= nu)
		return NULL;
	d = ember_sample_with_user(s, o, (unsigned int)no, &r->out.s);
	if (!d)
		return NULL;
	flags &= (uint16_t)~(EMBER_SF_USER_CUT | EMBER_SF_USER_FP |
			     EMBER_SF_USER_FAULT | EMBER_SF_USER_TRUNC |
			     EMBER_SF_USER_COMPLETE);
	flags |= EMBER_SF_USER_CFI;
	/* not complete: the root rule decides, as for a live walk */
	if (complete)
		flags |= EMBER_SF_USER_COMPLETE;
	else if (no == EMBER_MAX_FRAMES)
		flags |= EMBER_SF_USER_TRUNC;
	d->flags = flags;
	return &d->hdr;
}

static bool has_python(const struct ember_sample *s)
{
	const __u64 *user = s->ips + s->nr_kernel;

	for (unsigned int i = 0; i < s->nr_user; i++) {
		uint64_t tag = EMBER_IP_TAG(user[i]);

		if (tag == EMBER_IP_TAG(EMBER_IP_PY) ||
		    tag == EMBER_IP_TAG(EMBER_IP_PY_CUT))
			return true;
	}
	return false;
}

/*
 * A sample with Python frames: the replay's frames o[0..no) with its
 * activations put back, when the replay is whole and each activation's
 * place is certain; NULL keeps the walk (and its Python frames).
 */
static const struct ember_rec_header *
rewrite_python(struct stack_replay *r, const struct ember_sample *s,
	       const uint64_t *o, int no, int complete)
{
	const struct ember_rec_header *out;
	struct py_eval_ranges ev;
	int n;

	if (!complete || !r->eval_fn || !r->eval_fn(r->eval_ctx, s->pid, &ev))
		return NULL;
	n = py_splice(&ev, (const uint64_t *)s->ips + s->nr_kernel,
		      s->nr_user, o, no, r->spliced, EMBER_MAX_FRAMES);
	if (n < 1)
		return NULL;
	out = rewrite(r, s, r->spliced, n, complete);
	r->st.py_spliced += out != NULL;
	return out;
}

/*
 * pid's mappings with their tables: the kept ones, else as the kernel
 * told them (maps_fn), else /proc's (from_proc: /proc's at once).
 */
static bool maps_of(struct stack_replay *r, uint32_t pid, bool from_proc,
		    uint64_t now)
{
	int err = -ENOENT;

	if (r->maps_ns && r->maps.pid == pid && now - r->maps_ns < MAPS_KEEP_NS &&
	    (!from_proc || r->maps_from_proc))
		return true;
	maps_forget(r);
	copy_walk_maps_init(&r->maps, r->share, pid);
	if (!from_proc && r->maps_fn)
		err = r->maps_fn(r->maps_ctx, pid, copy_walk_maps_add, &r->maps);
	r->maps_from_proc = err != 0;
	if (err) {
		copy_walk_maps_clear(&r->maps);
		err = proc_maps_read(NULL, pid, copy_walk_maps_add, &r->maps, NULL);
	}
	if (err) {
		copy_walk_maps_clear(&r->maps);
		return false;
	}
	copy_walk_maps_done(&r->maps);
	r->maps_ns = now;
	return true;
}

/*
 * The file m maps, opened as the worker opens it (through map_files, so
 * another mount namespace's or a deleted file is the one mapped), or
 * for a process gone by its path in our root when that is the same
 * inode. Never a FIFO, device, link or sparse file (safe_open_at()).
 */
static int open_mapped(uint32_t pid, const struct copy_walk_map *m,
		       uint64_t max_bytes)
{
	const char *why;
	struct stat st;
	int fd;

	/* the process is gone: its files by name, in ours */
	fd = proc_mapped_open(pid, m->start, m->end, m->path, "/", max_bytes,
			      &st, &why);
	if (fd >= 0 && ((uint64_t)st.st_dev != m->dev ||
			(uint64_t)st.st_ino != m->ino)) {
		close(fd);
		fd = -1;	/* another file by that name: not the mapped one */
	}
	return fd;
}

static struct build_failed *failed_slot(struct stack_replay *r,
					uint64_t dev, uint64_t ino)
{
	return &r->failed[(dev * 31 + ino) % BUILD_FAILED_SLOTS];
}

/*
 * Build the table of a file the share does not know and publish it
 * (or that it has none): true when m is known now.
 */
static bool build_file(struct stack_replay *r, uint32_t pid,
		       struct copy_walk_map *m, uint64_t now)
{
	struct build_failed *bf = failed_slot(r, m->dev, m->ino);
	struct table_file f = { 0 };
	struct table_blob *blob = NULL;
	void *tab = NULL;
	size_t len = 0;
	int fd, rc = -ENOENT;

	if (bf->dev == m->dev && bf->ino == m->ino && bf->until_ns > now)
		return false;
	if (!kill((pid_t)pid, 0) || errno != ESRCH)
		return false;	/* alive: the worker binds it */
	fd = open_mapped(pid, m, BUILD_MAX_FILE);
	if (fd >= 0) {
		rc = table_file_build(fd, &f, &tab, &len);
		close(fd);
	}
	if (!rc && !(blob = table_blob_new(r->share, tab, len)))
		rc = -ENOMEM;	/* or over the share's cap */
	free(tab);
	if (rc < 0) {
		*bf = (struct build_failed){ m->dev, m->ino, now + BUILD_RETRY_NS };
		return false;
	}
	/* tag 0: no worker table of that id to drop it */
	table_share_put(r->share, m->dev, m->ino, f.segs, f.nr_segs, blob, 0);
	table_blob_put(r->share, blob);
	r->st.built++;
	copy_walk_map_refresh(&r->maps, m);
	return m->known;
}

/* The copy's registers as the backend's walk starts from them. */
static void start_regs(const struct stack_replay *r,
		       const struct ember_user_stack *u, struct ember_uregs *ur)
{
	uint64_t regs[ORACLE_NR_REGS], pac = r->pac_mask;

	oracle_regs_from_record(u->regs, regs, &pac);
	memset(ur, 0, sizeof(*ur));
	ur->pc = regs[ORACLE_REG_PC];
	ur->sp = regs[ORACLE_REG_SP];
	ur->fp = regs[ORACLE_REG_FP];
	ur->pac_mask = pac;
	ur->fp_ok = 1;
	ur->exact = 1;
#if defined(__aarch64__)
	ur->lr = regs[30] & ~pac;
	ur->lr_ok = 1;
#endif
}

/*
 * The copy walked with the shared tables: frames into o, or -1 when the
 * tables cannot tell (libdwfl's turn). A return address in no mapping
 * the kernel told reads /proc once (code mapped since, its record not
 * read yet).
 */
static int table_replay(struct stack_replay *r, const struct ember_user_stack *u,
			bool at_entry, uint64_t now, uint64_t *o, int *complete)
{
	struct copy_walk_in in = {
		.maps = &r->maps, .stack = u->stack, .stack_len = u->stack_len,
		.at_entry = at_entry,
	};
	enum copy_walk_end end;
	int n, unknown, builds = 0;
	bool reread = false;

	*complete = 0;
	if (!r->share || !maps_of(r, u->pid, false, now))
		return -1;
	start_regs(r, u, &in.regs);
	for (;;) {
		n = copy_walk(&in, o, EMBER_MAX_FRAMES, &end, &unknown);
		/*
		 * Not for the PC itself: in no mapping it is JIT code, or an
		 * image execve has just replaced (a sample in the exec),
		 * which /proc cannot name either
		 */
		if (end == COPY_WALK_NO_MAPPING && n > 1 && !reread &&
		    !r->maps_from_proc && maps_of(r, u->pid, true, now)) {
			reread = true;
			continue;
		}
		if (end != COPY_WALK_UNDECIDED || unknown < 0 ||
		    builds++ == BUILDS_PER_REPLAY ||
		    !build_file(r, u->pid, &r->maps.v[unknown], now))
			break;
	}
	if (end == COPY_WALK_UNDECIDED)
		return -1;
	*complete = end == COPY_WALK_COMPLETE;
	return n;
}

static struct futile *futile_of(struct stack_replay *r, uint32_t pid)
{
	struct futile *f = &r->futile[pid % FUTILE_SLOTS];

	if (f->pid != pid)
		*f = (struct futile){ .pid = pid };
	return f;
}

static const struct ember_rec_header *
replay(struct stack_replay *r, const struct ember_sample *s)
{
	struct futile *f;
	struct held_copy *h = take(r, s);
	const struct ember_rec_header *out = NULL;
	uint64_t o[EMBER_MAX_FRAMES], t0, t1, c0;
	int no, complete = 0;
	bool python;

	if (!h) {
		r->st.unpaired++;
		return &s->hdr;
	}
	t0 = clock_ns(CLOCK_MONOTONIC);
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	/* refill: the budget's share of the time since, at most a burst */
	if (r->budget_at) {
		r->budget_ns += (int64_t)((t0 - r->budget_at) *
					  STACK_REPLAY_BUDGET_PERMILLE / 1000);
		if (r->budget_ns > STACK_REPLAY_BURST_NS)
			r->budget_ns = STACK_REPLAY_BURST_NS;
	} else {
		r->budget_ns = STACK_REPLAY_BURST_NS;
	}
	r->budget_at = t0;
	f = futile_of(r, s->pid);
	if (r->budget_ns < 0 || f->until_ns > t0 ||
	    (int64_t)(t0 - s->time_ns) > (int64_t)STACK_REPLAY_MAX_LAG_NS) {
		h->seq = 0;
		r->st.skipped++;
		return &s->hdr;
	}
	no = table_replay(r, h->u, s->hdr.type == EMBER_REC_ALLOC, t0, o,
			  &complete);
	if (no >= 0) {
		r->st.by_tables++;
	} else {
		struct oracle_stack os = {
			.pid = h->u->pid, .tid = h->u->tid,
			.stack = h->u->stack, .stack_len = h->u->stack_len,
			.pac_mask = r->pac_mask,
		};

		r->st.by_libdwfl++;
		oracle_regs_from_record(h->u->regs, os.regs, &os.pac_mask);
		no = oracle_unwind(r->oracle, &os, o, EMBER_MAX_FRAMES,
				   &complete);
	}
	/*
	 * libdwfl's sessions come and go with the processes copied: give
	 * their memory back now and then, or RSS keeps the high-water mark
	 * (ember run's steady RSS, suite 42). Inside the budget.
	 */
	if (t0 - r->trimmed_ns > STACK_REPLAY_TRIM_NS) {
		r->trimmed_ns = t0;
		malloc_trim(0);
	}
	/* CPU time: on a busy machine the thread is also preempted */
	t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	r->budget_ns -= (int64_t)(t1 - c0);
	r->st.replay_ns += t1 - c0;
	h->seq = 0;
	python = has_python(s);
	if (no > 0)
		out = python ? rewrite_python(r, s, o, no, complete) :
			       rewrite(r, s, o, no, complete);
	if (!out) {
		r->st.kept++;
		r->st.py_kept += python;
		if (++f->fails >= FUTILE_AFTER) {
			f->fails = 0;
			f->until_ns = t0 + FUTILE_NS;
		}
		return &s->hdr;
	}
	f->fails = 0;
	r->st.replayed++;
	if (complete)
		r->st.proven++;
	return out;
}

const struct ember_rec_header *
stack_replay_record(struct stack_replay *r, const struct ember_rec_header *rec)
{
	switch (rec->type) {
	case EMBER_REC_USER_STACK:
		hold(r, (const struct ember_user_stack *)rec);
		return NULL;
	case EMBER_REC_EXEC:
		oracle_forget(r->oracle, ((const struct ember_exec *)rec)->pid);
		if (r->maps.pid == ((const struct ember_exec *)rec)->pid)
			maps_forget(r);
		return rec;
	default:
		if (ember_record_has_stack(rec->type) &&
		    (((const struct ember_sample *)rec)->flags &
		     EMBER_SF_USER_COPIED))
			return replay(r, (const struct ember_sample *)rec);
		return rec;
	}
}
