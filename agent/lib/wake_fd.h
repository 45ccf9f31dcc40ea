/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A file descriptor that another thread makes readable to cut a poll()
 * short (an eventfd): the backends' rings are polled beside one, so that
 * the reader can be asked to drain now (ring_reader_sync(), stop).
 */
#ifndef EMBER_LIB_WAKE_FD_H
#define EMBER_LIB_WAKE_FD_H

#include <stdint.h>
#include <unistd.h>
#include <sys/eventfd.h>

/* A new one, or -1 (a poll without it waits its whole timeout). */
static inline int wake_fd_open(void)
{
	return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

/* Readable from now until wake_fd_clear(). Async-signal-safe. */
static inline void wake_fd_signal(int fd)
{
	uint64_t one = 1;

	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, so it is readable already */
	}
}

/* Not readable any more (after a poll() said it was). */
static inline void wake_fd_clear(int fd)
{
	uint64_t n;

	if (fd >= 0 && read(fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: nobody signalled since the last clear */
	}
}

#endif
