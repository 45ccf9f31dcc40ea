/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Opening files other users control (perf maps, files under
 * /proc/PID/root, debug files). ember runs as root beside software it does
 * not trust: such a path may be a FIFO (an open that blocks forever), a
 * symlink to /dev/zero (a read that never ends), a device, a huge sparse
 * file or another user's file. safe_open() refuses all of these before a
 * single byte is read.
 */
#ifndef EMBER_SAFE_FILE_H
#define EMBER_SAFE_FILE_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define SAFE_ANY_OWNER	((uid_t)-1)

/*
 * Open path read-only without following a final symlink, without
 * blocking, and keep it only if it is a regular file of at most max_bytes
 * owned by root or by owner (SAFE_ANY_OWNER: anyone). Returns the fd, or
 * -1 with *why saying what was wrong (a literal: for one warning).
 */
int safe_open(const char *path, uint64_t max_bytes, uid_t owner,
	      struct stat *st, const char **why);

/* The effective uid /proc/PID belongs to, or SAFE_ANY_OWNER if unknown. */
uid_t safe_proc_uid(uint32_t pid);

#endif
