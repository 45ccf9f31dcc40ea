// SPDX-License-Identifier: GPL-2.0-only
/*
 * The persistent unwind-table cache (table_store.h).
 *
 * One file (~700 lines): the directory's checks, the entry format, the
 * checksum and the size bound meet in load and store, which share the
 * in-memory list of entries; split, each part would need the other's
 * insides. Sections: checksum, opening the directory, the entries, load,
 * store.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ember_unwind.h"
#include "lib/clock.h"
#include "unwind/cfi_compile.h"
#include "unwind/table_store.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "unknown"
#endif

/* A temporary file older than this is a crashed writer's: removed. */
#define TMP_STALE_S		600
#define TMP_PREFIX		".tmp-"
/* bad entries named one by one; beyond, one line says more were */
#define BAD_WARN_MAX		16

struct ts_entry {
	char id[41];
	uint64_t bytes;			/* file size */
	int64_t mtime_ns;		/* last use */
};

struct table_store {
	int dirfd;
	char *path;
	uint64_t max_bytes;
	struct ts_entry *ents;
	uint32_t nr, cap;
	uint32_t tmp_seq;
	uint32_t bad_warned;
	uint64_t last_write_warn_ns;	/* CLOCK_MONOTONIC; 0: never */
	uint64_t failures_since_warn;
	struct table_store_stats st;
};

/* ---- checksum ------------------------------------------------------------- */

#define P1 0x9e3779b185ebca87ULL
#define P2 0xc2b2ae3d27d4eb4fULL

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t fmix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * Four independent lanes of 8-byte words (fast: a few GB/s), folded and
 * finalised with murmur3's mixer. It detects torn writes and bit rot; a
 * hostile entry with a correct checksum is what the table check is for.
 */
uint64_t table_store_checksum(const void *p, size_t len)
{
	const unsigned char *b = p;
	uint64_t h[4] = { P1, P2, ~P1, ~P2 }, acc;
	size_t i = 0;

	for (; i + 32 <= len; i += 32) {
		for (int k = 0; k < 4; k++) {
			uint64_t w;

			memcpy(&w, b + i + 8 * k, 8);
			h[k] = rotl64(h[k] + w * P2, 31) * P1;
		}
	}
	acc = rotl64(h[0], 1) + rotl64(h[1], 7) + rotl64(h[2], 12) +
	      rotl64(h[3], 18) + len;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, b + i, 8);
		acc = rotl64(acc ^ (w * P2), 27) * P1;
	}
	for (; i < len; i++)
		acc = rotl64(acc ^ (b[i] * P1), 11) * P2;
	return fmix64(acc);
}

/* ---- opening the directory ------------------------------------------------ */

static void open_warn(const char *dir, const char *fmt, const char *a, int err)
{
	char why[PATH_MAX + 128];

	snprintf(why, sizeof(why), fmt, a);
	fprintf(stderr, "ember: not using the unwind-table cache %s: %s%s%s; "
		"tables are built anew (--table-cache DIR, or none)\n", dir, why,
		err ? ": " : "", err ? strerror(err) : "");
}

/*
 * One component of the path under parent: a real directory (made 0700 if
 * missing), never a symbolic link. The fd, or -1 after a warning.
 */
static int open_component(const char *dir, int parent, const char *name,
			  const char *sofar, bool last)
{
	struct stat st;
	int fd;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) && errno == ENOENT) {
		if (mkdirat(parent, name, 0700) && errno != EEXIST) {
			open_warn(dir, "cannot create %s", sofar, errno);
			return -1;
		}
	}
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		if (!fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISLNK(st.st_mode))
			open_warn(dir, "%s is a symbolic link", sofar, 0);
		else if (e == ENOTDIR)
			open_warn(dir, "%s is not a directory", sofar, 0);
		else
			open_warn(dir, "cannot open %s", sofar, e);
		return -1;
	}
	if (fstat(fd, &st) || !S_ISDIR(st.st_mode)) {
		open_warn(dir, "%s is not a directory", sofar, 0);
		goto bad;
	}
	if (!last && (st.st_mode & (S_IWGRP | S_IWOTH)) &&
	    !(st.st_mode & S_ISVTX)) {
		/* someone else could move our directory away and plant one */
		open_warn(dir, "%s is writable by other users", sofar, 0);
		goto bad;
	}
	if (last && st.st_uid != geteuid()) {
		char what[128];

		snprintf(what, sizeof(what), "it is owned by uid %u, not by "
			 "ember's (%u)", (unsigned)st.st_uid, (unsigned)geteuid());
		open_warn(dir, "%s", what, 0);
		goto bad;
	}
	if (last && (st.st_mode & 077)) {
		char what[64];

		snprintf(what, sizeof(what), "its mode is %04o: other users may "
			 "use it (want 0700)", (unsigned)(st.st_mode & 07777));
		open_warn(dir, "%s", what, 0);
		goto bad;
	}
	return fd;
bad:
	close(fd);
	return -1;
}

/* Walk dir from / (or the working directory) one component at a time. */
static int open_dir(const char *dir)
{
	char *copy = strdup(dir), *save = NULL, *tok, *next;
	char sofar[PATH_MAX] = "";
	int fd;

	if (!copy)
		return -1;
	fd = open(dir[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tok = strtok_r(copy, "/", &save);
	if (!tok && fd >= 0) {
		open_warn(dir, "%s", "it is not a directory of its own", 0);
		close(fd);
		fd = -1;
	}
	for (; tok && fd >= 0; tok = next) {
		int sub;

		next = strtok_r(NULL, "/", &save);
		if (!strcmp(tok, "..")) {
			open_warn(dir, "%s", "'..' is not allowed in it", 0);
			close(fd);
			fd = -1;
			break;
		}
		snprintf(sofar + strlen(sofar), sizeof(sofar) - strlen(sofar),
			 "%s%s", dir[0] == '/' || sofar[0] ? "/" : "", tok);
		if (!strcmp(tok, "."))
			continue;
		sub = open_component(dir, fd, tok, sofar, !next);
		close(fd);
		fd = sub;
	}
	free(copy);
	return fd;
}

/* ---- the entries ------------------------------------------------------------ */

/* "<hex build id>.tab": the id (2 to 40 lowercase hex digits), or NULL. */
static bool entry_id(const char *name, char id[41])
{
	size_t n = strlen(name);

	if (n < 6 || n > 44 || strcmp(name + n - 4, ".tab"))
		return false;
	n -= 4;
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		      (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	memcpy(id, name, n);
	id[n] = '\0';
	return true;
}

static bool valid_id(const char *id)
{
	char name[64], out[41];

	if (strlen(id) > 40)
		return false;
	snprintf(name, sizeof(name), "%s.tab", id);
	return entry_id(name, out);
}

static int64_t mtime_of(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static struct ts_entry *find_entry(struct table_store *ts, const char *id)
{
	for (uint32_t i = 0; i < ts->nr; i++)
		if (!strcmp(ts->ents[i].id, id))
			return &ts->ents[i];
	return NULL;
}

static void forget_entry(struct table_store *ts, struct ts_entry *e)
{
	ts->st.bytes -= e->bytes;
	*e = ts->ents[--ts->nr];
}

static struct ts_entry *add_entry(struct table_store *ts, const char *id)
{
	if (ts->nr == ts->cap) {
		uint32_t cap = ts->cap ? ts->cap * 2 : 256;
		void *p;

		if (cap > TABLE_STORE_MAX_ENTRIES)
			cap = TABLE_STORE_MAX_ENTRIES;
		if (cap == ts->cap)
			return NULL;
		p = realloc(ts->ents, cap * sizeof(*ts->ents));
		if (!p)
			return NULL;
		ts->ents = p;
		ts->cap = cap;
	}
	memset(&ts->ents[ts->nr], 0, sizeof(ts->ents[0]));
	snprintf(ts->ents[ts->nr].id, sizeof(ts->ents[0].id), "%s", id);
	return &ts->ents[ts->nr++];
}

static void entry_name(const char *id, char name[64])
{
	snprintf(name, 64, "%s.tab", id);
}

/* Remove the least recently used entry; false when there is none. */
static bool evict_one(struct table_store *ts)
{
	struct ts_entry *old = NULL;
	char name[64];

	for (uint32_t i = 0; i < ts->nr; i++)
		if (!old || ts->ents[i].mtime_ns < old->mtime_ns)
			old = &ts->ents[i];
	if (!old)
		return false;
	entry_name(old->id, name);
	unlinkat(ts->dirfd, name, 0);
	forget_entry(ts, old);
	ts->st.evicted++;
	return true;
}

/* What the directory holds now: entries, their bytes; old temp files go. */
static void scan(struct table_store *ts)
{
	int fd = dup(ts->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	int64_t now = (int64_t)clock_ns(CLOCK_REALTIME);
	struct dirent *de;
	uint32_t seen = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) && seen++ < TABLE_STORE_MAX_ENTRIES) {
		struct stat st;
		struct ts_entry *e;
		char id[41];

		if (fstatat(ts->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (!strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			if (now - mtime_of(&st) > TMP_STALE_S * 1000000000LL)
				unlinkat(ts->dirfd, de->d_name, 0);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !entry_id(de->d_name, id))
			continue;
		e = add_entry(ts, id);
		if (!e)
			break;
		e->bytes = (uint64_t)st.st_size;
		e->mtime_ns = mtime_of(&st);
		ts->st.bytes += e->bytes;
	}
	closedir(d);
	/* a smaller cap than the last run's: down to it now */
	while (ts->st.bytes > ts->max_bytes && evict_one(ts))
		;
}

struct table_store *table_store_open(const char *dir, uint64_t max_bytes)
{
	struct table_store *ts;
	int fd;

	if (!dir || !*dir)
		return NULL;
	fd = open_dir(dir);
	if (fd < 0)
		return NULL;
	ts = calloc(1, sizeof(*ts));
	if (!ts || !(ts->path = strdup(dir))) {
		free(ts);
		close(fd);
		open_warn(dir, "%s", "out of memory", 0);
		return NULL;
	}
	ts->dirfd = fd;
	ts->max_bytes = max_bytes ? max_bytes : TABLE_STORE_DEFAULT_MAX;
	scan(ts);
	return ts;
}

void table_store_close(struct table_store *ts)
{
	if (!ts)
		return;
	close(ts->dirfd);
	free(ts->ents);
	free(ts->path);
	free(ts);
}

void table_store_get_stats(const struct table_store *ts,
			   struct table_store_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!ts)
		return;
	*st = ts->st;
	st->entries = ts->nr;
}

/* ---- load ------------------------------------------------------------------- */

/* A bad entry: one warning naming it, removed, counted. */
static int reject(struct table_store *ts, const char *id, const char *file,
		  const char *why)
{
	struct ts_entry *e = find_entry(ts, id);
	char name[64];

	entry_name(id, name);
	unlinkat(ts->dirfd, name, 0);
	if (e)
		forget_entry(ts, e);
	ts->st.rejected++;
	if (ts->bad_warned < BAD_WARN_MAX)
		fprintf(stderr, "ember: removed the cached unwind table %s/%s "
			"(for %s): %s; building it again\n", ts->path, name,
			file, why);
	else if (ts->bad_warned == BAD_WARN_MAX)
		fprintf(stderr, "ember: more bad entries in the unwind-table "
			"cache %s: removed without a word\n", ts->path);
	ts->bad_warned++;
	return -EBADMSG;
}

/* All of a file of size bytes (it may not grow under us), or NULL. */
static void *read_all(int fd, size_t size)
{
	char *buf = malloc(size ? size : 1);
	size_t got = 0;

	while (buf && got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (buf && got != size) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The header's verdict: NULL (good), "" (stale: rebuild silently), or why. */
static const char *check_header(const struct table_store_hdr *h,
				const char *id, uint64_t file_size)
{
	if (memcmp(h->magic, TABLE_STORE_MAGIC, sizeof(h->magic)) ||
	    h->hdr_size != sizeof(*h) || h->reserved)
		return "not an entry of this cache (bad magic or header)";
	if (h->format != EMBER_UNWIND_VERSION || h->compiler != CFI_COMPILE_VERSION)
		return "";
	if (strncmp(h->build_id, id, sizeof(h->build_id)) ||
	    memchr(h->build_id, 0, sizeof(h->build_id)) == NULL)
		return "it holds another file's table (build-id differs)";
	if (h->blob_len > EMBER_UNWIND_MAX_TABLE)
		return "its table is longer than any table may be";
	if (h->blob_len > file_size - sizeof(*h))
		return "truncated";
	if (h->blob_len < file_size - sizeof(*h))
		return "longer than its header says";
	return NULL;
}

static int load_fd(struct table_store *ts, int fd, const char *id,
		   const char *file, void **blob, size_t *len)
{
	struct table_store_hdr h;
	const char *why;
	struct stat st;
	char *buf;
	size_t n;

	if (fstat(fd, &st))
		return -ENOENT;
	if (!S_ISREG(st.st_mode))
		return reject(ts, id, file, "not a regular file");
	if (st.st_uid != geteuid())
		return reject(ts, id, file, "owned by another user");
	if ((uint64_t)st.st_size < sizeof(h))
		return reject(ts, id, file, "truncated (shorter than its header)");
	if ((uint64_t)st.st_size > sizeof(h) + EMBER_UNWIND_MAX_TABLE)
		return reject(ts, id, file, "larger than any table may be");
	buf = read_all(fd, (size_t)st.st_size);
	if (!buf)
		return reject(ts, id, file, "truncated or unreadable");
	memcpy(&h, buf, sizeof(h));
	why = check_header(&h, id, (uint64_t)st.st_size);
	if (why && !*why) {
		free(buf);
		return -ENOENT;		/* older format or compiler: rebuilt */
	}
	n = (size_t)h.blob_len;
	if (!why && table_store_checksum(buf + sizeof(h), n) != h.checksum)
		why = "its checksum does not match";
	/* the shared validator both backends run: the backend never sees
	 * a table that fails it */
	if (!why && ember_unwind_table_check(buf + sizeof(h), n, &why) == 0)
		why = NULL;	/* passed; else why says what failed */
	if (why) {
		free(buf);
		return reject(ts, id, file, why);
	}
	memmove(buf, buf + sizeof(h), n);
	*blob = buf;
	*len = n;
	/* used now: the last to be evicted */
	futimens(fd, NULL);
	return 0;
}

int table_store_load(struct table_store *ts, const char *id, const char *file,
		     void **blob, size_t *len)
{
	uint64_t t0 = mono_ns();
	struct ts_entry *e;
	struct stat st;
	char name[64];
	int fd, r;

	if (!ts || !valid_id(id))
		return -ENOENT;
	entry_name(id, name);
	/* looked at before it is opened: a FIFO or device is never opened */
	if (fstatat(ts->dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		ts->st.misses++;
		return -ENOENT;
	}
	if (S_ISLNK(st.st_mode))
		r = reject(ts, id, file, "a symbolic link");
	else if (!S_ISREG(st.st_mode))
		r = reject(ts, id, file, "not a regular file");
	else if ((fd = openat(ts->dirfd, name, O_RDONLY | O_NOFOLLOW |
			      O_NONBLOCK | O_CLOEXEC)) < 0)
		r = errno == ELOOP ? reject(ts, id, file, "a symbolic link")
				   : -ENOENT;
	else {
		r = load_fd(ts, fd, id, file, blob, len);
		close(fd);
	}
	ts->st.load_ns += mono_ns() - t0;
	if (r) {
		ts->st.misses++;
		return r;
	}
	ts->st.hits++;
	e = find_entry(ts, id);
	if (!e && (e = add_entry(ts, id))) {
		e->bytes = (uint64_t)st.st_size;
		ts->st.bytes += e->bytes;
	}
	if (e)
		e->mtime_ns = (int64_t)clock_ns(CLOCK_REALTIME);
	return 0;
}

/* ---- store ------------------------------------------------------------------ */

static void write_failed(struct table_store *ts, int err)
{
	uint64_t now = mono_ns();

	ts->st.write_failures++;
	ts->failures_since_warn++;
	if (ts->last_write_warn_ns &&
	    now - ts->last_write_warn_ns < TABLE_STORE_WARN_EVERY_S * 1000000000ULL)
		return;
	fprintf(stderr, "ember: cannot write to the unwind-table cache %s: %s "
		"(%llu table%s not kept; warned at most every %d minutes); "
		"profiling goes on, those tables are built again next time\n",
		ts->path, strerror(err),
		(unsigned long long)ts->failures_since_warn,
		ts->failures_since_warn == 1 ? "" : "s",
		TABLE_STORE_WARN_EVERY_S / 60);
	ts->last_write_warn_ns = now;
	ts->failures_since_warn = 0;
}

static int write_all(int fd, const void *p, size_t len)
{
	const char *b = p;

	while (len) {
		ssize_t n = write(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOSPC;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write the entry to a temporary file and rename it over the name. */
static int write_entry(struct table_store *ts, const char *name,
		       const struct table_store_hdr *h, const void *blob,
		       size_t len)
{
	char tmp[64];
	int fd, r;

	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%d-%u", (int)getpid(),
		 ts->tmp_seq++);
	fd = openat(ts->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = write_all(fd, h, sizeof(*h));
	if (!r)
		r = write_all(fd, blob, len);
	if (close(fd) && !r)
		r = -errno;
	if (!r && renameat(ts->dirfd, tmp, ts->dirfd, name))
		r = -errno;
	if (r)
		unlinkat(ts->dirfd, tmp, 0);
	return r;
}

void table_store_save(struct table_store *ts, const char *id,
		      const void *blob, size_t len)
{
	struct table_store_hdr h;
	uint64_t bytes = sizeof(h) + len;
	struct ts_entry *e;
	bool replacing;
	char name[64];
	int r;

	if (!ts || !valid_id(id) || bytes > ts->max_bytes)
		return;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, TABLE_STORE_MAGIC, sizeof(h.magic));
	h.hdr_size = sizeof(h);
	h.format = EMBER_UNWIND_VERSION;
	h.compiler = CFI_COMPILE_VERSION;
	snprintf(h.ember_version, sizeof(h.ember_version), "%s", EMBER_VERSION);
	snprintf(h.build_id, sizeof(h.build_id), "%s", id);
	h.blob_len = len;
	h.checksum = table_store_checksum(blob, len);
	entry_name(id, name);
	/* the entry replaced frees its bytes; then room under the cap */
	e = find_entry(ts, id);
	replacing = e != NULL;
	if (e)
		forget_entry(ts, e);
	while ((ts->st.bytes + bytes > ts->max_bytes ||
		ts->nr == TABLE_STORE_MAX_ENTRIES) && evict_one(ts))
		;
	r = write_entry(ts, name, &h, blob, len);
	if (r) {
		/* a stale entry it was to replace goes too */
		if (replacing)
			unlinkat(ts->dirfd, name, 0);
		write_failed(ts, -r);
		return;
	}
	ts->st.stores++;
	e = add_entry(ts, id);
	if (e) {
		e->bytes = bytes;
		e->mtime_ns = (int64_t)clock_ns(CLOCK_REALTIME);
		ts->st.bytes += bytes;
	}
}

int table_store_usage(const char *dir, uint32_t *entries, uint64_t *bytes)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	uint32_t seen = 0;

	*entries = 0;
	*bytes = 0;
	if (!d) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return -e;
	}
	while ((de = readdir(d)) && seen++ < TABLE_STORE_MAX_ENTRIES) {
		struct stat st;
		char id[41];

		if (entry_id(de->d_name, id) &&
		    !fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode)) {
			(*entries)++;
			*bytes += (uint64_t)st.st_size;
		}
	}
	closedir(d);
	return 0;
}
