/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ember record's targets (record_child.c): a cgroup given by path, and the
 * command it starts. cmd_record.c's only.
 */
#ifndef EMBER_RECORD_CHILD_H
#define EMBER_RECORD_CHILD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct child_cgroup {
	char path[4096];
	uint64_t id;
};

/* The command waits on go[0] until the session runs, then execs. */
struct child {
	pid_t pid;
	int go_fd;		/* write end: one byte releases it */
	int err_fd;		/* read end: errno if exec failed, EOF if it ran */
};

/*
 * -e alloc: the command runs with ember's sampler preloaded (before any
 * library it preloads itself) and the sampling rate in its environment.
 * Done in the child, before exec: ember's own environment stays as is.
 */
struct child_env {
	const char *preload;	/* absolute path, or NULL */
	uint64_t alloc_rate;
};

/*
 * The id (its directory's inode) and resolved directory of the cgroup v2
 * PATH; -1 with err saying what was expected.
 */
int cgroup_id_of(const char *path, uint64_t *id, char *dir, size_t dir_len,
		 char *err, size_t err_len);
/* A fresh cgroup below our own for the command: 0, or -1. */
int child_cgroup_create(struct child_cgroup *cg);
/* Move pid into it: 0, or -1. */
int child_cgroup_enter(struct child_cgroup *cg, pid_t pid);
/* Fork the command, held before its exec until child_release(). */
int child_spawn(char **command, const struct child_env *env,
		struct child *ch);
/* Let it exec: 0 once it exec'd, else the exec's errno. */
int child_release(struct child *ch);
/* Kill and reap a command that never ran. */
void child_abort(struct child *ch);

#endif
