// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember record: profile the whole system, chosen processes/cgroup, or a
 * command started for the purpose, then write one profile (folded, svg,
 * pprof or otlp). Ctrl-C ends a recording and still writes the output.
 *
 * A command is put in a cgroup of its own before it execs, so all its
 * threads and children are profiled through the backends' cgroup filter;
 * where no cgroup can be created, its pid is filtered and its descendants
 * are followed by scanning /proc (session_run).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli/commands.h"
#include "alloc/alloc_lib.h"
#include "cli/record_alloc.h"
#include "cli/record_child.h"
#include "cli/record_startup.h"
#include "cli/signals.h"
#include "cli/record_opts.h"
#include "cli/session_opts.h"
#include "output/output.h"
#include "session/session.h"

/* Writers other components own; a build without them says so. */
#pragma weak output_svg
#pragma weak output_pprof
#pragma weak output_otlp

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcasecmp(s + n - m, suffix);
}

enum out_format format_from_name(const char *path)
{
	if (!path)
		return OUT_AUTO;
	if (ends_with(path, ".folded") || ends_with(path, ".txt"))
		return OUT_FOLDED;
	if (ends_with(path, ".svg"))
		return OUT_SVG;
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof"))
		return OUT_PPROF;
	if (ends_with(path, ".otlp"))
		return OUT_OTLP;
	return OUT_AUTO;
}

const char *format_name(enum out_format f)
{
	static const char *const names[] = {
		[OUT_AUTO] = "auto", [OUT_FOLDED] = "folded", [OUT_SVG] = "svg",
		[OUT_PPROF] = "pprof", [OUT_OTLP] = "otlp",
	};

	return f <= OUT_OTLP ? names[f] : "?";
}

#define FAIL(...) do { snprintf(err, err_len, __VA_ARGS__); return -1; } while (0)

int record_parse_args(int argc, char **argv, struct ember_opts *o,
		      char *err, size_t err_len)
{
	const char *def;

	opts_init(o, CMD_RECORD);
	if (opts_parse_argv(o, CMD_RECORD, argc, argv, OPTS_PASS_ALL, NULL,
			    err, err_len))
		return -1;
	if (o->help)
		return 0;
	if (o->command && (o->nr_pids || o->cgroup_path || o->all))
		FAIL("a COMMAND cannot be combined with -a, -p or --cgroup");
	if (o->all && (o->nr_pids || o->cgroup_path))
		FAIL("-a (whole system) cannot be combined with -p or --cgroup");
	if (!o->command && !o->nr_pids && !o->cgroup_path)
		o->all = true;
	def = o->format == OUT_AUTO || o->format == OUT_SVG ? "ember.svg" :
	      o->format == OUT_FOLDED ? "ember.folded" :
	      o->format == OUT_PPROF ? "ember.pb.gz" : "ember.otlp";
	if (!o->output && !(o->output = strdup(def)))
		FAIL("out of memory");
	if (o->format == OUT_AUTO) {
		if (!strcmp(o->output, "-"))
			o->format = OUT_FOLDED;
		else
			o->format = format_from_name(o->output);
		if (o->format == OUT_AUTO)
			FAIL("cannot tell the output format from '%s': use --format or an extension (.folded, .svg, .pb.gz, .otlp)",
			     o->output);
	}
	return 0;
}

void record_opts_free(struct ember_opts *o)
{
	opts_free(o);
}

/* ---- signals ----------------------------------------------------------- */

static volatile sig_atomic_t stop_requested;
static volatile pid_t forward_to;

static void on_signal(int sig)
{
	if (forward_to > 0) {
		/* the command decides when the recording ends */
		if (sig != SIGINT)
			kill(forward_to, sig);
		return;
	}
	stop_requested = 1;
}

/* ---- output ------------------------------------------------------------ */

typedef int (*writer_fn)(const struct profile *, FILE *);

static writer_fn writer_for(enum out_format fmt)
{
	switch (fmt) {
	case OUT_FOLDED: return output_folded;
	case OUT_SVG: return output_svg;
	case OUT_PPROF: return output_pprof;
	case OUT_OTLP: return output_otlp;
	default: return NULL;
	}
}

/*
 * Opened before recording: a bad path fails now, not after the recording.
 * *created says we made the file, so only then may a failed recording
 * remove it: -o /dev/null or a FIFO is somebody else's, and unlinking
 * /dev/null once left every later ">/dev/null" writing a regular file.
 */
static FILE *open_output(const struct ember_opts *o, bool *created)
{
	FILE *f;
	int fd;

	*created = false;
	if (!writer_for(o->format)) {
		fprintf(stderr, "ember: %s output is not available in this build: use -o FILE.folded\n",
			format_name(o->format));
		return NULL;
	}
	if (!strcmp(o->output, "-"))
		return stdout;
	fd = open(o->output, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd >= 0)
		*created = true;
	else if (errno == EEXIST)
		fd = open(o->output, O_WRONLY | O_TRUNC | O_CLOEXEC);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		fprintf(stderr, "ember: cannot write %s: %s\n", o->output, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	return f;
}

/* Nothing was recorded: leave no empty file behind, if it is ours. */
static void discard_output(FILE *f, const char *path, bool created)
{
	struct stat opened, named;

	if (created && !fstat(fileno(f), &opened) && S_ISREG(opened.st_mode) &&
	    !lstat(path, &named) && named.st_dev == opened.st_dev &&
	    named.st_ino == opened.st_ino)
		unlink(path);
	fclose(f);
}

/*
 * Without a command, say when sampling has begun: loading the BPF
 * programs can take seconds on a slow or emulated machine, and what runs
 * before this line is not in the profile. With a command there is no
 * window: the command starts once ember is ready.
 */
static void say_recording(const struct ember_opts *o)
{
	char what[64];

	if (o->nr_pids)
		snprintf(what, sizeof(what), "%zu process%s", o->nr_pids,
			 o->nr_pids > 1 ? "es" : "");
	else if (o->cgroup_path)
		snprintf(what, sizeof(what), "a cgroup");
	else
		snprintf(what, sizeof(what), "every process");
	if (o->duration_ms)
		fprintf(stderr, "ember: recording %s for %.1f s (Ctrl-C ends it sooner)\n",
			what, o->duration_ms / 1000.0);
	else
		fprintf(stderr, "ember: recording %s until Ctrl-C\n", what);
}

static int write_profile(const struct profile *p, enum out_format fmt,
			 const char *path, FILE *f)
{
	writer_fn writer = writer_for(fmt);
	bool to_stdout = f == stdout;
	int r;

	r = writer(p, f);
	if (!to_stdout && fclose(f) && !r)
		r = -EIO;
	else if (to_stdout && fflush(f) && !r)
		r = -errno;
	if (r)
		fprintf(stderr, "ember: writing %s failed: %s\n", path, strerror(-r));
	return r;
}

/*
 * Processes the table could not keep lose their comm, exe and container
 * in the profile: say so, the one case an operator must hear about.
 */
static void report_proc_table(struct proc_table *t)
{
	struct proc_table_stats st;

	if (!t)
		return;
	proc_table_get_stats(t, &st);
	if (st.evicted || st.refused)
		fprintf(stderr, "ember: process table full: %" PRIu64 " new "
			"processes refused (their samples have no comm, exe or "
			"container), %" PRIu64 " live ones evicted (read again "
			"when seen again)\n", st.refused, st.evicted);
}

/* -e lock: contentions, the time waited, and how many wakers were joined. */
static void print_lock_summary(const struct profile *p,
			       const struct ember_opts *o, const char *sep)
{
	const struct prof_meta *m = &p->meta;
	uint64_t ns = 0;

	for (size_t i = 0; i < p->nr_samples; i++)
		if (p->samples[i].event == PROF_EV_LOCK)
			ns += p->samples[i].weight_ns;
	fprintf(stderr, "%s%llu lock contentions (%.3f s waited)", sep,
		(unsigned long long)m->samples[PROF_EV_LOCK], ns / 1e9);
	if (o->lock_waker)
		fprintf(stderr, ", wakers: %llu joined, %llu missing",
			(unsigned long long)m->lock_wakers_joined,
			(unsigned long long)m->lock_waker_missing);
}

static void print_summary(const struct profile *p, const struct ember_opts *o,
			  int written)
{
	const struct prof_meta *m = &p->meta;

	const char *sep = "";

	fputs("ember: ", stderr);
	if (o->events & EMBER_EV_ONCPU ||
	    !(o->events & (EMBER_EV_OFFCPU | EMBER_EV_FAULTS | EMBER_EV_ALLOC |
			   EMBER_EV_LOCK))) {
		fprintf(stderr, "%llu samples", (unsigned long long)m->samples[PROF_EV_CPU]);
		sep = ", ";
	}
	if (o->events & EMBER_EV_OFFCPU) {
		fprintf(stderr, "%s%llu off-CPU intervals", sep,
			(unsigned long long)m->samples[PROF_EV_OFFCPU]);
		sep = ", ";
	}
	if (o->events & EMBER_EV_FAULTS) {
		uint64_t bytes = 0;

		for (size_t i = 0; i < p->nr_samples; i++)
			if (p->samples[i].event == PROF_EV_FAULTS)
				bytes += p->samples[i].weight_ns;
		fprintf(stderr, "%s%llu page-fault samples (%.1f MiB first touched)", sep,
			(unsigned long long)m->samples[PROF_EV_FAULTS], bytes / 1048576.0);
		sep = ", ";
	}
	if (o->events & EMBER_EV_ALLOC) {
		uint64_t alloc = 0, inuse = 0;

		for (size_t i = 0; i < p->nr_samples; i++) {
			if (p->samples[i].event == PROF_EV_ALLOC)
				alloc += p->samples[i].weight_ns;
			else if (p->samples[i].event == PROF_EV_INUSE)
				inuse += p->samples[i].weight_ns;
		}
		fprintf(stderr, "%s%llu allocation samples (%.1f MiB allocated, %.1f MiB still in use)",
			sep, (unsigned long long)m->samples[PROF_EV_ALLOC],
			alloc / 1048576.0, inuse / 1048576.0);
		sep = ", ";
	}
	if (o->events & EMBER_EV_LOCK)
		print_lock_summary(p, o, sep);
	fprintf(stderr, ", %zu processes, %llu lost", p->nr_processes,
		(unsigned long long)m->lost);
	if (m->bad_records)
		fprintf(stderr, ", %llu bad records skipped",
			(unsigned long long)m->bad_records);
	if (m->dropped_stacks)
		fprintf(stderr, ", %llu samples dropped (stack table full: raise --max-stacks)",
			(unsigned long long)m->dropped_stacks);
	if (!written)
		fprintf(stderr, "; wrote %s (%s)\n",
			strcmp(o->output, "-") ? o->output : "stdout",
			format_name(o->format));
	else
		fprintf(stderr, "; no output written\n");
	/* worth a line from 1%: a quiet machine's timer is late now and then */
	if (m->late_periods && m->late_periods * 100 >= m->samples[PROF_EV_CPU])
		fprintf(stderr, "ember: the sampling timer fired late %llu times "
			"(a VM whose host held its CPU, emulation, or interrupts "
			"held off): those samples %s %llu more periods that "
			"passed%s\n",
			(unsigned long long)m->late_samples,
			m->late_applied ? "count for the" : "stand for",
			(unsigned long long)m->late_periods,
			m->late_applied ? ", so shares follow the time that ran" :
			", which sample counts do not show (this guest keeps "
			"stolen time out of CPU time: /proc/stat steal)");
	if (m->cut_user_stacks)
		fprintf(stderr, "ember: %llu of %llu samples have a user stack cut "
			"short (shown under " PROF_CUT_FRAME "): code without "
			"unwind tables or frame pointers, or %llu that no "
			"unwinder proved whole and that end short of _start "
			"or a thread start\n",
			(unsigned long long)m->cut_user_stacks,
			(unsigned long long)(m->samples[PROF_EV_CPU] +
					     m->samples[PROF_EV_OFFCPU] +
					     m->samples[PROF_EV_FAULTS] +
					     m->samples[PROF_EV_ALLOC] +
					     m->samples[PROF_EV_LOCK]),
			(unsigned long long)m->unproven_user_stacks);
	if (m->stack_copies)
		fprintf(stderr, "ember: stack copy: %llu cut or unbound samples "
			"copied (%.1f KiB, %.0f B each), %llu replayed whole or "
			"longer (%llu with their Python frames put back), %llu left as walked, %llu copies dropped, %llu "
			"skipped (time budget, or a process whose copies gave nothing); %.1f ms CPU replaying "
			"(%llu walked with ember's tables, %llu with libdwfl; %llu tables built for it)\n",
			(unsigned long long)m->stack_copies,
			m->stack_copy_bytes / 1024.0,
			(double)m->stack_copy_bytes / (double)m->stack_copies,
			(unsigned long long)m->stack_replayed,
			(unsigned long long)m->stack_replay_python,
			(unsigned long long)m->stack_replay_kept,
			(unsigned long long)m->stack_copy_dropped,
			(unsigned long long)m->stack_replay_skipped,
			m->stack_replay_ns / 1e6,
			(unsigned long long)m->stack_replay_tables,
			(unsigned long long)m->stack_replay_libdwfl,
			(unsigned long long)m->stack_replay_built);
	if (m->inuse_untracked)
		fprintf(stderr, "ember: %llu sampled blocks were not followed to their free (table full): in use is understated\n",
			(unsigned long long)m->inuse_untracked);
	if (m->lost)
		fprintf(stderr, "ember: the profile misses %llu lost records: lower -F or raise ring sizes\n",
			(unsigned long long)m->lost);
}

/* ---- the command ------------------------------------------------------- */

static int exit_status_of(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return 1;
}

/* One binding while the command is held: slow machines need seconds. */
#define STARTUP_BIND_TIMEOUT_MS	10000

static void startup_bind(void *ctx, pid_t pid)
{
	session_unwind_bind_now(ctx, (uint32_t)pid, STARTUP_BIND_TIMEOUT_MS);
}

/*
 * Let the command go, its tables bound before it runs where the session
 * binds tables (record_startup.h). 0, or the exec's errno.
 */
static int release_bound(struct session *s, struct child *ch, bool verbose,
			 int *wstatus)
{
	bool held = s->unwind && !startup_attach(ch->pid);
	struct startup_stats st;
	int r = child_release(ch);

	if (r || !held)
		return r;
	r = startup_follow(ch->pid, startup_bind, s, wstatus, &st);
	if (r < 0)
		fprintf(stderr, "ember record: following %d's start failed (%s): "
			"its first samples may be cut\n", (int)ch->pid,
			strerror(-r));
	else if (verbose)
		fprintf(stderr, "ember record: %d held %.1f ms at start: %u "
			"bindings, %u system calls\n", (int)ch->pid,
			st.held_ns / 1e6, st.binds, st.syscalls);
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct session_options so = { 0 };
	struct ember_opts o;
	struct child_cgroup cg = { .id = 0 };
	struct child ch = { .pid = -1, .go_fd = -1, .err_fd = -1 };
	struct child_env env = { 0 };
	char alloc_lib[PATH_MAX], cgroup_dir[PATH_MAX] = "";
	struct alloc_cgroup *ac = NULL;
	struct session s;
	struct profile *p;
	char err[1024];
	FILE *out = NULL;
	bool out_created = false;
	uint32_t child_pid;
	int wstatus = 0, rc = 0, r;

	if (record_parse_args(argc, argv, &o, err, sizeof(err))) {
		fprintf(stderr, "ember record: %s\n", err);
		return 2;
	}
	if (o.help) {
		opts_usage(CMD_RECORD, stdout);
		record_opts_free(&o);
		return 0;
	}

	so.src.alloc_rate = o.alloc_rate ? o.alloc_rate : EMBER_ALLOC_DEFAULT_RATE;
	so.pb.alloc_rate = so.src.alloc_rate;
	so.src.alloc_no_inuse = o.alloc_no_inuse;
	if (session_opts_from(&so, &o)) {
		fprintf(stderr, "ember record: out of memory\n");
		record_opts_free(&o);
		return 1;
	}
	so.verbose_unwind = o.verbose_cfi;
	so.check_unwind = o.check_unwind;
	so.src.stack_copy = o.check_unwind;
	if (o.cgroup_path &&
	    cgroup_id_of(o.cgroup_path, &so.src.cgroup_id, cgroup_dir,
			 sizeof(cgroup_dir), err, sizeof(err))) {
		fprintf(stderr, "ember record: %s\n", err);
		record_opts_free(&o);
		return 2;
	}

	if ((o.events & EMBER_EV_ALLOC) &&
	    alloc_lib_find(o.alloc_lib, alloc_lib, sizeof(alloc_lib), err,
			   sizeof(err))) {
		fprintf(stderr, "ember record: -e alloc: %s\n", err);
		record_opts_free(&o);
		return 2;
	}
	if (o.events & EMBER_EV_ALLOC) {
		env.preload = alloc_lib;
		env.alloc_rate = o.alloc_rate;
	}
	out = open_output(&o, &out_created);
	if (!out) {
		record_opts_free(&o);
		return 1;
	}
	for (size_t i = 0; i < o.nr_pids; i++)
		if (kill(o.pids[i], 0) && errno == ESRCH) {
			fprintf(stderr, "ember record: -p %u: no such process\n", o.pids[i]);
			rc = 2;
			goto out;
		}
	cli_signals_install(on_signal, on_signal);
	if (o.command) {
		bool in_cgroup = false;

		if (!child_cgroup_create(&cg))
			in_cgroup = true;
		r = child_spawn(o.command, &env, &ch);
		if (r) {
			fprintf(stderr, "ember record: cannot start %s: %s\n",
				o.command[0], strerror(-r));
			rc = 127;
			goto out;
		}
		if (in_cgroup && child_cgroup_enter(&cg, ch.pid))
			in_cgroup = false;
		if (in_cgroup) {
			so.src.cgroup_id = cg.id;
		} else {
			child_pid = ch.pid;
			so.src.pids = &child_pid;
			so.src.nr_pids = 1;
		}
	}

	r = session_open(&s, &so, err, sizeof(err));
	if (!r) {
		s.track_children = o.command && !so.src.cgroup_id;
		/* like perf: -p ends when the processes are gone */
		s.watch_pids = o.pids;
		s.nr_watch_pids = o.nr_pids;
		s.alloc_rate = o.alloc_rate ? o.alloc_rate :
					      EMBER_ALLOC_DEFAULT_RATE;
		s.alloc_no_inuse = o.alloc_no_inuse;
		r = session_start(&s, err, sizeof(err));
		if (!r && (o.events & EMBER_EV_ALLOC))
			r = record_alloc_start(&s, &o, alloc_lib, err,
					       sizeof(err));
		if (!r && (o.events & EMBER_EV_ALLOC) && o.cgroup_path)
			r = alloc_cgroup_start(&s, cgroup_dir, alloc_lib, &ac,
					       err, sizeof(err));
		if (r)
			session_close(&s);
	}
	if (r) {
		fprintf(stderr, "ember: %s\n", err);
		if (o.command)
			child_abort(&ch);
		rc = 1;
		goto out;
	}

	if (o.command) {
		forward_to = ch.pid;
		r = release_bound(&s, &ch, o.verbose_cfi, &wstatus);
		if (r) {
			fprintf(stderr, "ember record: cannot run %s: %s\n",
				o.command[0], strerror(r));
			child_abort(&ch);
			session_close(&s);
			rc = r == ENOENT ? 127 : 126;
			goto out;
		}
	} else {
		say_recording(&o);
	}

	session_run(&s, o.duration_ms, &stop_requested, o.command ? ch.pid : 0,
		    &wstatus);
	forward_to = 0;
	session_stop_source(&s);
	session_drain(&s);
	p = session_snapshot(&s);
	if (p) {
		p->meta.offcpu_state_frames = o.offcpu_state;
		p->meta.group_by = o.group_by;
	}
	if (!p) {
		fprintf(stderr, "ember: out of memory building the profile\n");
		rc = 1;
	} else {
		r = write_profile(p, o.format, o.output, out);
		out = NULL;
		print_summary(p, &o, r);
		if (r)
			rc = 1;
		profile_free(p);
	}
	report_proc_table(s.procs);
	if (s.check)
		unwind_check_report(s.check, stderr);
	if (o.verbose_cfi && s.unwind) {
		struct unwind_service_stats u;

		unwind_service_get_stats(s.unwind, &u);
		fprintf(stderr, "ember: unwind tables: %" PRIu64 " loaded (%" PRIu64
			" KiB loaded now), %" PRIu64 " built from CFI in %.1f ms, %"
			PRIu64 " files without usable CFI; %"
			PRIu64 " bindings, %.1f ms mean and %.1f ms max from exec "
			"or first miss to binding; %" PRIu64 " follow-up reads of "
			"maps, %" PRIu64 " found new code\n", u.tables_loaded,
			u.table_bytes / 1024, u.tables_built, u.build_ns / 1e6,
			u.tables_failed, u.binds,
			u.binds ? u.bind_latency_ns_sum / 1e6 / u.binds : 0,
			u.bind_latency_ns_max / 1e6, u.rechecks, u.recheck_binds);
		if (u.store_on)
			fprintf(stderr, "ember: unwind-table cache: %" PRIu64
				" hits in %.1f ms, %" PRIu64 " misses, %" PRIu64
				" stored, %" PRIu64 " rejected (corrupt), %" PRIu64
				" write failures, %" PRIu64 " evicted; %u entries, %"
				PRIu64 " KiB\n", u.store.hits, u.store.load_ns / 1e6,
				u.store.misses, u.store.stores, u.store.rejected,
				u.store.write_failures, u.store.evicted,
				u.store.entries, u.store.bytes / 1024);
	}
	session_close(&s);
	/* the command's exit status is ours, as with time(1); our own
	 * failures were reported on stderr */
	if (o.command)
		rc = exit_status_of(wstatus);
out:
	if (out && out != stdout)
		discard_output(out, o.output, out_created);
	if (cg.id)
		rmdir(cg.path);		/* fails harmlessly if something lingers */
	free(ac);
	record_opts_free(&o);
	return rc;
}
