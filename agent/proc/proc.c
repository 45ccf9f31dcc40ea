// SPDX-License-Identifier: GPL-2.0-only
/*
 * The process table (proc.h).
 *
 * Threads: one mutex guards the whole table, taken by every public
 * function for a hash lookup and a few field writes; the only I/O under it
 * is the first read of a new process's /proc files (three small files),
 * which the users would otherwise do themselves. Callers: the main
 * (consumer) thread (aggregate/aggregate.c, profile_freeze.c,
 * symbolize/symbolize.c) and the unwind worker (unwind/unwind_service.c,
 * through the slot calls of another thread); the reader thread never
 * calls it (it does no file I/O). Entries are lent only under the lock
 * (proc_table_visit()), with one exception: a slot (proc_table_slot()) is
 * a pointer into an entry, and belongs to the thread that releases and
 * evicts entries (the main thread), since only that can free it; the
 * worker's entries therefore never evict. Slot free functions run under
 * the lock. ThreadSanitizer runs test_proc's two-thread case (suite 10).
 *
 * Layout: entries hang in a fixed hash of pid, newest process of a pid
 * first. Live entries are on an LRU list (most recently used first) that
 * the cap evicts from; exited ones move to the exited list, which
 * proc_table_release() walks.
 *
 * One file (~640 lines): the hash, the two lists, the cap and the slots
 * are one structure under one lock, and every function keeps all of them
 * consistent at once.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "proc/proc.h"
#include "proc/proc_read.h"

#define BUCKETS		4096
#define EVICT_SCAN	16	/* LRU entries looked at for one eviction */
/* an exited process that never took a sample stays this long (record time) */
#define UNSAMPLED_GRACE_NS	1000000000ull
/*
 * A sample up to this long after its process's exit record is still that
 * process's: the exit tracepoint fires early in do_exit(), and the last
 * thread goes on running (and being sampled) while its memory and files
 * are torn down, tens of ms for a large process. Taking such a sample as
 * the first of a new process with the reused pid made a second process
 * that /proc no longer knew, so the profile lost the exe path of every
 * short `ember record -- CMD`. A pid is reused only after the kernel has
 * cycled through pid_max (32768 by default) others: not within 200 ms.
 * Exec records and the unwind worker's records keep the strict rule.
 */
#define EXIT_TAIL_NS		200000000ull
#define SWEEP_EVERY_NS		100000000ull

struct proc {
	struct proc *hnext;		/* hash chain: newest of a pid first */
	struct proc *prev, *next;	/* LRU list if live, exited list if not */
	uint32_t pid;
	uint32_t last_gen;
	bool sampled;			/* last_gen is meaningful */
	bool exited;
	bool kept;			/* on the kept list, not the exited list */
	bool info;			/* comm/exe/cgroup read or given */
	uint64_t start_ns, start_ticks, exit_ns, cgroup_id;
	char comm[PROC_COMM_LEN];
	char *exe_path, *cgroup_path, *container_id;
	void *slot[PROC_SLOTS];		/* users' data (proc_table_slot()) */
};

struct list {
	struct proc *head, *tail;
};

/*
 * cgroup v2 id -> what /proc/PID/cgroup said for it: an exec record whose
 * process the kernel told the cgroup id of (proc/kmaps.h) costs no read
 * when another process of that cgroup was read before. Direct-mapped.
 * (The container id may also come from cgroup v1 hierarchies: the
 * processes of one v2 cgroup are taken to share them.)
 */
#define CG_SLOTS	256
struct cg_slot {
	uint64_t id;
	char *path, *container_id;
};

struct proc_table {
	pthread_mutex_t lock;
	struct cg_slot cg[CG_SLOTS];
	uint64_t cg_hint;		/* the cgroup id of the exec being read */
	char *root;
	uint32_t max, gen;
	uint32_t written_gen;		/* last generation released */
	uint64_t swept_ns;		/* record time of the last sweep_unsampled() */
	struct proc *hash[BUCKETS];
	/*
	 * exited: in exit order, oldest at the tail, until the sweep finds
	 * them past their grace; kept: those of them that took a sample,
	 * waiting for proc_table_release() (apart, so that each sweep does
	 * not walk the interval's sampled processes again)
	 */
	struct list lru, exited, kept;
	struct proc_table_stats st;
	void (*slot_free[PROC_SLOTS])(void *data, void *ctx);
	proc_slot_event_fn *slot_event[PROC_SLOTS];
	void *slot_ctx[PROC_SLOTS];
};

/* ---- lists and hash ---------------------------------------------------- */

static void list_del(struct list *l, struct proc *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		l->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		l->tail = p->prev;
	p->prev = p->next = NULL;
}

static void list_add(struct list *l, struct proc *p)
{
	p->prev = NULL;
	p->next = l->head;
	if (l->head)
		l->head->prev = p;
	else
		l->tail = p;
	l->head = p;
}

static struct proc **bucket(struct proc_table *t, uint32_t pid)
{
	return &t->hash[pid % BUCKETS];
}

static struct proc *newest(struct proc_table *t, uint32_t pid)
{
	struct proc *p = *bucket(t, pid);

	while (p && p->pid != pid)
		p = p->hnext;
	return p;
}

static size_t entry_bytes(const struct proc *p)
{
	return sizeof(*p) + (p->exe_path ? strlen(p->exe_path) + 1 : 0) +
	       (p->cgroup_path ? strlen(p->cgroup_path) + 1 : 0) +
	       (p->container_id ? strlen(p->container_id) + 1 : 0);
}

/* Unlink p from its hash chain and list, and free it. */
static void entry_free(struct proc_table *t, struct proc *p)
{
	struct proc **pp = bucket(t, p->pid);

	while (*pp != p)
		pp = &(*pp)->hnext;
	*pp = p->hnext;
	list_del(p->kept ? &t->kept : p->exited ? &t->exited : &t->lru, p);
	if (p->exited)
		t->st.exited--;
	t->st.procs--;
	t->st.bytes -= entry_bytes(p);
	for (int i = 0; i < PROC_SLOTS; i++)
		if (p->slot[i] && t->slot_free[i])
			t->slot_free[i](p->slot[i], t->slot_ctx[i]);
	free(p->exe_path);
	free(p->cgroup_path);
	free(p->container_id);
	free(p);
}

/* ---- the cap --------------------------------------------------------- */

/* gen is at or after the last sample of p (generations wrap). */
static bool written(const struct proc *p, uint32_t gen)
{
	return !p->sampled || (int32_t)(gen - p->last_gen) >= 0;
}

/* Its samples are all written: the cap may drop a live process. */
static bool evictable(const struct proc_table *t, const struct proc *p)
{
	return written(p, t->written_gen);
}

/*
 * A few entries from a list's tail tell whether any can go: on the LRU,
 * entries of unwritten generations were used after every older one.
 */
static bool evict_from(struct proc_table *t, struct list *l)
{
	struct proc *p = l->tail;

	for (int i = 0; p && i < EVICT_SCAN; i++, p = p->prev) {
		if (evictable(t, p)) {
			entry_free(t, p);
			t->st.evicted++;
			return true;
		}
	}
	return false;
}

/*
 * Room for one more entry: first the oldest exited process with nothing
 * left to write (an exec-heavy host's many processes that never took a
 * sample), then the least recently used live one.
 */
static bool make_room(struct proc_table *t, bool evict)
{
	if (t->st.procs < t->max ||
	    (evict && (evict_from(t, &t->exited) || evict_from(t, &t->kept) ||
		       evict_from(t, &t->lru))))
		return true;
	t->st.refused++;
	return false;
}

/* ---- entries --------------------------------------------------------- */

/* comm may come from a record: PROC_COMM_LEN bytes, maybe unterminated. */
static void set_comm(struct proc *p, const char *comm)
{
	size_t n = strnlen(comm, PROC_COMM_LEN - 1);

	memcpy(p->comm, comm, n);
	p->comm[n] = '\0';
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* p's cgroup path and container id: from the cache by t->cg_hint, or read. */
static void read_cgroup(struct proc_table *t, struct proc *p)
{
	uint64_t id = t->cg_hint;
	struct cg_slot *c = id ? &t->cg[id % CG_SLOTS] : NULL;

	if (c && c->id == id) {
		p->cgroup_path = dup_or_null(c->path);
		p->container_id = dup_or_null(c->container_id);
		p->cgroup_id = id;
		return;
	}
	proc_read_cgroup(t->root, p->pid, &p->cgroup_path, &p->container_id);
	if (!c || !p->cgroup_path)
		return;	/* gone: nothing to learn of the cgroup */
	free(c->path);
	free(c->container_id);
	c->id = id;
	c->path = dup_or_null(p->cgroup_path);
	c->container_id = dup_or_null(p->container_id);
	p->cgroup_id = id;
}

/*
 * What /proc says of p, once. names: comm, the start time and the exe
 * link too (an exec record brings the first and the last).
 */
static void read_info(struct proc_table *t, struct proc *p, bool names)
{
	t->st.bytes -= entry_bytes(p);
	if (names) {
		proc_read_stat(t->root, p->pid, p->comm, &p->start_ticks);
		free(p->exe_path);
		p->exe_path = proc_read_exe(t->root, p->pid);
	}
	free(p->cgroup_path);
	free(p->container_id);
	read_cgroup(t, p);
	p->info = true;
	t->st.bytes += entry_bytes(p);
}

/*
 * A new entry for pid, newest of its pid, nothing read yet. evict: the
 * cap may drop another process (only the main thread's calls).
 */
static struct proc *entry_new(struct proc_table *t, uint32_t pid,
			      uint64_t time_ns, const char *comm, bool evict)
{
	struct proc *p;

	if (!make_room(t, evict) || !(p = calloc(1, sizeof(*p))))
		return NULL;
	p->pid = pid;
	p->start_ns = time_ns;
	if (comm)
		set_comm(p, comm);
	p->hnext = *bucket(t, pid);
	*bucket(t, pid) = p;
	list_add(&t->lru, p);
	t->st.procs++;
	t->st.created++;
	t->st.bytes += entry_bytes(p);
	return p;
}

/*
 * The process a record of pid at time_ns belongs to: the newest one,
 * unless that one exited before time_ns (the pid was reused). NULL: a new
 * one is to be made (*reused tells why).
 */
static struct proc *owner(struct proc_table *t, uint32_t pid,
			  uint64_t time_ns, uint64_t tail_ns, bool *reused)
{
	struct proc *p = newest(t, pid);

	*reused = false;
	if (p && p->exited && time_ns && time_ns > p->exit_ns + tail_ns) {
		*reused = true;
		return NULL;
	}
	return p;
}

static struct proc *lookup_or_new(struct proc_table *t, uint32_t pid,
				  uint64_t time_ns, uint64_t tail_ns,
				  const char *comm, bool names)
{
	bool reused;
	struct proc *p = owner(t, pid, time_ns, tail_ns, &reused);

	if (p) {
		if (!p->exited) {	/* most recently used */
			list_del(&t->lru, p);
			list_add(&t->lru, p);
		}
		/* made by a slot's user, who reads no /proc file of ours */
		if (!p->info)
			read_info(t, p, names);
		return p;
	}
	p = entry_new(t, pid, time_ns, comm, true);
	if (p)
		read_info(t, p, names);
	if (p && reused)
		t->st.reused++;
	return p;
}

/* Its cgroup moved (the sample's id changed): read the path again. */
static void cgroup_changed(struct proc_table *t, struct proc *p,
			   uint64_t cgroup_id)
{
	t->st.bytes -= entry_bytes(p);
	free(p->cgroup_path);
	free(p->container_id);
	proc_read_cgroup(t->root, p->pid, &p->cgroup_path, &p->container_id);
	p->cgroup_id = cgroup_id;
	t->st.bytes += entry_bytes(p);
}

/* Marked sampled in the current generation: 1 if it was not yet. */
static int mark(struct proc_table *t, struct proc *p)
{
	bool first = !p->sampled || p->last_gen != t->gen;

	p->sampled = true;
	p->last_gen = t->gen;
	return first;
}

/*
 * Exited processes that never took a sample have nothing to write: on an
 * exec-heavy host they are most of the table, and their symbolizer state
 * (the maps read at their exec) most of the agent's memory. They go
 * UNSAMPLED_GRACE_NS after their exit rather than when the interval is
 * written: until then a sample still in another CPU's ring finds them.
 * The exited list is in exit order, oldest at its tail; sampled ones move
 * to the kept list to wait for proc_table_release(). now_ns: the newest
 * exit record's time.
 */
static void sweep_unsampled(struct proc_table *t, uint64_t now_ns)
{
	struct proc *p, *prev;

	if (now_ns < t->swept_ns + SWEEP_EVERY_NS)
		return;
	t->swept_ns = now_ns;
	for (p = t->exited.tail; p; p = prev) {
		prev = p->prev;
		if (!p->exit_ns || p->exit_ns + UNSAMPLED_GRACE_NS > now_ns)
			break;
		if (!p->sampled) {
			entry_free(t, p);
			t->st.released++;
		} else {
			list_del(&t->exited, p);
			list_add(&t->kept, p);	/* oldest at the tail still */
			p->kept = true;
		}
	}
}

/* ---- the interface ----------------------------------------------------- */

struct proc_table *proc_table_new(const struct proc_table_options *opt)
{
	struct proc_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->root = strdup(opt && opt->root ? opt->root : "/proc");
	if (!t->root) {
		free(t);
		return NULL;
	}
	t->max = opt && opt->max_procs ? opt->max_procs : PROC_DEFAULT_MAX;
	t->written_gen = t->gen - 1;	/* nothing written yet */
	pthread_mutex_init(&t->lock, NULL);
	return t;
}

void proc_table_free(struct proc_table *t)
{
	if (!t)
		return;
	while (t->lru.head)
		entry_free(t, t->lru.head);
	while (t->exited.head)
		entry_free(t, t->exited.head);
	while (t->kept.head)
		entry_free(t, t->kept.head);
	for (int i = 0; i < CG_SLOTS; i++) {
		free(t->cg[i].path);
		free(t->cg[i].container_id);
	}
	pthread_mutex_destroy(&t->lock);
	free(t->root);
	free(t);
}

int proc_table_sample(struct proc_table *t, uint32_t pid, uint64_t time_ns,
		      const char *comm, bool leader, uint64_t cgroup_id)
{
	struct proc *p;
	int first = -1;

	pthread_mutex_lock(&t->lock);
	p = lookup_or_new(t, pid, time_ns, EXIT_TAIL_NS, leader ? comm : NULL, true);
	if (!p)
		goto out;
	first = mark(t, p);
	if (!p->cgroup_id)
		p->cgroup_id = cgroup_id;
	else if (first && cgroup_id && cgroup_id != p->cgroup_id)
		cgroup_changed(t, p, cgroup_id);
	/* the leader's comm names the process; it can change (exec) */
	if (comm && (leader || !p->comm[0]))
		set_comm(p, comm);
out:
	pthread_mutex_unlock(&t->lock);
	return first;
}

static void exec_cg(struct proc_table *t, uint32_t pid, uint64_t time_ns,
		    const char *comm, const char *filename, uint64_t cgroup_id);

void proc_table_exec(struct proc_table *t, uint32_t pid, uint64_t time_ns,
		     const char *comm, const char *filename)
{
	exec_cg(t, pid, time_ns, comm, filename, 0);
}

static void exec_cg(struct proc_table *t, uint32_t pid, uint64_t time_ns,
		    const char *comm, const char *filename, uint64_t cgroup_id)
{
	struct proc *p;
	char *exe;

	pthread_mutex_lock(&t->lock);
	t->cg_hint = cgroup_id;
	p = lookup_or_new(t, pid, time_ns, 0, comm, false);
	t->cg_hint = 0;
	if (p && p->exited) {
		/* an exec record older than the exit: nothing new to learn */
		p = NULL;
	}
	if (p && comm)
		set_comm(p, comm);
	if (p && filename) {
		exe = strdup(filename);
		if (exe) {
			t->st.bytes -= entry_bytes(p);
			free(p->exe_path);
			p->exe_path = exe;
			t->st.bytes += entry_bytes(p);
		}
	}
	pthread_mutex_unlock(&t->lock);
}

void proc_table_exit(struct proc_table *t, uint32_t pid, uint64_t time_ns,
		     const char *comm, bool create)
{
	struct proc *p;
	bool reused;

	pthread_mutex_lock(&t->lock);
	p = owner(t, pid, time_ns, 0, &reused);
	if (!p && create && (p = entry_new(t, pid, time_ns, comm, true)))
		read_info(t, p, false);
	if (p && !p->exited) {
		list_del(&t->lru, p);
		p->exited = true;
		p->exit_ns = time_ns;
		list_add(&t->exited, p);
		t->st.exited++;
	}
	if (time_ns)
		sweep_unsampled(t, time_ns);
	pthread_mutex_unlock(&t->lock);
}

bool proc_table_exited(struct proc_table *t, uint32_t pid)
{
	struct proc *p;
	bool r;

	pthread_mutex_lock(&t->lock);
	p = newest(t, pid);
	r = p && p->exited;
	pthread_mutex_unlock(&t->lock);
	return r;
}

void proc_table_keep(struct proc_table *t, uint32_t pid)
{
	struct proc *p;

	pthread_mutex_lock(&t->lock);
	p = newest(t, pid);
	if (!p)
		p = entry_new(t, pid, 0, NULL, true);
	if (p && !p->info)
		read_info(t, p, true);
	if (p)
		mark(t, p);
	pthread_mutex_unlock(&t->lock);
}

uint32_t proc_table_generation(struct proc_table *t)
{
	uint32_t g;

	pthread_mutex_lock(&t->lock);
	g = t->gen;
	pthread_mutex_unlock(&t->lock);
	return g;
}

/* The exited processes of list l whose samples gen wrote go. */
static void release_written(struct proc_table *t, struct list *l,
			    uint32_t gen)
{
	struct proc *p, *next;

	for (p = l->head; p; p = next) {
		next = p->next;
		if (written(p, gen)) {
			entry_free(t, p);
			t->st.released++;
		}
	}
}

void proc_table_release(struct proc_table *t, uint32_t gen)
{
	pthread_mutex_lock(&t->lock);
	if ((int32_t)(gen - t->written_gen) > 0)
		t->written_gen = gen;
	release_written(t, &t->exited, gen);
	release_written(t, &t->kept, gen);
	pthread_mutex_unlock(&t->lock);
}

uint32_t proc_table_advance(struct proc_table *t)
{
	uint32_t g;

	pthread_mutex_lock(&t->lock);
	g = t->gen++;
	pthread_mutex_unlock(&t->lock);
	return g;
}

static void info_of(const struct proc *p, struct proc_info *i)
{
	*i = (struct proc_info){
		.pid = p->pid, .start_ns = p->start_ns,
		.start_ticks = p->start_ticks, .cgroup_id = p->cgroup_id,
		.comm = p->comm, .exe_path = p->exe_path,
		.cgroup_path = p->cgroup_path,
		.container_id = p->container_id, .exited = p->exited,
		.exit_ns = p->exit_ns, .last_gen = p->last_gen,
	};
}

/* A newer process of the same pid was sampled in gen too: it is shown. */
static bool shadowed(const struct proc *chain, const struct proc *p,
		     uint32_t gen)
{
	for (; chain != p; chain = chain->hnext)
		if (chain->pid == p->pid && chain->sampled &&
		    chain->last_gen == gen)
			return true;
	return false;
}

int proc_table_visit(struct proc_table *t, uint32_t gen,
		     int (*fn)(const struct proc_info *p, void *ctx), void *ctx)
{
	struct proc_info info;
	int r = 0;

	pthread_mutex_lock(&t->lock);
	for (size_t b = 0; b < BUCKETS && !r; b++) {
		for (struct proc *p = t->hash[b]; p && !r; p = p->hnext) {
			if (!p->sampled || p->last_gen != gen ||
			    shadowed(t->hash[b], p, gen))
				continue;
			info_of(p, &info);
			r = fn(&info, ctx);
		}
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

void proc_table_get_stats(struct proc_table *t, struct proc_table_stats *st)
{
	pthread_mutex_lock(&t->lock);
	*st = t->st;
	pthread_mutex_unlock(&t->lock);
}

/* ---- users' slots ------------------------------------------------------ */

void proc_table_slot_owner(struct proc_table *t, enum proc_slot slot,
			   void (*free_fn)(void *data, void *ctx), void *ctx)
{
	pthread_mutex_lock(&t->lock);
	t->slot_free[slot] = free_fn;
	t->slot_ctx[slot] = ctx;
	pthread_mutex_unlock(&t->lock);
}

void **proc_table_slot(struct proc_table *t, uint32_t pid,
		       enum proc_slot slot, bool create)
{
	struct proc *p;

	pthread_mutex_lock(&t->lock);
	p = newest(t, pid);
	if (!p && create)
		p = entry_new(t, pid, 0, NULL, true);
	pthread_mutex_unlock(&t->lock);
	return p ? &p->slot[slot] : NULL;
}

void *proc_table_slot_older(struct proc_table *t, uint32_t pid,
			    enum proc_slot slot, const void *data)
{
	struct proc *p;
	void *r = NULL;

	pthread_mutex_lock(&t->lock);
	for (p = *bucket(t, pid); p; p = p->hnext)
		if (p->pid == pid && p->slot[slot] == data)
			break;
	for (p = p ? p->hnext : NULL; p && !r; p = p->hnext)
		if (p->pid == pid)
			r = p->slot[slot];
	pthread_mutex_unlock(&t->lock);
	return r;
}

int proc_table_slot_visit(struct proc_table *t, enum proc_slot slot,
			  int (*fn)(void *data, void *ctx), void *ctx)
{
	int r = 0;

	pthread_mutex_lock(&t->lock);
	for (size_t b = 0; b < BUCKETS && !r; b++)
		for (struct proc *p = t->hash[b]; p && !r; p = p->hnext)
			if (p->slot[slot])
				r = fn(p->slot[slot], ctx);
	pthread_mutex_unlock(&t->lock);
	return r;
}

void proc_table_slot_drop(struct proc_table *t, enum proc_slot slot)
{
	pthread_mutex_lock(&t->lock);
	for (size_t b = 0; b < BUCKETS; b++) {
		for (struct proc *p = t->hash[b]; p; p = p->hnext) {
			if (p->slot[slot] && t->slot_free[slot])
				t->slot_free[slot](p->slot[slot], t->slot_ctx[slot]);
			p->slot[slot] = NULL;
		}
	}
	t->slot_free[slot] = NULL;
	t->slot_event[slot] = NULL;
	t->slot_ctx[slot] = NULL;
	pthread_mutex_unlock(&t->lock);
}

void proc_table_slot_events(struct proc_table *t, enum proc_slot slot,
			    proc_slot_event_fn *event_fn)
{
	pthread_mutex_lock(&t->lock);
	t->slot_event[slot] = event_fn;
	pthread_mutex_unlock(&t->lock);
}

/*
 * The table learns first (an exec or a sample makes the process), then
 * each slot's owner reacts on its slot of the newest process of the pid,
 * outside the lock (they read files); an exit is seen by the owners
 * while the process is still live, then marked. A process the table
 * does not know is made for an exec, a miss or a sample only when an
 * owner listens (what proc_table_slot() would make).
 */
int proc_table_event(struct proc_table *t, const struct proc_event *ev)
{
	proc_slot_event_fn *fn[PROC_SLOTS];
	void *ctx[PROC_SLOTS];
	bool listened = false;
	struct proc *p;
	int r = 0;

	if (ev->type == PROC_EV_EXEC)
		exec_cg(t, ev->pid, ev->time_ns, ev->comm, ev->filename,
			ev->cgroup_id);
	else if (ev->type == PROC_EV_SAMPLE)
		r = proc_table_sample(t, ev->pid, ev->time_ns, ev->comm,
				      ev->leader, ev->cgroup_id);
	pthread_mutex_lock(&t->lock);
	for (int s = 0; s < PROC_SLOTS; s++) {
		fn[s] = t->slot_event[s];
		ctx[s] = t->slot_ctx[s];
		listened |= fn[s] != NULL;
	}
	p = newest(t, ev->pid);
	if (!p && listened && ev->type != PROC_EV_EXIT)
		p = entry_new(t, ev->pid, 0, NULL, true);
	pthread_mutex_unlock(&t->lock);
	for (int s = 0; p && s < PROC_SLOTS; s++)
		if (fn[s])
			fn[s](&p->slot[s], ev, ctx[s]);
	if (ev->type == PROC_EV_EXIT)
		proc_table_exit(t, ev->pid, ev->time_ns, ev->comm, ev->create);
	return r;
}

/* ---- slots of another thread ------------------------------------------- */

void *proc_table_slot_attach(struct proc_table *t, uint32_t pid,
			     uint64_t time_ns, enum proc_slot slot,
			     void *fresh)
{
	struct proc *p;
	bool reused;
	void *r = NULL;

	pthread_mutex_lock(&t->lock);
	p = owner(t, pid, time_ns, 0, &reused);
	if (!p && fresh && (p = entry_new(t, pid, time_ns, NULL, false)) &&
	    reused)
		t->st.reused++;
	if (p) {
		if (!p->slot[slot])
			p->slot[slot] = fresh;
		r = p->slot[slot];
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

bool proc_table_slot_detach(struct proc_table *t, uint32_t pid,
			    enum proc_slot slot, const void *data)
{
	struct proc *p;
	bool r = false;

	pthread_mutex_lock(&t->lock);
	for (p = *bucket(t, pid); p && !r; p = p->hnext) {
		if (p->pid == pid && p->slot[slot] == data) {
			p->slot[slot] = NULL;
			r = true;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

bool proc_table_slot_adopt(struct proc_table *t, uint32_t pid,
			   enum proc_slot slot, void *data, void **held)
{
	struct proc *p;
	bool r = false;

	pthread_mutex_lock(&t->lock);
	p = newest(t, pid);
	*held = p ? p->slot[slot] : NULL;
	if (p && !p->exited && !p->slot[slot]) {
		p->slot[slot] = data;
		r = true;
	}
	pthread_mutex_unlock(&t->lock);
	return r;
}

bool proc_steal_accounted(void)
{
	uint64_t ticks;

	return proc_steal_ticks(NULL, &ticks) && ticks > 0;
}
