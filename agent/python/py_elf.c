// SPDX-License-Identifier: GPL-2.0-only
/*
 * An interpreter's (or a C library's) ELF file, read for agent/python/
 * (py_elf.h): libelf over a read-only mapping of the file, every read
 * checked against the segment it comes from.
 */
#include <string.h>

#include "python/py_elf.h"


bool pyelf_open(struct pyelf *pe, int fd)
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

void pyelf_close(struct pyelf *pe)
{
	if (pe->e)
		elf_end(pe->e);
	pe->e = NULL;
}

/* A defined dynamic symbol by name: its value and size. */
bool pyelf_sym(struct pyelf *pe, const char *name, uint64_t *value,
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
bool pyelf_symtab_func(struct pyelf *pe, const char *name,
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
bool pyelf_read(struct pyelf *pe, uint64_t v, void *buf, size_t len)
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
size_t pyelf_code(struct pyelf *pe, uint64_t v, uint64_t sym_size,
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
bool pyelf_ptr(struct pyelf *pe, uint64_t v, uint64_t *out)
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
bool pyelf_str(struct pyelf *pe, uint64_t v, char *buf, size_t max)
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

/*
 * Whether the GOT slot at vaddr slot is relocated to the dynamic symbol
 * name (R_X86_64_GLOB_DAT 6 / R_X86_64_64 1, R_AARCH64_GLOB_DAT 1025 /
 * R_AARCH64_ABS64 257): a libpython reaches its exported _PyRuntime
 * through the GOT.
 */
bool pyelf_got_is(struct pyelf *pe, uint64_t slot, const char *name)
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
 * The FDE that covers pc: the last entry at or below pc in .eh_frame_hdr's
 * sorted table (the form GNU linkers write: version 1, a 4-byte
 * eh_frame_ptr, count udata4, table datarel sdata4 pairs), then that FDE's
 * own pc_begin (pcrel sdata4, which must agree with the table: another
 * encoding does not) and pc_range. The whole function's range, where
 * libdw's dwarf_frame_info() gives one CFI row's.
 */
bool pyelf_fde_range(struct pyelf *pe, uint64_t pc, uint64_t *lo,
		     uint64_t *hi)
{
	uint64_t hdr = 0, hdr_size = 0, first, range_lo = 0, fde = 0;
	uint8_t head[4];
	uint32_t count, len_cie[2], range;
	int32_t pair[2], begin;
	size_t n, a, b;

	for (size_t i = 0; i < pe->nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(pe->e, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME) {
			hdr = ph.p_vaddr;
			hdr_size = ph.p_filesz;
		}
	}
	if (!hdr || hdr_size < 12 || !pyelf_read(pe, hdr, head, 4) ||
	    head[0] != 1 || (head[1] & 0x0f) != 0x0b || head[2] != 0x03 ||
	    head[3] != 0x3b || !pyelf_read(pe, hdr + 8, &count, 4))
		return false;
	n = count;
	if (n == 0 || n > (hdr_size - 12) / 8)
		return false;
	first = hdr + 12;
	/* the last entry whose initial location is <= pc */
	for (a = 0, b = n; a < b;) {
		size_t m = a + (b - a) / 2;

		if (!pyelf_read(pe, first + m * 8, pair, 8))
			return false;
		if (hdr + (uint64_t)(int64_t)pair[0] <= pc) {
			range_lo = hdr + (uint64_t)(int64_t)pair[0];
			fde = hdr + (uint64_t)(int64_t)pair[1];
			a = m + 1;
		} else {
			b = m;
		}
	}
	if (!fde || !pyelf_read(pe, fde, len_cie, 8) || len_cie[0] < 16 ||
	    len_cie[0] == 0xffffffffu || !len_cie[1] ||
	    !pyelf_read(pe, fde + 8, &begin, 4) ||
	    !pyelf_read(pe, fde + 12, &range, 4) ||
	    fde + 8 + (uint64_t)(int64_t)begin != range_lo ||
	    pc - range_lo >= range)
		return false;
	*lo = range_lo;
	*hi = range_lo + range;
	return true;
}
