/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the architectures the module builds for
 * (x86-64, arm64) that its C files meet, apart from walking kernel stacks
 * (unwind_kernel.c: ORC on x86-64; unwind_kernel_arm64.c: frame records):
 * user registers from pt_regs, the native (64-bit) task test, a probed
 * function's arguments and return value, pointer-authentication codes,
 * the user thread pointer and the register layout of
 * EMBER_REC_USER_STACK. Kernel-version
 * differences stay in compat.h.
 */
#ifndef EMBER_ARCH_H
#define EMBER_ARCH_H

#include <linux/types.h>
#include <linux/ptrace.h>
#include <linux/preempt.h>
#include <linux/sched.h>
#include <asm/ptrace.h>
#if defined(CONFIG_X86_64)
#include <asm/fsgsbase.h>
#endif

#include "ember_config.h"
#include "../include/uapi/ember.h"

#if defined(CONFIG_X86_64)

/* the interrupted instruction, stack and frame pointer of user regs */
static inline u64 ember_regs_pc(const struct pt_regs *r)
{
	return r->ip;
}

static inline u64 ember_regs_sp(const struct pt_regs *r)
{
	return r->sp;
}

static inline u64 ember_regs_fp(const struct pt_regs *r)
{
	return r->bp;
}

/* x86 has no link register: return addresses are always on the stack */
#define EMBER_ARCH_HAS_LR	0

static inline u64 ember_regs_lr(const struct pt_regs *r)
{
	return 0;
}

/* a 64-bit task, whose stacks the unwinders walk in full */
static inline bool ember_regs_native(struct pt_regs *r)
{
	return user_64bit_mode(r);
}

/*
 * The integer arguments at a function's first instruction (SysV x86-64:
 * rdi, rsi, rdx) and the return value at its return (rax).
 */
static inline u64 ember_regs_arg(const struct pt_regs *r, unsigned int i)
{
	switch (i) {
	case 0:
		return r->di;
	case 1:
		return r->si;
	case 2:
		return r->dx;
	default:
		return 0;
	}
}

static inline u64 ember_regs_ret(const struct pt_regs *r)
{
	return r->ax;
}

/* no pointer authentication */
static inline u64 ember_user_pac_mask(void)
{
	return 0;
}

/*
 * x86 frame-pointer code is recognised by its first bytes at the
 * interrupted PC (ember_unwind_leaf_fp(), include/ember_unwind.h)
 */
#define EMBER_ARCH_LEAF_INSN	1

/* i386 code keeps x86-64's frame records: 32-bit tasks get a walk too */
#define EMBER_ARCH_COMPAT_FP	1

/*
 * current's user thread pointer (the FS base), for reading its thread-local
 * data (Python frames). current->thread.fsbase is only what was saved: the
 * kernel writes it at switch-out and in arch_prctl(ARCH_SET_FS) (how glibc
 * sets FS, once per thread), but a program may change FS itself with
 * WRFSBASE where the CPU allows it. The kernel never changes FS for its
 * own use on x86-64, so the live register is current's user value in any
 * context current runs in (the sched_switch probe runs before the
 * switch). An NMI can land inside __switch_to() after the next task's FS
 * is loaded while current still names the previous task: there the saved
 * value, written just before, is the right one.
 */
static inline u64 ember_user_tp(void)
{
	if (in_nmi())
		return current->thread.fsbase;
	return x86_fsbase_read_cpu();
}

/* EMBER_REC_USER_STACK regs[], the x86-64 order of include/uapi/ember.h */
static inline void ember_regs_copy(u64 *d, const struct pt_regs *r)
{
	d[0] = r->ax;
	d[1] = r->dx;
	d[2] = r->cx;
	d[3] = r->bx;
	d[4] = r->si;
	d[5] = r->di;
	d[6] = r->bp;
	d[7] = r->sp;
	d[8] = r->r8;
	d[9] = r->r9;
	d[10] = r->r10;
	d[11] = r->r11;
	d[12] = r->r12;
	d[13] = r->r13;
	d[14] = r->r14;
	d[15] = r->r15;
	d[16] = r->ip;
}

#elif defined(CONFIG_ARM64)

#include <asm/pointer_auth.h>
#include <asm/sysreg.h>

static inline u64 ember_regs_pc(const struct pt_regs *r)
{
	return r->pc;
}

static inline u64 ember_regs_sp(const struct pt_regs *r)
{
	return r->sp;
}

static inline u64 ember_regs_fp(const struct pt_regs *r)
{
	return r->regs[29];
}

/*
 * x30 holds the return address of the interrupted frame until that frame
 * saves it (a leaf, a prologue, an epilogue, a function's entry)
 */
#define EMBER_ARCH_HAS_LR	1

static inline u64 ember_regs_lr(const struct pt_regs *r)
{
	return r->regs[30];
}

/* an AArch64 task; AArch32 (compat) tasks get their PC only */
static inline bool ember_regs_native(struct pt_regs *r)
{
	return !compat_user_mode(r);
}

/* AAPCS64: arguments in x0, x1, x2; the return value in x0 */
static inline u64 ember_regs_arg(const struct pt_regs *r, unsigned int i)
{
	return i < 3 ? r->regs[i] : 0;
}

static inline u64 ember_regs_ret(const struct pt_regs *r)
{
	return r->regs[0];
}

/*
 * The bits of a user return address that hold its pointer-authentication
 * code, as the kernel computes them for ptrace's NT_ARM_PAC_MASK; 0 when
 * the system does not authenticate addresses.
 */
static inline u64 ember_user_pac_mask(void)
{
#ifdef EMBER_HAVE_PTRAUTH_USER_PAC_MASK
	if (system_supports_address_auth())
		return ptrauth_user_pac_mask();
#endif
	return 0;
}

#define EMBER_ARCH_LEAF_INSN	0

/*
 * current's user thread pointer (TPIDR_EL0), for reading its thread-local
 * data (Python frames). The kernel leaves TPIDR_EL0 alone between entry
 * and return (the KPTI trampoline borrows TPIDRRO_EL0, not it), so the
 * live register is current's user value. thread.uw.tp_value is only saved
 * at switch-out: a main thread whose glibc set TPIDR_EL0 with an msr and
 * that has not been switched out since holds a stale one there. Left
 * open: a pseudo-NMI landing inside __switch_to() between the TLS switch
 * and cpu_switch_to() would read the next task's value (of a thread of
 * the same process, since other processes' memory is not readable then).
 */
static inline u64 ember_user_tp(void)
{
	return read_sysreg(tpidr_el0);
}

/* AArch32 frame records cannot be trusted (unwind_user.c) */
#define EMBER_ARCH_COMPAT_FP	0

/*
 * A kernel return address read from a frame record, without the PAC that
 * CONFIG_ARM64_PTR_AUTH_KERNEL signs it with: 6.4+ has a helper for
 * kernel addresses, older kernels one for both halves of the address space.
 */
static inline unsigned long ember_strip_kernel_pac(unsigned long addr)
{
#ifdef EMBER_HAVE_PTRAUTH_STRIP_KERNEL_INSN_PAC
	return ptrauth_strip_kernel_insn_pac(addr);
#else
	return ptrauth_strip_insn_pac(addr);
#endif
}

/*
 * EMBER_REC_USER_STACK regs[], the aarch64 order of include/uapi/ember.h:
 * x19..x25, sp, x26..x28, x29, x30, the PAC mask, 0, 0, pc.
 */
static inline void ember_regs_copy(u64 *d, const struct pt_regs *r)
{
	unsigned int i;

	for (i = 0; i < 7; i++)
		d[i] = r->regs[19 + i];
	d[7] = r->sp;
	for (i = 0; i < 3; i++)
		d[8 + i] = r->regs[26 + i];
	d[11] = r->regs[29];
	d[12] = r->regs[30];
	d[13] = ember_user_pac_mask();
	d[14] = 0;
	d[15] = 0;
	d[16] = r->pc;
}

#else
#error "ember.ko supports x86-64 and arm64"
#endif

#endif /* EMBER_ARCH_H */
