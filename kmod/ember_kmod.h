/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ember.ko internals shared between the module's files. The user-visible
 * format lives in include/uapi/ember.h; nothing here is ABI.
 *
 * One section per file. Calls go one way, from main.c down to state.c
 * (kmod/README.md, "Files"): a file never calls one above it, and
 * selftests/suites/30-kmod-vm.sh checks the built objects for circles.
 */
#ifndef EMBER_KMOD_H
#define EMBER_KMOD_H

#include <linux/types.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/wait.h>
#include <net/netlink.h>
#include <asm/local64.h>

#include "compat.h"
#include "../include/uapi/ember.h"

#define EMBER_MIN_RING_SIZE	(16U * 1024)
#define EMBER_MAX_RING_SIZE	(64U * 1024 * 1024)

/* One START request, validated. */
struct ember_config {
	u32 events;		/* EMBER_EV_* */
	u32 clock;		/* enum ember_clock_event asked */
	u32 clock_used;		/* after fallback */
	u32 freq;
	u32 kstack_max;
	u32 ustack_max;
	u32 flags;		/* EMBER_F_* */
	u32 ring_size;
	u32 watermark;
	u64 offcpu_min_ns;
	u32 offcpu_ppm;
	u32 fault_period;	/* page faults per EMBER_REC_FAULT */
	u64 lock_min_ns;	/* shorter lock waits are not recorded */
	u32 stack_copy;		/* EMBER_A_STACK_COPY bytes, 0 = none */
};

/* Per-CPU counters; local64_t so nested writers on one CPU never lose one. */
struct ember_cpu_stats {
	local64_t samples;
	local64_t filtered;
	local64_t records;
	local64_t lost;
	local64_t handler_ns;
	local64_t offcpu_switches;
	local64_t offcpu_overflow;
	local64_t offcpu_ns;
	local64_t ustack_cfi;
	local64_t ustack_fp;
	local64_t ustack_cut;
	local64_t unwind_miss;
	local64_t unwind_miss_limited;
	local64_t alloc_hits;	/* allocation probe hits past the filters */
	local64_t lock_waits;	/* futex waits / kernel contentions followed */
	local64_t lock_overflow; /* ... not followed: in-flight table full */
	local64_t lock_wakers;	/* EMBER_REC_LOCK_WAKER written */
	bool online;
};

struct ember_ringset;

/*
 * state.c: the shared state, guarded by ember_lock where noted.
 *
 * Lock order: mmap_lock -> ember_lock. ember_dev_mmap() runs with the
 * caller's mmap_lock held and takes ember_lock, so nothing done under
 * ember_lock may take mmap_lock: no copy_{to,from}_user, no GUP, no
 * vm_munmap there (netlink payloads are already in kernel memory). The
 * unwind tables' rcu and spin locks nest inside ember_lock; the sampling
 * paths take no sleeping lock at all. Placing and removing uprobes takes
 * the mmap_lock of every process mapping the file, so alloc.c does it
 * under its own ember_alloc_lock, outside ember_lock:
 *	ember_alloc_lock -> mmap_lock -> ember_lock
 */
extern struct mutex ember_lock;
extern struct ember_config ember_cfg;		/* ember_lock; stable while running */
extern bool ember_running;			/* ember_lock */
extern struct ember_ringset *ember_cur_set;	/* ember_lock; last started */
extern struct ember_ringset *ember_active_set;	/* writers: READ_ONCE */
extern struct ember_cpu_stats __percpu *ember_stats;
extern unsigned int ember_param_ring_size;
extern unsigned int ember_param_ring_mem_max_mb;
extern wait_queue_head_t ember_wq;
extern u64 ember_caps;

/* owner.c: the socket that owns the running session */
void ember_owner_set(u32 portid, struct net *net);
void ember_owner_clear(void);
u32 ember_owner_gen(void);
bool ember_owner_is_socket(u32 portid, struct net *net, u32 *gen);
int ember_owner_check(u32 portid, struct net *net,
		      struct netlink_ext_ack *extack);

/* session.c */
int ember_session_start(const struct ember_config *cfg, u32 portid,
			struct net *net, struct netlink_ext_ack *extack);
void ember_session_stop(void);
int ember_session_init(void);
void ember_session_exit(void);

/* record.c: building and emitting records (any context) */
int ember_record_init(const struct ember_config *cfg);
void ember_record_exit(void);
void ember_emit_sample(u16 type, struct pt_regs *regs, u64 time_ns,
		       u64 weight_ns, u8 periods, struct ember_cpu_stats *st);
void ember_emit_alloc(struct pt_regs *regs, u64 time_ns, u64 weight,
		      u64 addr, u64 size, struct ember_cpu_stats *st);
void ember_emit_alloc_at(struct pt_regs *regs, u64 lead, u64 time_ns,
			 u64 weight, u64 addr, u64 size, u16 flags,
			 struct ember_cpu_stats *st);
void ember_emit_free(u64 time_ns, u64 addr, struct ember_cpu_stats *st);
void ember_emit_lock(const struct ember_lock_wait *w, const void *kfirst,
		     u64 time_ns, u64 weight_ns, struct ember_cpu_stats *st);
void ember_emit_lock_waker(const struct ember_lock_waker *w,
			   const void *kfirst, u64 time_ns, u64 weight_ns,
			   struct ember_cpu_stats *st);
void *ember_scratch_get(unsigned int *level);
void ember_scratch_put(unsigned int level);
int ember_emit_buf(const void *rec, u32 size, struct ember_cpu_stats *st);
void ember_fill_sample_header(struct ember_sample *s, u16 type,
			      struct task_struct *t, u64 time_ns, u64 weight_ns);
unsigned int ember_record_user_stack(struct pt_regs *uregs, bool at_entry,
				     u64 *ips, unsigned int max,
				     unsigned int py_max, u16 *flags,
				     struct ember_cpu_stats *st);

/* unwind_kernel.c / unwind_user.c: they write no record (record.c does) */
unsigned int ember_unwind_kernel(struct task_struct *task,
				 struct pt_regs *regs, u64 *ips,
				 unsigned int max, u16 *flags);
unsigned int ember_unwind_kernel_here(const void *first, u64 *ips,
				      unsigned int max, u16 *flags);
unsigned int ember_unwind_user(struct pt_regs *uregs, bool at_entry,
			       u64 *ips, unsigned int max, unsigned int py_max,
			       u16 *flags, struct ember_unwind_miss *miss);

/* unwind_table.c: CFI tables and process bindings (ember_lock for writers) */
struct ember_uw_binding;
struct ember_uw_map;
struct ember_unwind_mapping;
struct ember_unwind_rule;
int ember_unwind_load(u32 id, u32 size, u32 offset, const void *data,
		      u32 len, struct netlink_ext_ack *extack);
int ember_unwind_drop(u32 id, struct netlink_ext_ack *extack);
int ember_unwind_bind(pid_t tgid, const struct ember_unwind_mapping *m,
		      u32 nr, struct netlink_ext_ack *extack);
void ember_unwind_clear(void);
void ember_unwind_usage(u64 *used, u64 *cap, u32 *tables, u32 *bound);
bool ember_unwind_active(void);
/* readers: under rcu_read_lock(), any context */
const struct ember_uw_binding *ember_unwind_binding(struct task_struct *task);
const struct ember_uw_map *ember_unwind_mapping(const struct ember_uw_binding *b,
						u64 pc);
const struct ember_unwind_rule *ember_unwind_rule_at(const struct ember_uw_map *m,
						     u64 pc);
bool ember_unwind_miss_allowed(const struct ember_uw_binding *b, u64 now);

/*
 * unwind_table.c: Python bindings (EMBER_CMD_PY_BIND), one per tgid, the
 * unwind bindings' sibling with their lifetime (ember_lock for writers,
 * dropped at session stop). A validated struct ember_py_proc and the two
 * windows the walker reads at once: the bytes of a frame that hold
 * previous, code, instr and owner, and those of a code object that hold
 * co_firstlineno, co_argcount and co_flags.
 */
#define EMBER_PY_WINDOW		96

struct ember_py_info {
	struct ember_py_proc p;
	u16 fr_lo, fr_len;	/* frame window: [frame + fr_lo, + fr_len) */
	u16 co_lo, co_len;	/* code object window */
};

int ember_py_bind(pid_t tgid, const struct ember_py_proc *p,
		  struct netlink_ext_ack *extack);
/* readers: under rcu_read_lock(), any context */
const struct ember_py_info *ember_py_lookup(struct task_struct *task);

/*
 * unwind_python.c: CPython's frame chain, walked where the user unwinder
 * meets the eval loop (unwind_user.c). Calls no other file.
 */
struct ember_py_walk {
	const struct ember_py_info *py;	/* NULL: not a bound process */
	u64 frame;	/* the next activation's newest frame */
	u64 leaf_pc;	/* the leaf's PC, when its activation came first */
	/* what proves that activation empty (unwind_python.c) */
	u64 cframe, leaf_shim, sp2;
	u16 nr;		/* Python frames written so far */
	u8 state;	/* enum in unwind_python.c */
};

unsigned int ember_py_activation(struct ember_py_walk *w, u64 pc, u64 sp,
				 u64 *ips, unsigned int n, unsigned int max,
				 u16 *flags);
unsigned int ember_py_rest(struct ember_py_walk *w, u64 *ips, unsigned int n,
			   unsigned int max, u16 *flags);

/* filter.c */
int ember_filter_set(const u32 *pids, unsigned int nr_pids, u64 cgroup_id);
void ember_filter_clear(void);
bool ember_filter_pass(struct task_struct *t);
u64 ember_task_cgroup_id(struct task_struct *t);

/* oncpu.c */
int ember_oncpu_start(struct ember_config *cfg,
		      struct netlink_ext_ack *extack);
void ember_oncpu_stop(void);
bool ember_cycles_available(void);
#ifdef EMBER_SELFTEST
void ember_selftest_nmi_sample(struct pt_regs *regs);
#endif

/* faults.c */
int ember_faults_start(const struct ember_config *cfg,
		       struct netlink_ext_ack *extack);
void ember_faults_stop(void);
bool ember_faults_available(void);

/* offcpu.c and lifecycle.c */
int ember_offcpu_check_params(void);
int ember_offcpu_start(const struct ember_config *cfg,
		       struct netlink_ext_ack *extack);
void ember_offcpu_stop(void);
int ember_lifecycle_start(struct netlink_ext_ack *extack);
void ember_lifecycle_stop(void);
bool ember_mmap_available(void);
void *ember_find_tracepoint(const char *name);
/* tracepoints.c: a tracepoint iterator's return address (record.c) */
bool ember_tp_in_iterator(unsigned long addr);

/* lock.c: EMBER_EV_LOCK (futex waits, kernel contention, wakers) */
int ember_lock_check_params(void);
u64 ember_lock_caps(void);
int ember_lock_start(const struct ember_config *cfg,
		     struct netlink_ext_ack *extack);
void ember_lock_stop(void);

/* chardev.c */
int ember_chardev_init(void);
void ember_chardev_exit(void);

/* control.c */
int ember_control_init(void);
void ember_control_exit(void);

#endif /* EMBER_KMOD_H */
