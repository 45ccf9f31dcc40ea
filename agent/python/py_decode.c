// SPDX-License-Identifier: GPL-2.0-only
/*
 * Decoding the few instructions that say where CPython keeps its thread
 * state and where its eval loop's cold part is (py_decode.h), and glibc's
 * TSD offset (python.h: py_glibc_tsd_offset()).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "python/py_decode.h"
#include "python/python.h"

/* ---- thread state: decoding the code that finds it ---- */

/* x86_64: skip endbr64. */
static size_t x86_skip_endbr(const uint8_t *c, size_t n)
{
	return n >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e &&
	       c[3] == 0xfa ? 4 : 0;
}

static int32_t le32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
			 (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

static uint32_t insn32(const uint8_t *p)
{
	return (uint32_t)le32(p);
}

/*
 * aarch64: from `mrs Xt, tpidr_el0`, the immediates added to and
 * subtracted from registers (add/sub Xd, Xn, #imm{, lsl #12}) up to the
 * first 64-bit load `ldr Xt, [Xn, #imm]`, whose offset ends the sum, and
 * the 64-bit constants moved into a register on the way (movz/movn): the
 * TLS load of _PyThreadState_GetCurrent (add, add, ldr) and the first
 * block of pthread_getspecific (glibc 2.36: ubfiz, mrs, sub, add reg,
 * ldr; 2.41: mov #-0x610, mrs, add reg, add reg, ldr) alike.
 */
static bool a64_tp_offset(const uint8_t *c, size_t n, int64_t *off)
{
	int64_t sum = 0;
	bool tp = false;

	for (size_t i = 0; i + 4 <= n && i < 24 * 4; i += 4) {
		uint32_t w = insn32(c + i);

		if ((w & 0xffffffe0) == 0xd53bd040) {		/* mrs x, tpidr_el0 */
			tp = true;
		} else if ((w & 0xff800000) == 0xd2800000 ||
			   (w & 0xff800000) == 0x92800000) {	/* movz/movn x */
			/* glibc 2.41: `mov x0, #-0x610` before the mrs,
			 * added to it by register (add x0, x0, w1, uxtw #4;
			 * add x2, x2, x0) */
			int64_t imm = (int64_t)((w >> 5) & 0xffff) << (((w >> 21) & 3) * 16);

			sum += (w & 0x40000000) ? imm : ~imm;
		} else if (tp && (w & 0x3f800000) == 0x11000000 &&
			   (w & 0x80000000)) {			/* add/sub x imm */
			int64_t imm = (w >> 10) & 0xfff;

			if (w & (1u << 22))
				imm <<= 12;
			sum += (w & 0x40000000) ? -imm : imm;
		} else if (tp && (w & 0xffc00000) == 0xf9400000) { /* ldr x, [x, #] */
			*off = sum + (int64_t)((w >> 10) & 0xfff) * 8;
			return true;
		} else if (tp && ((w & 0x7c000000) == 0x14000000 ||
				  (w & 0xff000010) == 0x54000000 ||
				  w == 0xd65f03c0)) {
			return false;	/* a branch or ret before the load */
		}
	}
	return false;
}

/* 3.13: `mov %fs:disp32, %rax; ret` (x86_64) or mrs/add/ldr (aarch64). */
bool py_decode_tls_get(uint16_t machine, const uint8_t *c, size_t n,
			   int64_t *off)
{
	if (machine == EM_AARCH64)
		return a64_tp_offset(c, n, off);
	for (size_t i = x86_skip_endbr(c, n); i + 9 <= n && i < 16; i++) {
		/* 64 48 8b 04 25 disp32: mov %fs:disp32, %rax */
		if (c[i] == 0x64 && c[i + 1] == 0x48 && c[i + 2] == 0x8b &&
		    (c[i + 3] & 0xc7) == 0x04 && c[i + 4] == 0x25) {
			*off = le32(c + i + 5);
			return true;
		}
	}
	return false;
}

/*
 * glibc's pthread_getspecific, first block (key < 32), x86_64 (2.34-2.41):
 *	mov %edi,%eax; add $K,%rax; shl $4,%rax; add %fs:0x10,%rax;
 *	mov D(%rax),%rdx
 * %fs:0x10 is the TCB's self pointer (the thread pointer itself), so
 * &specific_1stblock[key].data = tp + K * 16 + D + key * 16.
 */
bool py_decode_getspecific(uint16_t machine, const uint8_t *c, size_t n,
			       int64_t *off)
{
	int64_t k = -1;
	bool shl = false, self = false;

	if (machine == EM_AARCH64)
		return a64_tp_offset(c, n, off);
	for (size_t i = x86_skip_endbr(c, n); i + 9 <= n && i < 48;) {
		if (c[i] == 0x48 && c[i + 1] == 0x83 && c[i + 2] == 0xc0) {
			k = (int8_t)c[i + 3];
			i += 4;
		} else if (c[i] == 0x48 && c[i + 1] == 0x05) {
			k = le32(c + i + 2);
			i += 6;
		} else if (k >= 0 && c[i] == 0x48 && c[i + 1] == 0xc1 &&
			   c[i + 2] == 0xe0 && c[i + 3] == 0x04) {
			shl = true;
			i += 4;
		} else if (shl && c[i] == 0x64 && c[i + 1] == 0x48 &&
			   c[i + 2] == 0x03 && c[i + 3] == 0x04 &&
			   c[i + 4] == 0x25 && le32(c + i + 5) == 0x10) {
			self = true;
			i += 9;
		} else if (self && c[i] == 0x48 && c[i + 1] == 0x8b &&
			   (c[i + 2] & 0xc7) == 0x40) {	/* mov d8(%rax), r */
			*off = k * 16 + (int8_t)c[i + 3];
			return true;
		} else {
			i++;
		}
	}
	return false;
}

/* The target of the branch at vaddr pc is PyThread_tss_get, which
 * returns pthread_getspecific(tss->_key): Py_tss_t { int
 * _is_initialized; pthread_key_t _key; } (pythread.h), _key 4 bytes in. */
static bool is_tss_get(struct pyelf *pe, uint64_t target)
{
	uint64_t v;

	return pyelf_sym(pe, "PyThread_tss_get", &v, NULL) && v == target;
}

/* aarch64: the registers' values known so far (file vaddrs). */
struct a64_regs {
	uint64_t v[32];
	uint32_t known;
};

static void a64_set(struct a64_regs *r, int reg, bool known, uint64_t v)
{
	r->v[reg] = v;
	r->known = known ? r->known | 1u << reg : r->known & ~(1u << reg);
}

static bool a64_known(const struct a64_regs *r, int reg)
{
	return reg < 31 && (r->known >> reg & 1);
}

/*
 * aarch64 forms: the key's address is built in a register by adrp, add
 * #imm and a GOT load of _PyRuntime, then either loaded (`ldr w0,
 * [xN, #imm]`) for a tail call of pthread_getspecific, or handed in x0 to
 * PyThread_tss_get (`b`/`bl`). A 32-bit load tested at once by cbz/cbnz
 * is the key's _is_initialized (3.14), not the key.
 */
static uint64_t a64_key_addr(struct pyelf *pe, uint64_t pc, const uint8_t *c,
			     size_t n, uint64_t rt_v)
{
	struct a64_regs r = { .known = 0 };

	for (size_t i = 0; i + 4 <= n && i < 24 * 4; i += 4) {
		uint32_t w = insn32(c + i);
		int rn = (int)((w >> 5) & 31), rt = (int)(w & 31);
		uint32_t imm12 = (w >> 10) & 0xfff;

		if ((w & 0x9f000000) == 0x90000000) {		/* adrp */
			int64_t imm = (int64_t)((((w >> 5) & 0x7ffff) << 2) |
					       ((w >> 29) & 3));

			if (imm & (1 << 20))
				imm -= 1 << 21;
			a64_set(&r, rt, true, ((pc + i) & ~0xfffULL) + (uint64_t)(imm << 12));
		} else if ((w & 0xffc00000) == 0x91000000) {	/* add xd, xn, #imm */
			a64_set(&r, rt, a64_known(&r, rn), r.v[rn] + imm12);
		} else if ((w & 0xffc00000) == 0xf9400000) {	/* ldr xt, [xn, #] */
			/* a GOT slot relocated to _PyRuntime, or unknown */
			a64_set(&r, rt, a64_known(&r, rn) &&
				pyelf_got_is(pe, r.v[rn] + imm12 * 8, "_PyRuntime"), rt_v);
		} else if ((w & 0xffc00000) == 0xb9400000) {	/* ldr wt, [xn, #] */
			uint32_t next = i + 8 <= n ? insn32(c + i + 4) : 0;
			bool tested = (next & 0x7e00001f) == (0x34000000 | (uint32_t)rt);

			if (rt == 0 && !tested && a64_known(&r, rn))
				return r.v[rn] + imm12 * 4;
			a64_set(&r, rt, false, 0);
		} else if ((w & 0x7c000000) == 0x14000000) {	/* b, bl */
			int64_t imm = (int64_t)(w & 0x3ffffff);

			if (imm & (1 << 25))
				imm -= 1 << 26;
			if (a64_known(&r, 0) &&
			    is_tss_get(pe, pc + i + (uint64_t)(imm * 4)))
				return r.v[0] + 4;
			if (!(w & 0x80000000))
				return 0;			/* b: the end */
			r.known &= ~0x7ffffu;			/* bl: x0-x18 */
		} else if ((w & 0x7e000000) != 0x34000000) {	/* not cbz/cbnz */
			a64_set(&r, rt, false, 0);	/* anything else writes rt */
		}
	}
	return 0;
}

/*
 * 3.11-3.14: PyGILState_GetThisThreadState reads the key of
 * _PyRuntime's autoTSSkey and calls pthread_getspecific with it (or
 * PyThread_tss_get with the Py_tss_t, whose _key is 4 bytes in). Forms
 * seen in Debian's builds:
 *  - x86_64 executable (3.11, 3.13): `cmpq $0,&_PyRuntime+0x248(%rip); je;
 *    mov &_PyRuntime+0x254(%rip),%edi; jmp pthread_getspecific`;
 *  - x86_64 executable (sid's 3.14, not PIE): `cmpl $0,&_PyRuntime+0x920
 *    (%rip); je; mov $&_PyRuntime+0x920,%edi; jmp PyThread_tss_get`;
 *  - x86_64 libpython: `mov _PyRuntime@GOT(%rip),%rax; cmpq $0,0x248(%rax);
 *    je; lea 0x250(%rax),%rdi; jmp PyThread_tss_get`;
 *  - arm64 executable: `adrp x0; add x0,x0,#8 (= &_PyRuntime); ldr x1,
 *    [x0,#600]; cbz; ldr w0,[x0,#612]; b pthread_getspecific`; 3.14:
 *    `adrp x0; ldr w0,[x0,#0x6a0]; cbz w0; adrp x0; add x0,x0,#0x6a0;
 *    b PyThread_tss_get`;
 *  - arm64 libpython: `adrp; ldr x0,[x0,#GOT]`, then the same loads from
 *    x0; 3.14: `adrp x19; ldr x19,[x19,#GOT]; add x0,x19,#0x920; bl
 *    PyThread_tss_is_created; cbz w0; add x0,x19,#0x920; ...; b
 *    PyThread_tss_get`;
 *  - pyenv's 3.12.1 and sid's 3.14 libpython: `mov _PyRuntime@GOTPCREL(
 *    %rip),%rax; push %rbx; lea 0x608(%rax),%rbx; mov %rbx,%rdi; call
 *    PyThread_tss_is_created; ... jmp PyThread_tss_get`.
 * Also `lea &autoTSSkey(%rip),%rdi; jmp` (a build without LTO). The key's
 * file vaddr, or 0.
 */
uint64_t py_decode_key_addr(struct pyelf *pe, uint64_t pc,
				const uint8_t *c, size_t n, uint64_t rt_v)
{
	if (pe->eh.e_machine == EM_AARCH64)
		return a64_key_addr(pe, pc, c, n, rt_v);
	for (size_t i = x86_skip_endbr(c, n), got = 0; i + 7 <= n && i < 32; i++) {
		if (c[i] == 0x8b && c[i + 1] == 0x3d)	/* mov d32(%rip),%edi */
			return pc + i + 6 + (uint64_t)(int64_t)le32(c + i + 2);
		if (c[i] == 0x48 && c[i + 1] == 0x8d && c[i + 2] == 0x3d &&
		    i + 8 <= n && (c[i + 7] == 0xe9 || c[i + 7] == 0xe8))
			return pc + i + 7 + (uint64_t)(int64_t)le32(c + i + 3) + 4;
		/* mov $&autoTSSkey,%edi; jmp PyThread_tss_get: an absolute
		 * address, so only in a file that is not position-independent */
		if (c[i] == 0xbf && i + 10 <= n && c[i + 5] == 0xe9 &&
		    pe->eh.e_type == ET_EXEC &&
		    is_tss_get(pe, pc + i + 10 + (uint64_t)(int64_t)le32(c + i + 6)))
			return (uint64_t)(uint32_t)le32(c + i + 1) + 4;
		/* mov _PyRuntime@GOTPCREL(%rip),%rax */
		if (!got && c[i] == 0x48 && c[i + 1] == 0x8b && c[i + 2] == 0x05) {
			if (!pyelf_got_is(pe, pc + i + 7 +
					  (uint64_t)(int64_t)le32(c + i + 3), "_PyRuntime"))
				return 0;
			got = 1;
			i += 6;
			continue;
		}
		if (got && i + 6 <= n && c[i] == 0x8b && c[i + 1] == 0xb8)
			return rt_v + (uint64_t)(int64_t)le32(c + i + 2);	/* mov d32(%rax),%edi */
		/* lea d32(%rax),%reg: &autoTSSkey, handed to PyThread_tss_*
		 * (pyenv's 3.12.1: lea 0x608(%rax),%rbx; mov %rbx,%rdi; call
		 * PyThread_tss_is_created; ...; jmp PyThread_tss_get) */
		if (got && c[i] == 0x48 && c[i + 1] == 0x8d && (c[i + 2] & 0xc7) == 0x80)
			return rt_v + (uint64_t)(int64_t)le32(c + i + 3) + 4;
	}
	return 0;
}

int py_glibc_tsd_offset(int libc_fd, int64_t *off, char *err, size_t err_len)
{
	struct pyelf pe;
	uint64_t v, size;
	uint8_t code[96];
	int r = -ENOENT;

	if (!pyelf_open(&pe, libc_fd)) {
		py_err(err, err_len, "the C library is not a 64-bit ELF file");
		goto out;
	}
	if (!pyelf_sym(&pe, "pthread_getspecific", &v, &size) &&
	    !pyelf_sym(&pe, "__pthread_getspecific", &v, &size)) {
		py_err(err, err_len, "the C library has no pthread_getspecific");
		goto out;
	}
	if (!(size = pyelf_code(&pe, v, size, code, sizeof(code))) ||
	    !py_decode_getspecific(pe.eh.e_machine, code, size, off)) {
		py_err(err, err_len, "pthread_getspecific is not glibc's known code");
		r = -ENOTSUP;
		goto out;
	}
	/* specific_1stblock sits in struct pthread, within a few KiB of tp */
	if (*off < -65536 || *off > 65536) {
		py_err(err, err_len, "pthread_getspecific: implausible offset %lld",
		       (long long)*off);
		r = -ENOTSUP;
		goto out;
	}
	r = 0;
out:
	pyelf_close(&pe);
	return r;
}

/*
 * The eval loop's .cold part: gcc moves its unlikely blocks
 * (-freorder-blocks-and-partition) to a fragment in .text.unlikely that
 * only .symtab names (_PyEval_EvalFrameDefault.cold), and Debian strips
 * .symtab. The fragment has its own FDE, and two things tell it from a
 * function: its first CFI row is not a function's entry state (the hot
 * part's frame is already set up: CFA = rsp + 352 in Debian's 3.11, not
 * rsp + 8), and the hot part's branches go into it (378 rel32 jumps in
 * Debian's 3.11). So: the FDE that most branches leaving the hot part
 * land in, at least MIN_COLD_JUMPS of them and twice as many as any
 * other, whose first row is not an entry. x86_64 is scanned byte by byte
 * for jcc/jmp rel32 (a false match lands anywhere, and loses the vote);
 * aarch64 decodes b and b.cond exactly.
 */
#define MIN_COLD_JUMPS	8
#define MAX_COLD_FDES	16

struct cold_vote {
	Dwarf_Addr lo, hi;
	uint32_t n;
};

/* One vote for the FDE that holds target: the whole fragment's range
 * (one CFI row's is not: sid's 3.14 cold part changes rows at every
 * register save, so its jumps would split their votes). */
static void cold_vote(struct pyelf *pe, uint64_t target, struct cold_vote *v,
		      uint32_t *nv)
{
	uint64_t lo, hi;
	uint32_t i;

	for (i = 0; i < *nv; i++)
		if (target >= v[i].lo && target < v[i].hi) {
			v[i].n++;
			return;
		}
	if (*nv < MAX_COLD_FDES && pyelf_fde_range(pe, target, &lo, &hi) && lo < hi) {
		v[*nv] = (struct cold_vote){ lo, hi, 1 };
		(*nv)++;
	}
}

/* Whether the CFI row at pc is a function's entry state: CFA = sp + 8
 * (x86_64, the return address pushed) or sp + 0 (aarch64). */
static bool cfa_is_entry(Dwarf_CFI *cfi, uint64_t pc, uint16_t machine)
{
	Dwarf_Frame *fr;
	Dwarf_Op *ops;
	size_t nops;
	bool entry = true;	/* unknown: not a fragment we can prove */

	if (dwarf_cfi_addrframe(cfi, pc, &fr))
		return true;
	if (!dwarf_frame_cfa(fr, &ops, &nops) && nops == 1) {
		if (machine == EM_X86_64)
			entry = ops[0].atom == DW_OP_breg7 && ops[0].number == 8;
		else
			entry = ops[0].atom == DW_OP_breg31 && ops[0].number == 0;
	}
	free(fr);
	return entry;
}

void py_eval_cold(struct pyelf *pe, uint64_t v, uint64_t size,
		      uint64_t *lo, uint64_t *hi)
{
	Dwarf_CFI *cfi = dwarf_getcfi_elf(pe->e);
	struct cold_vote votes[MAX_COLD_FDES];
	uint32_t nv = 0, best = 0, second = 0, bi = 0;
	uint8_t *c;

	*lo = *hi = 0;
	if (!cfi)
		return;
	if (!(c = malloc(size))) {
		dwarf_cfi_end(cfi);
		return;
	}
	if (!pyelf_read(pe, v, c, size))
		goto out;
	for (uint64_t i = 0; i + 6 <= size; i += pe->eh.e_machine == EM_AARCH64 ? 4 : 1) {
		uint64_t t;

		if (pe->eh.e_machine == EM_AARCH64) {
			uint32_t w = insn32(c + i);
			int64_t imm;

			if ((w & 0xfc000000) == 0x14000000)		/* b */
				imm = (int64_t)((w & 0x3ffffff) << 6) >> 4;
			else if ((w & 0xff000010) == 0x54000000)	/* b.cond */
				imm = (int64_t)((uint64_t)((w >> 5) & 0x7ffff) << 45) >> 43;
			else
				continue;
			t = v + i + (uint64_t)imm;
		} else if (c[i] == 0x0f && (c[i + 1] & 0xf0) == 0x80) {
			t = v + i + 6 + (uint64_t)(int64_t)le32(c + i + 2);
		} else if (c[i] == 0xe9) {
			t = v + i + 5 + (uint64_t)(int64_t)le32(c + i + 1);
		} else {
			continue;
		}
		if (t < v || t >= v + size)
			cold_vote(pe, t, votes, &nv);
	}
	for (uint32_t i = 0; i < nv; i++) {
		if (votes[i].n > best) {
			second = best;
			best = votes[i].n;
			bi = i;
		} else if (votes[i].n > second) {
			second = votes[i].n;
		}
	}
	if (best >= MIN_COLD_JUMPS && best >= 2 * second &&
	    votes[bi].hi - votes[bi].lo < (16u << 20) &&
	    !cfa_is_entry(cfi, votes[bi].lo, pe->eh.e_machine)) {
		*lo = votes[bi].lo;
		*hi = votes[bi].hi;
	}
out:
	free(c);
	dwarf_cfi_end(cfi);	/* dwarf_getcfi_elf()'s is the caller's to free */
}
