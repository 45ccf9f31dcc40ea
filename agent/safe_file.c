// SPDX-License-Identifier: GPL-2.0-only
/* Opening files other users control (safe_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "safe_file.h"

int safe_open(const char *path, uint64_t max_bytes, uid_t owner,
	      struct stat *st, const char **why)
{
	struct stat tmp;
	int fd;

	if (!st)
		st = &tmp;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		*why = errno == ELOOP ? "is a symbolic link" : "cannot be opened";
		return -1;
	}
	if (fstat(fd, st)) {
		*why = "cannot be examined";
	} else if (!S_ISREG(st->st_mode)) {
		*why = "is not a regular file (FIFO, device, directory?)";
	} else if ((uint64_t)st->st_size > max_bytes) {
		*why = "is larger than ember reads";
	} else if (owner != SAFE_ANY_OWNER && st->st_uid != 0 &&
		   st->st_uid != owner) {
		*why = "belongs to another user than the process";
	} else {
		/* regular files never block: back to blocking reads */
		fcntl(fd, F_SETFL, 0);
		return fd;
	}
	close(fd);
	return -1;
}

uid_t safe_proc_uid(uint32_t pid)
{
	char path[32];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%u", pid);
	return stat(path, &st) ? SAFE_ANY_OWNER : st.st_uid;
}
