// SPDX-License-Identifier: GPL-2.0-only
/*
 * One process's small /proc files (proc_read.h). What an exec-heavy host
 * pays per new process: stat (comm and start time in one open), the exe
 * link and cgroup; an exec record names comm and the file, so then only
 * cgroup is read.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc/container.h"
#include "proc/proc_read.h"

/* Read a small file into buf (NUL-terminated, trailing newlines cut). */
static bool read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return n > 0;
}

/*
 * "pid (comm) state ppid ... starttime ...": comm may hold spaces and
 * parentheses, so the fields are counted after the last ')'; starttime is
 * field 22, the 20th after it.
 */
bool proc_read_stat(const char *root, uint32_t pid, char *comm,
		    uint64_t *start_ticks)
{
	char path[PATH_MAX], buf[1024], *open_paren, *close_paren, *p, *end;
	unsigned long long v;
	size_t n;

	snprintf(path, sizeof(path), "%s/%u/stat", root, pid);
	if (!read_small(path, buf, sizeof(buf)))
		return false;
	open_paren = strchr(buf, '(');
	close_paren = strrchr(buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return false;
	p = close_paren + 1;
	for (int field = 3; field < 22; field++) {
		p += strspn(p, " ");
		p += strcspn(p, " ");
		if (!*p)
			return false;
	}
	v = strtoull(p, &end, 10);
	if (end == p || (*end && *end != ' '))
		return false;
	n = (size_t)(close_paren - open_paren - 1);
	if (n > PROC_COMM_LEN - 1)
		n = PROC_COMM_LEN - 1;
	memcpy(comm, open_paren + 1, n);
	comm[n] = '\0';
	*start_ticks = v;
	return true;
}

char *proc_read_exe(const char *root, uint32_t pid)
{
	char path[PATH_MAX], buf[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u/exe", root, pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

void proc_read_cgroup(const char *root, uint32_t pid, char **path,
		      char **container_id)
{
	char file[PATH_MAX], buf[PATH_MAX], id[CONTAINER_ID_LEN + 1], *line;

	*path = NULL;
	*container_id = NULL;
	snprintf(file, sizeof(file), "%s/%u/cgroup", root, pid);
	if (!read_small(file, buf, sizeof(buf)))
		return;
	/*
	 * One read for both (a second open cost ~15 us per new process):
	 * the container id also comes from cgroup v1 hierarchies, where the
	 * v2 path is "/".
	 */
	if (container_id_from_proc_cgroup(buf, id, sizeof(id)))
		*container_id = strdup(id);
	line = strstr(buf, "0::");
	if (line == buf || (line && line[-1] == '\n')) {
		char *end = strchr(line, '\n');

		if (end)
			*end = '\0';
		*path = strdup(line + 3);
	}
}

/*
 * The first line of ROOT/stat is "cpu  user nice system idle iowait irq
 * softirq steal ...": the 8th number is the time the hypervisor took, in
 * clock ticks since boot. Only that line is read (the file grows with
 * the CPUs and interrupts).
 */
bool proc_steal_ticks(const char *root, uint64_t *ticks)
{
	unsigned long long v[8];
	char path[PATH_MAX], buf[512];

	snprintf(path, sizeof(path), "%s/stat", root ? root : "/proc");
	if (!read_small(path, buf, sizeof(buf)) ||
	    sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
		return false;
	*ticks = v[7];
	return true;
}
