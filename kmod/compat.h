/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the supported kernels (5.10 .. 6.12) is handled
 * here and only here, keyed on what kmod/configure.sh found by compiling
 * kmod/probes/ against the target kernel's headers.
 */
#ifndef EMBER_COMPAT_H
#define EMBER_COMPAT_H

#include <linux/err.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/uprobes.h>
#include <net/genetlink.h>

#include "ember_config.h"

/*
 * 6.1+: commands numbered from resv_start_op up get strict validation and a
 * reject-all policy by default. Older kernels validate strictly whenever the
 * op does not opt out, which ours never do.
 */
static inline void ember_genl_set_resv_start_op(struct genl_family *f,
						u8 op)
{
#ifdef EMBER_HAVE_GENL_RESV_START_OP
	f->resv_start_op = op;
#endif
}

/* 6.3+: vma->vm_flags may only change through vm_flags_*() */
static inline void ember_vm_flags_clear(struct vm_area_struct *vma,
					vm_flags_t flags)
{
#ifdef EMBER_HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/* 5.14 renamed task_struct.state to __state */
#ifdef EMBER_HAVE_TASK_STRUCT___STATE
#define EMBER_TASK_STATE(t)	READ_ONCE((t)->__state)
#else
#define EMBER_TASK_STATE(t)	READ_ONCE((t)->state)
#endif

/* 5.18 added prev_state to the sched_switch tracepoint */
#ifdef EMBER_HAVE_SCHED_SWITCH_PREV_STATE
#define EMBER_SCHED_SWITCH_PROTO					\
	void *data, bool preempt, struct task_struct *prev,		\
	struct task_struct *next, unsigned int prev_state
#define EMBER_PREV_STATE(prev)	(prev_state)
#else
#define EMBER_SCHED_SWITCH_PROTO					\
	void *data, bool preempt, struct task_struct *prev,		\
	struct task_struct *next
#define EMBER_PREV_STATE(prev)	EMBER_TASK_STATE(prev)
#endif

/*
 * uprobes. Up to 6.11 a uprobe is registered with uprobe_register_refctr()
 * and named by (inode, offset) to uprobe_unregister(), which returns once
 * no handler of the consumer runs. 6.12 returns the struct uprobe itself
 * and splits unregistering: uprobe_unregister_nosync() per probe, then
 * one uprobe_unregister_sync() (an RCU tasks-trace and SRCU grace period)
 * before any consumer may be freed. 6.13 gives handlers a __u64 *data.
 * Kernels with neither register API get no allocation probes
 * (EMBER_HAVE_UPROBE_API undefined, EMBER_CAP_ALLOC not offered).
 */
#if defined(EMBER_HAVE_UPROBE_REGISTER_UPROBE) || \
	defined(EMBER_HAVE_UPROBE_REGISTER_REFCTR)
#define EMBER_HAVE_UPROBE_API 1
#endif

struct ember_uprobe {
	struct uprobe_consumer uc;
#ifdef EMBER_HAVE_UPROBE_REGISTER_UPROBE
	struct uprobe *uprobe;
#else
	struct inode *inode;
	loff_t offset;
#endif
};

/* ret_handler (a uretprobe) got the same __u64 *data in 6.13 */
#ifdef EMBER_HAVE_UPROBE_HANDLER_DATA
#define EMBER_UPROBE_HANDLER_PROTO					\
	struct uprobe_consumer *self, struct pt_regs *regs, u64 *data
#define EMBER_UPROBE_RET_HANDLER_PROTO					\
	struct uprobe_consumer *self, unsigned long func,		\
	struct pt_regs *regs, u64 *data
#else
#define EMBER_UPROBE_HANDLER_PROTO					\
	struct uprobe_consumer *self, struct pt_regs *regs
#define EMBER_UPROBE_RET_HANDLER_PROTO					\
	struct uprobe_consumer *self, unsigned long func,		\
	struct pt_regs *regs
#endif

/*
 * uprobe_consumer.filter: whether a process's address space gets the
 * breakpoints. Up to 6.9 it is also told why it is asked (register,
 * mmap, unregister), which ember does not need.
 */
#ifdef EMBER_HAVE_UPROBE_FILTER_CTX
#define EMBER_UPROBE_FILTER_PROTO					\
	struct uprobe_consumer *self, enum uprobe_filter_ctx ctx,	\
	struct mm_struct *mm
#else
#define EMBER_UPROBE_FILTER_PROTO					\
	struct uprobe_consumer *self, struct mm_struct *mm
#endif

/* u->uc.handler set; the caller holds a reference to inode throughout */
static inline int ember_uprobe_register(struct ember_uprobe *u,
					struct inode *inode, loff_t offset,
					loff_t ref_ctr_offset)
{
#if defined(EMBER_HAVE_UPROBE_REGISTER_UPROBE)
	struct uprobe *p = uprobe_register(inode, offset, ref_ctr_offset,
					   &u->uc);

	if (IS_ERR(p))
		return PTR_ERR(p);
	u->uprobe = p;
	return 0;
#elif defined(EMBER_HAVE_UPROBE_REGISTER_REFCTR)
	u->inode = inode;
	u->offset = offset;
	return uprobe_register_refctr(inode, offset, ref_ctr_offset, &u->uc);
#else
	return -EOPNOTSUPP;
#endif
}

/* Only for a registered u; may sleep. ember_uprobe_sync() before freeing. */
static inline void ember_uprobe_unregister_nosync(struct ember_uprobe *u)
{
#if defined(EMBER_HAVE_UPROBE_REGISTER_UPROBE)
	uprobe_unregister_nosync(u->uprobe, &u->uc);
#elif defined(EMBER_HAVE_UPROBE_REGISTER_REFCTR)
	uprobe_unregister(u->inode, u->offset, &u->uc);
#endif
}

/* After it, no handler of an unregistered consumer runs any more. */
static inline void ember_uprobe_sync(void)
{
#ifdef EMBER_HAVE_UPROBE_REGISTER_UPROBE
	uprobe_unregister_sync();
#endif
}

/*
 * x86's exceptions:page_fault_user/_kernel tracepoints (the probe checks
 * their prototype: address, regs, error_code); without them faults.c
 * keeps the page-fault software perf event.
 */
typedef void (*ember_fault_probe_t)(void *data, unsigned long address,
				    struct pt_regs *regs,
				    unsigned long error_code);
#ifdef EMBER_HAVE_FAULT_TRACEPOINTS
#include <asm/trace/exceptions.h>
#define EMBER_FAULT_TRACEPOINTS	true
static inline void ember_check_fault_probe(ember_fault_probe_t fn)
{
	check_trace_callback_type_page_fault_user(fn);
	check_trace_callback_type_page_fault_kernel(fn);
}
#else
#define EMBER_FAULT_TRACEPOINTS	false
static inline void ember_check_fault_probe(ember_fault_probe_t fn)
{
}
#endif

/*
 * Lock contention (lock.c). lock:contention_begin/_end exist from 5.19
 * (configure probe lock_contention); futex_waitv(2) from 5.16, known by
 * its syscall number in the target's headers. Without them START still
 * takes EMBER_EV_LOCK for futex waits; the caps say what is missing.
 */
typedef void (*ember_contention_begin_t)(void *data, void *lock,
					 unsigned int flags);
typedef void (*ember_contention_end_t)(void *data, void *lock, int ret);
#ifdef EMBER_HAVE_LOCK_CONTENTION
#include <trace/events/lock.h>
#define EMBER_LOCK_CONTENTION	true
static inline void ember_check_contention_probes(ember_contention_begin_t b,
						 ember_contention_end_t e)
{
	check_trace_callback_type_contention_begin(b);
	check_trace_callback_type_contention_end(e);
}
#else
#define EMBER_LOCK_CONTENTION	false
static inline void ember_check_contention_probes(ember_contention_begin_t b,
						 ember_contention_end_t e)
{
}
#endif

#include <asm/unistd.h>
#ifdef __NR_futex_waitv
#define EMBER_NR_FUTEX_WAITV	__NR_futex_waitv
#else
#define EMBER_NR_FUTEX_WAITV	(-1L)	/* no syscall has it */
#endif

#endif /* EMBER_COMPAT_H */
