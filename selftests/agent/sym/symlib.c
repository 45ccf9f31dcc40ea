// SPDX-License-Identifier: GPL-2.0-only
/*
 * Shared library for the symbolizer tests. Linked with -Ttext-segment so
 * its segments' p_vaddr differ from their p_offset (as in prelinked or
 * oddly linked libraries): offset -> vaddr translation must use PT_LOAD.
 */
#include <stdint.h>

void *symlib_ret;
int symlib_line;

__attribute__((noinline)) static void symlib_capture(void)
{
	symlib_ret = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) int symlib_func(int x)
{
	symlib_capture(); symlib_line = __LINE__;
	return x + 1;
}
