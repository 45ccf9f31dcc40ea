// SPDX-License-Identifier: GPL-2.0-only
/*
 * DWARF call-frame instructions -> CFI rows (cfa_program.h says why ember
 * runs them itself). Every operand is read within the instruction bytes;
 * rules are kept for the CFA, the return address and the frame pointer
 * only, so memory is fixed whatever the registers a program names.
 */
#include <errno.h>
#include <string.h>
#include <dwarf.h>

#include "unwind/cfa_program.h"

bool cfa_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t r = 0;
	unsigned int shift = 0;

	while (q < end) {
		uint8_t b = *q++;

		if (shift >= 64 || (shift == 63 && (b & 0x7e)))
			return false;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*p = q;
			*v = r;
			return true;
		}
	}
	return false;
}

bool cfa_sleb(const uint8_t **p, const uint8_t *end, int64_t *v)
{
	const uint8_t *q = *p;
	uint64_t r = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		if (q >= end || shift >= 64)
			return false;
		b = *q++;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		r |= ~0ULL << shift;
	*p = q;
	*v = (int64_t)r;
	return true;
}

/* The rule of register reg in st, or NULL for registers ember ignores. */
static struct cfa_reg_rule *reg_of(const struct cfa_cie *cie,
				   struct cfa_state *st, uint64_t reg)
{
	if (reg == cfa_reg_ra(cie))
		return &st->ra;
	if (reg == cfa_reg_fp(cie))
		return &st->fp;
	return NULL;
}

static const struct cfa_reg_rule *initial_of(const struct cfa_cie *cie,
					     uint64_t reg)
{
	if (reg == cfa_reg_ra(cie))
		return &cie->initial.ra;
	if (reg == cfa_reg_fp(cie))
		return &cie->initial.fp;
	return NULL;
}

/* Before a CIE's instructions: the ABI's rule (cfa_program.h). */
static struct cfa_reg_rule abi_default(const struct cfa_cie *cie,
				       uint64_t reg)
{
	bool same = reg == cfa_reg_fp(cie) || cie->arch == CFA_ARCH_AARCH64;

	return (struct cfa_reg_rule){ .how = same ? CFA_RULE_SAME :
						    CFA_RULE_UNDEF };
}

/* A factored offset: n x the CIE's data alignment, without overflow. */
static bool factored(const struct cfa_cie *cie, int64_t n, int64_t *off)
{
	return !__builtin_mul_overflow(n, cie->data_align, off);
}

static bool uoffset(const struct cfa_cie *cie, uint64_t u, int64_t *off)
{
	return u <= INT64_MAX && factored(cie, (int64_t)u, off);
}

static bool read_reg(const uint8_t **p, const uint8_t *end, uint64_t *reg)
{
	return cfa_uleb(p, end, reg) && *reg <= CFA_MAX_REGNO;
}

static bool read_block(const uint8_t **p, const uint8_t *end,
		       struct cfa_expr *e)
{
	uint64_t len;

	if (!cfa_uleb(p, end, &len) || len > (uint64_t)(end - *p))
		return false;
	e->p = *p;
	e->len = len;
	*p += len;
	return true;
}

/* DW_CFA_set_loc's operand: an absolute address in the CIE's encoding. */
static bool read_addr(const struct cfa_cie *cie, const uint8_t **p,
		      const uint8_t *end, uint64_t *v)
{
	size_t n;

	if (cie->ptr_enc & 0x70)
		return false;	/* relative: not emitted for x86_64 */
	switch (cie->ptr_enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
		n = 8;
		break;
	case DW_EH_PE_udata4:
		n = 4;
		break;
	case DW_EH_PE_udata2:
		n = 2;
		break;
	default:
		return false;
	}
	if ((size_t)(end - *p) < n)
		return false;
	*v = 0;
	memcpy(v, *p, n);	/* x86_64: little endian, like the file */
	*p += n;
	return true;
}

/* binutils 2.43+ for -mbranch-protection=pac-ret+pc: aarch64 only */
#define CFA_AARCH64_NEGATE_RA_STATE_WITH_PC	0x2c

struct run {
	const struct cfa_cie *cie;
	struct cfa_state st;
	struct cfa_state saved[CFA_MAX_REMEMBER];
	unsigned int nr_saved;
	uint64_t loc, hi;
	bool in_cie;
	cfa_row_fn fn;
	void *ctx;
};

/* The code moved to new_loc: the row so far ends there. */
static int advance(struct run *r, uint64_t new_loc)
{
	int e = 0;

	if (new_loc < r->loc)
		return -EINVAL;
	if (r->in_cie)
		return 0;	/* a CIE has no rows: only initial rules */
	if (r->loc < r->hi && new_loc > r->loc)
		e = r->fn(r->ctx, r->loc, new_loc < r->hi ? new_loc : r->hi,
			  &r->st);
	r->loc = new_loc;
	return e;
}

static int advance_by(struct run *r, uint64_t delta)
{
	uint64_t d, n;

	if (__builtin_mul_overflow(delta, r->cie->code_align, &d) ||
	    __builtin_add_overflow(r->loc, d, &n))
		return -EINVAL;
	return advance(r, n);
}

static int set_rule(struct run *r, uint64_t reg, uint8_t how, int64_t off,
		    const struct cfa_expr *e)
{
	struct cfa_reg_rule *rule = reg_of(r->cie, &r->st, reg);

	if (reg > CFA_MAX_REGNO)
		return -EINVAL;
	if (rule) {
		rule->how = how;
		rule->off = off;
		rule->expr = e ? *e : (struct cfa_expr){ 0 };
	}
	return 0;
}

static int restore_rule(struct run *r, uint64_t reg)
{
	struct cfa_reg_rule *rule = reg_of(r->cie, &r->st, reg);

	if (reg > CFA_MAX_REGNO)
		return -EINVAL;
	/* in a CIE, restore means its own initial rule: the default */
	if (rule)
		*rule = r->in_cie ? abi_default(r->cie, reg) :
			*initial_of(r->cie, reg);
	return 0;
}

static int def_cfa(struct run *r, uint64_t reg, int64_t off)
{
	if (reg > CFA_MAX_REGNO)
		return -EINVAL;
	r->st.cfa_is_expr = false;
	r->st.cfa_set = true;
	r->st.cfa_reg = reg;
	r->st.cfa_off = off;
	return 0;
}

/* One extended instruction (the two high bits clear) at *p. */
static int run_extended(struct run *r, uint8_t op, const uint8_t **p,
			const uint8_t *end)
{
	const struct cfa_cie *cie = r->cie;
	struct cfa_expr e;
	uint64_t reg, reg2, u;
	int64_t s, off;

	switch (op) {
	case DW_CFA_nop:
		return 0;
	case DW_CFA_GNU_window_save:
		/*
		 * aarch64's DW_CFA_AARCH64_negate_ra_state: the return
		 * address is PAC-signed from here on (or no longer). Where
		 * it is does not change, and every consumer strips it.
		 */
		return 0;
	case CFA_AARCH64_NEGATE_RA_STATE_WITH_PC:
		/* the same, signed with the PC as a modifier (PAuth_LR) */
		return cie->arch == CFA_ARCH_AARCH64 ? 0 : -EINVAL;
	case DW_CFA_set_loc:
		if (!read_addr(cie, p, end, &u))
			return -EINVAL;
		return advance(r, u);
	case DW_CFA_advance_loc1:
		if (end - *p < 1)
			return -EINVAL;
		u = **p;
		*p += 1;
		return advance_by(r, u);
	case DW_CFA_advance_loc2:
		if (end - *p < 2)
			return -EINVAL;
		u = (uint64_t)(*p)[0] | (uint64_t)(*p)[1] << 8;
		*p += 2;
		return advance_by(r, u);
	case DW_CFA_advance_loc4:
		if (end - *p < 4)
			return -EINVAL;
		u = (uint64_t)(*p)[0] | (uint64_t)(*p)[1] << 8 |
		    (uint64_t)(*p)[2] << 16 | (uint64_t)(*p)[3] << 24;
		*p += 4;
		return advance_by(r, u);
	case DW_CFA_offset_extended:
		if (!read_reg(p, end, &reg) || !cfa_uleb(p, end, &u) ||
		    !uoffset(cie, u, &off))
			return -EINVAL;
		return set_rule(r, reg, CFA_RULE_OFFSET, off, NULL);
	case DW_CFA_GNU_negative_offset_extended:
		if (!read_reg(p, end, &reg) || !cfa_uleb(p, end, &u) ||
		    !uoffset(cie, u, &off))
			return -EINVAL;
		return set_rule(r, reg, CFA_RULE_OFFSET, -off, NULL);
	case DW_CFA_offset_extended_sf:
		if (!read_reg(p, end, &reg) || !cfa_sleb(p, end, &s) ||
		    !factored(cie, s, &off))
			return -EINVAL;
		return set_rule(r, reg, CFA_RULE_OFFSET, off, NULL);
	case DW_CFA_val_offset:
		if (!read_reg(p, end, &reg) || !cfa_uleb(p, end, &u) ||
		    !uoffset(cie, u, &off))
			return -EINVAL;
		return set_rule(r, reg, CFA_RULE_VAL_OFFSET, off, NULL);
	case DW_CFA_val_offset_sf:
		if (!read_reg(p, end, &reg) || !cfa_sleb(p, end, &s) ||
		    !factored(cie, s, &off))
			return -EINVAL;
		return set_rule(r, reg, CFA_RULE_VAL_OFFSET, off, NULL);
	case DW_CFA_restore_extended:
		if (!read_reg(p, end, &reg))
			return -EINVAL;
		return restore_rule(r, reg);
	case DW_CFA_undefined:
		if (!read_reg(p, end, &reg))
			return -EINVAL;
		return set_rule(r, reg, CFA_RULE_UNDEF, 0, NULL);
	case DW_CFA_same_value:
		if (!read_reg(p, end, &reg))
			return -EINVAL;
		return set_rule(r, reg, CFA_RULE_SAME, 0, NULL);
	case DW_CFA_register:
		if (!read_reg(p, end, &reg) || !read_reg(p, end, &reg2))
			return -EINVAL;
		return set_rule(r, reg, CFA_RULE_REGISTER, (int64_t)reg2, NULL);
	case DW_CFA_expression:
		if (!read_reg(p, end, &reg) || !read_block(p, end, &e))
			return -EINVAL;
		return set_rule(r, reg, CFA_RULE_EXPR, 0, &e);
	case DW_CFA_val_expression:
		if (!read_reg(p, end, &reg) || !read_block(p, end, &e))
			return -EINVAL;
		return set_rule(r, reg, CFA_RULE_VAL_EXPR, 0, &e);
	case DW_CFA_remember_state:
		if (r->nr_saved >= CFA_MAX_REMEMBER)
			return -EINVAL;
		r->saved[r->nr_saved++] = r->st;
		return 0;
	case DW_CFA_restore_state:
		if (!r->nr_saved)
			return -EINVAL;
		r->st = r->saved[--r->nr_saved];
		return 0;
	case DW_CFA_def_cfa:
		if (!read_reg(p, end, &reg) || !cfa_uleb(p, end, &u) ||
		    u > INT64_MAX)
			return -EINVAL;
		return def_cfa(r, reg, (int64_t)u);
	case DW_CFA_def_cfa_sf:
		if (!read_reg(p, end, &reg) || !cfa_sleb(p, end, &s) ||
		    !factored(cie, s, &off))
			return -EINVAL;
		return def_cfa(r, reg, off);
	case DW_CFA_def_cfa_register:
		if (!read_reg(p, end, &reg) || !r->st.cfa_set ||
		    r->st.cfa_is_expr)
			return -EINVAL;
		r->st.cfa_reg = reg;
		return 0;
	case DW_CFA_def_cfa_offset:
		if (!cfa_uleb(p, end, &u) || u > INT64_MAX || !r->st.cfa_set ||
		    r->st.cfa_is_expr)
			return -EINVAL;
		r->st.cfa_off = (int64_t)u;
		return 0;
	case DW_CFA_def_cfa_offset_sf:
		if (!cfa_sleb(p, end, &s) || !factored(cie, s, &off) ||
		    !r->st.cfa_set || r->st.cfa_is_expr)
			return -EINVAL;
		r->st.cfa_off = off;
		return 0;
	case DW_CFA_def_cfa_expression:
		if (!read_block(p, end, &e))
			return -EINVAL;
		r->st.cfa_is_expr = true;
		r->st.cfa_set = true;
		r->st.cfa_expr = e;
		return 0;
	case DW_CFA_GNU_args_size:
		return cfa_uleb(p, end, &u) ? 0 : -EINVAL;
	default:
		return -EINVAL;	/* unknown or vendor: cannot skip it */
	}
}

static int run(struct run *r, const uint8_t *p, const uint8_t *end)
{
	while (p < end) {
		uint8_t op = *p++;
		uint64_t u;
		int64_t off;
		int e;

		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			e = advance_by(r, op & 0x3f);
			break;
		case DW_CFA_offset:
			e = cfa_uleb(&p, end, &u) && uoffset(r->cie, u, &off) ?
			    set_rule(r, op & 0x3f, CFA_RULE_OFFSET, off, NULL) :
			    -EINVAL;
			break;
		case DW_CFA_restore:
			e = restore_rule(r, op & 0x3f);
			break;
		default:
			e = run_extended(r, op, &p, end);
			break;
		}
		if (e)
			return e;
		if (!r->in_cie && r->loc >= r->hi)
			return 0;	/* the rest describes code past the FDE */
	}
	return 0;
}

int cfa_run_cie(struct cfa_cie *cie, const uint8_t *p, const uint8_t *end)
{
	struct run r = { .cie = cie, .in_cie = true };
	int e;

	/* the ABI's defaults (cfa_program.h) */
	r.st.ra = abi_default(cie, cfa_reg_ra(cie));
	r.st.fp = abi_default(cie, cfa_reg_fp(cie));
	e = run(&r, p, end);
	if (!e)
		cie->initial = r.st;
	return e;
}

int cfa_run_fde(const struct cfa_cie *cie, const uint8_t *p,
		const uint8_t *end, uint64_t lo, uint64_t hi, cfa_row_fn fn,
		void *ctx)
{
	struct run r = {
		.cie = cie, .st = cie->initial, .loc = lo, .hi = hi,
		.fn = fn, .ctx = ctx,
	};
	int e;

	if (lo >= hi)
		return -EINVAL;
	e = run(&r, p, end);
	if (!e && r.loc < hi)
		e = fn(ctx, r.loc, hi, &r.st);
	return e;
}
