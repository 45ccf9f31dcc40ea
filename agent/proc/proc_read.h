/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Reading one process's small /proc files (proc_read.c), under a root
 * that is "/proc" except in tests. proc/ only: users go through proc.h.
 * Every read is bounded; malformed content leaves the field unknown.
 */
#ifndef EMBER_PROC_READ_H
#define EMBER_PROC_READ_H

#include <stdbool.h>
#include <stdint.h>

#define PROC_COMM_LEN	16	/* TASK_COMM_LEN, like EMBER_COMM_LEN */

/*
 * ROOT/PID/stat: comm (PROC_COMM_LEN bytes, NUL-terminated) and the
 * start time in clock ticks since boot. false: unreadable or malformed
 * (comm and *start_ticks untouched).
 */
bool proc_read_stat(const char *root, uint32_t pid, char *comm,
		    uint64_t *start_ticks);
/* ROOT/PID/exe's target, malloc'd, or NULL. */
char *proc_read_exe(const char *root, uint32_t pid);
/*
 * ROOT/PID/cgroup: the cgroup v2 path ("0::PATH") and the container id
 * (v2 line, else any v1 line), each malloc'd or NULL.
 */
void proc_read_cgroup(const char *root, uint32_t pid, char **path,
		      char **container_id);

/*
 * ROOT/stat's steal: clock ticks since boot the hypervisor took from
 * this machine's CPUs. false: unreadable or malformed.
 */
bool proc_steal_ticks(const char *root, uint64_t *ticks);

#endif
