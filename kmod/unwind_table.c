// SPDX-License-Identifier: GPL-2.0
/*
 * Unwind tables and process bindings (include/uapi/ember.h, "Unwind
 * tables"), fed by the agent over netlink while a session runs.
 *
 * Writers (netlink commands, session stop, module unload) hold ember_lock
 * and may sleep: a table arrives in chunks into a pending buffer, is
 * validated completely with ember_unwind_table_check() and only then
 * published. Readers are the samplers (NMI, hrtimer, the sched_switch
 * tracepoint): they only ever do RCU-protected hash lookups, never take a
 * lock and never allocate. A binding points straight at its tables; a
 * table is freed once no binding refers to it and its id was dropped, and
 * always after a grace period (synchronize_rcu() in the writer), so a
 * reader never sees freed memory.
 *
 * Memory for tables and bindings is accounted against unwind_mem_max
 * (module parameter, MiB). Python bindings (EMBER_CMD_PY_BIND) live here
 * too, with the same rules, counted against EMBER_MAX_PY_PROCS instead.
 */
#include <linux/hashtable.h>
#include <linux/moduleparam.h>
#include <linux/pid.h>
#include <linux/rculist.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "ember_kmod.h"
#include "../include/ember_unwind.h"

static unsigned int ember_unwind_mem_max_mb = 256;
module_param_named(unwind_mem_max, ember_unwind_mem_max_mb, uint, 0644);
MODULE_PARM_DESC(unwind_mem_max,
		 "MiB of unwind tables and bindings the agent may load (256)");

#define EMBER_UW_HASH_BITS	8

struct ember_uw_table {
	struct hlist_node node;		/* ember_uw_tables, by id */
	struct list_head all;		/* ember_uw_all_tables (writers) */
	u32 id;
	u32 size;
	refcount_t refs;		/* the id (until dropped) + bindings */
	const struct ember_unwind_table *t;	/* kvmalloc'ed, validated */
};

struct ember_uw_map {
	u64 start, end, bias;
	struct ember_uw_table *table;	/* NULL: no table (FP steps only) */
	u32 flags;
};

struct ember_uw_binding {
	struct hlist_node node;		/* ember_uw_bindings, by tgid */
	struct list_head all;		/* ember_uw_all_bindings (writers) */
	pid_t tgid;
	const struct mm_struct *mm;	/* identity only, never dereferenced */
	atomic64_t last_miss_ns;
	u32 nr;
	size_t bytes;
	struct ember_uw_map maps[];
};

/* A table arriving in chunks (ember_lock). */
struct ember_uw_pending {
	u32 id, size, filled;
	void *buf;
};

/*
 * Python bindings (EMBER_CMD_PY_BIND): the unwind bindings' sibling, same
 * rules: one per tgid, for the image (mm) the process had when bound,
 * replaced whole, published with RCU, freed after a grace period, all
 * dropped at session stop. Counted, not accounted in unwind_mem_max: at
 * most EMBER_MAX_PY_PROCS of them, ~150 bytes each.
 */
struct ember_py_binding {
	struct hlist_node node;		/* ember_py_bindings, by tgid */
	struct list_head all;		/* ember_py_all (writers) */
	pid_t tgid;
	const struct mm_struct *mm;	/* identity only, never dereferenced */
	struct ember_py_info info;
};

static DEFINE_HASHTABLE(ember_py_bindings, EMBER_UW_HASH_BITS);
static LIST_HEAD(ember_py_all);
static u32 ember_py_nr;			/* ember_lock */

static DEFINE_HASHTABLE(ember_uw_tables, EMBER_UW_HASH_BITS);
static DEFINE_HASHTABLE(ember_uw_bindings, EMBER_UW_HASH_BITS);
/* Every table (dropped ones too, while bindings hold them) and binding. */
static LIST_HEAD(ember_uw_all_tables);
static LIST_HEAD(ember_uw_all_bindings);
static struct ember_uw_pending ember_uw_pending;
static u64 ember_uw_mem;		/* ember_lock */
static u32 ember_uw_nr_tables, ember_uw_nr_bound;
/* the agent loads tables in this session: miss records are wanted */
static bool ember_uw_active;

bool ember_unwind_active(void)
{
	return READ_ONCE(ember_uw_active);
}

static u64 ember_uw_cap(void)
{
	return (u64)READ_ONCE(ember_unwind_mem_max_mb) << 20;
}

void ember_unwind_usage(u64 *used, u64 *cap, u32 *tables, u32 *bound)
{
	*used = ember_uw_mem + ember_uw_pending.size;
	*cap = ember_uw_cap();
	*tables = ember_uw_nr_tables;
	*bound = ember_uw_nr_bound;
}

static struct ember_uw_table *ember_uw_find_table(u32 id)
{
	struct ember_uw_table *t;

	hash_for_each_possible(ember_uw_tables, t, node, id)
		if (t->id == id)
			return t;
	return NULL;
}

/* ember_lock held, after a grace period: nobody can see it any more. */
static void ember_uw_table_put(struct ember_uw_table *t)
{
	if (!refcount_dec_and_test(&t->refs))
		return;
	list_del(&t->all);
	ember_uw_mem -= t->size;
	kvfree(t->t);
	kfree(t);
}

static void ember_uw_pending_clear(void)
{
	kvfree(ember_uw_pending.buf);
	memset(&ember_uw_pending, 0, sizeof(ember_uw_pending));
}

/*
 * One chunk of table id. The first chunk (offset 0) starts a table and
 * says its size; chunks must come in order; the last one validates and
 * publishes it. Any error drops the pending table.
 */
int ember_unwind_load(u32 id, u32 size, u32 offset, const void *data,
		      u32 len, struct netlink_ext_ack *extack)
{
	struct ember_uw_pending *p = &ember_uw_pending;
	struct ember_uw_table *t;
	const char *why;

	if (!id) {
		NL_SET_ERR_MSG(extack, "UNWIND_TABLE_ID must not be 0");
		return -EINVAL;
	}
	WRITE_ONCE(ember_uw_active, true);
	if (offset == 0) {
		ember_uw_pending_clear();
		if (size < sizeof(struct ember_unwind_table) ||
		    size > EMBER_UNWIND_MAX_TABLE) {
			NL_SET_ERR_MSG(extack, "UNWIND_TABLE_SIZE out of range");
			return -EINVAL;
		}
		if (ember_uw_find_table(id)) {
			NL_SET_ERR_MSG(extack, "a table with this id is loaded");
			return -EEXIST;
		}
		if (ember_uw_mem + size > ember_uw_cap()) {
			NL_SET_ERR_MSG(extack,
				       "unwind memory cap reached (module parameter unwind_mem_max)");
			return -ENOSPC;
		}
		p->buf = kvmalloc(size, GFP_KERNEL);
		if (!p->buf)
			return -ENOMEM;
		p->id = id;
		p->size = size;
		p->filled = 0;
	}
	if (!p->buf || p->id != id || p->size != size || p->filled != offset ||
	    len > p->size - p->filled) {
		ember_uw_pending_clear();
		NL_SET_ERR_MSG(extack,
			       "unwind table chunk out of order or beyond UNWIND_TABLE_SIZE");
		return -EINVAL;
	}
	memcpy(p->buf + p->filled, data, len);
	p->filled += len;
	if (p->filled < p->size)
		return 0;

	if (ember_unwind_table_check(p->buf, p->size, &why)) {
		ember_uw_pending_clear();
		/* why is a string literal of ember_unwind.h: static storage */
		if (extack)
			extack->_msg = why;
		return -EINVAL;
	}
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t) {
		ember_uw_pending_clear();
		return -ENOMEM;
	}
	t->id = id;
	t->size = p->size;
	t->t = p->buf;
	refcount_set(&t->refs, 1);
	p->buf = NULL;
	ember_uw_pending_clear();
	ember_uw_mem += t->size;
	ember_uw_nr_tables++;
	list_add(&t->all, &ember_uw_all_tables);
	hash_add_rcu(ember_uw_tables, &t->node, id);
	return 0;
}

int ember_unwind_drop(u32 id, struct netlink_ext_ack *extack)
{
	struct ember_uw_table *t = ember_uw_find_table(id);

	if (!t) {
		NL_SET_ERR_MSG(extack, "no unwind table with this id");
		return -ENOENT;
	}
	hash_del_rcu(&t->node);
	ember_uw_nr_tables--;
	synchronize_rcu();
	ember_uw_table_put(t);
	return 0;
}

static struct ember_uw_binding *ember_uw_find_binding(pid_t tgid)
{
	struct ember_uw_binding *b;

	hash_for_each_possible_rcu(ember_uw_bindings, b, node, tgid)
		if (b->tgid == tgid)
			return b;
	return NULL;
}

static void ember_uw_binding_free(struct ember_uw_binding *b)
{
	u32 i;

	for (i = 0; i < b->nr; i++)
		if (b->maps[i].table)
			ember_uw_table_put(b->maps[i].table);
	list_del(&b->all);
	ember_uw_mem -= b->bytes;
	kvfree(b);
}

/* The identity of tgid's current image, or NULL when it has none. */
static const struct mm_struct *ember_uw_mm_of(pid_t tgid)
{
	const struct mm_struct *mm = NULL;
	struct task_struct *task;

	rcu_read_lock();
	/* pids in records and bindings are the initial namespace's */
	task = pid_task(find_pid_ns(tgid, &init_pid_ns), PIDTYPE_TGID);
	if (task)
		mm = READ_ONCE(task->mm);
	rcu_read_unlock();
	return mm;
}

static int ember_uw_check_maps(const struct ember_unwind_mapping *m, u32 nr,
			       struct netlink_ext_ack *extack)
{
	u32 i;

	for (i = 0; i < nr; i++) {
		if (m[i].start >= m[i].end || !PAGE_ALIGNED(m[i].start) ||
		    !PAGE_ALIGNED(m[i].end) || m[i].end > TASK_SIZE_MAX ||
		    (i && m[i].start < m[i - 1].end)) {
			NL_SET_ERR_MSG(extack,
				       "UNWIND_MAPPINGS must be page-aligned, sorted and disjoint user ranges");
			return -EINVAL;
		}
		if (m[i].flags & ~(EMBER_UMF_ANON | EMBER_UMF_VDSO)) {
			NL_SET_ERR_MSG(extack, "unknown mapping flags");
			return -EINVAL;
		}
		if (m[i].table_id && !ember_uw_find_table(m[i].table_id)) {
			NL_SET_ERR_MSG(extack, "mapping refers to an unknown table");
			return -ENOENT;
		}
	}
	return 0;
}

/* Replace tgid's binding (nr == 0: remove it). */
int ember_unwind_bind(pid_t tgid, const struct ember_unwind_mapping *m,
		      u32 nr, struct netlink_ext_ack *extack)
{
	struct ember_uw_binding *old = ember_uw_find_binding(tgid), *b = NULL;
	size_t bytes;
	u32 i;
	int ret;

	if (tgid <= 0 || nr > EMBER_UNWIND_MAX_MAPPINGS) {
		NL_SET_ERR_MSG(extack, "bad UNWIND_PID or too many mappings");
		return -EINVAL;
	}
	WRITE_ONCE(ember_uw_active, true);
	if (nr) {
		ret = ember_uw_check_maps(m, nr, extack);
		if (ret)
			return ret;
		bytes = struct_size(b, maps, nr);
		if (ember_uw_mem + bytes > ember_uw_cap()) {
			NL_SET_ERR_MSG(extack,
				       "unwind memory cap reached (module parameter unwind_mem_max)");
			return -ENOSPC;
		}
		b = kvzalloc(bytes, GFP_KERNEL);
		if (!b)
			return -ENOMEM;
		b->tgid = tgid;
		b->mm = ember_uw_mm_of(tgid);
		b->nr = nr;
		b->bytes = bytes;
		atomic64_set(&b->last_miss_ns, 0);
		for (i = 0; i < nr; i++) {
			b->maps[i].start = m[i].start;
			b->maps[i].end = m[i].end;
			b->maps[i].bias = m[i].bias;
			b->maps[i].flags = m[i].flags;
			if (m[i].table_id) {
				b->maps[i].table = ember_uw_find_table(m[i].table_id);
				refcount_inc(&b->maps[i].table->refs);
			}
		}
		ember_uw_mem += bytes;
		list_add(&b->all, &ember_uw_all_bindings);
		hash_add_rcu(ember_uw_bindings, &b->node, tgid);
		ember_uw_nr_bound++;
	}
	if (old) {
		/* lookups find the newest first (added at the head) */
		hash_del_rcu(&old->node);
		ember_uw_nr_bound--;
		synchronize_rcu();
		ember_uw_binding_free(old);
	}
	return 0;
}

/* ---- Python bindings (writers: ember_lock) ---- */

static struct ember_py_binding *ember_py_find(pid_t tgid)
{
	struct ember_py_binding *b;

	hash_for_each_possible_rcu(ember_py_bindings, b, node, tgid)
		if (b->tgid == tgid)
			return b;
	return NULL;
}

/* A used eval range: code, so above page 0, and inside user space. */
static bool ember_py_range_bad(u64 start, u64 end)
{
	return !start || start >= end || end > TASK_SIZE_MAX;
}

/*
 * Every field of a struct ember_py_proc, before anything changes: the
 * walker then trusts the kinds and the offsets' bounds (not the memory
 * they lead to, which it reads fault-safe at sample time).
 */
static int ember_py_check(const struct ember_py_proc *p,
			  struct netlink_ext_ack *extack)
{
	const u16 offs[] = { p->ts_frame[0], p->ts_frame[1], p->fr_previous,
			     p->fr_code, p->fr_instr, p->fr_owner,
			     p->co_firstlineno, p->co_argcount, p->co_flags };
	unsigned int i;

	if (p->version < 0x030b0000) {
		NL_SET_ERR_MSG(extack, "PY_PROC version below 3.11 (0x030b0000)");
		return -EINVAL;
	}
	if (p->tstate_kind != EMBER_PY_TS_TLS &&
	    p->tstate_kind != EMBER_PY_TS_TSD) {
		NL_SET_ERR_MSG(extack, "PY_PROC tstate_kind unknown");
		return -EINVAL;
	}
	if (p->entry_kind != EMBER_PY_ENTRY_FLAG &&
	    p->entry_kind != EMBER_PY_ENTRY_SHIM) {
		NL_SET_ERR_MSG(extack, "PY_PROC entry_kind unknown");
		return -EINVAL;
	}
	if (p->ts_frame_nr < 1 || p->ts_frame_nr > 2 ||
	    (p->ts_frame_nr == 1 && p->ts_frame[1])) {
		NL_SET_ERR_MSG(extack,
			       "PY_PROC ts_frame_nr must be 1 or 2 (ts_frame[1] 0 when 1)");
		return -EINVAL;
	}
	if (p->tstate_kind == EMBER_PY_TS_TSD ?
	    !p->key_addr || (p->key_addr & 3) ||
	    p->key_addr > TASK_SIZE_MAX - sizeof(s32) : p->key_addr) {
		NL_SET_ERR_MSG(extack,
			       "PY_PROC key_addr must be an aligned user address for EMBER_PY_TS_TSD, 0 otherwise");
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(offs); i++)
		if (offs[i] >= EMBER_PY_MAX_OFFSET) {
			NL_SET_ERR_MSG(extack,
				       "PY_PROC struct offsets must be below EMBER_PY_MAX_OFFSET");
			return -EINVAL;
		}
	if (ember_py_range_bad(p->eval_start[0], p->eval_end[0]) ||
	    ((p->eval_start[1] || p->eval_end[1]) &&
	     (ember_py_range_bad(p->eval_start[1], p->eval_end[1]) ||
	      (p->eval_start[1] < p->eval_end[0] &&
	       p->eval_start[0] < p->eval_end[1])))) {
		NL_SET_ERR_MSG(extack,
			       "PY_PROC eval ranges: 0 < start < end <= TASK_SIZE, range 0 set, range 1 unused (0, 0) or disjoint from it");
		return -EINVAL;
	}
	if (p->code_tag_mask & ~7ULL) {
		NL_SET_ERR_MSG(extack,
			       "PY_PROC code_tag_mask may only clear the low 3 bits");
		return -EINVAL;
	}
	for (i = 0; i < ARRAY_SIZE(p->__reserved); i++)
		if (p->__reserved[i]) {
			NL_SET_ERR_MSG(extack, "PY_PROC reserved fields must be 0");
			return -EINVAL;
		}
	return 0;
}

/* The smallest span [*lo, *lo + *len) holding every (offset, size). */
static void ember_py_span(const u16 *off, const u8 *size, unsigned int nr,
			  u16 *lo, u16 *len)
{
	unsigned int i, l = U16_MAX, h = 0;

	for (i = 0; i < nr; i++) {
		l = min_t(unsigned int, l, off[i]);
		h = max_t(unsigned int, h, off[i] + size[i]);
	}
	*lo = l;
	*len = h - l;
}

static void ember_py_info_fill(struct ember_py_info *in,
			       const struct ember_py_proc *p)
{
	const u16 fr[] = { p->fr_previous, p->fr_code, p->fr_instr, p->fr_owner };
	const u8 frsz[] = { 8, 8, 8, 1 };
	const u16 co[] = { p->co_firstlineno, p->co_argcount, p->co_flags };
	const u8 cosz[] = { 4, 4, 4 };

	in->p = *p;
	ember_py_span(fr, frsz, ARRAY_SIZE(fr), &in->fr_lo, &in->fr_len);
	ember_py_span(co, cosz, ARRAY_SIZE(co), &in->co_lo, &in->co_len);
}

/*
 * At the cap, the bindings of processes that exited or exec'ed since
 * (the agent unbinds them, but may be late or gone) make room first.
 */
static void ember_py_reap_stale(void)
{
	struct ember_py_binding *b, *tmp;
	LIST_HEAD(dead);

	list_for_each_entry_safe(b, tmp, &ember_py_all, all) {
		if (ember_uw_mm_of(b->tgid) == b->mm)
			continue;
		hash_del_rcu(&b->node);
		list_move(&b->all, &dead);
		ember_py_nr--;
	}
	if (list_empty(&dead))
		return;
	synchronize_rcu();
	list_for_each_entry_safe(b, tmp, &dead, all)
		kfree(b);
}

/* Bind tgid's CPython (p NULL: unbind). */
int ember_py_bind(pid_t tgid, const struct ember_py_proc *p,
		  struct netlink_ext_ack *extack)
{
	struct ember_py_binding *old, *b = NULL;
	const struct mm_struct *mm;
	int ret;

	if (tgid <= 0) {
		NL_SET_ERR_MSG(extack, "bad PY_PID");
		return -EINVAL;
	}
	old = ember_py_find(tgid);
	if (p) {
		ret = ember_py_check(p, extack);
		if (ret)
			return ret;
		/* a binding without an image would never match: refuse it */
		mm = ember_uw_mm_of(tgid);
		if (!mm) {
			NL_SET_ERR_MSG(extack,
				       "PY_PID names no running user process");
			return -ESRCH;
		}
		if (!old && ember_py_nr >= EMBER_MAX_PY_PROCS)
			ember_py_reap_stale();
		if (!old && ember_py_nr >= EMBER_MAX_PY_PROCS) {
			NL_SET_ERR_MSG(extack,
				       "EMBER_MAX_PY_PROCS processes bound to Python already");
			return -ENOSPC;
		}
		b = kzalloc(sizeof(*b), GFP_KERNEL);
		if (!b)
			return -ENOMEM;
		b->tgid = tgid;
		b->mm = mm;
		ember_py_info_fill(&b->info, p);
		list_add(&b->all, &ember_py_all);
		/* lookups find the newest first (added at the head) */
		hash_add_rcu(ember_py_bindings, &b->node, tgid);
		ember_py_nr++;
	}
	if (old) {
		hash_del_rcu(&old->node);
		list_del(&old->all);
		ember_py_nr--;
		synchronize_rcu();
		kfree(old);
	}
	return 0;
}

/* Session stop and unload: everything goes. ember_lock held. */
void ember_unwind_clear(void)
{
	struct ember_py_binding *pb, *pbtmp;
	struct ember_uw_binding *b, *btmp;
	struct ember_uw_table *t, *ttmp;
	struct hlist_node *tmp;
	int bkt;

	ember_uw_pending_clear();
	hash_for_each_safe(ember_py_bindings, bkt, tmp, pb, node)
		hash_del_rcu(&pb->node);
	hash_for_each_safe(ember_uw_bindings, bkt, tmp, b, node)
		hash_del_rcu(&b->node);
	hash_for_each_safe(ember_uw_tables, bkt, tmp, t, node) {
		hash_del_rcu(&t->node);
		/* the id's own reference, once readers are gone (below) */
	}
	synchronize_rcu();
	list_for_each_entry_safe(pb, pbtmp, &ember_py_all, all) {
		list_del(&pb->all);
		kfree(pb);
	}
	ember_py_nr = 0;
	list_for_each_entry_safe(b, btmp, &ember_uw_all_bindings, all)
		ember_uw_binding_free(b);
	/* only the ids' references are left now */
	list_for_each_entry_safe(t, ttmp, &ember_uw_all_tables, all)
		ember_uw_table_put(t);
	ember_uw_nr_bound = 0;
	ember_uw_nr_tables = 0;
	WRITE_ONCE(ember_uw_active, false);
	if (ember_uw_mem)
		pr_warn_once("ember: unwind memory accounting off by %llu bytes\n",
			     ember_uw_mem);
	ember_uw_mem = 0;
}

/* ---- sample time: any context, RCU read side held by the caller ---- */

const struct ember_uw_binding *ember_unwind_binding(struct task_struct *task)
{
	const struct ember_uw_binding *b = ember_uw_find_binding(task->tgid);

	/* a binding of the image before an exec is no binding */
	return b && b->mm == task->mm ? b : NULL;
}

/* The mapping holding pc, or NULL. */
const struct ember_uw_map *ember_unwind_mapping(const struct ember_uw_binding *b,
						u64 pc)
{
	u32 lo = 0, hi = b->nr;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (pc < b->maps[mid].start)
			hi = mid;
		else if (pc >= b->maps[mid].end)
			lo = mid + 1;
		else
			return &b->maps[mid];
	}
	return NULL;
}

const struct ember_unwind_rule *ember_unwind_rule_at(const struct ember_uw_map *m,
						     u64 pc)
{
	return m->table ? ember_unwind_find(m->table->t, pc - m->bias) : NULL;
}

/* At most one miss record per process every 50 ms. */
bool ember_unwind_miss_allowed(const struct ember_uw_binding *b, u64 now)
{
	struct ember_uw_binding *w = (struct ember_uw_binding *)b;
	s64 last = atomic64_read(&w->last_miss_ns);

	if (now - last < 50 * NSEC_PER_MSEC)
		return false;
	return atomic64_cmpxchg(&w->last_miss_ns, last, now) == last;
}

/* tgid's Python binding for its current image, or NULL. */
const struct ember_py_info *ember_py_lookup(struct task_struct *task)
{
	const struct ember_py_binding *b = ember_py_find(task->tgid);

	return b && b->mm == task->mm ? &b->info : NULL;
}
