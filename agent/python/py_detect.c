// SPDX-License-Identifier: GPL-2.0-only
/*
 * Finding CPython in a process and describing it for the backends'
 * walker (struct ember_py_proc). Everything comes from the interpreter's
 * ELF file (the process's own view of it, /proc/PID/map_files): the
 * version (Py_Version, checked against the file name), _PyRuntime, the
 * eval loop's range, PyCode_Type's member table, and, per version, the
 * frame and thread-state offsets: 3.13 from _Py_DebugOffsets at the start
 * of _PyRuntime, 3.11/3.12 from the table below (each value with its
 * source). Where the thread state lives is decoded from code: 3.13's
 * _PyThreadState_GetCurrent (a TLS load), 3.11/3.12's
 * PyGILState_GetThisThreadState (the TSS key inside _PyRuntime) and
 * glibc's pthread_getspecific (the TSD array's offset from the thread
 * pointer). Any check that fails refuses the interpreter with a sentence:
 * the process then gets native frames only, never guessed ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include "lib/safe_file.h"
#include "python/python.h"

#define PY_FILE_MAX_BYTES	(1ULL << 30)

static void __attribute__((format(printf, 3, 4)))
errmsg(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* ---- the ELF file ---- */

struct pyelf {
	Elf *e;
	GElf_Ehdr eh;
	size_t nph;
	Elf_Data *dynsym, *dynstr;
	size_t nsyms;
};

static bool pyelf_open(struct pyelf *pe, int fd)
{
	Elf_Scn *scn = NULL;

	memset(pe, 0, sizeof(*pe));
	elf_version(EV_CURRENT);
	pe->e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!pe->e || elf_kind(pe->e) != ELF_K_ELF || !gelf_getehdr(pe->e, &pe->eh) ||
	    pe->eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    elf_getphdrnum(pe->e, &pe->nph))
		return false;
	while ((scn = elf_nextscn(pe->e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !sh.sh_entsize)
			continue;
		pe->dynsym = elf_getdata(scn, NULL);
		pe->dynstr = elf_getdata(elf_getscn(pe->e, sh.sh_link), NULL);
		/* a NOBITS or empty table has no bytes to point into */
		if (pe->dynsym && pe->dynstr && pe->dynsym->d_buf &&
		    pe->dynstr->d_buf)
			pe->nsyms = pe->dynsym->d_size / sh.sh_entsize;
		else
			pe->dynsym = NULL;
		break;
	}
	return true;
}

static void pyelf_close(struct pyelf *pe)
{
	if (pe->e)
		elf_end(pe->e);
	pe->e = NULL;
}

/* A defined dynamic symbol by name: its value and size. */
static bool pyelf_sym(struct pyelf *pe, const char *name, uint64_t *value,
		      uint64_t *size)
{
	for (size_t i = 1; i < pe->nsyms; i++) {
		GElf_Sym s;
		const char *n;

		if (!gelf_getsym(pe->dynsym, (int)i, &s) || !s.st_value ||
		    s.st_shndx == SHN_UNDEF || s.st_name >= pe->dynstr->d_size)
			continue;
		n = (const char *)pe->dynstr->d_buf + s.st_name;
		if (strnlen(n, pe->dynstr->d_size - s.st_name) ==
		    pe->dynstr->d_size - s.st_name || strcmp(n, name))
			continue;
		*value = s.st_value;
		if (size)
			*size = s.st_size;
		return true;
	}
	return false;
}

/* A function in .symtab (a build that kept it): value and size. */
static bool pyelf_symtab_func(struct pyelf *pe, const char *name,
			      uint64_t *value, uint64_t *size)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(pe->e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		for (size_t i = 1; i < d->d_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s) ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value ||
			    !s.st_size || s.st_shndx == SHN_UNDEF ||
			    !(n = elf_strptr(pe->e, sh.sh_link, s.st_name)) ||
			    strcmp(n, name))
				continue;
			*value = s.st_value;
			*size = s.st_size;
			return true;
		}
	}
	return false;
}

/* len bytes at file vaddr v, from a PT_LOAD's file bytes (never past them). */
static bool pyelf_read(struct pyelf *pe, uint64_t v, void *buf, size_t len)
{
	size_t fsize;
	const char *raw = elf_rawfile(pe->e, &fsize);

	for (size_t i = 0; raw && i < pe->nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(pe->e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (v < ph.p_vaddr || v - ph.p_vaddr >= ph.p_filesz ||
		    len > ph.p_filesz - (v - ph.p_vaddr))
			continue;
		if (ph.p_offset > fsize ||
		    v - ph.p_vaddr + ph.p_offset > fsize - len)
			return false;
		memcpy(buf, raw + ph.p_offset + (v - ph.p_vaddr), len);
		return true;
	}
	return false;
}

/* Up to max bytes of code at v (a small function may end its segment). */
static size_t pyelf_code(struct pyelf *pe, uint64_t v, uint64_t sym_size,
			 uint8_t *buf, size_t max)
{
	size_t n = sym_size && sym_size < max ? (size_t)sym_size : max;

	for (; n >= 4; n /= 2)
		if (pyelf_read(pe, v, buf, n))
			return n;
	return 0;
}

/*
 * A pointer stored at vaddr v. In a position-independent file the word
 * is 0 and an R_*_RELATIVE relocation holds the value (its addend).
 */
static bool pyelf_ptr(struct pyelf *pe, uint64_t v, uint64_t *out)
{
	Elf_Scn *scn = NULL;
	uint32_t rel = pe->eh.e_machine == EM_AARCH64 ? 1027 : 8;

	if (!pyelf_read(pe, v, out, 8))
		return false;
	if (*out || pe->eh.e_type != ET_DYN)
		return true;
	while ((scn = elf_nextscn(pe->e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    !(d = elf_getdata(scn, NULL)) || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
			GElf_Rela r;

			if (gelf_getrela(d, (int)i, &r) && r.r_offset == v &&
			    GELF_R_TYPE(r.r_info) == rel) {
				*out = (uint64_t)r.r_addend;
				return true;
			}
		}
	}
	return true;
}

/* A NUL-terminated string of at most max - 1 bytes at v. */
static bool pyelf_str(struct pyelf *pe, uint64_t v, char *buf, size_t max)
{
	size_t i;

	for (i = 0; i < max - 1; i++) {
		if (!pyelf_read(pe, v + i, &buf[i], 1))
			return false;
		if (!buf[i])
			return true;
	}
	return false;
}

/* ---- the version ---- */

/* 3.N from "python3.N", "python3.Nd", "libpython3.N.so...": N, or -1. */
static int minor_of_name(const char *name)
{
	const char *b = strrchr(name, '/');
	char *end;
	long n;

	b = b ? b + 1 : name;
	if (!strncmp(b, "lib", 3))
		b += 3;
	if (strncmp(b, "python3.", 8))
		return -1;
	n = strtol(b + 8, &end, 10);
	if (end == b + 8 || n < 0 || n > 99)
		return -1;
	if (*end && *end != '.' && *end != 'd' && *end != 'm' && *end != 't')
		return -1;
	if (b != name && !strncmp(b - 3, "lib", 3) && strncmp(end, ".so", 3))
		return -1;
	return (int)n;
}

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
 * first 64-bit load `ldr Xt, [Xn, #imm]`, whose offset ends the sum: the
 * TLS load of _PyThreadState_GetCurrent (add, add, ldr) and the first
 * block of pthread_getspecific (ubfiz, mrs, sub, add reg, ldr) alike.
 */
static bool a64_tp_offset(const uint8_t *c, size_t n, int64_t *off)
{
	int64_t sum = 0;
	bool tp = false;

	for (size_t i = 0; i + 4 <= n && i < 24 * 4; i += 4) {
		uint32_t w = insn32(c + i);

		if ((w & 0xffffffe0) == 0xd53bd040) {		/* mrs x, tpidr_el0 */
			tp = true;
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
static bool decode_tls_get(uint16_t machine, const uint8_t *c, size_t n,
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
static bool decode_getspecific(uint16_t machine, const uint8_t *c, size_t n,
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

/*
 * Whether the GOT slot at vaddr slot is relocated to the dynamic symbol
 * name (R_X86_64_GLOB_DAT 6 / R_X86_64_64 1, R_AARCH64_GLOB_DAT 1025 /
 * R_AARCH64_ABS64 257): a libpython reaches its exported _PyRuntime
 * through the GOT.
 */
static bool pyelf_got_is(struct pyelf *pe, uint64_t slot, const char *name)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(pe->e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    !(d = elf_getdata(scn, NULL)) || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			uint32_t t;
			const char *n;

			if (!gelf_getrela(d, (int)i, &r) || r.r_offset != slot)
				continue;
			t = (uint32_t)GELF_R_TYPE(r.r_info);
			if (t != 6 && t != 1 && t != 1025 && t != 257)
				return false;
			if (r.r_addend || !pe->dynsym ||
			    GELF_R_SYM(r.r_info) >= pe->nsyms ||
			    !gelf_getsym(pe->dynsym, (int)GELF_R_SYM(r.r_info), &sym) ||
			    sym.st_name >= pe->dynstr->d_size)
				return false;
			n = (const char *)pe->dynstr->d_buf + sym.st_name;
			return strnlen(n, pe->dynstr->d_size - sym.st_name) <
			       pe->dynstr->d_size - sym.st_name && !strcmp(n, name);
		}
	}
	return false;
}

/*
 * 3.11/3.12: PyGILState_GetThisThreadState reads the key of
 * _PyRuntime's autoTSSkey and calls pthread_getspecific with it (or
 * PyThread_tss_get with the Py_tss_t, whose _key is 4 bytes in). Forms
 * seen in Debian 12's builds:
 *  - x86_64 executable: `cmpq $0,&_PyRuntime+0x248(%rip); je;
 *    mov &_PyRuntime+0x254(%rip),%edi; jmp pthread_getspecific`;
 *  - x86_64 libpython: `mov _PyRuntime@GOT(%rip),%rax; cmpq $0,0x248(%rax);
 *    je; lea 0x250(%rax),%rdi; jmp PyThread_tss_get`;
 *  - arm64 executable: `adrp x0; add x0,x0,#8 (= &_PyRuntime); ldr x1,
 *    [x0,#600]; cbz; ldr w0,[x0,#612]; b pthread_getspecific`;
 *  - arm64 libpython (like x86_64's): `adrp; ldr x0,[x0,#GOT]`, then the
 *    same loads from x0;
 *  - pyenv's 3.12.1 libpython (no LTO): `mov _PyRuntime@GOTPCREL(%rip),
 *    %rax; push %rbx; lea 0x608(%rax),%rbx; mov %rbx,%rdi; call
 *    PyThread_tss_is_created; ... jmp PyThread_tss_get`.
 * Also `lea &autoTSSkey(%rip),%rdi; jmp` (a build without LTO). The key's
 * file vaddr, or 0.
 */
static uint64_t decode_key_addr(struct pyelf *pe, uint64_t pc,
				const uint8_t *c, size_t n, uint64_t rt_v)
{
	if (pe->eh.e_machine == EM_AARCH64) {
		uint64_t base = 0;
		int reg = -1;

		for (size_t i = 0; i + 4 <= n && i < 16 * 4; i += 4) {
			uint32_t w = insn32(c + i);
			int rn = (int)((w >> 5) & 31), rt = (int)(w & 31);

			if ((w & 0x9f000000) == 0x90000000) {	/* adrp */
				int64_t imm = (int64_t)((((w >> 5) & 0x7ffff) << 2) |
						       ((w >> 29) & 3));

				if (imm & (1 << 20))
					imm -= 1 << 21;
				base = ((pc + i) & ~0xfffULL) + (uint64_t)(imm << 12);
				reg = rt;
			} else if (reg >= 0 && (w & 0xffc00000) == 0x91000000 &&
				   rn == reg && rt == reg) {
				base += (w >> 10) & 0xfff;	/* add xN, xN, #imm */
			} else if (reg >= 0 && (w & 0xffc00000) == 0xf9400000 &&
				   rn == reg && rt == reg) {	/* ldr xN, [xN, #got] */
				if (!pyelf_got_is(pe, base + ((w >> 10) & 0xfff) * 8,
						  "_PyRuntime"))
					return 0;
				base = rt_v;
			} else if (reg >= 0 && (w & 0xffc00000) == 0xb9400000 &&
				   rn == reg && rt == 0) {	/* ldr w0, [xN, #] */
				return base + ((w >> 10) & 0xfff) * 4;
			}
		}
		return 0;
	}
	for (size_t i = x86_skip_endbr(c, n), got = 0; i + 7 <= n && i < 32; i++) {
		if (c[i] == 0x8b && c[i + 1] == 0x3d)	/* mov d32(%rip),%edi */
			return pc + i + 6 + (uint64_t)(int64_t)le32(c + i + 2);
		if (c[i] == 0x48 && c[i + 1] == 0x8d && c[i + 2] == 0x3d &&
		    i + 8 <= n && (c[i + 7] == 0xe9 || c[i + 7] == 0xe8))
			return pc + i + 7 + (uint64_t)(int64_t)le32(c + i + 3) + 4;
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
		errmsg(err, err_len, "the C library is not a 64-bit ELF file");
		goto out;
	}
	if (!pyelf_sym(&pe, "pthread_getspecific", &v, &size) &&
	    !pyelf_sym(&pe, "__pthread_getspecific", &v, &size)) {
		errmsg(err, err_len, "the C library has no pthread_getspecific");
		goto out;
	}
	if (!(size = pyelf_code(&pe, v, size, code, sizeof(code))) ||
	    !decode_getspecific(pe.eh.e_machine, code, size, off)) {
		errmsg(err, err_len, "pthread_getspecific is not glibc's known code");
		r = -ENOTSUP;
		goto out;
	}
	/* specific_1stblock sits in struct pthread, within a few KiB of tp */
	if (*off < -65536 || *off > 65536) {
		errmsg(err, err_len, "pthread_getspecific: implausible offset %lld",
		       (long long)*off);
		r = -ENOTSUP;
		goto out;
	}
	r = 0;
out:
	pyelf_close(&pe);
	return r;
}

/* ---- per-version layouts ---- */

/*
 * 3.11 and 3.12 (64-bit, default build), where no _Py_DebugOffsets
 * exists. 3.11: offsetof() against Debian 12's python3.11-dev headers
 * (3.11.2), compiled on x86_64 (selftests/agent/python checks them again
 * where the headers are installed); 3.12: CPython v3.12 headers, not
 * checked against a 3.12 binary here (Debian has none).
 */
struct py_table {
	uint8_t minor;
	uint8_t entry_kind, entry_value;
	uint16_t ts_frame[2];	/* tstate->cframe, cframe->current_frame */
	uint16_t fr_previous, fr_code, fr_instr, fr_owner;
	/* &_PyRuntime...autoTSSkey._key - &_PyRuntime (x86_64, aarch64:
	 * glibc's pthread_mutex_t in the runtime state is 40 vs 48 bytes),
	 * 0: decoded only */
	uint16_t key_in_runtime[2];
	uint16_t uni_ascii_size, uni_compact_size;
};

static const struct py_table py_tables[] = {
	{
		.minor = 11,
		/* Include/internal/pycore_frame.h: struct _PyInterpreterFrame
		 * { PyFunctionObject *f_func 0; PyObject *f_globals 8,
		 * *f_builtins 16, *f_locals 24; PyCodeObject *f_code 32;
		 * PyFrameObject *frame_obj 40; _PyInterpreterFrame *previous 48;
		 * _Py_CODEUNIT *prev_instr 56; int stacktop 64; bool is_entry 68;
		 * char owner 69; } */
		.entry_kind = EMBER_PY_ENTRY_FLAG, .entry_value = 1,
		/* Include/cpython/pystate.h: PyThreadState.cframe 56 (after
		 * prev, next, interp, _initialized, _static, recursion_remaining,
		 * recursion_limit, recursion_headroom, tracing, tracing_what);
		 * _PyCFrame { int use_tracing; current_frame 8; previous 16 } */
		.ts_frame = { 56, 8 },
		.fr_previous = 48, .fr_code = 32, .fr_instr = 56, .fr_owner = 68,
		/* pycore_runtime.h: _PyRuntimeState.gilstate 568,
		 * _gilstate_runtime_state.autoTSSkey 24, Py_tss_t._key 4 on
		 * x86_64 (596); 612 on aarch64, read from the code of Debian
		 * 12's arm64 python3.11 (PyGILState_GetThisThreadState) */
		.key_in_runtime = { 596, 612 },
		/* cpython/unicodeobject.h: PyASCIIObject with wstr (48),
		 * PyCompactUnicodeObject (72) */
		.uni_ascii_size = 48, .uni_compact_size = 72,
	},
	{
		.minor = 12,
		/* pycore_frame.h (3.12): f_code 0, previous 8, f_funcobj 16,
		 * f_globals 24, f_builtins 32, f_locals 40, frame_obj 48,
		 * prev_instr 56, stacktop 64, return_offset 68 (uint16),
		 * owner 70; enum _frameowner: FRAME_OWNED_BY_CSTACK = 3 */
		.entry_kind = EMBER_PY_ENTRY_SHIM, .entry_value = 3,
		/* cpython/pystate.h (3.12): cframe 56; _PyCFrame {
		 * current_frame 0; previous 8 } */
		.ts_frame = { 56, 0 },
		.fr_previous = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70,
		.key_in_runtime = { 0, 0 },	/* from PyGILState_GetThisThreadState */
		/* 3.12 dropped wstr: PyASCIIObject 40, compact 56 */
		.uni_ascii_size = 40, .uni_compact_size = 56,
	},
};

/* PyTypeObject (Include/cpython/object.h, every 3.x, 64-bit) */
#define TP_BASICSIZE	32
#define TP_MEMBERS	240
/* PyMemberDef { const char *name 0; int type 8; Py_ssize_t offset 16;
 * int flags 24; const char *doc 32 } (descrobject.h) */
#define MEMBERDEF_SIZE	40
#define T_INT		1
#define T_OBJECT	6

/*
 * The code object's members from PyCode_Type's tp_members, as compiled
 * into the file: what the interpreter itself uses for co.co_name etc.
 * in Python, so better than a copied table.
 */
static int code_members(struct pyelf *pe, uint64_t type_v,
			struct py_layout *lay, char *err, size_t err_len)
{
	static const struct {
		const char *name;
		int type;
		size_t off;
	} want[] = {
		{ "co_argcount", T_INT, offsetof(struct py_layout, co_argcount) },
		{ "co_flags", T_INT, offsetof(struct py_layout, co_flags) },
		{ "co_firstlineno", T_INT, offsetof(struct py_layout, co_firstlineno) },
		{ "co_filename", T_OBJECT, offsetof(struct py_layout, co_filename) },
		{ "co_name", T_OBJECT, offsetof(struct py_layout, co_name) },
		{ "co_qualname", T_OBJECT, offsetof(struct py_layout, co_qualname) },
		{ "co_linetable", T_OBJECT, offsetof(struct py_layout, co_linetable) },
	};
	uint32_t found = 0;
	uint64_t basic, members;

	if (!pyelf_read(pe, type_v + TP_BASICSIZE, &basic, 8) ||
	    !pyelf_ptr(pe, type_v + TP_MEMBERS, &members) || !members) {
		errmsg(err, err_len, "PyCode_Type cannot be read");
		return -EINVAL;
	}
	if (basic < 64 || basic >= EMBER_PY_MAX_OFFSET) {
		errmsg(err, err_len, "PyCode_Type.tp_basicsize %llu is implausible",
		       (unsigned long long)basic);
		return -EINVAL;
	}
	lay->co_code = (uint16_t)basic;
	for (uint32_t i = 0; i < 64; i++) {
		uint64_t v = members + i * MEMBERDEF_SIZE, name_v, off;
		int32_t type;
		char name[32];

		if (!pyelf_ptr(pe, v, &name_v) || !name_v)
			break;
		if (!pyelf_read(pe, v + 8, &type, 4) ||
		    !pyelf_read(pe, v + 16, &off, 8) ||
		    !pyelf_str(pe, name_v, name, sizeof(name)))
			continue;
		for (uint32_t j = 0; j < sizeof(want) / sizeof(want[0]); j++) {
			if (strcmp(name, want[j].name))
				continue;
			if (type != want[j].type || off < 16 || off + 8 > basic)
				break;
			*(uint16_t *)((char *)lay + want[j].off) = (uint16_t)off;
			found |= 1u << j;
		}
	}
	if (found != (1u << (sizeof(want) / sizeof(want[0]))) - 1) {
		errmsg(err, err_len, "PyCode_Type's members lack what naming needs (%#x)",
		       found);
		return -EINVAL;
	}
	return 0;
}

/* _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h, v3.13),
 * as u64 indexes from the start of _PyRuntime: checked against Debian
 * 13's python3.13 (3.13.5). */
enum {
	DO_VERSION = 1, DO_FREE_THREADED = 2,
	DO_TS_SIZE = 19, DO_TS_CURRENT_FRAME = 23,
	DO_FR_SIZE = 28, DO_FR_PREVIOUS, DO_FR_EXECUTABLE, DO_FR_INSTR_PTR,
	DO_FR_LOCALSPLUS, DO_FR_OWNER,
	DO_CO_SIZE = 34, DO_CO_FILENAME, DO_CO_NAME, DO_CO_QUALNAME,
	DO_CO_LINETABLE, DO_CO_FIRSTLINENO, DO_CO_ARGCOUNT,
	DO_CO_LOCALSPLUSNAMES, DO_CO_LOCALSPLUSKINDS, DO_CO_CODE_ADAPTIVE,
	DO_OB_SIZE = 44, DO_OB_TYPE,
	DO_BYTES_SIZE = 64, DO_BYTES_OB_SIZE, DO_BYTES_SVAL,
	DO_UNI_SIZE = 67, DO_UNI_STATE, DO_UNI_LENGTH, DO_UNI_ASCII_SIZE,
	DO_NR = 71,
};

static int debug_offsets(struct pyelf *pe, uint64_t rt_v, uint32_t version,
			 struct py_target *t, char *err, size_t err_len)
{
	struct ember_py_proc *p = &t->proc;
	struct py_layout *l = &t->lay;
	uint64_t d[DO_NR];

	if (!pyelf_read(pe, rt_v, d, sizeof(d)) || memcmp(d, "xdebugpy", 8)) {
		errmsg(err, err_len, "_PyRuntime has no _Py_DebugOffsets");
		return -EINVAL;
	}
	if ((uint32_t)d[DO_VERSION] != version || d[DO_FREE_THREADED]) {
		errmsg(err, err_len, "_Py_DebugOffsets: version %#llx%s",
		       (unsigned long long)d[DO_VERSION],
		       d[DO_FREE_THREADED] ? ", free-threaded (not supported)" : "");
		return -ENOTSUP;
	}
	for (int i = DO_TS_SIZE; i < DO_NR; i++)
		if (d[i] >= (1u << 20)) {
			errmsg(err, err_len, "_Py_DebugOffsets[%d] = %#llx", i,
			       (unsigned long long)d[i]);
			return -EINVAL;
		}
	/* every field read must lie inside its struct */
	if (d[DO_TS_CURRENT_FRAME] + 8 > d[DO_TS_SIZE] ||
	    d[DO_FR_PREVIOUS] + 8 > d[DO_FR_SIZE] ||
	    d[DO_FR_EXECUTABLE] + 8 > d[DO_FR_SIZE] ||
	    d[DO_FR_INSTR_PTR] + 8 > d[DO_FR_SIZE] ||
	    d[DO_FR_OWNER] + 1 > d[DO_FR_SIZE] ||
	    d[DO_FR_SIZE] >= EMBER_PY_MAX_OFFSET ||
	    d[DO_TS_SIZE] >= EMBER_PY_MAX_OFFSET ||
	    d[DO_CO_SIZE] >= EMBER_PY_MAX_OFFSET ||
	    d[DO_UNI_ASCII_SIZE] < 24 || d[DO_UNI_ASCII_SIZE] > 256 ||
	    d[DO_UNI_STATE] + 4 > d[DO_UNI_ASCII_SIZE] ||
	    d[DO_UNI_LENGTH] + 8 > d[DO_UNI_ASCII_SIZE] ||
	    d[DO_BYTES_OB_SIZE] + 8 > d[DO_BYTES_SVAL] ||
	    d[DO_BYTES_SVAL] > 256 || d[DO_OB_TYPE] + 8 > d[DO_OB_SIZE]) {
		errmsg(err, err_len, "_Py_DebugOffsets fail their checks");
		return -EINVAL;
	}
	p->ts_frame[0] = (uint16_t)d[DO_TS_CURRENT_FRAME];
	p->ts_frame_nr = 1;
	p->fr_previous = (uint16_t)d[DO_FR_PREVIOUS];
	p->fr_code = (uint16_t)d[DO_FR_EXECUTABLE];
	p->fr_instr = (uint16_t)d[DO_FR_INSTR_PTR];
	p->fr_owner = (uint16_t)d[DO_FR_OWNER];
	/* pycore_frame.h (3.13): FRAME_OWNED_BY_CSTACK = 3 (3.14: 4) */
	p->entry_kind = EMBER_PY_ENTRY_SHIM;
	p->entry_value = 3;
	l->ob_type = (uint16_t)d[DO_OB_TYPE];
	l->bytes_size = (uint16_t)d[DO_BYTES_OB_SIZE];
	l->bytes_sval = (uint16_t)d[DO_BYTES_SVAL];
	l->uni_length = (uint16_t)d[DO_UNI_LENGTH];
	l->uni_state = (uint16_t)d[DO_UNI_STATE];
	l->uni_ascii_size = (uint16_t)d[DO_UNI_ASCII_SIZE];
	/* PyCompactUnicodeObject: + Py_ssize_t utf8_length, char *utf8 */
	l->uni_compact_size = l->uni_ascii_size + 16;
	/* the member table and the debug offsets must agree */
	if (l->co_filename != d[DO_CO_FILENAME] || l->co_name != d[DO_CO_NAME] ||
	    l->co_qualname != d[DO_CO_QUALNAME] ||
	    l->co_linetable != d[DO_CO_LINETABLE] ||
	    l->co_firstlineno != d[DO_CO_FIRSTLINENO] ||
	    l->co_argcount != d[DO_CO_ARGCOUNT] ||
	    l->co_code != d[DO_CO_CODE_ADAPTIVE]) {
		errmsg(err, err_len, "PyCode_Type's members and _Py_DebugOffsets disagree");
		return -EINVAL;
	}
	return 0;
}

/* 3.11/3.12 from py_tables, the TSS key found in the code. */
static int table_offsets(struct pyelf *pe, int minor, uint64_t rt_v,
			 uint64_t rt_size, uint64_t bias, struct py_target *t,
			 char *err, size_t err_len)
{
	const struct py_table *tb = NULL;
	struct ember_py_proc *p = &t->proc;
	struct py_layout *l = &t->lay;
	uint64_t v, size, key_v, key_in;
	uint8_t code[64];
	size_t n;

	for (size_t i = 0; i < sizeof(py_tables) / sizeof(py_tables[0]); i++)
		if (py_tables[i].minor == minor)
			tb = &py_tables[i];
	if (!tb)
		return -ENOTSUP;
	p->entry_kind = tb->entry_kind;
	p->entry_value = tb->entry_value;
	p->ts_frame[0] = tb->ts_frame[0];
	p->ts_frame[1] = tb->ts_frame[1];
	p->ts_frame_nr = 2;
	p->fr_previous = tb->fr_previous;
	p->fr_code = tb->fr_code;
	p->fr_instr = tb->fr_instr;
	p->fr_owner = tb->fr_owner;
	/* object.h, bytesobject.h, unicodeobject.h: stable in 3.x */
	l->ob_type = 8;
	l->bytes_size = 16;
	l->bytes_sval = 32;
	l->uni_length = 16;
	l->uni_state = 32;
	l->uni_ascii_size = tb->uni_ascii_size;
	l->uni_compact_size = tb->uni_compact_size;

	if (!pyelf_sym(pe, "PyGILState_GetThisThreadState", &v, &size) ||
	    !(n = pyelf_code(pe, v, size, code, sizeof(code))) ||
	    !(key_v = decode_key_addr(pe, v, code, n, rt_v))) {
		errmsg(err, err_len, "PyGILState_GetThisThreadState is not known code");
		return -ENOTSUP;
	}
	key_in = tb->key_in_runtime[pe->eh.e_machine == EM_AARCH64];
	if (key_v < rt_v || key_v + 4 > rt_v + rt_size ||
	    (key_in && key_v - rt_v != key_in)) {
		errmsg(err, err_len, "the TSS key at _PyRuntime+%#llx is not where 3.%d keeps it",
		       (unsigned long long)(key_v - rt_v), minor);
		return -EINVAL;
	}
	p->tstate_kind = EMBER_PY_TS_TSD;
	p->key_addr = key_v + bias;
	return 0;
}

static int tls_offset(struct pyelf *pe, struct py_target *t, char *err,
		      size_t err_len)
{
	uint64_t v, size;
	uint8_t code[32];
	size_t n;
	int64_t off;

	if (!pyelf_sym(pe, "_PyThreadState_GetCurrent", &v, &size) ||
	    !(n = pyelf_code(pe, v, size, code, sizeof(code))) ||
	    !decode_tls_get(pe->eh.e_machine, code, n, &off)) {
		/* libpython: general-dynamic TLS (__tls_get_addr), whose
		 * offset only the loader knows */
		errmsg(err, err_len, "_PyThreadState_GetCurrent is not a thread-pointer load");
		return -ENOTSUP;
	}
	if (off < -(1 << 24) || off > (1 << 24) || (off & 7)) {
		errmsg(err, err_len, "_Py_tss_tstate at tp%+lld is implausible",
		       (long long)off);
		return -EINVAL;
	}
	t->proc.tstate_kind = EMBER_PY_TS_TLS;
	t->proc.tstate_off = off;
	return 0;
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

static void cold_vote(Dwarf_CFI *cfi, uint64_t target, struct cold_vote *v,
		      uint32_t *nv)
{
	Dwarf_Frame *fr;
	Dwarf_Addr lo, hi;
	uint32_t i;

	for (i = 0; i < *nv; i++)
		if (target >= v[i].lo && target < v[i].hi) {
			v[i].n++;
			return;
		}
	if (*nv == MAX_COLD_FDES || dwarf_cfi_addrframe(cfi, target, &fr))
		return;
	if (dwarf_frame_info(fr, &lo, &hi, NULL) >= 0 && lo < hi) {
		v[*nv] = (struct cold_vote){ lo, hi, 1 };
		(*nv)++;
	}
	free(fr);
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

static void eval_cold(struct pyelf *pe, uint64_t v, uint64_t size,
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
			cold_vote(cfi, t, votes, &nv);
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

/* The eval loop and its .cold part. */
static int eval_range(struct pyelf *pe, uint64_t bias, struct py_target *t,
		      char *err, size_t err_len)
{
	uint64_t v, size, lo, hi;

	if (!pyelf_sym(pe, "_PyEval_EvalFrameDefault", &v, &size) || !size ||
	    size > (16u << 20)) {
		errmsg(err, err_len, "no _PyEval_EvalFrameDefault with a size");
		return -ENOTSUP;
	}
	t->proc.eval_start[0] = v + bias;
	t->proc.eval_end[0] = v + bias + size;
	/* a build that kept .symtab names it (pyenv's: 4 and 8 bytes, too
	 * few jumps for the vote) */
	if (pyelf_symtab_func(pe, "_PyEval_EvalFrameDefault.cold", &lo, &hi) &&
	    hi < (16u << 20) && (lo + hi <= v || lo >= v + size))
		hi += lo;
	else
		eval_cold(pe, v, size, &lo, &hi);
	if (lo < hi) {
		t->proc.eval_start[1] = lo + bias;
		t->proc.eval_end[1] = hi + bias;
	}
	return 0;
}

int py_detect_file(int fd, const char *name, uint64_t bias, int libc_fd,
		   struct py_target *t, char *err, size_t err_len)
{
	struct pyelf pe;
	uint64_t rt_v, rt_size, ver_v, code_v, ver64 = 0;
	int minor = minor_of_name(name), r;
	int64_t tsd_off;
	uint32_t version;

	memset(t, 0, sizeof(*t));
	snprintf(t->file, sizeof(t->file), "%s", name);
	if (!pyelf_open(&pe, fd)) {
		pyelf_close(&pe);
		return 0;
	}
	r = 0;
	if (!pyelf_sym(&pe, "_PyRuntime", &rt_v, &rt_size))
		goto out;	/* not the interpreter (a python3 launcher) */
	r = -ENOTSUP;
	if (pe.eh.e_machine != EM_X86_64 && pe.eh.e_machine != EM_AARCH64) {
		errmsg(err, err_len, "%s: machine %u", name, pe.eh.e_machine);
		goto out;
	}
	if (!pyelf_sym(&pe, "Py_Version", &ver_v, NULL) ||
	    !pyelf_read(&pe, ver_v, &ver64, 8)) {
		/* 3.10 and older export no Py_Version */
		errmsg(err, err_len, "%s: no Py_Version (CPython before 3.11?)", name);
		goto out;
	}
	version = (uint32_t)ver64;
	t->lay.version = t->proc.version = version;
	if ((version >> 24) != 3 || (minor >= 0 && ((version >> 16) & 0xff) != (uint32_t)minor)) {
		errmsg(err, err_len, "%s: Py_Version %#x does not match its name",
		       name, version);
		r = -EINVAL;
		goto out;
	}
	minor = (version >> 16) & 0xff;
	if (minor < 11 || minor > 13) {
		errmsg(err, err_len, "CPython 3.%d (ember walks 3.11 to 3.13)", minor);
		goto out;
	}
	if (rt_size < 4096 || rt_size > (16u << 20)) {
		errmsg(err, err_len, "%s: _PyRuntime of %llu bytes", name,
		       (unsigned long long)rt_size);
		r = -EINVAL;
		goto out;
	}
	if (!pyelf_sym(&pe, "PyCode_Type", &code_v, NULL)) {
		errmsg(err, err_len, "%s: no PyCode_Type", name);
		goto out;
	}
	t->lay.code_type = code_v + bias;
	if ((r = code_members(&pe, code_v, &t->lay, err, err_len)) ||
	    (r = eval_range(&pe, bias, t, err, err_len)))
		goto out;
	/* what the walker reads of each code object, for the check value */
	t->proc.co_firstlineno = t->lay.co_firstlineno;
	t->proc.co_argcount = t->lay.co_argcount;
	t->proc.co_flags = t->lay.co_flags;
	t->proc.code_tag_mask = 0;	/* 3.14's _PyStackRef: not walked yet */
	if (minor >= 13) {
		if ((r = debug_offsets(&pe, rt_v, version, t, err, err_len)) ||
		    (r = tls_offset(&pe, t, err, err_len)))
			goto out;
	} else {
		if ((r = table_offsets(&pe, minor, rt_v, rt_size, bias, t, err,
				       err_len)))
			goto out;
		if (libc_fd < 0)
			t->proc.tstate_kind = 0;	/* the caller says why */
		else if ((r = py_glibc_tsd_offset(libc_fd, &tsd_off, err,
						  err_len)))
			goto out;
		else
			t->proc.tstate_off = tsd_off;
	}
	r = 1;
out:
	pyelf_close(&pe);
	return r;
}

/* ---- in a process ---- */

static const struct safe_rules map_rules = {
	.max_bytes = PY_FILE_MAX_BYTES,
	.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
	.flags = SAFE_FOLLOW | SAFE_ANYONE,
};

/* The file of a mapping, through map_files (the exact mapped inode,
 * in whatever mount namespace it lives): a regular file or nothing. */
static int open_mapping(uint32_t pid, const struct sym_map_line *m)
{
	char path[96];
	struct stat st;
	const char *why;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = safe_open_at(NULL, path, &map_rules, &st, &why);
	if (fd < 0 && safe_refused(why))
		safe_warn("python file", NULL, m->path, why);
	return fd;
}

/* The load bias of a mapping of fd: its start minus the vaddr of its
 * file offset, from the PT_LOAD that holds that offset. */
static bool mapping_bias(int fd, const struct sym_map_line *m, uint64_t *bias)
{
	struct pyelf pe;
	bool ok = false;

	if (!pyelf_open(&pe, fd))
		goto out;
	for (size_t i = 0; i < pe.nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(pe.e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    m->pgoff < (ph.p_offset & ~0xfffULL) ||
		    m->pgoff >= ph.p_offset + ph.p_filesz)
			continue;
		*bias = m->start - (ph.p_vaddr - ph.p_offset + m->pgoff);
		ok = true;
		break;
	}
out:
	pyelf_close(&pe);
	return ok;
}

static const char *base_name(const struct sym_map_line *m, char *buf,
			     size_t size)
{
	size_t len = m->path_len < size - 1 ? m->path_len : size - 1;
	const char *b;

	memcpy(buf, m->path, len);
	buf[len] = 0;
	b = strrchr(buf, '/');
	return b ? b + 1 : buf;
}

static bool is_glibc(const char *b)
{
	return !strcmp(b, "libc.so.6") ||
	       (!strncmp(b, "libc-2.", 7) && strstr(b, ".so"));
}

int py_detect(uint32_t pid, const struct sym_map_line *maps, uint32_t n,
	      struct py_target *t, char *err, size_t err_len)
{
	const struct sym_map_line *py = NULL, *libc = NULL;
	bool musl = false;
	char buf[256];
	uint64_t bias;
	int fd, libc_fd = -1, r;

	for (uint32_t i = 0; i < n; i++) {
		const char *b;

		if (maps[i].type != SYM_MAP_FILE)
			continue;
		b = base_name(&maps[i], buf, sizeof(buf));
		/* libpython first: an executable linked to it holds no _PyRuntime */
		if (minor_of_name(b) >= 0 &&
		    (!py || !strncmp(b, "lib", 3)))
			py = &maps[i];
		else if (!libc && is_glibc(b))
			libc = &maps[i];
		else if (!strncmp(b, "ld-musl", 7) || !strncmp(b, "libc.musl", 9))
			musl = true;
	}
	if (!py)
		return 0;
	fd = open_mapping(pid, py);
	if (fd < 0)
		return 0;
	if (!mapping_bias(fd, py, &bias)) {
		close(fd);
		return 0;
	}
	if (libc)
		libc_fd = open_mapping(pid, libc);
	base_name(py, buf, sizeof(buf));
	r = py_detect_file(fd, buf, bias, libc_fd, t, err, err_len);
	if (r == 1 && t->proc.tstate_kind == 0) {
		/* right after an exec the loader has not mapped libc yet: not
		 * found for now (the worker's rechecks come back); musl's TSD
		 * is another layout */
		if (musl)
			errmsg(err, err_len, "CPython 3.%u on musl: its thread state is not found",
			       (t->proc.version >> 16) & 0xff);
		r = musl ? -ENOTSUP : 0;
	}
	close(fd);
	if (libc_fd >= 0)
		close(libc_fd);
	return r;
}

int py_detect_path(const char *root, const char *path, const char *libc,
		   struct py_target *t, char *err, size_t err_len)
{
	const struct safe_rules rules = {
		.max_bytes = PY_FILE_MAX_BYTES,
		.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
		.flags = SAFE_ANYONE,	/* no symbolic link followed */
	};
	struct stat st;
	const char *why = NULL;
	int fd, libc_fd = -1, r;

	memset(t, 0, sizeof(*t));
	fd = safe_open_at(root, path, &rules, &st, &why);
	if (fd < 0) {
		errmsg(err, err_len, "%s: %s", path, why ? why : "cannot be opened");
		return -EPERM;
	}
	if (libc && (libc_fd = safe_open_at(root, libc, &rules, &st, &why)) < 0) {
		errmsg(err, err_len, "%s: %s", libc, why ? why : "cannot be opened");
		close(fd);
		return -EPERM;
	}
	r = py_detect_file(fd, path, 0, libc_fd, t, err, err_len);
	close(fd);
	if (libc_fd >= 0)
		close(libc_fd);
	return r;
}
