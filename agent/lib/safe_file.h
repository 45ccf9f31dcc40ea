/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Opening files other users control (perf maps, files under
 * /proc/PID/root, debug files). ember runs as root beside software it does
 * not trust: such a path may be a FIFO (an open that blocks forever), a
 * symlink to /dev/zero (a read that never ends), a device (whose open alone
 * may act: a watchdog starts ticking), a huge sparse file, another user's
 * file, or go through a symlink out of a container's tree into the host's.
 * safe_open_at() refuses all of these before a single byte is read, and
 * without ever calling a device's or FIFO's open: the path is resolved to
 * an O_PATH descriptor, examined, and only a regular file is reopened for
 * reading (through /proc/self/fd, the same inode).
 *
 * Text files are read through safe_line(): bounded lines (a longer one is
 * skipped whole, never grown), a byte budget and a deadline.
 *
 * A refused file costs one warning naming it (safe_warn()): once per path,
 * and a bounded number a minute for the whole process.
 */
#ifndef EMBER_SAFE_FILE_H
#define EMBER_SAFE_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* safe_open(): any owner. In safe_rules.owners: an unused slot. */
#define SAFE_ANY_OWNER	((uid_t)-1)

/*
 * A file at least this large is refused when less than 1/SAFE_SPARSE_RATIO
 * of it is allocated: no compiler, linker or file system makes an ELF or a
 * text file that is 98% holes, while a sparse file makes terabytes of
 * "content" without costing its maker any disk (every page of a hole read
 * is a page of our memory and time).
 */
#define SAFE_SPARSE_MIN		(64ull << 20)
#define SAFE_SPARSE_RATIO	64

enum {
	/*
	 * Follow symbolic links (and /proc's magic links): only for trees
	 * root owns (the host's debug directories) and for
	 * /proc/PID/map_files/ entries, whose link is the exact mapped file.
	 * Without it no component of the path may be a symbolic link.
	 */
	SAFE_FOLLOW = 1 << 0,
	SAFE_ANYONE = 1 << 1,	/* no owner check */
};

struct safe_rules {
	uint64_t max_bytes;	/* larger files are refused */
	/*
	 * Who may own the file besides root (unused slots SAFE_ANY_OWNER):
	 * a process's uid and the uid its user namespace's root maps to
	 * (safe_proc_owners()), or ember's own uid for its own directories.
	 */
	uid_t owners[2];
	unsigned int flags;	/* SAFE_* */
};

/*
 * Opens path read-only under the rules. root NULL: path is one of ours;
 * otherwise root is a directory (e.g. "/proc/PID/root", followed) and path
 * is resolved inside it as if it were "/": never through a symbolic link
 * (openat2(RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS), or one component at a
 * time where the kernel has no openat2), so an absolute link in a
 * container cannot lead into the host's tree. A ".." component is always
 * refused. Returns the fd (blocking, close-on-exec) with *st filled, or
 * -1 with *why saying what was wrong (a literal, for safe_warn()).
 */
int safe_open_at(const char *root, const char *path,
		 const struct safe_rules *rules, struct stat *st,
		 const char **why);

/* safe_open_at(NULL, path, ...): no symlinks, owner root or owner. */
int safe_open(const char *path, uint64_t max_bytes, uid_t owner,
	      struct stat *st, const char **why);

/* Resolve like safe_open_at() without opening: just fstat. 0 or -1. */
int safe_stat_at(const char *root, const char *path, struct stat *st);

/* The rules' checks on an open fd (e.g. one a library opened). */
bool safe_check_fd(int fd, const struct safe_rules *rules, struct stat *st,
		   const char **why);

/*
 * True when why says the file is there but hostile or unfit (a link, not
 * regular, too large, sparse, another user's, a ".." path); false for a
 * file that is missing or that we may not open, which is normal.
 */
bool safe_refused(const char *why);

/*
 * "ember: ignoring WHAT PATH[ (in ROOT)]: it WHY" on stderr, for a refused
 * file only, once per WHAT and PATH (the most recent SAFE_WARN_PATHS are
 * remembered) and at most SAFE_WARN_PER_MIN a minute. Control characters
 * in PATH are escaped: file names come from other users.
 */
#define SAFE_WARN_PATHS		256
#define SAFE_WARN_PER_MIN	20
void safe_warn(const char *what, const char *root, const char *path,
	       const char *why);

/* The effective uid /proc/PID belongs to, or SAFE_ANY_OWNER if unknown. */
uid_t safe_proc_uid(uint32_t pid);
/*
 * owners[0]: safe_proc_uid(); owners[1]: the host uid the root of the
 * process's user namespace maps to (a container's own files), or
 * SAFE_ANY_OWNER when that is root or unknown.
 */
void safe_proc_owners(uint32_t pid, uid_t owners[2]);

/* ---- bounded line reading ---- */
struct safe_lines {
	FILE *f;
	char *buf;
	size_t size;
	uint64_t left;		/* bytes that may still be read */
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC; 0: none */
	bool cut;		/* a budget ran out before the end */
	uint64_t long_lines;	/* lines skipped for not fitting buf */
};

/*
 * Read f's lines into buf (size bytes: lines up to size - 1 characters
 * without their newline), at most max_bytes in all and for at most max_ns
 * (0: no deadline).
 */
void safe_lines_init(struct safe_lines *r, FILE *f, char *buf, size_t size,
		     uint64_t max_bytes, uint64_t max_ns);
/*
 * The next line, NUL-terminated with its newline cut, or NULL at the end
 * or when a budget ran out (r->cut). A line that does not fit, or holds a
 * NUL byte, is skipped whole (r->long_lines): memory never grows with it.
 */
char *safe_line(struct safe_lines *r, size_t *len);

/* For tests: behave as on a kernel without openat2 (before 5.6). */
extern bool safe_file_no_openat2;

#endif
