// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember run: the continuous-profiling daemon.
 *
 * The main thread samples: it drains the rings into the profile builder
 * and, once per interval, snapshots and resets the aggregation, encodes the
 * snapshot as an OTLP ExportProfilesServiceRequest and hands it to the
 * exporter. The exporter's own thread does all network I/O against a
 * bounded drop-oldest queue, so a slow or absent receiver never stalls
 * sampling. SIGHUP reloads the configuration; SIGTERM/SIGINT stop
 * sampling, export the last partial interval and give the exporter
 * --shutdown-timeout seconds to deliver what is queued.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/commands.h"
#include "alloc/alloc_lib.h"
#include "cli/config.h"
#include "cli/session_opts.h"
#include "cli/signals.h"
#include "export/local_store.h"
#include "export/metrics.h"
#include "export/otlp_export.h"
#include "lib/clock.h"
#include "proc/exec_snap.h"
#include "output/output_otlp.h"
#include "source/kmem_budget.h"
#include "session/session.h"

#define POLL_MS 200		/* ring drain period: bounds signal latency too */

static volatile sig_atomic_t stop_requested, reload_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void on_hup(int sig)
{
	(void)sig;
	reload_requested = 1;
}

/* Daemon counters, read by the metrics thread. */
struct run_counters {
	pthread_mutex_t lock;
	uint64_t samples[PROF_EV__COUNT];
	uint64_t lost, bad_records, dropped_stacks, cut_user_stacks;
	uint64_t unproven_user_stacks;
	uint64_t late_periods;	/* periods late timers' samples added */
	/* --stack-copy: copies, bytes, replayed, kept as walked, dropped */
	uint64_t stack_copies, stack_copy_bytes, stack_replayed;
	uint64_t stack_replay_kept, stack_copy_dropped;
	uint64_t stack_replay_skipped, stack_replay_ns;
	/* -e lock: the backend's counters (read at each interval edge) and
	 * the joins of waits with their wakers */
	uint64_t lock_waits, lock_overflow, lock_wakers;
	uint64_t lock_joined, lock_missing, lock_orphans, lock_evicted;
	uint64_t intervals, empty_intervals, encode_failures;
	uint64_t last_export_bytes;
	struct otlp_exporter *x;
	/* --local-dir: the store (main thread) and a copy of its counters */
	struct local_store *ls;
	struct local_store_stats local;
	uint64_t local_failed_said;	/* failures already reported */
	const char *backend;
	struct unwind_service *unwind;	/* thread-safe stats, or NULL */
	struct proc_table *procs;	/* the process model: locked stats */
	struct exec_snaps *snaps;	/* exec snapshots: locked stats */
};

/* The process table's part of /metrics: processes kept, made, dropped. */
static void fill_proc_metrics(FILE *f, struct proc_table *t)
{
	struct proc_table_stats p;

	proc_table_get_stats(t, &p);
	fprintf(f,
		"# HELP ember_proc_table_processes Processes in the process table now, exited ones included.\n"
		"# TYPE ember_proc_table_processes gauge\n"
		"ember_proc_table_processes %u\n"
		"# HELP ember_proc_table_exited Exited processes kept until their last samples are written.\n"
		"# TYPE ember_proc_table_exited gauge\n"
		"ember_proc_table_exited %u\n"
		"# HELP ember_proc_table_bytes Bytes of the process table's entries and their strings.\n"
		"# TYPE ember_proc_table_bytes gauge\n"
		"ember_proc_table_bytes %zu\n"
		"# HELP ember_proc_table_created_total Processes added to the table.\n"
		"# TYPE ember_proc_table_created_total counter\n"
		"ember_proc_table_created_total %" PRIu64 "\n"
		"# HELP ember_proc_table_reused_total Processes added for a pid reused after an exit.\n"
		"# TYPE ember_proc_table_reused_total counter\n"
		"ember_proc_table_reused_total %" PRIu64 "\n"
		"# HELP ember_proc_table_released_total Exited processes freed once their samples were written.\n"
		"# TYPE ember_proc_table_released_total counter\n"
		"ember_proc_table_released_total %" PRIu64 "\n"
		"# HELP ember_proc_table_evicted_total Live processes dropped at the table's cap.\n"
		"# TYPE ember_proc_table_evicted_total counter\n"
		"ember_proc_table_evicted_total %" PRIu64 "\n"
		"# HELP ember_proc_table_refused_total New processes not kept: table full, nothing to evict.\n"
		"# TYPE ember_proc_table_refused_total counter\n"
		"ember_proc_table_refused_total %" PRIu64 "\n",
		p.procs, p.exited, p.bytes, p.created, p.reused, p.released,
		p.evicted, p.refused);
}

/* New processes' maps taken at their exec (proc/exec_snap.h). */
static void fill_exec_snap_metrics(FILE *f, struct exec_snaps *es)
{
	struct exec_snap_stats e;

	exec_snaps_get_stats(es, &e);
	fprintf(f,
		"# HELP ember_exec_snapshots_total Executable mappings of new processes read at their exec, by result: taken, gone (exited first), dropped (queue full), used (the process was gone when symbolized).\n"
		"# TYPE ember_exec_snapshots_total counter\n"
		"ember_exec_snapshots_total{result=\"taken\"} %" PRIu64 "\n"
		"ember_exec_snapshots_total{result=\"gone\"} %" PRIu64 "\n"
		"ember_exec_snapshots_total{result=\"dropped\"} %" PRIu64 "\n"
		"ember_exec_snapshots_total{result=\"used\"} %" PRIu64 "\n",
		e.taken, e.gone, e.dropped, e.used);
}

/* The unwind service's part of /metrics: tables and process bindings. */
static void fill_unwind_metrics(FILE *f, struct unwind_service *us)
{
	struct unwind_service_stats u;

	unwind_service_get_stats(us, &u);
	fprintf(f,
		"# HELP ember_unwind_tables Unwind tables loaded into the backend now.\n"
		"# TYPE ember_unwind_tables gauge\n"
		"ember_unwind_tables %u\n"
		"# HELP ember_unwind_table_bytes Bytes of unwind tables loaded now.\n"
		"# TYPE ember_unwind_table_bytes gauge\n"
		"ember_unwind_table_bytes %" PRIu64 "\n"
		"# TYPE ember_unwind_processes_bound gauge\n"
		"ember_unwind_processes_bound %u\n"
		"# TYPE ember_unwind_binds_total counter\n"
		"ember_unwind_binds_total %" PRIu64 "\n"
		"# TYPE ember_unwind_bind_errors_total counter\n"
		"ember_unwind_bind_errors_total %" PRIu64 "\n"
		"# HELP ember_unwind_tables_failed_total Files without usable CFI, unreadable, or refused.\n"
		"# TYPE ember_unwind_tables_failed_total counter\n"
		"ember_unwind_tables_failed_total %" PRIu64 "\n"
		"# TYPE ember_unwind_requests_dropped_total counter\n"
		"ember_unwind_requests_dropped_total %" PRIu64 "\n"
		"# TYPE ember_unwind_build_seconds_total counter\n"
		"ember_unwind_build_seconds_total %.3f\n"
		"# HELP ember_unwind_bind_latency_seconds_max Longest wait from exec or first miss to a binding.\n"
		"# TYPE ember_unwind_bind_latency_seconds_max gauge\n"
		"ember_unwind_bind_latency_seconds_max %.6f\n"
		"# HELP ember_unwind_rechecks_total Follow-up reads of the maps of recently bound processes.\n"
		"# TYPE ember_unwind_rechecks_total counter\n"
		"ember_unwind_rechecks_total %" PRIu64 "\n"
		"# HELP ember_unwind_recheck_binds_total Follow-up reads that found new code and rebound.\n"
		"# TYPE ember_unwind_recheck_binds_total counter\n"
		"ember_unwind_recheck_binds_total %" PRIu64 "\n"
		"# HELP ember_unwind_tables_built_total Tables compiled from CFI (not from the cache).\n"
		"# TYPE ember_unwind_tables_built_total counter\n"
		"ember_unwind_tables_built_total %" PRIu64 "\n",
		u.tables, u.table_bytes, u.bound, u.binds, u.bind_errors,
		u.tables_failed, u.requests_dropped, u.build_ns / 1e9,
		u.bind_latency_ns_max / 1e9, u.rechecks, u.recheck_binds,
		u.tables_built);
	if (!u.store_on)
		return;
	fprintf(f,
		"# HELP ember_unwind_cache_hits_total Tables loaded from the persistent cache.\n"
		"# TYPE ember_unwind_cache_hits_total counter\n"
		"ember_unwind_cache_hits_total %" PRIu64 "\n"
		"# HELP ember_unwind_cache_misses_total Tables not in the cache (or stale): built.\n"
		"# TYPE ember_unwind_cache_misses_total counter\n"
		"ember_unwind_cache_misses_total %" PRIu64 "\n"
		"# TYPE ember_unwind_cache_stores_total counter\n"
		"ember_unwind_cache_stores_total %" PRIu64 "\n"
		"# HELP ember_unwind_cache_rejected_total Cache entries found corrupt or hostile, removed.\n"
		"# TYPE ember_unwind_cache_rejected_total counter\n"
		"ember_unwind_cache_rejected_total %" PRIu64 "\n"
		"# HELP ember_unwind_cache_write_failures_total Tables not kept: full disk, quota, errors.\n"
		"# TYPE ember_unwind_cache_write_failures_total counter\n"
		"ember_unwind_cache_write_failures_total %" PRIu64 "\n"
		"# TYPE ember_unwind_cache_evicted_total counter\n"
		"ember_unwind_cache_evicted_total %" PRIu64 "\n"
		"# TYPE ember_unwind_cache_bytes gauge\n"
		"ember_unwind_cache_bytes %" PRIu64 "\n",
		u.store.hits, u.store.misses, u.store.stores, u.store.rejected,
		u.store.write_failures, u.store.evicted, u.store.bytes);
}

/* -e lock's part of /metrics: the backend's waits, the agent's joins. */
static void fill_lock_metrics(FILE *f, const struct run_counters *c)
{
	fprintf(f,
		"# HELP ember_lock_waits_total Contended waits the backend saw (futex waits, kernel lock contentions).\n"
		"# TYPE ember_lock_waits_total counter\n"
		"ember_lock_waits_total %" PRIu64 "\n"
		"# HELP ember_lock_overflow_total Waits not followed: the backend's in-flight wait table was full.\n"
		"# TYPE ember_lock_overflow_total counter\n"
		"ember_lock_overflow_total %" PRIu64 "\n"
		"# HELP ember_lock_wakers_total Waker records the backend wrote.\n"
		"# TYPE ember_lock_wakers_total counter\n"
		"ember_lock_wakers_total %" PRIu64 "\n"
		"# HELP ember_lock_waker_joins_total Waker records, by what became of them: joined to their wait, waits whose waker never came (missing), wakers whose wait never came or kept none (orphan), wakers evicted from the full pending table.\n"
		"# TYPE ember_lock_waker_joins_total counter\n"
		"ember_lock_waker_joins_total{result=\"joined\"} %" PRIu64 "\n"
		"ember_lock_waker_joins_total{result=\"missing\"} %" PRIu64 "\n"
		"ember_lock_waker_joins_total{result=\"orphan\"} %" PRIu64 "\n"
		"ember_lock_waker_joins_total{result=\"evicted\"} %" PRIu64 "\n",
		c->lock_waits, c->lock_overflow, c->lock_wakers, c->lock_joined,
		c->lock_missing, c->lock_orphans, c->lock_evicted);
}

static void fill_metrics(FILE *f, void *ctx)
{
	struct run_counters *c = ctx;
	struct otlp_export_stats st = { 0 };
	struct run_counters snap;

	pthread_mutex_lock(&c->lock);
	snap = *c;
	pthread_mutex_unlock(&c->lock);
	if (snap.x)
		otlp_exporter_stats(snap.x, &st);
	fprintf(f,
		"# HELP ember_samples_total Samples aggregated, by event.\n"
		"# TYPE ember_samples_total counter\n"
		"ember_samples_total{event=\"cpu\"} %" PRIu64 "\n"
		"ember_samples_total{event=\"offcpu\"} %" PRIu64 "\n"
		"ember_samples_total{event=\"faults\"} %" PRIu64 "\n"
		"ember_samples_total{event=\"lock\"} %" PRIu64 "\n"
		"# HELP ember_lost_total Records the kernel side dropped (rings full).\n"
		"# TYPE ember_lost_total counter\n"
		"ember_lost_total %" PRIu64 "\n"
		"# TYPE ember_bad_records_total counter\n"
		"ember_bad_records_total %" PRIu64 "\n"
		"# TYPE ember_dropped_stacks_total counter\n"
		"ember_dropped_stacks_total %" PRIu64 "\n"
		"# HELP ember_cut_user_stacks_total User stacks cut short (no unwind rule, a bad frame, or a non-user return address).\n"
		"# TYPE ember_cut_user_stacks_total counter\n"
		"ember_cut_user_stacks_total %" PRIu64 "\n"
		"# HELP ember_unproven_user_stacks_total Of those, stacks no unwinder proved whole whose root is not an outermost function.\n"
		"# TYPE ember_unproven_user_stacks_total counter\n"
		"ember_unproven_user_stacks_total %" PRIu64 "\n"
		"# HELP ember_late_timer_periods_total Sampling periods counted beyond the samples taken: the timer fired late (a VM's CPU held by its host, emulation, interrupts held off).\n"
		"# TYPE ember_late_timer_periods_total counter\n"
		"ember_late_timer_periods_total %" PRIu64 "\n"
		"# TYPE ember_intervals_total counter\n"
		"ember_intervals_total %" PRIu64 "\n"
		"# TYPE ember_empty_intervals_total counter\n"
		"ember_empty_intervals_total %" PRIu64 "\n"
		"# TYPE ember_encode_failures_total counter\n"
		"ember_encode_failures_total %" PRIu64 "\n"
		"# HELP ember_profiles_exported_total OTLP requests the receiver accepted.\n"
		"# TYPE ember_profiles_exported_total counter\n"
		"ember_profiles_exported_total %" PRIu64 "\n"
		"# HELP ember_profiles_failed_total OTLP requests given up (4xx, retries exhausted, shutdown).\n"
		"# TYPE ember_profiles_failed_total counter\n"
		"ember_profiles_failed_total %" PRIu64 "\n"
		"# HELP ember_profiles_dropped_total Queued requests dropped, queue full (queue_size or queue_max_bytes).\n"
		"# TYPE ember_profiles_dropped_total counter\n"
		"ember_profiles_dropped_total %" PRIu64 "\n"
		"# HELP ember_export_dropped_total Queued requests dropped, by the bound reached: slots (queue_size) or bytes (queue_max_bytes).\n"
		"# TYPE ember_export_dropped_total counter\n"
		"ember_export_dropped_total{reason=\"slots\"} %" PRIu64 "\n"
		"ember_export_dropped_total{reason=\"bytes\"} %" PRIu64 "\n"
		"# TYPE ember_export_retries_total counter\n"
		"ember_export_retries_total %" PRIu64 "\n"
		"# TYPE ember_export_rejected_total counter\n"
		"ember_export_rejected_total %" PRIu64 "\n"
		"# TYPE ember_export_bytes_total counter\n"
		"ember_export_bytes_total %" PRIu64 "\n"
		"# TYPE ember_export_queue_depth gauge\n"
		"ember_export_queue_depth %" PRIu64 "\n"
		"# HELP ember_export_queue_bytes Bytes the exporter holds: queued requests, the one being sent and its gzip copy.\n"
		"# TYPE ember_export_queue_bytes gauge\n"
		"ember_export_queue_bytes %" PRIu64 "\n"
		"# TYPE ember_export_last_http_status gauge\n"
		"ember_export_last_http_status %d\n"
		"# TYPE ember_resident_memory_bytes gauge\n"
		"ember_resident_memory_bytes %" PRIu64 "\n"
		"# TYPE ember_cpu_seconds_total counter\n"
		"ember_cpu_seconds_total %.3f\n"
		"# TYPE ember_info gauge\n"
		"ember_info{backend=\"%s\"} 1\n",
		snap.samples[PROF_EV_CPU], snap.samples[PROF_EV_OFFCPU],
		snap.samples[PROF_EV_FAULTS], snap.samples[PROF_EV_LOCK], snap.lost, snap.bad_records, snap.dropped_stacks, snap.cut_user_stacks,
		snap.unproven_user_stacks, snap.late_periods,
		snap.intervals,
		snap.empty_intervals, snap.encode_failures, st.exported, st.failed,
		st.dropped_queue_full, st.dropped_queue_full - st.dropped_queue_bytes,
		st.dropped_queue_bytes, st.retries, st.partial_rejected, st.bytes_sent,
		st.queue_depth + st.in_flight, st.queue_bytes, st.last_status,
		metrics_self_rss_bytes(), metrics_self_cpu_seconds(),
		snap.backend ? snap.backend : "");
	fprintf(f,
		"# HELP ember_stack_copies_total User-stack copies of cut or unbound samples (--stack-copy).\n"
		"# TYPE ember_stack_copies_total counter\n"
		"ember_stack_copies_total %" PRIu64 "\n"
		"# HELP ember_stack_copy_bytes_total Bytes of user stack those copies carried.\n"
		"# TYPE ember_stack_copy_bytes_total counter\n"
		"ember_stack_copy_bytes_total %" PRIu64 "\n"
		"# HELP ember_stack_replays_total Samples with a copy, by result: replayed (the copy's unwinding replaced the stack), kept (left as walked: process gone, copy lost, nothing better), dropped (copies pushed out before their sample), skipped (over the replay's time budget).\n"
		"# TYPE ember_stack_replays_total counter\n"
		"ember_stack_replays_total{result=\"replayed\"} %" PRIu64 "\n"
		"ember_stack_replays_total{result=\"kept\"} %" PRIu64 "\n"
		"ember_stack_replays_total{result=\"dropped\"} %" PRIu64 "\n"
		"ember_stack_replays_total{result=\"skipped\"} %" PRIu64 "\n"
		"# HELP ember_stack_replay_seconds_total Agent time spent unwinding stack copies.\n"
		"# TYPE ember_stack_replay_seconds_total counter\n"
		"ember_stack_replay_seconds_total %.6f\n",
		snap.stack_copies, snap.stack_copy_bytes, snap.stack_replayed,
		snap.stack_replay_kept, snap.stack_copy_dropped,
		snap.stack_replay_skipped, snap.stack_replay_ns / 1e9);
	if (snap.ls)
		fprintf(f,
			"# HELP ember_local_profiles_total Profiles written to --local-dir, by result: kept, removed (oldest, for --local-max or a full disk), failed (not kept: see the log).\n"
			"# TYPE ember_local_profiles_total counter\n"
			"ember_local_profiles_total{result=\"kept\"} %" PRIu64 "\n"
			"ember_local_profiles_total{result=\"removed\"} %" PRIu64 "\n"
			"ember_local_profiles_total{result=\"failed\"} %" PRIu64 "\n"
			"# TYPE ember_local_bytes gauge\n"
			"ember_local_bytes %" PRIu64 "\n",
			snap.local.written, snap.local.removed, snap.local.failed,
			snap.local.bytes);
	fill_lock_metrics(f, &snap);
	if (snap.procs)
		fill_proc_metrics(f, snap.procs);
	if (snap.snaps)
		fill_exec_snap_metrics(f, snap.snaps);
	if (snap.unwind)
		fill_unwind_metrics(f, snap.unwind);
}

static void export_config(const struct ember_opts *rc, struct otlp_export_config *ec)
{
	memset(ec, 0, sizeof(*ec));
	ec->endpoint = rc->endpoint;
	ec->headers = (const char *const *)rc->headers;
	ec->timeout_ms = rc->timeout_ms;
	ec->gzip = rc->gzip;
	ec->ca_file = rc->ca_file;
	ec->client_cert = rc->client_cert;
	ec->client_key = rc->client_key;
	ec->queue_max = rc->queue_max;
	ec->queue_max_bytes = rc->queue_max_bytes;
	ec->retry_initial_ms = rc->retry_initial_ms;
	ec->retry_max_ms = rc->retry_max_ms;
	ec->retry_max_elapsed_ms = rc->retry_max_elapsed_ms;
	ec->retry_after_max_ms = rc->retry_after_max_ms;
	ec->quiet = rc->quiet;
}

/* Snapshot + reset the aggregation and queue its OTLP encoding. */
/*
 * --local-dir: a profile that cannot be kept is said on standard error
 * (the first of a run of failures, then every 60th, and the recovery),
 * counted in /metrics and in the stop line. It still goes to the exporter.
 */
static void keep_local(struct run_counters *c, const uint8_t *buf, size_t len)
{
	struct local_store_stats st;
	char err[PATH_MAX + 128];
	int r = local_store_put(c->ls, buf, len, err, sizeof(err));

	local_store_stats(c->ls, &st);
	if (r) {
		uint64_t run = st.failed - c->local_failed_said;

		if (run == 1 || run % 60 == 0)
			fprintf(stderr, "ember run: %s; %" PRIu64 " profile%s not kept "
				"locally so far (still exported)\n", err, st.failed,
				st.failed == 1 ? "" : "s");
	} else if (st.failed > c->local_failed_said) {
		fprintf(stderr, "ember run: keeping profiles in the local directory again "
			"(%" PRIu64 " could not be kept)\n", st.failed);
		c->local_failed_said = st.failed;
	}
	pthread_mutex_lock(&c->lock);
	c->local = st;
	pthread_mutex_unlock(&c->lock);
}

static void export_interval(struct session *s, const struct ember_opts *rc,
			    struct run_counters *c, struct otlp_exporter *x)
{
	struct otlp_encode_options eo = {
		.service_name = rc->service_name,
		.attrs = rc->attrs, .nr_attrs = rc->nr_attrs,
	};
	struct profile *p = session_snapshot(s);
	struct ember_source_stats st = { 0 };
	uint8_t *buf = NULL;
	size_t len = 0;
	int r;

	session_reset(s);
	/* here, not in the metrics thread: a backend's stats are not
	 * thread-safe against its poll */
	if (s->src && s->ops->stats)
		s->ops->stats(s->src, &st);
	pthread_mutex_lock(&c->lock);
	c->intervals++;
	c->lock_waits = st.lock_waits;
	c->lock_overflow = st.lock_overflow;
	c->lock_wakers = st.lock_wakers;
	if (p) {
		for (int ev = 0; ev < PROF_EV__COUNT; ev++)
			c->samples[ev] += p->meta.samples[ev];
		c->lost += p->meta.lost;
		c->bad_records += p->meta.bad_records;
		c->dropped_stacks += p->meta.dropped_stacks;
		c->cut_user_stacks += p->meta.cut_user_stacks;
		c->unproven_user_stacks += p->meta.unproven_user_stacks;
		c->late_periods += p->meta.late_periods;
		c->stack_copies += p->meta.stack_copies;
		c->stack_copy_bytes += p->meta.stack_copy_bytes;
		c->stack_replayed += p->meta.stack_replayed;
		c->stack_replay_kept += p->meta.stack_replay_kept;
		c->stack_copy_dropped += p->meta.stack_copy_dropped;
		c->stack_replay_skipped += p->meta.stack_replay_skipped;
		c->stack_replay_ns += p->meta.stack_replay_ns;
		c->lock_joined += p->meta.lock_wakers_joined;
		c->lock_missing += p->meta.lock_waker_missing;
		c->lock_orphans += p->meta.lock_waker_orphans;
		c->lock_evicted += p->meta.lock_waker_evicted;
	}
	pthread_mutex_unlock(&c->lock);
	if (!p) {
		fprintf(stderr, "ember run: out of memory building the profile; "
			"interval skipped\n");
		return;
	}
	if (!p->nr_samples) {
		/* Nothing ran: sending an empty request helps nobody. */
		pthread_mutex_lock(&c->lock);
		c->empty_intervals++;
		pthread_mutex_unlock(&c->lock);
		profile_free(p);
		return;
	}
	r = otlp_encode_request(p, &eo, &buf, &len);
	profile_free(p);
	if (r) {
		pthread_mutex_lock(&c->lock);
		c->encode_failures++;
		pthread_mutex_unlock(&c->lock);
		fprintf(stderr, "ember run: encoding the profile failed: %s\n",
			strerror(-r));
		return;
	}
	pthread_mutex_lock(&c->lock);
	c->last_export_bytes = len;
	pthread_mutex_unlock(&c->lock);
	if (c->ls)
		keep_local(c, buf, len);
	otlp_exporter_enqueue(x, buf, len);	/* takes buf; never blocks */
}

/* SIGHUP: reload; settings baked into the running session need a restart. */
static void reload(struct ember_opts *rc, int argc, char **argv,
		   struct otlp_exporter *x)
{
	struct otlp_export_config ec;
	struct ember_opts nc;
	char err[512];
	int r = run_config_load(&nc, argc, argv, err, sizeof(err));

	if (r) {
		fprintf(stderr, "ember run: reload failed, keeping the current "
			"configuration: %s\n", r > 0 ? "--help" : err);
		run_config_free(&nc);
		return;
	}
	export_config(&nc, &ec);
	if (otlp_exporter_reconfigure(x, &ec, err, sizeof(err))) {
		fprintf(stderr, "ember run: reload failed, keeping the current "
			"configuration: %s\n", err);
		run_config_free(&nc);
		return;
	}
	if (nc.freq_hz != rc->freq_hz || nc.events != rc->events ||
	    nc.fault_period != rc->fault_period ||
	    nc.offcpu_min_ns != rc->offcpu_min_ns ||
	    nc.lock_min_ns != rc->lock_min_ns || nc.lock_waker != rc->lock_waker ||
	    nc.include_idle != rc->include_idle || nc.no_cfi != rc->no_cfi ||
	    nc.max_stacks != rc->max_stacks ||
	    strcmp(nc.backend, rc->backend) || nc.nr_pids != rc->nr_pids ||
	    nc.table_cache_max_mb != rc->table_cache_max_mb ||
	    nc.stack_copy_bytes != rc->stack_copy_bytes ||
	    nc.kernel_mem_mb != rc->kernel_mem_mb ||
	    nc.local_max_bytes != rc->local_max_bytes ||
	    strcmp(nc.local_dir ? nc.local_dir : "", rc->local_dir ? rc->local_dir : "") ||
	    strcmp(nc.table_cache ? nc.table_cache : "",
		   rc->table_cache ? rc->table_cache : "") ||
	    (nc.metrics_addr ? !rc->metrics_addr || strcmp(nc.metrics_addr, rc->metrics_addr)
			     : rc->metrics_addr != NULL))
		fprintf(stderr, "ember run: reloaded; freq, event, fault-period, offcpu-min, "
			"lock-min, waker, idle, no-cfi, max-stacks, backend, pid, "
			"table-cache, kernel-mem, local-dir, local-max and metrics-addr changes "
			"take effect on restart\n");
	else if (!nc.quiet)
		fprintf(stderr, "ember run: configuration reloaded (endpoint %s, "
			"interval %us)\n", nc.endpoint, nc.interval_s);
	/* Keep the session-bound settings as they run. */
	nc.freq_hz = rc->freq_hz;
	nc.events = rc->events;
	nc.fault_period = rc->fault_period;
	nc.offcpu_min_ns = rc->offcpu_min_ns;
	nc.lock_min_ns = rc->lock_min_ns;
	nc.lock_waker = rc->lock_waker;
	nc.include_idle = rc->include_idle;
	nc.no_cfi = rc->no_cfi;
	nc.max_stacks = rc->max_stacks;
	run_config_free(rc);
	*rc = nc;
}

int cmd_run(int argc, char **argv)
{
	struct run_counters counters = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct session_options so = { 0 };
	struct otlp_export_config ec;
	struct otlp_export_stats fin = { 0 };
	struct metrics_server *ms = NULL;
	struct otlp_exporter *x;
	struct ember_opts rc;
	struct session s;
	uint64_t next;
	char err[1024];
	int r;

	r = run_config_load(&rc, argc, argv, err, sizeof(err));
	if (r) {
		if (r > 0) {
			run_config_free(&rc);
			return 0;	/* --help */
		}
		fprintf(stderr, "ember run: %s\n", err);
		run_config_free(&rc);
		return 2;
	}
	if (otlp_global_init()) {
		fprintf(stderr, "ember run: libcurl initialization failed\n");
		run_config_free(&rc);
		return 1;
	}
	export_config(&rc, &ec);
	x = otlp_exporter_new(&ec, err, sizeof(err));
	if (!x) {
		fprintf(stderr, "ember run: %s\n", err);
		run_config_free(&rc);
		return 2;
	}
	if (rc.local_dir && *rc.local_dir) {
		counters.ls = local_store_open(rc.local_dir, rc.local_max_bytes, err,
					       sizeof(err));
		if (!counters.ls) {
			fprintf(stderr, "ember run: %s\n", err);
			otlp_exporter_shutdown(x, 0, NULL);
			run_config_free(&rc);
			return 2;
		}
		local_store_stats(counters.ls, &counters.local);
	}

	/* out of memory for the default debug root: --debug-dir's alone */
	if (session_opts_from(&so, &rc))
		so.sym.debug_dirs = rc.debug_dirs;
	so.quiet = rc.quiet;
	cli_signals_install(on_stop, on_hup);
	/* a closed socket (collector, /metrics client) is an error, not an exit */
	signal(SIGPIPE, SIG_IGN);
	r = session_open(&s, &so, err, sizeof(err));
	if (!r) {
		/* every profile has kernel frames: read kallsyms once, up front */
		sym_preload_kernel(s.sym);
		/* the rate services run the sampler with: its default */
		s.alloc_rate = EMBER_ALLOC_DEFAULT_RATE;
		r = session_start(&s, err, sizeof(err));
		if (!r && (rc.events & EMBER_EV_ALLOC)) {
			char lib[PATH_MAX];

			r = alloc_lib_find(NULL, lib, sizeof(lib), err,
					   sizeof(err));
			if (!r)
				r = session_alloc_attach(&s, lib, err,
							 sizeof(err));
		}
		if (r)
			session_close(&s);
	}
	if (r) {
		fprintf(stderr, "ember run: %s\n", err);
		otlp_exporter_shutdown(x, 0, NULL);
		local_store_close(counters.ls);
		run_config_free(&rc);
		return 1;
	}
	counters.x = x;
	counters.backend = s.ops->name;
	counters.unwind = s.unwind;
	counters.procs = s.procs;
	counters.snaps = s.snaps;
	if (rc.metrics_addr) {
		ms = metrics_start(rc.metrics_addr, fill_metrics, &counters, err,
				   sizeof(err));
		if (!ms)
			fprintf(stderr, "ember run: metrics disabled: %s\n", err);
	}
	if (!rc.quiet)
		fprintf(stderr, "ember run: %s backend, %s%u Hz%s%s%s, exporting every %u s "
			"to %s\n", s.ops->name,
			rc.events & EMBER_EV_ONCPU ? "" : "no on-CPU samples at ",
			rc.freq_hz,
			rc.events & EMBER_EV_OFFCPU ? " + off-CPU" : "",
			rc.events & EMBER_EV_FAULTS ? " + page faults" : "",
			rc.events & EMBER_EV_ALLOC ? " + allocations" : "",
			rc.interval_s, rc.endpoint);
	if (!rc.quiet) {
		struct kmem_budget kb;
		char d[128];

		kmem_budget_get(rc.kernel_mem_mb, &kb);
		kmem_budget_describe(&kb, d, sizeof(d));
		fprintf(stderr, "ember run: kernel memory budget %s\n", d);
		if (counters.ls)
			fprintf(stderr, "ember run: keeping profiles in %s (at most %" PRIu64
				" bytes; %" PRIu64 " files there from before)\n", rc.local_dir,
				rc.local_max_bytes, counters.local.files);
	}
	if (ms && !rc.quiet)
		fprintf(stderr, "ember run: metrics at GET /metrics on %s (port %d)\n",
			rc.metrics_addr, metrics_port(ms));

	next = mono_ms() + (uint64_t)rc.interval_s * 1000;
	while (!stop_requested) {
		uint64_t now = mono_ms();
		int wait = next > now ? (int)(next - now) : 0;

		r = session_poll(&s, wait < POLL_MS ? wait : POLL_MS);
		if (r < 0 && r != -EINTR) {
			fprintf(stderr, "ember run: reading the rings failed: %s\n",
				strerror(-r));
			break;
		}
		if (reload_requested) {
			reload_requested = 0;
			reload(&rc, argc, argv, x);
		}
		now = mono_ms();
		if (now >= next) {
			export_interval(&s, &rc, &counters, x);
			next += (uint64_t)rc.interval_s * 1000;
			if (next <= now)	/* fell behind: do not burst */
				next = now + (uint64_t)rc.interval_s * 1000;
		}
	}

	/* Stop sampling, export the last partial interval, flush. */
	if (s.ops->stop)
		s.ops->stop(s.src);
	session_drain(&s);
	export_interval(&s, &rc, &counters, x);
	/* The metrics thread reads the exporter: stop it first. */
	metrics_stop(ms);
	otlp_exporter_shutdown(x, rc.shutdown_timeout_s * 1000, &fin);
	if (!rc.quiet)
		fprintf(stderr, "ember run: stopped: %" PRIu64 " intervals, profiles "
			"exported %" PRIu64 ", failed %" PRIu64 ", dropped %" PRIu64
			", retries %" PRIu64 ", empty intervals %" PRIu64
			", records lost %" PRIu64 "\n",
			counters.intervals, fin.exported, fin.failed,
			fin.dropped_queue_full, fin.retries, counters.empty_intervals,
			counters.lost);
	if (counters.ls && !rc.quiet)
		fprintf(stderr, "ember run: local profiles in %s: %" PRIu64 " kept, %" PRIu64
			" removed (oldest first: --local-max, full disk), %" PRIu64 " could not be kept; %" PRIu64
			" files, %" PRIu64 " bytes there now\n", rc.local_dir,
			counters.local.written, counters.local.removed,
			counters.local.failed, counters.local.files, counters.local.bytes);
	local_store_close(counters.ls);
	session_close(&s);
	run_config_free(&rc);
	return 0;
}
