// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hostile JIT map files (issue 14's reproductions): a FIFO (the root agent
 * blocked forever in open), a symlink to /dev/zero (grew to 23.7 GB), to
 * /dev/urandom (never ended), a 1 GB sparse file (989 MB RSS), a line
 * without end, another user's file. Each must be refused or read within
 * bounds, quickly, with little memory; a good map still loads.
 *
 * Then safe_open_at() itself, with and without openat2: a container root
 * whose link points into ours, "..", /proc magic links, devices, sparse
 * files; safe_line() on lines without end, NUL bytes and budgets; and
 * safe_warn()'s limits.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/safe_file.h"
#include "symbolize/symbolize_internal.h"
#include "test_util.h"

static void on_alarm(int sig)
{
	(void)sig;
	printf("FAIL: safe_perfmap_no_hang: a load blocked for 10 s\n");
	_exit(1);
}

static long max_rss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static const struct safe_rules anyone = {
	.max_bytes = 16ull << 30,
	.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
	.flags = SAFE_ANYONE,
};

static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

/* fd >= 0 closes it; true when the open succeeded */
static bool opened(int fd)
{
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/*
 * A process's root (here a directory) where "abs" is a link to "/": the
 * plain /proc/PID/root/abs/... walk ends in our own tree. Inside the root
 * nothing may go through a link, nor use "..".
 */
static void test_in_root(const char *dir, bool walk)
{
	char root[256], p[1024], inside[512], t[128];
	const char *why = NULL;
	const char *mode = walk ? "walk" : "openat2";

	safe_file_no_openat2 = walk;
	snprintf(root, sizeof(root), "%s/root-%s", dir, mode);
	snprintf(p, sizeof(p), "%s/sub", root);
	mkdir(root, 0755);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sub/real.map", root);
	write_file(p, "1000 10 inside\n");
	snprintf(p, sizeof(p), "%s/sub/link.map", root);
	symlink("real.map", p);
	snprintf(p, sizeof(p), "%s/abs", root);
	symlink("/", p);
	snprintf(p, sizeof(p), "%s/ours.map", dir);
	write_file(p, "1000 10 ours\n");

	snprintf(t, sizeof(t), "safe_in_root_%s_plain_file", mode);
	T_CHECK(t, opened(safe_open_at(root, "/sub/real.map", &anyone, NULL, &why)),
		"refused: %s", why);
	/* the threat: the plain walk reaches our file through abs */
	snprintf(inside, sizeof(inside), "/abs%s/ours.map", dir);
	snprintf(p, sizeof(p), "%s%s", root, inside);
	snprintf(t, sizeof(t), "safe_in_root_%s_plain_open_escapes", mode);
	T_CHECK(t, opened(open(p, O_RDONLY)), "setup: %s not reached", p);
	why = NULL;
	snprintf(t, sizeof(t), "safe_in_root_%s_absolute_link_refused", mode);
	T_CHECK(t, !opened(safe_open_at(root, inside, &anyone, NULL, &why)) &&
		safe_refused(why), "opened %s inside %s (%s)", inside, root, why);
	why = NULL;
	snprintf(t, sizeof(t), "safe_in_root_%s_final_link_refused", mode);
	T_CHECK(t, !opened(safe_open_at(root, "/sub/link.map", &anyone, NULL, &why)) &&
		safe_refused(why), "opened a link (%s)", why);
	why = NULL;
	snprintf(t, sizeof(t), "safe_in_root_%s_dotdot_refused", mode);
	T_CHECK(t, !opened(safe_open_at(root, "/sub/../sub/real.map", &anyone, NULL,
					&why)) && safe_refused(why), "opened (%s)", why);
	why = NULL;
	snprintf(t, sizeof(t), "safe_in_root_%s_missing_is_quiet", mode);
	T_CHECK(t, !opened(safe_open_at(root, "/sub/none.map", &anyone, NULL, &why)) &&
		!safe_refused(why), "why: %s", why);
	safe_file_no_openat2 = false;
}

/* Our own first executable mapping: "start-end". */
static bool own_text_mapping(char *out, size_t len)
{
	char line[512], range[64], perms[8];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%63s %7s", range, perms) == 2 &&
			perms[2] == 'x' && strchr(line, '/');
	if (f)
		fclose(f);
	if (found)
		snprintf(out, len, "%s", range);
	return found;
}

static void test_links_devices_sparse(const char *dir)
{
	struct safe_rules follow = anyone;
	char range[64], p[256];
	const char *why = NULL;
	struct stat st;
	int fd;

	follow.flags |= SAFE_FOLLOW;
	if (own_text_mapping(range, sizeof(range))) {
		snprintf(p, sizeof(p), "/proc/self/map_files/%s", range);
		T_CHECK("safe_map_files_followed", opened(safe_open_at(NULL, p, &follow,
			NULL, &why)) || geteuid() != 0, "refused: %s", why);
		why = NULL;
		T_CHECK("safe_magic_link_not_followed_without_follow",
			!opened(safe_open_at(NULL, p, &anyone, NULL, &why)) &&
			safe_refused(why), "opened (%s)", why);
	}
	why = NULL;
	T_CHECK("safe_device_refused_unopened",
		!opened(safe_open_at(NULL, "/dev/null", &follow, NULL, &why)) &&
		safe_refused(why), "opened /dev/null (%s)", why);

	/* 4 GiB, one page of it written: an ELF header and holes */
	snprintf(p, sizeof(p), "%s/sparse.so", dir);
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	if (fd >= 0) {
		if (write(fd, "\177ELF", 4) != 4 || ftruncate(fd, 4ll << 30))
			T_CHECK("safe_sparse_setup", false, "cannot write %s", p);
		close(fd);
	}
	why = NULL;
	T_CHECK("safe_sparse_refused", !opened(safe_open_at(NULL, p, &anyone, &st, &why)) &&
		safe_refused(why), "opened a 4 GiB sparse file (%s)", why);
	unlink(p);
	/* as large, allocated (not written): a real file */
	snprintf(p, sizeof(p), "%s/big.so", dir);
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	if (fd >= 0 && posix_fallocate(fd, 0, SAFE_SPARSE_MIN + 4096) == 0) {
		close(fd);
		why = NULL;
		T_CHECK("safe_allocated_accepted",
			opened(safe_open_at(NULL, p, &anyone, &st, &why)),
			"refused (%s)", why);
	} else if (fd >= 0) {
		close(fd);
	}
	unlink(p);
}

static void test_lines(const char *dir)
{
	char p[256], buf[64], got[256] = "";
	struct safe_lines r;
	size_t len;
	long rss0;
	char *l;
	FILE *f;

	/* a line without end between short ones, a NUL byte, no final newline */
	snprintf(p, sizeof(p), "%s/lines", dir);
	f = fopen(p, "w");
	if (!f)
		return;
	fputs("a\n", f);
	{
		static char chunk[1 << 16];

		memset(chunk, 'x', sizeof(chunk));
		for (int i = 0; i < 1600; i++)
			fwrite(chunk, 1, sizeof(chunk), f);
	}
	fwrite("\nb\nnul\0byte\nc", 1, 13, f);
	fclose(f);
	rss0 = max_rss_kb();
	f = fopen(p, "r");
	safe_lines_init(&r, f, buf, sizeof(buf), 1ull << 30, 0);
	while ((l = safe_line(&r, &len)))
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s|", l);
	T_CHECK("safe_lines_skip_long_and_nul", !strcmp(got, "a|b|c|") &&
		r.long_lines == 2 && !r.cut && max_rss_kb() - rss0 < 4096,
		"got '%s', %" PRIu64 " skipped, RSS +%ld KiB", got, r.long_lines,
		max_rss_kb() - rss0);
	fclose(f);

	/* a budget cuts the reading, and says so */
	f = fopen(p, "r");
	safe_lines_init(&r, f, buf, sizeof(buf), 1000, 0);
	got[0] = '\0';
	while ((l = safe_line(&r, &len)))
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s|", l);
	T_CHECK("safe_lines_budget", !strcmp(got, "a|") && r.cut, "got '%s', cut %d",
		got, r.cut);
	fclose(f);
	unlink(p);
}

/* safe_warn(): once per file, quiet for missing ones, SAFE_WARN_PER_MIN. */
static void test_warn(const char *dir)
{
	char p[256], line[512];
	int saved = dup(2), fd, lines = 0, about_a = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/warn.log", dir);
	fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0 || saved < 0)
		return;
	fflush(stderr);
	dup2(fd, 2);
	close(fd);
	for (int i = 0; i < 3; i++)
		safe_warn("debug file", "/proc/1/root", "/opt/a.debug",
			  "is a symbolic link");
	safe_warn("debug file", NULL, "/opt/gone.debug", NULL);
	for (int i = 0; i < 3 * SAFE_WARN_PER_MIN; i++) {
		char name[64];

		snprintf(name, sizeof(name), "/opt/many-%d\033[2J.debug", i);
		safe_warn("debug file", NULL, name, "is a symbolic link");
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fopen(p, "r");
	while (f && fgets(line, sizeof(line), f)) {
		lines++;
		about_a += strstr(line, "/opt/a.debug") != NULL;
		if (strchr(line, '\033'))
			about_a = -100;	/* an escape sequence reached the log */
	}
	if (f)
		fclose(f);
	unlink(p);
	T_CHECK("safe_warn_once_per_file_escaped", about_a == 1,
		"%d lines about it (or raw escapes)", about_a);
	/* the JIT maps above had their share of this minute's */
	T_CHECK("safe_warn_rate_limited", lines > 1 && lines <= SAFE_WARN_PER_MIN,
		"%d lines for %d refused files", lines, 1 + 3 * SAFE_WARN_PER_MIN);
}

int main(void)
{
	char dir[] = "/tmp/ember-safe.XXXXXX", p[256];
	struct sym_perfmap *m;
	long rss0;
	FILE *f;
	int fd;

	if (!mkdtemp(dir))
		return 1;
	signal(SIGALRM, on_alarm);
	alarm(10);

	snprintf(p, sizeof(p), "%s/fifo.map", dir);
	mkfifo(p, 0600);
	m = sym_perfmap_load(NULL, p, NULL);
	T_CHECK("safe_perfmap_fifo_refused", !m, "a FIFO was read");
	unlink(p);

	snprintf(p, sizeof(p), "%s/zero.map", dir);
	symlink("/dev/zero", p);
	m = sym_perfmap_load(NULL, p, NULL);
	T_CHECK("safe_perfmap_symlink_zero_refused", !m, "read /dev/zero");
	unlink(p);

	snprintf(p, sizeof(p), "%s/rand.map", dir);
	symlink("/dev/urandom", p);
	m = sym_perfmap_load(NULL, p, NULL);
	T_CHECK("safe_perfmap_symlink_urandom_refused", !m, "read /dev/urandom");
	unlink(p);

	/* a 1 GB sparse file: refused by size, no memory spent */
	rss0 = max_rss_kb();
	snprintf(p, sizeof(p), "%s/sparse.map", dir);
	fd = open(p, O_CREAT | O_WRONLY, 0600);
	if (fd >= 0) {
		ftruncate(fd, 1L << 30);
		close(fd);
	}
	m = sym_perfmap_load(NULL, p, NULL);
	T_CHECK("safe_perfmap_sparse_bounded", !m && max_rss_kb() - rss0 < 16384,
		"loaded=%d, RSS grew %ld KiB", m != NULL, max_rss_kb() - rss0);
	sym_perfmap_free(m);
	unlink(p);

	/* 100 MB in one line without end: read within bounds, cheaply */
	rss0 = max_rss_kb();
	snprintf(p, sizeof(p), "%s/long.map", dir);
	f = fopen(p, "w");
	if (f) {
		static char chunk[1 << 16];

		memset(chunk, 'a', sizeof(chunk));
		for (int i = 0; i < 1600; i++)
			fwrite(chunk, 1, sizeof(chunk), f);
		fputs("\n1000 10 after_the_long_line\n", f);
		fclose(f);
	}
	m = sym_perfmap_load(NULL, p, NULL);
	T_CHECK("safe_perfmap_long_line_bounded", m && max_rss_kb() - rss0 < 16384 &&
		sym_perfmap_lookup(m, 0x1004) &&
		!strcmp(sym_perfmap_lookup(m, 0x1004), "after_the_long_line"),
		"loaded=%d, RSS grew %ld KiB", m != NULL, max_rss_kb() - rss0);
	sym_perfmap_free(m);
	unlink(p);

	/* another user's file, when the process is not theirs */
	snprintf(p, sizeof(p), "%s/other.map", dir);
	f = fopen(p, "w");
	if (f) {
		fputs("1000 10 jitted\n", f);
		fclose(f);
	}
	chown(p, 12345, 12345);
	m = sym_perfmap_load(NULL, p, (const uid_t[2]){ 54321, SAFE_ANY_OWNER });
	T_CHECK("safe_perfmap_other_owner_refused", !m, "another user's map was read");
	sym_perfmap_free(m);
	m = sym_perfmap_load(NULL, p, (const uid_t[2]){ 12345, SAFE_ANY_OWNER });
	T_CHECK("safe_perfmap_own_map_loads", m && sym_perfmap_lookup(m, 0x1008),
		"the process's own map did not load");
	sym_perfmap_free(m);
	unlink(p);

	test_in_root(dir, false);
	test_in_root(dir, true);
	test_links_devices_sparse(dir);
	test_lines(dir);
	test_warn(dir);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			return 1;
	}
	T_EXIT();
}
