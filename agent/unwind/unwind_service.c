// SPDX-License-Identifier: GPL-2.0-only
/*
 * The unwind worker (unwind_service.h): a queue of pids from the reader,
 * one thread that turns each into a binding of the process's executable
 * mappings to loaded tables (unwind_bind.h: the bindings never call back).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/deadline.h"
#include "unwind/unwind_service_internal.h"

/*
 * A lazy request or a hand-back arrived: counted per second, so that the
 * worker knows a storm (LAZY_STORM_RATE a second, this second or the
 * last) from a few now and then. Under lock.
 */
static void note_lazy(struct unwind_service *us)
{
	uint64_t now = mono_ns();

	if (now - us->lazy_window_ns >= 1000000000ull) {
		us->lazy_last = now - us->lazy_window_ns < 2000000000ull ?
				us->lazy_count : 0;
		us->lazy_count = 0;
		us->lazy_window_ns = now;
	}
	us->lazy_count++;
}

static bool lazy_storm(const struct unwind_service *us)
{
	uint64_t now = mono_ns();

	if (now - us->lazy_window_ns >= 2000000000ull)
		return false;
	if (now - us->lazy_window_ns >= 1000000000ull)
		return us->lazy_count >= LAZY_STORM_RATE;
	return us->lazy_count >= LAZY_STORM_RATE ||
	       us->lazy_last >= LAZY_STORM_RATE;
}

/*
 * Whether work just handed over must wake the worker: if so it counts as
 * awake from now (one signal is enough), and the caller signals once the
 * lock is dropped (signalled under it, the worker woke only to block on
 * the mutex). Under lock.
 */
static bool must_wake(struct unwind_service *us, bool urgent)
{
	if (!us->sleeping)
		return false;	/* it looks at the queue before it waits */
	if (!urgent && us->tail - us->head <= QUEUE_LEN / 4 &&
	    us->wake_at_ns <= mono_ns() + LAZY_WAKE_NS)
		return false;
	us->sleeping = false;
	return true;
}

static void enqueue(struct unwind_service *us, uint32_t v, uint64_t t_ns,
		    bool urgent)
{
	bool wake = false;

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
	if (!urgent)
		note_lazy(us);
	wake = must_wake(us, urgent);
out:
	pthread_mutex_unlock(&us->lock);
	if (wake)
		pthread_cond_signal(&us->wake);
}

void unwind_service_request(struct unwind_service *us, uint32_t pid,
			    uint64_t since_ns)
{
	if (us && pid == us->excluded)
		return;
	if (us && pid && !(pid & (FORGET_BIT | EXEC_BIT)))
		enqueue(us, pid, since_ns ? since_ns : mono_ns(), true);
}

void unwind_service_exec(struct unwind_service *us, uint32_t pid,
			 uint64_t since_ns)
{
	if (us && pid == us->excluded)
		return;
	if (us && pid && !(pid & (FORGET_BIT | EXEC_BIT)))
		enqueue(us, pid | EXEC_BIT, since_ns ? since_ns : mono_ns(), false);
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
		enqueue(us, pid | FORGET_BIT, since_ns, false);
}

/*
 * PROC_SLOT_UNWIND's free function: the process went from the table (on
 * the main thread, under the table's lock). Handed to the worker.
 */
static void unwind_proc_gone(void *data, void *ctx)
{
	struct unwind_service *us = ctx;
	struct unwind_proc *up = data;
	bool wake;

	pthread_mutex_lock(&us->lock);
	up->orphan_next = us->orphans;
	us->orphans = up;
	note_lazy(us);
	/* not urgent either: an exec storm's exits woke the worker 150
	 * times a second for this alone */
	wake = must_wake(us, ++us->nr_orphans >= ORPHANS_WAKE);
	pthread_mutex_unlock(&us->lock);
	if (wake)
		pthread_cond_signal(&us->wake);
}

/* ---- the thread ---- */

static void publish_stats(struct unwind_service *us)
{
	uint32_t bound = 0;

	for (struct unwind_proc *up = us->b.live; up; up = up->next)
		bound += up->bound_ns != 0;
	pthread_mutex_lock(&us->lock);
	us->st.tables_loaded = us->b.cache.loaded;
	us->st.tables_failed = us->b.cache.failed;
	us->st.tables_dropped = us->b.cache.dropped;
	us->st.table_bytes = us->b.cache.bytes;
	us->st.build_ns = us->b.cache.build_ns;
	us->st.tables_built = us->b.cache.built;
	us->st.store_on = us->store != NULL;
	table_store_get_stats(us->store, &us->st.store);
	table_store_get_stats(us->store, &us->st.store);
	us->st.tables = us->b.cache.live;
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
			proc_table_slot_attach(us->b.procs, v & ~FORGET_BIT, since,
					       PROC_SLOT_UNWIND, NULL);

		if (up)
			unwind_proc_forget(&us->b, up);
		publish_stats(us);
		return;
	}
	if (v & EXEC_BIT) {
		struct unwind_proc *pb =
			unwind_proc_attach(&us->b, v & ~EXEC_BIT, since);

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
	r = unwind_bind_proc(&us->b, v, since, NULL);
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
#define RECHECK_GRID_NS		10000000ull

static uint64_t recheck_due(struct unwind_service *us)
{
	uint64_t now = mono_ns(), next = 0;
	uint32_t done = 0;

	for (struct unwind_proc *pb = us->b.live, *nx; pb; pb = nx) {
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
		r = unwind_bind_proc(&us->b, pb->pid, 0, pb);
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
			unwind_proc_forget(&us->b, pb);
		else if (pb->recheck_ns && (!next || pb->recheck_ns < next))
			next = pb->recheck_ns;
	}
	return next;
}

static void *worker(void *arg)
{
	struct unwind_service *us = arg;
	uint64_t last_sweep = mono_ns();

	/* top -H, perf and ember itself tell the threads apart */
	pthread_setname_np(pthread_self(), "ember-unwind");

	pthread_mutex_lock(&us->lock);
	while (!us->stopping) {
		if (us->orphans) {
			struct unwind_proc *orphans = us->orphans;

			us->orphans = NULL;
			us->nr_orphans = 0;
			us->busy = true;
			pthread_mutex_unlock(&us->lock);
			unwind_take_orphans(&us->b, orphans);
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
			if (us->b.cache.build_ns != us->trimmed_at) {
				us->trimmed_at = us->b.cache.build_ns;
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

				/*
				 * on a grid: an exec storm's delayed bindings
				 * and rechecks come due together, one wake-up
				 * for each RECHECK_GRID_NS, not one each
				 */
				next = (next + RECHECK_GRID_NS - 1) /
				       RECHECK_GRID_NS * RECHECK_GRID_NS;
				wait_ns = next > now ? next - now : 0;
				if (wait_ns > 1000000000ull)
					wait_ns = 1000000000ull;
			}
			/*
			 * an exec storm: wake on its own within LAZY_WAKE_NS,
			 * so that lazy requests need no signal (a process
			 * just bound has its recheck 100 ms away: each exec
			 * and exit woke the worker). A few a second wake it
			 * themselves, no more often than this would.
			 */
			if (lazy_storm(us) && wait_ns > LAZY_WAKE_NS)
				wait_ns = LAZY_WAKE_NS;
			us->busy = false;
			pthread_cond_broadcast(&us->idle);
			ts = deadline_after_ns(CLOCK_MONOTONIC, wait_ns);
			us->wake_at_ns = mono_ns() + wait_ns;
			us->sleeping = true;
			pthread_cond_timedwait(&us->wake, &us->lock, &ts);
			us->sleeping = false;
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
			table_cache_sweep(&us->b.cache, last_sweep,
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
					    const struct unwind_service_opts *opt)
{
	struct unwind_service *us;
	pthread_condattr_t ca;

	if (!procs || !ops->unwind_load || !ops->unwind_drop ||
	    !ops->unwind_bind)
		return NULL;
	us = calloc(1, sizeof(*us));
	if (!us)
		return NULL;
	us->b.ops = ops;
	us->b.src = src;
	us->b.procs = procs;
	us->b.no_python = opt->no_python;
	us->b.kmaps = opt->kmaps;
	if (opt->table_dir && *opt->table_dir)
		us->store = table_store_open(opt->table_dir, opt->table_max);
	us->st.store_on = us->store != NULL;
	table_store_get_stats(us->store, &us->st.store);
	table_cache_init(&us->b.cache, ops, src, us->store, opt->verbose);
	table_cache_set_share(&us->b.cache, opt->share);
	pthread_mutex_init(&us->lock, NULL);
	/* monotonic: a wall clock stepped back must not stretch a wait
	 * that lazy requests count on (wake_at_ns) */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&us->wake, &ca);
	pthread_cond_init(&us->idle, &ca);
	pthread_condattr_destroy(&ca);
	proc_table_slot_owner(procs, PROC_SLOT_UNWIND, unwind_proc_gone, us);
	if (pthread_create(&us->thread, NULL, worker, us)) {
		proc_table_slot_drop(procs, PROC_SLOT_UNWIND);
		table_cache_free(&us->b.cache, true);
		table_store_close(us->store);
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
	ts = deadline_after_ns(CLOCK_MONOTONIC, (uint64_t)timeout_ms * 1000000u);
	pthread_mutex_lock(&us->lock);
	/* lazy requests and hand-backs wait no more */
	if ((us->head != us->tail || us->orphans) && must_wake(us, true))
		pthread_cond_signal(&us->wake);
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

static void stop_worker(struct unwind_service *us)
{
	pthread_mutex_lock(&us->lock);
	us->stopping = true;
	pthread_cond_signal(&us->wake);
	pthread_mutex_unlock(&us->lock);
	pthread_join(us->thread, NULL);
}

void unwind_service_source_stopping(struct unwind_service *us)
{
	if (!us || us->source_stopped)
		return;
	stop_worker(us);
	us->source_stopped = true;
}

void unwind_service_stop(struct unwind_service *us)
{
	if (!us)
		return;
	if (!us->source_stopped)	/* else joined already */
		stop_worker(us);
	/*
	 * This thread owns the bindings now: the table hands every one back
	 * (on the orphans list, all of them on the live list too), and each
	 * is unbound and freed here.
	 */
	proc_table_slot_drop(us->b.procs, PROC_SLOT_UNWIND);
	us->orphans = NULL;
	us->nr_orphans = 0;
	while (us->b.live) {
		if (!us->source_stopped)
			unwind_proc_unbind(&us->b, us->b.live);
		unwind_proc_free(&us->b, us->b.live);
	}
	free(us->b.spare);
	table_cache_free(&us->b.cache, !us->source_stopped);
	table_store_close(us->store);
	pthread_cond_destroy(&us->wake);
	pthread_cond_destroy(&us->idle);
	pthread_mutex_destroy(&us->lock);
	free(us);
}
