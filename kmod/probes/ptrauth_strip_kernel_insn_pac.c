// SPDX-License-Identifier: GPL-2.0
/*
 * arm64: ptrauth_strip_kernel_insn_pac() (6.4+); before it,
 * ptrauth_strip_insn_pac() strips kernel and user addresses alike
 */
#include <asm/pointer_auth.h>

static unsigned long __used ember_probe(unsigned long ptr)
{
	return ptrauth_strip_kernel_insn_pac(ptr);
}
