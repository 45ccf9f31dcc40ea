/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/arch.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * Every architecture difference of the programs, in one place: how a
 * context's user registers are laid out (the perf_event context, a
 * uprobe's pt_regs, the registers saved at kernel entry), which of them
 * are pc, sp, the frame pointer and the link register, the allocator
 * arguments and return value, user mode and 32-bit (compat) tasks, the
 * registers of the test mode's stack copy, and the frame-pointer step's
 * leaf test. Built for the -D__TARGET_ARCH_<arch> bpf.mk (or
 * scripts/cross.mk) passes:
 *   x86      x86_64's UAPI struct pt_regs
 *   arm64    arm64's UAPI struct user_pt_regs, which starts the kernel's
 *            pt_regs (regs[31], sp, pc, pstate)
 * The layouts are the UAPI's, fixed, not CO-RE: the verifier checks a
 * context's offsets, and the kernel's own pt_regs changes between
 * versions (x86's cs became a 2-byte union member in 6.9, FRED), which
 * CO-RE could not relocate to older kernels.
 */
#ifndef EMBER_ARCH_BPF_H
#define EMBER_ARCH_BPF_H

/* The user registers the unwinder starts from. */
struct uw_regs {
	__u64 pc, sp, fp;
	__u64 lr;		/* aarch64 x30 (0 on x86_64) */
#if defined(__TARGET_ARCH_arm64)
	bool compat;		/* arch_regs_compat() */
#endif
};

#if defined(__TARGET_ARCH_x86)

/*
 * The perf_event context starts with the x86-64 pt_regs of the UAPI.
 * Context loads must be whole words, hence the volatile.
 */
struct uapi_regs {
	__u64 r15, r14, r13, r12;
	volatile __u64 bp;
	__u64 bx, r11, r10, r9, r8;
	__u64 ax, cx, dx, si, di, orig_ax;
	volatile __u64 ip;
	volatile __u64 cs;
	__u64 flags;
	volatile __u64 sp;
	__u64 ss;
};

/* The same, every field read on its own (context loads must stay whole). */
struct uapi_regs_v {
	volatile __u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	volatile __u64 ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

#define ARCH_PC(r)		((r)->ip)
#define ARCH_SP(r)		((r)->sp)
#define ARCH_FP(r)		((r)->bp)
#define ARCH_LR(r)		0
/* user mode: the CPL in cs */
#define ARCH_USER_MODE(r)	(((r)->cs & 3) != 0)
/* the SysV calling convention: rdi, rsi, rdx; rax */
#define ARCH_ARG1(r)		((r)->di)
#define ARCH_ARG2(r)		((r)->si)
#define ARCH_ARG3(r)		((r)->dx)
#define ARCH_RET(r)		((r)->ax)

/* What the unwinder needs of saved registers, read in one piece: all of
 * them here (rbp, rip and rsp are far apart) */
struct arch_uw_part {
	struct uapi_regs r;
};

#define ARCH_UW_PART_OFF	0

static __always_inline void arch_uw_part_regs(const struct arch_uw_part *p,
					      struct uw_regs *u)
{
	u->pc = p->r.ip;
	u->sp = p->r.sp;
	u->fp = p->r.bp;
	u->lr = 0;
}

/* THREAD_SIZE on x86-64 without KASAN (every kernel ember supports);
 * the entry registers are at the top of the stack, no padding (5.10) */
#define ARCH_THREAD_SIZE	16384
#define ARCH_STACK_TOP_REGS	1

#elif defined(__TARGET_ARCH_arm64)

/*
 * arm64's UAPI struct user_pt_regs: the perf_event context's regs, and the
 * first part of the kernel's struct pt_regs (uprobes, task_pt_regs()).
 */
struct uapi_regs {
	volatile __u64 regs[31];	/* x0..x30 */
	volatile __u64 sp;
	volatile __u64 pc;
	volatile __u64 pstate;
};

#define uapi_regs_v		uapi_regs

#define ARCH_PC(r)		((r)->pc)
#define ARCH_SP(r)		((r)->sp)
#define ARCH_FP(r)		((r)->regs[29])
#define ARCH_LR(r)		((r)->regs[30])
/* PSR_MODE_MASK (0xf) == PSR_MODE_EL0t: user mode, AArch64 or AArch32
 * (arch/arm64/include/asm/ptrace.h user_mode()) */
#define ARCH_USER_MODE(r)	(((r)->pstate & 0xf) == 0)
/* AAPCS64: x0, x1, x2; x0 */
#define ARCH_ARG1(r)		((r)->regs[0])
#define ARCH_ARG2(r)		((r)->regs[1])
#define ARCH_ARG3(r)		((r)->regs[2])
#define ARCH_RET(r)		((r)->regs[0])

/*
 * What the unwinder needs of saved registers, read in one piece: x29,
 * x30, sp, pc and pstate are the last 40 bytes of user_pt_regs (the whole
 * 272 would not fit the 512-byte BPF stack next to the unwinder's calls).
 */
struct arch_uw_part {
	__u64 fp, lr, sp, pc, pstate;
};

#define ARCH_UW_PART_OFF	(29 * 8)

static __always_inline void arch_uw_part_regs(const struct arch_uw_part *p,
					      struct uw_regs *u)
{
	u->pc = p->pc;
	u->sp = p->sp;
	u->fp = p->fp;
	u->lr = p->lr;
	u->compat = (p->pstate & 0x10) != 0;	/* PSR_MODE32_BIT */
}

/* the kernel's pt_regs has more after user_pt_regs (and its size changed
 * between versions): only bpf_task_pt_regs() (5.15+) finds it */
#define ARCH_STACK_TOP_REGS	0

#else
#error "ember.bpf.c: build with -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64"
#endif

/*
 * A 32-bit task (AArch32 under an arm64 kernel: PSR_MODE32_BIT in the user
 * pstate). Its registers are not x29/x30 and no table covers its code, so
 * its user stack is its PC alone, marked cut. x86's 32-bit tasks are not
 * told apart (their stacks are walked as before).
 */
static __always_inline bool arch_regs_compat(const struct uapi_regs *r)
{
#if defined(__TARGET_ARCH_arm64)
	return (r->pstate & 0x10) != 0;
#else
	return false;
#endif
}

/* The registers the unwinder starts from, from a context's registers. */
static __always_inline void arch_uw_regs(const struct uapi_regs *r,
					 struct uw_regs *u)
{
	u->pc = ARCH_PC(r);
	u->sp = ARCH_SP(r);
	u->fp = ARCH_FP(r);
	u->lr = ARCH_LR(r);
#if defined(__TARGET_ARCH_arm64)
	u->compat = arch_regs_compat(r);
#endif
}

/*
 * Whether kernel pt_regs (a tracepoint's argument, not a context) were
 * saved in user mode: one word read, as the kernel tests it.
 */
static __always_inline bool arch_user_mode_at(const struct uapi_regs *kregs)
{
#if defined(__TARGET_ARCH_x86)
	__u64 cs = 0;

	bpf_probe_read_kernel(&cs, sizeof(cs), (const void *)&kregs->cs);
	return (cs & 3) != 0;
#else
	__u64 pstate = 0xf;

	bpf_probe_read_kernel(&pstate, sizeof(pstate),
			      (const void *)&kregs->pstate);
	return (pstate & 0xf) == 0;	/* ARCH_USER_MODE() */
#endif
}

/*
 * Test mode's stack copy (EMBER_REC_USER_STACK): the registers in the
 * record's slots, as include/uapi/ember.h lays them out. x86_64: DWARF
 * order, rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. aarch64
 * (EMBER_UREG_A64_*): x19..x25, sp, x26..x28, x29, x30 (not stripped),
 * the PAC mask return addresses were stripped with, 0, 0, pc.
 */
static __always_inline void arch_copy_regs(const struct uapi_regs_v *c,
					   __u64 *regs, __u64 pac)
{
#if defined(__TARGET_ARCH_x86)
	regs[0] = c->ax;
	regs[1] = c->dx;
	regs[2] = c->cx;
	regs[3] = c->bx;
	regs[4] = c->si;
	regs[5] = c->di;
	regs[6] = c->bp;
	regs[7] = c->sp;
	regs[8] = c->r8;
	regs[9] = c->r9;
	regs[10] = c->r10;
	regs[11] = c->r11;
	regs[12] = c->r12;
	regs[13] = c->r13;
	regs[14] = c->r14;
	regs[15] = c->r15;
	regs[16] = c->ip;
#else
	regs[EMBER_UREG_A64_X19 + 0] = c->regs[19];
	regs[EMBER_UREG_A64_X19 + 1] = c->regs[20];
	regs[EMBER_UREG_A64_X19 + 2] = c->regs[21];
	regs[EMBER_UREG_A64_X19 + 3] = c->regs[22];
	regs[EMBER_UREG_A64_X19 + 4] = c->regs[23];
	regs[EMBER_UREG_A64_X19 + 5] = c->regs[24];
	regs[EMBER_UREG_A64_X19 + 6] = c->regs[25];
	regs[EMBER_UREG_SP] = c->sp;
	regs[EMBER_UREG_A64_X26 + 0] = c->regs[26];
	regs[EMBER_UREG_A64_X26 + 1] = c->regs[27];
	regs[EMBER_UREG_A64_X26 + 2] = c->regs[28];
	regs[EMBER_UREG_A64_X29] = c->regs[29];
	regs[EMBER_UREG_A64_X30] = c->regs[30];
	regs[EMBER_UREG_A64_PAC_MASK] = pac;
	regs[14] = 0;
	regs[15] = 0;
	regs[EMBER_UREG_PC] = c->pc;
#endif
}

/*
 * The user thread pointer of a task (what CPython's thread-state lookups
 * start from: include/uapi/ember.h, "Python frames"): x86_64's FS base,
 * aarch64's TPIDR_EL0 as the kernel keeps it. A running task's own value
 * is the one saved at its last switch or set at its clone, which user
 * space does not change under a thread library. 0 when unreadable.
 */
static __always_inline __u64 arch_thread_pointer(struct task_struct *task)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(task, thread.fsbase);
#else
	return BPF_CORE_READ(task, thread.uw.tp_value);
#endif
}

/*
 * The frame-pointer step at the interrupted instruction (no table covers
 * it): x86_64 looks at the instruction, which may be a frame-pointer
 * prologue or a ret (ember_unwind_leaf_fp()). aarch64 has no such test:
 * its return address is in x30 there, which a frame-pointer walk cannot
 * know to be valid, and the frame record {x29, x30} at x29 is what it
 * follows (the kernel's perf walk does the same).
 */
#if defined(__TARGET_ARCH_x86)
#define ARCH_FP_LEAF_TEST	1
#else
#define ARCH_FP_LEAF_TEST	0
#endif

#endif /* EMBER_ARCH_BPF_H */
