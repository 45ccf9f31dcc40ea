// SPDX-License-Identifier: GPL-2.0-only
/*
 * One line of /proc/PID/maps:
 *   start-end perms pgoff major:minor inode   path
 * The path may contain spaces, is absent for anonymous memory, is a
 * [pseudo] name for vdso/vsyscall/stack/heap, ends in " (deleted)" when the
 * file was removed, and starts with "/memfd:" for memfd_create() memory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include "lib/hash_index.h"
#include "proc/proc_maps.h"
#include "lib/safe_file.h"

#define MAPS_MAX_LINE	(4096 + 256)
#define MAPS_READ_BUF	(64u << 10)

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

int proc_maps_read(const char *root, uint32_t pid, proc_maps_fn fn, void *ctx,
		   uint64_t *hash)
{
	return proc_maps_read_cut(root, pid, fn, ctx, hash, NULL);
}

int proc_maps_read_cut(const char *root, uint32_t pid, proc_maps_fn fn,
		       void *ctx, uint64_t *hash, bool *cut)
{
	char path[4200], line_buf[MAPS_MAX_LINE], *line;
	uint64_t h = HASH_BYTES_INIT;
	struct safe_lines lines;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u/maps", root ? root : "/proc", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/*
	 * Whole in one or two read()s: each read of a /proc maps file takes
	 * the process's mmap lock and finds its place again, and stdio's
	 * 1 KiB reads made that 4-5 times per exec on a host that starts
	 * 100 programs a second.
	 */
	setvbuf(f, NULL, _IOFBF, MAPS_READ_BUF);
	safe_lines_init(&lines, f, line_buf, sizeof(line_buf),
			PROC_MAPS_MAX_BYTES, PROC_MAPS_MAX_NS);
	while ((line = safe_line(&lines, &len))) {
		struct sym_map_line m;

		/* Code is only ever executed from executable mappings. */
		if (!sym_maps_parse_line(line, &m) || !m.exec)
			continue;
		/* the parse cut nothing safe_line() had not cut already */
		if (hash)
			h = hash_bytes_more(h, line, len);
		if (!fn(ctx, &m))
			break;
	}
	/* a line skipped for its length hides a mapping as a cut does */
	if (cut)
		*cut = lines.cut || lines.long_lines || ferror(f);
	fclose(f);
	if (hash)
		*hash = h;
	return 0;
}

void proc_map_files_path(char *buf, size_t len, uint32_t pid, uint64_t start,
			 uint64_t end)
{
	snprintf(buf, len, "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)start, (unsigned long long)end);
}

int proc_map_files_open(uint32_t pid, uint64_t start, uint64_t end,
			const struct safe_rules *rules, struct stat *st,
			const char **why)
{
	char path[64];
	uint64_t real_end;
	int fd;

	/* a magic link to the mapped file: followed, that is its use */
	proc_map_files_path(path, sizeof(path), pid, start, end);
	fd = safe_open_at(NULL, path, rules, st, why);
	if (fd >= 0 || safe_refused(*why) ||
	    proc_map_files_end(pid, start, &real_end) || !real_end ||
	    real_end == end)
		return fd;
	/* the range as the kernel's mapping records told it, longer than
	 * the mapping now: the name the kernel gives it */
	proc_map_files_path(path, sizeof(path), pid, start, real_end);
	return safe_open_at(NULL, path, rules, st, why);
}

int proc_mapped_open(uint32_t pid, uint64_t start, uint64_t end,
		     const char *path, const char *root, uint64_t max_bytes,
		     struct stat *st, const char **why)
{
	struct safe_rules rules = {
		.max_bytes = max_bytes,
		.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
		.flags = SAFE_FOLLOW | SAFE_ANYONE,
	};
	size_t len = path ? strlen(path) : 0;
	char buf[64];
	int fd = -1;

	*why = NULL;
	if (start < end)
		fd = proc_map_files_open(pid, start, end, &rules, st, why);
	if (fd >= 0 || (*why && safe_refused(*why)) || !len ||
	    path[0] != '/' ||
	    (len > 10 && !strcmp(path + len - 10, " (deleted)")))
		return fd;
	if (!root) {
		snprintf(buf, sizeof(buf), "/proc/%u/root", pid);
		root = buf;
	}
	/* by name: no link followed, in the process's root or not at all */
	rules.flags = SAFE_ANYONE;
	return safe_open_at(root, path, &rules, st, why);
}

int proc_map_files_end(uint32_t pid, uint64_t start, uint64_t *end)
{
	char dir[48];
	struct dirent *d;
	DIR *dp;
	uint32_t n = 0;

	*end = 0;
	snprintf(dir, sizeof(dir), "/proc/%u/map_files", pid);
	dp = opendir(dir);
	if (!dp)
		return -1;
	while ((d = readdir(dp)) && n++ < PROC_MAP_FILES_MAX_NAMES) {
		unsigned long long lo, hi;

		if (sscanf(d->d_name, "%llx-%llx", &lo, &hi) == 2 &&
		    lo == start && hi > lo) {
			*end = hi;
			break;
		}
	}
	closedir(dp);
	return 0;
}
