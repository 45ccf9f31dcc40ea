/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * agent/python/'s access to an ELF file (py_elf.c): dynamic symbols, the
 * bytes at a virtual address (from a PT_LOAD's file bytes only), pointers
 * through RELATIVE relocations, GOT slots by their symbol. Every read is
 * bounded by the file; nothing here trusts a value it reads.
 */
#ifndef EMBER_PY_ELF_H
#define EMBER_PY_ELF_H

#include <gelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pyelf {
	Elf *e;
	GElf_Ehdr eh;
	size_t nph;
	Elf_Data *dynsym, *dynstr;	/* NULL without a usable .dynsym */
	size_t nsyms;
};

bool pyelf_open(struct pyelf *pe, int fd);	/* a 64-bit ELF file */
void pyelf_close(struct pyelf *pe);
/* A defined dynamic symbol by name: its value and size (size may be NULL). */
bool pyelf_sym(struct pyelf *pe, const char *name, uint64_t *value,
	       uint64_t *size);
/* A function in .symtab (a build that kept it): value and size. */
bool pyelf_symtab_func(struct pyelf *pe, const char *name, uint64_t *value,
		       uint64_t *size);
/* len bytes at file vaddr v, within one PT_LOAD's file bytes. */
bool pyelf_read(struct pyelf *pe, uint64_t v, void *buf, size_t len);
/* Up to max bytes of a function's code at v: how many were read. */
size_t pyelf_code(struct pyelf *pe, uint64_t v, uint64_t sym_size,
		  uint8_t *buf, size_t max);
/* The pointer stored at v (a RELATIVE relocation's addend in a PIC file). */
bool pyelf_ptr(struct pyelf *pe, uint64_t v, uint64_t *out);
/* A NUL-terminated string of at most max - 1 bytes at v. */
bool pyelf_str(struct pyelf *pe, uint64_t v, char *buf, size_t max);
/* Whether the GOT slot at vaddr slot is relocated to the symbol name. */
bool pyelf_got_is(struct pyelf *pe, uint64_t slot, const char *name);

/* The range [*lo, *hi) of the FDE that covers pc (.eh_frame_hdr). */
bool pyelf_fde_range(struct pyelf *pe, uint64_t pc, uint64_t *lo,
		     uint64_t *hi);

/* A refusal's sentence into err[len] (either may be NULL/0). */
static inline void __attribute__((format(printf, 3, 4)))
py_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

#endif
