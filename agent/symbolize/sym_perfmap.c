// SPDX-License-Identifier: GPL-2.0-only
/*
 * JIT symbols from perf map files (/tmp/perf-PID.map), the convention JITs
 * (V8/node --perf-basic-prof, the JVM with perf-map-agent, LuaJIT, .NET,
 * CPython 3.12 -X perf) use to tell profilers what their code is:
 *   START SIZE NAME      (START and SIZE in hex, NAME to end of line)
 * Later entries win when ranges overlap (code was regenerated there).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/safe_file.h"
#include "symbolize/symbolize_internal.h"

/* A broken or hostile map file cannot make us hold more than this. */
#define PERFMAP_MAX_BYTES (64u << 20)
/* ... nor read more than this, nor a line longer than this */
#define PERFMAP_MAX_FILE (256u << 20)
#define PERFMAP_MAX_LINE 4096
#define PERFMAP_MAX_NS (2ull * 1000000000)	/* ... nor for longer */

struct jit_sym {
	uint64_t start, end;
	uint32_t name;		/* offset into names */
	uint32_t seq;		/* line number: later wins */
};

struct sym_perfmap {
	struct jit_sym *syms;
	size_t nr, cap;
	char *names;
	size_t names_len, names_cap;
	off_t file_size;
};

static int cmp_jit(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool add(struct sym_perfmap *m, uint64_t start, uint64_t size,
		const char *name, size_t len)
{
	if (m->nr == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct jit_sym *s = realloc(m->syms, cap * sizeof(*s));

		if (!s)
			return false;
		m->syms = s;
		m->cap = cap;
	}
	if (m->names_len + len + 1 > m->names_cap) {
		size_t cap = m->names_cap ? m->names_cap * 2 : 4096;
		char *n;

		while (cap < m->names_len + len + 1)
			cap *= 2;
		n = realloc(m->names, cap);
		if (!n)
			return false;
		m->names = n;
		m->names_cap = cap;
	}
	memcpy(m->names + m->names_len, name, len);
	m->names[m->names_len + len] = '\0';
	m->syms[m->nr] = (struct jit_sym){ start, start + size,
					   (uint32_t)m->names_len, (uint32_t)m->nr };
	m->names_len += len + 1;
	m->nr++;
	return true;
}

/*
 * The file is the process's, which may be anyone's: opened with
 * safe_open_at() (no FIFO, device, symlink, other owner or huge file;
 * inside the process's root when root is given), read in bounded lines,
 * at most PERFMAP_MAX_FILE bytes and for at most PERFMAP_MAX_NS. A bad
 * file costs one warning naming it.
 */
struct sym_perfmap *sym_perfmap_load(const char *root, const char *path,
				     const uid_t owners[2])
{
	struct safe_rules rules = {
		.max_bytes = PERFMAP_MAX_FILE,
		.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
		.flags = owners ? 0 : SAFE_ANYONE,
	};
	char line[PERFMAP_MAX_LINE], *p, *end;
	struct safe_lines lines;
	struct sym_perfmap *m;
	const char *why;
	struct stat st;
	size_t len;
	FILE *f;
	int fd;

	if (owners) {
		rules.owners[0] = owners[0];
		rules.owners[1] = owners[1];
	}
	fd = safe_open_at(root, path, &rules, &st, &why);
	if (fd < 0) {
		/* a missing map is the normal case: quiet */
		safe_warn("JIT map", root, path, why);
		return NULL;
	}
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		fclose(f);
		return NULL;
	}
	m->file_size = st.st_size;
	/* a line longer than any symbol is skipped whole */
	safe_lines_init(&lines, f, line, sizeof(line), PERFMAP_MAX_FILE,
			PERFMAP_MAX_NS);
	while ((p = safe_line(&lines, &len))) {
		uint64_t start, size;

		if (m->names_len + m->nr * sizeof(struct jit_sym) > PERFMAP_MAX_BYTES)
			break;
		start = strtoull(line, &end, 16);
		if (end == line || *end != ' ')
			continue;
		p = end + 1;
		size = strtoull(p, &end, 16);
		if (end == p || *end != ' ' || !size || start + size < start)
			continue;
		p = end + 1;
		len = strcspn(p, "\r\n");
		if (!len || !add(m, start, size, p, len))
			continue;
	}
	fclose(f);
	qsort(m->syms, m->nr, sizeof(*m->syms), cmp_jit);
	return m;
}

void sym_perfmap_free(struct sym_perfmap *m)
{
	if (!m)
		return;
	free(m->syms);
	free(m->names);
	free(m);
}

const char *sym_perfmap_lookup(const struct sym_perfmap *m, uint64_t addr)
{
	const struct jit_sym *best = NULL;
	size_t lo = 0, hi;

	if (!m || !m->nr)
		return NULL;
	hi = m->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * Entries are sorted by start; scan back a little for the newest one
	 * covering addr (overlaps are rare, so this stays short).
	 */
	for (size_t i = lo, steps = 0; i-- > 0 && steps < 64; steps++) {
		const struct jit_sym *s = &m->syms[i];

		if (addr < s->end && (!best || s->seq > best->seq))
			best = s;
	}
	return best ? m->names + best->name : NULL;
}

off_t sym_perfmap_file_size(const struct sym_perfmap *m)
{
	return m ? m->file_size : 0;
}

size_t sym_perfmap_bytes(const struct sym_perfmap *m)
{
	return m ? sizeof(*m) + m->cap * sizeof(*m->syms) + m->names_cap : 0;
}
