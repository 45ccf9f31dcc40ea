// SPDX-License-Identifier: GPL-2.0-only
/*
 * The profile builder (aggregate.h): aggregation of records by
 * identical (pid, tid, comm, event, stack) while recording, then one
 * symbolization pass per unique address when a profile is frozen
 * (profile_freeze.c).
 *
 * Why aggregate raw addresses and symbolize late: a sampled system repeats
 * the same few thousand stacks, so resolving each unique address once at
 * the end is far cheaper than resolving every sample. Short-lived processes
 * still resolve because the symbolizer learns their mappings when the pid
 * is first seen (its exec or first sample, through the process model's
 * events) and keeps them on the process's
 * entry in the process model (proc/proc.h) until the profile holding its
 * samples has been built.
 *
 * Processes (comm, exe, cgroup, exit state) are the process model's:
 * samples mark theirs in the current generation, and pb_reset() releases
 * the generation whose profile was just built, which frees the processes
 * that exited (and the symbolizer's state of them).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "alloc/alloc_lib.h"
#include "proc/container.h"
#include "aggregate/live_blocks.h"
#include "aggregate/aggregate_internal.h"
#include "source/source.h"

#define PB_DEFAULT_MAX_STACKS	65536
#define PB_DEFAULT_MAX_BYTES	(32u << 20)
#define PB_DEFAULT_MAX_LIVE	65536	/* sampled blocks followed to free */

/* ---- small helpers ---------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A followed block is gone: its in-use entry no longer holds it. */
static void in_use_drop(const struct live_block *b)
{
	struct agg_entry *e = b->owner;

	e->count -= b->objects;
	e->weight_ns -= b->bytes;
	e->nr_live--;
}

/* ---- builder ---------------------------------------------------------- */

struct profile_builder *pb_new(const struct pb_options *opt,
			       struct symbolizer *sym)
{
	struct profile_builder *pb = calloc(1, sizeof(*pb));

	if (!pb)
		return NULL;
	if (opt)
		pb->opt = *opt;
	if (!pb->opt.max_stacks)
		pb->opt.max_stacks = PB_DEFAULT_MAX_STACKS;
	if (!pb->opt.max_bytes)
		pb->opt.max_bytes = PB_DEFAULT_MAX_BYTES;
	if (!pb->opt.max_live_blocks)
		pb->opt.max_live_blocks = PB_DEFAULT_MAX_LIVE;
	pb->sym = sym;
	pb->nr_buckets = 1024;
	lock_join_init(&pb->locks);
	pb->buckets = calloc(pb->nr_buckets, sizeof(*pb->buckets));
	pb->procs = pb->opt.procs;
	if (!pb->procs) {
		pb->procs = proc_table_new(NULL);
		pb->own_procs = true;
	}
	if (!pb->buckets || !pb->procs ||
	    pb_set_pids(pb, opt ? opt->pids : NULL, opt ? opt->nr_pids : 0)) {
		pb_free(pb);
		return NULL;
	}
	pb->opt.pids = NULL;	/* the sorted copy is authoritative */
	return pb;
}

int pb_set_pids(struct profile_builder *pb, const uint32_t *pids,
		size_t nr_pids)
{
	uint32_t *copy = NULL;

	if (nr_pids) {
		copy = malloc(nr_pids * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, pids, nr_pids * sizeof(*copy));
		qsort(copy, nr_pids, sizeof(*copy), cmp_u32);
	}
	free(pb->pids);
	pb->pids = copy;
	pb->nr_pids = nr_pids;
	return 0;
}

/*
 * Empty the stack table. With keep_live, in-use entries that still hold
 * blocks stay: in-use memory is a state that outlives an interval (ember
 * run reports it again until the blocks are freed).
 */
static void table_clear(struct profile_builder *pb, bool keep_live)
{
	struct agg_entry *kept = NULL;

	for (size_t i = 0; i < pb->nr_buckets; i++) {
		struct agg_entry *e = pb->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			if (keep_live && e->nr_live) {
				e->next = kept;
				kept = e;
				continue;
			}
			free(e->timestamps);
			free(e);
		}
		pb->buckets[i] = NULL;
	}
	pb->nr_entries = 0;
	while (kept) {
		struct agg_entry *e = kept;

		kept = e->next;
		e->next = pb->buckets[e->hash & (pb->nr_buckets - 1)];
		pb->buckets[e->hash & (pb->nr_buckets - 1)] = e;
		pb->nr_entries++;
	}
}

/* A process that exited took its blocks with it: no longer in use. */
static bool drop_exited(const struct live_block *b, void *ctx)
{
	struct profile_builder *pb = ctx;

	if (!proc_table_exited(pb->procs, b->pid))
		return false;
	in_use_drop(b);
	return true;
}

/* The processes of in-use entries kept across a reset stay in profiles. */
static void keep_live_processes(struct profile_builder *pb)
{
	for (size_t i = 0; i < pb->nr_buckets; i++)
		for (struct agg_entry *e = pb->buckets[i]; e; e = e->next)
			proc_table_keep(pb->procs, e->pid);
}

void pb_reset(struct profile_builder *pb)
{
	if (pb->live.used)
		live_prune(&pb->live, drop_exited, pb);
	table_clear(pb, true);
	/* the profile that held their samples is written: exited ones go */
	proc_table_release(pb->procs, proc_table_advance(pb->procs));
	if (pb->nr_entries)
		keep_live_processes(pb);
	/* the profile that needed exited processes' mappings is gone */
	if (pb->sym)
		sym_sweep(pb->sym);
	memset(&pb->c, 0, sizeof(pb->c));
	/* waits and wakers still pending stay: their pair may come next */
	memset(&pb->locks.c, 0, sizeof(pb->locks.c));
	for (size_t i = 0; i < pb->nr_buckets; i++)
		for (struct agg_entry *e = pb->buckets[i]; e; e = e->next)
			pb->c.bytes += sizeof(*e) +
				       ((size_t)e->nr_kernel + e->nr_user) * 8;
}

void pb_free(struct profile_builder *pb)
{
	if (!pb)
		return;
	if (pb->buckets)
		table_clear(pb, false);
	if (pb->own_procs)
		proc_table_free(pb->procs);
	free(pb->buckets);
	free(pb->pids);
	live_release(&pb->live);
	lock_join_release(&pb->locks);
	free(pb);
}

void pb_get_counters(const struct profile_builder *pb, struct pb_counters *c)
{
	*c = pb->c;
	c->unique_stacks = pb->nr_entries;
	c->lock_joined = pb->locks.c.joined;
	c->lock_missing = pb->locks.c.missing;
	c->lock_orphans = pb->locks.c.orphans;
	c->lock_evicted = pb->locks.c.evicted;
	c->lock_pending = lock_join_held(&pb->locks, NULL);
}

static bool pb_keeps(const struct profile_builder *pb, uint32_t pid,
		     uint64_t cgroup_id)
{
	if (pb->nr_pids && !bsearch(&pid, pb->pids, pb->nr_pids,
				    sizeof(pid), cmp_u32))
		return false;
	if (pb->opt.cgroup_id && cgroup_id != pb->opt.cgroup_id)
		return false;
	return true;
}

bool pb_keeps_pid(const struct profile_builder *pb, uint32_t pid)
{
	/* exec, exit and miss records carry no cgroup: the pid filter only */
	return pb_keeps(pb, pid, pb->opt.cgroup_id);
}

bool pb_holds_blocks(const struct profile_builder *pb)
{
	return pb->live.used != 0;
}

static void table_grow(struct profile_builder *pb)
{
	size_t n = pb->nr_buckets * 2;
	struct agg_entry **b = calloc(n, sizeof(*b));

	if (!b)
		return;		/* keep the longer chains: still correct */
	for (size_t i = 0; i < pb->nr_buckets; i++) {
		struct agg_entry *e = pb->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	pb->c.bytes += (n - pb->nr_buckets) * sizeof(*b);
	free(pb->buckets);
	pb->buckets = b;
	pb->nr_buckets = n;
}

static void entry_add_time(struct profile_builder *pb, struct agg_entry *e,
			   uint64_t t)
{
	uint64_t *ts;
	uint32_t cap;

	if (e->nr_timestamps >= pb->opt.max_timestamps)
		return;
	/* grow by powers of two: capacity is implied by the count */
	if ((e->nr_timestamps & (e->nr_timestamps - 1)) == 0) {
		cap = e->nr_timestamps ? e->nr_timestamps * 2 : 1;
		if (pb->c.bytes + cap * 8 > pb->opt.max_bytes)
			return;
		ts = realloc(e->timestamps, cap * sizeof(*ts));
		if (!ts)
			return;
		pb->c.bytes += (cap - e->nr_timestamps) * sizeof(*ts);
		e->timestamps = ts;
	}
	e->timestamps[e->nr_timestamps++] = t;
}

uint16_t pb_user_frames_valid(const __u64 *user_ips, uint16_t nr_user)
{
	for (uint16_t i = 0; i < nr_user; i++) {
		uint64_t tag = EMBER_IP_TAG(user_ips[i]);

		if (tag == EMBER_IP_TAG(EMBER_IP_PY)) {
			if (i + 1 >= nr_user || !EMBER_IP_VALUE(user_ips[i]))
				return i;
			i++;	/* its word: any value */
			continue;
		}
		if (tag == EMBER_IP_TAG(EMBER_IP_PY_CUT))
			continue;
		if (user_ips[i] >= PB_USER_ADDR_LIMIT || (i && !user_ips[i]))
			return i;
	}
	return nr_user;
}

/* -e lock: what else tells lock waits apart (NULL for other events) */
struct lock_key {
	const struct ember_lock_wait *w;
	const struct ember_sample *waker;	/* NULL: none joined */
	uint16_t wk_nr_user;			/* its user frames kept */
};

static uint64_t comm_hash(uint64_t h, const char *comm)
{
	for (size_t i = 0; i < EMBER_COMM_LEN; i += 8) {
		uint64_t w;

		memcpy(&w, comm + i, 8);
		h = pb_mix64(h, w);
	}
	return h;
}

/*
 * What the waker's stack needs to tell whether it is whole: user task or
 * not, unwinder's verdict, and a cut where a frame could not be an address.
 */
static uint16_t lock_waker_flags(const struct lock_key *lk)
{
	const struct ember_sample *k = lk->waker;
	uint16_t f = k->flags & (EMBER_SF_USER_CUT | EMBER_SF_USER_COMPLETE |
				 EMBER_SF_KTHREAD | EMBER_SF_IDLE);

	if (lk->wk_nr_user != k->nr_user && k->ips[k->nr_kernel + lk->wk_nr_user])
		f |= EMBER_SF_USER_CUT;
	return f;
}

static uint64_t lock_hash(uint64_t h, const struct lock_key *lk)
{
	const struct ember_sample *k = lk->waker;
	size_t n;

	h = pb_mix64(h, lk->w->addr);
	h = pb_mix64(h, ((uint64_t)lk->w->kind << 16) | lk->w->flags);
	if (!k)
		return h;
	h = pb_mix64(h, ((uint64_t)k->pid << 32) | 1);
	h = pb_mix64(h, ((uint64_t)lock_waker_flags(lk) << 32) |
		     ((uint64_t)k->nr_kernel << 16) | lk->wk_nr_user);
	h = comm_hash(h, k->comm);
	n = (size_t)k->nr_kernel + lk->wk_nr_user;
	for (size_t i = 0; i < n; i++)
		h = pb_mix64(h, k->ips[i]);
	return h;
}

static bool lock_matches(const struct agg_entry *e, const struct lock_key *lk)
{
	const struct ember_sample *k = lk ? lk->waker : NULL;
	size_t off = (size_t)e->nr_kernel + e->nr_user;

	if (!lk)
		return e->event != PROF_EV_LOCK;
	if (e->lock_addr != lk->w->addr || e->lock_kind != lk->w->kind ||
	    e->lock_flags != lk->w->flags || e->has_waker != (k != NULL))
		return false;
	if (!k)
		return true;
	return e->wk_pid == k->pid && e->wk_nr_kernel == k->nr_kernel &&
	       e->wk_flags == lock_waker_flags(lk) &&
	       e->wk_nr_user == lk->wk_nr_user &&
	       !memcmp(e->wk_comm, k->comm, EMBER_COMM_LEN) &&
	       !memcmp(e->ips + off, k->ips,
		       ((size_t)k->nr_kernel + lk->wk_nr_user) * 8);
}

static void lock_fill(struct agg_entry *e, const struct lock_key *lk)
{
	const struct ember_sample *k = lk->waker;

	e->lock_addr = lk->w->addr;
	e->lock_kind = lk->w->kind;
	e->lock_flags = lk->w->flags;
	if (!k)
		return;
	e->has_waker = true;
	e->wk_pid = k->pid;
	e->wk_nr_kernel = k->nr_kernel;
	e->wk_nr_user = lk->wk_nr_user;
	e->wk_flags = lock_waker_flags(lk);
	memcpy(e->wk_comm, k->comm, EMBER_COMM_LEN);
	e->wk_comm[EMBER_COMM_LEN - 1] = '\0';
	memcpy(e->ips + e->nr_kernel + e->nr_user, k->ips,
	       ((size_t)k->nr_kernel + lk->wk_nr_user) * 8);
}

/*
 * The waker of a new lock entry may be another process: the process
 * model (and so the symbolizer) learns of it too, with its new code.
 */
static void lock_waker_seen(struct profile_builder *pb,
			    const struct lock_key *lk, bool fresh)
{
	const struct ember_sample *k = lk ? lk->waker : NULL;
	struct proc_event pe;

	if (!k || !k->pid)
		return;
	pe = (struct proc_event){ .type = PROC_EV_SAMPLE, .pid = k->pid,
				  .time_ns = k->time_ns, .comm = k->comm,
				  .leader = k->tid == k->pid,
				  .cgroup_id = k->cgroup_id };
	if (fresh && lk->wk_nr_user) {
		pe.ips = (const uint64_t *)(k->ips + k->nr_kernel);
		pe.nr_ips = lk->wk_nr_user;
	}
	if (proc_table_event(pb->procs, &pe) == 1)
		pb->c.processes++;
}

/*
 * Aggregate s as event ev, weighing count and weight; returns its entry,
 * or NULL when it was filtered or not kept. lk: a lock wait's lock and
 * waker (PROF_EV_LOCK), NULL otherwise.
 */
static struct agg_entry *add_sample_key(struct profile_builder *pb,
					const struct ember_sample *s,
					enum prof_event ev, uint64_t count,
					uint64_t weight,
					const struct lock_key *lk)
{
	uint16_t nr_user = pb_user_frames_valid(s->ips + s->nr_kernel, s->nr_user);
	size_t nips = (size_t)s->nr_kernel + nr_user, sz, fresh = 0;
	size_t wk_nips = lk && lk->waker ?
			 (size_t)lk->waker->nr_kernel + lk->wk_nr_user : 0;
	struct proc_event pe;
	uint64_t h = 0;
	struct agg_entry *e;
	uint8_t state;
	bool cut, complete;

	if ((s->flags & EMBER_SF_IDLE) && !pb->opt.include_idle) {
		pb->c.filtered++;
		return NULL;
	}
	if (!pb_keeps(pb, s->pid, s->cgroup_id)) {
		pb->c.filtered++;
		return NULL;
	}

	/*
	 * A stack the unwinder could not finish (EMBER_SF_USER_CUT) or that
	 * we cut at a frame no user address can be: its root is not the
	 * program's, and the outputs say so with a [cut] frame.
	 */
	cut = (nr_user != s->nr_user && s->ips[s->nr_kernel + nr_user]) ||
	      (s->flags & EMBER_SF_USER_CUT);
	complete = !cut && (s->flags & EMBER_SF_USER_COMPLETE);
	h = pb_mix64(h, ((uint64_t)s->pid << 32) | s->tid);
	if (cut && ev != PROF_EV_INUSE)	/* counted once, as allocated */
		pb->c.cut_user_stacks++;
	/* off-CPU intervals of one stack differ by how the thread left */
	state = ev == PROF_EV_OFFCPU ? s->state : 0;
	h = pb_mix64(h, ((uint64_t)state << 48) | ((uint64_t)complete << 41) |
		  ((uint64_t)cut << 40) |
		  ((uint64_t)ev << 32) | ((uint64_t)s->nr_kernel << 16) | nr_user);
	h = comm_hash(h, s->comm);
	for (size_t i = 0; i < nips; i++)
		h = pb_mix64(h, s->ips[i]);
	if (lk)
		h = lock_hash(h, lk);

	for (e = pb->buckets[h & (pb->nr_buckets - 1)]; e; e = e->next) {
		if (e->hash == h && e->pid == s->pid && e->tid == s->tid &&
		    e->event == ev && e->nr_kernel == s->nr_kernel &&
		    e->nr_user == nr_user && e->user_cut == cut &&
		    e->user_complete == complete && e->state == state &&
		    !memcmp(e->comm, s->comm, EMBER_COMM_LEN) &&
		    !memcmp(e->ips, s->ips, nips * 8) && lock_matches(e, lk))
			break;
	}
	if (!e) {
		sz = sizeof(*e) + (nips + wk_nips) * 8;
		if (pb->nr_entries >= pb->opt.max_stacks ||
		    pb->c.bytes + sz > pb->opt.max_bytes ||
		    !(e = calloc(1, sz))) {
			pb->c.dropped_stacks++;
			return NULL;
		}
		e->hash = h;
		e->pid = s->pid;
		e->tid = s->tid;
		e->event = ev;
		e->nr_kernel = s->nr_kernel;
		e->nr_user = nr_user;
		e->user_cut = cut;
		e->user_complete = complete;
		e->user_expected = s->pid &&
			!(s->flags & (EMBER_SF_KTHREAD | EMBER_SF_IDLE));
		e->state = state;
		e->cgroup_id = s->cgroup_id;
		memcpy(e->comm, s->comm, EMBER_COMM_LEN);
		e->comm[EMBER_COMM_LEN - 1] = '\0';
		memcpy(e->ips, s->ips, nips * 8);
		if (lk)
			lock_fill(e, lk);
		e->next = pb->buckets[h & (pb->nr_buckets - 1)];
		pb->buckets[h & (pb->nr_buckets - 1)] = e;
		pb->nr_entries++;
		/* a stack never seen: its code may be newly mapped */
		fresh = nr_user;
		pb->c.bytes += sz;
		if (pb->nr_entries > pb->nr_buckets)
			table_grow(pb);
		lock_waker_seen(pb, lk, true);
	}
	e->count += count;
	e->weight_ns += weight;
	e->records++;
	/* in-use is a state, not an event: no times, not counted */
	if (ev == PROF_EV_INUSE)
		return e;
	if (pb->opt.max_timestamps)
		entry_add_time(pb, e, s->time_ns);
	pb->c.samples[ev]++;

	/*
	 * The process model decides which process this is; the symbolizer
	 * reacts through its slot (reads the maps of a process new or just
	 * exec'd, checks a stack never seen against them).
	 */
	pe = (struct proc_event){ .type = PROC_EV_SAMPLE, .pid = s->pid,
				  .time_ns = s->time_ns, .comm = s->comm,
				  .leader = s->tid == s->pid,
				  .cgroup_id = s->cgroup_id, .nr_ips = fresh };
	if (fresh)
		pe.ips = (const uint64_t *)(s->ips + s->nr_kernel);
	if (proc_table_event(pb->procs, &pe) == 1)
		pb->c.processes++;
	return e;
}

static struct agg_entry *add_sample_as(struct profile_builder *pb,
				       const struct ember_sample *s,
				       enum prof_event ev, uint64_t count,
				       uint64_t weight)
{
	return add_sample_key(pb, s, ev, count, weight, NULL);
}

/*
 * A late timer's sample (include/uapi/ember.h, ember_sample.periods)
 * counts the periods it stands for where the task's CPU clock counted
 * them (pb_options.late_periods_are_cpu). On a guest that keeps steal
 * out of CPU time, the missed periods are mostly stolen time: counted
 * they made shares drift from CPU time by the steal (docs/NOTES.md), so
 * there it stays one sample of one period (its weight divided back).
 * Counted in the summary and the metrics either way.
 */
static void add_sample(struct profile_builder *pb,
		       const struct ember_sample *s, enum prof_event ev)
{
	uint64_t weight = s->weight_ns, count = 1;

	if (ev == PROF_EV_CPU && s->periods > 1) {
		pb->c.late_samples++;
		pb->c.late_periods += s->periods - 1;
		if (pb->opt.late_periods_are_cpu)
			count = s->periods;
		else
			weight /= s->periods;
	}
	add_sample_as(pb, s, ev, count, weight);
}

/*
 * A sampled allocation: allocated bytes and objects (the objects the
 * sample stands for: its bytes over the size asked), and the same as in
 * use until its block is freed.
 */
/*
 * The bytes an allocation sample of size bytes stands for when it was
 * drawn every rate bytes (Poisson): it held a sample point with
 * probability 1 - exp(-size/rate), so it weighs size over that.
 */
static uint64_t alloc_weight(uint64_t size, uint64_t rate)
{
	double p = -expm1(-(double)size / (double)(rate ? rate : 1));
	double w = p > 0 ? (double)size / p : (double)rate;

	/* a record's size is any u64: the weight saturates, never wraps */
	return w >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)w;
}

static void add_alloc(struct profile_builder *pb, const struct ember_sample *s)
{
	uint64_t addr = EMBER_ALLOC_ADDR(s), size = EMBER_ALLOC_SIZE(s);
	/* weight 0: drawn in the kernel, scaled here by the session's rate */
	uint64_t weight = s->weight_ns ? s->weight_ns :
			  alloc_weight(size, pb->opt.alloc_rate);
	uint64_t objects = size ? (weight + size / 2) / size : 1;
	struct live_block b;
	struct agg_entry *e;

	if (!objects)
		objects = 1;
	if (objects > UINT32_MAX)
		objects = UINT32_MAX;
	if (!add_sample_as(pb, s, PROF_EV_ALLOC, objects, weight))
		return;
	if (!addr) {
		/* not followed to its free: no in-use; the backend's table
		 * was full, or it does not follow blocks at all */
		if (s->flags & EMBER_SF_ALLOC_UNTRACKED)
			pb->c.inuse_untracked++;
		return;
	}
	if (!pb->live.cap && live_init(&pb->live, pb->opt.max_live_blocks)) {
		pb->c.inuse_untracked++;
		return;
	}
	e = add_sample_as(pb, s, PROF_EV_INUSE, objects, weight);
	if (!e)
		return;
	b = (struct live_block){ .addr = addr, .pid = s->pid,
				 .objects = (uint32_t)objects,
				 .bytes = weight, .owner = e };
	if (live_add(&pb->live, &b)) {
		e->nr_live++;
	} else {
		/* a block never followed would stay in use forever */
		e->count -= objects;
		e->weight_ns -= weight;
		pb->c.inuse_untracked++;
	}
}

static void add_free(struct profile_builder *pb, const struct ember_free *f)
{
	struct live_block b;

	/* a free record has no cgroup: only the pid filter applies */
	if (!pb_keeps(pb, f->pid, pb->opt.cgroup_id))
		return;
	if (live_take(&pb->live, f->pid, f->addr, &b))
		in_use_drop(&b);
	else
		pb->c.frees_unknown++;
}

/*
 * One lock wait, with the waker's record joined to it or NULL
 * (lock_join.c decides when): a contention weighing the time waited.
 */
static void add_lock(void *ctx, const struct ember_sample *s,
		     const struct ember_sample *waker)
{
	struct profile_builder *pb = ctx;
	struct lock_key lk = { .w = EMBER_LOCK_WAIT(s), .waker = waker };

	if (waker)
		lk.wk_nr_user = pb_user_frames_valid(waker->ips + waker->nr_kernel,
						     waker->nr_user);
	add_sample_key(pb, s, PROF_EV_LOCK, 1, s->weight_ns, &lk);
}

void pb_flush_locks(struct profile_builder *pb)
{
	lock_join_flush(&pb->locks, add_lock, pb);
}

void pb_add_record(struct profile_builder *pb,
		   const struct ember_rec_header *rec)
{
	pb->c.records++;
	if (!ember_record_valid(rec, rec ? rec->size : 0)) {
		pb->c.bad_records++;
		return;
	}
	switch (rec->type) {
	case EMBER_REC_SAMPLE:
		add_sample(pb, (const void *)rec, PROF_EV_CPU);
		break;
	case EMBER_REC_OFFCPU:
		add_sample(pb, (const void *)rec, PROF_EV_OFFCPU);
		break;
	case EMBER_REC_FAULT:
		add_sample(pb, (const void *)rec, PROF_EV_FAULTS);
		break;
	case EMBER_REC_ALLOC:
		add_alloc(pb, (const void *)rec);
		break;
	case EMBER_REC_FREE:
		add_free(pb, (const void *)rec);
		break;
	case EMBER_REC_LOCK:
		lock_join_wait(&pb->locks, (const void *)rec, add_lock, pb);
		break;
	case EMBER_REC_LOCK_WAKER:
		lock_join_waker(&pb->locks, (const void *)rec, add_lock, pb);
		break;
	case EMBER_REC_LOST:
		pb->c.lost += ((const struct ember_lost *)rec)->lost;
		break;
	case EMBER_REC_EXEC:
	case EMBER_REC_EXIT:
	case EMBER_REC_UNWIND_MISS:
		/* the process model's (proc_table_event()): the session's */
		break;
	default:		/* PAD */
		break;
	}
}

void pb_record_cb(const struct ember_rec_header *rec, void *ctx)
{
	pb_add_record(ctx, rec);
}
