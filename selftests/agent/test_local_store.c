// SPDX-License-Identifier: GPL-2.0-only
/*
 * export/local_store.c (ember run --local-dir): the size bound removes the
 * oldest files first, a restart counts what is there, left-over temporary
 * files go, and the bad inputs of an appliance give an error, never a
 * silent loss: a read-only directory at open, a full file system at
 * write (as root, on a small tmpfs; skipped otherwise).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "export/local_store.h"
#include "test_util.h"

static int count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name), s = strlen(suffix);

		n += l > s && !strcmp(e->d_name + l - s, suffix);
	}
	closedir(d);
	return n;
}

static void test_bound(const char *base)
{
	static uint8_t buf[40 << 10];
	struct local_store_stats st;
	struct local_store *ls;
	char dir[512], err[512], path[600];
	int i, r = 0, fd;

	snprintf(dir, sizeof(dir), "%s/a/b", base);
	ls = local_store_open(dir, 100 << 10, err, sizeof(err));
	T_CHECK("local_open_mkdir_p", ls, "%s", err);
	if (!ls)
		return;
	memset(buf, 'x', sizeof(buf));
	for (i = 0; i < 5; i++)
		r |= local_store_put(ls, buf, sizeof(buf), err, sizeof(err));
	local_store_stats(ls, &st);
	T_CHECK("local_bound_keeps_newest", !r && st.written == 5 && st.files == 2 &&
		st.removed == 3 && st.bytes == 2 * sizeof(buf) &&
		count_files(dir, ".otlp") == 2,
		"r=%d written=%lu files=%lu removed=%lu", r, (unsigned long)st.written,
		(unsigned long)st.files, (unsigned long)st.removed);
	r = local_store_put(ls, buf, 0, err, sizeof(err));
	T_CHECK("local_empty_ok", !r, "%s", err);
	local_store_close(ls);

	/* a crash left a temporary file; a restart counts the kept ones */
	snprintf(path, sizeof(path), "%s/.ember-1-1.otlp.tmp", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	if (fd >= 0)
		close(fd);
	ls = local_store_open(dir, 100 << 10, err, sizeof(err));
	T_CHECK("local_reopen", ls, "%s", err);
	if (!ls)
		return;
	local_store_stats(ls, &st);
	T_CHECK("local_reopen_counts", st.files == 3 && st.bytes == 2 * sizeof(buf),
		"files=%lu bytes=%lu", (unsigned long)st.files, (unsigned long)st.bytes);
	T_CHECK("local_tmp_removed", count_files(dir, ".tmp") == 0, "left");
	/* refused on its size alone: buf is not read */
	r = local_store_put(ls, buf, 200 << 10, err, sizeof(err));
	T_CHECK("local_too_big_said", r == -EFBIG && strstr(err, "--local-max"),
		"r=%d err=%s", r, err);
	local_store_close(ls);
}

static void test_readonly_and_full(const char *base)
{
	static uint8_t buf[96 << 10];
	struct local_store_stats st;
	struct local_store *ls;
	char mnt[512], err[512];
	int r;

	snprintf(mnt, sizeof(mnt), "%s/ro", base);
	mkdir(mnt, 0700);
	if (geteuid() || mount("tmpfs", mnt, "tmpfs", MS_RDONLY, "size=256k")) {
		printf("SKIP: local_readonly local_full (needs root and tmpfs)\n");
		return;
	}
	ls = local_store_open(mnt, 1 << 20, err, sizeof(err));
	T_CHECK("local_readonly_refused", !ls && strstr(err, "writable") &&
		strstr(err, mnt), "ls=%p err=%s", (void *)ls, err);
	local_store_close(ls);
	umount(mnt);

	/* 256 KiB file system, a bound of 1 MiB: the disk fills first */
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=256k,mode=0700")) {
		printf("SKIP: local_full (tmpfs)\n");
		return;
	}
	ls = local_store_open(mnt, 1 << 20, err, sizeof(err));
	T_CHECK("local_full_open", ls, "%s", err);
	if (ls) {
		int fails = 0, i;

		memset(buf, 'y', sizeof(buf));
		for (i = 0; i < 6; i++)
			fails += local_store_put(ls, buf, sizeof(buf), err, sizeof(err)) != 0;
		local_store_stats(ls, &st);
		/* room is made from its own oldest files, and that is counted */
		T_CHECK("local_full_makes_room", !fails && st.written == 6 && st.removed >= 3 &&
			st.files == (uint64_t)count_files(mnt, ".otlp"),
			"fails=%d written=%lu removed=%lu files=%lu", fails,
			(unsigned long)st.written, (unsigned long)st.removed,
			(unsigned long)st.files);
		local_store_close(ls);
	}
	/* full of someone else's data: an error naming the cause, counted */
	{
		char f[600];
		int fd;

		umount(mnt);
		mount("tmpfs", mnt, "tmpfs", 0, "size=128k,mode=0700");
		ls = local_store_open(mnt, 1 << 20, err, sizeof(err));
		snprintf(f, sizeof(f), "%s/other", mnt);
		fd = open(f, O_WRONLY | O_CREAT, 0600);
		while (fd >= 0 && write(fd, buf, sizeof(buf)) > 0)
			;
		if (fd >= 0)
			close(fd);
		r = ls ? local_store_put(ls, buf, 8192, err, sizeof(err)) : -1;
		if (ls)
			local_store_stats(ls, &st);
		T_CHECK("local_full_said", ls && r == -ENOSPC && strstr(err, "No space") &&
			st.failed == 1 && count_files(mnt, ".tmp") == 0,
			"r=%d err=%s", r, err);
		local_store_close(ls);
	}
	umount(mnt);
}

int main(void)
{
	char base[] = "/tmp/ember-local-XXXXXX";

	if (!mkdtemp(base))
		return 1;
	test_bound(base);
	test_readonly_and_full(base);
	T_EXIT();
}
