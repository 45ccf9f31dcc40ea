// SPDX-License-Identifier: GPL-2.0-only
/*
 * The table-driven walk over a stack copy (copy_walk.h). Its loop is the
 * module's ember_walk_cfi() step for step, so that a replayed stack is
 * the stack the backend gives a bound process: the same rules, the same
 * frame-pointer fallback where no rule is, the same checks. The steps
 * themselves are include/ember_unwind.h's, the module's own, over reads
 * of the copy; a change to the loop must be made in both.
 */
#include <stdlib.h>
#include <string.h>

#include "unwind/copy_walk.h"

#if defined(__aarch64__)
#define CW_HAS_LR	1	/* the return address starts in x30 */
#else
#define CW_HAS_LR	0
#endif

void copy_walk_maps_init(struct copy_walk_maps *m, struct table_share *share,
			 uint32_t pid)
{
	memset(m, 0, sizeof(*m));
	m->share = share;
	m->pid = pid;
}

static struct copy_walk_map *grow(struct copy_walk_maps *m)
{
	if (m->n == m->cap) {
		uint32_t cap = m->cap ? m->cap * 2 : 32;
		void *v;

		if (cap > EMBER_UNWIND_MAX_MAPPINGS)
			return NULL;
		v = realloc(m->v, cap * sizeof(*m->v));
		if (!v)
			return NULL;
		m->v = v;
		m->cap = cap;
	}
	return &m->v[m->n];
}

bool copy_walk_maps_add(void *ctx, struct sym_map_line *line)
{
	struct copy_walk_maps *m = ctx;
	struct copy_walk_map *cm;
	uint64_t dev = line->dev, ino = line->ino;

	if (line->type == SYM_MAP_VSYSCALL || line->end <= line->start)
		return true;	/* above the user range, as in a binding */
	cm = grow(m);
	if (!cm)
		return false;
	memset(cm, 0, sizeof(*cm));
	cm->start = line->start;
	cm->end = line->end;
	cm->known = true;
	switch (line->type) {
	case SYM_MAP_VDSO:
		dev = 0;
		ino = 0;
		/* fall through */
	case SYM_MAP_FILE:
	case SYM_MAP_MEMFD:
		cm->dev = dev;
		cm->ino = ino;
		cm->pgoff = line->type == SYM_MAP_VDSO ? 0 : line->pgoff;
		copy_walk_map_refresh(m, cm);
		/* the vDSO is always the worker's: nothing to build */
		if (!cm->known && line->type != SYM_MAP_VDSO &&
		    !(cm->path = strndup(line->path, line->path_len)))
			return false;
		break;
	default:
		break;	/* anonymous code: frame-pointer steps */
	}
	m->n++;
	return true;
}

void copy_walk_map_refresh(struct copy_walk_maps *maps,
			   struct copy_walk_map *m)
{
	table_share_unref(maps->share, &m->ref);
	m->known = table_share_get(maps->share, m->dev, m->ino, &m->ref);
	if (m->ref.table &&
	    !table_ref_bias(&m->ref, m->start, m->pgoff, &m->bias))
		table_share_unref(maps->share, &m->ref);	/* FP steps */
}

static int by_start(const void *a, const void *b)
{
	const struct copy_walk_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

void copy_walk_maps_done(struct copy_walk_maps *m)
{
	uint32_t k = 0;

	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), by_start);
	/* disjoint ranges only, as the backends take them */
	for (uint32_t i = 0; i < m->n; i++) {
		if (k && m->v[i].start < m->v[k - 1].end) {
			table_share_unref(m->share, &m->v[i].ref);
			free(m->v[i].path);
			continue;
		}
		m->v[k++] = m->v[i];
	}
	m->n = k;
}

void copy_walk_maps_clear(struct copy_walk_maps *m)
{
	for (uint32_t i = 0; i < m->n; i++) {
		table_share_unref(m->share, &m->v[i].ref);
		free(m->v[i].path);
	}
	free(m->v);
	m->v = NULL;
	m->n = m->cap = 0;
}

static const struct copy_walk_map *mapping(const struct copy_walk_maps *m,
					   uint64_t pc)
{
	uint32_t lo = 0, hi = m->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (pc < m->v[mid].start)
			hi = mid;
		else if (pc >= m->v[mid].end)
			lo = mid + 1;
		else
			return &m->v[mid];
	}
	return NULL;
}

struct walk {
	const struct copy_walk_in *in;
	uint64_t sp0;
	bool read_past;
};

/* ember_read_fn over the copy: 8 aligned bytes at or above its sp */
static int read_copy(void *ctx, __u64 addr, __u64 *val)
{
	struct walk *w = ctx;
	size_t len = w->in->stack_len;

	if (addr & 7)
		return -1;
	if (addr < w->sp0 || len < 8 || addr - w->sp0 > len - 8) {
		w->read_past = true;
		return -1;
	}
	memcpy(val, w->in->stack + (addr - w->sp0), sizeof(*val));
	return 0;
}

static const struct ember_unwind_rule *rule_at(const struct copy_walk_map *m,
					       uint64_t pc)
{
	return m->ref.table ? ember_unwind_find(m->ref.table, pc - m->bias) : NULL;
}

/*
 * One step from the frame at r (its mapping m): by rule, else at a
 * function's entry, else by frame record. *sp_low as in the module.
 */
static int step(struct walk *w, const struct copy_walk_map *m,
		struct ember_uregs *r, bool first, bool *sp_low,
		bool *undecided)
{
	const struct ember_unwind_rule *rule = rule_at(m, ember_unwind_lookup_pc(r));
	int s;

	if (rule && rule->cfa_type != EMBER_CFA_NONE &&
	    !(*sp_low && ember_unwind_rule_on_sp(rule))) {
		*sp_low = false;
		return ember_unwind_step(rule, r, read_copy, w);
	}
	if (w->in->at_entry && first) {
		s = ember_unwind_entry_step(r, CW_HAS_LR, read_copy, w);
	} else {
		/*
		 * x86: the module reads the instruction at an exact PC to
		 * place its frame (ember_unwind_leaf_fp()); the copy has no
		 * code: libdwfl's turn
		 */
		if (!CW_HAS_LR && r->exact) {
			*undecided = true;
			return EMBER_STEP_CUT;
		}
		s = ember_unwind_fp_step(r, read_copy, w);
		*sp_low = CW_HAS_LR;
	}
	if (s == EMBER_STEP_NEXT && !mapping(w->in->maps, r->pc - 1))
		s = EMBER_STEP_CUT;
	return s;
}

int copy_walk(const struct copy_walk_in *in, uint64_t *ips, int max,
	      enum copy_walk_end *end, int *unknown)
{
	struct walk w = { .in = in, .sp0 = in->regs.sp };
	struct ember_uregs r = in->regs;
	const struct copy_walk_map *m;
	bool sp_low = false, undecided = false;
	int n = 0, s;

	*unknown = -1;
	for (int steps = 0; steps < EMBER_MAX_FRAMES; steps++) {
		uint64_t lpc = ember_unwind_lookup_pc(&r);

		if (n == max) {
			*end = COPY_WALK_TRUNC;
			return n;
		}
		m = mapping(in->maps, lpc);
		if (m && !m->known) {
			*unknown = (int)(m - in->maps->v);
			*end = COPY_WALK_UNDECIDED;
			return n;
		}
		if (!m) {
			if (!n)
				ips[n++] = r.pc;
			*end = COPY_WALK_NO_MAPPING;
			return n;
		}
		ips[n++] = r.pc;
		s = step(&w, m, &r, n == 1, &sp_low, &undecided);
		if (undecided) {
			*end = COPY_WALK_UNDECIDED;
			return n;
		}
		if (s == EMBER_STEP_END) {
			*end = COPY_WALK_COMPLETE;
			return n;
		}
		if (s == EMBER_STEP_FP_END) {
			*end = COPY_WALK_FP_END;
			return n;
		}
		if (s != EMBER_STEP_NEXT) {
			*end = w.read_past ? COPY_WALK_READ_PAST : COPY_WALK_CUT;
			return n;
		}
	}
	*end = COPY_WALK_TRUNC;
	return n;
}
