/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/stack.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * Stacks of the current task into a record: the kernel stack
 * (bpf_get_stack), the user stack by unwind tables when the agent has
 * bound the process (uw_frames over unwind.bpf.h) or by frame pointers
 * otherwise, the user registers they start from, and the test mode's copy
 * of the user stack (--check-unwind).
 */
#ifndef EMBER_STACK_BPF_H
#define EMBER_STACK_BPF_H

#include "common.bpf.h"
#include "record.bpf.h"
#include "unwind.bpf.h"
#include "python.bpf.h"

/*
 * Where the current task's user registers saved at kernel entry (the
 * syscall or interrupt it is in) are: bpf_task_pt_regs() where the kernel
 * has it (5.15+) and, on x86-64 before that (5.10), the top of the task's
 * stack (arch.bpf.h). NULL when not known.
 */
static __always_inline const void *entry_regs_at(void)
{
	struct task_struct *task;

	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs) &&
	    bpf_core_enum_value_exists(enum bpf_func_id,
				       BPF_FUNC_get_current_task_btf)) {
		task = bpf_get_current_task_btf();
		return (const void *)bpf_task_pt_regs(task);
	}
#if ARCH_STACK_TOP_REGS
	task = (void *)bpf_get_current_task();
	return (const void *)((__u64)BPF_CORE_READ(task, stack) +
			      ARCH_THREAD_SIZE - sizeof(struct uapi_regs));
#else
	return NULL;
#endif
}

/* The unwinder's registers from kernel pt_regs at regs. 0, or -1. */
static __always_inline int uw_regs_from(const void *regs, struct uw_regs *r)
{
	struct arch_uw_part p;

	if (!regs || bpf_probe_read_kernel(&p, sizeof(p),
					   (const char *)regs + ARCH_UW_PART_OFF))
		return -1;
	arch_uw_part_regs(&p, r);
	return 0;
}

/*
 * The interrupted user registers a program hands its walk, per CPU and
 * scratch slot: kept off the program's stack, which with the walks'
 * global functions under it must stay within 512 bytes on 5.10-6.12
 * (each frame rounded up to 32).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_NR_SLOTS);
	__type(key, __u32);
	__type(value, struct uw_regs);
} uw_regs_buf SEC(".maps");

static __always_inline struct uw_regs *uw_regs_slot(__u32 slot)
{
	struct uw_regs *r = bpf_map_lookup_elem(&uw_regs_buf, &slot);

	if (r)
		__builtin_memset(r, 0, sizeof(*r));
	return r;
}

/*
 * The user registers of the current task: from the sample's own context
 * when it interrupted user mode, else those saved at kernel entry. The
 * frame they describe is the interrupted one: its x30 is valid.
 */
static __always_inline int current_uregs(const struct uw_regs *given,
					 __u32 slot, struct uw_state *w)
{
	struct uw_regs *r;

	if (!given) {
		/* in the slot's buffer: the stack is short (uw_regs_buf) */
		r = uw_regs_slot(slot);
		if (!r || uw_regs_from(entry_regs_at(), r))
			return -1;
		given = r;
	}
	w->pc = given->pc;
	w->sp = given->sp;
	w->fp = given->fp;
	w->lr = given->lr;
	w->lr_ok = 1;
	return 0;
}

/*
 * Whether the current task's user side is 32-bit (arch_regs_compat()),
 * from the registers given (the context's) or else the entry ones, with
 * its PC. Always false on x86_64.
 */
static __always_inline bool user_compat(const struct uw_regs *given,
					__u32 slot, __u64 *pc)
{
#if defined(__TARGET_ARCH_arm64)
	struct uw_regs *r;

	if (!given) {
		r = uw_regs_slot(slot);
		if (!r || uw_regs_from(entry_regs_at(), r))
			return false;
		given = r;
	}
	*pc = given->pc;
	return given->compat;
#else
	return false;
#endif
}

/* The miss record being sent, per CPU and slot: off the short stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_NR_SLOTS);
	__type(key, __u32);
	__type(value, struct ember_unwind_miss);
} uw_miss_out SEC(".maps");

/* EMBER_REC_UNWIND_MISS for the sample's process, rate-limited. */
static __always_inline void unwind_miss(void *ctx, const struct ember_sample *s,
					__u32 slot, __u64 pc,
					struct ember_bpf_stats *st)
{
	struct ember_unwind_miss *m = bpf_map_lookup_elem(&uw_miss_out, &slot);

	if (!m)
		return;
	if (!uw_miss_allowed(s->pid, s->time_ns)) {
		st->unwind_miss_limited++;
		return;
	}
	m->hdr.type = EMBER_REC_UNWIND_MISS;
	m->hdr.size = sizeof(*m);
	m->hdr.__reserved = 0;
	m->time_ns = s->time_ns;
	m->pid = s->pid;
	m->tid = s->tid;
	m->pc = pc;
	st->unwind_miss++;
	/* wake the reader now: the agent is waiting for it to bind tables */
	emit_wake(ctx, m, sizeof(*m), st, true);
}

/*
 * Walks up to UW_FRAMES_PER_CALL frames of the walk in uw_state[slot],
 * writing them into scratch[slot]; 1 when the walk is over. A frame in
 * CPython's eval loop (w->py: the process is bound in py_procs) is
 * replaced by the Python frames of its activation (python.bpf.h) and
 * then unwound as any other. Global: the verifier checks it once, not
 * once per caller and iteration.
 */
__noinline int uw_frames(__u32 slot)
{
	struct uw_state *w = bpf_map_lookup_elem(&uw_state, &slot);
	struct scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	const struct ember_unwind_mapping *m;
	struct ember_unwind_rule rule;
	struct uw_rule_cached *c;
	struct py_state *ps;
	struct uw_proc *p;
	__u32 idx, mi, ckey;
	__u64 packed, vaddr;
	int i, r;

	if (!w || !sc)
		return 1;
	if (w->done)
		return 1;
	p = bpf_map_lookup_elem(&uw_proc_slots, &w->pslot);
	if (!p) {
		w->flags |= EMBER_SF_USER_CUT;
		w->done = 1;
		return 1;
	}
	for (i = 0; i < UW_FRAMES_PER_CALL; i++) {
		__u64 lpc = w->exact ? w->pc : w->pc - 1;

		if (w->n >= w->max) {
			w->flags |= EMBER_SF_USER_TRUNC;
			w->done = 1;
			break;
		}
		/*
		 * The hint and a cached rule are checked here, without the
		 * calls: with the SRSO safe-RET mitigation (this host's AMD
		 * CPUs) every return costs, and two calls a frame showed.
		 */
		mi = 0;
		if (w->mi) {
			m = &p->m[(w->mi - 1) & (EMBER_BPF_MAX_MAPPINGS - 1)];
			if (lpc >= m->start && lpc < m->end)
				mi = w->mi;
		}
		if (!mi)
			mi = uw_mapping_at(w->pslot, lpc, 0);
		/* the leaf is real wherever it is; a return address outside
		 * the process's code is not: cut, never an invented frame */
		if (!mi && w->n > 0) {
			w->flags |= EMBER_SF_USER_CUT;
			w->miss_pc = w->pc;
			w->done = 1;
			break;
		}
		/*
		 * An eval-loop frame: back to the caller, which writes its
		 * activation's Python frames (PY_PENDING) and calls again
		 * (PY_REPLACED, or PY_NATIVE after a cut: the marker, then
		 * the native frame). Not from here: a call under this one
		 * would pass the 512-byte stack of 5.10-6.12's verifiers.
		 */
		if (w->py == PY_ON && mi) {
			ps = bpf_map_lookup_elem(&py_state, &slot);
			if (ps && !ps->cut && py_in_eval(ps, lpc)) {
				w->py = PY_PENDING;
				py_pending(ps, w->n, w->max);
				if (!w->n)
					ps->leaf_pc = w->pc;
				else if (!ps->sp2)
					ps->sp2 = w->sp;
				return PY_RET_ACTIVATION;
			}
		}
		r = w->py;
		if (r != PY_OFF)
			w->py = PY_ON;
		if (r != PY_REPLACED) {
			idx = w->base + w->n;
			if (idx >= EMBER_BPF_SCRATCH_FRAMES) {
				w->done = 1;
				break;
			}
			sc->raw[SCRATCH_IPS + idx] = w->pc;
			w->n++;
		}
		if (!mi || mi > EMBER_BPF_MAX_MAPPINGS) {
			w->flags |= EMBER_SF_USER_CUT;
			w->miss_pc = w->pc;
			w->done = 1;
			break;
		}
		w->mi = mi;
		m = &p->m[(mi - 1) & (EMBER_BPF_MAX_MAPPINGS - 1)];
		packed = UW_RULE_NONE;
		if (m->table_id) {
			vaddr = lpc - m->bias;
			ckey = uw_rule_cache_key(m->table_id, vaddr);
			c = slot == EMBER_SLOT_ONCPU ?
			    bpf_map_lookup_elem(&uw_rule_cache, &ckey) : NULL;
			if (c && c->table_id == m->table_id && c->vaddr == vaddr)
				packed = c->packed;
			else
				packed = uw_rule_at(m->table_id, vaddr,
						    slot == EMBER_SLOT_ONCPU);
		}
		if (packed != UW_RULE_NONE) {
			uw_rule_unpack(packed, &rule);
			w->flags |= EMBER_SF_USER_CFI;
			r = uw_step(&rule, w);
		} else {
			w->flags |= EMBER_SF_USER_FP;
			r = uw_fp_step_at(w);
			if (r == EMBER_STEP_NEXT &&
			    !uw_mapping_at(w->pslot, w->pc - 1, mi))
				r = EMBER_STEP_CUT;
		}
		if (r == EMBER_STEP_END) {
			w->flags |= EMBER_SF_USER_COMPLETE;
			w->done = 1;
			break;
		}
		if (r == EMBER_STEP_FP_END) {
			w->done = 1;
			break;
		}
		if (r != EMBER_STEP_NEXT) {
			w->flags |= EMBER_SF_USER_CUT;
			w->done = 1;
			break;
		}
	}
	return w->done;
}

/*
 * The walk's calls, native and Python, until it is over. Global, so the
 * verifier goes round this loop once, not once for every way into each
 * program's tail (5.10: 658k insns processed, 5.3 s under TCG, inline).
 */
__noinline int uw_walk(__u32 slot)
{
	int i, r;

	for (i = 0, r = 0; i < UW_MAX_CALLS + PY_REST_CALLS; i++) {
		if (r == PY_RET_ACTIVATION) {
			r = py_frames(slot);
		} else {
			r = uw_frames(slot);
			/* cut short: the activations left, after it */
			if (r == 1)
				r = py_rest(slot, 1);
		}
		if (r == 1)
			break;
	}
	return 0;
}

/*
 * The user stack by unwind tables when the agent has bound the process:
 * 0 with *nu frames written after the nk kernel ones, or -1 when the
 * process is not bound (the caller walks frame pointers as before, and a
 * rate-limited miss asks the agent for tables).
 */
static __always_inline int unwind_cfi(void *ctx, struct ember_sample *s,
				      __u32 nk, __u32 slot,
				      const struct uw_regs *given,
				      __u32 *nu, __u16 *flags)
{
	struct ember_bpf_stats *st = get_stats();
	struct uw_state *w;
	__u32 tgid = s->pid;
	int pslot;

	if (!st)
		return -1;
	pslot = uw_proc_slot_of(tgid);
	if (pslot < 0) {
		unwind_miss(ctx, s, slot, 0, st);
		return -1;
	}
	w = bpf_map_lookup_elem(&uw_state, &slot);
	if (!w || current_uregs(given, slot, w))
		return -1;
	w->fp_ok = 1;
	w->exact = 1;
	w->tgid = tgid;
	w->pslot = pslot;
	w->mi = 0;
	w->n = 0;
	w->base = nk;
	w->max = ustack_max;
	w->flags = 0;
	w->done = 0;
	w->miss_pc = 0;
	w->win_base = UW_WIN_NONE;
	/* a bound Python process: py_begin() gives w->max its room */
	w->py = py_bound && py_begin(slot, tgid, nk, 1) ? PY_ON : PY_OFF;
	uw_walk(slot);
	if (!w->done)	/* more activations than calls: cannot happen */
		w->flags |= EMBER_SF_USER_CUT;
	*nu = w->n;
	*flags |= w->flags;
	st->ustack_cfi++;
	if (w->flags & EMBER_SF_USER_FP)
		st->ustack_fp++;
	if (w->flags & EMBER_SF_USER_CUT)
		st->ustack_cut++;
	if (w->miss_pc)
		unwind_miss(ctx, s, slot, w->miss_pc, st);
	return 0;
}

/* The frame-pointer merge's calls: global, as uw_walk(). */
__noinline int py_fp_walk(__u32 slot)
{
	int i, r;

	/* as uw_walk(): the activations from here, not under the merge */
	for (i = 0, r = 0; i < PY_FP_CALLS + PY_REST_CALLS; i++) {
		if (r == PY_RET_ACTIVATION) {
			r = py_frames(slot);
		} else {
			r = py_merge_fp(slot);
			if (r == 1)
				r = py_rest(slot, 0);
		}
		if (r == 1)
			break;
	}
	return 0;
}

/*
 * The user stack by frame pointers of a process bound in py_procs: the
 * kernel's walk into ps->native (at most PY_FP_FRAMES), then merged into
 * s->ips after the nk kernel frames with each eval-loop frame replaced by
 * its Python frames. Returns the user slots written.
 */
static __always_inline __u32 fp_python(void *ctx, __u32 slot, __u16 *flags)
{
	__u32 req = ustack_req < PY_FP_FRAMES ? ustack_req : PY_FP_FRAMES;
	struct py_state *ps = bpf_map_lookup_elem(&py_state, &slot);
	long n;

	if (!ps)
		return 0;
	n = bpf_get_stack(ctx, ps->native, req * sizeof(__u64),
			  BPF_F_USER_STACK);
	if (n <= 0)
		return 0;
	ps->nn = n / sizeof(__u64);
	ps->ni = 0;
	if (ps->nn >= req)
		ps->flags |= EMBER_SF_USER_TRUNC;
	py_fp_walk(slot);
	/* looked up again: ps kept across the calls would take stack */
	ps = bpf_map_lookup_elem(&py_state, &slot);
	if (!ps)
		return 0;
	*flags |= ps->flags;
	return ps->n;
}

/*
 * Kernel and/or user stack of the current task into s->ips, kernel first.
 * Each kind is asked for one frame more than kept (when the
 * perf_event_max_stack sysctl allows) so a full answer means truncation.
 */
static __always_inline __u16 fill_stacks(void *ctx, struct ember_sample *s,
					 bool kernel, bool user,
					 __u32 uregs_slot,
					 const struct uw_regs *uregs)
{
	bool py = false;
	__u32 nk = 0, nu = 0;
	__u16 flags = 0;
	__u64 pc = 0;
	long n;

	if (kernel && kstack_req) {
		n = bpf_get_stack(ctx, &s->ips[0], kstack_req * sizeof(__u64), 0);
		if (n > 0) {
			nk = n / sizeof(__u64);
			if (nk >= kstack_req)
				flags |= EMBER_SF_KERNEL_TRUNC;
			if (nk > kstack_max)
				nk = kstack_max;
		}
	}
	if (nk > EMBER_MAX_FRAMES)	/* for the verifier: never true */
		nk = EMBER_MAX_FRAMES;
	s->nr_kernel = nk;
	if (user && ustack_req && user_compat(uregs, uregs_slot, &pc)) {
		/* its PC, then a cut: never a frame read as 64-bit code's */
		s->ips[nk] = pc;
		nu = 1;
		flags |= EMBER_SF_COMPAT | EMBER_SF_USER_CUT;
		user = false;
	}
	if (user && ustack_req && uregs_slot < EMBER_NR_SLOTS &&
	    unwind_cfi(ctx, s, nk, uregs_slot, uregs, &nu, &flags) == 0)
		user = false;	/* the process is bound: done with tables */
	if (user && ustack_req && uregs_slot < EMBER_NR_SLOTS)
		py = py_bound && py_begin(uregs_slot, s->pid, nk, 0);
	if (user && ustack_req && py) {
		nu = fp_python(ctx, uregs_slot, &flags);
	} else if (user && ustack_req) {
		n = bpf_get_stack(ctx, &s->ips[nk], ustack_req * sizeof(__u64),
				  BPF_F_USER_STACK);
		if (n > 0) {
			nu = n / sizeof(__u64);
			if (nu >= ustack_req)
				flags |= EMBER_SF_USER_TRUNC;
			if (nu > ustack_max)
				nu = ustack_max;
		}
	}
	s->nr_user = nu;
	s->hdr.size = sizeof(*s) + (nk + nu) * sizeof(__u64);
	return flags;
}

/*
 * Test mode (--check-unwind): the sample's user registers and up to
 * EMBER_STACK_COPY_MAX bytes of its stack, in 4 KiB pieces so a stack
 * that ends sooner still gives what it has, for the agent's libdwfl
 * oracle to unwind the same sample.
 */
static __always_inline void stack_copy_from(const struct ember_sample *s,
					    const void *regs, bool is_ctx)
{
	struct ember_user_stack *r;
	__u32 got = 0, *busy;
	__u64 sp;
	int i;

	busy = emit_enter();	/* the ring's lock: see emit_enter() */
	r = bpf_ringbuf_reserve(&ringbuf, sizeof(*r) + EMBER_STACK_COPY_MAX, 0);
	emit_leave(busy);
	if (!r)
		return;
	r->hdr.type = EMBER_REC_USER_STACK;
	r->hdr.__reserved = 0;
	r->hdr.size = sizeof(*r) + EMBER_STACK_COPY_MAX;
	r->time_ns = s->time_ns;
	r->pid = s->pid;
	r->tid = s->tid;
	/* arch_copy_regs(): the uapi's slots, sp in EMBER_UREG_SP. Saved
	 * entry registers pass through the stack area (too big for the BPF
	 * stack on arm64), which the copy below overwrites. */
	if (is_ctx) {
		arch_copy_regs(regs, r->regs, pac_mask);
	} else {
		if (bpf_probe_read_kernel(r->stack, sizeof(struct uapi_regs),
					  regs)) {
			bpf_ringbuf_discard(r, 0);
			return;
		}
		arch_copy_regs((const void *)r->stack, r->regs, pac_mask);
	}
	sp = r->regs[EMBER_UREG_SP];
	r->__reserved = 0;
	/*
	 * Constant 256-byte pieces (what every verifier can bound): the copy
	 * stops at the first piece that crosses the end of the stack
	 * mapping, losing at most 255 bytes of its top.
	 */
	for (i = 0; i < EMBER_STACK_COPY_MAX / 256; i++) {
		if (bpf_probe_read_user(&r->stack[i * 256], 256,
					(void *)(sp + i * 256)))
			break;
		got += 256;
	}
	r->stack_len = got;
	bpf_ringbuf_submit(r, ring_wake(false));	/* lockless */
}

/* ctx_regs: the sample's context when it interrupted user mode, or NULL */
static __always_inline void copy_user_stack(const struct ember_sample *s,
					    const void *ctx_regs)
{
	const void *entry;

	if (use_perfbuf)
		return;
	if (ctx_regs) {
		stack_copy_from(s, ctx_regs, true);
		return;
	}
	entry = entry_regs_at();
	if (entry)
		stack_copy_from(s, entry, false);
}

/*
 * EMBER_A_STACK_COPY (include/uapi/ember.h): bytes of user stack copied
 * before a sample whose user walk was cut or ran without tables, 0 = none
 * (a multiple of EMBER_STACK_COPY_UNIT; frozen, so the verifier sees a
 * constant ring reservation and loop bound).
 */
const volatile __u32 stack_copy_bytes;
#define STACK_COPY_BIG	4096

/*
 * The registers the task entered the kernel with (the sample's, whether
 * it interrupted user mode or a syscall: the entry of an interrupt or
 * NMI from user mode saves them there too) and stack_copy_bytes of its
 * stack, into the ring ahead of the sample of tid at time_ns. Global, so
 * the sampling programs' own frames do not grow (<= 288 bytes, see
 * README). Returns the bytes copied, or -1 when nothing was written.
 */
__noinline int stack_copy_out(__u64 time_ns, __u64 pid_tid)
{
	const void *entry = entry_regs_at();
	struct ember_user_stack *r;
	__u32 got = 0, *busy;
	__u64 sp;
	int i;

	if (use_perfbuf || !stack_copy_bytes || !entry ||
	    stack_copy_bytes > EMBER_STACK_COPY_MAX)
		return -1;
	/* none once a quarter of the ring waits to be read: copies must
	 * never make a sample lost (a lagging reader, a burst of them) */
	if (bpf_ringbuf_query(&ringbuf, BPF_RB_AVAIL_DATA) >
	    bpf_ringbuf_query(&ringbuf, BPF_RB_RING_SIZE) / 4)
		return -1;
	busy = emit_enter();	/* the ring's lock: see emit_enter() */
	r = bpf_ringbuf_reserve(&ringbuf, sizeof(*r) + stack_copy_bytes, 0);
	emit_leave(busy);
	if (!r)
		return -1;
	r->hdr.type = EMBER_REC_USER_STACK;
	r->hdr.__reserved = 0;
	r->hdr.size = sizeof(*r) + stack_copy_bytes;
	r->time_ns = time_ns;
	r->pid = pid_tid >> 32;
	r->tid = (__u32)pid_tid;
	r->__reserved = 0;
	/* through the stack area, which the copy below overwrites */
	if (bpf_probe_read_kernel(r->stack, sizeof(struct uapi_regs), entry)) {
		bpf_ringbuf_discard(r, 0);
		return -1;
	}
	arch_copy_regs((const void *)r->stack, r->regs, pac_mask);
	sp = r->regs[EMBER_UREG_SP];
	/*
	 * 4 KiB pieces, then 256-byte ones for the rest or from the piece
	 * that crossed the end of the stack mapping (losing at most 255 bytes
	 * of its top). Each read costs ~190 ns whatever its size: 256-byte
	 * pieces alone made a 12 KiB copy ~9 us. Constant sizes and, since
	 * stack_copy_bytes is one, a constant got on every path: what every
	 * verifier can bound. Bytes past stack_len are left as the ring had
	 * them (records the reader already had), never read by the agent.
	 */
	for (i = 0; i < EMBER_STACK_COPY_MAX / STACK_COPY_BIG; i++) {
		if (got + STACK_COPY_BIG > stack_copy_bytes)
			break;
		if (bpf_probe_read_user(&r->stack[got], STACK_COPY_BIG,
					(void *)(sp + got)))
			break;
		got += STACK_COPY_BIG;
	}
	for (i = 0; i < STACK_COPY_BIG / EMBER_STACK_COPY_UNIT; i++) {
		if (got + EMBER_STACK_COPY_UNIT > stack_copy_bytes)
			break;
		if (bpf_probe_read_user(&r->stack[got], EMBER_STACK_COPY_UNIT,
					(void *)(sp + got)))
			break;
		got += EMBER_STACK_COPY_UNIT;
	}
	r->stack_len = got;
	bpf_ringbuf_submit(r, ring_wake(false));	/* lockless */
	return got;
}

/*
 * Whether a sample's user walk wants a copy (the kernel module's
 * ember_wants_copy(): cut or without tables; never Python runs or
 * 32-bit tasks).
 */
static __always_inline bool stack_copy_wanted(__u16 flags, __u16 nr_user)
{
	/*
	 * Python samples too: the agent puts their activations back. Not a
	 * walk proven whole: cut only in its Python chain, or with a
	 * frame-pointer step where no CFI is, which the replay (the same
	 * files' CFI) cannot mend either; each copy is 12 KiB of ring.
	 */
	if (!stack_copy_bytes || !nr_user ||
	    (flags & (EMBER_SF_COMPAT | EMBER_SF_KTHREAD |
		      EMBER_SF_USER_COMPLETE)))
		return false;
	return !(flags & EMBER_SF_USER_CFI) ||
	       (flags & (EMBER_SF_USER_CUT | EMBER_SF_USER_FP));
}

#endif /* EMBER_STACK_BPF_H */
