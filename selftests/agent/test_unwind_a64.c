// SPDX-License-Identifier: GPL-2.0-only
/*
 * aarch64 unwinding on any host: the table builder on hand-built aarch64
 * CFI (an ELF made here: a leaf with the return address in x30, an
 * stp x29, x30 frame, an x30-only save, x29 and x30 saved apart, x30 in
 * another register, the outermost frame, a signal frame, the .plt without
 * CFI), then simulated stacks walked with those rules through
 * ember_unwind_step(): PAC-signed return addresses stripped with the
 * mask, the rt_sigframe, a corrupt stack cut, x30 refused mid-stack.
 * With Debian's arm64 files at hand (scripts/fetch-arm64-real.sh; the
 * directory EMBER_A64_REAL, else $EMBER_CACHE/arm64-real/root, else
 * .cache/arm64-real/root), every one compiles, and the share of its code
 * with a usable rule is at least what was measured (docs/NOTES.md); the
 * arm64 vDSOs cut from the cached kernels get the signal and leaf rules,
 * and every rule of those files equals what libdw reads from their CFI.
 * Built for aarch64 (an arm64 machine, or qemu-aarch64 -cpu max), it
 * also walks its own live stack through Debian's libc with the tables of
 * its own mappings and compares it with libgcc's backtrace() and with
 * the libdwfl oracle (agent/unwind/oracle.c) on a copy of the stack.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ember_unwind.h"
#include "unwind/cfa_program.h"
#include "unwind/cfi_compile.h"
#include "unwind/oracle.h"
#include "test_util.h"

/* ---- an aarch64 ELF with hand-written .eh_frame and a .plt ---- */

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put8(struct buf *b, uint8_t v) { put(b, &v, 1); }
static void put32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void put64(struct buf *b, uint64_t v) { put(b, &v, 8); }

/* A CIE: "zR", code alignment 4, data -8, RA column 30, CFA = sp. */
static size_t cie(struct buf *b, const char *aug, unsigned int ra_col)
{
	size_t at = b->n, len_at;

	put32(b, 0);			/* length, below */
	len_at = b->n;
	put32(b, 0);			/* CIE id */
	put8(b, 1);
	put(b, aug, strlen(aug) + 1);
	put8(b, 4);			/* code alignment */
	put8(b, 0x78);			/* data alignment -8 */
	put8(b, (uint8_t)ra_col);
	put8(b, 1);			/* augmentation data: R */
	put8(b, DW_EH_PE_absptr);
	put8(b, DW_CFA_def_cfa);
	put8(b, 31);
	put8(b, 0);
	while ((b->n - len_at) % 8)
		put8(b, DW_CFA_nop);
	*(uint32_t *)(b->b + at) = (uint32_t)(b->n - len_at);
	return at;
}

static void fde(struct buf *b, size_t cie_at, uint64_t lo, uint64_t len,
		const uint8_t *prog, size_t n)
{
	size_t at = b->n, len_at;

	put32(b, 0);
	len_at = b->n;
	put32(b, (uint32_t)(b->n - cie_at));	/* CIE pointer: back to it */
	put64(b, lo);
	put64(b, len);
	put8(b, 0);				/* no augmentation data */
	put(b, prog, n);
	while ((b->n - len_at) % 8)
		put8(b, DW_CFA_nop);
	*(uint32_t *)(b->b + at) = (uint32_t)(b->n - len_at);
}

#define FDE(b, c, lo, len, ...) do {					\
	static const uint8_t p_[] = { __VA_ARGS__ };			\
	fde(b, c, lo, len, p_, sizeof(p_));				\
} while (0)

#define TEXT	0x10000
#define PLT	0x20000
#define EH	0x30000

static const uint32_t plt_code[] = {
	0xa9bf7bf0, 0x90000110, 0xf9400211, 0x91000210,	/* PLT0: stp x16, x30 */
	0xd61f0220, 0xd503201f, 0xd503201f, 0xd503201f,	/* br x17; nops */
	0x90000110, 0xf9400611, 0x91002210, 0xd61f0220,	/* two stubs */
	0x90000110, 0xf9400a11, 0x91004210, 0xd61f0220,
};

/* An aarch64 ELF (or another machine's) of sections only: libelf reads it. */
static uint8_t *make_elf(uint16_t machine, size_t *size)
{
	static const char shstr[] = "\0.eh_frame\0.plt\0.shstrtab";
	struct buf eh = { .n = 0 };
	size_t c, s;
	Elf64_Ehdr h = { 0 };
	Elf64_Shdr sh[4] = { { 0 } };
	uint8_t *img;
	size_t off;

	c = cie(&eh, "zR", 30);
	/* 1: leaf, x30 untouched */
	FDE(&eh, c, TEXT + 0x000, 0x10, DW_CFA_nop);
	/* 2: stp x29, x30, [sp, #-16]!; mov x29, sp; ...; ldp; ret */
	FDE(&eh, c, TEXT + 0x100, 0x20,
	    DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16,
	    DW_CFA_offset | 29, 2, DW_CFA_offset | 30, 1,
	    DW_CFA_advance_loc | 1, DW_CFA_def_cfa_register, 29,
	    DW_CFA_advance_loc | 4, DW_CFA_GNU_window_save,
	    DW_CFA_restore | 30, DW_CFA_restore | 29, DW_CFA_def_cfa, 31, 0);
	/* 3: str x30, [sp, #-16]!: x30 alone */
	FDE(&eh, c, TEXT + 0x200, 0x10,
	    DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16,
	    DW_CFA_offset | 30, 2);
	/* 4: x29 and x30 saved apart (clang without frame pointers) */
	FDE(&eh, c, TEXT + 0x300, 0x10,
	    DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 32,
	    DW_CFA_offset | 29, 4, DW_CFA_offset | 30, 1);
	/* 5: thread entry: x30 undefined */
	FDE(&eh, c, TEXT + 0x400, 0x10, DW_CFA_undefined, 30);
	/* 7: x30 kept in x15 */
	FDE(&eh, c, TEXT + 0x600, 0x10, DW_CFA_register, 30, 15);
	/* 6: a signal frame's FDE (a CIE with 'S') */
	s = cie(&eh, "zRS", 30);
	FDE(&eh, s, TEXT + 0x500, 0x8, DW_CFA_nop);
	/* 8: a CIE whose return address is another column: unusable */
	s = cie(&eh, "zR", 29);
	FDE(&eh, s, TEXT + 0x700, 0x10, DW_CFA_nop);
	put32(&eh, 0);				/* terminator */

	off = sizeof(h);
	*size = off + eh.n + sizeof(plt_code) + sizeof(shstr) + sizeof(sh);
	img = calloc(1, *size);
	memcpy(h.e_ident, ELFMAG, SELFMAG);
	h.e_ident[EI_CLASS] = ELFCLASS64;
	h.e_ident[EI_DATA] = ELFDATA2LSB;
	h.e_ident[EI_VERSION] = EV_CURRENT;
	h.e_type = ET_DYN;
	h.e_machine = machine;
	h.e_version = EV_CURRENT;
	h.e_ehsize = sizeof(h);
	h.e_shentsize = sizeof(Elf64_Shdr);
	h.e_shnum = 4;
	h.e_shstrndx = 3;
	sh[1] = (Elf64_Shdr){ 1, SHT_PROGBITS, SHF_ALLOC, EH, off, eh.n,
			      0, 0, 8, 0 };
	memcpy(img + off, eh.b, eh.n);
	off += eh.n;
	sh[2] = (Elf64_Shdr){ 11, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, PLT,
			      off, sizeof(plt_code), 0, 0, 16, 0 };
	memcpy(img + off, plt_code, sizeof(plt_code));
	off += sizeof(plt_code);
	sh[3] = (Elf64_Shdr){ 16, SHT_STRTAB, 0, 0, off, sizeof(shstr),
			      0, 0, 1, 0 };
	memcpy(img + off, shstr, sizeof(shstr));
	off += sizeof(shstr);
	h.e_shoff = off;
	memcpy(img + off, sh, sizeof(sh));
	memcpy(img, &h, sizeof(h));
	return img;
}

static struct ember_unwind_table *compile_mem(uint8_t *img, size_t size,
					      struct cfi_stats *st, int *r)
{
	Elf *elf = elf_memory((char *)img, size);
	void *tab = NULL;
	size_t len = 0;
	char err[256];
	const char *why;

	*r = elf ? cfi_compile(elf, &tab, &len, st, err, sizeof(err)) : -1;
	if (elf)
		elf_end(elf);
	if (!*r && ember_unwind_table_check(tab, len, &why)) {
		printf("# table refused: %s\n", why);
		*r = -2;
	}
	return tab;
}

#define LR	EMBER_RULE_FP_RA(EMBER_FP_SAME, EMBER_RA_LR)
#define PAIR	EMBER_RULE_FP_RA(EMBER_FP_AT_CFA, EMBER_RA_PAIR)
#define SLOT	EMBER_RULE_FP_RA(EMBER_FP_SAME, EMBER_RA_AT_CFA)
#define SLOT_FP_LOST	EMBER_RULE_FP_RA(EMBER_FP_UNKNOWN, EMBER_RA_AT_CFA)

/* The rule at addr is exactly { cfa_type, fp_type, fp_off, cfa_off }. */
static int rule_is(const struct ember_unwind_table *t, uint64_t addr,
		   int cfa, int fp, int fp_off, int cfa_off)
{
	const struct ember_unwind_rule *r = ember_unwind_find(t, addr);

	if (r && r->cfa_type == cfa && r->fp_type == fp &&
	    r->fp_off == fp_off && r->cfa_off == cfa_off)
		return 1;
	printf("# at %#" PRIx64 ": got %d/%#x/%d/%d, want %d/%#x/%d/%d\n",
	       addr, r ? r->cfa_type : -1, r ? r->fp_type : 0,
	       r ? r->fp_off : 0, r ? r->cfa_off : 0, cfa, fp, fp_off, cfa_off);
	return 0;
}

static struct ember_unwind_table *tab;

static void test_compile(void)
{
	struct cfi_stats st;
	size_t size;
	uint8_t *img = make_elf(EM_AARCH64, &size);
	int r, ok;

	tab = compile_mem(img, size, &st, &r);
	T_CHECK("a64_compile_hand_built", r == 0 && st.fdes == 8 &&
		st.fdes_bad == 1, "r=%d fdes %u bad %u", r, st.fdes,
		st.fdes_bad);
	if (r) {
		free(img);
		return;
	}
	T_CHECK("a64_leaf_ra_in_x30",
		rule_is(tab, TEXT + 0x008, EMBER_CFA_SP, LR, 0, 0), "see above");
	ok = rule_is(tab, TEXT + 0x100, EMBER_CFA_SP, LR, 0, 0) &&
	     rule_is(tab, TEXT + 0x104, EMBER_CFA_SP, PAIR, -16, 16) &&
	     rule_is(tab, TEXT + 0x108, EMBER_CFA_FP, PAIR, -16, 16) &&
	     rule_is(tab, TEXT + 0x114, EMBER_CFA_FP, PAIR, -16, 16) &&
	     /* window_save changes nothing; the restores go back to x30 */
	     rule_is(tab, TEXT + 0x118, EMBER_CFA_SP, LR, 0, 0);
	T_CHECK("a64_stp_pair_and_epilogue", ok, "see above");
	T_CHECK("a64_x30_alone_slot",
		rule_is(tab, TEXT + 0x204, EMBER_CFA_SP, SLOT, -16, 16) &&
		rule_is(tab, TEXT + 0x200, EMBER_CFA_SP, LR, 0, 0), "see above");
	/* the return address is kept, the caller's x29 is not */
	T_CHECK("a64_saved_apart_x29_lost",
		rule_is(tab, TEXT + 0x304, EMBER_CFA_SP, SLOT_FP_LOST, -8, 32) &&
		st.rows_unsupported == 1, "%" PRIu64 " unsupported rows",
		st.rows_unsupported);
	T_CHECK("a64_x30_undefined_outermost",
		rule_is(tab, TEXT + 0x404, EMBER_CFA_END, 0, 0, 0), "see above");
	T_CHECK("a64_signal_frame",
		rule_is(tab, TEXT + 0x504, EMBER_CFA_SIGNAL_A64, 0, 0, 0),
		"see above");
	T_CHECK("a64_x30_in_register_no_rule",
		rule_is(tab, TEXT + 0x604, EMBER_CFA_NONE, 0, 0, 0), "see above");
	T_CHECK("a64_cie_ra_not_x30_refused", !ember_unwind_find(tab, TEXT + 0x704) ||
		rule_is(tab, TEXT + 0x704, EMBER_CFA_NONE, 0, 0, 0), "see above");
	/* .plt: sp untouched and x30 the caller's, but sp + 16 in PLT0 */
	ok = rule_is(tab, PLT + 0x00, EMBER_CFA_SP, LR, 0, 0) &&
	     rule_is(tab, PLT + 0x04, EMBER_CFA_SP, LR, 0, 16) &&
	     rule_is(tab, PLT + 0x10, EMBER_CFA_SP, LR, 0, 16) &&
	     rule_is(tab, PLT + 0x14, EMBER_CFA_SP, LR, 0, 0) &&
	     rule_is(tab, PLT + 0x2c, EMBER_CFA_SP, LR, 0, 0) &&
	     rule_is(tab, PLT + 0x3c, EMBER_CFA_SP, LR, 0, 0);
	T_CHECK("a64_plt_without_cfi", ok && st.bytes_synth == sizeof(plt_code),
		"%" PRIu64 " bytes synthesized", st.bytes_synth);
	free(img);

	/* the same bytes as another machine's: refused, never misread */
	img = make_elf(EM_386, &size);
	free(compile_mem(img, size, &st, &r));
	T_CHECK("a64_other_machine_refused", r == -ENOENT, "r=%d", r);
	free(img);
}

/* ---- cfa_program's aarch64 defaults ---- */

static int one_row(void *ctx, uint64_t lo, uint64_t hi,
		   const struct cfa_state *st)
{
	(void)lo;
	(void)hi;
	*(struct cfa_state *)ctx = *st;
	return 0;
}

static void test_program_defaults(void)
{
	static const uint8_t init[] = { DW_CFA_def_cfa, 31, 0 };
	static const uint8_t pauth_lr[] = { 0x2c };
	struct cfa_cie c = { .arch = CFA_ARCH_AARCH64, .ra_reg = 30,
			     .code_align = 4, .data_align = -8 };
	struct cfa_state st;
	int e;

	e = cfa_run_cie(&c, init, init + sizeof(init));
	T_CHECK("a64_cie_default_ra_same", !e && c.initial.ra.how == CFA_RULE_SAME &&
		c.initial.fp.how == CFA_RULE_SAME, "e=%d ra %d fp %d", e,
		c.initial.ra.how, c.initial.fp.how);
	e = cfa_run_fde(&c, pauth_lr, pauth_lr + 1, 0x100, 0x110, one_row, &st);
	T_CHECK("a64_negate_ra_state_with_pc_accepted", e == 0, "e=%d", e);
	memset(&c, 0, sizeof(c));	/* x86_64 */
	c.code_align = 1;
	c.data_align = -8;
	cfa_run_cie(&c, NULL, NULL);
	e = cfa_run_fde(&c, pauth_lr, pauth_lr + 1, 0x100, 0x110, one_row, &st);
	T_CHECK("x86_64_refuses_aarch64_opcode", e == -EINVAL, "e=%d", e);
}

/* ---- simulated stacks ---- */

static uint64_t mem[512];
#define BASE	0x7ffff0000000ULL
#define AT(i)	(BASE + 8 * (uint64_t)(i))
#define PAC	0xff7f000000000000ULL	/* 48-bit VA, no TBI on code */

static int read_mem(void *ctx, __u64 addr, __u64 *val)
{
	(void)ctx;
	if (addr < BASE || addr + 8 > BASE + sizeof(mem) || addr % 8)
		return -1;
	*val = mem[(addr - BASE) / 8];
	return 0;
}

static int step(struct ember_uregs *r)
{
	const struct ember_unwind_rule *rule =
		ember_unwind_find(tab, ember_unwind_lookup_pc(r));

	return rule ? ember_unwind_step(rule, r, read_mem, NULL) : -1;
}

/* pc | a code in the PAC bits, as paciasp leaves it */
static uint64_t signed_ra(uint64_t pc)
{
	return pc | 0x8035000000000000ULL;
}

static void test_stacks(void)
{
	struct ember_uregs r;
	int s1, s2, s3, s4;

	if (!tab)
		return;
	/*
	 * leaf (0x008, x30 = a return into the pair function's body)
	 * <- pair function (0x110, CFA = x29 + 16, frame record at x29)
	 * <- x30-alone function (0x208, CFA = sp + 16, x30 at sp)
	 * <- thread entry (0x408)
	 */
	memset(mem, 0, sizeof(mem));
	mem[20] = AT(60);			/* frame record: next x29 */
	mem[21] = signed_ra(TEXT + 0x20c);	/* ... and signed x30 */
	mem[22] = signed_ra(TEXT + 0x40c);	/* x30 alone at CFA - 16 */
	r = (struct ember_uregs){ .pc = TEXT + 0x008, .sp = AT(20),
				  .fp = AT(20), .lr = TEXT + 0x110,
				  .pac_mask = PAC, .fp_ok = 1, .lr_ok = 1,
				  .exact = 1 };
	s1 = step(&r);
	T_CHECK("a64_step_leaf_x30", s1 == EMBER_STEP_NEXT &&
		r.pc == TEXT + 0x110 && r.sp == AT(20) && !r.lr_ok && !r.exact,
		"s %d pc %#llx sp %#llx lr_ok %d", s1, (unsigned long long)r.pc,
		(unsigned long long)r.sp, r.lr_ok);
	s2 = step(&r);
	T_CHECK("a64_step_pair_pac_stripped", s2 == EMBER_STEP_NEXT &&
		r.pc == TEXT + 0x20c && r.sp == AT(22) && r.fp == AT(60),
		"s %d pc %#llx sp %#llx fp %#llx", s2, (unsigned long long)r.pc,
		(unsigned long long)r.sp, (unsigned long long)r.fp);
	s3 = step(&r);
	T_CHECK("a64_step_x30_slot", s3 == EMBER_STEP_NEXT &&
		r.pc == TEXT + 0x40c && r.sp == AT(24) && r.fp == AT(60),
		"s %d pc %#llx sp %#llx", s3, (unsigned long long)r.pc,
		(unsigned long long)r.sp);
	s4 = step(&r);
	T_CHECK("a64_step_outermost_end", s4 == EMBER_STEP_END, "s %d", s4);

	/*
	 * x29 saved apart (0x304: x30 at CFA - 8, CFA = sp + 32): the caller
	 * is found, its x29 is not, so its x29-based CFA (0x114) cuts
	 */
	memset(mem, 0, sizeof(mem));
	mem[43] = TEXT + 0x114;
	r = (struct ember_uregs){ .pc = TEXT + 0x308, .sp = AT(40),
				  .fp = AT(99), .fp_ok = 1, .exact = 1 };
	s1 = step(&r);
	s2 = step(&r);
	T_CHECK("a64_step_apart_then_x29_cut", s1 == EMBER_STEP_NEXT &&
		r.pc == TEXT + 0x114 && r.sp == AT(44) && !r.fp_ok &&
		s2 == EMBER_STEP_CUT, "s %d %d pc %#llx fp_ok %d", s1, s2,
		(unsigned long long)r.pc, r.fp_ok);

	/* a return address into a leaf rule: x30 is long gone mid-stack */
	r = (struct ember_uregs){ .pc = TEXT + 0x00c, .sp = AT(30),
				  .fp = AT(40), .lr = TEXT + 0x110,
				  .fp_ok = 1, .lr_ok = 0, .exact = 0 };
	s1 = step(&r);
	T_CHECK("a64_lr_refused_mid_stack", s1 == EMBER_STEP_CUT, "s %d", s1);

	/* corrupt: x29 points below sp, or off the stack */
	r = (struct ember_uregs){ .pc = TEXT + 0x110, .sp = AT(30),
				  .fp = AT(10), .fp_ok = 1, .exact = 1 };
	s1 = step(&r);
	r = (struct ember_uregs){ .pc = TEXT + 0x110, .sp = AT(30),
				  .fp = BASE + 0x100000, .fp_ok = 1, .exact = 1 };
	s2 = step(&r);
	r = (struct ember_uregs){ .pc = TEXT + 0x110, .sp = AT(30),
				  .fp = AT(30) + 4, .fp_ok = 1, .exact = 1 };
	s3 = step(&r);
	T_CHECK("a64_corrupt_stack_cut", s1 == EMBER_STEP_CUT &&
		s2 == EMBER_STEP_CUT && s3 == EMBER_STEP_CUT,
		"below sp %d, unreadable %d, unaligned %d", s1, s2, s3);

	/*
	 * A handler returned to the trampoline (its rule by the return
	 * address): the interrupted leaf's pc, sp, x29 and signed x30 are
	 * in the rt_sigframe at sp, and that leaf may use x30.
	 */
	memset(mem, 0, sizeof(mem));
	mem[EMBER_A64_SIGFRAME_PC / 8] = TEXT + 0x004;
	mem[EMBER_A64_SIGFRAME_SP / 8] = AT(100);
	mem[EMBER_A64_SIGFRAME_X29 / 8] = AT(120);
	mem[EMBER_A64_SIGFRAME_X30 / 8] = signed_ra(TEXT + 0x110);
	r = (struct ember_uregs){ .pc = TEXT + 0x504, .sp = AT(0),
				  .pac_mask = PAC, .exact = 0 };
	s1 = step(&r);
	T_CHECK("a64_rt_sigframe", s1 == EMBER_STEP_NEXT &&
		r.pc == TEXT + 0x004 && r.sp == AT(100) && r.fp == AT(120) &&
		r.lr == TEXT + 0x110 && r.lr_ok && r.exact,
		"s %d pc %#llx sp %#llx lr %#llx", s1, (unsigned long long)r.pc,
		(unsigned long long)r.sp, (unsigned long long)r.lr);
	s2 = step(&r);
	T_CHECK("a64_leaf_under_signal_uses_x30", s2 == EMBER_STEP_NEXT &&
		r.pc == TEXT + 0x110 && r.sp == AT(100), "s %d pc %#llx", s2,
		(unsigned long long)r.pc);
}

/* ---- every rule against libdw's reading of the same CFI ---- */

enum { LOC_SAME, LOC_UNDEF, LOC_AT_CFA, LOC_OTHER };

/* Where libdw says register reg of the caller is (at CFA + *off). */
static int libdw_loc(Dwarf_Frame *f, int reg, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	*off = 0;
	if (dwarf_frame_register(f, reg, mem, &ops, &n))
		return LOC_OTHER;
	if (n == 0)
		return ops ? LOC_UNDEF : LOC_SAME;
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return LOC_OTHER;
	if (n == 1)
		return LOC_AT_CFA;
	if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return LOC_AT_CFA;
	}
	return LOC_OTHER;
}

static bool fits(int64_t off)
{
	return !(off % 8) && off >= INT16_MIN && off <= INT16_MAX - 7;
}

/*
 * The rule include/uapi/ember.h asks for, from libdw's frame at an
 * address; false where libdw has none or the CFA is an expression (the
 * hand-built cases check those).
 */
static bool libdw_rule(Dwarf_CFI *cfi, uint64_t addr,
		       struct ember_unwind_rule *w)
{
	Dwarf_Frame *f = NULL;
	Dwarf_Addr lo, hi;
	bool sig = false, ok = true;
	Dwarf_Op *ops;
	size_t n;
	int64_t ra_off, fp_off, cfa_off = 0;
	int ra, fp, cfa = -1;

	if (dwarf_cfi_addrframe(cfi, addr, &f))
		return false;
	memset(w, 0, sizeof(*w));
	if (dwarf_frame_info(f, &lo, &hi, &sig) >= 0 && sig) {
		w->cfa_type = EMBER_CFA_SIGNAL_A64;
		free(f);
		return true;
	}
	ra = libdw_loc(f, 30, &ra_off);
	fp = libdw_loc(f, 29, &fp_off);
	if (!dwarf_frame_cfa(f, &ops, &n) && n == 1 &&
	    (ops[0].atom == DW_OP_bregx || ops[0].atom == DW_OP_breg29 ||
	     ops[0].atom == DW_OP_breg31)) {
		unsigned int reg = ops[0].atom == DW_OP_bregx ?
				   (unsigned int)ops[0].number :
				   (unsigned int)(ops[0].atom - DW_OP_breg0);

		cfa_off = (int64_t)(ops[0].atom == DW_OP_bregx ?
				    ops[0].number2 : ops[0].number);
		cfa = reg == 31 ? EMBER_CFA_SP : reg == 29 ? EMBER_CFA_FP :
				  EMBER_CFA_NONE;
	}
	free(f);
	if (ra == LOC_UNDEF) {
		w->cfa_type = EMBER_CFA_END;
		return true;
	}
	if (cfa < 0)
		return false;
	w->cfa_type = (uint8_t)cfa;
	w->cfa_off = (int32_t)cfa_off;
	if (ra == LOC_SAME) {
		w->fp_type = fp == LOC_SAME ? LR :
			     fp == LOC_AT_CFA && fits(fp_off) ?
			     EMBER_RULE_FP_RA(EMBER_FP_AT_CFA, EMBER_RA_LR) :
			     EMBER_RULE_FP_RA(EMBER_FP_UNKNOWN, EMBER_RA_LR);
		w->fp_off = fp == LOC_AT_CFA && fits(fp_off) ? (int16_t)fp_off : 0;
	} else if (ra == LOC_AT_CFA && fits(ra_off) && fp == LOC_AT_CFA &&
		   fp_off == ra_off - 8 && fits(fp_off)) {
		w->fp_type = PAIR;
		w->fp_off = (int16_t)fp_off;
	} else if (ra == LOC_AT_CFA && fits(ra_off)) {
		w->fp_type = fp == LOC_SAME ? SLOT : SLOT_FP_LOST;
		w->fp_off = (int16_t)ra_off;
	} else {
		ok = false;
	}
	if (!ok || cfa == EMBER_CFA_NONE)
		memset(w, 0, sizeof(*w));
	return true;
}

/* Every 4-byte address of t's range with CFI: ours == libdw's. */
static void check_against_libdw(const char *path, const char *name,
				const struct ember_unwind_table *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Dwarf_CFI *cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
	uint64_t checked = 0, bad = 0, first_bad = 0;
	char tn[160];

	for (uint64_t a = t->base; cfi &&
	     a < t->base + ((uint64_t)t->nr_pages << 16); a += 4) {
		const struct ember_unwind_rule *r = ember_unwind_find(t, a);
		struct ember_unwind_rule w;

		if (!libdw_rule(cfi, a, &w))
			continue;
		checked++;
		if (!r || memcmp(r, &w, sizeof(w))) {
			if (!bad++)
				first_bad = a;
		}
	}
	printf("# %s: %" PRIu64 " addresses compared with libdw\n", name, checked);
	snprintf(tn, sizeof(tn), "a64_agrees_with_libdw_%s", name);
	T_CHECK(tn, checked > 1000 && bad == 0,
		"%" PRIu64 " of %" PRIu64 " addresses disagree (first %#" PRIx64 ")",
		bad, checked, first_bad);
	if (bad && ember_unwind_find(t, first_bad))
		rule_is(t, first_bad, -1, 0, 0, 0);	/* show ours */
	if (cfi)
		dwarf_cfi_end(cfi);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
}

/* ---- Debian's arm64 files ---- */

/* Bytes of executable sections: the code a table could cover. */
static uint64_t exec_bytes(Elf *elf)
{
	Elf_Scn *scn = NULL;
	uint64_t n = 0;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) &&
		    sh.sh_type == SHT_PROGBITS)
			n += sh.sh_size;
	return n;
}

static struct ember_unwind_table *compile_file(const char *path,
					       struct cfi_stats *st,
					       uint64_t *exec, int *r)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	void *t = NULL;
	size_t len = 0;
	char err[256] = "";
	const char *why;

	*r = -1;
	*exec = 0;
	if (elf) {
		*exec = exec_bytes(elf);
		*r = cfi_compile(elf, &t, &len, st, err, sizeof(err));
		if (!*r && ember_unwind_table_check(t, len, &why)) {
			snprintf(err, sizeof(err), "invalid: %s", why);
			*r = -2;
		}
		elf_end(elf);
	}
	if (fd >= 0)
		close(fd);
	if (*r)
		printf("# %s: %d %s\n", path, *r, err);
	return t;
}

/*
 * Measured on Debian 12's arm64 packages (2026-11): the share of the
 * FDE-covered code whose rows have a usable rule, and of all executable
 * bytes that get one (FDEs plus .plt). Floors a little under the
 * figures; docs/NOTES.md has them per file and what the rest is.
 */
static const struct {
	const char *path;
	double fde_usable, exec_usable;	/* percent */
} real_files[] = {
	{ "lib/aarch64-linux-gnu/libc.so.6", 99.95, 97.5 },
	{ "lib/aarch64-linux-gnu/ld-linux-aarch64.so.1", 99.85, 98.0 },
	{ "lib/aarch64-linux-gnu/libm.so.6", 100, 95.5 },
	{ "usr/lib/aarch64-linux-gnu/libstdc++.so.6.0.30", 100, 96.5 },
	{ "lib/aarch64-linux-gnu/libgcc_s.so.1", 100, 98.0 },
	{ "lib/aarch64-linux-gnu/libz.so.1.2.13", 100, 99.0 },
	{ "lib/aarch64-linux-gnu/liblzma.so.5.4.1", 100, 95.0 },
	{ "usr/lib/aarch64-linux-gnu/libcrypto.so.3", 100, 87.5 },
	{ "usr/lib/aarch64-linux-gnu/libssl.so.3", 100, 97.5 },
	{ "usr/bin/xz", 100, 98.5 },
	{ "usr/bin/openssl", 100, 99.0 },
	{ "usr/bin/python3.11", 99.9, 99.0 },
};

static const char *real_root(char *buf, size_t len)
{
	const char *e = getenv("EMBER_A64_REAL");
	const char *cache = getenv("EMBER_CACHE");

	if (e && *e)
		return e;
	snprintf(buf, len, "%s/arm64-real/root", cache && *cache ? cache : ".cache");
	return buf;
}

static void test_real_files(void)
{
	char rootbuf[512], path[1024], name[160];
	const char *root = real_root(rootbuf, sizeof(rootbuf));

	if (access(root, R_OK)) {
		printf("SKIP: a64_real_files: no %s (scripts/fetch-arm64-real.sh)\n",
		       root);
		return;
	}
	for (size_t i = 0; i < sizeof(real_files) / sizeof(real_files[0]); i++) {
		struct cfi_stats st;
		uint64_t exec;
		double fde_pct, exec_pct;
		int r;
		struct ember_unwind_table *t;
		const char *base = strrchr(real_files[i].path, '/') + 1;

		snprintf(path, sizeof(path), "%s/%s", root, real_files[i].path);
		t = compile_file(path, &st, &exec, &r);
		if (t)
			check_against_libdw(path, base, t);
		free(t);
		fde_pct = st.bytes_in ? 100.0 * (double)(st.bytes_in -
			  st.bytes_unsupported) / (double)st.bytes_in : 0;
		exec_pct = exec ? 100.0 * (double)(st.bytes_in -
			   st.bytes_unsupported + st.bytes_synth) / (double)exec : 0;
		printf("# %s: %.2f%% of %" PRIu64 " FDE bytes usable, %.2f%% "
		       "of %" PRIu64 " executable bytes with a rule\n", base,
		       fde_pct, st.bytes_in, exec_pct, exec);
		snprintf(name, sizeof(name), "a64_real_%s", base);
		T_CHECK(name, r == 0 && st.fdes_bad == 0 &&
			fde_pct >= real_files[i].fde_usable &&
			exec_pct >= real_files[i].exec_usable,
			"r=%d, %u bad FDEs, %.2f%% / %.2f%%", r, st.fdes_bad,
			fde_pct, exec_pct);
	}
}

/* The vDSO's entry for name, or 0. */
static uint64_t dynsym(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	uint64_t v = 0;

	while (elf && !v && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		GElf_Sym sym;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (int i = 0; gelf_getsym(d, i, &sym); i++) {
			const char *n = elf_strptr(elf, sh.sh_link, sym.st_name);

			if (n && !strcmp(n, name))
				v = sym.st_value;
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return v;
}

static void test_vdso(const char *series)
{
	char rootbuf[512], path[1024], name[64];
	const char *root = real_root(rootbuf, sizeof(rootbuf));
	struct ember_unwind_table *t;
	struct cfi_stats st;
	uint64_t exec, sig, cg, gr;
	int r, ok;

	snprintf(path, sizeof(path), "%s/vdso-%s.so", root, series);
	snprintf(name, sizeof(name), "a64_vdso_%s", series);
	if (access(path, R_OK)) {
		printf("SKIP: %s: no %s\n", name, path);
		return;
	}
	t = compile_file(path, &st, &exec, &r);
	sig = dynsym(path, "__kernel_rt_sigreturn");
	cg = dynsym(path, "__kernel_clock_gettime");
	gr = dynsym(path, "__kernel_getrandom");
	ok = !r && sig && cg &&
	     rule_is(t, sig - 4, EMBER_CFA_SIGNAL_A64, 0, 0, 0) &&
	     rule_is(t, sig + 4, EMBER_CFA_SIGNAL_A64, 0, 0, 0) &&
	     rule_is(t, cg, EMBER_CFA_SP, LR, 0, 0) &&
	     rule_is(t, cg + 0x40, EMBER_CFA_SP, LR, 0, 0) &&
	     /* getrandom keeps a frame record: no rule, frame pointers */
	     (!gr || !ember_unwind_find(t, gr + 8) ||
	      rule_is(t, gr + 8, EMBER_CFA_NONE, 0, 0, 0));
	T_CHECK(name, ok, "r=%d sigreturn %#" PRIx64 " clock_gettime %#" PRIx64,
		r, sig, cg);
	free(t);
}

#if defined(__aarch64__)
/*
 * ---- a live aarch64 stack (on arm64, or under qemu-aarch64) ----
 *
 * This process's own stack from inside qsort's comparator (Debian's
 * libc: no frame pointers, pac-ret), walked with tables built from its
 * own mappings, must give exactly the return addresses glibc's
 * backtrace() (libgcc's DWARF unwinder) gives, and end at _start.
 */
#include <execinfo.h>
#include <sys/auxv.h>

struct live_map {
	uint64_t start, end, bias;
	struct ember_unwind_table *t;
};

static struct live_map live[64];
static int nr_live;

static bool file_bias(const char *path, uint64_t start, uint64_t pgoff,
		      uint64_t *bias)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n;
	bool ok = false;

	if (elf && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n && !ok; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X))
				continue;
			if (pgoff >= (ph.p_offset & ~0xfffULL) &&
			    pgoff < ph.p_offset + ph.p_filesz) {
				*bias = start - ph.p_vaddr + ph.p_offset - pgoff;
				ok = true;
			}
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return ok;
}

static void load_live_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	while (f && fgets(line, sizeof(line), f) && nr_live < 64) {
		unsigned long long s, e, off;
		char perms[8], path[256] = "";
		struct cfi_stats st;
		uint64_t exec;
		int r;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &s, &e, perms,
			   &off, path) < 4 || perms[2] != 'x' || path[0] != '/')
			continue;
		live[nr_live].start = s;
		live[nr_live].end = e;
		if (!file_bias(path, s, off, &live[nr_live].bias))
			continue;
		live[nr_live].t = compile_file(path, &st, &exec, &r);
		if (live[nr_live].t)
			nr_live++;
	}
	if (f)
		fclose(f);
}

static int read_self(void *ctx, __u64 addr, __u64 *val)
{
	(void)ctx;
	if (!addr || addr & 7)
		return -1;
	memcpy(val, (const void *)(uintptr_t)addr, 8);
	return 0;
}

/*
 * The PAC bits of a code address, the way the OpenTelemetry profiler
 * finds them (the agent asks the kernel: NT_ARM_PAC_MASK; qemu-user has
 * no such kernel): xpaci clears exactly them in a pointer that has them
 * all set. 0 without pointer authentication (xpaci would not decode).
 */
static uint64_t pac_bits(uint64_t code)
{
	uint64_t all = code | (~0ULL << 48 & ~(1ULL << 55)), x = all;

	if (!(getauxval(AT_HWCAP) & (1UL << 30)))	/* HWCAP_PACA */
		return 0;
	__asm__ volatile(".arch armv8.3-a\n\txpaci %0" : "+r"(x));
	return all ^ x;
}

#define LIVE_MAX 64
static void *bt[LIVE_MAX];
static int bt_n, ours_n, ours_end;
static uint64_t ours[LIVE_MAX], live_mask;
/* the oracle's input, as a backend's stack-copy record would give it */
static struct oracle_stack copy;
static uint8_t copy_buf[16384];

/* The end of the mapping holding addr (the stack's), or 0. */
static uint64_t mapping_end(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long s, e;
	char line[512];
	uint64_t end = 0;

	while (f && !end && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &s, &e) == 2 && addr >= s &&
		    addr < e)
			end = e;
	if (f)
		fclose(f);
	return end;
}

static void copy_stack(const struct ember_uregs *r, uint64_t x30)
{
	uint64_t end = mapping_end(r->sp);
	size_t n = end > r->sp ? end - r->sp : 0;

	if (n > sizeof(copy_buf))
		n = sizeof(copy_buf);
	memcpy(copy_buf, (const void *)(uintptr_t)r->sp, n);
	copy.pid = copy.tid = (uint32_t)getpid();
	copy.regs[29] = r->fp;
	copy.regs[30] = x30;		/* as the task holds it: signed */
	copy.regs[ORACLE_REG_SP] = r->sp;
	copy.regs[ORACLE_REG_PC] = r->pc;
	copy.pac_mask = r->pac_mask;
	copy.stack = copy_buf;
	copy.stack_len = n;
}

static __attribute__((noinline)) void capture(void)
{
	struct ember_uregs r = { 0 };
	uint64_t here;

	__asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29\n\tmov %3, x30"
			 : "=r"(here), "=r"(r.sp), "=r"(r.fp), "=r"(r.lr));
	r.pc = here;
	r.exact = 1;
	r.fp_ok = 1;
	r.lr_ok = 1;
	live_mask = r.pac_mask = pac_bits(here);
	copy_stack(&r, r.lr);
	r.lr &= ~r.pac_mask;
	bt_n = backtrace(bt, LIVE_MAX);
	ours_end = -1;
	while (ours_n < LIVE_MAX) {
		const struct ember_unwind_rule *rule = NULL;
		uint64_t pc = ember_unwind_lookup_pc(&r);
		int st;

		for (int i = 0; i < nr_live && !rule; i++)
			if (pc >= live[i].start && pc < live[i].end)
				rule = ember_unwind_find(live[i].t, pc - live[i].bias);
		if (!rule) {
			ours_end = 100;
			break;
		}
		st = ember_unwind_step(rule, &r, read_self, NULL);
		if (st != EMBER_STEP_NEXT) {
			ours_end = st;
			break;
		}
		ours[ours_n++] = r.pc;
	}
}

static volatile int sink;

static __attribute__((noinline)) int cmp(const void *a, const void *b)
{
	static int done;

	if (!done) {
		done = 1;
		capture();	/* not a tail call: x30 saved */
	}
	sink++;
	return *(const int *)a - *(const int *)b;
}

static __attribute__((noinline)) void level2(void)
{
	int v[8] = { 5, 3, 7, 1, 9, 2, 8, 4 };

	qsort(v, 8, sizeof(v[0]), cmp);
	sink += v[0];
}

static __attribute__((noinline)) void level1(void)
{
	level2();
	sink++;
}

static void test_live(void)
{
	int i, j, match = 0;

	load_live_maps();
	level1();
	/* backtrace() starts at capture() (its call of backtrace); ours at
	 * capture()'s caller: align on that */
	for (i = 0; i < bt_n && (uint64_t)(uintptr_t)bt[i] != ours[0]; i++)
		;
	for (j = 0; i < bt_n && j < ours_n; i++, j++)
		match += (uint64_t)(uintptr_t)bt[i] == ours[j];
	printf("# live: %d frames, %d match backtrace()'s %d, end %d, PAC "
	       "mask %#" PRIx64 "\n", ours_n, match, bt_n, ours_end, live_mask);
	T_CHECK("a64_live_stack_matches_libgcc",
		ours_n >= 5 && match == ours_n && i == bt_n,
		"%d of our %d frames match backtrace()'s %d", match, ours_n, bt_n);
	T_CHECK("a64_live_stack_complete", ours_end == EMBER_STEP_END,
		"walk ended with %d", ours_end);
	/* libdwfl on the copy: capture()'s own PC, then the same frames */
	{
		struct oracle *o = oracle_new(0);
		uint64_t ips[LIVE_MAX];
		int complete = 0, n = o ? oracle_unwind(o, &copy, ips, LIVE_MAX,
							 &complete) : -1;

		match = 0;
		for (i = 1; i < n && i - 1 < ours_n; i++)
			match += ips[i] == ours[i - 1];
		printf("# live oracle: %d frames (complete %d), %d agree\n", n,
		       complete, match);
		T_CHECK("a64_live_oracle_agrees", n >= 6 &&
			ips[0] == copy.regs[ORACLE_REG_PC] &&
			match == ours_n && n - 1 == ours_n,
			"oracle %d frames, %d of our %d agree", n, match, ours_n);
		oracle_free(o);
	}
}

/*
 * ---- sampled: what a backend sees ----
 *
 * SIGPROF interrupts a workload of Debian's code (zlib's deflate, libc's
 * qsort and snprintf) anywhere, prologues and leaves included; the
 * handler keeps the interrupted registers and a copy of the stack, as a
 * backend's sample and stack-copy record would. Afterwards each sample
 * is walked with the tables from the interrupted state (x30 valid for
 * that frame only) and by the libdwfl oracle from the same copy: the
 * frames must agree in >= 99% of the samples.
 */
#include <signal.h>
#include <sys/time.h>
#include <ucontext.h>
#include <zlib.h>

#define SAMPLES		1000
#define SAMPLE_STACK	8192

struct sample {
	uint64_t regs[ORACLE_NR_REGS];
	uint32_t len;
	uint8_t stack[SAMPLE_STACK];
};

static struct sample *samples;
static volatile int nr_samples;
static uint64_t stack_end;

static void on_prof(int sig, siginfo_t *si, void *uc_)
{
	const ucontext_t *uc = uc_;
	struct sample *sm;
	uint64_t sp = uc->uc_mcontext.sp;
	size_t n;

	(void)sig;
	(void)si;
	if (nr_samples >= SAMPLES || sp >= stack_end)
		return;
	sm = &samples[nr_samples];
	for (int i = 0; i < 31; i++)
		sm->regs[i] = uc->uc_mcontext.regs[i];
	sm->regs[ORACLE_REG_SP] = sp;
	sm->regs[ORACLE_REG_PC] = uc->uc_mcontext.pc;
	n = stack_end - sp < SAMPLE_STACK ? stack_end - sp : SAMPLE_STACK;
	memcpy(sm->stack, (const void *)(uintptr_t)sp, n);
	sm->len = (uint32_t)n;
	nr_samples++;
}

static const struct sample *cur_sample;

static int read_copy(void *ctx, __u64 addr, __u64 *val)
{
	uint64_t sp = cur_sample->regs[ORACLE_REG_SP];

	(void)ctx;
	if (addr < sp || addr - sp + 8 > cur_sample->len || addr & 7)
		return -1;
	memcpy(val, cur_sample->stack + (addr - sp), 8);
	return 0;
}

/* ember's frames of sample sm: the PC, then return addresses. */
static int walk_sample(const struct sample *sm, uint64_t *ips, int max,
		       int *end, bool *by_x30)
{
	struct ember_uregs r = {
		.pc = sm->regs[ORACLE_REG_PC], .sp = sm->regs[ORACLE_REG_SP],
		.fp = sm->regs[29], .lr = sm->regs[30] & ~live_mask,
		.pac_mask = live_mask, .fp_ok = 1, .lr_ok = 1, .exact = 1,
	};
	int n = 0;

	cur_sample = sm;
	ips[n++] = r.pc;
	*end = -1;
	while (n < max) {
		const struct ember_unwind_rule *rule = NULL;
		uint64_t pc = ember_unwind_lookup_pc(&r);

		for (int i = 0; i < nr_live && !rule; i++)
			if (pc >= live[i].start && pc < live[i].end)
				rule = ember_unwind_find(live[i].t, pc - live[i].bias);
		if (rule && n == 1)
			*by_x30 = EMBER_RULE_RA(rule->fp_type) == EMBER_RA_LR;
		*end = rule ? ember_unwind_step(rule, &r, read_copy, NULL) : 100;
		if (*end != EMBER_STEP_NEXT)
			break;
		ips[n++] = r.pc;
	}
	return n;
}

static volatile uint64_t work_sink;

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static __attribute__((noinline)) void work_once(uint32_t seed)
{
	static uint8_t src[32768], dst[40000];
	static uint32_t arr[2048];
	char text[128];
	uLongf dl = sizeof(dst);

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)((seed + i * 7) % 61);
	compress2(dst, &dl, src, sizeof(src), 6);
	for (size_t i = 0; i < 2048; i++)
		arr[i] = seed * 2654435761u + (uint32_t)i * 40503u;
	qsort(arr, 2048, sizeof(arr[0]), cmp_u32);
	snprintf(text, sizeof(text), "%u %lu %f", arr[7], dl, seed / 3.0);
	work_sink += dl + arr[0] + (uint64_t)text[0];
}

static void test_sampled(void)
{
	struct sigaction sa = { .sa_sigaction = on_prof, .sa_flags = SA_SIGINFO };
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	struct oracle *o = oracle_new(0);
	int compared = 0, agree = 0, shown = 0, complete_ours = 0, x30 = 0;
	uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0);

	samples = calloc(SAMPLES, sizeof(*samples));
	stack_end = mapping_end(here);
	if (!samples || !o || !stack_end) {
		T_CHECK("a64_sampled_setup", 0, "no memory or stack");
		return;
	}
	sigaction(SIGPROF, &sa, NULL);
	setitimer(ITIMER_PROF, &it, NULL);
	for (uint32_t i = 0; nr_samples < SAMPLES && i < 200000; i++)
		work_once(i);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
	for (int k = 0; k < nr_samples; k++) {
		const struct sample *sm = &samples[k];
		struct oracle_stack os = {
			.pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(),
			.stack = sm->stack, .stack_len = sm->len,
			.pac_mask = live_mask,
		};
		uint64_t e[LIVE_MAX], w[LIVE_MAX];
		int ne, no, end, complete = 0, same;
		bool by_x30 = false;

		memcpy(os.regs, sm->regs, sizeof(os.regs));
		ne = walk_sample(sm, e, LIVE_MAX, &end, &by_x30);
		no = oracle_unwind(o, &os, w, LIVE_MAX, &complete);
		if (no < 1)
			continue;
		compared++;
		x30 += by_x30;
		complete_ours += end == EMBER_STEP_END;
		same = ne == no && !memcmp(e, w, (size_t)ne * sizeof(e[0]));
		agree += same;
		if (!same && shown++ < 3) {
			printf("# sample %d: ember %d frames (end %d), oracle %d "
			       "(complete %d):", k, ne, end, no, complete);
			for (int i = 0; i < ne || i < no; i++)
				printf(" %#" PRIx64 "/%#" PRIx64, i < ne ? e[i] : 0,
				       i < no ? w[i] : 0);
			printf("\n");
		}
	}
	printf("# sampled: %d samples, %d compared with libdwfl, %d agree "
	       "frame for frame, %d reach _start, %d with the return address "
	       "in x30\n", nr_samples, compared, agree, complete_ours, x30);
	T_CHECK("a64_sampled_agrees_with_oracle", compared >= 200 &&
		agree * 100 >= compared * 99, "%d of %d agree", agree, compared);
	T_CHECK("a64_sampled_complete", compared >= 200 &&
		complete_ours * 100 >= compared * 99, "%d of %d reach _start",
		complete_ours, compared);
	oracle_free(o);
	free(samples);
	for (int i = 0; i < nr_live; i++)
		free(live[i].t);
}
#endif /* __aarch64__ */

int main(void)
{
	elf_version(EV_CURRENT);
	test_program_defaults();
	test_compile();
	test_stacks();
	test_real_files();
	test_vdso("6.1");
	test_vdso("6.12");
#if defined(__aarch64__)
	test_live();
	test_sampled();
#endif
	free(tab);
	T_EXIT();
}
