// SPDX-License-Identifier: GPL-2.0
/*
 * Off-CPU intervals from the sched_switch tracepoint.
 *
 * When a traced thread leaves a CPU its user stack is walked at once (only
 * then are its page tables the loaded ones) and parked, with the time and
 * the state it left in, in a fixed table of in-flight threads. When it is
 * switched back in, the interval is measured; if it is long enough, its
 * kernel stack is unwound right there, from the task's saved stack (it has
 * not run since it left, so that stack is exactly the one it blocked with
 * and holds no ember or tracepoint frames), and one EMBER_REC_OFFCPU record
 * is written. Short intervals, the vast majority under switch-heavy loads,
 * so never pay for a kernel unwind. Nothing is allocated in the scheduler
 * path; a full table is counted in OFFCPU_OVERFLOW.
 *
 * Measured alternatives are in kmod/README.md ("Off-CPU design").
 */
#include <linux/hash.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/vmalloc.h>
#include <trace/events/sched.h>

#include "ember_kmod.h"

#define EMBER_OFFCPU_SLOTS_MIN	64U
#define EMBER_OFFCPU_SLOTS_MAX	(1024U * 1024)

static unsigned int ember_offcpu_slots = 4096;
module_param_named(offcpu_slots, ember_offcpu_slots, uint, 0444);
MODULE_PARM_DESC(offcpu_slots,
		 "threads that can be off CPU and traced at once (64..1048576, rounded up to a power of two)");

#define EMBER_PROBE_WINDOW 8	/* slots tried per thread */

struct ember_slot {
	u32 tid;		/* 0: free; claimed with cmpxchg */
	u8 state;
	u16 flags;
	u16 nr_user;
	u64 out_ns;
	u64 ips[];		/* nr_user user frames, leaf first */
};

static void *ember_table;
static size_t ember_slot_size;
static unsigned int ember_slot_mask;
static unsigned int ember_umax, ember_kmax;
static u64 ember_min_ns;
static u32 ember_ppm;
static struct tracepoint *ember_tp_switch;
static DEFINE_PER_CPU(u32, ember_rnd);

static struct ember_slot *ember_slot(unsigned int i)
{
	return (struct ember_slot *)((u8 *)ember_table +
				     (size_t)(i & ember_slot_mask) *
				     ember_slot_size);
}

/* xorshift32 per CPU: random enough to thin switches, safe under rq lock */
static u32 ember_random(void)
{
	u32 x = __this_cpu_read(ember_rnd);

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	__this_cpu_write(ember_rnd, x);
	return x;
}

static u8 ember_offcpu_state(bool preempt, unsigned int state)
{
	if (preempt || state == TASK_RUNNING)
		return EMBER_STATE_RUNNABLE;
	if (state & TASK_UNINTERRUPTIBLE)
		return EMBER_STATE_UNINTERRUPTIBLE;
	if (state & TASK_INTERRUPTIBLE)
		return EMBER_STATE_SLEEPING;
	return EMBER_STATE_OTHER;
}

static void ember_switch_out(struct task_struct *prev, bool preempt,
			     unsigned int state, u64 now,
			     struct ember_cpu_stats *st)
{
	unsigned int h, i;
	struct ember_slot *s;
	u16 flags = 0;

	/* a dying thread never comes back: do not park it */
	if (!prev->pid || (state & TASK_DEAD) || (prev->flags & PF_EXITING))
		return;
	if (ember_ppm && ember_random() % 1000000 >= ember_ppm)
		return;
	if (!ember_filter_pass(prev))
		return;
	h = hash_32(prev->pid, 32);
	for (i = 0; i < EMBER_PROBE_WINDOW; i++) {
		s = ember_slot(h + i);
		if (!READ_ONCE(s->tid) && cmpxchg(&s->tid, 0, prev->pid) == 0)
			break;
	}
	if (i == EMBER_PROBE_WINDOW) {
		local64_inc(&st->offcpu_overflow);
		return;
	}
	s->state = ember_offcpu_state(preempt, state);
	s->out_ns = now;
	s->nr_user = 0;
	if (ember_umax && prev->mm && !(prev->flags & PF_KTHREAD))
		/* its slot holds ember_umax: no more room for Python */
		s->nr_user = ember_record_user_stack(task_pt_regs(prev), false,
						     s->ips, ember_umax,
						     ember_umax, &flags, st);
	s->flags = flags;
}

static void ember_switch_in(struct task_struct *next, u64 now,
			    struct ember_cpu_stats *st)
{
	struct ember_slot *s = NULL;
	struct ember_sample *rec;
	unsigned int h, i, level, nk = 0;
	u16 flags;

	if (!next->pid)
		return;
	h = hash_32(next->pid, 32);
	for (i = 0; i < EMBER_PROBE_WINDOW; i++) {
		s = ember_slot(h + i);
		if (READ_ONCE(s->tid) == next->pid)
			break;
	}
	if (i == EMBER_PROBE_WINDOW)
		return;
	if (now - s->out_ns < ember_min_ns)
		goto release;
	rec = ember_scratch_get(&level);
	if (!rec) {
		local64_inc(&st->lost);
		goto release;
	}
	ember_fill_sample_header(rec, EMBER_REC_OFFCPU,
				 next, now, now - s->out_ns);
	flags = rec->flags | s->flags;
	if (ember_kmax)
		nk = ember_unwind_kernel(next, NULL, rec->ips, ember_kmax,
					 &flags);
	memcpy(rec->ips + nk, s->ips, s->nr_user * sizeof(u64));
	rec->flags = flags | EMBER_SF_IN_KERNEL;
	rec->state = s->state;
	rec->nr_kernel = nk;
	rec->nr_user = s->nr_user;
	rec->hdr.size = sizeof(*rec) + (nk + s->nr_user) * sizeof(u64);
	ember_emit_buf(rec, rec->hdr.size, st);
	ember_scratch_put(level);
release:
	/* our reads of the slot complete before another thread may claim it */
	smp_store_release(&s->tid, 0);
}

static void ember_sched_switch(EMBER_SCHED_SWITCH_PROTO)
{
	struct ember_cpu_stats *st = this_cpu_ptr(ember_stats);
	u64 now = ktime_get_mono_fast_ns();

	local64_inc(&st->offcpu_switches);
	ember_switch_out(prev, preempt, EMBER_PREV_STATE(prev), now, st);
	ember_switch_in(next, now, st);
	local64_add(ktime_get_mono_fast_ns() - now, &st->offcpu_ns);
}

/* At load time: a parameter out of range refuses the module, with why. */
int ember_offcpu_check_params(void)
{
	if (ember_offcpu_slots < EMBER_OFFCPU_SLOTS_MIN ||
	    ember_offcpu_slots > EMBER_OFFCPU_SLOTS_MAX) {
		pr_err("ember: offcpu_slots must be in [%u, %u]\n",
		       EMBER_OFFCPU_SLOTS_MIN, EMBER_OFFCPU_SLOTS_MAX);
		return -EINVAL;
	}
	return 0;
}

/*
 * ember_tp_switch is set only once the probe is registered: it is what
 * ember_offcpu_stop() tests, and a START that failed half-way must never
 * make it unregister a probe that was not there.
 */
int ember_offcpu_start(const struct ember_config *cfg,
		       struct netlink_ext_ack *extack)
{
	struct tracepoint *tp;
	unsigned int cpu;
	size_t bytes;
	int ret;

	/* the compat prototype must match this kernel's tracepoint */
	check_trace_callback_type_sched_switch(ember_sched_switch);

	tp = ember_find_tracepoint("sched_switch");
	if (!tp) {
		NL_SET_ERR_MSG(extack, "sched_switch tracepoint not found");
		return -EOPNOTSUPP;
	}
	ember_slot_mask = roundup_pow_of_two(ember_offcpu_slots) - 1;
	ember_umax = cfg->ustack_max;
	ember_kmax = cfg->kstack_max;
	ember_slot_size = ALIGN(sizeof(struct ember_slot) +
				ember_umax * sizeof(u64), 8);
	bytes = array_size((size_t)ember_slot_mask + 1, ember_slot_size);
	/* its size is the administrator's choice: a failure is no kernel bug */
	ember_table = __vmalloc(bytes, GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN);
	if (!ember_table) {
		NL_SET_ERR_MSG(extack,
			       "cannot allocate the off-CPU table (lower the offcpu_slots parameter or USTACK_MAX)");
		return -ENOMEM;
	}
	ember_min_ns = cfg->offcpu_min_ns;
	ember_ppm = cfg->offcpu_ppm;
	for_each_possible_cpu(cpu)
		per_cpu(ember_rnd, cpu) = get_random_u32() | 1;
	ret = tracepoint_probe_register(tp, ember_sched_switch, NULL);
	if (ret) {
		NL_SET_ERR_MSG(extack, "cannot attach to sched_switch");
		vfree(ember_table);
		ember_table = NULL;
		return ret;
	}
	ember_tp_switch = tp;
	return 0;
}

void ember_offcpu_stop(void)
{
	if (!ember_tp_switch)
		return;
	tracepoint_probe_unregister(ember_tp_switch, ember_sched_switch, NULL);
	/* no probe runs once this returns */
	tracepoint_synchronize_unregister();
	ember_tp_switch = NULL;
	vfree(ember_table);
	ember_table = NULL;
}
