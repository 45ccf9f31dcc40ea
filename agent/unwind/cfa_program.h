/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The DWARF call-frame instructions of one CIE and its FDEs, run to the
 * rows of their CFI table (DWARF 5 section 6.4), for the two registers
 * ember unwinds with (the return address and the frame pointer: rbp on
 * x86_64, x29 on aarch64) and the CFA.
 *
 * Why not libdw's dwarf_cfi_addrframe(): it keeps a rule for every
 * register a program names and grows its array to the highest register
 * number, so one DW_CFA_offset_extended with register 67,000,000 in a
 * 14 KB file (the CFI fuzzer found it) asked for 1 GB; it also follows
 * .eh_frame_hdr and CIE pointers wherever they point. The agent reads the
 * CFI of files other users control, so it runs the programs itself: fixed
 * memory, every operand bounded by the instruction bytes, one pass per FDE
 * (libdw re-ran the FDE from its start for every row).
 */
#ifndef EMBER_CFA_PROGRAM_H
#define EMBER_CFA_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* x86_64 DWARF register numbers */
#define CFA_REG_RBP	6
#define CFA_REG_RSP	7
#define CFA_REG_RA	16
/* aarch64's (the return-address column is the CIE's: x30 in practice) */
#define CFA_A64_REG_FP	29
#define CFA_A64_REG_LR	30
#define CFA_A64_REG_SP	31
/*
 * DWARF register numbers above this are malformed on x86_64 (k7 is 125)
 * and aarch64 (SVE's z31 is 127)
 */
#define CFA_MAX_REGNO	255
/* DW_CFA_remember_state depth (gcc and clang use 1) */
#define CFA_MAX_REMEMBER 16

enum cfa_how {
	CFA_RULE_UNDEF,		/* DW_CFA_undefined, or never set */
	CFA_RULE_SAME,		/* DW_CFA_same_value */
	CFA_RULE_OFFSET,	/* saved at CFA + off */
	CFA_RULE_VAL_OFFSET,	/* the value CFA + off */
	CFA_RULE_REGISTER,	/* in another register */
	CFA_RULE_EXPR,		/* saved at the address expr computes */
	CFA_RULE_VAL_EXPR,	/* the value expr computes */
};

/* A DWARF expression: bytes inside the CFI section, not copied. */
struct cfa_expr {
	const uint8_t *p;
	size_t len;
};

struct cfa_reg_rule {
	uint8_t how;		/* enum cfa_how */
	int64_t off;
	struct cfa_expr expr;
};

/* One row's rules: what ember needs of it. */
struct cfa_state {
	bool cfa_is_expr;	/* else register + offset */
	bool cfa_set;		/* no CFA rule yet: the row is unusable */
	uint64_t cfa_reg;
	int64_t cfa_off;
	struct cfa_expr cfa_expr;
	struct cfa_reg_rule ra, fp;
};

/* Whose registers a program names: the ELF's e_machine. */
enum cfa_arch {
	CFA_ARCH_X86_64 = 0,	/* a zeroed cfa_cie is x86_64's */
	CFA_ARCH_AARCH64,
};

/* A CIE: what its FDEs need. */
struct cfa_cie {
	uint8_t arch;		/* enum cfa_arch */
	uint64_t ra_reg;	/* aarch64: the CIE's return-address column
				 * (x86_64 is always 16) */
	uint64_t code_align;
	int64_t data_align;
	bool signal;		/* 'S': the FDEs describe signal trampolines */
	bool aug_z;		/* 'z': FDEs carry augmentation data */
	uint8_t ptr_enc;	/* DW_EH_PE_* of DW_CFA_set_loc operands */
	struct cfa_state initial;	/* after the CIE's instructions */
};

/* Called for each row [lo, hi) of an FDE, in address order. */
typedef int (*cfa_row_fn)(void *ctx, uint64_t lo, uint64_t hi,
			  const struct cfa_state *st);

/* The DWARF numbers of the return address and the frame pointer. */
static inline uint64_t cfa_reg_ra(const struct cfa_cie *c)
{
	return c->arch == CFA_ARCH_AARCH64 ? c->ra_reg : CFA_REG_RA;
}

static inline uint64_t cfa_reg_fp(const struct cfa_cie *c)
{
	return c->arch == CFA_ARCH_AARCH64 ? CFA_A64_REG_FP : CFA_REG_RBP;
}

/*
 * Run a CIE's initial instructions [p, end) into cie->initial (the other
 * fields must be set). The rules before them are the ABI's: the frame
 * pointer is callee-saved (same value); the return address is undefined
 * on x86_64 (its CIEs always say where it is) and, on aarch64, still in
 * the link register (same value: gcc's CIEs say nothing about x30, and an
 * explicit DW_CFA_undefined then marks the outermost frame). Returns 0,
 * or -EINVAL for malformed instructions.
 */
int cfa_run_cie(struct cfa_cie *cie, const uint8_t *p, const uint8_t *end);

/*
 * Run an FDE's instructions [p, end) for the code [lo, hi), calling fn for
 * every non-empty row (clipped to hi). Returns 0, fn's non-zero return, or
 * -EINVAL for malformed instructions (the rows before it were reported).
 */
int cfa_run_fde(const struct cfa_cie *cie, const uint8_t *p,
		const uint8_t *end, uint64_t lo, uint64_t hi, cfa_row_fn fn,
		void *ctx);

/* LEB128 within [*p, end); false when it runs past end or over 64 bits. */
bool cfa_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v);
bool cfa_sleb(const uint8_t **p, const uint8_t *end, int64_t *v);

#endif /* EMBER_CFA_PROGRAM_H */
