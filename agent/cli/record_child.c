// SPDX-License-Identifier: GPL-2.0-only
/*
 * What ember record profiles besides the whole system (record_child.h):
 * a --cgroup given by path, or a command it starts, held until the
 * session runs, in a fresh cgroup of its own where one can be made.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/magic.h>
#include "cli/options.h"
#include "cli/record_child.h"

/* Where cgroup v2 is mounted, or NULL. */
static const char *cgroup2_root(void)
{
	struct statfs sfs;

	if (!statfs(CGROUP_ROOT, &sfs) && sfs.f_type == CGROUP2_SUPER_MAGIC)
		return CGROUP_ROOT;
	if (!statfs(CGROUP_ROOT "/unified", &sfs) && sfs.f_type == CGROUP2_SUPER_MAGIC)
		return CGROUP_ROOT "/unified";
	return NULL;
}

static int cgroup_fail(char *err, size_t err_len, const char *path,
		       const char *root, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(err, err_len, "--cgroup %s: %s; expected " CGROUP_EXPECTED,
		 path, why, root);
	return -1;
}

/*
 * A cgroup's id is the inode number of its directory. PATH is relative to
 * the cgroup v2 root (a leading '/' too, as /proc/PID/cgroup writes it)
 * unless it is a path under /sys/; either way it must resolve (realpath:
 * symlinks, "//", ".") to a cgroup v2 directory under that root.
 */
int cgroup_id_of(const char *path, uint64_t *id, char *dir,
			size_t dir_len, char *err, size_t err_len)
{
	const char *root = cgroup2_root();
	char full[PATH_MAX + 64], real[PATH_MAX], real_root[PATH_MAX];
	struct statfs sfs;
	struct stat st;
	size_t n;

	if (!root)
		return cgroup_fail(err, err_len, path, CGROUP_ROOT, "no cgroup v2 "
				   "hierarchy is mounted at " CGROUP_ROOT " or "
				   CGROUP_ROOT "/unified");
	if (!strncmp(path, "/sys/", 5))
		snprintf(full, sizeof(full), "%s", path);
	else
		snprintf(full, sizeof(full), "%s/%s", root,
			 path[0] == '/' ? path + 1 : path);
	if (!realpath(full, real))
		return cgroup_fail(err, err_len, path, root, "%s: %s", full,
				   strerror(errno));
	if (!realpath(root, real_root))
		snprintf(real_root, sizeof(real_root), "%s", root);
	n = strlen(real_root);
	if (strncmp(real, real_root, n) || (real[n] != '\0' && real[n] != '/'))
		return cgroup_fail(err, err_len, path, root, "%s is outside the "
				   "cgroup v2 root %s", real, root);
	if (stat(real, &st) || !S_ISDIR(st.st_mode) || statfs(real, &sfs) ||
	    sfs.f_type != CGROUP2_SUPER_MAGIC)
		return cgroup_fail(err, err_len, path, root, "%s is not a cgroup "
				   "v2 directory", real);
	*id = st.st_ino;
	snprintf(dir, dir_len, "%s", real);
	return 0;
}

/* A fresh cgroup below our own for the command (no controllers needed). */
int child_cgroup_create(struct child_cgroup *cg)
{
	const char *root = cgroup2_root();
	char own[2048] = "", line[2040];
	struct stat st;
	FILE *f;

	if (!root)
		return -1;
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(own, sizeof(own), "%s", line + 3);
		}
	fclose(f);
	if (!own[0])
		return -1;
	snprintf(cg->path, sizeof(cg->path), "%s%s/ember-record-%d", root,
		 strcmp(own, "/") ? own : "", getpid());
	if (mkdir(cg->path, 0755) && errno != EEXIST)
		return -1;
	if (stat(cg->path, &st)) {
		rmdir(cg->path);
		return -1;
	}
	cg->id = st.st_ino;
	return 0;
}

int child_cgroup_enter(struct child_cgroup *cg, pid_t pid)
{
	char path[4200];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg->path);
	f = fopen(path, "we");
	if (!f)
		return -1;
	ok = fprintf(f, "%d\n", pid) > 0;
	ok = !fclose(f) && ok;
	return ok ? 0 : -1;
}

static void child_set_env(const struct child_env *env)
{
	const char *old = getenv("LD_PRELOAD");
	char rate[32], *v;

	if (!env || !env->preload)
		return;
	if (old && *old && asprintf(&v, "%s %s", env->preload, old) > 0)
		setenv("LD_PRELOAD", v, 1);
	else
		setenv("LD_PRELOAD", env->preload, 1);
	if (env->alloc_rate) {
		snprintf(rate, sizeof(rate), "%llu",
			 (unsigned long long)env->alloc_rate);
		setenv("EMBER_ALLOC_RATE", rate, 1);
	}
}

int child_spawn(char **command, const struct child_env *env,
		       struct child *ch)
{
	int go[2], ep[2];

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(ep, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	ch->pid = fork();
	if (ch->pid < 0) {
		int e = errno;

		close(go[0]); close(go[1]); close(ep[0]); close(ep[1]);
		return -e;
	}
	if (ch->pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(ep[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);	/* ember gave up before starting it */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		child_set_env(env);
		execvp(command[0], command);
		e = errno;
		if (write(ep[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ep[1]);
	ch->go_fd = go[1];
	ch->err_fd = ep[0];
	return 0;
}

/* Release the command; 0 once it exec'd, else the exec errno. */
int child_release(struct child *ch)
{
	int e = 0;
	ssize_t n;

	if (write(ch->go_fd, "g", 1) != 1)
		e = errno;
	close(ch->go_fd);
	ch->go_fd = -1;
	do {
		n = read(ch->err_fd, &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(ch->err_fd);
	ch->err_fd = -1;
	return n == sizeof(e) ? e : 0;
}

void child_abort(struct child *ch)
{
	int st;

	if (ch->go_fd >= 0)
		close(ch->go_fd);	/* read() sees EOF: it exits 127 */
	if (ch->err_fd >= 0)
		close(ch->err_fd);
	while (waitpid(ch->pid, &st, 0) < 0 && errno == EINTR)
		;
}
