/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ember record -- CMD: the command's unwind tables bound before its first
 * instruction runs (record_startup.c). cmd_record.c's only.
 */
#ifndef EMBER_RECORD_STARTUP_H
#define EMBER_RECORD_STARTUP_H

#include <stdbool.h>
#include <sys/types.h>

/* Bind pid's executable mappings now; returns once done (or timed out). */
typedef void (*startup_bind_fn)(void *ctx, pid_t pid);

struct startup_stats {
	unsigned int binds;		/* synchronous bindings made */
	unsigned int syscalls;		/* syscall stops seen */
	unsigned long long held_ns;	/* time the command was held */
};

/*
 * Trace the command child_spawn() holds before its exec: 0, or -errno
 * (then it runs untraced, bound as any process is, when it first misses).
 */
int startup_attach(pid_t pid);

/*
 * After child_release() of a command startup_attach() took: it stops
 * right after its exec. Bind it there (the executable and the dynamic
 * loader are mapped, nothing has run), then follow its system calls while
 * the dynamic loader maps its libraries, binding again after each
 * executable mapping, and let it go at its first system call made from
 * outside the loader (its libraries' initialization or main()). 0: it
 * runs, untraced; 1: it exited before that (*status, as waitpid's);
 * -errno: the trace failed and the command was let go as it was.
 */
int startup_follow(pid_t pid, startup_bind_fn bind, void *ctx, int *status,
		   struct startup_stats *st);

#endif
