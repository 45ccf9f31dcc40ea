// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: ELF files -> cfi_compile(). The agent compiles CFI of files
 * other users control (their programs, their libraries, files under
 * /proc/PID/root): whatever the bytes, the builder must not crash, and a
 * table it returns must pass the validator every backend applies and be
 * searchable anywhere.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <libelf.h>

#include "ember_unwind.h"
#include "unwind/cfi_compile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfi_stats st;
	char err[256];
	void *tab = NULL, *copy;
	size_t len = 0;
	const char *why;
	Elf *elf;

	elf_version(EV_CURRENT);
	/* libelf may write into ELF_C_READ_MMAP-like memory: give it a copy */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	elf = elf_memory(copy, size);
	if (elf && elf_kind(elf) == ELF_K_ELF &&
	    cfi_compile(elf, &tab, &len, &st, err, sizeof(err)) == 0) {
		const struct ember_unwind_table *t = tab;

		if (ember_unwind_table_check(tab, len, &why))
			abort();	/* the builder made a table nobody accepts */
		for (uint64_t a = t->base; a < t->base + 4096 * 64; a += 61)
			(void)ember_unwind_find(t, a);
	}
	free(tab);
	if (elf)
		elf_end(elf);
	free(copy);
	return 0;
}
