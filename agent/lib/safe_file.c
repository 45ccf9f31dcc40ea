// SPDX-License-Identifier: GPL-2.0-only
/* Opening and reading files other users control (safe_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "lib/clock.h"
#include "lib/safe_file.h"

bool safe_file_no_openat2;

/* The two reasons that are no one's doing: quiet (safe_refused()). */
static const char why_missing[] = "does not exist";
static const char why_denied[] = "cannot be opened";

bool safe_refused(const char *why)
{
	return why && why != why_missing && why != why_denied;
}

static const char *errno_why(int err)
{
	switch (err) {
	case ENOENT:
	case ENOTDIR:
		return why_missing;
	case ELOOP:
		return "goes through a symbolic link";
	default:
		return why_denied;
	}
}

static bool has_dotdot(const char *path)
{
	for (const char *p = path; (p = strstr(p, "..")); p += 2)
		if ((p == path || p[-1] == '/') && (p[2] == '/' || !p[2]))
			return true;
	return false;
}

/*
 * Kernels before 5.6 have no openat2 (ENOSYS), and a seccomp filter that
 * predates it refuses it (EPERM: systemd's @system-service before v246):
 * then walk the path one component at a time with O_NOFOLLOW, refusing
 * any symbolic link, which is what RESOLVE_NO_SYMLINKS does too. Mount
 * points are crossed as a path walk crosses them.
 */
static int walk_nofollow(int dfd, const char *path, const char **why)
{
	int cur = dfd, own = -1;
	const char *p = path;

	if (*p == '/' && dfd == AT_FDCWD) {
		own = cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (cur < 0) {
			*why = why_denied;
			return -1;
		}
	}
	while (*p == '/')
		p++;
	for (;;) {
		char name[NAME_MAX + 1];
		size_t len = strcspn(p, "/");
		struct stat st;
		bool last;
		int fd;

		if (len > NAME_MAX) {
			*why = why_denied;
			break;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		p += len;
		while (*p == '/')
			p++;
		last = !*p;
		if (!len || !strcmp(name, ".")) {
			if (!last)
				continue;
			strcpy(name, ".");
		}
		fd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			*why = errno_why(errno);
			break;
		}
		if (own >= 0)
			close(own);
		own = cur = fd;
		if (last)
			return fd;
		if (fstat(fd, &st)) {
			*why = why_denied;
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			*why = "goes through a symbolic link";
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			*why = why_missing;
			break;
		}
	}
	if (own >= 0)
		close(own);
	return -1;
}

/* An O_PATH descriptor for path (see safe_open_at()), or -1 and *why. */
static int resolve(const char *root, const char *path, unsigned int flags,
		   const char **why)
{
	int dfd = AT_FDCWD, fd;

	if (has_dotdot(path)) {
		*why = "has a \"..\" component";
		return -1;
	}
	if (!root && (flags & SAFE_FOLLOW)) {
		fd = open(path, O_PATH | O_CLOEXEC);
		if (fd < 0)
			*why = errno_why(errno);
		return fd;
	}
	if (root) {
		dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			*why = errno_why(errno);
			return -1;
		}
	}
	fd = -1;
	if (!safe_file_no_openat2) {
		struct open_how how = {
			/* O_NOFOLLOW: a final link is returned, not refused */
			.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
				   (root ? RESOLVE_IN_ROOT : 0),
		};

		fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
		if (fd < 0 && (errno == ENOSYS || errno == EPERM ||
			       errno == E2BIG))
			safe_file_no_openat2 = true;
		else if (fd < 0)
			*why = errno_why(errno);
	}
	if (fd < 0 && safe_file_no_openat2)
		fd = walk_nofollow(dfd, path, why);
	if (dfd >= 0)
		close(dfd);
	return fd;
}

static bool owner_ok(const struct stat *st, const struct safe_rules *r)
{
	if ((r->flags & SAFE_ANYONE) || st->st_uid == 0)
		return true;
	for (int i = 0; i < 2; i++)
		if (r->owners[i] != SAFE_ANY_OWNER && st->st_uid == r->owners[i])
			return true;
	return false;
}

static const char *check_stat(const struct stat *st, const struct safe_rules *r)
{
	uint64_t size = (uint64_t)st->st_size;

	if (S_ISLNK(st->st_mode))
		return "is a symbolic link";
	if (!S_ISREG(st->st_mode))
		return "is not a regular file (FIFO, device, directory?)";
	if (size > r->max_bytes)
		return "is larger than ember reads";
	if (size >= SAFE_SPARSE_MIN &&
	    (uint64_t)st->st_blocks * 512 < size / SAFE_SPARSE_RATIO)
		return "is a sparse file (mostly holes)";
	if (!owner_ok(st, r))
		return "belongs to another user than the process";
	return NULL;
}

bool safe_check_fd(int fd, const struct safe_rules *rules, struct stat *st,
		   const char **why)
{
	struct stat tmp;

	if (!st)
		st = &tmp;
	if (fstat(fd, st)) {
		*why = why_denied;
		return false;
	}
	*why = check_stat(st, rules);
	return !*why;
}

int safe_open_at(const char *root, const char *path,
		 const struct safe_rules *rules, struct stat *st,
		 const char **why)
{
	char self[64];
	struct stat tmp, again;
	int pfd, fd;

	if (!st)
		st = &tmp;
	*why = NULL;
	pfd = resolve(root, path, rules->flags, why);
	if (pfd < 0)
		return -1;
	/* Examined through O_PATH: a FIFO or device is never opened. */
	if (!safe_check_fd(pfd, rules, st, why)) {
		close(pfd);
		return -1;
	}
	/* The same inode, now readable; O_NONBLOCK in case it is not. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	close(pfd);
	if (fd < 0) {
		*why = errno_why(errno);
		return -1;
	}
	if (fstat(fd, &again) || again.st_ino != st->st_ino ||
	    again.st_dev != st->st_dev || !S_ISREG(again.st_mode)) {
		*why = "changed while it was opened";
		close(fd);
		return -1;
	}
	/* regular files never block: back to blocking reads */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

int safe_open(const char *path, uint64_t max_bytes, uid_t owner,
	      struct stat *st, const char **why)
{
	struct safe_rules r = {
		.max_bytes = max_bytes,
		.owners = { owner, SAFE_ANY_OWNER },
		.flags = owner == SAFE_ANY_OWNER ? SAFE_ANYONE : 0,
	};

	return safe_open_at(NULL, path, &r, st, why);
}

int safe_stat_at(const char *root, const char *path, struct stat *st)
{
	const char *why;
	int fd = resolve(root, path, 0, &why), r;

	if (fd < 0)
		return -1;
	r = fstat(fd, st);
	close(fd);
	return r;
}

/* ------------------------------------------------------------ warnings */

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h * 0x100000001b3ull;	/* a separator between strings */
}

/* path with control characters as \xNN, cut at the buffer's size. */
static void escape(char *out, size_t size, const char *path)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)path;
	     *p && n + 5 < size; p++) {
		if (*p < 0x20 || *p == 0x7f || *p == '\\') {
			out[n++] = '\\';
			out[n++] = 'x';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 15];
		} else {
			out[n++] = (char)*p;
		}
	}
	out[n] = '\0';
}

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t warned[SAFE_WARN_PATHS];
static unsigned int warned_next, window_count, suppressed;
static uint64_t window_start;

void safe_warn(const char *what, const char *root, const char *path,
	       const char *why)
{
	uint64_t h = fnv1a(fnv1a(0xcbf29ce484222325ull, what), path), now;
	char p[1024], r[256];

	if (!safe_refused(why))
		return;
	if (!h)
		h = 1;
	pthread_mutex_lock(&warn_lock);
	for (unsigned int i = 0; i < SAFE_WARN_PATHS; i++)
		if (warned[i] == h)
			goto out;
	now = mono_ns();
	if (!window_start || now - window_start >= 60000000000ull) {
		if (suppressed)
			fprintf(stderr, "ember: %u more files ignored in a "
				"minute (warnings are limited to %d a minute)\n",
				suppressed, SAFE_WARN_PER_MIN);
		window_start = now;
		window_count = suppressed = 0;
	}
	if (window_count >= SAFE_WARN_PER_MIN) {
		suppressed++;
		goto out;
	}
	window_count++;
	warned[warned_next++ % SAFE_WARN_PATHS] = h;
	escape(p, sizeof(p), path);
	if (root && root[0]) {
		escape(r, sizeof(r), root);
		fprintf(stderr, "ember: ignoring %s %s (in %s): it %s\n",
			what, p, r, why);
	} else {
		fprintf(stderr, "ember: ignoring %s %s: it %s\n", what, p, why);
	}
out:
	pthread_mutex_unlock(&warn_lock);
}

/* ------------------------------------------------------------ processes */

uid_t safe_proc_uid(uint32_t pid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u", pid);
	return stat(path, &st) ? SAFE_ANY_OWNER : st.st_uid;
}

void safe_proc_owners(uint32_t pid, uid_t owners[2])
{
	char path[48], buf[4096], *line;
	ssize_t n = -1;
	int fd;

	owners[0] = safe_proc_uid(pid);
	owners[1] = SAFE_ANY_OWNER;
	snprintf(path, sizeof(path), "/proc/%u/uid_map", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* "inside outside count" lines: where does the namespace's 0 go? */
	for (line = buf; line; line = strchr(line, '\n')) {
		unsigned long in, out, count;

		while (*line == '\n')
			line++;
		if (sscanf(line, "%lu %lu %lu", &in, &out, &count) == 3 &&
		    in == 0 && count > 0) {
			if (out != 0 && out < SAFE_ANY_OWNER)
				owners[1] = (uid_t)out;
			return;
		}
	}
}

/* ---------------------------------------------------------------- lines */

void safe_lines_init(struct safe_lines *r, FILE *f, char *buf, size_t size,
		     uint64_t max_bytes, uint64_t max_ns)
{
	memset(r, 0, sizeof(*r));
	r->f = f;
	r->buf = buf;
	r->size = size;
	r->left = max_bytes;
	r->deadline_ns = max_ns ? mono_ns() + max_ns : 0;
}

char *safe_line(struct safe_lines *r, size_t *lenp)
{
	for (;;) {
		bool bad = false;
		size_t len = 0;
		int c;

		if (!r->left || (r->deadline_ns && mono_ns() > r->deadline_ns)) {
			r->cut = getc_unlocked(r->f) != EOF;
			return NULL;
		}
		while ((c = getc_unlocked(r->f)) != EOF) {
			if (!r->left) {		/* the budget ends inside a line */
				r->cut = true;
				return NULL;
			}
			r->left--;
			if (c == '\n')
				break;
			/* too long, or a NUL byte: not a line of text */
			if (len + 1 < r->size && c)
				r->buf[len++] = (char)c;
			else
				bad = true;
		}
		if (bad) {
			r->long_lines++;
			if (c == EOF)
				return NULL;
			continue;
		}
		if (c == EOF && !len)
			return NULL;
		r->buf[len] = '\0';
		if (lenp)
			*lenp = len;
		return r->buf;
	}
}
