/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Machine code read as data (py_decode.c): where the thread state and
 * the eval loop's cold part are, from the interpreter's and the C
 * library's own code, x86_64 and aarch64. Each decoder accepts only the
 * forms listed at it (seen in real builds) and says false/0 otherwise.
 */
#ifndef EMBER_PY_DECODE_H
#define EMBER_PY_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "python/py_elf.h"

/* 3.13+ _PyThreadState_GetCurrent: the thread-pointer offset it loads. */
bool py_decode_tls_get(uint16_t machine, const uint8_t *c, size_t n,
		       int64_t *off);
/* glibc's pthread_getspecific: &specific_1stblock[0].data - tp. */
bool py_decode_getspecific(uint16_t machine, const uint8_t *c, size_t n,
			   int64_t *off);
/* 3.11/3.12 PyGILState_GetThisThreadState at pc: the TSS key's vaddr, or 0. */
uint64_t py_decode_key_addr(struct pyelf *pe, uint64_t pc, const uint8_t *c,
			    size_t n, uint64_t rt_v);
/* The eval loop's .cold fragment [*lo, *hi), voted from the hot part's
 * branches into its FDE; 0, 0 when none is proven. */
void py_eval_cold(struct pyelf *pe, uint64_t v, uint64_t size, uint64_t *lo,
		  uint64_t *hi);

#endif
