// SPDX-License-Identifier: GPL-2.0-only
/*
 * One line of /proc/PID/maps:
 *   start-end perms pgoff major:minor inode   path
 * The path may contain spaces, is absent for anonymous memory, is a
 * [pseudo] name for vdso/vsyscall/stack/heap, ends in " (deleted)" when the
 * file was removed, and starts with "/memfd:" for memfd_create() memory.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include "proc_maps.h"

static const char DELETED[] = " (deleted)";

static bool hex_field(char **p, char sep, uint64_t *v)
{
	char *end;

	*v = strtoull(*p, &end, 16);
	if (end == *p || *end != sep)
		return false;
	*p = end + 1;
	return true;
}

bool sym_maps_parse_line(char *line, struct sym_map_line *m)
{
	char *p = line, *path;
	uint64_t major, minor;
	size_t len;

	memset(m, 0, sizeof(*m));
	if (!hex_field(&p, '-', &m->start) || !hex_field(&p, ' ', &m->end))
		return false;
	if (strlen(p) < 5 || p[4] != ' ')
		return false;
	m->exec = p[2] == 'x';
	p += 5;
	if (!hex_field(&p, ' ', &m->pgoff) || !hex_field(&p, ':', &major) ||
	    !hex_field(&p, ' ', &minor))
		return false;
	m->dev = makedev(major, minor);
	m->ino = strtoull(p, &path, 10);
	if (path == p || m->end <= m->start)
		return false;
	path += strspn(path, " ");
	len = strcspn(path, "\n");
	path[len] = '\0';
	if (len >= sizeof(DELETED) - 1 &&
	    strcmp(path + len - (sizeof(DELETED) - 1), DELETED) == 0) {
		m->deleted = true;
		len -= sizeof(DELETED) - 1;
	}
	m->path = path;
	m->path_len = len;
	if (len == 0)
		m->type = SYM_MAP_ANON;
	else if (strcmp(path, "[vdso]") == 0)
		m->type = SYM_MAP_VDSO;
	else if (strcmp(path, "[vsyscall]") == 0)
		m->type = SYM_MAP_VSYSCALL;
	else if (strncmp(path, "/memfd:", 7) == 0)
		m->type = SYM_MAP_MEMFD;
	else if (path[0] == '/' && m->ino)
		m->type = SYM_MAP_FILE;
	else if (strncmp(path, "[anon:", 6) == 0)
		m->type = SYM_MAP_ANON;	/* named anonymous memory (prctl) */
	else
		m->type = SYM_MAP_OTHER;
	return true;
}
