// SPDX-License-Identifier: GPL-2.0-only
/*
 * .eh_frame / .debug_frame -> ember unwind table.
 *
 * libdw frames the section (dwarf_next_cfi gives each CIE and FDE); this
 * file decodes each FDE's initial location (the pointer encoding of its
 * CIE's 'R' augmentation) and cfa_program.c runs the call-frame
 * instructions to rows (not libdw's dwarf_cfi_addrframe: cfa_program.h
 * says why). Each row is then translated to an ember rule: CFA = sp/fp +
 * offset, the lazy-PLT and stack-realignment expressions, signal frames
 * and the outermost frame; on aarch64 also where the return address is
 * (x30, its own slot, or paired with x29: a64_ra_part()); anything else
 * becomes EMBER_CFA_NONE (the unwinder cuts there). The registers are the
 * file's (e_machine: x86_64 or aarch64). aarch64 code that has no CFI
 * but needs a rule (.plt, the vDSO's signal trampoline and leaves) gets
 * one from its instructions.
 *
 * One file: one pipeline behind one entry point, cfi_compile(): rules from
 * CFI rows, FDE enumeration and the table's layout, sharing one struct
 * builder.
 */
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include "ember_unwind.h"
#include "unwind/cfa_program.h"
#include "unwind/cfi_compile.h"

/*
 * The builder's memory bound: 16 bytes a span, so 64 MiB at most, for a
 * file with about five times libLLVM's 818k rows (110 MB of code). A file
 * with more gets no table ("CFI too large") and frame-pointer steps.
 */
#define CFI_MAX_SPANS	(1U << 22)

#define REG_RBP		CFA_REG_RBP
#define REG_RSP		CFA_REG_RSP
#define REG_RA		CFA_REG_RA

/* The registers a rule names, by the file's machine: "sp" and "fp". */
struct regset {
	uint8_t arch;		/* enum cfa_arch */
	unsigned int sp, fp;
};

static const struct regset x86_64_regs = { CFA_ARCH_X86_64, REG_RSP, REG_RBP };
static const struct regset aarch64_regs = {
	CFA_ARCH_AARCH64, CFA_A64_REG_SP, CFA_A64_REG_FP
};

/*
 * One address range of CFI with the rule it compiles to. 16 bytes: a big
 * binary (gcc's cc1: 430k rows) holds all of them at once, so the size of
 * this struct is most of the builder's peak memory.
 */
struct span {
	uint64_t lo;
	uint32_t len;
	uint16_t rule;
};

struct builder {
	struct span *spans;
	size_t nr, cap;
	struct ember_unwind_rule *rules;
	size_t nr_rules, cap_rules;
	struct cfi_stats *st;
	const struct regset *regs;
};

/* ---- rules ---- */

static int rule_index(struct builder *b, const struct ember_unwind_rule *r)
{
	/* few distinct rules (tens to a few hundred): a linear scan of the
	 * recent ones is cheap enough and needs no hash */
	for (size_t i = b->nr_rules; i-- > 0;)
		if (!memcmp(&b->rules[i], r, sizeof(*r)))
			return (int)i;
	if (b->nr_rules >= EMBER_UNWIND_MAX_RULES)
		return -E2BIG;
	if (b->nr_rules == b->cap_rules) {
		size_t cap = b->cap_rules ? b->cap_rules * 2 : 64;
		void *p = realloc(b->rules, cap * sizeof(*b->rules));

		if (!p)
			return -ENOMEM;
		b->rules = p;
		b->cap_rules = cap;
	}
	b->rules[b->nr_rules] = *r;
	return (int)b->nr_rules++;
}

/* One operation of a DWARF expression (what libdw calls Dwarf_Op). */
struct xop {
	uint8_t atom;
	uint64_t number, number2;
};

#define MAX_XOPS	9	/* the PLT expression, the longest ember knows */

/*
 * Decode the operations of e that ember's patterns use; -1 for anything
 * else (an unknown operation, or more than MAX_XOPS): no pattern matches.
 */
static int decode_expr(const struct cfa_expr *e, struct xop *ops)
{
	const uint8_t *p = e->p, *end = e->p + e->len;
	int n = 0;

	while (p < end) {
		struct xop *o;
		int64_t s;

		if (n == MAX_XOPS)
			return -1;
		o = &ops[n++];
		memset(o, 0, sizeof(*o));
		o->atom = *p++;
		if (o->atom >= DW_OP_lit0 && o->atom <= DW_OP_lit31)
			continue;
		if (o->atom >= DW_OP_breg0 && o->atom <= DW_OP_breg31) {
			if (!cfa_sleb(&p, end, &s))
				return -1;
			o->number = (uint64_t)s;
			continue;
		}
		switch (o->atom) {
		case DW_OP_deref:
		case DW_OP_and:
		case DW_OP_ge:
		case DW_OP_shl:
		case DW_OP_plus:
		case DW_OP_call_frame_cfa:
		case DW_OP_stack_value:
			break;
		case DW_OP_const1u:
			if (p >= end)
				return -1;
			o->number = *p++;
			break;
		case DW_OP_constu:
		case DW_OP_plus_uconst:
			if (!cfa_uleb(&p, end, &o->number))
				return -1;
			break;
		case DW_OP_consts:
			if (!cfa_sleb(&p, end, &s))
				return -1;
			o->number = (uint64_t)s;
			break;
		case DW_OP_bregx:
			if (!cfa_uleb(&p, end, &o->number) ||
			    !cfa_sleb(&p, end, &s))
				return -1;
			o->number2 = (uint64_t)s;
			break;
		default:
			return -1;
		}
	}
	return n;
}

static bool is_breg(const struct xop *op, unsigned int reg, int64_t *off)
{
	if (op->atom == DW_OP_breg0 + reg) {
		*off = (int64_t)op->number;
		return true;
	}
	if (op->atom == DW_OP_bregx && op->number == reg) {
		*off = (int64_t)op->number2;
		return true;
	}
	return false;
}

static bool is_lit(const struct xop *op, unsigned int v)
{
	return op->atom == DW_OP_lit0 + v ||
	       ((op->atom == DW_OP_const1u || op->atom == DW_OP_constu) &&
		op->number == v);
}

/*
 * The saved stack pointer of OpenSSL's and libgcrypt's perlasm (sha256,
 * aes-gcm, bignum): CFA = *(rsp + N) + M, or from rbp. Both offsets go
 * into cfa_off (EMBER_CFA_DEREF_PACK), N within 16 bits, M within 8.
 */
static bool deref_add_rule(const struct regset *rs, const struct xop *ops,
			   struct ember_unwind_rule *r, int64_t *off)
{
	int64_t pre;

	if (ops[1].atom != DW_OP_deref || ops[2].atom != DW_OP_plus_uconst ||
	    ops[2].number > 255)
		return false;
	if (is_breg(&ops[0], rs->sp, &pre))
		r->cfa_type = EMBER_CFA_DEREF_SP_ADD;
	else if (is_breg(&ops[0], rs->fp, &pre))
		r->cfa_type = EMBER_CFA_DEREF_FP_ADD;
	else
		return false;
	if (pre < INT16_MIN || pre > INT16_MAX)
		return false;
	*off = EMBER_CFA_DEREF_PACK(pre, ops[2].number);
	return true;
}

/*
 * The CFA rule. The PLT expression is what binutils emits for x86_64's
 * .plt: rsp + 8 + ((rip & 15) >= 11 ? 8 : 0)   (10 for the IBT .plt.sec
 * form); aarch64's .plt has no CFI (plt_spans()).
 */
static bool cfa_rule(const struct regset *rs, const struct cfa_state *st,
		     struct ember_unwind_rule *r)
{
	struct xop ops[MAX_XOPS];
	int64_t off = 0, rip_off;
	int n;

	if (!st->cfa_set)
		return false;
	if (st->cfa_is_expr) {
		n = decode_expr(&st->cfa_expr, ops);
	} else {
		ops[0] = (struct xop){ DW_OP_bregx, st->cfa_reg,
				       (uint64_t)st->cfa_off };
		n = 1;
	}
	if (n == 1 && is_breg(&ops[0], rs->sp, &off)) {
		r->cfa_type = EMBER_CFA_SP;
	} else if (n == 1 && is_breg(&ops[0], rs->fp, &off)) {
		r->cfa_type = EMBER_CFA_FP;
	} else if (n == 2 && ops[1].atom == DW_OP_deref &&
		   is_breg(&ops[0], rs->fp, &off)) {
		r->cfa_type = EMBER_CFA_DEREF_FP;
	} else if (n == 2 && ops[1].atom == DW_OP_deref &&
		   is_breg(&ops[0], rs->sp, &off)) {
		r->cfa_type = EMBER_CFA_DEREF_SP;
	} else if (n == 3 && deref_add_rule(rs, ops, r, &off)) {
		/* cfa_off packed by deref_add_rule() */
	} else if (n == 9 && rs->arch == CFA_ARCH_X86_64 &&
		   is_breg(&ops[0], REG_RSP, &off) && off == 8 &&
		   is_breg(&ops[1], REG_RA, &rip_off) && rip_off == 0 &&
		   is_lit(&ops[2], 15) && ops[3].atom == DW_OP_and &&
		   (is_lit(&ops[4], 11) || is_lit(&ops[4], 10)) &&
		   ops[5].atom == DW_OP_ge && is_lit(&ops[6], 3) &&
		   ops[7].atom == DW_OP_shl && ops[8].atom == DW_OP_plus) {
		r->cfa_type = is_lit(&ops[4], 11) ? EMBER_CFA_PLT1 :
						    EMBER_CFA_PLT2;
		off = 0;
	} else {
		return false;
	}
	if (off > EMBER_UNWIND_MAX_CFA_OFF || off < -EMBER_UNWIND_MAX_CFA_OFF)
		return false;
	r->cfa_off = (int32_t)off;
	return true;
}

enum reg_loc { REG_UNDEF, REG_SAME, REG_AT_CFA, REG_AT_RBP, REG_OTHER };

/*
 * Where a register of the caller is. A DW_CFA_expression rule is
 * evaluated with the CFA pushed first, which a leading DW_OP_bregN
 * ignores: [breg6 N] is "at rbp + N" (REG_AT_RBP: at fp + N, x29 on
 * aarch64).
 */
static enum reg_loc reg_rule(const struct regset *rs,
			     const struct cfa_reg_rule *rr, int64_t *off)
{
	struct xop ops[MAX_XOPS];
	int n;

	switch (rr->how) {
	case CFA_RULE_UNDEF:
		return REG_UNDEF;
	case CFA_RULE_SAME:
		return REG_SAME;
	case CFA_RULE_OFFSET:
		*off = rr->off;
		return REG_AT_CFA;
	case CFA_RULE_EXPR:
		break;
	default:
		return REG_OTHER;	/* a value or another register */
	}
	n = decode_expr(&rr->expr, ops);
	if (n <= 0 || ops[n - 1].atom == DW_OP_stack_value)
		return REG_OTHER;
	if (ops[0].atom == DW_OP_call_frame_cfa) {
		if (n == 1) {
			*off = 0;
			return REG_AT_CFA;
		}
		if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
			*off = (int64_t)ops[1].number;
			return REG_AT_CFA;
		}
		if (n == 3 && ops[1].atom == DW_OP_consts &&
		    ops[2].atom == DW_OP_plus) {
			*off = (int64_t)ops[1].number;
			return REG_AT_CFA;
		}
		return REG_OTHER;
	}
	if (n == 1 && is_breg(&ops[0], rs->fp, off))
		return REG_AT_RBP;
	return REG_OTHER;
}

/* fp_off holds a saved slot's offset: 8-aligned, 16 bits */
static bool slot_off_ok(int64_t off)
{
	return !(off % 8) && off >= INT16_MIN && off <= INT16_MAX - 7;
}

/* The frame-pointer rule (the low nibble of fp_type) and its fp_off. */
static void fp_part(const struct regset *rs, const struct cfa_state *st,
		    struct ember_unwind_rule *r)
{
	int64_t fp_off = 0;
	enum reg_loc fp = reg_rule(rs, &st->fp, &fp_off);

	if ((fp == REG_AT_CFA || fp == REG_AT_RBP) && !slot_off_ok(fp_off))
		fp = REG_OTHER;
	switch (fp) {
	case REG_SAME:
		r->fp_type = EMBER_FP_SAME;
		break;
	case REG_AT_CFA:
		r->fp_type = EMBER_FP_AT_CFA;
		r->fp_off = (int16_t)fp_off;
		break;
	case REG_AT_RBP:
		r->fp_type = EMBER_FP_AT_FP;
		r->fp_off = (int16_t)fp_off;
		break;
	default:
		r->fp_type = EMBER_FP_UNKNOWN;
		break;
	}
}

/*
 * aarch64: where x30 is decides the RA part (include/uapi/ember.h):
 * unchanged (the CIE's default, DW_CFA_same_value) is still in the link
 * register; saved at CFA + o is a slot of its own while x29 is unchanged,
 * or the upper half of an stp x29, x30 pair with x29 at CFA + o - 8. x29
 * saved apart from x30 (clang and LLVM without frame pointers treat it as
 * any callee-saved register: x30 at CFA - 32, x29 at CFA - 48) has one
 * slot too many for a rule: the return address is kept, the caller's x29
 * becomes unknown (a caller whose CFA is x29-based then cuts). x30 in
 * another register, or computed, has no ember rule.
 */
static bool a64_ra_part(const struct cfa_state *st, struct ember_unwind_rule *r)
{
	const struct regset *rs = &aarch64_regs;
	int64_t ra_off = 0, fp_off = 0;
	enum reg_loc ra = reg_rule(rs, &st->ra, &ra_off);
	enum reg_loc fp = reg_rule(rs, &st->fp, &fp_off);

	switch (ra) {
	case REG_SAME:
		fp_part(rs, st, r);
		r->fp_type = EMBER_RULE_FP_RA(r->fp_type, EMBER_RA_LR);
		return true;
	case REG_AT_CFA:
		if (!slot_off_ok(ra_off))
			return false;
		if (fp == REG_AT_CFA && fp_off == ra_off - 8 &&
		    slot_off_ok(fp_off)) {
			r->fp_type = EMBER_RULE_FP_RA(EMBER_FP_AT_CFA,
						      EMBER_RA_PAIR);
			r->fp_off = (int16_t)fp_off;
			return true;
		}
		r->fp_type = EMBER_RULE_FP_RA(fp == REG_SAME ? EMBER_FP_SAME :
					      EMBER_FP_UNKNOWN,
					      EMBER_RA_AT_CFA);
		r->fp_off = (int16_t)ra_off;
		return true;
	default:
		return false;	/* x30 in another register, or computed */
	}
}

/* The ember rule of one CFI row. */
static void row_rule(const struct regset *rs, const struct cfa_state *st,
		     bool signal, struct ember_unwind_rule *r, bool *supported)
{
	int64_t ra_off = 0;
	enum reg_loc ra;

	memset(r, 0, sizeof(*r));
	*supported = true;
	if (signal) {
		r->cfa_type = rs->arch == CFA_ARCH_AARCH64 ?
			      EMBER_CFA_SIGNAL_A64 : EMBER_CFA_SIGNAL;
		return;
	}
	ra = reg_rule(rs, &st->ra, &ra_off);
	if (ra == REG_UNDEF) {
		r->cfa_type = EMBER_CFA_END;
		return;
	}
	if (rs->arch == CFA_ARCH_AARCH64) {
		if (!cfa_rule(rs, st, r) || !a64_ra_part(st, r)) {
			memset(r, 0, sizeof(*r));	/* EMBER_CFA_NONE */
			*supported = false;
		}
		return;
	}
	if (ra != REG_AT_CFA || ra_off != -8 || !cfa_rule(rs, st, r)) {
		memset(r, 0, sizeof(*r));	/* EMBER_CFA_NONE */
		*supported = false;
		return;
	}
	fp_part(rs, st, r);
}

static int add_span(struct builder *b, uint64_t lo, uint64_t hi,
		    uint16_t rule)
{
	struct span *last = b->nr ? &b->spans[b->nr - 1] : NULL;

	/* a table covers at most 4 GiB: no single range comes near that */
	if (hi - lo > UINT32_MAX)
		return -EINVAL;
	if (last && last->lo + last->len == lo && last->rule == rule &&
	    (uint64_t)last->len + (hi - lo) <= UINT32_MAX) {
		last->len += (uint32_t)(hi - lo);	/* same rule goes on */
		return 0;
	}
	if (b->nr >= CFI_MAX_SPANS)
		return -E2BIG;
	if (b->nr == b->cap) {
		/* grow by half: doubling left up to 2x the need allocated */
		size_t cap = b->cap ? b->cap + b->cap / 2 : 1024;
		void *p;

		if (cap > CFI_MAX_SPANS)
			cap = CFI_MAX_SPANS;
		p = realloc(b->spans, cap * sizeof(*b->spans));

		if (!p)
			return -ENOMEM;
		b->spans = p;
		b->cap = cap;
	}
	b->spans[b->nr++] = (struct span){ lo, (uint32_t)(hi - lo), rule };
	return 0;
}

/* What a row of an FDE needs, for cfa_run_fde()'s callback. */
struct fde_run {
	struct builder *b;
	bool signal;
};

static int add_row(void *ctx, uint64_t lo, uint64_t hi,
		   const struct cfa_state *st)
{
	struct fde_run *f = ctx;
	struct ember_unwind_rule r;
	bool ok;
	int idx;

	row_rule(f->b->regs, st, f->signal, &r, &ok);
	f->b->st->rows_in++;
	f->b->st->bytes_in += hi - lo;
	if (!ok) {
		f->b->st->rows_unsupported++;
		f->b->st->bytes_unsupported += hi - lo;
	}
	idx = rule_index(f->b, &r);
	if (idx < 0)
		return idx;
	return add_span(f->b, lo, hi, (uint16_t)idx);
}

/* ---- aarch64 code without CFI: the PLT, the vDSO ---- */

/* Instructions the rules below look for (little-endian words). */
#define A64_NOP			0xd503201fu
#define A64_PLT0_STP		0xa9bf7bf0u	/* stp x16, x30, [sp, #-16]! */
#define A64_BR_X17		0xd61f0220u	/* br x17 */
#define A64_MOV_X8_SIGRETURN	0xd2801168u	/* mov x8, #139 */
#define A64_SVC_0		0xd4000001u	/* svc #0 */
/* a PLT or vDSO bigger than this is no PLT or vDSO */
#define A64_SYNTH_MAX_BYTES	(16U << 20)

/* Does a span of CFI already cover some of [lo, hi)? */
static bool covered(const struct builder *b, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < b->nr; i++)
		if (b->spans[i].lo < hi && b->spans[i].lo + b->spans[i].len > lo)
			return true;
	return false;
}

static int add_rule_span(struct builder *b, uint64_t lo, uint64_t hi,
			 uint8_t cfa_type, uint8_t fp_type, int32_t cfa_off)
{
	struct ember_unwind_rule r = { cfa_type, fp_type, 0, cfa_off };
	int idx;

	if (hi <= lo)
		return 0;
	idx = rule_index(b, &r);
	if (idx < 0)
		return idx;
	b->st->bytes_synth += hi - lo;
	return add_span(b, lo, hi, (uint16_t)idx);
}

/* The section's bytes at [addr, addr + 4): one instruction. */
static bool a64_word(const GElf_Shdr *sh, const Elf_Data *d, uint64_t addr,
		     uint32_t *w)
{
	uint64_t off = addr - sh->sh_addr;

	if (addr < sh->sh_addr || off > d->d_size || d->d_size - off < 4)
		return false;
	memcpy(w, (const uint8_t *)d->d_buf + off, 4);	/* little endian */
	return true;
}

/*
 * aarch64 .plt has no CFI (binutils generates none there): an entry only
 * loads x16/x17 and branches, the caller's return address still in x30
 * and sp untouched, so CFA = sp with the return address in x30. PLT0,
 * the lazy binder's stub, pushes x16 and x30 first (stp x16, x30,
 * [sp, #-16]!): from there to its br x17, CFA = sp + 16. .iplt (static
 * executables' IFUNC entries) has no PLT0.
 */
static int plt_spans(struct builder *b, Elf *elf, const char *name)
{
	const uint8_t lr = EMBER_RULE_FP_RA(EMBER_FP_SAME, EMBER_RA_LR);
	Elf_Scn *scn = cfi_find_section(elf, name);
	uint64_t lo, hi, stp = 0, br = 0, a;
	Elf_Data *d;
	GElf_Shdr sh;
	uint32_t w;
	int r;

	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR) ||
	    !sh.sh_size || sh.sh_size > A64_SYNTH_MAX_BYTES ||
	    sh.sh_addr + sh.sh_size < sh.sh_addr)
		return 0;
	lo = sh.sh_addr;
	hi = lo + sh.sh_size;
	if (covered(b, lo, hi))
		return 0;	/* a linker that emits CFI for it: use that */
	d = elf_getdata(scn, NULL);
	for (a = lo; d && d->d_buf && !strcmp(name, ".plt") && a < lo + 32 &&
	     a64_word(&sh, d, a, &w); a += 4) {
		if (!stp && w == A64_PLT0_STP)
			stp = a + 4;
		else if (stp && w == A64_BR_X17) {
			br = a + 4;
			break;
		}
	}
	if (!br)
		return add_rule_span(b, lo, hi, EMBER_CFA_SP, lr, 0);
	r = add_rule_span(b, lo, stp, EMBER_CFA_SP, lr, 0);
	if (!r)
		r = add_rule_span(b, stp, br, EMBER_CFA_SP, lr, 16);
	if (!r)
		r = add_rule_span(b, br, hi, EMBER_CFA_SP, lr, 0);
	return r;
}

/*
 * Does instruction i leave sp, x29 and x30 alone and call nothing?
 * Decided by instruction class, conservatively: anything that could
 * (a load into x29 or x30, any access that may write back sp, a data
 * operation whose destination is one of them) says no.
 */
static bool a64_keeps_frame(uint32_t i)
{
	unsigned int rd = i & 31, rn = (i >> 5) & 31, rt2 = (i >> 10) & 31;

	if ((i & 0xfffff01fu) == 0xd503201fu)
		return true;	/* hints: nop, paciasp, autiasp, bti */
	if ((i & 0xfc000000u) == 0x94000000u ||		/* bl */
	    (i & 0xfffffc1fu) == 0xd63f0000u ||		/* blr */
	    (i & 0xfefff800u) == 0xd63f0800u)		/* blraa, blrab */
		return false;
	if ((i & 0x1c000000u) == 0x14000000u)	/* branch, exception, system */
		return (i & 0xfff00000u) != 0xd5300000u ||	/* mrs Xt */
		       (rd != 29 && rd != 30);
	if ((i & 0x0a000000u) == 0x08000000u)	/* loads and stores */
		return rn != 31 && rd != 29 && rd != 30 && rt2 != 29 &&
		       rt2 != 30;
	if (rd == 29 || rd == 30)
		return false;
	/* destination 31 is sp (not xzr) for these, unless they set flags */
	if (rd == 31 && ((i & 0x1f000000u) == 0x11000000u ||	/* add/sub imm */
			 (i & 0x1f200000u) == 0x0b200000u))	/* add/sub ext */
		return i & (1u << 29);
	if (rd == 31 && (i & 0x1f800000u) == 0x12000000u)	/* logical imm */
		return ((i >> 29) & 3) == 3;			/* ands */
	return true;
}

/* The vDSO's __kernel_rt_sigreturn: mov x8, #139; svc #0, after a nop. */
static int vdso_sigreturn(struct builder *b, const GElf_Shdr *sh,
			  const Elf_Data *d, uint64_t sym)
{
	uint32_t w0, w1, nop;
	int r = 0;

	if (!a64_word(sh, d, sym, &w0) || !a64_word(sh, d, sym + 4, &w1) ||
	    w0 != A64_MOV_X8_SIGRETURN || w1 != A64_SVC_0)
		return 0;
	/*
	 * A handler returns to the symbol: its return address is looked up
	 * one byte earlier, in the nop the kernel puts there for that
	 */
	if (a64_word(sh, d, sym - 4, &nop) && nop == A64_NOP &&
	    !covered(b, sym - 4, sym))
		r = add_rule_span(b, sym - 4, sym, EMBER_CFA_SIGNAL_A64, 0, 0);
	if (!r && !covered(b, sym, sym + 8))
		r = add_rule_span(b, sym, sym + 8, EMBER_CFA_SIGNAL_A64, 0, 0);
	return r;
}

/* A vDSO function without CFI: a rule when it is a leaf that keeps sp. */
static int vdso_leaf(struct builder *b, const GElf_Shdr *sh,
		     const Elf_Data *d, uint64_t lo, uint64_t size)
{
	uint32_t w;

	if (!size || size % 4 || size > A64_SYNTH_MAX_BYTES ||
	    covered(b, lo, lo + size))
		return 0;
	for (uint64_t a = lo; a < lo + size; a += 4)
		if (!a64_word(sh, d, a, &w) || !a64_keeps_frame(w))
			return 0;
	return add_rule_span(b, lo, lo + size, EMBER_CFA_SP,
			     EMBER_RULE_FP_RA(EMBER_FP_SAME, EMBER_RA_LR), 0);
}

/*
 * The arm64 vDSO (it alone defines __kernel_rt_sigreturn) may have no
 * CFI at all (Debian's 6.1 and 6.12 have none): its signal trampoline
 * gets EMBER_CFA_SIGNAL_A64 by that symbol, and its functions that are
 * leaves keeping sp (clock_gettime, gettimeofday, getres) the
 * return-address-in-x30 rule. Others (getrandom's stp x29, x30 frame)
 * get none: frame-pointer steps.
 */
static int vdso_spans(struct builder *b, Elf *elf)
{
	Elf_Scn *scn = NULL, *text;
	GElf_Shdr sh, tsh;
	Elf_Data *d, *td;
	GElf_Sym sym;
	int r = 0;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			break;
	d = scn ? elf_getdata(scn, NULL) : NULL;
	if (!d || !sh.sh_entsize)
		return 0;
	for (int pass = 0; pass < 2; pass++) {
		bool vdso = false;

		for (size_t i = 0; !r && i < sh.sh_size / sh.sh_entsize &&
		     gelf_getsym(d, (int)i, &sym); i++) {
			const char *n = elf_strptr(elf, sh.sh_link, sym.st_name);
			bool sigret = n && !strcmp(n, "__kernel_rt_sigreturn");

			vdso |= sigret;
			if (pass == 0 || sym.st_shndx == SHN_UNDEF ||
			    sym.st_shndx >= SHN_LORESERVE ||
			    !(text = elf_getscn(elf, sym.st_shndx)) ||
			    !gelf_getshdr(text, &tsh) ||
			    !(tsh.sh_flags & SHF_EXECINSTR) ||
			    tsh.sh_type != SHT_PROGBITS ||
			    !(td = elf_getdata(text, NULL)) || !td->d_buf)
				continue;
			if (sigret)
				r = vdso_sigreturn(b, &tsh, td, sym.st_value);
			else if (GELF_ST_TYPE(sym.st_info) == STT_FUNC)
				r = vdso_leaf(b, &tsh, td, sym.st_value,
					      sym.st_size);
		}
		if (!vdso)
			return 0;
	}
	return r;
}

/* ---- FDE enumeration ---- */

/* Decode one DW_EH_PE-encoded value at *p (bounded by end). */
static bool read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc,
			 uint64_t field_addr, bool apply_rel, uint64_t *val)
{
	const uint8_t *q = *p;
	uint64_t v = 0;
	size_t n;

	if (enc == DW_EH_PE_omit)
		return false;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		n = 8;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		n = 4;
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		n = 2;
		break;
	default:
		return false;	/* uleb128 initial locations: not seen in practice */
	}
	if ((size_t)(end - q) < n)
		return false;
	memcpy(&v, q, n);	/* x86_64: little endian, like the file */
	if ((enc & 0x0f) == DW_EH_PE_sdata4)
		v = (uint64_t)(int64_t)(int32_t)v;
	else if ((enc & 0x0f) == DW_EH_PE_sdata2)
		v = (uint64_t)(int64_t)(int16_t)v;
	*p = q + n;
	if (apply_rel) {
		switch (enc & 0x70) {
		case 0:
			break;
		case DW_EH_PE_pcrel:
			v += field_addr;
			break;
		default:
			return false;	/* textrel/datarel/funcrel: not on x86_64 */
		}
	}
	*val = v;
	return true;
}

/* The 'R' pointer encoding of a CIE's augmentation, absptr without one. */
static uint8_t cie_fde_encoding(const Dwarf_CIE *cie)
{
	const char *a = cie->augmentation;
	const uint8_t *d = cie->augmentation_data;
	const uint8_t *e = d ? d + cie->augmentation_data_size : NULL;

	if (!a || a[0] != 'z' || !d)
		return DW_EH_PE_absptr;
	for (a++; *a && d < e; a++) {
		switch (*a) {
		case 'R':
			return *d;
		case 'L':
			d++;
			break;
		case 'P': {
			uint8_t enc = *d++;
			uint64_t ignored;

			if (!read_encoded(&d, e, enc & 0x7f, 0, false, &ignored))
				return DW_EH_PE_omit;
			break;
		}
		case 'S':
		case 'B':
		case 'G':
			break;
		default:
			return DW_EH_PE_omit;
		}
	}
	return DW_EH_PE_absptr;
}

/*
 * CIEs a section may have: real files have one to a few hundred; this
 * bounds the builder's memory (about 120 bytes each) for hostile ones.
 */
#define CFI_MAX_CIES	65536

/* A CIE, by its section offset, run to its initial rules. */
struct cie_info {
	Dwarf_Off off;
	bool ok;		/* usable: encoding and instructions understood */
	struct cfa_cie cie;
};

static const struct cie_info *find_cie(const struct cie_info *c, size_t n,
				       Dwarf_Off off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c[mid].off == off)
			return &c[mid];
		if (c[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Record the CIE at off, run its initial instructions. */
static int add_cie(const struct regset *rs, struct cie_info **cies,
		   size_t *nr, size_t *cap, Dwarf_Off off, const Dwarf_CIE *c,
		   bool eh_frame)
{
	struct cie_info *ci;
	const char *aug = c->augmentation ? c->augmentation : "";

	if (*nr == *cap) {
		size_t n = *cap ? *cap * 2 : 16;
		void *p;

		if (*cap >= CFI_MAX_CIES)
			return -E2BIG;
		p = realloc(*cies, n * sizeof(**cies));
		if (!p)
			return -ENOMEM;
		*cies = p;
		*cap = n;
	}
	ci = &(*cies)[(*nr)++];
	memset(ci, 0, sizeof(*ci));
	ci->off = off;
	ci->cie.arch = rs->arch;
	ci->cie.ra_reg = c->return_address_register;
	ci->cie.code_align = c->code_alignment_factor;
	ci->cie.data_align = c->data_alignment_factor;
	ci->cie.signal = strchr(aug, 'S') != NULL;
	ci->cie.aug_z = aug[0] == 'z';
	ci->cie.ptr_enc = eh_frame ? cie_fde_encoding(c) : DW_EH_PE_absptr;
	/*
	 * aarch64's rules say "x30" (the link register): a CIE whose return
	 * address is another column has none of them
	 */
	ci->ok = ci->cie.ptr_enc != DW_EH_PE_omit &&
		 (rs->arch != CFA_ARCH_AARCH64 ||
		  c->return_address_register == CFA_A64_REG_LR) &&
		 c->initial_instructions <= c->initial_instructions_end &&
		 cfa_run_cie(&ci->cie, c->initial_instructions,
			     c->initial_instructions_end) == 0;
	return 0;
}

/*
 * Compile one FDE: its range (in its CIE's pointer encoding), its
 * augmentation data skipped, its instructions run to rows. -EINVAL: the
 * FDE is unusable (the caller counts it and goes on).
 */
static int add_fde(struct builder *b, const struct cie_info *ci,
		   const Dwarf_FDE *fde, uint64_t field_addr)
{
	const uint8_t *p = fde->start, *end = fde->end;
	struct fde_run run = { .b = b };
	uint64_t lo, range, aug;

	if (!ci || !ci->ok || p > end ||
	    !read_encoded(&p, end, ci->cie.ptr_enc, field_addr, true, &lo) ||
	    !read_encoded(&p, end, ci->cie.ptr_enc & 0x0f, 0, false, &range) ||
	    range == 0 || lo + range < lo)
		return -EINVAL;
	if (ci->cie.aug_z) {
		if (!cfa_uleb(&p, end, &aug) || aug > (uint64_t)(end - p))
			return -EINVAL;
		p += aug;
	}
	run.signal = ci->cie.signal;
	return cfa_run_fde(&ci->cie, p, end, lo, lo + range, add_row, &run);
}

/* Walk one CFI section: collect its CIEs, then compile every FDE. */
static int walk_section(struct builder *b, Elf *elf, Elf_Scn *scn,
			bool eh_frame)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	GElf_Shdr sh;
	Elf_Data *data = elf_getdata(scn, NULL);
	struct cie_info *cies = NULL;
	size_t nr_cies = 0, cap_cies = 0;
	int pass, err = 0;

	if (!data || !data->d_buf || !gelf_getshdr(scn, &sh) || !ident)
		return -ENOENT;
	/* pass 0: CIEs (in section order, so sorted by offset); pass 1: FDEs */
	for (pass = 0; pass < 2 && !err; pass++) {
		Dwarf_Off off = 0, next;
		Dwarf_CFI_Entry ent;
		int r;

		while ((r = dwarf_next_cfi(ident, data, eh_frame, off, &next,
					   &ent)) != 1) {
			if (r < 0) {
				if (next <= off)
					break;	/* cannot skip it: stop */
				b->st->fdes_bad++;
				off = next;
				continue;
			}
			if (dwarf_cfi_cie_p(&ent)) {
				if (pass == 0)
					err = add_cie(b->regs, &cies, &nr_cies,
						      &cap_cies, off, &ent.cie,
						      eh_frame);
			} else if (pass == 1) {
				uint64_t field = sh.sh_addr +
					(uint64_t)(ent.fde.start -
						   (const uint8_t *)data->d_buf);

				b->st->fdes++;
				err = add_fde(b, find_cie(cies, nr_cies,
							  ent.fde.CIE_pointer),
					      &ent.fde, field);
				if (err == -EINVAL) {
					b->st->fdes_bad++;
					err = 0;
				}
			}
			if (err || next <= off)
				break;
			off = next;
		}
	}
	free(cies);
	return err;
}

Elf_Scn *cfi_find_section(Elf *elf, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* ---- layout ---- */

static void sift_down(struct span *v, size_t root, size_t n)
{
	for (;;) {
		size_t child = 2 * root + 1;
		struct span t;

		if (child >= n)
			return;
		if (child + 1 < n && v[child + 1].lo > v[child].lo)
			child++;
		if (v[root].lo >= v[child].lo)
			return;
		t = v[root];
		v[root] = v[child];
		v[child] = t;
		root = child;
	}
}

/*
 * By start address, in place. Linkers emit FDEs in address order, so the
 * check alone usually does it; otherwise a heap sort: glibc's qsort is a
 * merge sort that allocates a copy of the array (7 MB for cc1).
 */
static void sort_spans(struct span *v, size_t n)
{
	size_t i;

	for (i = 1; i < n && v[i - 1].lo <= v[i].lo; i++)
		;
	if (i >= n)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down(v, i, n);
	for (i = n; i-- > 1;) {
		struct span t = v[0];

		v[0] = v[i];
		v[i] = t;
		sift_down(v, 0, i);
	}
}

/*
 * A rule change at an address, as an offset from the table's 64 KiB
 * aligned base (a table spans at most 4 GiB): 8 bytes.
 */
struct bp {
	uint32_t off;
	uint16_t rule;
};

/*
 * Sorted spans -> rule changes: a change at each span start, and back to
 * NONE where a span ends before the next one begins. Overlapping FDEs
 * (never seen in linker output) resolve to the later start.
 *
 * The changes are written over the spans themselves: the spans and a
 * second array were the builder's peak memory (14 MB for gcc's cc1). A
 * span gives at most two 8-byte changes, so after span i at most
 * 16 * (i + 1) bytes are written: never past span i itself, which is
 * copied out before anything is written.
 */
_Static_assert(2 * sizeof(struct bp) <= sizeof(struct span),
	       "rule changes are written in place over the spans");

static int breakpoints(struct builder *b, uint64_t *base, struct bp **out,
		       size_t *nr)
{
	struct bp *v = (struct bp *)b->spans;
	uint64_t end = 0;
	size_t n = 0, nr_spans = b->nr;

	sort_spans(b->spans, nr_spans);
	*base = b->spans[0].lo & ~0xffffULL;
	for (size_t i = 0; i < nr_spans; i++)
		if (b->spans[i].lo + b->spans[i].len > end)
			end = b->spans[i].lo + b->spans[i].len;
	if (end - *base > UINT32_MAX)
		return -E2BIG;
	for (size_t i = 0; i < nr_spans; i++) {
		const struct span s = b->spans[i];
		bool gap_after = i + 1 == nr_spans ||
				 b->spans[i + 1].lo >= s.lo + s.len + 16;
		uint32_t lo = (uint32_t)(s.lo - *base), hi = lo + s.len;

		if (n && v[n - 1].off == lo)
			n--;		/* replaced by this start */
		if (!n || v[n - 1].rule != s.rule)
			v[n++] = (struct bp){ lo, s.rule };
		/*
		 * Functions are padded to 16 bytes: no PC lies in such a
		 * gap, so let the rule run on to the next FDE instead of
		 * spending a row on it.
		 */
		if (gap_after)
			v[n++] = (struct bp){ hi, 0 };
	}
	/* the buffer now belongs to the changes */
	b->spans = NULL;
	b->nr = b->cap = 0;
	*out = v;
	*nr = n;
	return 0;
}

/*
 * Rule changes -> paged rows. Every non-empty page starts with a row at
 * offset 0 holding the rule in force there, so a lookup never needs
 * another page; pages where no rule is in force stay empty.
 */
static int layout(struct builder *b, void **out, size_t *len)
{
	struct ember_unwind_table *t;
	struct ember_unwind_row *rows;
	uint32_t *page_row;
	uint64_t base, nr_pages, cap_rows, nr_rows = 0, size;
	uint16_t cur = 0;
	size_t nbp, i = 0;
	struct bp *bp;
	int r = breakpoints(b, &base, &bp, &nbp);

	if (r)
		return r;
	nr_pages = (bp[nbp - 1].off >> EMBER_UNWIND_PAGE_SHIFT) + 1;
	cap_rows = nbp + nr_pages;
	if (nr_pages > EMBER_UNWIND_MAX_PAGES || cap_rows > EMBER_UNWIND_MAX_ROWS) {
		free(bp);
		return -E2BIG;
	}
	size = EMBER_UNWIND_TABLE_SIZE(nr_pages, cap_rows, b->nr_rules);
	t = calloc(1, size);
	if (!t) {
		free(bp);
		return -ENOMEM;
	}
	page_row = (uint32_t *)(t + 1);
	rows = (struct ember_unwind_row *)(page_row + nr_pages + 1);
	for (uint64_t p = 0; p < nr_pages; p++) {
		uint64_t pstart = p << EMBER_UNWIND_PAGE_SHIFT;
		uint64_t pend = pstart + (1ULL << EMBER_UNWIND_PAGE_SHIFT);
		uint64_t first = nr_rows;

		page_row[p] = (uint32_t)first;
		if (cur != 0 || (i < nbp && bp[i].off < pend))
			rows[nr_rows++] = (struct ember_unwind_row){ 0, cur };
		for (; i < nbp && bp[i].off < pend; i++) {
			uint16_t low = (uint16_t)(bp[i].off - pstart);

			if (rows[nr_rows - 1].pc_low == low)
				rows[nr_rows - 1].rule = bp[i].rule;
			else if (rows[nr_rows - 1].rule != bp[i].rule)
				rows[nr_rows++] = (struct ember_unwind_row){
					low, bp[i].rule };
			cur = bp[i].rule;
		}
		/* only "nothing here" in this page: leave it empty */
		if (nr_rows == first + 1 && rows[first].rule == 0)
			nr_rows = first;
	}
	free(bp);
	page_row[nr_pages] = (uint32_t)nr_rows;
	if (!nr_rows) {
		free(t);
		return -ENOENT;
	}
	/* the rules go right after the rows actually used */
	memcpy(rows + nr_rows, b->rules, b->nr_rules * sizeof(*b->rules));
	t->magic = EMBER_UNWIND_MAGIC;
	t->version = EMBER_UNWIND_VERSION;
	t->base = base;
	t->nr_pages = (uint32_t)nr_pages;
	t->nr_rows = (uint32_t)nr_rows;
	t->nr_rules = (uint32_t)b->nr_rules;
	t->size = (uint32_t)EMBER_UNWIND_TABLE_SIZE(nr_pages, nr_rows,
						    b->nr_rules);
	if (t->size > EMBER_UNWIND_MAX_TABLE) {
		free(t);
		return -E2BIG;
	}
	/* it was sized for the worst case: give back what is unused */
	if (t->size < size) {
		void *shrunk = realloc(t, t->size);

		if (shrunk)
			t = shrunk;
	}
	*out = t;
	*len = t->size;
	return 0;
}

/* The registers of elf's machine, or NULL for one ember cannot unwind. */
static const struct regset *machine_regs(Elf *elf, unsigned int *machine)
{
	GElf_Ehdr eh;

	*machine = gelf_getehdr(elf, &eh) ? eh.e_machine : EM_NONE;
	if (*machine == EM_X86_64)
		return &x86_64_regs;
	if (*machine == EM_AARCH64)
		return &aarch64_regs;
	return NULL;
}

/* aarch64 code that has no CFI but needs rules: the PLT, the vDSO. */
static int a64_synth_spans(struct builder *b, Elf *elf)
{
	int r = plt_spans(b, elf, ".plt");

	if (!r)
		r = plt_spans(b, elf, ".iplt");
	if (!r)
		r = vdso_spans(b, elf);
	return r;
}

int cfi_compile(Elf *elf, void **out, size_t *len, struct cfi_stats *st,
		char *err, size_t err_len)
{
	struct ember_unwind_rule none = { 0 };
	struct builder b = { .st = st };
	unsigned int machine;
	Elf_Scn *scn;
	bool eh = true;
	const char *why;
	int r;

	memset(st, 0, sizeof(*st));
	*out = NULL;
	*len = 0;
	b.regs = machine_regs(elf, &machine);
	if (!b.regs) {
		snprintf(err, err_len, "no unwinding for ELF machine %u (only "
			 "x86_64 and aarch64)", machine);
		return -ENOENT;
	}
	scn = cfi_find_section(elf, ".eh_frame");
	if (!scn) {
		scn = cfi_find_section(elf, ".debug_frame");
		eh = false;
	}
	/* aarch64: a vDSO without CFI still has rules to give */
	if (!scn && b.regs->arch != CFA_ARCH_AARCH64) {
		snprintf(err, err_len, "no .eh_frame or .debug_frame");
		return -ENOENT;
	}
	st->source = !scn ? "symbols" : eh ? ".eh_frame" : ".debug_frame";
	r = rule_index(&b, &none);	/* rule 0: no CFI here */
	if (r >= 0 && scn)
		r = walk_section(&b, elf, scn, eh);
	if (!r && b.regs->arch == CFA_ARCH_AARCH64)
		r = a64_synth_spans(&b, elf);
	if (!r && !b.nr && !scn) {
		snprintf(err, err_len, "no .eh_frame or .debug_frame");
		r = -ENOENT;
		goto out;
	}
	if (!r && !b.nr)
		r = -ENOENT;
	if (!r)
		r = layout(&b, out, len);
	if (!r && ember_unwind_table_check(*out, *len, &why)) {
		/* a builder bug, never a file's fault: say so loudly */
		snprintf(err, err_len, "internal error: built table invalid: %s",
			 why);
		free(*out);
		*out = NULL;
		r = -EPROTO;
	} else if (r == -ENOENT) {
		snprintf(err, err_len, "%s has no usable FDEs", st->source);
	} else if (r == -E2BIG) {
		snprintf(err, err_len, "CFI too large for one table");
	} else if (r) {
		snprintf(err, err_len, "cannot compile CFI: %s", strerror(-r));
	}
	if (!r) {
		const struct ember_unwind_table *t = *out;

		st->rows = t->nr_rows;
		st->rules = t->nr_rules;
		st->pages = t->nr_pages;
		st->bytes = t->size;
	}
out:
	free(b.spans);
	free(b.rules);
	return r;
}
