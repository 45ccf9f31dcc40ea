// SPDX-License-Identifier: GPL-2.0-only
/* container.id from cgroup paths (see container.h). */
#include <stdio.h>
#include <string.h>
#include "proc/container.h"
#include "lib/safe_file.h"

static bool is_hex_id(const char *s, size_t n)
{
	if (n != CONTAINER_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool starts_with(const char *s, size_t n, const char *prefix)
{
	size_t p = strlen(prefix);

	return n >= p && !memcmp(s, prefix, p);
}

/* The id in one path component, if it names a container. */
static bool component_id(const char *s, size_t n, char *out, size_t len)
{
	static const char *const prefixes[] = {
		"docker-", "cri-containerd-", "crio-", "libpod-",
		"containerd-", "cri-o-",
	};

	if (starts_with(s, n, "libpod-conmon-") ||
	    starts_with(s, n, "crio-conmon-"))
		return false;
	if (n > 6 && !memcmp(s + n - 6, ".scope", 6))
		n -= 6;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t p = strlen(prefixes[i]);

		if (starts_with(s, n, prefixes[i])) {
			s += p;
			n -= p;
			break;
		}
	}
	if (!is_hex_id(s, n) || len <= n)
		return false;
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

bool container_id_from_cgroup(const char *path, char *out, size_t len)
{
	size_t end;

	if (!path || !out || !len)
		return false;
	/* Innermost first: nested cgroups ("libpod-<id>.scope/container")
	 * and pods inside VMs name the container below their parents. */
	end = strlen(path);
	while (end > 0) {
		size_t start = end;

		while (start > 0 && path[start - 1] != '/')
			start--;
		if (component_id(path + start, end - start, out, len))
			return true;
		end = start ? start - 1 : 0;
	}
	return false;
}

/* One "hierarchy:controllers:path" line (v2 is "0::path"), len bytes. */
static bool id_from_line(const char *line, size_t n, char *out, size_t len)
{
	const char *c1 = memchr(line, ':', n), *c2;
	char path[4096];
	size_t plen;

	if (!c1 || !(c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line))))
		return false;
	plen = n - (size_t)(c2 + 1 - line);
	if (plen >= sizeof(path))
		return false;
	memcpy(path, c2 + 1, plen);
	path[plen] = '\0';
	return container_id_from_cgroup(path, out, len);
}

bool container_id_from_proc_cgroup(const char *text, char *out, size_t len)
{
	while (text && *text) {
		size_t n = strcspn(text, "\n");

		if (id_from_line(text, n, out, len))
			return true;
		text += n;
		if (*text)
			text++;
	}
	return false;
}

/*
 * A cgroup path under a delegated subtree is its user's to make, as deep
 * as they like: a line longer than any path id_from_line() takes is
 * skipped whole (read in pieces, a piece is never taken for a line), and
 * the file is read up to a budget.
 */
bool container_id_for_pid(pid_t pid, char *out, size_t len)
{
	char file[64], buf[4096 + 64], *line;
	struct safe_lines lines;
	bool found = false;
	size_t n;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	f = fopen(file, "re");
	if (!f)
		return false;
	safe_lines_init(&lines, f, buf, sizeof(buf), 1u << 20, 0);
	while (!found && (line = safe_line(&lines, &n)))
		found = id_from_line(line, n, out, len);
	fclose(f);
	return found;
}
