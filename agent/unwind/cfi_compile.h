/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Compile a file's call-frame information into ember's unwind table
 * (include/uapi/ember.h): the rows of every FDE in .eh_frame (or, when a
 * file has none, .debug_frame), each turned into one of the few rules the
 * kernel and eBPF unwinders know, deduplicated, paged by 64 KiB. x86_64
 * and aarch64 files (e_machine), each with its own registers; aarch64's
 * .plt and vDSO, which have no CFI, get rules of their own.
 */
#ifndef EMBER_CFI_COMPILE_H
#define EMBER_CFI_COMPILE_H

#include <stddef.h>
#include <stdint.h>
#include <libelf.h>

/*
 * The version of the compiler's output. Bump it whenever cfi_compile()
 * may produce a different table for the same file (a new rule, another
 * merge, a fix): tables in the persistent cache (table_store.h) built by
 * another version are then rebuilt instead of loaded.
 */
#define CFI_COMPILE_VERSION	1

struct cfi_stats {
	uint32_t fdes;			/* FDEs read */
	uint32_t fdes_bad;		/* FDEs skipped: undecodable */
	uint64_t rows_in;		/* CFI rows before merging */
	uint32_t rows;			/* table rows */
	uint32_t rules;			/* distinct rules */
	uint32_t pages;
	uint64_t rows_unsupported;	/* rows whose CFA or RA rule we cannot use */
	uint64_t bytes_in;		/* code bytes the rows cover */
	uint64_t bytes_unsupported;	/* ... of rows_unsupported */
	uint64_t bytes_synth;		/* aarch64: code without CFI given a
					 * rule (.plt, the vDSO) */
	uint64_t bytes;			/* table size */
	const char *source;		/* ".eh_frame", ".debug_frame" or
					 * "symbols" (an aarch64 vDSO) */
};

/*
 * Build the table of elf. On success *out is a malloc'ed blob of *len
 * bytes that passes ember_unwind_table_check(). Returns 0, -ENOENT when
 * the file has no usable CFI, or another negative errno, with a sentence
 * in err. Bounded: at most EMBER_UNWIND_MAX_ROWS rows and
 * EMBER_UNWIND_MAX_TABLE bytes, else -E2BIG.
 */
/* Section name of elf with contents in the file (not SHT_NOBITS), or NULL. */
Elf_Scn *cfi_find_section(Elf *elf, const char *name);
int cfi_compile(Elf *elf, void **out, size_t *len, struct cfi_stats *st,
		char *err, size_t err_len);

#endif
