// SPDX-License-Identifier: GPL-2.0-only
/*
 * The local profile directory of ember run (local_store.h): an appliance
 * keeps its last profiles on a tmpfs or a data partition, bounded in
 * bytes, for when the receiver is away or for a technician.
 *
 * Files are written to a hidden temporary name and renamed, so a reader
 * never sees half a profile and a crash leaves at most one .tmp file
 * (removed at the next open). The files ember wrote before (a restart)
 * count against the bound. Names sort by time: the oldest is the first.
 * Only names of the form ember-*.otlp are ever removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "export/local_store.h"

#define LS_NAME_MAX 64
#define LS_MAX_FILES 100000	/* the list is bounded like the bytes */

struct ls_file {
	char name[LS_NAME_MAX];
	uint64_t bytes;
};

struct local_store {
	int dfd;
	char *dir;
	uint64_t max_bytes;
	struct ls_file *files;	/* oldest first */
	size_t nr, cap;
	uint64_t bytes, seq;
	struct local_store_stats st;
};

static bool ours(const char *n, const char *suffix)
{
	size_t l = strlen(n), s = strlen(suffix);

	return !strncmp(n, "ember-", 6) && l > 6 + s && l < LS_NAME_MAX &&
	       !strcmp(n + l - s, suffix);
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp(((const struct ls_file *)a)->name,
		      ((const struct ls_file *)b)->name);
}

static int push(struct local_store *ls, const char *name, uint64_t bytes)
{
	if (ls->nr == ls->cap) {
		size_t cap = ls->cap ? ls->cap * 2 : 64;
		struct ls_file *f = realloc(ls->files, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		ls->files = f;
		ls->cap = cap;
	}
	snprintf(ls->files[ls->nr].name, LS_NAME_MAX, "%s", name);
	ls->files[ls->nr++].bytes = bytes;
	ls->bytes += bytes;
	return 0;
}

/* The files of earlier runs; left-over temporary files are removed. */
static int scan(struct local_store *ls)
{
	int fd = dup(ls->dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	struct stat sb;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' && ours(e->d_name + 1, ".tmp")) {
			unlinkat(ls->dfd, e->d_name, 0);
			continue;
		}
		if (!ours(e->d_name, ".otlp") || ls->nr >= LS_MAX_FILES ||
		    fstatat(ls->dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(sb.st_mode))
			continue;
		if (push(ls, e->d_name, (uint64_t)sb.st_size)) {
			closedir(d);
			return -ENOMEM;
		}
	}
	closedir(d);
	qsort(ls->files, ls->nr, sizeof(*ls->files), cmp_file);
	return 0;
}

static void remove_oldest(struct local_store *ls)
{
	if (!ls->nr)
		return;
	unlinkat(ls->dfd, ls->files[0].name, 0);
	ls->bytes -= ls->files[0].bytes;
	memmove(ls->files, ls->files + 1, (ls->nr - 1) * sizeof(*ls->files));
	ls->nr--;
	ls->st.removed++;
}

static int mkdir_p(const char *dir)
{
	char *p = strdup(dir), *s;
	int r = 0;

	if (!p)
		return -ENOMEM;
	for (s = p + 1; !r; s++) {
		bool end = !*s;

		if (*s != '/' && !end)
			continue;
		*s = '\0';
		if (mkdir(p, 0700) && errno != EEXIST)
			r = -errno;
		if (end)
			break;
		*s = '/';
	}
	free(p);
	return r;
}

struct local_store *local_store_open(const char *dir, uint64_t max_bytes,
				     char *err, size_t err_len)
{
	struct local_store *ls = calloc(1, sizeof(*ls));
	static const char probe[] = ".ember-probe.tmp";
	struct stat sb;
	int r, fd;

	if (!ls || !(ls->dir = strdup(dir))) {
		snprintf(err, err_len, "out of memory");
		goto fail;
	}
	ls->max_bytes = max_bytes;
	ls->dfd = -1;
	r = mkdir_p(dir);
	if (r) {
		snprintf(err, err_len, "cannot create the local profile directory %s: %s "
			 "(give --local-dir a writable place: a tmpfs such as /run, or a "
			 "data partition)", dir, strerror(-r));
		goto fail;
	}
	ls->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ls->dfd < 0 || fstat(ls->dfd, &sb) || sb.st_uid != geteuid() ||
	    (sb.st_mode & 022)) {
		snprintf(err, err_len, "the local profile directory %s is %s", dir,
			 ls->dfd < 0 ? strerror(errno) :
			 "not ember's own (another owner, or writable by group or others)");
		goto fail;
	}
	/* a read-only file system says so now, not at the first interval */
	fd = openat(ls->dfd, probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, err_len, "cannot write in the local profile directory %s: %s "
			 "(give --local-dir a writable place: a tmpfs such as /run, or a "
			 "data partition)", dir, strerror(errno));
		goto fail;
	}
	close(fd);
	unlinkat(ls->dfd, probe, 0);
	r = scan(ls);
	if (r) {
		snprintf(err, err_len, "cannot read the local profile directory %s: %s",
			 dir, strerror(-r));
		goto fail;
	}
	return ls;
fail:
	local_store_close(ls);
	return NULL;
}

static int write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write name (via a temporary file); 0 or -errno, nothing left behind. */
static int write_file(struct local_store *ls, const char *name,
		      const uint8_t *buf, size_t len)
{
	char tmp[LS_NAME_MAX + 8];
	int fd, r;

	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(ls->dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = write_all(fd, buf, len);
	if (close(fd) && !r)
		r = -errno;
	if (!r && renameat(ls->dfd, tmp, ls->dfd, name))
		r = -errno;
	if (r)
		unlinkat(ls->dfd, tmp, 0);
	return r;
}

int local_store_put(struct local_store *ls, const uint8_t *buf, size_t len,
		    char *err, size_t err_len)
{
	char name[LS_NAME_MAX];
	struct timespec ts;
	int r;

	if (len > ls->max_bytes) {
		ls->st.failed++;
		snprintf(err, err_len, "a profile of %zu bytes is larger than --local-max "
			 "(%" PRIu64 " bytes): raise it", len, ls->max_bytes);
		return -EFBIG;
	}
	while (ls->nr && (ls->bytes + len > ls->max_bytes || ls->nr >= LS_MAX_FILES))
		remove_oldest(ls);
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof(name), "ember-%013" PRIu64 "-%06" PRIu64 ".otlp",
		 (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000,
		 ls->seq++ % 1000000);
	r = write_file(ls, name, buf, len);
	/* the file system is full before our bound: room from our oldest */
	while ((r == -ENOSPC || r == -EDQUOT) && ls->nr) {
		uint64_t freed = 0;

		while (ls->nr && freed < len) {
			freed += ls->files[0].bytes;
			remove_oldest(ls);
		}
		r = write_file(ls, name, buf, len);
	}
	if (r) {
		ls->st.failed++;
		snprintf(err, err_len, "cannot keep the profile in %s: %s", ls->dir,
			 strerror(-r));
		return r;
	}
	if (push(ls, name, len)) {
		/* kept on disk, but not counted against the bound: remove it */
		unlinkat(ls->dfd, name, 0);
		ls->st.failed++;
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	ls->st.written++;
	return 0;
}

void local_store_stats(const struct local_store *ls, struct local_store_stats *st)
{
	*st = ls->st;
	st->files = ls->nr;
	st->bytes = ls->bytes;
}

void local_store_close(struct local_store *ls)
{
	if (!ls)
		return;
	if (ls->dfd >= 0)
		close(ls->dfd);
	free(ls->files);
	free(ls->dir);
	free(ls);
}
