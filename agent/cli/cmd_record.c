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
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/magic.h>
#include "commands.h"
#include "alloc_lib.h"
#include "record_opts.h"
#include "session.h"

/* Writers other components own; a build without them says so. */
#pragma weak output_svg
#pragma weak output_pprof
#pragma weak output_otlp

#define RECORD_TIMESTAMPS_PER_STACK 1024

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

/* ---- targets ----------------------------------------------------------- */

/* Where cgroup v2 is mounted, or NULL. */
static const char *cgroup2_root(void)
{
	struct statfs sfs;

	if (!statfs(CGROUP_ROOT, &sfs) && sfs.f_type == CGROUP2_SUPER_MAGIC)
		return CGROUP_ROOT;
	if (!statfs(CGROUP_ROOT "/unified", &sfs) && sfs.f_type == CGROUP2_SUPER_MAGIC)
		return CGROUP_ROOT "/unified";
	return NULL;
}

static int cgroup_fail(char *err, size_t err_len, const char *path,
		       const char *root, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(err, err_len, "--cgroup %s: %s; expected " CGROUP_EXPECTED,
		 path, why, root);
	return -1;
}

/*
 * A cgroup's id is the inode number of its directory. PATH is relative to
 * the cgroup v2 root (a leading '/' too, as /proc/PID/cgroup writes it)
 * unless it is a path under /sys/; either way it must resolve (realpath:
 * symlinks, "//", ".") to a cgroup v2 directory under that root.
 */
static int cgroup_id_of(const char *path, uint64_t *id, char *dir,
			size_t dir_len, char *err, size_t err_len)
{
	const char *root = cgroup2_root();
	char full[PATH_MAX + 64], real[PATH_MAX], real_root[PATH_MAX];
	struct statfs sfs;
	struct stat st;
	size_t n;

	if (!root)
		return cgroup_fail(err, err_len, path, CGROUP_ROOT, "no cgroup v2 "
				   "hierarchy is mounted at " CGROUP_ROOT " or "
				   CGROUP_ROOT "/unified");
	if (!strncmp(path, "/sys/", 5))
		snprintf(full, sizeof(full), "%s", path);
	else
		snprintf(full, sizeof(full), "%s/%s", root,
			 path[0] == '/' ? path + 1 : path);
	if (!realpath(full, real))
		return cgroup_fail(err, err_len, path, root, "%s: %s", full,
				   strerror(errno));
	if (!realpath(root, real_root))
		snprintf(real_root, sizeof(real_root), "%s", root);
	n = strlen(real_root);
	if (strncmp(real, real_root, n) || (real[n] != '\0' && real[n] != '/'))
		return cgroup_fail(err, err_len, path, root, "%s is outside the "
				   "cgroup v2 root %s", real, root);
	if (stat(real, &st) || !S_ISDIR(st.st_mode) || statfs(real, &sfs) ||
	    sfs.f_type != CGROUP2_SUPER_MAGIC)
		return cgroup_fail(err, err_len, path, root, "%s is not a cgroup "
				   "v2 directory", real);
	*id = st.st_ino;
	snprintf(dir, dir_len, "%s", real);
	return 0;
}

struct child_cgroup {
	char path[4096];
	uint64_t id;
};

/* A fresh cgroup below our own for the command (no controllers needed). */
static int child_cgroup_create(struct child_cgroup *cg)
{
	const char *root = cgroup2_root();
	char own[2048] = "", line[2040];
	struct stat st;
	FILE *f;

	if (!root)
		return -1;
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(own, sizeof(own), "%s", line + 3);
		}
	fclose(f);
	if (!own[0])
		return -1;
	snprintf(cg->path, sizeof(cg->path), "%s%s/ember-record-%d", root,
		 strcmp(own, "/") ? own : "", getpid());
	if (mkdir(cg->path, 0755) && errno != EEXIST)
		return -1;
	if (stat(cg->path, &st)) {
		rmdir(cg->path);
		return -1;
	}
	cg->id = st.st_ino;
	return 0;
}

static int child_cgroup_enter(struct child_cgroup *cg, pid_t pid)
{
	char path[4200];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg->path);
	f = fopen(path, "we");
	if (!f)
		return -1;
	ok = fprintf(f, "%d\n", pid) > 0;
	ok = !fclose(f) && ok;
	return ok ? 0 : -1;
}

/* The command waits on go[0] until the session runs, then execs. */
struct child {
	pid_t pid;
	int go_fd;		/* write end: one byte releases it */
	int err_fd;		/* read end: errno if exec failed, EOF if it ran */
};

/*
 * -e alloc: the command runs with ember's sampler preloaded (before any
 * library it preloads itself) and the sampling rate in its environment.
 * Done in the child, before exec: ember's own environment stays as is.
 */
struct child_env {
	const char *preload;	/* absolute path, or NULL */
	uint64_t alloc_rate;
};

static void child_set_env(const struct child_env *env)
{
	const char *old = getenv("LD_PRELOAD");
	char rate[32], *v;

	if (!env || !env->preload)
		return;
	if (old && *old && asprintf(&v, "%s %s", env->preload, old) > 0)
		setenv("LD_PRELOAD", v, 1);
	else
		setenv("LD_PRELOAD", env->preload, 1);
	if (env->alloc_rate) {
		snprintf(rate, sizeof(rate), "%llu",
			 (unsigned long long)env->alloc_rate);
		setenv("EMBER_ALLOC_RATE", rate, 1);
	}
}

static int child_spawn(char **command, const struct child_env *env,
		       struct child *ch)
{
	int go[2], ep[2];

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(ep, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	ch->pid = fork();
	if (ch->pid < 0) {
		int e = errno;

		close(go[0]); close(go[1]); close(ep[0]); close(ep[1]);
		return -e;
	}
	if (ch->pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(ep[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);	/* ember gave up before starting it */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		child_set_env(env);
		execvp(command[0], command);
		e = errno;
		if (write(ep[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ep[1]);
	ch->go_fd = go[1];
	ch->err_fd = ep[0];
	return 0;
}

/* Release the command; 0 once it exec'd, else the exec errno. */
static int child_release(struct child *ch)
{
	int e = 0;
	ssize_t n;

	if (write(ch->go_fd, "g", 1) != 1)
		e = errno;
	close(ch->go_fd);
	ch->go_fd = -1;
	do {
		n = read(ch->err_fd, &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(ch->err_fd);
	ch->err_fd = -1;
	return n == sizeof(e) ? e : 0;
}

static void child_abort(struct child *ch)
{
	int st;

	if (ch->go_fd >= 0)
		close(ch->go_fd);	/* read() sees EOF: it exits 127 */
	if (ch->err_fd >= 0)
		close(ch->err_fd);
	while (waitpid(ch->pid, &st, 0) < 0 && errno == EINTR)
		;
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

static void install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
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

/* Opened before recording: a bad path fails now, not after the recording. */
static FILE *open_output(const struct ember_opts *o)
{
	FILE *f;

	if (!writer_for(o->format)) {
		fprintf(stderr, "ember: %s output is not available in this build: use -o FILE.folded\n",
			format_name(o->format));
		return NULL;
	}
	if (!strcmp(o->output, "-"))
		return stdout;
	f = fopen(o->output, "we");
	if (!f)
		fprintf(stderr, "ember: cannot write %s: %s\n", o->output, strerror(errno));
	return f;
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

static void print_summary(const struct profile *p, const struct ember_opts *o,
			  int written)
{
	const struct prof_meta *m = &p->meta;

	const char *sep = "";

	fputs("ember: ", stderr);
	if (o->events & EMBER_EV_ONCPU ||
	    !(o->events & (EMBER_EV_OFFCPU | EMBER_EV_FAULTS | EMBER_EV_ALLOC))) {
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
	}
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
	if (m->cut_user_stacks)
		fprintf(stderr, "ember: %llu of %llu samples have a user stack cut "
			"short (shown under " PROF_CUT_FRAME "): code without "
			"unwind tables or frame pointers\n",
			(unsigned long long)m->cut_user_stacks,
			(unsigned long long)(m->samples[PROF_EV_CPU] +
					     m->samples[PROF_EV_OFFCPU] +
					     m->samples[PROF_EV_FAULTS] +
					     m->samples[PROF_EV_ALLOC]));
	if (m->inuse_untracked)
		fprintf(stderr, "ember: %llu sampled blocks were not followed to their free (table full): in use is understated\n",
			(unsigned long long)m->inuse_untracked);
	if (m->lost)
		fprintf(stderr, "ember: the profile misses %llu lost records: lower -F or raise ring sizes\n",
			(unsigned long long)m->lost);
}

/* ---- -e alloc ----------------------------------------------------------- */

/* Does process pid map the file path? */
static bool maps_file(uint32_t pid, const char *path)
{
	char maps[64], line[PATH_MAX + 128];
	size_t n = strlen(path);
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\n");

		found = len >= n && !memcmp(line + len - n, path, n);
	}
	fclose(f);
	return found;
}

/*
 * What following sampled blocks to their free adds under -p: a return
 * probe on each entry point and a probe on free (bench section 8:
 * 2565 ns an allocation against 1022 without, 142 unprobed).
 */
#define ALLOC_INUSE_COST "in-use bytes followed: returns and frees trap too, 2-3 times the cost of the entry probes alone; --alloc-no-inuse leaves them out"

/*
 * Probes on the sampler library: the command ember starts preloads it;
 * running processes (-p) must have been started with it, which is said
 * per process rather than silently giving an empty profile.
 */
static int record_alloc_start(struct session *s, const struct ember_opts *o,
			      const char *lib, char *err, size_t err_len)
{
	int r = session_alloc_attach(s, lib, err, err_len);

	if (r)
		return r;
	for (size_t i = 0; i < o->nr_pids; i++) {
		char what[PATH_MAX];

		if (maps_file(o->pids[i], lib))
			continue;
		r = session_alloc_attach_entry(s, o->pids[i], what,
					       sizeof(what), err, err_len);
		if (r) {
			fprintf(stderr, "ember: -e alloc: process %u was not started with LD_PRELOAD=%s and its allocator cannot be probed: %s\n",
				o->pids[i], lib, err);
			continue;
		}
		fprintf(stderr, "ember: -e alloc: process %u runs without ember's sampler: uprobes on %s's malloc family trap on every call (about 1-10 us each: an allocation-heavy program can run many times slower; %s); start it with LD_PRELOAD=%s to sample in the process instead\n",
			o->pids[i], what, err[0] ? err : ALLOC_INUSE_COST, lib);
	}
	err[0] = '\0';
	if (!o->command && !o->nr_pids && !o->cgroup_path)
		fprintf(stderr, "ember: -e alloc: sampling the allocations of processes started with LD_PRELOAD=%s\n",
			lib);
	return 0;
}

/*
 * --cgroup with -e alloc: each process of the cgroup (or of a cgroup below
 * it, as the backends' filter counts them) that runs without the sampler
 * gets its allocator's entry points probed for its own pid only, so a
 * process outside the cgroup never traps even when it maps the same libc.
 * Rechecked at each scan of session_run: processes that join the cgroup,
 * or exec another program, are probed then. At most ALLOC_CG_PROCS
 * processes, said once when reached.
 */
#define ALLOC_CG_PROCS	256
#define ALLOC_CG_DEPTH	8	/* cgroup levels walked below --cgroup */
#define ALLOC_CG_TRIES	5	/* scans a process that cannot be probed gets */

struct alloc_cgroup {
	struct session *s;
	const char *lib;
	const char *dir;
	struct {
		uint32_t pid;
		uint64_t exe;	/* exe_id(): another program after an exec */
		char probed[PATH_MAX];	/* the allocator file probed, or "" */
		uint8_t failures;	/* tried again up to ALLOC_CG_TRIES */
	} seen[ALLOC_CG_PROCS];
	size_t nr;
	bool full_said;
	bool cap_said;	/* the backend's probes per session ran out */
};

/* Which program pid runs (its executable's device and inode), 0 if gone. */
static uint64_t exe_id(uint32_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	if (stat(path, &st))
		return 0;
	return ((uint64_t)st.st_dev << 40) ^ (uint64_t)st.st_ino;
}

/*
 * The module takes EMBER_MAX_ALLOC_SETS attaches per session (the
 * sampler's, then one per process and program, kept until the session
 * ends even when the process is gone): said once, not retried until the
 * process runs another program.
 */
static void alloc_cgroup_cap_hit(struct alloc_cgroup *ac, uint32_t pid,
				 const char *err)
{
	if (!ac->cap_said)
		fprintf(stderr, "ember: -e alloc: the %s backend takes at most %d allocator probe sets per session (the sampler's, then one per process of cgroup %s and program it ran, exited ones included): process %u and later ones are not probed; --backend bpf takes more (%s)\n",
			ac->s->ops->name, EMBER_MAX_ALLOC_SETS, ac->dir, pid,
			err);
	ac->cap_said = true;
}

/* Probe pid unless it is known with the same program; say what was done. */
static void alloc_cgroup_probe(struct alloc_cgroup *ac, uint32_t pid)
{
	uint64_t exe = exe_id(pid);
	char what[PATH_MAX], err[512];
	size_t i;
	int r;

	for (i = 0; i < ac->nr && ac->seen[i].pid != pid; i++)
		;
	if (i < ac->nr && ac->seen[i].exe == exe)
		return;
	if (i == ALLOC_CG_PROCS) {
		if (!ac->full_said)
			fprintf(stderr, "ember: -e alloc: cgroup %s has more than %d processes: process %u and later ones are not probed\n",
				ac->dir, ALLOC_CG_PROCS, pid);
		ac->full_said = true;
		return;
	}
	if (i == ac->nr) {
		ac->nr++;
		ac->seen[i].probed[0] = '\0';
		ac->seen[i].failures = 0;
	}
	ac->seen[i].pid = pid;
	ac->seen[i].exe = exe;
	/* gone, a kernel thread, or sampled in-process by the sampler */
	if (!exe || maps_file(pid, ac->lib))
		return;
	/*
	 * After an exec the eBPF backend's probes of this pid follow it into
	 * its new program where it maps the same file: probing again would
	 * count each call twice. The module's end with the old address
	 * space: the new program needs its own.
	 */
	if (ac->s->ops->alloc_pid_follows_exec && ac->seen[i].probed[0] &&
	    maps_file(pid, ac->seen[i].probed))
		return;
	r = session_alloc_attach_entry(ac->s, pid, what, sizeof(what), err,
				       sizeof(err));
	if (r == -ENOSPC) {
		alloc_cgroup_cap_hit(ac, pid, err);
		return;
	}
	if (r) {
		/* maybe in the middle of an exec: tried again, said once */
		if (++ac->seen[i].failures < ALLOC_CG_TRIES)
			ac->seen[i].exe = 0;
		if (ac->seen[i].failures == 1)
			fprintf(stderr, "ember: -e alloc: process %u of cgroup %s runs without ember's sampler and its allocator cannot be probed: %s\n",
				pid, ac->dir, err);
		return;
	}
	snprintf(ac->seen[i].probed, sizeof(ac->seen[i].probed), "%s", what);
	fprintf(stderr, "ember: -e alloc: process %u of cgroup %s runs without ember's sampler: uprobes on %s's malloc family (for this process only) trap on every call (%s)\n",
		pid, ac->dir, what, err[0] ? err : ALLOC_INUSE_COST);
}

static void alloc_cgroup_walk(struct alloc_cgroup *ac, const char *dir,
			      int depth)
{
	char path[PATH_MAX + 32];
	struct dirent *de;
	unsigned long pid;
	int lines = 0;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (f) {
		while (lines++ <= ALLOC_CG_PROCS && fscanf(f, "%lu", &pid) == 1)
			alloc_cgroup_probe(ac, (uint32_t)pid);
		fclose(f);
	}
	if (depth >= ALLOC_CG_DEPTH || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		alloc_cgroup_walk(ac, path, depth + 1);
	}
	closedir(d);
}

static void alloc_cgroup_scan(void *ctx)
{
	struct alloc_cgroup *ac = ctx;

	alloc_cgroup_walk(ac, ac->dir, 0);
}

static int alloc_cgroup_start(struct session *s, const char *dir,
			      const char *lib, struct alloc_cgroup **out,
			      char *err, size_t err_len)
{
	struct alloc_cgroup *ac;

	ac = calloc(1, sizeof(*ac));
	if (!ac) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	ac->s = s;
	ac->lib = lib;
	ac->dir = dir;
	fprintf(stderr, "ember: -e alloc: cgroup %s: processes started with LD_PRELOAD=%s are sampled in-process, the others through uprobes on their allocator (those that join or exec later too)\n",
		dir, lib);
	alloc_cgroup_scan(ac);
	s->on_scan = alloc_cgroup_scan;
	s->scan_ctx = ac;
	*out = ac;
	return 0;
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

	so.backend = o.backend;
	so.src.events = o.events | EMBER_EV_LIFECYCLE;
	so.src.freq_hz = o.freq_hz;
	so.src.include_idle = o.include_idle;
	so.src.offcpu_min_ns = o.offcpu_min_ns;
	so.src.fault_period = o.fault_period;
	so.src.alloc_rate = o.alloc_rate ? o.alloc_rate : EMBER_ALLOC_DEFAULT_RATE;
	so.pb.alloc_rate = so.src.alloc_rate;
	so.src.alloc_no_inuse = o.alloc_no_inuse;
	so.src.kstack_max = EMBER_DEFAULT_FRAMES;
	so.src.ustack_max = EMBER_DEFAULT_FRAMES;
	so.src.pids = o.pids;
	so.src.nr_pids = o.nr_pids;
	so.pb.max_stacks = o.max_stacks;
	/* per-sample times, as ember run keeps them (OTLP output uses them) */
	so.pb.max_timestamps = RECORD_TIMESTAMPS_PER_STACK;
	/* --debug-dir adds to the default root, searched last */
	if (o.debug_dirs && sym_debug_dirs_add(&o.debug_dirs, SYM_DEFAULT_DEBUG_DIR)) {
		fprintf(stderr, "ember record: out of memory\n");
		record_opts_free(&o);
		return 1;
	}
	so.sym.debug_dirs = o.debug_dirs;
	so.no_unwind_tables = o.no_cfi;
	so.src.no_unwind_tables = o.no_cfi;
	so.verbose_unwind = o.verbose_cfi;
	so.check_unwind = o.check_unwind;
	so.src.stack_copy = o.check_unwind;
	so.sym.use_debuginfod = o.debuginfod;
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
	out = open_output(&o);
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
	install_signals();
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
		r = child_release(&ch);
		if (r) {
			fprintf(stderr, "ember record: cannot run %s: %s\n",
				o.command[0], strerror(r));
			child_abort(&ch);
			session_close(&s);
			rc = r == ENOENT ? 127 : 126;
			goto out;
		}
	}

	session_run(&s, o.duration_ms, &stop_requested, o.command ? ch.pid : 0,
		    &wstatus);
	forward_to = 0;
	if (s.ops->stop)
		s.ops->stop(s.src);
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
		fprintf(stderr, "ember: unwind tables: %" PRIu64 " built (%" PRIu64
			" KiB loaded now), %" PRIu64 " files without usable CFI; %"
			PRIu64 " bindings, %.1f ms mean and %.1f ms max from exec "
			"or first miss to binding; %" PRIu64 " follow-up reads of "
			"maps, %" PRIu64 " found new code\n", u.tables_loaded,
			u.table_bytes / 1024, u.tables_failed, u.binds,
			u.binds ? u.bind_latency_ns_sum / 1e6 / u.binds : 0,
			u.bind_latency_ns_max / 1e6, u.rechecks, u.recheck_binds);
	}
	session_close(&s);
	/* the command's exit status is ours, as with time(1); our own
	 * failures were reported on stderr */
	if (o.command)
		rc = exit_status_of(wstatus);
out:
	if (out && out != stdout) {
		/* nothing was recorded: leave no empty file behind */
		fclose(out);
		unlink(o.output);
	}
	if (cg.id)
		rmdir(cg.path);		/* fails harmlessly if something lingers */
	free(ac);
	record_opts_free(&o);
	return rc;
}
