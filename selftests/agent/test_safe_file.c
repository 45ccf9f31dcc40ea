// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hostile JIT map files (issue 14's reproductions): a FIFO (the root agent
 * blocked forever in open), a symlink to /dev/zero (grew to 23.7 GB), to
 * /dev/urandom (never ended), a 1 GB sparse file (989 MB RSS), a line
 * without end, another user's file. Each must be refused or read within
 * bounds, quickly, with little memory; a good map still loads.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safe_file.h"
#include "sym_internal.h"
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
	m = sym_perfmap_load(p, SAFE_ANY_OWNER);
	T_CHECK("safe_perfmap_fifo_refused", !m, "a FIFO was read");
	unlink(p);

	snprintf(p, sizeof(p), "%s/zero.map", dir);
	symlink("/dev/zero", p);
	m = sym_perfmap_load(p, SAFE_ANY_OWNER);
	T_CHECK("safe_perfmap_symlink_zero_refused", !m, "read /dev/zero");
	unlink(p);

	snprintf(p, sizeof(p), "%s/rand.map", dir);
	symlink("/dev/urandom", p);
	m = sym_perfmap_load(p, SAFE_ANY_OWNER);
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
	m = sym_perfmap_load(p, SAFE_ANY_OWNER);
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
	m = sym_perfmap_load(p, SAFE_ANY_OWNER);
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
	m = sym_perfmap_load(p, 54321);
	T_CHECK("safe_perfmap_other_owner_refused", !m, "another user's map was read");
	sym_perfmap_free(m);
	m = sym_perfmap_load(p, 12345);
	T_CHECK("safe_perfmap_own_map_loads", m && sym_perfmap_lookup(m, 0x1008),
		"the process's own map did not load");
	sym_perfmap_free(m);
	unlink(p);
	rmdir(dir);
	T_EXIT();
}
