/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * ember_unwind.h: the unwind-table code every consumer shares, so that the
 * module, the agent's builder and its tests agree on what a valid table is
 * and what a rule means. Plain C without allocation or locking: it builds
 * in the kernel (kmod/unwind_*.c) and in user space (agent/unwind/).
 * The eBPF program implements the same lookup and step within the
 * verifier's rules (bpf/unwind.bpf.h); tests compare it with this file.
 *
 * The format itself is in include/uapi/ember.h.
 */
#ifndef EMBER_UNWIND_H
#define EMBER_UNWIND_H

#include "uapi/ember.h"

#ifndef NULL
#define NULL ((void *)0)
#endif

static inline const __u32 *
ember_unwind_page_rows(const struct ember_unwind_table *t)
{
	return (const __u32 *)(t + 1);
}

static inline const struct ember_unwind_row *
ember_unwind_rows(const struct ember_unwind_table *t)
{
	return (const struct ember_unwind_row *)
		(ember_unwind_page_rows(t) + t->nr_pages + 1);
}

static inline const struct ember_unwind_rule *
ember_unwind_rules(const struct ember_unwind_table *t)
{
	return (const struct ember_unwind_rule *)
		(ember_unwind_rows(t) + t->nr_rows);
}

static inline int ember_unwind_rule_check(const struct ember_unwind_rule *r)
{
	unsigned int fp = EMBER_RULE_FP(r->fp_type);
	unsigned int ra = EMBER_RULE_RA(r->fp_type);

	if (r->cfa_type >= __EMBER_CFA_MAX || fp >= __EMBER_FP_MAX ||
	    ra >= __EMBER_RA_MAX)
		return -1;
	/* fp_off locates one slot: the saved fp's, or (RA_AT_CFA) the RA's */
	if (ra == EMBER_RA_AT_CFA && fp != EMBER_FP_SAME &&
	    fp != EMBER_FP_UNKNOWN)
		return -1;
	if (ra == EMBER_RA_PAIR && fp != EMBER_FP_AT_CFA)
		return -1;
	if (r->cfa_off > EMBER_UNWIND_MAX_CFA_OFF ||
	    r->cfa_off < -EMBER_UNWIND_MAX_CFA_OFF)
		return -1;
	if (r->fp_off % 8)
		return -1;
	return 0;
}

/*
 * 0 when the len bytes at blob are a table every consumer may use without
 * further checks; otherwise -1 with *why saying what is wrong. Checks
 * everything a lookup relies on: sizes, counts, page row bounds, order of
 * rows, rule indices and rule contents.
 */
static inline int ember_unwind_table_check(const void *blob, __u64 len,
					   const char **why)
{
	const struct ember_unwind_table *t = blob;
	const struct ember_unwind_row *rows;
	const struct ember_unwind_rule *rules;
	const __u32 *page_row;
	__u32 p, i;

	if (len < sizeof(*t)) {
		*why = "unwind table shorter than its header";
		return -1;
	}
	if (t->magic != EMBER_UNWIND_MAGIC || t->version != EMBER_UNWIND_VERSION ||
	    t->flags) {
		*why = "unwind table magic, version or flags not supported";
		return -1;
	}
	if (t->nr_pages < 1 || t->nr_pages > EMBER_UNWIND_MAX_PAGES ||
	    t->nr_rows < 1 || t->nr_rows > EMBER_UNWIND_MAX_ROWS ||
	    t->nr_rules < 1 || t->nr_rules > EMBER_UNWIND_MAX_RULES) {
		*why = "unwind table counts out of range";
		return -1;
	}
	if (t->size != len || len > EMBER_UNWIND_MAX_TABLE ||
	    EMBER_UNWIND_TABLE_SIZE(t->nr_pages, t->nr_rows, t->nr_rules) != len) {
		*why = "unwind table size does not match its counts";
		return -1;
	}
	if (t->base & ((1ULL << EMBER_UNWIND_PAGE_SHIFT) - 1) ||
	    t->base + ((__u64)t->nr_pages << EMBER_UNWIND_PAGE_SHIFT) < t->base) {
		*why = "unwind table base not page aligned or range wraps";
		return -1;
	}
	page_row = ember_unwind_page_rows(t);
	rows = ember_unwind_rows(t);
	rules = ember_unwind_rules(t);
	if (page_row[0] != 0 || page_row[t->nr_pages] != t->nr_rows) {
		*why = "unwind table page index does not span the rows";
		return -1;
	}
	for (p = 0; p < t->nr_pages; p++) {
		__u32 lo = page_row[p], hi = page_row[p + 1];

		if (hi < lo || hi > t->nr_rows) {
			*why = "unwind table page index not monotonic";
			return -1;
		}
		if (lo == hi)
			continue;
		if (rows[lo].pc_low != 0) {
			*why = "unwind table page does not start with a row at 0";
			return -1;
		}
		for (i = lo + 1; i < hi; i++) {
			if (rows[i].pc_low <= rows[i - 1].pc_low) {
				*why = "unwind table rows not sorted";
				return -1;
			}
		}
	}
	for (i = 0; i < t->nr_rows; i++) {
		if (rows[i].rule >= t->nr_rules) {
			*why = "unwind table row points past the rules";
			return -1;
		}
	}
	for (i = 0; i < t->nr_rules; i++) {
		if (ember_unwind_rule_check(&rules[i])) {
			*why = "unwind table rule with unknown type or offset";
			return -1;
		}
	}
	return 0;
}

/*
 * The rule in force at file address vaddr, or NULL when the table does not
 * cover it. The table must have passed ember_unwind_table_check().
 */
static inline const struct ember_unwind_rule *
ember_unwind_find(const struct ember_unwind_table *t, __u64 vaddr)
{
	const __u32 *page_row = ember_unwind_page_rows(t);
	const struct ember_unwind_row *rows = ember_unwind_rows(t);
	__u64 off = vaddr - t->base;
	__u32 p, lo, hi;
	__u16 low;

	if (vaddr < t->base || (off >> EMBER_UNWIND_PAGE_SHIFT) >= t->nr_pages)
		return NULL;
	p = off >> EMBER_UNWIND_PAGE_SHIFT;
	lo = page_row[p];
	hi = page_row[p + 1];
	if (lo == hi)
		return NULL;
	low = off & 0xffff;
	/* rows[lo].pc_low == 0 <= low: find the last row with pc_low <= low */
	while (hi - lo > 1) {
		__u32 mid = lo + (hi - lo) / 2;

		if (rows[mid].pc_low <= low)
			lo = mid;
		else
			hi = mid;
	}
	return &ember_unwind_rules(t)[rows[lo].rule];
}

/*
 * Registers the unwinder tracks from frame to frame. lr is aarch64's x30,
 * meaningful while lr_ok: for the interrupted frame, or the one a signal
 * frame restored. pac_mask holds the return-address bits that carry a
 * pointer-authentication code on aarch64, from the kernel (0: none, and
 * always on x86_64).
 */
struct ember_uregs {
	__u64 pc;
	__u64 sp;
	__u64 fp;		/* rbp, x29 */
	__u64 lr;		/* x30 */
	__u64 pac_mask;
	int fp_ok;		/* fp holds the frame's real rbp / x29 */
	int lr_ok;		/* lr holds this frame's return address */
	int exact;		/* pc is where the frame is, not a return address */
};

enum ember_step_result {
	EMBER_STEP_NEXT = 0,	/* regs now describe the caller */
	EMBER_STEP_END,		/* outermost frame: the stack is complete */
	EMBER_STEP_CUT,		/* cannot go on: rule, memory or sanity */
	/*
	 * A frame-pointer chain ended (saved rbp or return address 0, the
	 * ABI's end of chain: _start, a Go goroutine's base). Not cut, but
	 * not proven complete either: code without frame pointers may hold
	 * 0 in rbp. The reader judges the stack by its root.
	 */
	EMBER_STEP_FP_END,
};

/* Reads 8 bytes of user memory; 0 on success. */
typedef int (*ember_read_fn)(void *ctx, __u64 addr, __u64 *val);

/*
 * The return address of a frame whose CFA is cfa, by the rule's RA part,
 * with its pointer-authentication code stripped. The CFA must lie above
 * the frame's sp (equal only while the return address is still in x30: an
 * aarch64 leaf that has not moved sp), 8-aligned. 0 on success.
 */
static inline int ember_unwind_ra(const struct ember_unwind_rule *r, __u64 cfa,
				  const struct ember_uregs *regs,
				  ember_read_fn read, void *ctx, __u64 *ra)
{
	unsigned int how = EMBER_RULE_RA(r->fp_type);

	if ((cfa & 7) || cfa < regs->sp ||
	    (cfa == regs->sp && how != EMBER_RA_LR))
		return -1;
	switch (how) {
	case EMBER_RA_CFA_M8:
		if (read(ctx, cfa - 8, ra))
			return -1;
		break;
	case EMBER_RA_LR:
		if (!regs->lr_ok)
			return -1;	/* mid-stack: x30 is long gone */
		*ra = regs->lr;
		break;
	case EMBER_RA_AT_CFA:
		if (read(ctx, cfa + r->fp_off, ra))
			return -1;
		break;
	case EMBER_RA_PAIR:
		if (read(ctx, cfa + r->fp_off + 8, ra))
			return -1;
		break;
	default:
		return -1;
	}
	*ra &= ~regs->pac_mask;
	return 0;
}

/*
 * aarch64 __kernel_rt_sigreturn: sp is the kernel's struct rt_sigframe;
 * the interrupted frame's pc, sp, x29 and x30 are in its sigcontext. That
 * frame may be a leaf, so its x30 counts as its link register.
 */
static inline int ember_unwind_signal_a64(struct ember_uregs *regs,
					  ember_read_fn read, void *ctx)
{
	__u64 pc, sp, fp, lr;

	if (read(ctx, regs->sp + EMBER_A64_SIGFRAME_PC, &pc) ||
	    read(ctx, regs->sp + EMBER_A64_SIGFRAME_SP, &sp) ||
	    read(ctx, regs->sp + EMBER_A64_SIGFRAME_X29, &fp) ||
	    read(ctx, regs->sp + EMBER_A64_SIGFRAME_X30, &lr) || !pc)
		return EMBER_STEP_CUT;
	regs->pc = pc;
	regs->sp = sp;
	regs->fp = fp;
	regs->fp_ok = 1;
	regs->lr = lr & ~regs->pac_mask;
	regs->lr_ok = 1;
	regs->exact = 1;	/* the interrupted instruction itself */
	return EMBER_STEP_NEXT;
}

/*
 * One step of the table-driven walk: apply rule r (found for the frame at
 * regs->pc) and move regs to the caller. The caller's stack pointer (the
 * CFA) must lie above this frame's (or equal it for one x30 step): that
 * and the 8-byte alignment of every slot read keep a corrupt stack from
 * looping or wandering.
 */
static inline int ember_unwind_step(const struct ember_unwind_rule *r,
				    struct ember_uregs *regs,
				    ember_read_fn read, void *ctx)
{
	__u64 cfa, ra, fp = regs->fp;

	switch (r->cfa_type) {
	case EMBER_CFA_END:
		return EMBER_STEP_END;
	case EMBER_CFA_SP:
		cfa = regs->sp + r->cfa_off;
		break;
	case EMBER_CFA_FP:
		if (!regs->fp_ok)
			return EMBER_STEP_CUT;
		cfa = regs->fp + r->cfa_off;
		break;
	case EMBER_CFA_PLT1:
	case EMBER_CFA_PLT2:
		cfa = regs->sp + 8 +
		      ((regs->pc & 15) >= (r->cfa_type == EMBER_CFA_PLT1 ?
					   11U : 10U) ? 8 : 0);
		break;
	case EMBER_CFA_DEREF_FP:
	case EMBER_CFA_DEREF_SP:
	case EMBER_CFA_DEREF_FP_ADD:
	case EMBER_CFA_DEREF_SP_ADD: {
		/* *(base + off) + add: the plain forms add nothing after */
		int on_fp = r->cfa_type == EMBER_CFA_DEREF_FP ||
			     r->cfa_type == EMBER_CFA_DEREF_FP_ADD;
		int packed = r->cfa_type == EMBER_CFA_DEREF_FP_ADD ||
			      r->cfa_type == EMBER_CFA_DEREF_SP_ADD;
		__s64 off = packed ? EMBER_CFA_DEREF_OFF(r->cfa_off) : r->cfa_off;

		if ((on_fp && !regs->fp_ok) ||
		    read(ctx, (on_fp ? regs->fp : regs->sp) + off, &cfa))
			return EMBER_STEP_CUT;
		if (packed)
			cfa += EMBER_CFA_DEREF_ADD(r->cfa_off);
		break;
	}
	case EMBER_CFA_SIGNAL: {
		__u64 sp;

		if (read(ctx, regs->sp + EMBER_SIGFRAME_RIP, &ra) ||
		    read(ctx, regs->sp + EMBER_SIGFRAME_RSP, &sp) ||
		    read(ctx, regs->sp + EMBER_SIGFRAME_RBP, &fp) || !ra)
			return EMBER_STEP_CUT;
		regs->pc = ra;
		regs->sp = sp;
		regs->fp = fp;
		regs->fp_ok = 1;
		regs->exact = 1;	/* the interrupted instruction itself */
		regs->lr_ok = 0;
		return EMBER_STEP_NEXT;
	}
	case EMBER_CFA_SIGNAL_A64:
		return ember_unwind_signal_a64(regs, read, ctx);
	default:
		return EMBER_STEP_CUT;
	}
	if (ember_unwind_ra(r, cfa, regs, read, ctx, &ra))
		return EMBER_STEP_CUT;
	switch (EMBER_RULE_FP(r->fp_type)) {
	case EMBER_FP_SAME:
		break;
	case EMBER_FP_AT_CFA:
		if (read(ctx, cfa + r->fp_off, &fp))
			return EMBER_STEP_CUT;
		break;
	case EMBER_FP_AT_FP:
		if (!regs->fp_ok || read(ctx, regs->fp + r->fp_off, &fp))
			return EMBER_STEP_CUT;
		break;
	default:
		regs->fp_ok = 0;
		break;
	}
	if (EMBER_RULE_FP(r->fp_type) == EMBER_FP_AT_CFA ||
	    EMBER_RULE_FP(r->fp_type) == EMBER_FP_AT_FP)
		regs->fp_ok = 1;
	if (!ra)
		return EMBER_STEP_END;	/* thread entry with a zeroed slot */
	regs->pc = ra;
	regs->sp = cfa;
	regs->fp = fp;
	regs->exact = 0;
	regs->lr_ok = 0;	/* the caller's x30 was clobbered by its call */
	return EMBER_STEP_NEXT;
}

/*
 * Whether a rule computes the CFA (or finds a signal frame) from sp: not
 * to be used with an sp that is only a lower bound (after an arm64
 * frame-pointer step).
 */
static inline int ember_unwind_rule_on_sp(const struct ember_unwind_rule *r)
{
	switch (r->cfa_type) {
	case EMBER_CFA_FP:
	case EMBER_CFA_DEREF_FP:
	case EMBER_CFA_DEREF_FP_ADD:
	case EMBER_CFA_END:
		return 0;
	default:
		return 1;
	}
}

/*
 * One step at a function's entry, where it has no frame of its own yet:
 * the return address is at sp (x86) or in the link register (has_lr:
 * arm64, where only the interrupted frame has it); the frame pointer is
 * unchanged.
 */
static inline int ember_unwind_entry_step(struct ember_uregs *regs,
					  int has_lr, ember_read_fn read,
					  void *ctx)
{
	__u64 ra;

	if (has_lr) {
		if (!regs->lr_ok)
			return EMBER_STEP_CUT;
		ra = regs->lr;	/* stripped when read */
	} else {
		if (read(ctx, regs->sp, &ra))
			return EMBER_STEP_CUT;
		regs->sp += 8;
	}
	if (!ra)
		return EMBER_STEP_END;
	regs->pc = ra;
	regs->exact = 0;
	regs->lr_ok = 0;
	return EMBER_STEP_NEXT;
}

/*
 * One frame-pointer step. On x86 the caller's stack pointer is exactly
 * rbp + 16; an arm64 frame record lies at the bottom of its frame, so
 * x29 + 16 is only a lower bound of the caller's sp (the walk knows).
 * A zero frame pointer or return address ends the chain as frame
 * pointers end it (EMBER_STEP_FP_END: not proven complete).
 */
static inline int ember_unwind_fp_step(struct ember_uregs *regs,
				       ember_read_fn read, void *ctx)
{
	__u64 next, ra;

	if (regs->fp_ok && !regs->fp)
		return EMBER_STEP_FP_END;
	if (!regs->fp_ok || regs->fp < regs->sp ||
	    read(ctx, regs->fp, &next) || read(ctx, regs->fp + 8, &ra))
		return EMBER_STEP_CUT;
	ra &= ~regs->pac_mask;
	if (!ra)
		return EMBER_STEP_FP_END;
	regs->sp = regs->fp + 16;
	regs->pc = ra;
	regs->fp = next;
	/*
	 * The caller's rbp may be this frame's CFA itself: a caller
	 * that calls right after its own push rbp; mov rbp,rsp.
	 */
	regs->fp_ok = next >= regs->sp || !next;
	regs->exact = 0;
	regs->lr_ok = 0;
	return EMBER_STEP_NEXT;
}

/*
 * The address to look a frame's rule up at: a return address points after
 * the call, possibly at the next function (noreturn calls), so look up the
 * call instruction instead.
 */
static inline __u64 ember_unwind_lookup_pc(const struct ember_uregs *regs)
{
	return regs->exact ? regs->pc : regs->pc - 1;
}

/*
 * Code without tables (a JIT) is walked by frame pointers, and a frame at
 * the interrupted instruction itself (the leaf, or under a signal frame)
 * may stand where rbp is not yet, or no longer, its own: the plain
 * frame-pointer step would then skip its caller. The first bytes at the
 * PC (little-endian) tell: at endbr64, push %rbp or ret the return address
 * is at rsp (EMBER_LEAF_AT_RA); at mov %rsp,%rbp, right after the push,
 * rsp is the new frame (EMBER_LEAF_PUSHED: saved rbp at rsp, return
 * address above it); anywhere else rbp is the frame (EMBER_LEAF_FRAME).
 */
enum {
	EMBER_LEAF_FRAME,
	EMBER_LEAF_AT_RA,
	EMBER_LEAF_PUSHED,
};

static inline int ember_unwind_leaf_fp(__u32 insn)
{
	if ((insn & 0xff) == 0x55 || (insn & 0xff) == 0xc3 ||
	    insn == 0xfa1e0ff3)
		return EMBER_LEAF_AT_RA;
	if ((insn & 0xffffff) == 0xe58948)
		return EMBER_LEAF_PUSHED;
	return EMBER_LEAF_FRAME;
}

#endif /* EMBER_UNWIND_H */
