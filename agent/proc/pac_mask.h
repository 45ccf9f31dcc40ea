/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The aarch64 pointer-authentication mask of user return addresses, as
 * the kernel reports it (pac_mask.c). Unwinders strip every return address
 * read from a stack (or x30) with ~mask before looking it up: the eBPF
 * backend gets it before load (ember_source_config.pac_mask), the agent's
 * own unwinders may ask too.
 */
#ifndef EMBER_PROC_PAC_MASK_H
#define EMBER_PROC_PAC_MASK_H

#include <stdint.h>

/*
 * *mask = the kernel's insn_mask for user space (PTRACE_GETREGSET
 * NT_ARM_PAC_MASK on a stopped child of ours): the bits of a code address
 * that hold a PAC. 0 with *mask = 0 on a CPU or kernel without PAC, and
 * on x86_64. -errno with *mask = 0 when it cannot be read (ptrace refused:
 * Yama ptrace_scope 3, a seccomp policy): stacks through PAC-signed return
 * addresses are then cut, never made up.
 */
int proc_pac_insn_mask(uint64_t *mask);

#endif /* EMBER_PROC_PAC_MASK_H */
