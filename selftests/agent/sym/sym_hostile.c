// SPDX-License-Identifier: GPL-2.0-only
/*
 * Files other users control, symbolized as root (issue 14). Each case
 * runs a target as an unprivileged user (nobody) whose debug link or
 * mapped "library" is hostile, then symbolizes it in a child of ours
 * twice (two symbolizers: the second must not warn again), and checks:
 *
 *   - it finished within HOSTILE_TIMEOUT_S (a FIFO opened for reading
 *     used to block the agent forever),
 *   - its peak RSS grew by less than HOSTILE_MAX_RSS_KB (VmHWM, reset
 *     first: a 4 GB sparse debug file used to be read whole for its CRC),
 *   - exactly one warning named the file,
 *   - what the file would have given was not used (a root-only or another
 *     user's debug file used to give lines), while a sound debug file of
 *     the process's own user still is (the control case).
 *
 * Two cases take the /proc/PID/root path instead of map_files, as ember
 * does without CAP_SYS_ADMIN (a unit that drops it): the target runs in
 * its own mount namespace, where its library's path is then covered by a
 * FIFO or by a directory holding a symlink to /dev/zero.
 *
 *   sym_hostile DIR        DIR: agent/gen/sym-tests
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include "lib/safe_file.h"
#include "symbolize/symbolize.h"
#include "sym_check.h"

#define HOSTILE_TIMEOUT_S 10
#define HOSTILE_MAX_RSS_KB (64 * 1024)
#define NOBODY 65534
#define OTHER_UID 12345
#define SPARSE_SIZE (4ull << 30)

static const char *dir;
static char base[64];

static bool sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0;
}

/* ---------------------------------------------------------------- target */

struct target {
	pid_t pid;
	int in;
	FILE *out;
	uint64_t static_func, mapped;
};

/*
 * argv[0] run as nobody, in a mount namespace of its own if own_ns (made
 * private: what is mounted there stays there). Reads its ADDR/MAPPED
 * lines up to READY.
 */
static bool spawn(struct target *t, char *const argv[], bool own_ns)
{
	int in[2], out[2];
	char line[512];

	memset(t, 0, sizeof(*t));
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return false;
	t->pid = fork();
	if (t->pid < 0)
		return false;
	if (t->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (own_ns && (unshare(CLONE_NEWNS) ||
			       mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL)))
			_exit(126);
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	t->in = in[1];
	t->out = fdopen(out[0], "r");
	while (fgets(line, sizeof(line), t->out)) {
		unsigned long long a;

		if (!strncmp(line, "READY", 5))
			return true;
		if (sscanf(line, "ADDR static_func %llx", &a) == 1)
			t->static_func = a;
		else if (sscanf(line, "MAPPED %llx", &a) == 1)
			t->mapped = a;
	}
	return false;
}

static void finish(struct target *t)
{
	int st;

	if (t->pid <= 0)
		return;
	close(t->in);
	waitpid(t->pid, &st, 0);
	fclose(t->out);
	t->pid = 0;
}

/* Bind-mount src over dst inside pid's mount namespace only. */
static bool mount_in(pid_t pid, const char *src, const char *dst)
{
	char ns[64];
	pid_t h;
	int st;

	snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)pid);
	h = fork();
	if (h == 0) {
		int fd = open(ns, O_RDONLY | O_CLOEXEC);

		_exit(fd < 0 || setns(fd, CLONE_NEWNS) ||
		      mount(src, dst, NULL, MS_BIND, NULL) ? 1 : 0);
	}
	return h > 0 && waitpid(h, &st, 0) == h && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

/* ----------------------------------------------------------------- agent */

struct result {
	bool done;		/* the agent child finished */
	int signal;		/* what ended it otherwise */
	double secs;
	long hwm_grew_kb;
	char function[128];	/* first round's frame */
	uint32_t line;
	bool file_opened;	/* the mapping's file was read (a build-id) */
	int warnings;		/* stderr lines naming the file */
	char first_warning[512];
};

static long status_kb(const char *field)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = strtol(line + strlen(field) + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

/* As ember without CAP_SYS_ADMIN: /proc/PID/map_files is closed to it. */
static bool drop_map_files(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return false;
	d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
	d[CAP_CHECKPOINT_RESTORE / 32].effective &=
		~(1u << (CAP_CHECKPOINT_RESTORE % 32));
	return syscall(SYS_capset, &h, d) == 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Symbolize addr of pid in a child, twice, with stderr into a file; count
 * the warnings that name warn_path.
 */
static struct result symbolize(pid_t pid, uint64_t addr, bool is_return,
			       bool no_map_files, bool no_openat2,
			       const char *warn_path)
{
	struct result r = { 0 };
	char errs[128], line[1024];
	double t0 = now_s();
	int pfd[2], st;
	pid_t a;
	FILE *f;

	snprintf(errs, sizeof(errs), "%s/agent.err", base);
	if (pipe(pfd))
		return r;
	a = fork();
	if (a == 0) {
		struct sym_options o = { .debug_dirs = "/nonexistent" };
		int fd = open(errs, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		long hwm0;

		alarm(HOSTILE_TIMEOUT_S);
		dup2(fd, 2);
		close(pfd[0]);
		if (no_map_files && !drop_map_files())
			_exit(3);
		/* as on kernels before 5.6: one component at a time */
		safe_file_no_openat2 = no_openat2;
		/* "5": reset the peak RSS to the current one */
		fd = open("/proc/self/clear_refs", O_WRONLY);
		if (fd < 0 || write(fd, "5", 1) != 1)
			_exit(3);
		close(fd);
		hwm0 = status_kb("VmHWM:");
		for (int round = 0; round < 2; round++) {
			struct symbolizer *s = sym_new(&o);
			struct sym_frame fr[4];
			int n;

			sym_process_exec(s, (uint32_t)pid);
			n = sym_resolve_user(s, (uint32_t)pid, addr, is_return, fr, 4);
			if (round == 0) {
				snprintf(r.function, sizeof(r.function), "%s",
					 n > 0 && fr[0].function ? fr[0].function : "");
				r.line = n > 0 ? fr[0].line : 0;
				r.file_opened = n > 0 && fr[0].build_id;
			}
			sym_free(s);
		}
		r.hwm_grew_kb = status_kb("VmHWM:") - hwm0;
		r.done = true;
		_exit(write(pfd[1], &r, sizeof(r)) == sizeof(r) ? 0 : 4);
	}
	close(pfd[1]);
	if (a < 0 || read(pfd[0], &r, sizeof(r)) != sizeof(r))
		r.done = false;
	close(pfd[0]);
	if (a > 0 && waitpid(a, &st, 0) == a && WIFSIGNALED(st))
		r.signal = WTERMSIG(st);
	r.secs = now_s() - t0;
	f = fopen(errs, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "ignoring") || !strstr(line, warn_path))
			continue;
		if (!r.warnings++)
			snprintf(r.first_warning, sizeof(r.first_warning), "%.500s", line);
	}
	if (f)
		fclose(f);
	unlink(errs);
	return r;
}

/*
 * Finished in time, bounded RSS, one warning naming it: the common part.
 * false when it did not finish (nothing more to check).
 */
static bool check_bounded(const char *tn, const struct result *r)
{
	char t[160];

	snprintf(t, sizeof(t), "%s: finishes within %d s", tn, HOSTILE_TIMEOUT_S);
	if (!check(t, r->done, "%s after %.1f s",
		   r->signal == SIGALRM ? "blocked: killed" : "failed", r->secs))
		return false;
	snprintf(t, sizeof(t), "%s: peak RSS grows < %d MiB", tn,
		 HOSTILE_MAX_RSS_KB / 1024);
	check(t, r->hwm_grew_kb < HOSTILE_MAX_RSS_KB, "grew %ld MiB",
	      r->hwm_grew_kb / 1024);
	snprintf(t, sizeof(t), "%s: one warning naming the file", tn);
	check(t, r->warnings == 1, "%d warnings%s%s", r->warnings,
	      r->warnings ? ", first: " : "", r->first_warning);
	printf("# %.1f s, peak RSS +%ld KiB; %s", r->secs, r->hwm_grew_kb,
	       r->warnings ? r->first_warning : "no warning\n");
	return true;
}

/* ----------------------------------------------------------------- cases */

/* DIR/NAME/ owned by nobody, with a copy of a target and its library. */
static bool case_dir(const char *name, const char *target, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", base, name);
	return sh("mkdir -p %s && cp %s/%s %s/libsymtest.so %s/ && chown -R %d:%d %s",
		  out, dir, target, dir, out, NOBODY, NOBODY, out);
}

/*
 * target-dbglink (stripped, .gnu_debuglink "target-dbglink.debug") next
 * to a debug file made by setup (a shell command, %s: the debug file's
 * path). used: the debug file must give static_func and its line.
 */
static void debuglink_case(const char *name, const char *setup, bool used)
{
	char d[256], exe[320], dbg[320], tn[128];
	struct target t;
	struct result r;
	char *argv[] = { exe, NULL };

	snprintf(tn, sizeof(tn), "hostile debuglink %s: setup", name);
	if (!check(tn, case_dir(name, "target-dbglink", d, sizeof(d)), "failed"))
		return;
	snprintf(tn, sizeof(tn), "hostile debuglink %s", name);
	snprintf(exe, sizeof(exe), "%s/target-dbglink", d);
	snprintf(dbg, sizeof(dbg), "%s/target-dbglink.debug", d);
	if (!sh(setup, dbg, dbg, dbg) || !spawn(&t, argv, false)) {
		check(tn, false, "cannot set up (%s)", setup);
		finish(&t);
		return;
	}
	r = symbolize(t.pid, t.static_func, false, false, false, dbg);
	finish(&t);
	if (used) {
		check(tn, r.done && !strcmp(r.function, "static_func") && r.line > 0 &&
		      r.warnings == 0, "got '%s' line %u, %d warnings (%s)",
		      r.function, r.line, r.warnings, r.first_warning);
		return;
	}
	if (!check_bounded(tn, &r))
		return;
	snprintf(tn, sizeof(tn), "hostile debuglink %s: not used", name);
	check(tn, !r.function[0] && !r.line, "resolved to %s line %u from it",
	      r.function, r.line);
}

/* target-NAME whose own debug link is at fault (the warning names it). */
static void badlink_case(void)
{
	const char *tn = "hostile debuglink ../../etc/shadow";
	char d[256], exe[320];
	char *argv[] = { exe, NULL };
	struct target t;
	struct result r;

	if (!check("hostile debuglink ../../etc/shadow: setup",
		   case_dir("badlink", "target-badlink", d, sizeof(d)), "failed"))
		return;
	snprintf(exe, sizeof(exe), "%s/target-badlink", d);
	if (!spawn(&t, argv, false)) {
		check(tn, false, "cannot run %s", exe);
		return;
	}
	r = symbolize(t.pid, t.static_func, false, false, false, exe);
	finish(&t);
	if (check_bounded(tn, &r))
		check("hostile debuglink ../../etc/shadow: names the link",
		      strstr(r.first_warning, "../../etc/shadow") != NULL, "%s",
		      r.first_warning);
}

/* A sparse copy of file at path: its bytes, then holes up to size. */
static bool make_sparse(const char *from, const char *path, uint64_t size)
{
	return sh("cp %s %s && truncate -s %llu %s && chown %d:%d %s", from,
		  path, (unsigned long long)size, path, NOBODY, NOBODY, path);
}

/* target-nobid: no build-id, so its debug file is matched by CRC. */
static void sparse_crc_case(void)
{
	const char *tn = "hostile debuglink 4 GB sparse (CRC)";
	char d[256], exe[320], dbg[320], from[320];
	char *argv[] = { exe, NULL };
	struct target t;
	struct result r;

	if (!check("hostile debuglink 4 GB sparse (CRC): setup",
		   case_dir("sparsecrc", "target-nobid", d, sizeof(d)), "failed"))
		return;
	snprintf(exe, sizeof(exe), "%s/target-nobid", d);
	snprintf(dbg, sizeof(dbg), "%s/target-nobid.debug", d);
	snprintf(from, sizeof(from), "%s/target-nobid.debug", dir);
	if (!make_sparse(from, dbg, SPARSE_SIZE) || !spawn(&t, argv, false)) {
		check(tn, false, "cannot set up");
		return;
	}
	r = symbolize(t.pid, t.static_func, false, false, false, dbg);
	finish(&t);
	check_bounded(tn, &r);
}

/*
 * target-g --map LIB: LIB is the "library". how: "sparse" (a 4 GB sparse
 * file, map_files), "fifo" (no map_files; a FIFO covers LIB in the
 * target's mount namespace), "zero" (no map_files; LIB's directory covered
 * by one where LIB is a symlink to /dev/zero), "plain" (no map_files,
 * nothing covered: the control). no_openat2: resolve the path under
 * /proc/PID/root as on kernels without openat2.
 */
static void mapped_case(const char *how, bool no_openat2)
{
	bool own_ns = strcmp(how, "sparse") != 0;
	char d[256], lib[320], exe[320], tn[128], src[320], dst[320], name[64];
	char *argv[] = { exe, "--map", lib, NULL };
	bool ok;
	struct target t;
	struct result r;

	snprintf(name, sizeof(name), "%s%s", how, no_openat2 ? "-no-openat2" : "");
	snprintf(tn, sizeof(tn), "hostile mapped library %s: setup", name);
	if (!check(tn, case_dir(name, "target-g", d, sizeof(d)) &&
		   sh("rm -rf %s/lib %s/evil && mkdir -p %s/lib %s/evil && "
		      "chown %d:%d %s/lib %s/evil", d, d, d, d, NOBODY, NOBODY, d, d),
		   "failed"))
		return;
	snprintf(tn, sizeof(tn), "hostile mapped library %s", name);
	snprintf(exe, sizeof(exe), "%s/target-g", d);
	snprintf(lib, sizeof(lib), "%s/lib/libmapped.so", d);
	snprintf(src, sizeof(src), "%s/libsymtest.so", dir);
	ok = !strcmp(how, "sparse") ? make_sparse(src, lib, SPARSE_SIZE) :
	     sh("cp %s %s && chown %d:%d %s", src, lib, NOBODY, NOBODY, lib);
	if (!ok || !spawn(&t, argv, own_ns)) {
		check(tn, false, "cannot set up");
		finish(&t);
		return;
	}
	if (!strcmp(how, "fifo")) {
		snprintf(src, sizeof(src), "%s/evil/fifo", d);
		ok = mkfifo(src, 0644) == 0 && mount_in(t.pid, src, lib);
	} else if (!strcmp(how, "zero")) {
		snprintf(src, sizeof(src), "%s/evil", d);
		snprintf(dst, sizeof(dst), "%s/lib", d);
		ok = sh("ln -s /dev/zero %s/evil/libmapped.so", d) &&
		     mount_in(t.pid, src, dst);
	}
	if (!ok) {
		check(tn, false, "cannot cover %s in the target's namespace", lib);
		finish(&t);
		return;
	}
	r = symbolize(t.pid, t.mapped, false, own_ns, no_openat2, lib);
	finish(&t);
	if (!strcmp(how, "plain")) {
		check(tn, r.done && r.file_opened && !r.warnings,
		      "opened=%d, %d warnings (%s)", r.file_opened, r.warnings,
		      r.first_warning);
		return;
	}
	if (!check_bounded(tn, &r))
		return;
	snprintf(tn, sizeof(tn), "hostile mapped library %s: not read", name);
	check(tn, !r.file_opened, "its build-id was read");
}

int main(int argc, char **argv)
{
	char secret[128], cmd[1024];

	if (argc < 2) {
		fprintf(stderr, "usage: %s BUILD_DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (geteuid() != 0) {
		printf("SKIP: hostile files: needs root (targets run as nobody)\n");
		return 0;
	}
	snprintf(base, sizeof(base), "/tmp/ember-hostile.XXXXXX");
	if (!mkdtemp(base) || chmod(base, 0755)) {
		perror("mkdtemp");
		return 2;
	}
	/* a root-only copy of the real debug file */
	snprintf(secret, sizeof(secret), "%s/secret", base);
	if (!sh("mkdir -m 700 %s && cp %s/target-dbglink.debug %s/ && chmod 600 %s/*",
		secret, dir, secret, secret))
		return 2;

	/* the control: the process's own debug file next to it is used */
	snprintf(cmd, sizeof(cmd), "cp %s/target-dbglink.debug %%s && chown %d:%d %%s",
		 dir, NOBODY, NOBODY);
	debuglink_case("own", cmd, true);
	/* hostile debug links */
	snprintf(cmd, sizeof(cmd), "mkfifo %%s && chown %d:%d %%s", NOBODY, NOBODY);
	debuglink_case("fifo", cmd, false);
	debuglink_case("symlink-to-dev-zero", "ln -s /dev/zero %s", false);
	snprintf(cmd, sizeof(cmd), "ln -s %s/target-dbglink.debug %%s", secret);
	debuglink_case("symlink-to-root-only", cmd, false);
	snprintf(cmd, sizeof(cmd), "cp %s/target-dbglink.debug %%s && chown %d:%d %%s",
		 dir, OTHER_UID, OTHER_UID);
	debuglink_case("other-user", cmd, false);
	sparse_crc_case();
	badlink_case();
	/* mapped files */
	mapped_case("plain", false);
	mapped_case("sparse", false);
	mapped_case("fifo", false);
	mapped_case("zero", false);
	mapped_case("plain", true);
	mapped_case("fifo", true);
	mapped_case("zero", true);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", base);
	return failures ? 1 : 0;
}
