/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every difference between the supported kernels (5.10 .. 6.12) is handled
 * here and only here, keyed on what kmod/configure.sh found by compiling
 * kmod/probes/ against the target kernel's headers.
 */
#ifndef EMBER_COMPAT_H
#define EMBER_COMPAT_H

#include <linux/mm.h>
#include <linux/sched.h>
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

#endif /* EMBER_COMPAT_H */
