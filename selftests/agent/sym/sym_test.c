// SPDX-License-Identifier: GPL-2.0-only
/*
 * Symbolizer tests: runs the targets built by agent/mk/sym-tests.mk,
 * resolves the addresses they print (mostly after they exited, as for a
 * short-lived process) and checks names, lines, inline frames, module
 * offsets; plus kernel symbols, demangling, maps parsing, JIT maps, deleted
 * files, truncated/corrupt ELF input, cache sharing and the memory bound.
 *
 *   sym_test DIR            all tests, one PASS:/FAIL: line each
 *   sym_test DIR --bench N  time N cold and warm lookups, print numbers
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "lib/safe_file.h"
#include "proc/exec_snap.h"
#include "symbolize/symbolize.h"
#include "symbolize/symbolize_internal.h"
#include "sym_check.h"

static const char *dir;

/* As selftests/lib.sh's t_skip: a missing prerequisite fails in CI. */
__attribute__((format(printf, 2, 3)))
static void skip(const char *name, const char *fmt, ...)
{
	bool ci = getenv("CI") && !strcmp(getenv("CI"), "true");
	va_list ap;

	printf(ci ? "FAIL: %s: prerequisite missing in CI: " : "SKIP: %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures += ci;
}

static const char *str(const char *s)
{
	return s ? s : "(null)";
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);

	return s && a >= b && strcmp(s + a - b, suffix) == 0;
}

/* ------------------------------------------------------------ children */

struct addr_line {
	char name[64], fn[128];
	uint64_t addr, fileoff;
	int is_return, line;
};

struct child {
	pid_t pid;
	int in;			/* its stdin */
	FILE *out;
	struct addr_line addrs[16];
	int nr_addrs;
	int inline_caller_line;
	uint64_t mapped[16];
	int nr_mapped;
	uint64_t jit_addr;
	char jit_name[64];
	uint64_t plt_addr;
};

static bool read_until_ready(struct child *c);

/*
 * With at_exec, the child is stopped right after its execve (ptrace), when
 * only the executable, ld.so and the vdso are mapped, and at_exec(pid) is
 * called there: what an exec record handled at once sees.
 */
static bool spawn_ex(struct child *c, char *const argv[], void (*at_exec)(pid_t, void *),
		     void *arg)
{
	int in[2], out[2], st;

	memset(c, 0, sizeof(*c));
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		return false;
	c->pid = fork();
	if (c->pid < 0)
		return false;
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		if (at_exec)
			ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = in[1];
	c->out = fdopen(out[0], "r");
	if (at_exec) {
		/* A traced process stops with SIGTRAP after a successful execve. */
		if (waitpid(c->pid, &st, 0) != c->pid || !WIFSTOPPED(st))
			return false;
		at_exec(c->pid, arg);
		ptrace(PTRACE_DETACH, c->pid, NULL, NULL);
	}
	return read_until_ready(c);
}

static bool spawn(struct child *c, char *const argv[])
{
	return spawn_ex(c, argv, NULL, NULL);
}

static bool read_until_ready(struct child *c)
{
	char line[512];

	while (fgets(line, sizeof(line), c->out)) {
		struct addr_line *a = &c->addrs[c->nr_addrs];
		unsigned long long ad, off;

		if (strncmp(line, "READY", 5) == 0)
			return true;
		if (c->nr_addrs < 16 &&
		    sscanf(line, "ADDR %63s %llx %d %127s %d %llx", a->name, &ad,
			   &a->is_return, a->fn, &a->line, &off) == 6) {
			a->addr = ad;
			a->fileoff = off;
			c->nr_addrs++;
		} else if (sscanf(line, "INLINE_CALLER inl_outer %d",
				  &c->inline_caller_line) == 1) {
		} else if (c->nr_mapped < 16 &&
			   sscanf(line, "MAPPED %llx", &ad) == 1) {
			c->mapped[c->nr_mapped++] = ad;
		} else if (sscanf(line, "PLT %llx", &ad) == 1) {
			c->plt_addr = ad;
		} else if (sscanf(line, "JIT %llx %63s", &ad, c->jit_name) == 2) {
			c->jit_addr = ad;
		}
	}
	return false;
}

/* Let it exit (close its stdin) and reap it: it is gone from /proc after. */
static void finish(struct child *c)
{
	int st;

	close(c->in);
	waitpid(c->pid, &st, 0);
	fclose(c->out);
}

static const struct addr_line *find_addr(const struct child *c, const char *name)
{
	for (int i = 0; i < c->nr_addrs; i++)
		if (strcmp(c->addrs[i].name, name) == 0)
			return &c->addrs[i];
	return NULL;
}

static char *path_of(const char *name)
{
	static char buf[8][4096];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static struct symbolizer *new_sym(size_t budget)
{
	struct sym_options o = { .cache_bytes = budget,
				 .debug_dirs = path_of("debugroot") };

	return sym_new(&o);
}

/* --------------------------------------------------------- user variants */

struct variant {
	const char *name;
	bool names;	/* static functions resolve (symtab somewhere) */
	bool dwarf;	/* lines and inline frames */
};

static void check_frame_common(const char *tn, const struct child *c,
			       const struct addr_line *a,
			       const struct sym_frame *f, int n)
{
	char t[160];

	snprintf(t, sizeof(t), "%s: %s module offset", tn, a->name);
	check(t, n >= 1 && f[0].module_offset == a->fileoff && f[0].address == a->addr,
	      "offset 0x%" PRIx64 " address 0x%" PRIx64 ", want 0x%" PRIx64 " 0x%" PRIx64,
	      f[0].module_offset, f[0].address, a->fileoff, a->addr);
	(void)c;
}

static void test_variant(const struct variant *v)
{
	char *argv[] = { path_of(v->name), NULL };
	struct sym_frame f[8];
	const struct addr_line *a;
	struct symbolizer *s;
	struct child c;
	char t[160];
	int n;

	s = new_sym(0);
	snprintf(t, sizeof(t), "%s: spawn", v->name);
	if (!check(t, s && spawn(&c, argv), "cannot run %s", argv[0])) {
		sym_free(s);
		return;
	}
	/* As on an exec record: read the maps while the process lives... */
	sym_process_exec(s, (uint32_t)c.pid);
	a = find_addr(&c, "global_ret");
	n = a ? sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, f, 8) : 0;
	snprintf(t, sizeof(t), "%s: resolve while alive", v->name);
	check(t, n >= 1 && (v->names ? f[0].function && !strcmp(f[0].function, "global_func")
				     : !f[0].function && f[0].module),
	      "got %s", n ? str(f[0].function) : "nothing");
	/* ...and resolve everything after it exited. */
	finish(&c);
	sym_process_exit(s, (uint32_t)c.pid);

	for (int i = 0; i < c.nr_addrs; i++) {
		const struct addr_line *x = &c.addrs[i];
		bool in_lib = !strncmp(x->name, "symlib", 6);
		bool want_name = v->names || in_lib;
		bool want_dwarf = v->dwarf || in_lib;

		n = sym_resolve_user(s, (uint32_t)c.pid, x->addr, x->is_return, f, 8);
		check_frame_common(v->name, &c, x, f, n);
		snprintf(t, sizeof(t), "%s: %s module", v->name, x->name);
		check(t, ends_with(f[0].module, in_lib ? "/libsymtest.so" : v->name) &&
		      f[0].build_id && strlen(f[0].build_id) == 40,
		      "module %s build-id %s", str(f[0].module), str(f[0].build_id));
		if (!want_name) {
			char want[128];

			snprintf(want, sizeof(want), "%s+0x%" PRIx64, v->name, x->fileoff);
			snprintf(t, sizeof(t), "%s: %s unresolved as file+offset",
				 v->name, x->name);
			check(t, n == 1 && !f[0].function && f[0].kind == SYM_FRAME_UNKNOWN &&
			      !strcmp(sym_frame_name(s, f), want),
			      "got %s (kind %d), want %s", sym_frame_name(s, f),
			      f[0].kind, want);
			continue;
		}
		if (!strcmp(x->name, "inline_ret") && want_dwarf) {
			snprintf(t, sizeof(t), "%s: inline frames", v->name);
			check(t, n == 2 && f[0].function && !strcmp(f[0].function, "inl_mid") &&
			      f[0].inlined && f[0].line == (uint32_t)x->line &&
			      f[1].function && !strcmp(f[1].function, "inl_outer") &&
			      !f[1].inlined &&
			      f[1].line == (uint32_t)c.inline_caller_line &&
			      ends_with(f[1].source_file, "/target.c"),
			      "n=%d [0] %s:%u inl=%d [1] %s %s:%u, want inl_mid:%d inl_outer:%d",
			      n, str(f[0].function), f[0].line, f[0].inlined,
			      n > 1 ? str(f[1].function) : "-",
			      n > 1 ? str(f[1].source_file) : "-", n > 1 ? f[1].line : 0,
			      x->line, c.inline_caller_line);
			continue;
		}
		if (!strcmp(x->name, "inline_ret")) {
			snprintf(t, sizeof(t), "%s: inline_ret without DWARF", v->name);
			check(t, n == 1 && f[0].function &&
			      !strcmp(f[0].function, "inl_outer") && !f[0].source_file,
			      "got %s", str(f[0].function));
			continue;
		}
		snprintf(t, sizeof(t), "%s: %s function", v->name, x->name);
		check(t, n == 1 && f[0].function && !strcmp(f[0].function, x->fn) &&
		      f[0].kind == SYM_FRAME_NATIVE && !f[0].inlined,
		      "n=%d got %s, want %s", n, str(f[0].function), x->fn);
		snprintf(t, sizeof(t), "%s: %s line", v->name, x->name);
		if (want_dwarf)
			check(t, f[0].line == (uint32_t)x->line &&
			      ends_with(f[0].source_file, in_lib ? "/symlib.c" : "/target.c"),
			      "got %s:%u, want line %d", str(f[0].source_file),
			      f[0].line, x->line);
		else
			check(t, !f[0].source_file && !f[0].line, "unexpected %s:%u",
			      str(f[0].source_file), f[0].line);
	}
	/* Interned: the same name twice is the same pointer. */
	a = find_addr(&c, "global_ret");
	if (a && v->names) {
		struct sym_frame g[2];

		sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, f, 1);
		sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, g, 1);
		snprintf(t, sizeof(t), "%s: strings interned", v->name);
		check(t, f[0].function == g[0].function && f[0].module == g[0].module,
		      "different pointers");
	}
	if (!strcmp(v->name, "target-nopie")) {
		/* Not attributed to the unsized symbol before the PLT (_init). */
		n = sym_resolve_user(s, (uint32_t)c.pid, c.plt_addr, false, f, 8);
		check("target-nopie: PLT stub named fn@plt",
		      c.plt_addr && n == 1 && !strcmp(str(f[0].function), "symlib_func@plt"),
		      "0x%" PRIx64 " named %s", c.plt_addr, str(f[0].function));
	}
	n = sym_resolve_user(s, (uint32_t)c.pid, 0x1000, false, f, 8);
	snprintf(t, sizeof(t), "%s: unmapped address", v->name);
	check(t, n == 1 && f[0].kind == SYM_FRAME_UNKNOWN &&
	      !strcmp(sym_frame_name(s, f), "0x1000"), "got %s", sym_frame_name(s, f));
	sym_free(s);
}

/* ------------------------------------------------------- special mappings */

static bool copy_file(const char *from, const char *to, off_t len)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	off_t done = 0;
	ssize_t n;

	if (in < 0 || out < 0)
		goto fail;
	while ((len < 0 || done < len) && (n = read(in, buf, sizeof(buf))) > 0) {
		if (len >= 0 && done + n > len)
			n = len - done;
		if (write(out, buf, (size_t)n) != n)
			goto fail;
		done += n;
	}
	close(in);
	close(out);
	return true;
fail:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return false;
}

/* no_dwarf: symbol names only, no lines or inline frames. */
static void test_no_dwarf(void)
{
	char *argv[] = { path_of("target-g"), NULL };
	struct sym_options o = { .no_dwarf = true };
	struct symbolizer *s = sym_new(&o);
	const struct addr_line *a;
	struct sym_frame f[4];
	struct child c;
	int n;

	if (!check("no_dwarf: spawn", spawn(&c, argv) && (a = find_addr(&c, "inline_ret")),
		   "failed")) {
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	n = sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, f, 4);
	check("no_dwarf: symbol only", n == 1 && !strcmp(str(f[0].function), "inl_outer") &&
	      !f[0].source_file && !f[0].line, "n=%d %s %s:%u", n, str(f[0].function),
	      str(f[0].source_file), f[0].line);
	sym_free(s);
}

/*
 * A file's last answers are kept (sym_cache.c): an answer cut to a
 * caller's room is never handed to one with more, and a kept answer is
 * the one a lookup makes.
 */
static void test_resolve_kept(void)
{
	char *argv[] = { path_of("target-g"), NULL };
	struct symbolizer *s = sym_new(NULL);
	const struct addr_line *a;
	struct sym_frame f[4], g[4];
	struct child c;
	int n1, n, m;

	if (!check("resolve_kept: spawn", spawn(&c, argv) && (a = find_addr(&c, "inline_ret")),
		   "failed")) {
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	n1 = sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, f, 1);
	n = sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, f, 4);
	m = sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, g, 4);
	check("resolve_kept: a cut answer is not kept for more room",
	      n1 == 1 && n == 2, "max 1: %d frames, then max 4: %d", n1, n);
	check("resolve_kept: the kept answer is the looked-up one",
	      n == m && m == 2 && f[0].function == g[0].function &&
	      f[1].function == g[1].function && f[0].line == g[0].line &&
	      f[1].line == g[1].line && f[0].inlined && !g[1].inlined &&
	      f[1].source_file == g[1].source_file && g[0].module == f[0].module,
	      "n=%d m=%d %s/%s", n, m, str(g[0].function), m > 1 ? str(g[1].function) : "-");
	sym_free(s);
}

static void exec_hint(pid_t pid, void *s)
{
	sym_process_exec(s, (uint32_t)pid);
}

/*
 * The exec record is handled before ld.so mapped the libraries: a later
 * touch (or a miss while the process lives) must pick them up, so they
 * resolve after the process exited.
 */
static void test_exec_early(void)
{
	char *argv[] = { path_of("target-g"), NULL };
	const struct addr_line *a;
	struct sym_frame f[4];
	struct child c;
	struct symbolizer *s = new_sym(0), *s2 = new_sym(0);
	int n;

	if (!check("early exec: spawn stopped at exec", spawn_ex(&c, argv, exec_hint, s) &&
		   (a = find_addr(&c, "symlib_ret")), "failed")) {
		sym_free(s);
		sym_free(s2);
		return;
	}
	usleep(10000);
	sym_process_touch(s, (uint32_t)c.pid);
	finish(&c);
	n = sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, f, 4);
	check("early exec: library mapped after exec resolves after exit (touch)",
	      n == 1 && !strcmp(str(f[0].function), "symlib_func"), "got %s in %s",
	      str(f[0].function), str(f[0].module));
	sym_free(s);

	/* Same, noticed by a lookup miss while the process still runs. */
	if (!spawn_ex(&c, argv, exec_hint, s2) || !(a = find_addr(&c, "symlib_ret"))) {
		check("early exec: spawn (miss)", false, "failed");
		sym_free(s2);
		return;
	}
	n = sym_resolve_user(s2, (uint32_t)c.pid, a->addr, true, f, 4);
	finish(&c);
	check("early exec: library mapped after exec resolves on a miss",
	      n == 1 && !strcmp(str(f[0].function), "symlib_func"), "got %s in %s",
	      str(f[0].function), str(f[0].module));
	sym_free(s2);
}

static void snap_hint(pid_t pid, void *es)
{
	exec_snaps_note(es, (uint32_t)pid);
}

/*
 * The exec record is handled only after the process exited (a program of
 * a few ms, a consumer thread that was busy): its maps come from the
 * snapshot thread, which took them at the exec and again once ld.so had
 * mapped the libraries; its files are opened in the root it had.
 */
static void test_exec_late(void)
{
	char *argv[] = { path_of("target-g"), NULL };
	struct exec_snaps *es = exec_snaps_start(NULL);
	struct sym_options o = { .debug_dirs = path_of("debugroot"),
				 .exec_snaps = es };
	struct symbolizer *s = es ? sym_new(&o) : NULL, *bare = new_sym(0);
	const struct addr_line *a = NULL, *lib = NULL;
	struct exec_snap_stats st;
	struct sym_frame f[4];
	struct child c;
	int n;

	if (!check("late exec: spawn", s && bare && spawn_ex(&c, argv, snap_hint, es) &&
		   (a = find_addr(&c, "static_func")) &&
		   (lib = find_addr(&c, "symlib_ret")), "failed")) {
		sym_free(s);
		sym_free(bare);
		exec_snaps_stop(es);
		return;
	}
	/* both takes (at the exec and EXEC_SNAP_AGAIN_NS later) are done */
	usleep(3 * EXEC_SNAP_AGAIN_NS / 1000 + 20000);
	finish(&c);
	sym_process_exec(s, (uint32_t)c.pid);
	sym_process_exec(bare, (uint32_t)c.pid);
	n = sym_resolve_user(s, (uint32_t)c.pid, a->addr, a->is_return, f, 4);
	check("late exec: the executable resolves from the snapshot", n >= 1 &&
	      !strcmp(str(f[0].function), "static_func") && ends_with(f[0].module, "/target-g"),
	      "got %s in %s", str(f[0].function), str(f[0].module));
	n = sym_resolve_user(s, (uint32_t)c.pid, lib->addr, true, f, 4);
	check("late exec: a library ld.so mapped after the exec resolves", n >= 1 &&
	      !strcmp(str(f[0].function), "symlib_func"), "got %s in %s",
	      str(f[0].function), str(f[0].module));
	n = sym_resolve_user(bare, (uint32_t)c.pid, a->addr, a->is_return, f, 4);
	check("late exec: without snapshots it stays an address (the window)",
	      n == 1 && !f[0].function, "got %s", str(f[0].function));
	exec_snaps_get_stats(es, &st);
	check("late exec: two takes, one used", st.taken == 2 && st.used >= 1 &&
	      !st.dropped, "taken %" PRIu64 " used %" PRIu64 " dropped %" PRIu64,
	      st.taken, st.used, st.dropped);
	sym_free(s);
	sym_free(bare);
	exec_snaps_stop(es);
}

/* exec in the same pid: the new image wins, the old one still resolves. */
static void test_exec(void)
{
	char *argv[] = { path_of("target-g"), "--exec", path_of("target-O2"), NULL };
	struct symbolizer *s = new_sym(0);
	struct addr_line before, after;
	const struct addr_line *a;
	struct sym_frame f[4];
	struct child c;
	bool ok;
	int n;

	ok = spawn(&c, argv) && (a = find_addr(&c, "static_func"));
	if (!check("exec: spawn", ok, "failed")) {
		sym_free(s);
		return;
	}
	before = *a;
	sym_process_exec(s, (uint32_t)c.pid);
	c.nr_addrs = 0;
	ok = write(c.in, "exec\n", 5) == 5 && read_until_ready(&c) &&
	     (a = find_addr(&c, "static_func"));
	if (!check("exec: re-exec", ok, "failed")) {
		finish(&c);
		sym_free(s);
		return;
	}
	after = *a;
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	sym_process_exit(s, (uint32_t)c.pid);
	n = sym_resolve_user(s, (uint32_t)c.pid, after.addr, false, f, 4);
	check("exec: new image resolves", n == 1 && !strcmp(str(f[0].function), "static_func") &&
	      ends_with(f[0].module, "/target-O2"), "got %s in %s",
	      str(f[0].function), str(f[0].module));
	n = sym_resolve_user(s, (uint32_t)c.pid, before.addr, false, f, 4);
	check("exec: samples of the old image still resolve", n == 1 &&
	      !strcmp(str(f[0].function), "static_func") && ends_with(f[0].module, "/target-g"),
	      "got %s in %s", str(f[0].function), str(f[0].module));
	sym_free(s);
}

static void test_deleted(const char *tmp)
{
	char exe[4096], lib[4096];
	char *argv[] = { exe, NULL };
	const struct addr_line *a;
	struct sym_frame f[4];
	struct symbolizer *s = new_sym(0);
	struct child c;
	int n;

	snprintf(exe, sizeof(exe), "%s/target-del", tmp);
	snprintf(lib, sizeof(lib), "%s/libsymtest.so", tmp);
	if (!check("deleted: setup", copy_file(path_of("target-g"), exe, -1) &&
		   copy_file(path_of("libsymtest.so"), lib, -1) && spawn(&c, argv),
		   "copy/spawn failed")) {
		sym_free(s);
		return;
	}
	unlink(exe);
	unlink(lib);
	sym_process_exec(s, (uint32_t)c.pid);	/* maps say "(deleted)" */
	finish(&c);
	a = find_addr(&c, "static_func");
	n = a ? sym_resolve_user(s, (uint32_t)c.pid, a->addr, false, f, 4) : 0;
	check("deleted: executable resolves", n == 1 && f[0].function &&
	      !strcmp(f[0].function, "static_func") && f[0].line == (uint32_t)a->line &&
	      !strcmp(str(f[0].module), exe),
	      "got %s line %u module %s", n ? str(f[0].function) : "-",
	      n ? f[0].line : 0, n ? str(f[0].module) : "-");
	a = find_addr(&c, "symlib_ret");
	n = a ? sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, f, 4) : 0;
	check("deleted: library resolves", n == 1 && f[0].function &&
	      !strcmp(f[0].function, "symlib_func"), "got %s",
	      n ? str(f[0].function) : "-");
	sym_free(s);
}

/*
 * A chrooted target, stripped, its .gnu_debuglink file next to it inside
 * the root, and its libraries from the root's /lib (not the host's).
 */
static void test_chroot(const char *tmp)
{
	static const char *const libs[] = { "/lib/x86_64-linux-gnu/libc.so.6",
					    "/lib64/ld-linux-x86-64.so.2" };
	char root[4000], app[4100], cmd[40000];
	char *argv[] = { "/usr/sbin/chroot", root, "/opt/app/target-dbglink", NULL };
	struct symbolizer *s = new_sym(0);
	const struct addr_line *a;
	struct sym_frame f[4];
	struct child c;
	bool ok;
	int n;

	snprintf(root, sizeof(root), "%s/root", tmp);
	snprintf(app, sizeof(app), "%s/opt/app", root);
	/* No /proc in the root: $ORIGIN cannot work, the library goes to /lib. */
	snprintf(cmd, sizeof(cmd), "mkdir -p %.4000s %.4000s/lib/x86_64-linux-gnu %.4000s/lib64 && "
		 "cp %.4000s %.4000s %.4000s/ && cp %.4000s %.100s %.4000s/lib/x86_64-linux-gnu/ && "
		 "cp %.100s %.4000s/lib64/",
		 app, root, root, path_of("target-dbglink"), path_of("target-dbglink.debug"),
		 app, path_of("libsymtest.so"), libs[0], root, libs[1], root);
	ok = access(libs[0], R_OK) == 0 && access(libs[1], R_OK) == 0 &&
	     access(argv[0], X_OK) == 0 && geteuid() == 0;
	if (!ok) {
		skip("chroot", "needs root, chroot, %s and %s", libs[0], libs[1]);
		sym_free(s);
		return;
	}
	if (!check("chroot: setup", system(cmd) == 0 && spawn(&c, argv), "%s", cmd)) {
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	a = find_addr(&c, "static_func");
	n = a ? sym_resolve_user(s, (uint32_t)c.pid, a->addr, false, f, 4) : 0;
	check("chroot: debuglink and libraries inside the root", n == 1 &&
	      !strcmp(str(f[0].function), "static_func") && f[0].line == (uint32_t)a->line &&
	      ends_with(f[0].module, "/opt/app/target-dbglink"),
	      "got %s line %u module %s", n ? str(f[0].function) : "-",
	      n ? f[0].line : 0, n ? str(f[0].module) : "-");
	a = find_addr(&c, "symlib_ret");
	n = a ? sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, f, 4) : 0;
	check("chroot: library copy inside the root", n == 1 &&
	      !strcmp(str(f[0].function), "symlib_func") &&
	      ends_with(f[0].module, "/root/lib/x86_64-linux-gnu/libsymtest.so"),
	      "got %s in %s", n ? str(f[0].function) : "-", n ? str(f[0].module) : "-");
	sym_free(s);
}

static void test_corrupt_mapped(const char *tmp)
{
	static const off_t lens[] = { 64, 100, 700, 4096, 6000 };
	char files[8][4096];
	char *argv[24];
	struct symbolizer *s = new_sym(0);
	struct sym_frame f[4];
	struct child c;
	int argc = 0, nf = 0;
	bool ok = true;

	argv[argc++] = path_of("target-g");
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++, nf++) {
		snprintf(files[nf], sizeof(files[nf]), "%s/trunc-%lld.so", tmp,
			 (long long)lens[i]);
		ok &= copy_file(path_of("libsymtest.so"), files[nf], lens[i]);
		argv[argc++] = "--map";
		argv[argc++] = files[nf];
	}
	/* Valid ELF header, garbage program and section header tables. */
	snprintf(files[nf], sizeof(files[nf]), "%s/garbage.so", tmp);
	ok &= copy_file(path_of("libsymtest.so"), files[nf], -1);
	{
		int fd = open(files[nf], O_RDWR);
		unsigned char junk[512];

		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (unsigned char)(i * 151 + 7);
		ok &= fd >= 0 && pwrite(fd, junk, sizeof(junk), 64) == (ssize_t)sizeof(junk);
		if (fd >= 0)
			close(fd);
	}
	argv[argc++] = "--map";
	argv[argc++] = files[nf++];
	argv[argc] = NULL;
	if (!check("truncated ELF: setup", ok && spawn(&c, argv), "failed")) {
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	for (int i = 0; i < c.nr_mapped && i < nf; i++) {
		int n = sym_resolve_user(s, (uint32_t)c.pid, c.mapped[i], false, f, 4);

		if (n != 1 || f[0].module_offset != 0x40 ||
		    strcmp(str(f[0].module), files[i]))
			ok = false;
	}
	check("truncated/corrupt ELF mapped: no crash, file+offset",
	      ok && c.nr_mapped == nf, "mapped %d of %d", c.nr_mapped, nf);
	sym_free(s);
}

/* Random corruption straight into the ELF layer: must never crash. */
static void test_fuzz(const char *tmp)
{
	static const char *const inputs[] = { "libsymtest.so", "target-O2" };
	struct sym_strings *strs = sym_strings_new();
	struct sym_elf_ctx ctx = { .debug_dirs = "/nonexistent", .strings = strs };
	/* SYM_FUZZ_RUNS: more iterations for a longer hunt by hand. */
	int per_input = getenv("SYM_FUZZ_RUNS") ? atoi(getenv("SYM_FUZZ_RUNS")) : 150;
	unsigned int seed = getenv("SYM_FUZZ_SEED") ? (unsigned)atoi(getenv("SYM_FUZZ_SEED")) : 12345;
	int runs = 0, resolved = 0;
	char path[4096];

	snprintf(path, sizeof(path), "%s/fuzz.elf", tmp);
	for (size_t in = 0; in < 2; in++) {
		struct stat st;
		char *orig;
		int fd = open(path_of(inputs[in]), O_RDONLY);

		if (fd < 0 || fstat(fd, &st) < 0)
			break;
		orig = malloc((size_t)st.st_size);
		if (!orig || read(fd, orig, (size_t)st.st_size) != st.st_size) {
			free(orig);
			close(fd);
			break;
		}
		close(fd);
		for (int it = 0; it < per_input; it++, runs++) {
			struct sym_origin origin = {
				"", path, { geteuid(), SAFE_ANY_OWNER } };
			struct sym_file file = { 0 };
			struct sym_elf se = { 0 };
			struct sym_frame fr[8];
			size_t len = (size_t)st.st_size;
			char *buf = malloc(len);
			int flips = 1 + rand_r(&seed) % 32;

			memcpy(buf, orig, len);
			for (int k = 0; k < flips; k++) {
				/* Mostly the headers and tables, sometimes anywhere. */
				size_t at = rand_r(&seed) % 4 ? rand_r(&seed) % (len < 8192 ? len : 8192)
							     : rand_r(&seed) % len;

				buf[at] = (char)rand_r(&seed);
			}
			if (it % 5 == 0)
				len = (size_t)rand_r(&seed) % len;
			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
				free(buf);
				if (fd >= 0)
					close(fd);
				continue;
			}
			close(fd);
			free(buf);
			sym_file_open_fd(&file, open(path, O_RDONLY), &origin, &ctx);
			if (file.elf) {
				sym_elf_load(&se, &file, &ctx);
				for (uint64_t a = 0; a < 0x20000; a += 0x101)
					resolved += sym_elf_resolve(&se, &ctx, a, fr, 8) > 0;
				sym_elf_unload(&se);
			}
			sym_file_close(&file);
		}
		free(orig);
	}
	unlink(path);
	sym_strings_free(strs);
	check("fuzzed ELF/DWARF input: no crash", runs == 2 * per_input, "%d runs", runs);
	printf("# fuzz: %d corrupt files, %d lookups found something\n", runs, resolved);
}

static void test_memfd(void)
{
	char *argv[] = { path_of("target-g"), "--memfd", path_of("libsymtest.so"), NULL };
	struct symbolizer *s = new_sym(0);
	const struct addr_line *a;
	struct sym_frame f[4];
	struct child c;
	int n;

	if (!check("memfd: spawn", spawn(&c, argv) && (a = find_addr(&c, "memfd_func")),
		   "failed")) {
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	n = sym_resolve_user(s, (uint32_t)c.pid, a->addr, false, f, 4);
	check("memfd: library loaded from a memfd resolves",
	      n == 1 && !strcmp(str(f[0].function), "symlib_func") &&
	      !strcmp(str(f[0].module), "/memfd:symtest") && f[0].module_offset == a->fileoff,
	      "got %s in %s +0x%" PRIx64, str(f[0].function), str(f[0].module),
	      f[0].module_offset);
	sym_free(s);
}

static void test_jit(void)
{
	char *argv[] = { path_of("target-g"), "--jit", "jitted_fn", NULL };
	struct symbolizer *s = new_sym(0);
	struct sym_frame f[2];
	struct child c;
	char map[64], want[64];
	int n;

	if (!check("jit: spawn", spawn(&c, argv) && c.jit_addr, "failed")) {
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	sym_process_exit(s, (uint32_t)c.pid);
	n = sym_resolve_user(s, (uint32_t)c.pid, c.jit_addr, false, f, 2);
	snprintf(want, sizeof(want), "/tmp/perf-%d.map", c.pid);
	check("jit: perf map symbol", n == 1 && f[0].kind == SYM_FRAME_JIT &&
	      !strcmp(str(f[0].function), "jitted_fn") && !strcmp(str(f[0].module), want),
	      "got %s kind %d module %s", str(f[0].function), f[0].kind, str(f[0].module));
	n = sym_resolve_user(s, (uint32_t)c.pid, c.jit_addr + 0x1000, false, f, 2);
	check("jit: outside the map is unknown", n == 1 && f[0].kind == SYM_FRAME_UNKNOWN &&
	      !f[0].function, "got %s", str(f[0].function));
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", c.pid);
	unlink(map);
	sym_free(s);
}

static void test_cxx(void)
{
	char *argv[] = { path_of("cxx"), NULL };
	static const char *const want[][2] = {
		{ "method", "ns::Klass::method(int)" },
		{ "twice", "long ns::twice<long>(long)" },
	};
	struct symbolizer *s = new_sym(0);
	struct sym_frame f[4];
	struct child c;

	if (!check("c++: spawn", spawn(&c, argv), "failed")) {
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	for (int i = 0; i < 2; i++) {
		const struct addr_line *a = find_addr(&c, want[i][0]);
		int n = a ? sym_resolve_user(s, (uint32_t)c.pid, a->addr, true, f, 4) : 0;
		char t[64];

		snprintf(t, sizeof(t), "c++: demangled %s", want[i][0]);
		check(t, n >= 1 && !strcmp(str(f[n - 1].function), want[i][1]),
		      "got %s, want %s", n ? str(f[n - 1].function) : "-", want[i][1]);
	}
	sym_free(s);
}

static void test_demangle(void)
{
	static const char *const cases[][2] = {
		{ "_ZN2ns5Klass6methodEi", "ns::Klass::method(int)" },
		{ "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write" },
		{ "_RNvCs15kBYyAo9fc_7mycrate3foo", "mycrate::foo" },
		{ "main", NULL },
		{ "_Z", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = sym_demangle(cases[i][0]);
		char t[96];

		snprintf(t, sizeof(t), "demangle %s", cases[i][0]);
		check(t, cases[i][1] ? d && !strcmp(d, cases[i][1]) : !d,
		      "got %s, want %s", str(d), str(cases[i][1]));
		free(d);
	}
}

/* Run by the suite with DEBUGINFOD_URLS naming a server of dinfod/. */
static void test_debuginfod(void)
{
	char *argv[] = { path_of("target-dinfod"), NULL };
	struct sym_options o = { .debug_dirs = "/nonexistent" };
	const struct addr_line *a;
	struct symbolizer *off, *on;
	struct sym_frame f[4];
	struct child c;
	int n;

	if (!check("debuginfod: spawn", spawn(&c, argv) &&
		   (a = find_addr(&c, "static_func")), "failed"))
		return;
	off = sym_new(&o);
	o.use_debuginfod = true;
	on = sym_new(&o);
	sym_process_exec(off, (uint32_t)c.pid);
	sym_process_exec(on, (uint32_t)c.pid);
	finish(&c);
	n = sym_resolve_user(off, (uint32_t)c.pid, a->addr, false, f, 4);
	check("debuginfod: not consulted unless enabled", n == 1 && !f[0].function,
	      "got %s", str(f[0].function));
	n = sym_resolve_user(on, (uint32_t)c.pid, a->addr, false, f, 4);
	check("debuginfod: debug file fetched by build-id", n == 1 &&
	      !strcmp(str(f[0].function), "static_func") && f[0].line == (uint32_t)a->line,
	      "got %s line %u", str(f[0].function), f[0].line);
	sym_free(off);
	sym_free(on);
}

/*
 * With a tiny DWARF cap the debug file (12 KB) is more than ember would
 * use: it must not be downloaded, whether the server honours
 * X-DEBUGINFOD-MAXSIZE (debuginfod: 406) or not (a plain HTTP server: the
 * transfer is stopped). Nothing is kept in DEBUGINFOD_CACHE_PATH.
 */
static void test_debuginfod_capped(const char *server)
{
	char *argv[] = { path_of("target-dinfod"), NULL };
	struct sym_options o = { .debug_dirs = "/nonexistent", .use_debuginfod = true,
				 .dwarf_max_bytes = 1024 };
	const char *cache = getenv("DEBUGINFOD_CACHE_PATH");
	const struct addr_line *a;
	struct symbolizer *s;
	struct sym_frame f[4];
	char t[128], path[4096];
	struct stat st;
	struct child c;
	bool kept;
	int n;

	snprintf(t, sizeof(t), "debuginfod capped (%s): spawn", server);
	if (!check(t, cache && spawn(&c, argv) && (a = find_addr(&c, "static_func")),
		   "failed (DEBUGINFOD_CACHE_PATH set?)"))
		return;
	s = sym_new(&o);
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	n = sym_resolve_user(s, (uint32_t)c.pid, a->addr, false, f, 4);
	snprintf(path, sizeof(path), "%s/%s/debuginfo", cache, n ? str(f[0].build_id) : "");
	snprintf(t, sizeof(t), "debuginfod capped (%s): larger file not downloaded", server);
	/* (an empty file there is libdebuginfod's mark of a failed query) */
	kept = stat(path, &st) == 0 && st.st_size > 0;
	check(t, n == 1 && f[0].build_id && !kept, "%s is there (%lld bytes)",
	      path, kept ? (long long)st.st_size : 0);
	sym_free(s);
}

/* DEBUGINFOD_URLS names a dead server: fail fast, then stop asking. */
static void test_debuginfod_down(void)
{
	char *argv[] = { path_of("target-dinfod"), NULL };
	struct sym_options o = { .debug_dirs = "/nonexistent", .use_debuginfod = true };
	struct symbolizer *s = sym_new(&o);
	struct sym_frame f[4];
	struct timespec t0, t1;
	struct child c;
	int unresolved = 0;

	if (!check("debuginfod down: spawn", spawn(&c, argv), "failed")) {
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < c.nr_addrs; i++) {
		sym_resolve_user(s, (uint32_t)c.pid, c.addrs[i].addr, c.addrs[i].is_return, f, 4);
		unresolved += !strcmp(c.addrs[i].name, "static_func") && !f[0].function;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	check("debuginfod down: lookups do not hang", unresolved == 1 &&
	      t1.tv_sec - t0.tv_sec < 10, "%ld s", (long)(t1.tv_sec - t0.tv_sec));
	sym_free(s);
}

/* -------------------------------------------------------------- others */

static void test_maps_parse(void)
{
	struct sym_map_line m;
	char l1[] = "7f0000001000-7f0000002000 r-xp 00003000 fd:01 1234    /usr/lib/my lib.so (deleted)\n";
	char l2[] = "7ffd1000-7ffd3000 r-xp 00000000 00:00 0                  [vdso]\n";
	char l3[] = "7f00-8f00 rwxp 00000000 00:00 0 \n";
	char l4[] = "7f0000-7f1000 r-xp 00000000 00:01 77 /memfd:jit (deleted)\n";
	char l5[] = "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n";
	char l6[] = "garbage\n";

	check("maps: deleted path with spaces", sym_maps_parse_line(l1, &m) &&
	      m.start == 0x7f0000001000ull && m.end == 0x7f0000002000ull &&
	      m.pgoff == 0x3000 && m.ino == 1234 && m.exec && m.deleted &&
	      m.type == SYM_MAP_FILE && m.path_len == strlen("/usr/lib/my lib.so") &&
	      !strncmp(m.path, "/usr/lib/my lib.so", m.path_len), "bad parse");
	check("maps: vdso", sym_maps_parse_line(l2, &m) && m.type == SYM_MAP_VDSO,
	      "type %d", m.type);
	check("maps: anonymous", sym_maps_parse_line(l3, &m) && m.type == SYM_MAP_ANON &&
	      m.exec, "type %d", m.type);
	check("maps: memfd", sym_maps_parse_line(l4, &m) && m.type == SYM_MAP_MEMFD &&
	      m.deleted, "type %d", m.type);
	check("maps: vsyscall", sym_maps_parse_line(l5, &m) &&
	      m.type == SYM_MAP_VSYSCALL && m.exec, "type %d", m.type);
	check("maps: malformed rejected", !sym_maps_parse_line(l6, &m), "accepted");
}

/* Independent vdso lookup: symbol value -> our address via its PT_LOAD. */
static uint64_t vdso_addr_of(const char *want, const char **found)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	Elf *e;
	Elf_Scn *scn = NULL;
	uint64_t res = 0, load_off = 0, load_vaddr = 0;
	size_t phnum;

	if (!base)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_memory((char *)base, 1 << 16);	/* headers only are read */
	if (!e || elf_getphdrnum(e, &phnum))
		return 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			load_off = ph.p_offset;
			load_vaddr = ph.p_vaddr;
			break;
		}
	}
	while ((scn = elf_nextscn(e, scn)) && !res) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym))
				break;
			n = elf_strptr(e, sh.sh_link, sym.st_name);
			if (n && strstr(n, want) && sym.st_value) {
				res = base + sym.st_value - load_vaddr + load_off + 2;
				*found = n;
				break;
			}
		}
	}
	elf_end(e);
	return res;
}

static void test_vdso(void)
{
	struct symbolizer *s = new_sym(0);
	struct sym_frame f[2];
	const char *name = NULL;
	uint64_t a = vdso_addr_of("clock_gettime", &name);
	int n;

	if (!a) {
		skip("vdso", "no vdso in this process");
		sym_free(s);
		return;
	}
	n = sym_resolve_user(s, (uint32_t)getpid(), a, false, f, 2);
	check("vdso: symbol", n == 1 && f[0].function &&
	      strstr(f[0].function, "clock_gettime") && !strcmp(str(f[0].module), "[vdso]"),
	      "got %s in %s", str(f[0].function), str(f[0].module));
	sym_free(s);
}

static bool write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

static long rss_kb(const char *field);

static void test_kernel(const char *tmp)
{
	struct symbolizer *s = new_sym(0);
	struct sym_frame f[2];
	char path[4096], line[512];
	uint64_t sched = 0;
	FILE *k;
	int n;

	/* The real kernel: the address of schedule() from kallsyms. */
	k = fopen("/proc/kallsyms", "r");
	while (k && fgets(line, sizeof(line), k)) {
		unsigned long long a;
		char type, name[256];

		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 &&
		    !strcmp(name, "schedule") && strchr("tT", type)) {
			sched = a;
			break;
		}
	}
	if (k)
		fclose(k);
	if (!sched) {
		skip("kernel: /proc/kallsyms schedule", "hidden or absent (not root?)");
	} else {
		n = sym_resolve_kernel(s, sched + 4, f, 2);
		check("kernel: /proc/kallsyms schedule", n == 1 &&
		      f[0].kind == SYM_FRAME_KERNEL &&
		      !strcmp(str(f[0].function), "schedule") &&
		      !strcmp(str(f[0].module), "[kernel.kallsyms]"),
		      "got %s in %s", str(f[0].function), str(f[0].module));
	}
	sym_free(s);

	/* A made-up kallsyms with a module. */
	snprintf(path, sizeof(path), "%s/kallsyms", tmp);
	write_text(path,
		   "ffffffff81000000 T _text\n"
		   "ffffffff81000100 T start_kernel\n"
		   "ffffffff81000200 t helper\n"
		   "ffffffff81000300 D some_data\n"
		   "ffffffff81000400 T _etext\n"
		   "ffffffffc0001000 t mod_fn\t[mymod]\n"
		   "ffffffffc0001100 T mod_other\t[mymod]\n"
		   "broken line\n");
	s = new_sym(0);
	sym_set_kallsyms_path(s, path);
	n = sym_resolve_kernel(s, 0xffffffff81000250ull, f, 2);
	check("kernel: nearest text symbol", n == 1 && !strcmp(str(f[0].function), "helper") &&
	      !strcmp(str(f[0].module), "[kernel.kallsyms]") && f[0].module_offset == 0x250,
	      "got %s %s +%" PRIx64, str(f[0].function), str(f[0].module), f[0].module_offset);
	n = sym_resolve_kernel(s, 0xffffffff81000350ull, f, 2);
	check("kernel: data symbols do not cut functions", !strcmp(str(f[0].function), "helper"),
	      "got %s", str(f[0].function));
	n = sym_resolve_kernel(s, 0xffffffffc0001010ull, f, 2);
	check("kernel: module symbol", n == 1 && !strcmp(str(f[0].function), "mod_fn") &&
	      !strcmp(str(f[0].module), "[mymod]") && f[0].module_offset == 0x10,
	      "got %s %s", str(f[0].function), str(f[0].module));
	n = sym_resolve_kernel(s, 0xffffffff80000000ull, f, 2);
	check("kernel: below every symbol is an address", n == 1 && !f[0].function &&
	      f[0].kind == SYM_FRAME_KERNEL &&
	      !strcmp(sym_frame_name(s, f), "0xffffffff80000000"), "got %s",
	      sym_frame_name(s, f));
	sym_free(s);

	/*
	 * A line without end (200 MB of NUL bytes, a hole) between two
	 * symbols: skipped in bounded memory, what follows still read.
	 */
	{
		static const char head[] = "ffffffff81000000 T _text\n";
		static const char tail[] = "\nffffffff81000200 t after_hole\n"
					   "ffffffff81000400 T _etext\n";
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), c;
		long hwm;
		bool ok = fd >= 0 &&
			write(fd, head, sizeof(head) - 1) == sizeof(head) - 1 &&
			lseek(fd, 200 << 20, SEEK_CUR) > 0 &&
			write(fd, tail, sizeof(tail) - 1) == sizeof(tail) - 1;

		if (fd >= 0)
			close(fd);
		/* "5": the peak RSS starts again from here */
		c = open("/proc/self/clear_refs", O_WRONLY);
		ok = ok && c >= 0 && write(c, "5", 1) == 1;
		if (c >= 0)
			close(c);
		hwm = rss_kb("VmHWM:");
		s = new_sym(0);
		sym_set_kallsyms_path(s, path);
		n = sym_resolve_kernel(s, 0xffffffff81000210ull, f, 2);
		hwm = rss_kb("VmHWM:") - hwm;
		check("kernel: a line without end is skipped in bounded memory",
		      ok && n == 1 && !strcmp(str(f[0].function), "after_hole") &&
		      hwm < 32 * 1024, "got %s, peak RSS +%ld KiB", str(f[0].function),
		      hwm);
		sym_free(s);
	}

	/* kptr_restrict: every address zero. */
	write_text(path, "0000000000000000 T _text\n0000000000000000 T schedule\n");
	s = new_sym(0);
	sym_set_kallsyms_path(s, path);
	fprintf(stderr, "(expected warning follows)\n");
	n = sym_resolve_kernel(s, 0xffffffff81000250ull, f, 2);
	check("kernel: hidden addresses detected", n == 1 && !f[0].function &&
	      !strcmp(sym_frame_name(s, f), "0xffffffff81000250"), "got %s",
	      sym_frame_name(s, f));
	{
		struct sym_kernel *kk = sym_kernel_load(path);

		check("kernel: hidden flag", kk && sym_kernel_hidden(kk), "not hidden");
		sym_kernel_free(kk);
	}
	sym_free(s);
	unlink(path);
}

static void test_sharing_and_sweep(void)
{
	char *a1[] = { path_of("target-g"), NULL }, *a2[] = { path_of("target-O2"), NULL };
	struct symbolizer *s = new_sym(0);
	struct sym_stats st1, st2, st3;
	struct child c1, c2;

	if (!check("cache: spawn", spawn(&c1, a1), "failed")) {
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c1.pid);
	sym_get_stats(s, &st1);
	if (!spawn(&c2, a2)) {
		finish(&c1);
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c2.pid);
	sym_get_stats(s, &st2);
	/* libc, ld.so, libsymtest.so, vdso shared: only target-O2 is new. */
	check("cache: shared libraries opened once", st2.elf_files_open == st1.elf_files_open + 1,
	      "%" PRIu64 " files after the first process, %" PRIu64 " after the second",
	      st1.elf_files_open, st2.elf_files_open);
	finish(&c1);
	finish(&c2);
	sym_process_exit(s, (uint32_t)c1.pid);
	sym_process_exit(s, (uint32_t)c2.pid);
	sym_get_stats(s, &st2);
	sym_sweep(s);
	sym_get_stats(s, &st3);
	check("sweep: exited processes dropped after sweep",
	      st2.processes == 2 && st3.processes == 0 &&
	      st3.elf_files_open <= 1 /* the vdso stays */,
	      "processes %u -> %u, files %" PRIu64, st2.processes, st3.processes,
	      st3.elf_files_open);
	sym_free(s);
}

/* ------------------------------------------------------ bench and bound */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static long rss_kb(const char *field)
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

/* n addresses spread over this process's executable file mappings. */
static size_t pick_addresses(uint64_t *out, size_t n)
{
	struct { uint64_t start, end; } maps[256];
	size_t nm = 0, total = 0;
	char line[4200];
	FILE *f = fopen("/proc/self/maps", "r");
	const char *only = getenv("SYM_BENCH_ONLY");
	unsigned int seed = 42;

	while (f && fgets(line, sizeof(line), f) && nm < 256) {
		struct sym_map_line m;

		/* SYM_BENCH_ONLY=substring limits the bench to matching files. */
		if (sym_maps_parse_line(line, &m) && m.exec && m.type == SYM_MAP_FILE &&
		    (!only || memmem(m.path, m.path_len, only, strlen(only)))) {
			maps[nm].start = m.start;
			maps[nm].end = m.end;
			total += m.end - m.start;
			nm++;
		}
	}
	if (f)
		fclose(f);
	if (!nm)
		return 0;
	for (size_t i = 0; i < n; i++) {
		size_t k = i % nm;

		out[i] = maps[k].start + (uint64_t)rand_r(&seed) % (maps[k].end - maps[k].start);
	}
	return n;
}

struct bench_result {
	double cold, warm;
	size_t resolved;
	struct sym_stats st;
};

static void bench_run(size_t budget, const uint64_t *addrs, size_t n,
		      char **names, struct bench_result *r)
{
	struct symbolizer *s = new_sym(budget);
	struct sym_frame f[16];
	double t0;

	memset(r, 0, sizeof(*r));
	t0 = now_s();
	sym_process_touch(s, (uint32_t)getpid());
	for (size_t i = 0; i < n; i++) {
		int k = sym_resolve_user(s, (uint32_t)getpid(), addrs[i], true, f, 16);

		if (f[k - 1].function)
			r->resolved++;
		else if (getenv("SYM_BENCH_VERBOSE"))
			printf("# unresolved 0x%" PRIx64 ": %s\n", addrs[i], sym_frame_name(s, &f[k - 1]));
		/* Copies: the interned strings die with the symbolizer. */
		if (names)
			names[i] = f[k - 1].function ? strdup(f[k - 1].function) : NULL;
	}
	r->cold = now_s() - t0;
	t0 = now_s();
	for (size_t i = 0; i < n; i++)
		sym_resolve_user(s, (uint32_t)getpid(), addrs[i], true, f, 16);
	r->warm = now_s() - t0;
	sym_get_stats(s, &r->st);
	sym_free(s);
}

static int bench(size_t n)
{
	uint64_t *addrs = calloc(n, sizeof(*addrs));
	struct bench_result r;
	long rss0 = rss_kb("VmRSS:");

	if (!addrs || pick_addresses(addrs, n) != n)
		return 1;
	bench_run(0, addrs, n, NULL, &r);
	printf("bench: %zu addresses in %u files: cold %.3f s, warm %.3f s, "
	       "%zu resolved, cache %zu KiB, RSS %ld -> %ld KiB (peak %ld)\n",
	       n, (unsigned)r.st.elf_files_open, r.cold, r.warm, r.resolved,
	       r.st.cache_bytes / 1024, rss0, rss_kb("VmRSS:"), rss_kb("VmHWM:"));
	free(addrs);
	return 0;
}

/* What a system-wide profile does first: read every process's maps. */
static int bench_touch_all(void)
{
	struct symbolizer *s = new_sym(0);
	struct sym_stats st;
	struct dirent *de;
	double t0 = now_s();
	DIR *d = opendir("/proc");
	long rss0 = rss_kb("VmRSS:");
	int n = 0;

	while (d && (de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (*end || !pid)
			continue;
		sym_process_touch(s, (uint32_t)pid);
		n++;
	}
	if (d)
		closedir(d);
	sym_get_stats(s, &st);
	printf("touch-all: %d processes in %.3f s, %" PRIu64 " ELF files, cache %zu KiB, "
	       "RSS %ld -> %ld KiB (anon %ld, file %ld)\n", n, now_s() - t0,
	       st.elf_files_open, st.cache_bytes / 1024, rss0, rss_kb("VmRSS:"),
	       rss_kb("RssAnon:"), rss_kb("RssFile:"));
	sym_free(s);
	return 0;
}

/*
 * sym_trim() between lookups drops DWARF state and resets the images it
 * came from (compressed sections are decompressed again from a fresh
 * Elf): every address resolves to the same frames before and after.
 */
static void test_trim(const char *name)
{
	char *argv[] = { path_of(name), NULL };
	struct sym_frame f[8], g[8];
	struct symbolizer *s = new_sym(0);
	int lines = 0, differ = 0, n, m;
	struct child c;
	char t[160];

	snprintf(t, sizeof(t), "trim %s: spawn", name);
	if (!check(t, s && spawn(&c, argv), "cannot run %s", argv[0])) {
		sym_free(s);
		return;
	}
	sym_process_exec(s, (uint32_t)c.pid);
	finish(&c);
	sym_process_exit(s, (uint32_t)c.pid);
	for (int i = 0; i < c.nr_addrs; i++) {
		const struct addr_line *x = &c.addrs[i];

		n = sym_resolve_user(s, (uint32_t)c.pid, x->addr, x->is_return, f, 8);
		sym_trim(s);
		m = sym_resolve_user(s, (uint32_t)c.pid, x->addr, x->is_return, g, 8);
		sym_trim(s);
		if (n != m) {
			differ++;
			continue;
		}
		for (int k = 0; k < n; k++) {
			/* interned: equal strings are equal pointers */
			differ += f[k].function != g[k].function || f[k].line != g[k].line ||
				  f[k].source_file != g[k].source_file ||
				  f[k].inlined != g[k].inlined;
			lines += f[k].line > 0;
		}
	}
	snprintf(t, sizeof(t), "trim %s: same frames, lines included, after sym_trim", name);
	check(t, c.nr_addrs > 0 && !differ && lines >= c.nr_addrs / 2,
	      "%d of %d addresses differ, %d frames with lines", differ, c.nr_addrs, lines);
	sym_free(s);
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/*
 * The function index outlives sym_trim() (the DWARF is opened again at
 * the next lookup, the index is not rebuilt): each address looked up
 * first after a trim resolves as it does without trims.
 */
static void test_trim_index(const char *name)
{
	char *argv[] = { path_of(name), NULL };
	struct sym_frame f[8], g[8];
	struct symbolizer *s = new_sym(0), *ref = new_sym(0);
	int lines = 0, differ = 0, n, m;
	struct child c;
	char t[160];

	snprintf(t, sizeof(t), "trim index %s: spawn", name);
	if (!check(t, s && ref && spawn(&c, argv), "cannot run %s", argv[0])) {
		sym_free(s);
		sym_free(ref);
		return;
	}
	sym_process_exec(s, (uint32_t)c.pid);
	sym_process_exec(ref, (uint32_t)c.pid);
	finish(&c);
	sym_process_exit(s, (uint32_t)c.pid);
	sym_process_exit(ref, (uint32_t)c.pid);
	for (int i = 0; i < c.nr_addrs; i++) {
		const struct addr_line *x = &c.addrs[i];

		n = sym_resolve_user(ref, (uint32_t)c.pid, x->addr, x->is_return, f, 8);
		m = sym_resolve_user(s, (uint32_t)c.pid, x->addr, x->is_return, g, 8);
		/* the first keeps DWARF used since the last; the second drops it */
		sym_trim(s);
		sym_trim(s);
		if (n != m) {
			differ++;
			continue;
		}
		for (int k = 0; k < n; k++) {
			/* two symbolizers: two string tables */
			differ += !same_str(f[k].function, g[k].function) ||
				  f[k].line != g[k].line ||
				  !same_str(f[k].source_file, g[k].source_file) ||
				  f[k].inlined != g[k].inlined;
			lines += f[k].line > 0;
		}
	}
	snprintf(t, sizeof(t), "trim index %s: first lookups after sym_trim resolve as without", name);
	check(t, c.nr_addrs > 1 && !differ && lines >= c.nr_addrs / 2,
	      "%d of %d addresses differ, %d frames with lines", differ, c.nr_addrs, lines);
	sym_free(s);
	sym_free(ref);
}

static void test_bound(void)
{
	enum { N = 3000 };
	static uint64_t addrs[N];
	static char *a[N], *b[N];
	struct bench_result big, small;
	size_t diff = 0, budget = 256 * 1024;

	if (pick_addresses(addrs, N) != N) {
		check("memory bound", false, "no mappings");
		return;
	}
	bench_run(0, addrs, N, a, &big);
	bench_run(budget, addrs, N, b, &small);
	for (size_t i = 0; i < N; i++) {
		diff += a[i] != b[i] && (!a[i] || !b[i] || strcmp(a[i], b[i]));
		free(a[i]);
		free(b[i]);
	}
	printf("# bound: unbounded cache %zu KiB, %zu KiB budget -> %zu KiB held\n",
	       big.st.cache_bytes / 1024, budget / 1024, small.st.cache_bytes / 1024);
	check("memory bound: small budget gives the same names", diff == 0 &&
	      big.resolved > N / 4, "%zu differ, %zu resolved", diff, big.resolved);
	check("memory bound: cache stays near its budget",
	      small.st.cache_bytes < big.st.cache_bytes &&
	      small.st.cache_bytes < budget + big.st.cache_bytes / 2,
	      "%zu bytes held with a %zu budget (unbounded %zu)",
	      small.st.cache_bytes, budget, big.st.cache_bytes);
	check("cold lookups under a second", big.cold < 1.0, "%.3f s for %d", big.cold, N);
	printf("# %d addresses: cold %.3f s, warm %.3f s\n", N, big.cold, big.warm);
}

int main(int argc, char **argv)
{
	static const struct variant variants[] = {
		{ "target-g", true, true },
		{ "target-O2", true, true },
		{ "target-nopie", true, true },
		{ "target-nog", true, false },
		{ "target-stripped", false, false },
		{ "target-dbglink", true, true },
		{ "target-buildid", true, true },
		{ "target-gz", true, true },
	};
	char tmp[] = "/tmp/ember-symtest.XXXXXX";

	if (argc < 2) {
		fprintf(stderr, "usage: %s BUILD_DIR [--bench N]\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[2], "--bench"))
		return bench((size_t)strtoul(argv[3], NULL, 0));
	if (argc == 3 && !strcmp(argv[2], "--touch-all"))
		return bench_touch_all();
	if (argc == 3 && !strcmp(argv[2], "--debuginfod-down")) {
		test_debuginfod_down();
		return failures ? 1 : 0;
	}
	if (argc == 4 && !strcmp(argv[2], "--debuginfod-capped")) {
		test_debuginfod_capped(argv[3]);
		return failures ? 1 : 0;
	}
	if (argc == 3 && !strcmp(argv[2], "--debuginfod")) {
		test_debuginfod();
		return failures ? 1 : 0;
	}
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	test_maps_parse();
	test_demangle();
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
		test_variant(&variants[i]);
	test_exec();
	test_exec_early();
	test_exec_late();
	test_no_dwarf();
	test_resolve_kept();
	test_deleted(tmp);
	test_chroot(tmp);
	test_corrupt_mapped(tmp);
	test_fuzz(tmp);
	test_jit();
	test_memfd();
	test_cxx();
	test_vdso();
	test_kernel(tmp);
	test_sharing_and_sweep();
	test_trim("target-gz");
	test_trim("target-dbglink");
	test_trim_index("target-gz");
	test_trim_index("target-dbglink");
	test_bound();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", tmp);
	}
	return failures ? 1 : 0;
}
