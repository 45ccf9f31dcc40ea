// SPDX-License-Identifier: GPL-2.0-only
/*
 * The unwind worker (unwind_service.h): a queue of pids from the reader,
 * one thread that turns each into a binding of the process's executable
 * mappings to loaded tables.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "safe_file.h"
#include "proc_maps.h"
#include "table_cache.h"
#include "unwind_service.h"

#define QUEUE_LEN		1024
#define MAX_PROCS		8192	/* bound processes tracked */
#define UNWIND_GRACE_S		30	/* unused tables live this long */

/*
 * After a new binding, the process's maps are read again this long later,
 * then after the next delay, and so on: a program that is still starting
 * (ld.so mapping libc, dlopen) and then sleeps produces no samples, so no
 * miss would tell us its new mappings before it runs again. A change
 * found rebinds and starts the series over.
 */
static const uint32_t recheck_ms[] = { 100, 500, 2000 };
#define NR_RECHECKS	(sizeof(recheck_ms) / sizeof(recheck_ms[0]))

/*
 * An exec is bound this long after it, not at once: most processes of an
 * exec-heavy host (shell pipelines, build steps, wrappers) are gone by
 * then and cost nothing; one sampled sooner sends a miss, which binds at
 * once. On a build host that was 2 of every 3 bindings.
 */
#define EXEC_BIND_DELAY_MS	10

/*
 * What the worker remembers of a process: its binding. It lives in the
 * process model (proc/proc.h), in the process's PROC_SLOT_UNWIND slot,
 * so that a pid reused is a new process here too, and it belongs to this
 * thread alone: when its process goes from the table, proc_gone() hands
 * it back through the orphans list and this thread unbinds and frees it.
 *
 * Which process a record names is the table's guess (pid plus time, the
 * exit known only once the main thread has read it); a wrong guess costs
 * a rebind or an early unbind that the next miss repairs, never a wrong
 * table: a binding is always made from the pid's maps as they are now.
 */
struct unwind_proc {
	uint32_t pid;
	bool dead;			/* unbound, its process gone: free it */
	uint64_t maps_hash;		/* of its executable mappings */
	uint64_t bound_ns;
	uint64_t recheck_ns;		/* next follow-up read of its maps, 0: none */
	uint64_t exec_ns;		/* its exec record, until the first binding */
	uint32_t rechecks;		/* follow-ups done since the last change */
	uint32_t *owners;		/* table_cache entries it holds refs on */
	uint32_t nr_owners;
	struct unwind_proc *prev, *next;	/* us->live (worker) */
	struct unwind_proc *orphan_next;	/* us->orphans (under lock) */
};

struct unwind_service {
	const struct ember_source_ops *ops;
	struct ember_source *src;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake, idle;
	/* queue, under lock: pids to (re)bind (+) or forget (high bit), with
	 * the CLOCK_MONOTONIC time of the record that asked */
	uint32_t queue[QUEUE_LEN];
	uint64_t queued_ns[QUEUE_LEN];
	uint32_t head, tail;
	bool busy, stopping;
	struct unwind_service_stats st;	/* under lock */
	/* handed back by the process model (proc_gone()), under lock */
	struct unwind_proc *orphans;
	/* worker-only state */
	struct proc_table *procs;	/* the process model the bindings live in */
	struct table_cache cache;
	struct unwind_proc *live;	/* every binding this thread owns */
	struct unwind_proc *spare;	/* allocated, not yet attached */
	uint32_t nr_live;
	uint32_t excluded;		/* never bound (the agent itself) */
	uint64_t trimmed_at;		/* cache.build_ns at the last trim */
};

#define FORGET_BIT	0x80000000U
#define EXEC_BIT	0x40000000U	/* pids stay below 2^22 */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void enqueue(struct unwind_service *us, uint32_t v, uint64_t t_ns)
{
	pthread_mutex_lock(&us->lock);
	us->st.requests++;
	/* coalesce with a request already waiting (the common case: a burst
	 * of misses from one new process) */
	for (uint32_t i = us->head; i != us->tail; i++)
		if (us->queue[i % QUEUE_LEN] == v)
			goto out;
	if (us->tail - us->head == QUEUE_LEN) {
		us->st.requests_dropped++;
		goto out;
	}
	us->queued_ns[us->tail % QUEUE_LEN] = t_ns;
	us->queue[us->tail++ % QUEUE_LEN] = v;
	pthread_cond_signal(&us->wake);
out:
	pthread_mutex_unlock(&us->lock);
}

void unwind_service_request(struct unwind_service *us, uint32_t pid,
			    uint64_t since_ns)
{
	if (us && pid == us->excluded)
		return;
	if (us && pid && !(pid & (FORGET_BIT | EXEC_BIT)))
		enqueue(us, pid, since_ns ? since_ns : mono_ns());
}

void unwind_service_exec(struct unwind_service *us, uint32_t pid,
			 uint64_t since_ns)
{
	if (us && pid == us->excluded)
		return;
	if (us && pid && !(pid & (FORGET_BIT | EXEC_BIT)))
		enqueue(us, pid | EXEC_BIT, since_ns ? since_ns : mono_ns());
}

void unwind_service_exclude(struct unwind_service *us, uint32_t pid)
{
	if (us)
		us->excluded = pid;
}

void unwind_service_forget(struct unwind_service *us, uint32_t pid,
			   uint64_t since_ns)
{
	if (us && pid && !(pid & (FORGET_BIT | EXEC_BIT)))
		enqueue(us, pid | FORGET_BIT, since_ns);
}

/* ---- process bindings (worker thread only) ---- */

/*
 * The binding of the process a record of pid at time_ns names, made if
 * it has none (but never past MAX_PROCS bindings): NULL when the process
 * model has no room for the process.
 */
static struct unwind_proc *proc_attach(struct unwind_service *us,
				       uint32_t pid, uint64_t time_ns)
{
	struct unwind_proc *up, *fresh = us->spare;

	if (!fresh && us->nr_live < MAX_PROCS)
		fresh = us->spare = calloc(1, sizeof(*fresh));
	up = proc_table_slot_attach(us->procs, pid, time_ns, PROC_SLOT_UNWIND,
				    fresh);
	if (up && up == fresh) {
		us->spare = NULL;
		up->pid = pid;
		up->next = us->live;
		if (us->live)
			us->live->prev = up;
		us->live = up;
		us->nr_live++;
	}
	return up;
}

static void release_owners(struct unwind_service *us, struct unwind_proc *up)
{
	uint64_t now = mono_ns();

	for (uint32_t i = 0; i < up->nr_owners; i++) {
		struct table_file *f = &us->cache.files[up->owners[i]];

		if (f->refs && !--f->refs)
			f->idle_since_ns = now;
	}
	free(up->owners);
	up->owners = NULL;
	up->nr_owners = 0;
}

/* Unbind, if bound: an exec that died before its binding has none. */
static void unbind(struct unwind_service *us, struct unwind_proc *up)
{
	if (up->bound_ns)
		us->ops->unwind_bind(us->src, up->pid, NULL, 0, NULL, 0);
	release_owners(us, up);
	up->bound_ns = up->recheck_ns = up->exec_ns = 0;
}

static void proc_free(struct unwind_service *us, struct unwind_proc *up)
{
	release_owners(us, up);
	if (up->prev)
		up->prev->next = up->next;
	else
		us->live = up->next;
	if (up->next)
		up->next->prev = up->prev;
	us->nr_live--;
	free(up);
}

/* The process exited: unbind, and free unless the table has handed it back. */
static void forget_proc(struct unwind_service *us, struct unwind_proc *up)
{
	unbind(us, up);
	if (proc_table_slot_detach(us->procs, up->pid, PROC_SLOT_UNWIND, up))
		proc_free(us, up);
	else
		up->dead = true;	/* on the orphans list: freed from there */
}

/*
 * PROC_SLOT_UNWIND's free function: the process went from the table (on
 * the main thread, under the table's lock). Handed to the worker.
 */
static void proc_gone(void *data, void *ctx)
{
	struct unwind_service *us = ctx;
	struct unwind_proc *up = data;

	pthread_mutex_lock(&us->lock);
	up->orphan_next = us->orphans;
	us->orphans = up;
	pthread_cond_signal(&us->wake);
	pthread_mutex_unlock(&us->lock);
}

/*
 * Bindings whose process went from the table. One made for a pid the
 * table did not know was reused yet moves to the newest process of that
 * pid; any other is unbound (unless the pid has another binding) and
 * freed.
 */
static void take_orphans(struct unwind_service *us)
{
	struct unwind_proc *up, *next;
	void *held;

	pthread_mutex_lock(&us->lock);
	up = us->orphans;
	us->orphans = NULL;
	pthread_mutex_unlock(&us->lock);
	for (; up; up = next) {
		next = up->orphan_next;
		up->orphan_next = NULL;
		if (!up->dead &&
		    proc_table_slot_adopt(us->procs, up->pid, PROC_SLOT_UNWIND,
					  up, &held))
			continue;
		if (!up->dead && !held)
			unbind(us, up);
		proc_free(us, up);
	}
}

/*
 * The table entry for one file mapping, opened through map_files so that
 * a file in another mount namespace, or deleted, is the one mapped. It is
 * examined before it is opened (safe_open_at()): a mapped device is never
 * opened, and a sparse file or one over the cap costs one warning.
 */
static struct table_file *file_entry(struct unwind_service *us, uint32_t pid,
				     const struct sym_map_line *m)
{
	const struct safe_rules rules = {
		.max_bytes = TABLE_FILE_MAX_BYTES,
		.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
		.flags = SAFE_FOLLOW | SAFE_ANYONE,
	};
	struct table_file *f;
	const char *why;
	struct stat st;
	char path[96];
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	/*
	 * A file already in the cache (the same inode, size and mtime: the
	 * libraries every new process maps) costs one stat, not the ~8
	 * calls of a safe open: on an exec-heavy host that was most of a
	 * binding. stat() does not open, so a FIFO is still never opened.
	 */
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (f = table_cache_find(&us->cache, &st)))
		return f;
	fd = safe_open_at(NULL, path, &rules, &st, &why);
	if (fd < 0) {
		if (m->type == SYM_MAP_FILE)
			safe_warn("mapped file", NULL, m->path, why);
		return NULL;
	}
	f = table_cache_get(&us->cache, fd, &st, m->path);
	close(fd);
	return f;
}

struct bind_buf {
	struct ember_unwind_mapping *maps;
	uint32_t *owners;
	uint32_t nr, nr_owners;
};

static void add_mapping(struct unwind_service *us, struct bind_buf *b,
			const struct sym_map_line *m, struct table_file *f,
			uint32_t flags)
{
	struct ember_unwind_mapping *um;
	struct table_file *owner = f ? table_cache_owner(&us->cache, f) : NULL;
	uint64_t bias = 0;

	if (b->nr == EMBER_UNWIND_MAX_MAPPINGS)
		return;
	um = &b->maps[b->nr++];
	memset(um, 0, sizeof(*um));
	um->start = m->start;
	um->end = m->end;
	um->flags = flags;
	if (owner && owner->table_id &&
	    table_file_bias(f, m->start, m->type == SYM_MAP_VDSO ? 0 : m->pgoff,
			    &bias)) {
		um->table_id = owner->table_id;
		um->bias = bias;
		b->owners[b->nr_owners++] = (uint32_t)(owner - us->cache.files);
		owner->refs++;
	}
}

/*
 * The executable mappings of a process, copied out of proc_maps_read()'s
 * buffer: whether they changed is known only once all are read, and an
 * unchanged set must cost no file lookup.
 */
struct exec_maps {
	struct sym_map_line *v;
	uint32_t n, cap;
};

static bool exec_maps_add(void *ctx, struct sym_map_line *m)
{
	struct exec_maps *em = ctx;
	struct sym_map_line *c;

	/* one more than a binding holds: the vsyscall line is not bound */
	if (em->n == EMBER_UNWIND_MAX_MAPPINGS + 1)
		return false;
	if (em->n == em->cap) {
		/* grown as needed: most processes map a few dozen files */
		uint32_t cap = em->cap ? em->cap * 2 : 64;

		if (cap > EMBER_UNWIND_MAX_MAPPINGS + 1)
			cap = EMBER_UNWIND_MAX_MAPPINGS + 1;
		c = realloc(em->v, cap * sizeof(*c));
		if (!c)
			return false;
		em->v = c;
		em->cap = cap;
	}
	c = &em->v[em->n];
	*c = *m;
	c->path = strndup(m->path, m->path_len);
	if (!c->path)
		return false;
	em->n++;
	return true;
}

static void exec_maps_free(struct exec_maps *em)
{
	for (uint32_t i = 0; i < em->n; i++)
		free((char *)em->v[i].path);
	free(em->v);
}

static void bind_add(struct unwind_service *us, struct bind_buf *b,
		     uint32_t pid, const struct sym_map_line *m)
{
	switch (m->type) {
	case SYM_MAP_FILE:
	case SYM_MAP_MEMFD:
		add_mapping(us, b, m, file_entry(us, pid, m), 0);
		break;
	case SYM_MAP_VDSO:
		add_mapping(us, b, m, table_cache_vdso(&us->cache),
			    EMBER_UMF_VDSO);
		break;
	case SYM_MAP_VSYSCALL:
		break;	/* above the user address range */
	default:
		add_mapping(us, b, m, NULL, EMBER_UMF_ANON);
		break;
	}
}

/*
 * Bind pid's mappings as /proc/PID/maps shows them now, in up, or when up
 * is NULL in the binding of the process a record at time_ns names. 1: a
 * new binding, 0: nothing changed, < 0: an error (-ESRCH: gone).
 */
static int bind_proc(struct unwind_service *us, uint32_t pid,
		     uint64_t time_ns, struct unwind_proc *up)
{
	struct unwind_proc *pb;
	struct bind_buf b = { 0 };
	struct exec_maps em = { 0 };
	char err[256] = "";
	uint64_t h, now = mono_ns();
	int r;

	if (proc_maps_read(NULL, pid, exec_maps_add, &em, &h)) {
		exec_maps_free(&em);
		return -ESRCH;	/* gone already */
	}
	pb = up ? up : proc_attach(us, pid, time_ns);
	if (!pb) {
		exec_maps_free(&em);
		return -ENOSPC;
	}
	/* unchanged since the last bind: the miss is not ours to fix (JIT
	 * code, a file without CFI), and a storm of them must stay cheap */
	if (pb->bound_ns && pb->maps_hash == h) {
		exec_maps_free(&em);
		return 0;	/* nothing new */
	}
	pb->recheck_ns = 0;
	b.maps = calloc(EMBER_UNWIND_MAX_MAPPINGS, sizeof(*b.maps));
	b.owners = calloc(EMBER_UNWIND_MAX_MAPPINGS, sizeof(*b.owners));
	if (!b.maps || !b.owners) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < em.n; i++)
		bind_add(us, &b, pid, &em.v[i]);
	r = us->ops->unwind_bind(us->src, pid, b.maps, b.nr, err, sizeof(err));
	/* the new references replace the old ones either way */
	release_owners(us, pb);
	pb->owners = b.owners;
	pb->nr_owners = b.nr_owners;
	b.owners = NULL;
	if (!r) {
		pb->maps_hash = h;
		pb->bound_ns = now;
		pb->rechecks = 0;
		pb->recheck_ns = now + recheck_ms[0] * 1000000ull;
		r = 1;
	} else if (r != -ESRCH) {
		fprintf(stderr, "ember: cannot bind unwind tables of pid %u: %s\n",
			pid, err[0] ? err : strerror(-r));
	}
out:
	free(b.maps);
	free(b.owners);
	exec_maps_free(&em);
	return r;
}

/* ---- the thread ---- */

static void publish_stats(struct unwind_service *us)
{
	uint32_t bound = 0;

	for (struct unwind_proc *up = us->live; up; up = up->next)
		bound += up->bound_ns != 0;
	pthread_mutex_lock(&us->lock);
	us->st.tables_loaded = us->cache.loaded;
	us->st.tables_failed = us->cache.failed;
	us->st.tables_dropped = us->cache.dropped;
	us->st.table_bytes = us->cache.bytes;
	us->st.build_ns = us->cache.build_ns;
	us->st.tables = us->cache.live;
	us->st.bound = bound;
	pthread_mutex_unlock(&us->lock);
}

/* A new binding, lat ns after the record that asked for it. Under lock. */
static void count_bind(struct unwind_service *us, uint64_t lat)
{
	us->st.binds++;
	us->st.bind_latency_ns_sum += lat;
	if (lat > us->st.bind_latency_ns_max)
		us->st.bind_latency_ns_max = lat;
}

static void handle(struct unwind_service *us, uint32_t v, uint64_t since)
{
	uint64_t lat;
	int r;

	if (v & FORGET_BIT) {
		/* the exited process's binding, if it has one (since: the
		 * exit's time, which it came before) */
		struct unwind_proc *up =
			proc_table_slot_attach(us->procs, v & ~FORGET_BIT, since,
					       PROC_SLOT_UNWIND, NULL);

		if (up)
			forget_proc(us, up);
		publish_stats(us);
		return;
	}
	if (v & EXEC_BIT) {
		struct unwind_proc *pb = proc_attach(us, v & ~EXEC_BIT, since);

		/* a new image: bound at its first miss or EXEC_BIND_DELAY_MS
		 * from now, whichever comes first */
		if (pb) {
			pb->maps_hash = 0;
			pb->exec_ns = since;
			pb->rechecks = 0;
			pb->recheck_ns = since + EXEC_BIND_DELAY_MS * 1000000ull;
		}
		return;
	}
	r = bind_proc(us, v, since, NULL);
	lat = mono_ns() - since;
	pthread_mutex_lock(&us->lock);
	if (r == 1) {
		/* a new binding: how long the process waited for it */
		count_bind(us, lat);
	} else if (r && r != -ESRCH) {
		us->st.bind_errors++;
	}
	pthread_mutex_unlock(&us->lock);
	publish_stats(us);
}

/*
 * The follow-up reads that are due (the series of recheck_ms), at most
 * RECHECKS_PER_PASS of them so that requests waiting in the queue are not
 * held up; returns the time of the next one, 0 when none is pending, or
 * 1 when more may be due now.
 */
#define RECHECKS_PER_PASS	32

static uint64_t recheck_due(struct unwind_service *us)
{
	uint64_t now = mono_ns(), next = 0;
	uint32_t done = 0;

	for (struct unwind_proc *pb = us->live, *nx; pb; pb = nx) {
		uint32_t n;
		uint64_t exec_ns;
		int r;

		nx = pb->next;	/* pb may be freed below */
		if (!pb->recheck_ns)
			continue;
		if (pb->recheck_ns > now) {
			if (!next || pb->recheck_ns < next)
				next = pb->recheck_ns;
			continue;
		}
		if (done == RECHECKS_PER_PASS)
			return 1;
		done++;
		n = ++pb->rechecks;
		exec_ns = pb->exec_ns;
		pb->recheck_ns = n < NR_RECHECKS ? now + recheck_ms[n] * 1000000ull : 0;
		pb->exec_ns = 0;
		r = bind_proc(us, pb->pid, 0, pb);
		pthread_mutex_lock(&us->lock);
		if (exec_ns && r == 1) {
			/* the delayed binding of an exec (EXEC_BIND_DELAY_MS) */
			count_bind(us, mono_ns() - exec_ns);
		} else if (!exec_ns) {
			us->st.rechecks++;
			if (r == 1)
				us->st.recheck_binds++;
		}
		pthread_mutex_unlock(&us->lock);
		if (r == -ESRCH)
			forget_proc(us, pb);
		else if (pb->recheck_ns && (!next || pb->recheck_ns < next))
			next = pb->recheck_ns;
	}
	return next;
}

static void *worker(void *arg)
{
	struct unwind_service *us = arg;
	uint64_t last_sweep = mono_ns();

	pthread_mutex_lock(&us->lock);
	while (!us->stopping) {
		if (us->orphans) {
			us->busy = true;
			pthread_mutex_unlock(&us->lock);
			take_orphans(us);
			publish_stats(us);
			pthread_mutex_lock(&us->lock);
		} else if (us->head == us->tail) {
			uint64_t next, wait_ns = 1000000000ull;
			struct timespec ts;

			/*
			 * Compiling CFI allocates a lot briefly (libdw's CFI
			 * state, the rows): give it back once idle, or the
			 * agent's RSS keeps the high-water mark.
			 */
			if (us->cache.build_ns != us->trimmed_at) {
				us->trimmed_at = us->cache.build_ns;
				pthread_mutex_unlock(&us->lock);
				malloc_trim(0);
				pthread_mutex_lock(&us->lock);
			}
			us->busy = true;	/* flush waits for a recheck too */
			pthread_mutex_unlock(&us->lock);
			next = recheck_due(us);
			pthread_mutex_lock(&us->lock);
			if (next == 1 || us->head != us->tail || us->orphans)
				continue;	/* one done: look again */
			if (next) {
				uint64_t now = mono_ns();

				wait_ns = next > now ? next - now : 0;
				if (wait_ns > 1000000000ull)
					wait_ns = 1000000000ull;
			}
			us->busy = false;
			pthread_cond_broadcast(&us->idle);
			ts = deadline_after_ns(CLOCK_REALTIME, wait_ns);
			pthread_cond_timedwait(&us->wake, &us->lock, &ts);
		} else {
			uint64_t t = us->queued_ns[us->head % QUEUE_LEN];
			uint32_t v = us->queue[us->head++ % QUEUE_LEN];

			us->busy = true;
			pthread_mutex_unlock(&us->lock);
			handle(us, v, t);
			pthread_mutex_lock(&us->lock);
		}
		if (mono_ns() - last_sweep > 1000000000ull) {
			pthread_mutex_unlock(&us->lock);
			last_sweep = mono_ns();
			table_cache_sweep(&us->cache, last_sweep,
					  UNWIND_GRACE_S * 1000000000ull);
			publish_stats(us);
			pthread_mutex_lock(&us->lock);
		}
	}
	pthread_mutex_unlock(&us->lock);
	return NULL;
}

struct unwind_service *unwind_service_start(const struct ember_source_ops *ops,
					    struct ember_source *src,
					    struct proc_table *procs,
					    bool verbose)
{
	struct unwind_service *us;

	if (!procs || !ops->unwind_load || !ops->unwind_drop ||
	    !ops->unwind_bind)
		return NULL;
	us = calloc(1, sizeof(*us));
	if (!us)
		return NULL;
	us->ops = ops;
	us->src = src;
	us->procs = procs;
	table_cache_init(&us->cache, ops, src, verbose);
	pthread_mutex_init(&us->lock, NULL);
	pthread_cond_init(&us->wake, NULL);
	pthread_cond_init(&us->idle, NULL);
	proc_table_slot_owner(procs, PROC_SLOT_UNWIND, proc_gone, us);
	if (pthread_create(&us->thread, NULL, worker, us)) {
		proc_table_slot_drop(procs, PROC_SLOT_UNWIND);
		table_cache_free(&us->cache);
		free(us);
		return NULL;
	}
	return us;
}

void unwind_service_flush(struct unwind_service *us, int timeout_ms)
{
	struct timespec ts;

	if (!us)
		return;
	ts = deadline_after_ns(CLOCK_REALTIME, (uint64_t)timeout_ms * 1000000u);
	pthread_mutex_lock(&us->lock);
	while ((us->head != us->tail || us->busy || us->orphans) &&
	       pthread_cond_timedwait(&us->idle, &us->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&us->lock);
}

void unwind_service_get_stats(struct unwind_service *us,
			      struct unwind_service_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!us)
		return;
	pthread_mutex_lock(&us->lock);
	*st = us->st;
	pthread_mutex_unlock(&us->lock);
}

void unwind_service_stop(struct unwind_service *us)
{
	if (!us)
		return;
	pthread_mutex_lock(&us->lock);
	us->stopping = true;
	pthread_cond_signal(&us->wake);
	pthread_mutex_unlock(&us->lock);
	pthread_join(us->thread, NULL);
	/*
	 * This thread owns the bindings now: the table hands every one back
	 * (on the orphans list, all of them on the live list too), and each
	 * is unbound and freed here.
	 */
	proc_table_slot_drop(us->procs, PROC_SLOT_UNWIND);
	us->orphans = NULL;
	while (us->live) {
		unbind(us, us->live);
		proc_free(us, us->live);
	}
	free(us->spare);
	table_cache_free(&us->cache);
	pthread_cond_destroy(&us->wake);
	pthread_cond_destroy(&us->idle);
	pthread_mutex_destroy(&us->lock);
	free(us);
}
