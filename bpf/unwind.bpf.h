/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The table-driven user-stack unwinder of the eBPF backend: the same
 * tables (include/uapi/ember.h), lookup and step rules as the module and
 * include/ember_unwind.h, within the verifier's limits.
 *
 * Maps, filled by the agent (agent/source/source_bpf_unwind.c):
 *   uw_pages, uw_rows, uw_rules  mmap'able array pools holding every
 *                                loaded table's page index, rows, rules
 *   uw_tables                    table id -> where its parts are in the pools
 *   uw_procs, uw_proc_slots      tgid -> its executable mappings, sorted
 *   uw_miss                      tgid -> when a miss was last reported
 *
 * Shape: uw_frames() is a global function, so the verifier checks it once
 * whatever calls it (5.6+): it walks up to UW_FRAMES_PER_CALL frames of
 * the state kept in the per-CPU uw_state map and returns whether the walk
 * is over; callers loop over it a bounded number of times. Every loop is
 * bounded (no bpf_loop: 5.10), every index into a pool is checked against
 * the table's own counts and the pool, so garbage in the maps can only
 * cut a stack, never hang or fault.
 */
#ifndef EMBER_UNWIND_BPF_H
#define EMBER_UNWIND_BPF_H

#include "../include/ember_unwind.h"

#define UW_FRAMES_PER_CALL	8
#define UW_MAX_CALLS		((EMBER_MAX_FRAMES + UW_FRAMES_PER_CALL - 1) / \
				 UW_FRAMES_PER_CALL)
#define UW_MAP_SEARCH_STEPS	9	/* log2(EMBER_BPF_MAX_MAPPINGS) + 1 */
#define UW_ROW_SEARCH_STEPS	17	/* 65536 rows a page at most */
#define UW_MISS_INTERVAL_NS	(50ULL * 1000000)
/*
 * User stack words are read through a copied window of UW_WIN bytes,
 * aligned to its size: a bpf_probe_read_user costs ~100 ns whatever its
 * size (8 bytes or a few KiB), one per frame was most of the walk. An
 * aligned window never crosses a page, so it can be read exactly when
 * any word in it can.
 */
#ifndef UW_WIN
#define UW_WIN			1024
#endif
#define UW_WIN_NONE		1ULL	/* no window: never an aligned base */

/*
 * aarch64: the return-address bits that hold a pointer-authentication
 * code, the kernel's insn mask for user space (NT_ARM_PAC_MASK), set by
 * the loader before load; every return address is stripped with it. 0
 * without PAC and on x86_64.
 */
#ifndef UW_TEST_PAC_MASK	/* selftests/agent/test_bpf_unwind_step.c */
const volatile __u64 pac_mask;
#endif

struct uw_table {
	__u64 base;
	__u32 nr_pages;
	__u32 page_off;		/* in uw_pages */
	__u32 nr_rows;
	__u32 row_off;		/* in uw_rows */
	__u32 nr_rules;
	__u32 rule_off;		/* in uw_rules */
};

struct uw_proc {
	__u32 nr;
	__u32 __pad;
	struct ember_unwind_mapping m[EMBER_BPF_MAX_MAPPINGS];
};

/* The walk in progress, per CPU and scratch slot. */
struct uw_state {
	__u64 pc, sp, fp;
	__u64 lr;		/* aarch64 x30, while lr_ok */
	__u32 fp_ok, exact;
	__u32 lr_ok;		/* lr is this frame's return address register:
				 * the interrupted frame, or one a signal
				 * frame restored (include/ember_unwind.h) */
	__u32 py;		/* Python (python.bpf.h): PY_OFF, PY_ON... */
	__u32 tgid;
	__u32 pslot;		/* the process's binding in uw_proc_slots */
	__u32 mi;		/* last mapping found + 1: tried first */
	__u32 __pad;
	__u32 n;		/* frames written */
	__u32 base;		/* where the user frames start in ips[] */
	__u32 max;		/* user frames wanted */
	__u32 flags;		/* EMBER_SF_USER_* found so far */
	__u32 done;
	__u64 miss_pc;		/* a PC no mapping holds: ask the agent */
	__u64 win_base;		/* user address of win[0], or UW_WIN_NONE */
	__u64 win[UW_WIN / 8];
};

/*
 * Array elements are 8-byte aligned in the kernel: the 4-byte page index
 * entries and rows are stored two per element, so the agent's mmap of a
 * pool is a plain array of them (4 bytes a row, not 8).
 */
struct uw_u32x2 {
	__u32 v[2];
};

struct uw_row2 {
	struct ember_unwind_row r[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);			/* sized by the loader */
	__type(key, __u32);
	__type(value, struct uw_u32x2);
} uw_pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uw_row2);
} uw_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_unwind_rule);
} uw_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_BPF_MAX_TABLES);
	__type(key, __u32);
	__type(value, struct uw_table);
} uw_tables SEC(".maps");

/*
 * Bound processes: tgid -> a slot of uw_proc_slots. perf_event programs
 * may only use preallocated hashes (5.10), and 8 KiB values preallocated
 * for every possible process would be too much: the slots are an array
 * sized by the loader from what is profiled. The agent writes a new
 * binding into a free slot, then points the index at it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);			/* sized by the loader */
	__type(key, __u32);
	__type(value, __u32);
} uw_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);			/* sized by the loader */
	__type(key, __u32);
	__type(value, struct uw_proc);
} uw_proc_slots SEC(".maps");

/*
 * The slot of process tgid's binding in uw_proc_slots, or -1: one hash
 * lookup per sample; the walk then indexes the array. The agent never
 * rewrites a slot in use (a new binding goes into a free slot and a freed
 * slot is reused only after a grace period), so the slot holds the same
 * binding for the whole walk.
 */
static __always_inline int uw_proc_slot_of(__u32 tgid)
{
	__u32 *slot = bpf_map_lookup_elem(&uw_procs, &tgid);

	return slot && bpf_map_lookup_elem(&uw_proc_slots, slot) ? (int)*slot : -1;
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} uw_miss SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_NR_SLOTS);
	__type(key, __u32);
	__type(value, struct uw_state);
} uw_state SEC(".maps");

/*
 * Rules already looked up by the on-CPU walks, per CPU, direct-mapped by
 * (table id, file address). Exact, never stale: the agent never reuses a
 * table id (agent/unwind/table_cache.c counts them up) and a table's pool
 * data is written before its descriptor and never changed while
 * published; only answers computed from a published descriptor are kept.
 * A hit replaces the uw_tables hash lookup, the page index and the row
 * search (5-20 cache lines, cold at 99 Hz) by one. Used by the walks of
 * EMBER_SLOT_ONCPU only: the perf_event programs never nest on a CPU, so
 * an entry is never seen half-written; the other slots' programs can
 * interrupt each other or be preempted (uprobes) and search every time.
 */
#define UW_RULE_CACHE_BITS	10
#define UW_RULE_CACHE		(1U << UW_RULE_CACHE_BITS)

struct uw_rule_cached {
	__u64 vaddr;
	__u32 table_id;		/* 0: empty (ids start at 1) */
	__u32 __pad;
	__u64 packed;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UW_RULE_CACHE);
	__type(key, __u32);
	__type(value, struct uw_rule_cached);
} uw_rule_cache SEC(".maps");

static __always_inline __u32 uw_rule_cache_key(__u32 table_id, __u64 vaddr)
{
	return ((vaddr ^ ((__u64)table_id << 40)) * 0x9e3779b97f4a7c15ULL) >>
	       (64 - UW_RULE_CACHE_BITS);
}

/*
 * Index + 1 of the mapping of the binding in slot pslot holding pc, 0 when
 * none: the mapping hint (index + 1, a caller's last hit) first, then a
 * bounded binary search. Global (like uw_rule_at), so the verifier checks
 * each search once instead of once per frame of every caller.
 */
__noinline __u32 uw_mapping_at(__u32 pslot, __u64 pc, __u32 hint)
{
	const struct uw_proc *p = bpf_map_lookup_elem(&uw_proc_slots, &pslot);
	const struct ember_unwind_mapping *h;
	__u32 lo = 0, hi;
	int i;

	if (!p)
		return 0;
	hi = p->nr;
	if (hi > EMBER_BPF_MAX_MAPPINGS)
		hi = EMBER_BPF_MAX_MAPPINGS;
	/* stacks mostly stay in one file for a while: mappings are sorted
	 * and disjoint, so a hit here is what the search would find */
	if (hint && hint <= hi) {
		h = &p->m[(hint - 1) & (EMBER_BPF_MAX_MAPPINGS - 1)];
		if (pc >= h->start && pc < h->end)
			return hint;
	}
	for (i = 0; i < UW_MAP_SEARCH_STEPS; i++) {
		const struct ember_unwind_mapping *m;
		__u32 mid;

		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		if (mid >= EMBER_BPF_MAX_MAPPINGS)
			break;
		m = &p->m[mid];
		if (pc < m->start)
			hi = mid;
		else if (pc >= m->end)
			lo = mid + 1;
		else
			return mid + 1;
	}
	return 0;
}

/* A rule packed in a scalar (global functions return scalars only). */
#define UW_RULE_NONE		0xffULL		/* no table row covers it */
#define UW_RULE_PACK(r)		((__u64)(r)->cfa_type |			\
				 (__u64)(r)->fp_type << 8 |		\
				 (__u64)(__u16)(r)->fp_off << 16 |	\
				 (__u64)(__u32)(r)->cfa_off << 32)

static __always_inline void uw_rule_unpack(__u64 v, struct ember_unwind_rule *r)
{
	r->cfa_type = v & 0xff;
	r->fp_type = (v >> 8) & 0xff;
	r->fp_off = (__s16)(v >> 16);
	r->cfa_off = (__s32)(v >> 32);
}

static __always_inline int uw_page_entry(__u32 i, __u32 *out)
{
	__u32 key = i >> 1;
	struct uw_u32x2 *e = bpf_map_lookup_elem(&uw_pages, &key);

	if (!e)
		return -1;
	*out = e->v[i & 1];
	return 0;
}

static __always_inline const struct ember_unwind_row *uw_row(__u32 i)
{
	__u32 key = i >> 1;
	struct uw_row2 *e = bpf_map_lookup_elem(&uw_rows, &key);

	return e ? &e->r[i & 1] : NULL;
}

/*
 * The rule of table t at file address vaddr, packed, or UW_RULE_NONE.
 * Every index is checked against the table's own counts (and the pools'
 * bounds by the map lookups), whatever the maps hold.
 */
static __always_inline __u64 uw_rule_search(const struct uw_table *t,
					    __u64 vaddr)
{
	const struct ember_unwind_rule *rule;
	const struct ember_unwind_row *row;
	__u32 key, lo, hi, low;
	__u64 off;
	int i;

	if (vaddr < t->base)
		return UW_RULE_NONE;
	off = vaddr - t->base;
	if ((off >> EMBER_UNWIND_PAGE_SHIFT) >= t->nr_pages)
		return UW_RULE_NONE;
	key = t->page_off + (__u32)(off >> EMBER_UNWIND_PAGE_SHIFT);
	if (uw_page_entry(key, &lo) || uw_page_entry(key + 1, &hi))
		return UW_RULE_NONE;
	if (lo >= hi || hi > t->nr_rows || hi - lo > 65536)
		return UW_RULE_NONE;
	low = off & 0xffff;
	for (i = 0; i < UW_ROW_SEARCH_STEPS; i++) {
		__u32 mid;

		if (hi - lo <= 1)
			break;
		mid = lo + (hi - lo) / 2;
		row = uw_row(t->row_off + mid);
		if (!row)
			return UW_RULE_NONE;
		if (row->pc_low <= low)
			lo = mid;
		else
			hi = mid;
	}
	row = uw_row(t->row_off + lo);
	if (!row || row->rule >= t->nr_rules)
		return UW_RULE_NONE;
	key = t->rule_off + row->rule;
	rule = bpf_map_lookup_elem(&uw_rules, &key);
	if (!rule || rule->cfa_type == EMBER_CFA_NONE)
		return UW_RULE_NONE;
	return UW_RULE_PACK(rule);
}

/*
 * The rule of table table_id at file address vaddr, packed, or
 * UW_RULE_NONE: with cached set, from this CPU's uw_rule_cache, else
 * searched and kept there.
 */
__noinline __u64 uw_rule_at(__u32 table_id, __u64 vaddr, __u32 cached)
{
	__u32 ckey = uw_rule_cache_key(table_id, vaddr);
	struct uw_rule_cached *c = NULL;
	const struct uw_table *t;
	__u64 packed;

	if (cached) {
		c = bpf_map_lookup_elem(&uw_rule_cache, &ckey);
		if (c && c->table_id == table_id && c->vaddr == vaddr &&
		    table_id)
			return c->packed;
	}
	t = bpf_map_lookup_elem(&uw_tables, &table_id);
	if (!t)
		return UW_RULE_NONE;
	packed = uw_rule_search(t, vaddr);
	if (!c)
		return packed;
	c->table_id = table_id;
	c->vaddr = vaddr;
	c->packed = packed;
	return packed;
}

/* The user word at addr, from the walk's window (read when needed). */
static __always_inline int uw_read(struct uw_state *w, __u64 addr, __u64 *val)
{
	__u64 base = addr & ~((__u64)UW_WIN - 1);

	if (addr & 7)
		return -1;
	if (base != w->win_base) {
		if (bpf_probe_read_user(w->win, UW_WIN, (const void *)base)) {
			w->win_base = UW_WIN_NONE;
			return bpf_probe_read_user(val, sizeof(*val),
						   (const void *)addr);
		}
		w->win_base = base;
	}
	*val = w->win[((addr - base) / 8) & (UW_WIN / 8 - 1)];
	return 0;
}

/*
 * The return address of a frame whose CFA is cfa, by the rule's RA part,
 * stripped of its pointer-authentication code (ember_unwind_ra()). The
 * CFA must lie above sp, or equal it for an x30 step only (an aarch64
 * leaf that has not moved sp), 8-aligned. 0, or -1: cut.
 */
static __always_inline int uw_ra(const struct ember_unwind_rule *r, __u64 cfa,
				 struct uw_state *w, __u64 *ra)
{
	__u32 how = EMBER_RULE_RA(r->fp_type);

	if ((cfa & 7) || cfa < w->sp || (cfa == w->sp && how != EMBER_RA_LR))
		return -1;
	switch (how) {
	case EMBER_RA_CFA_M8:
		if (uw_read(w, cfa - 8, ra))
			return -1;
		break;
	case EMBER_RA_LR:
		if (!w->lr_ok)
			return -1;	/* mid-stack: x30 is long gone */
		*ra = w->lr;
		break;
	case EMBER_RA_AT_CFA:
		if (uw_read(w, cfa + r->fp_off, ra))
			return -1;
		break;
	case EMBER_RA_PAIR:
		if (uw_read(w, cfa + r->fp_off + 8, ra))
			return -1;
		break;
	default:
		return -1;
	}
	*ra &= ~pac_mask;
	return 0;
}

/*
 * A signal frame's interrupted registers: x86_64's rt_sigreturn
 * trampoline (EMBER_CFA_SIGNAL) or aarch64's __kernel_rt_sigreturn
 * (EMBER_CFA_SIGNAL_A64, whose x30 is the restored frame's link register).
 */
static __always_inline int uw_signal(struct uw_state *w, bool a64)
{
	__u64 pc, sp, fp, lr = 0;

	if (a64) {
		if (uw_read(w, w->sp + EMBER_A64_SIGFRAME_PC, &pc) ||
		    uw_read(w, w->sp + EMBER_A64_SIGFRAME_SP, &sp) ||
		    uw_read(w, w->sp + EMBER_A64_SIGFRAME_X29, &fp) ||
		    uw_read(w, w->sp + EMBER_A64_SIGFRAME_X30, &lr))
			return EMBER_STEP_CUT;
	} else if (uw_read(w, w->sp + EMBER_SIGFRAME_RIP, &pc) ||
		   uw_read(w, w->sp + EMBER_SIGFRAME_RSP, &sp) ||
		   uw_read(w, w->sp + EMBER_SIGFRAME_RBP, &fp)) {
		return EMBER_STEP_CUT;
	}
	if (!pc)
		return EMBER_STEP_CUT;
	w->pc = pc;
	w->sp = sp;
	w->fp = fp;
	w->fp_ok = 1;
	w->lr = lr & ~pac_mask;
	w->lr_ok = a64;
	w->exact = 1;	/* the interrupted instruction itself */
	return EMBER_STEP_NEXT;
}

/*
 * One CFI step (include/ember_unwind.h's ember_unwind_step, same rules).
 * Returns EMBER_STEP_NEXT, _END or _CUT.
 */
static __always_inline int uw_step(const struct ember_unwind_rule *r,
				   struct uw_state *w)
{
	__u64 cfa, ra, fp = w->fp;

	switch (r->cfa_type) {
	case EMBER_CFA_END:
		return EMBER_STEP_END;
	case EMBER_CFA_SP:
		cfa = w->sp + (__s64)r->cfa_off;
		break;
	case EMBER_CFA_FP:
		if (!w->fp_ok)
			return EMBER_STEP_CUT;
		cfa = w->fp + (__s64)r->cfa_off;
		break;
	case EMBER_CFA_PLT1:
		cfa = w->sp + 8 + ((w->pc & 15) >= 11 ? 8 : 0);
		break;
	case EMBER_CFA_PLT2:
		cfa = w->sp + 8 + ((w->pc & 15) >= 10 ? 8 : 0);
		break;
	case EMBER_CFA_DEREF_FP:
	case EMBER_CFA_DEREF_SP:
	case EMBER_CFA_DEREF_FP_ADD:
	case EMBER_CFA_DEREF_SP_ADD: {
		/* *(base + off) + add: the plain forms add nothing after */
		int on_fp = r->cfa_type == EMBER_CFA_DEREF_FP ||
			    r->cfa_type == EMBER_CFA_DEREF_FP_ADD;
		int packed = r->cfa_type == EMBER_CFA_DEREF_FP_ADD ||
			     r->cfa_type == EMBER_CFA_DEREF_SP_ADD;
		__s64 off = packed ? EMBER_CFA_DEREF_OFF(r->cfa_off) :
				     (__s64)r->cfa_off;

		if ((on_fp && !w->fp_ok) ||
		    uw_read(w, (on_fp ? w->fp : w->sp) + off, &cfa))
			return EMBER_STEP_CUT;
		if (packed)
			cfa += EMBER_CFA_DEREF_ADD(r->cfa_off);
		break;
	}
	case EMBER_CFA_SIGNAL:
		return uw_signal(w, false);
	case EMBER_CFA_SIGNAL_A64:
		return uw_signal(w, true);
	default:
		return EMBER_STEP_CUT;
	}
	if (uw_ra(r, cfa, w, &ra))
		return EMBER_STEP_CUT;
	switch (EMBER_RULE_FP(r->fp_type)) {
	case EMBER_FP_SAME:
		break;
	case EMBER_FP_AT_CFA:
		if (uw_read(w, cfa + r->fp_off, &fp))
			return EMBER_STEP_CUT;
		w->fp_ok = 1;
		break;
	case EMBER_FP_AT_FP:
		if (!w->fp_ok || uw_read(w, w->fp + r->fp_off, &fp))
			return EMBER_STEP_CUT;
		w->fp_ok = 1;
		break;
	default:
		w->fp_ok = 0;
		break;
	}
	if (!ra)
		return EMBER_STEP_END;
	w->pc = ra;
	w->sp = cfa;
	w->fp = fp;
	w->exact = 0;
	w->lr_ok = 0;	/* the caller's x30 was clobbered by its call */
	return EMBER_STEP_NEXT;
}

/*
 * Where no table covers the PC: one frame-pointer step, taken only when
 * it leads back into the process's code (checked by the caller with the
 * next lookup) and up the stack.
 */
static __always_inline int uw_fp_step(struct uw_state *w)
{
	__u64 next, ra;

	if (w->fp_ok && !w->fp)
		return EMBER_STEP_FP_END;
	if (!w->fp_ok || w->fp < w->sp || uw_read(w, w->fp, &next) ||
	    uw_read(w, w->fp + 8, &ra))
		return EMBER_STEP_CUT;
	ra &= ~pac_mask;
	if (!ra)
		return EMBER_STEP_FP_END;
	w->sp = w->fp + 16;
	w->pc = ra;
	w->fp = next;
	/* the caller's rbp may be this frame's CFA itself: a caller
	 * that calls right after its own push rbp; mov rbp,rsp */
	w->fp_ok = next >= w->sp || next == 0;
	w->exact = 0;
	w->lr_ok = 0;
	return EMBER_STEP_NEXT;
}

/*
 * The frame-pointer step from the interrupted instruction itself, which
 * on x86_64 may be a frame-pointer prologue or a ret
 * (ember_unwind_leaf_fp(); arch.bpf.h: not on aarch64).
 */
static __always_inline int uw_fp_step_at(struct uw_state *w)
{
	__u32 insn;
	__u64 ra;
	int k;

	if (!ARCH_FP_LEAF_TEST || !w->exact ||
	    bpf_probe_read_user(&insn, sizeof(insn), (const void *)w->pc))
		return uw_fp_step(w);
	k = ember_unwind_leaf_fp(insn);
	if (k == EMBER_LEAF_AT_RA) {
		if (uw_read(w, w->sp, &ra))
			return EMBER_STEP_CUT;
		if (!ra)
			return EMBER_STEP_FP_END;
		w->sp += 8;
		w->pc = ra;
		w->exact = 0;
		return EMBER_STEP_NEXT;
	}
	if (k == EMBER_LEAF_PUSHED) {
		w->fp = w->sp;
		w->fp_ok = 1;
	}
	return uw_fp_step(w);
}

/* Ask the agent for a binding, at most every UW_MISS_INTERVAL_NS. */
static __always_inline bool uw_miss_allowed(__u32 tgid, __u64 now)
{
	__u64 *last = bpf_map_lookup_elem(&uw_miss, &tgid);

	if (last && now - *last < UW_MISS_INTERVAL_NS)
		return false;
	bpf_map_update_elem(&uw_miss, &tgid, &now, BPF_ANY);
	return true;
}

#endif /* EMBER_UNWIND_BPF_H */
