// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: bytes -> Go's function table reader (symbolize/
 * sym_gopclntab.c), which reads .gopclntab of binaries other users run.
 * Input: u32 table length, the table (loaded at 0x400000), then the bytes
 * of go:func.* (inline trees; also loaded at 0x800000, for the 1.16
 * layout's addresses). Seeds (corpus/gopcln/) are runs of a real Go
 * binary's functions laid out as small tables in each layout, Go 1.2,
 * 1.16, 1.18 and 1.20 (gopcln_seed.py). Whatever
 * the bytes: no read outside them (ASan), bounded work, and frames that
 * are all named, inlined ones first.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbolize_internal.h"

#define MAX_FR 8

static void lookup(struct sym_gopcln *g, struct sym_strings *s, uint64_t pc)
{
	struct sym_frame fr[MAX_FR];
	int n = sym_gopcln_frames(g, s, pc, true, fr, MAX_FR);

	if (n < 0 || n > MAX_FR)
		abort();
	for (int i = 0; i < n; i++)
		if (!fr[i].function || fr[i].inlined != (i < n - 1))
			abort();
	if (n && sym_gopcln_frames(g, s, pc, false, fr, 1) != 1)
		abort();	/* names without lines: the function alone */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sym_strings *strs;
	uint64_t pcs[64];
	struct sym_gopcln *g;
	uint8_t *tab, *gofunc;
	size_t tlen, glen, n;
	uint32_t len;

	if (size < 4)
		return 0;
	if (!strs)
		strs = sym_strings_new();	/* lives with the process */
	memcpy(&len, data, 4);
	tlen = len < size - 4 ? len : size - 4;
	glen = size - 4 - tlen;
	/* copies of their exact size: ASan sees a read past either */
	tab = malloc(tlen ? tlen : 1);
	gofunc = malloc(glen ? glen : 1);
	if (!tab || !gofunc)
		goto out;
	memcpy(tab, data + 4, tlen);
	memcpy(gofunc, data + 4 + tlen, glen);
	g = sym_gopcln_new(tab, tlen, 0x400000, "fuzz");
	if (!g)
		goto out;
	sym_gopcln_add_seg(g, 0x400000, tab, tlen);
	sym_gopcln_add_seg(g, 0x800000, gofunc, glen);
	sym_gopcln_set_gofunc(g, gofunc, glen);
	n = sym_gopcln_entries(g, pcs, 64);
	for (size_t i = 0; i < n; i++) {
		lookup(g, strs, pcs[i]);
		lookup(g, strs, pcs[i] + 1 + i % 13);
		lookup(g, strs, pcs[i] - 1);
	}
	/* addresses the input names, anywhere */
	for (size_t i = 0; i + 8 <= glen && i < 64; i += 8) {
		uint64_t a;

		memcpy(&a, gofunc + i, 8);
		lookup(g, strs, a);
	}
	sym_gopcln_free(g);
out:
	free(tab);
	free(gofunc);
	return 0;
}
