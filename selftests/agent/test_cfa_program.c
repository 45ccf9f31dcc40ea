// SPDX-License-Identifier: GPL-2.0-only
/*
 * agent/unwind/cfa_program.c on hand-written call-frame instructions: the
 * rows of a typical prologue, and every malformed program refused with
 * -EINVAL at fixed memory (the CFI fuzzer's register 67,000,000 that made
 * libdw ask for 1 GB; remember-state overflow; LEB128 past the end or over
 * 64 bits; addresses that go backwards or overflow; CFA offsets with no
 * CFA; expression blocks longer than the program).
 */
#include <dwarf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "unwind/cfa_program.h"
#include "test_util.h"

struct row {
	uint64_t lo, hi;
	struct cfa_state st;
};

struct rows {
	struct row r[16];
	int n;
};

static int collect(void *ctx, uint64_t lo, uint64_t hi,
		   const struct cfa_state *st)
{
	struct rows *rs = ctx;

	if (rs->n == 16)
		return -E2BIG;
	rs->r[rs->n++] = (struct row){ lo, hi, *st };
	return 0;
}

/* The CIE gcc and clang emit for x86_64: CFA = rsp + 8, RA at CFA - 8. */
static void std_cie(struct cfa_cie *c)
{
	static const uint8_t init[] = {
		DW_CFA_def_cfa, 7, 8,
		DW_CFA_offset | 16, 1,
	};

	memset(c, 0, sizeof(*c));
	c->code_align = 1;
	c->data_align = -8;
	c->ptr_enc = DW_EH_PE_udata8;
	cfa_run_cie(c, init, init + sizeof(init));
}

static int fde(const uint8_t *p, size_t n, uint64_t lo, uint64_t hi,
	       struct rows *rs)
{
	struct cfa_cie c;

	std_cie(&c);
	memset(rs, 0, sizeof(*rs));
	return cfa_run_fde(&c, p, p + n, lo, hi, collect, rs);
}

static void test_prologue(void)
{
	/* push rbp; mov rbp, rsp; ...; leave; ret */
	static const uint8_t prog[] = {
		DW_CFA_advance_loc | 1,
		DW_CFA_def_cfa_offset, 16,
		DW_CFA_offset | 6, 2,
		DW_CFA_advance_loc | 3,
		DW_CFA_def_cfa_register, 6,
		DW_CFA_advance_loc | 10,
		DW_CFA_def_cfa, 7, 8,
	};
	struct rows rs;
	int e = fde(prog, sizeof(prog), 0x1000, 0x1010, &rs);

	T_CHECK("cfa_prologue_rows", !e && rs.n == 4 &&
		rs.r[0].lo == 0x1000 && rs.r[0].hi == 0x1001 &&
		rs.r[0].st.cfa_reg == 7 && rs.r[0].st.cfa_off == 8 &&
		rs.r[0].st.ra.how == CFA_RULE_OFFSET && rs.r[0].st.ra.off == -8 &&
		rs.r[0].st.fp.how == CFA_RULE_SAME &&
		rs.r[1].hi == 0x1004 && rs.r[1].st.cfa_off == 16 &&
		rs.r[1].st.fp.how == CFA_RULE_OFFSET &&
		rs.r[1].st.fp.off == -16 &&
		rs.r[2].lo == 0x1004 && rs.r[2].hi == 0x100e &&
		rs.r[2].st.cfa_reg == 6 &&
		rs.r[3].lo == 0x100e && rs.r[3].hi == 0x1010 &&
		rs.r[3].st.cfa_reg == 7,
		"e=%d n=%d", e, rs.n);
}

static void test_clip_and_state(void)
{
	static const uint8_t prog[] = {
		DW_CFA_remember_state,
		DW_CFA_def_cfa_offset, 32,
		DW_CFA_advance_loc | 4,
		DW_CFA_restore_state,
		DW_CFA_advance_loc | 40,	/* past hi: clipped, then stop */
		DW_CFA_def_cfa_offset, 64,
		0xff,				/* never reached */
	};
	struct rows rs;
	int e = fde(prog, sizeof(prog), 0x2000, 0x2010, &rs);

	T_CHECK("cfa_remember_restore_clip", !e && rs.n == 2 &&
		rs.r[0].st.cfa_off == 32 && rs.r[1].st.cfa_off == 8 &&
		rs.r[1].lo == 0x2004 && rs.r[1].hi == 0x2010,
		"e=%d n=%d", e, rs.n);
}

static void test_expressions(void)
{
	/* the stack-realigning prologue: CFA = *(rbp - 8), rbp at [rbp] */
	static const uint8_t prog[] = {
		DW_CFA_def_cfa_expression, 3, DW_OP_breg6, 0x78, DW_OP_deref,
		DW_CFA_expression, 6, 2, DW_OP_breg6, 0,
	};
	struct rows rs;
	int e = fde(prog, sizeof(prog), 0x3000, 0x3008, &rs);

	T_CHECK("cfa_expression_rules", !e && rs.n == 1 &&
		rs.r[0].st.cfa_is_expr && rs.r[0].st.cfa_expr.len == 3 &&
		rs.r[0].st.fp.how == CFA_RULE_EXPR &&
		rs.r[0].st.fp.expr.len == 2, "e=%d n=%d", e, rs.n);
}

#define BAD(name, ...) do {						\
	static const uint8_t p_[] = { __VA_ARGS__ };			\
	struct rows rs_;						\
	int e_ = fde(p_, sizeof(p_), 0x4000, 0x4100, &rs_);		\
									\
	T_CHECK(name, e_ == -EINVAL, "got %d", e_);			\
} while (0)

static void test_malformed(void)
{
	uint8_t deep[CFA_MAX_REMEMBER + 1];
	struct cfa_cie c;
	struct rows rs;
	int e;

	/* the fuzzer's input: DW_CFA_offset_extended r67108863 */
	BAD("cfa_huge_register_refused", DW_CFA_offset_extended,
	    0xff, 0xff, 0xff, 0x1f, 1);
	BAD("cfa_register_256_refused", DW_CFA_undefined, 0x80, 0x02);
	BAD("cfa_register_rule_huge_second", DW_CFA_register, 6, 0xff, 0x7f);
	BAD("cfa_restore_state_empty", DW_CFA_restore_state);
	BAD("cfa_uleb_past_end", DW_CFA_def_cfa_offset, 0x80);
	BAD("cfa_uleb_over_64_bits", DW_CFA_def_cfa_offset, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f);
	BAD("cfa_block_past_end", DW_CFA_def_cfa_expression, 10, DW_OP_breg7);
	BAD("cfa_set_loc_backwards", DW_CFA_set_loc, 0, 0x10, 0, 0, 0, 0, 0, 0);
	BAD("cfa_advance4_truncated", DW_CFA_advance_loc4, 1, 2);
	BAD("cfa_register_after_expression", DW_CFA_def_cfa_expression, 1,
	    DW_OP_lit0, DW_CFA_def_cfa_register, 7);
	BAD("cfa_unknown_opcode", 0x3f);
	BAD("cfa_offset_overflow", DW_CFA_offset | 6, 0xff, 0xff, 0xff, 0xff,
	    0xff, 0xff, 0xff, 0xff, 0x7f);

	memset(deep, DW_CFA_remember_state, sizeof(deep));
	e = fde(deep, sizeof(deep), 0x4000, 0x4100, &rs);
	T_CHECK("cfa_remember_depth_bounded", e == -EINVAL, "got %d", e);

	/* CFA offset with no CFA yet: an empty CIE */
	memset(&c, 0, sizeof(c));
	c.code_align = 1;
	c.data_align = -8;
	cfa_run_cie(&c, NULL, NULL);
	{
		static const uint8_t p[] = { DW_CFA_def_cfa_offset, 16 };

		e = cfa_run_fde(&c, p, p + sizeof(p), 0x10, 0x20, collect, &rs);
		T_CHECK("cfa_offset_without_cfa", e == -EINVAL, "got %d", e);
	}

	/* an address advance that wraps */
	std_cie(&c);
	c.code_align = UINT64_MAX / 2;
	{
		static const uint8_t p[] = { DW_CFA_advance_loc | 3 };

		memset(&rs, 0, sizeof(rs));
		e = cfa_run_fde(&c, p, p + sizeof(p), 0x10, 0x20, collect, &rs);
		T_CHECK("cfa_advance_overflow", e == -EINVAL, "got %d", e);
	}
}

int main(void)
{
	test_prologue();
	test_clip_and_state();
	test_expressions();
	test_malformed();
	T_EXIT();
}
