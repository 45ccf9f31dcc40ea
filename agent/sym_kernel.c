// SPDX-License-Identifier: GPL-2.0-only
/*
 * Kernel symbols from /proc/kallsyms (kernel and loaded modules), parsed
 * once into an array sorted by address. Only text symbols are kept: data
 * symbols would cut functions short and stack addresses are always code.
 * kallsyms has no sizes, so a symbol ends where the next one starts.
 *
 * With kptr_restrict (or without CAP_SYSLOG) every address reads as 0:
 * sym_kernel_hidden() tells, and the caller says what to do.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sym_internal.h"

#define KERNEL_MODULE "[kernel.kallsyms]"

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset into names */
	uint32_t module;	/* index into modules */
};

struct kmodule {
	char *name;		/* "[kernel.kallsyms]" or "[mod]" */
	uint64_t base;		/* lowest text address seen */
};

struct sym_kernel {
	struct ksym *syms;
	size_t nr_syms, cap_syms;
	char *names;
	size_t names_len, names_cap;
	struct kmodule *modules;
	size_t nr_modules;
	uint64_t text_end;	/* _etext, bounds the last core symbol */
	bool hidden;
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static int module_index(struct sym_kernel *k, const char *name, size_t len)
{
	struct kmodule *m;

	for (size_t i = 0; i < k->nr_modules; i++) {
		if (strlen(k->modules[i].name) == len + 2 &&
		    strncmp(k->modules[i].name + 1, name, len) == 0)
			return (int)i;
	}
	m = realloc(k->modules, (k->nr_modules + 1) * sizeof(*m));
	if (!m)
		return -1;
	k->modules = m;
	m = &k->modules[k->nr_modules];
	m->name = malloc(len + 3);
	if (!m->name)
		return -1;
	m->name[0] = '[';
	memcpy(m->name + 1, name, len);
	memcpy(m->name + 1 + len, "]", 2);
	m->base = UINT64_MAX;
	return (int)k->nr_modules++;
}

static bool add_name(struct sym_kernel *k, const char *name, size_t len,
		     uint32_t *off)
{
	if (k->names_len + len + 1 > k->names_cap) {
		size_t cap = k->names_cap ? k->names_cap * 2 : 1 << 20;
		char *n;

		while (cap < k->names_len + len + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return false;
		n = realloc(k->names, cap);
		if (!n)
			return false;
		k->names = n;
		k->names_cap = cap;
	}
	memcpy(k->names + k->names_len, name, len);
	k->names[k->names_len + len] = '\0';
	*off = (uint32_t)k->names_len;
	k->names_len += len + 1;
	return true;
}

/* "ffffffff81000000 T _text" or "ffffffffc0000000 t fn\t[mod]" */
static bool parse_line(struct sym_kernel *k, char *line, bool *any_nonzero)
{
	char *p = line, *end, *name, *mod = NULL;
	uint64_t addr;
	size_t name_len, mod_len = 0;
	uint32_t off;
	int mi = 0;
	char type;

	addr = strtoull(p, &end, 16);
	if (end == p || *end != ' ')
		return true;	/* malformed: skip */
	if (addr)
		*any_nonzero = true;
	type = end[1];
	if (!type || end[2] != ' ')
		return true;
	name = end + 3;
	name_len = strcspn(name, "\t\n");
	if (name[name_len] == '\t') {
		mod = name + name_len + 1;
		if (*mod == '[')
			mod++;
		mod_len = strcspn(mod, "]\n");
	}
	if (type == '_' || type == 'T' || type == 't' || type == 'W' || type == 'w') {
		/* text symbols only */
	} else {
		if (!mod && strcmp(name, "_etext") == 0)
			k->text_end = addr;
		return true;
	}
	if (!name_len)
		return true;
	if (mod) {
		mi = module_index(k, mod, mod_len);
		if (mi < 0)
			return false;
	}
	if (addr < k->modules[mi].base)
		k->modules[mi].base = addr;
	if (!add_name(k, name, name_len, &off))
		return false;
	if (k->nr_syms == k->cap_syms) {
		size_t cap = k->cap_syms ? k->cap_syms * 2 : 65536;
		struct ksym *s = realloc(k->syms, cap * sizeof(*s));

		if (!s)
			return false;
		k->syms = s;
		k->cap_syms = cap;
	}
	k->syms[k->nr_syms++] = (struct ksym){ addr, off, (uint32_t)mi };
	return true;
}

struct sym_kernel *sym_kernel_load(const char *path)
{
	struct sym_kernel *k = calloc(1, sizeof(*k));
	bool any_nonzero = false;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	if (!k)
		return NULL;
	/* Module 0 is the kernel itself. */
	k->modules = calloc(1, sizeof(*k->modules));
	if (!k->modules || !(k->modules[0].name = strdup(KERNEL_MODULE)))
		goto fail;
	k->modules[0].base = UINT64_MAX;
	k->nr_modules = 1;
	f = fopen(path, "re");
	if (!f)
		goto fail;
	while (getline(&line, &cap, f) > 0) {
		if (!parse_line(k, line, &any_nonzero)) {
			fclose(f);
			free(line);
			errno = ENOMEM;
			goto fail;
		}
	}
	free(line);
	fclose(f);
	k->hidden = k->nr_syms > 0 && !any_nonzero;
	qsort(k->syms, k->nr_syms, sizeof(*k->syms), cmp_ksym);
	/* Kept for the whole run: give back what doubling over-allocated. */
	if (k->nr_syms && k->nr_syms < k->cap_syms) {
		struct ksym *fit = realloc(k->syms, k->nr_syms * sizeof(*fit));

		if (fit) {
			k->syms = fit;
			k->cap_syms = k->nr_syms;
		}
	}
	if (k->names_len && k->names_len < k->names_cap) {
		char *fit = realloc(k->names, k->names_len);

		if (fit) {
			k->names = fit;
			k->names_cap = k->names_len;
		}
	}
	return k;
fail:
	sym_kernel_free(k);
	return NULL;
}

void sym_kernel_free(struct sym_kernel *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->nr_modules; i++)
		free(k->modules[i].name);
	free(k->modules);
	free(k->syms);
	free(k->names);
	free(k);
}

bool sym_kernel_hidden(const struct sym_kernel *k)
{
	return k && k->hidden;
}

size_t sym_kernel_bytes(const struct sym_kernel *k)
{
	return k ? sizeof(*k) + k->cap_syms * sizeof(*k->syms) + k->names_cap : 0;
}

bool sym_kernel_lookup(const struct sym_kernel *k, uint64_t addr,
		       const char **name, const char **module,
		       uint64_t *module_offset)
{
	size_t lo = 0, hi, i;
	const struct ksym *s;
	const struct kmodule *m;

	if (!k || k->hidden || !k->nr_syms)
		return false;
	hi = k->nr_syms;
	while (lo < hi) {	/* first symbol with addr > target */
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	i = lo - 1;
	s = &k->syms[i];
	m = &k->modules[s->module];
	/* Past the kernel's text, or into a gap after a module's last symbol. */
	if (s->module == 0 && s->addr < k->text_end && addr >= k->text_end)
		return false;
	if (i + 1 == k->nr_syms && s->module != 0 && addr - s->addr > (1u << 20))
		return false;
	*name = k->names + s->name;
	*module = m->name;
	*module_offset = addr - m->base;
	return true;
}
