/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/python.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * CPython frames in user stacks (include/uapi/ember.h, "Python frames"):
 * where the user walk (stack.bpf.h: the CFI walk of uw_frames() and the
 * frame-pointer merge below) meets a frame whose PC is in the process's
 * eval loop, it writes the Python frames that activation of the loop runs
 * instead, leaf first, two slots each (EMBER_IP_PY | code, then
 * check << 32 | instruction offset), and goes on with the native walk.
 *
 * py_procs (tgid -> struct ember_py_proc) is filled by the agent
 * (agent/source/source_bpf_python.c, which validates every field); the
 * programs still treat it as untrusted: every read is a bounded
 * bpf_probe_read_user, every index is masked, and a chain longer than
 * EMBER_MAX_PY_FRAMES or the ustack limit is cut. Whatever cannot be read
 * ends the chain with EMBER_IP_PY_CUT | reason and EMBER_SF_USER_CUT;
 * later activations of the loop in the same stack are then written as
 * the native frames they are (the position in the chain is lost). A
 * native walk cut short with activations left writes them after it
 * (py_rest(): EMBER_PY_CUT_NATIVE), so a sample in code not yet bound
 * keeps its Python callers.
 *
 * Shape, as the unwinder's: py_frames() is global (verified once) and
 * walks up to PY_FRAMES_PER_CALL frames of the state kept in the per-CPU
 * py_state map. The walks (uw_frames(), py_merge_fp()) return
 * PY_RET_ACTIVATION at an eval-loop frame; the loop that calls them, in
 * the program itself, then calls py_frames() until it returns 0 (the
 * activation is over) and the walk again. No call is three deep: the
 * 5.10-6.12 verifiers count every frame of a call chain against 512
 * bytes, and only the loop counter and the last answer are live across
 * the calls, so the programs' own stacks stay as they were. No
 * bpf_loop (5.10).
 */
#ifndef EMBER_PYTHON_BPF_H
#define EMBER_PYTHON_BPF_H

#include "common.bpf.h"
#include "unwind.bpf.h"

#define PY_FRAMES_PER_CALL	8
#define PY_MAX_CALLS		(EMBER_MAX_PY_FRAMES / PY_FRAMES_PER_CALL)
/*
 * A frame's fields are read in one piece, [lo, hi) rounded out to 8 bytes
 * (inside the frame struct: its pointers are 8-aligned), the code object's
 * three ints likewise to 4 bytes. Wider layouts than these are refused
 * by the loader and cut here.
 */
#define PY_FRAME_SPAN		128
#define PY_CODE_SPAN		64
/*
 * Frames and code objects are read through copied windows (aligned, so
 * never across a page: readable exactly when the fields are), as the
 * unwinder reads stack words: a bpf_probe_read_user costs ~100 ns
 * whatever its size, and a thread's frames sit side by side in its data
 * stack, code objects of a module often near each other. A page each:
 * 40 distinct functions cost +1.5-2.5 us a sample at 999 Hz with 4 KiB
 * windows, +3.2-3.5 with 1 KiB, +5-6 with 256 B (docs/NOTES.md); the
 * price is 8 KiB of per-CPU state a scratch slot.
 */
#define PY_WIN			4096
#define PY_WIN_NONE		1ULL	/* never an aligned base */
/* native frames the frame-pointer path merges (bpf_get_stack's answer) */
#define PY_FP_FRAMES		128
#define PY_FP_PER_CALL		8
#define PY_FP_CALLS		(PY_FP_FRAMES / PY_FP_PER_CALL)
#define PY_TSD_KEYS		32	/* glibc's first-level specific block */
/*
 * Activations a walk's loop may run, on top of its native calls: each
 * one writes a frame or cuts (which ends them), except a 3.12+ shim
 * met first, which takes a native frame with it.
 */
#define PY_MAX_ACTIVATIONS	(EMBER_MAX_PY_FRAMES + 2)
/* py_frames() calls of a whole walk: every activation, every frame */
#define PY_WALK_CALLS		(PY_MAX_ACTIVATIONS + PY_MAX_CALLS)
/* ... and the walk's own call back for each activation left (py_rest()) */
#define PY_REST_CALLS		(PY_WALK_CALLS + PY_MAX_ACTIVATIONS)

/*
 * Measurement builds only (bench/python-cost.sh --floor, built with
 * BPF_EXTRA_CFLAGS=-DEMBER_PY_FLOOR=N): what parts of the walk cost.
 *   1  the chain is cut right after the thread state's newest frame is
 *      read: the cost of finding the chain
 *   2  no code-object read: every frame's check value is 0, the cost of
 *      the chain with a free code-object cache (the floor any cache of
 *      check values could reach)
 * Never set in a build that ships: 2 gives names to frames unchecked.
 */
#ifndef EMBER_PY_FLOOR
#define EMBER_PY_FLOOR		0
#endif

/* what the walks and py_frames() return besides 0 (go on) and 1 (done) */
#define PY_RET_ACTIVATION	2

/* uw_state.py and py_state.pending: where the walk is with Python */
enum {
	PY_OFF,			/* the process is not bound */
	PY_ON,			/* bound, no activation in progress */
	PY_PENDING,		/* this frame is in the eval loop: its
				 * activation is being written */
	PY_REPLACED,		/* ... it did: the frame is not written */
	PY_NATIVE,		/* ... it cut: the frame is written */
};
#define PY_USER_MAX		(1ULL << EMBER_IP_TAG_SHIFT)
/* py_state.cut after EMBER_PY_CUT_SHIFT: no cut, but no more Python */
#define PY_SHIFTED		2

/*
 * The user slots of a bound process's stack: its Python frames take two
 * each, on top of the native frames' ustack_max (deep imports and
 * frameworks run 40+ Python frames: at 127 slots their chains were cut
 * short of <module>), within a record's EMBER_MAX_FRAMES.
 */
static __always_inline __u32 py_ustack_max(__u32 slot)
{
	__u32 m = ustack_max + 2 * EMBER_MAX_PY_FRAMES;

	/* an off-CPU record waits in inflight, whose values hold ustack_max */
	if (slot == EMBER_SLOT_OFFCPU)
		return ustack_max;
	return m < EMBER_MAX_FRAMES ? m : EMBER_MAX_FRAMES;
}

/* Set by the loader once a process is bound: until then, no lookup. */
__u32 py_bound;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_MAX_PY_PROCS);	/* sized by the loader */
	__type(key, __u32);
	__type(value, struct ember_py_proc);
} py_procs SEC(".maps");

/* The Python part of one stack walk, per CPU and scratch slot. */
struct py_state {
	struct ember_py_proc p;	/* the process's, copied at the walk's start */
	__u64 frame;		/* the next frame of the chain to write */
	__u32 on;		/* the sample's process is bound */
	__u32 started;		/* the thread state has been read */
	__u32 cut;		/* the chain is cut: the rest stays native
				 * (PY_SHIFTED: over, the eval frame not
				 * written) */
	__u32 fresh;		/* the activation has read no frame yet */
	__u32 act_done;		/* the current activation is over */
	__u32 nframes;		/* Python frames written, all activations */
	__u32 n, base, max;	/* user slots written, where, how many */
	__u32 flags;		/* EMBER_SF_* found */
	__u32 fr_lo, fr_len;	/* the frame's span read: 8-aligned */
	__u32 co_lo, co_len;	/* the code object's: 4-aligned */
	__u32 ni, nn;		/* frame-pointer merge: next native, count */
	__u32 pending;		/* ... PY_PENDING etc. for native[ni] */
	__u32 cfi;		/* the walk is uw_frames(): its uw_state
				 * takes the activation's outcome */
	__u32 __pad;
	__u64 leaf_pc;		/* the leaf's PC when the first activation
				 * is the leaf's, else 0 */
	/*
	 * What proves the leaf's activation empty (py_shift()): where the
	 * first activation's owner keeps its frame state on the C stack
	 * (3.11: the thread state's _PyCFrame; 3.12+: its entry shim), and
	 * the stack pointer at the next eval-loop frame out (0: unknown, as
	 * in a frame-pointer walk).
	 */
	__u64 cframe, leaf_shim, sp2;
	__u64 fwin_base, cwin_base;	/* user addresses, or PY_WIN_NONE */
	__u64 fwin[PY_WIN / 8];		/* frames */
	__u32 cwin[PY_WIN / 4];		/* code objects */
	__u64 native[PY_FP_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_NR_SLOTS);
	__type(key, __u32);
	__type(value, struct py_state);
} py_state SEC(".maps");

static __always_inline __u32 py_min(__u32 a, __u32 b)
{
	return a < b ? a : b;
}

static __always_inline __u32 py_max(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

/*
 * Start the Python part of a walk (cfi: uw_frames()'s, else the
 * frame-pointer merge) for process tgid, whose user slots start at base
 * and may number py_ustack_max(slot) (the CFI walk's uw_state is told),
 * in py_state[slot]: 1, or 0 when the process is not bound. Callers test
 * py_bound first (the usual case: nothing bound, one .bss load). Global:
 * its map keys, and the room's sum, would take stack in every program.
 */
__noinline int py_begin(__u32 slot, __u32 tgid, __u32 base, __u32 cfi)
{
	__u32 max = py_ustack_max(slot);
	const struct ember_py_proc *proc;
	struct uw_state *w;
	struct py_state *ps;
	const struct ember_py_proc *p;
	__u32 lo, hi;

	proc = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!proc)
		return 0;
	ps = bpf_map_lookup_elem(&py_state, &slot);
	if (!ps)
		return 0;
	__builtin_memcpy(&ps->p, proc, sizeof(ps->p));
	p = &ps->p;
	ps->frame = 0;
	ps->on = 1;
	ps->started = 0;
	ps->cut = 0;
	ps->leaf_pc = 0;
	ps->fresh = 0;
	ps->cframe = 0;
	ps->leaf_shim = 0;
	ps->sp2 = 0;
	ps->act_done = 0;
	ps->nframes = 0;
	ps->n = 0;
	ps->base = base;
	ps->max = max;
	if (cfi) {
		w = bpf_map_lookup_elem(&uw_state, &slot);
		if (w)
			w->max = max;
	}
	ps->flags = 0;
	ps->cfi = cfi;
	ps->pending = 0;
	ps->fwin_base = PY_WIN_NONE;
	ps->cwin_base = PY_WIN_NONE;
	/* the spans: a layout wider than the buffers cuts at first use */
	lo = py_min(py_min(p->fr_code, p->fr_previous),
		    py_min(p->fr_instr, p->fr_owner)) & ~7U;
	hi = py_max(py_max(p->fr_code + 8, p->fr_previous + 8),
		    py_max(p->fr_instr + 8, p->fr_owner + 1));
	hi = (hi + 7) & ~7U;
	ps->fr_lo = lo;
	ps->fr_len = hi - lo;
	if ((p->fr_code | p->fr_previous | p->fr_instr) & 7)
		ps->fr_len = 0;
	lo = py_min(py_min(p->co_firstlineno, p->co_argcount), p->co_flags);
	hi = py_max(py_max(p->co_firstlineno, p->co_argcount), p->co_flags) + 4;
	ps->co_lo = lo;
	ps->co_len = hi - lo;
	if ((p->co_firstlineno | p->co_argcount | p->co_flags) & 3)
		ps->co_len = 0;
	return 1;
}

/* Whether pc (a caller's already taken back by one) is in the eval loop. */
static __always_inline bool py_in_eval(const struct py_state *ps, __u64 pc)
{
	return (pc >= ps->p.eval_start[0] && pc < ps->p.eval_end[0]) ||
	       (pc >= ps->p.eval_start[1] && pc < ps->p.eval_end[1]);
}

/* One user slot at the walk's position, when there is room for it. */
static __always_inline int py_put(struct py_state *ps, struct scratch *sc,
				  __u64 v)
{
	/* 64-bit: no truncation between the check and the store */
	__u64 idx = (__u64)ps->base + ps->n;

	if (ps->n >= ps->max || idx >= EMBER_BPF_SCRATCH_FRAMES)
		return -1;
	sc->raw[SCRATCH_IPS + idx] = v;
	ps->n++;
	return 0;
}

/*
 * The chain ends here: the marker (when a slot is left), the cut flag;
 * the rest of the stack is native. Returns 1 (the activation is over).
 */
static __always_inline int py_cut(struct py_state *ps, struct scratch *sc,
				  __u32 why)
{
	py_put(ps, sc, EMBER_IP_PY_CUT | why);
	ps->cut = 1;
	ps->act_done = 1;
	ps->flags |= EMBER_SF_USER_CUT;
	return 1;
}

/*
 * The chain ran out at an eval-loop frame after the leaf's activation
 * wrote frames. The leaf's loop was in its prologue or epilogue (uapi:
 * "The leaf's eval loop") when what owned that activation lives on the C
 * stack of an eval-loop frame further out (at or above sp2); a chain that
 * truly ends early (a greenlet's, another thread state's) has it in the
 * leaf's own frame, and is cut. The marker and the leaf's PC in place of
 * this frame; no more Python. Returns 1 (the activation is over).
 */
static __always_inline int py_shift(struct py_state *ps, struct scratch *sc)
{
	__u64 anchor = ps->p.entry_kind == EMBER_PY_ENTRY_SHIM ?
		       ps->leaf_shim : ps->cframe;

	if (ps->n + 2 > ps->max || !ps->sp2 || anchor < ps->sp2)
		return py_cut(ps, sc, EMBER_PY_CUT_ENTRY);
	py_put(ps, sc, EMBER_IP_PY_CUT | EMBER_PY_CUT_SHIFT);
	py_put(ps, sc, ps->leaf_pc);
	ps->cut = PY_SHIFTED;
	ps->act_done = 1;
	return 1;
}

/* The user thread pointer of the current task (arch.bpf.h). */
static __always_inline __u64 py_thread_pointer(void)
{
	struct task_struct *task = (void *)bpf_get_current_task();

	return arch_thread_pointer(task);
}

/*
 * The thread state's newest frame (include/uapi/ember.h): 0 when the
 * thread state or the frame cannot be read, or there is none.
 */
static __always_inline __u64 py_newest_frame(const struct ember_py_proc *p,
					     __u64 *cframe)
{
	__u64 tp = py_thread_pointer(), at, v = 0;
	__s32 key = -1;

	if (!tp)
		return 0;
	at = tp + p->tstate_off;
	if (p->tstate_kind == EMBER_PY_TS_TSD) {
		if (bpf_probe_read_user(&key, sizeof(key),
					(const void *)p->key_addr) ||
		    key < 0 || key >= PY_TSD_KEYS)
			return 0;
		at += (__u64)key * 16;
	} else if (p->tstate_kind != EMBER_PY_TS_TLS) {
		return 0;
	}
	/* the thread state */
	if (bpf_probe_read_user(&v, sizeof(v), (const void *)at) || !v)
		return 0;
	if (bpf_probe_read_user(&v, sizeof(v),
				(const void *)(v + (p->ts_frame[0] &
						   (EMBER_PY_MAX_OFFSET - 1)))))
		return 0;
	if (p->ts_frame_nr == 2)
		*cframe = v;
	if (p->ts_frame_nr == 2 && v &&
	    bpf_probe_read_user(&v, sizeof(v),
				(const void *)(v + (p->ts_frame[1] &
						   (EMBER_PY_MAX_OFFSET - 1)))))
		return 0;
	return v;
}

/*
 * Make [addr, addr + len) readable from a window (win, *base): the window
 * around it when it fits in one (read if not the one held), else the
 * bytes themselves at the window's start (*base then says where: addr).
 * 0, or -1 when unreadable.
 */
static __always_inline int py_window(void *win, __u64 *base, __u64 addr,
				     __u32 len)
{
	__u64 b = addr & ~((__u64)PY_WIN - 1);

	if (len > PY_FRAME_SPAN)
		return -1;
	if (addr + len <= b + PY_WIN) {
		if (b == *base)
			return 0;
		if (!bpf_probe_read_user(win, PY_WIN, (const void *)b)) {
			*base = b;
			return 0;
		}
	}
	/* across a window's end, or the window is not all readable */
	*base = PY_WIN_NONE;
	if (len < 4 || bpf_probe_read_user(win, len, (const void *)addr))
		return -1;
	*base = addr;
	return 0;
}

/* The pointer field at frame + off from the frame window (8-aligned). */
static __always_inline __u64 py_fr_u64(const struct py_state *ps,
				       __u64 frame, __u32 off)
{
	return ps->fwin[((frame + off - ps->fwin_base) / 8) & (PY_WIN / 8 - 1)];
}

static __always_inline __u32 py_co_u32(const struct py_state *ps,
				       __u64 code, __u32 off)
{
	return ps->cwin[((code + off - ps->cwin_base) / 4) & (PY_WIN / 4 - 1)];
}

/*
 * Up to PY_FRAMES_PER_CALL frames of the current activation into
 * scratch[slot]; 1 when the activation is over (its entry frame met, or
 * the chain cut).
 */
static __always_inline int py_walk(struct py_state *ps, struct scratch *sc)
{
	__u64 code, instr, off, frame;
	__u32 len, chk, o;
	bool entry;
	int i;

	if (ps->act_done)
		return 1;
	if (!ps->started) {
		ps->started = 1;
		ps->frame = py_newest_frame(&ps->p, &ps->cframe);
		if (!ps->frame)
			return py_cut(ps, sc, EMBER_PY_CUT_TSTATE);
		if (EMBER_PY_FLOOR == 1)
			return py_cut(ps, sc, EMBER_PY_CUT_DEPTH);
	}
	for (i = 0; i < PY_FRAMES_PER_CALL; i++) {
		frame = ps->frame;
		if (!frame && ps->fresh && ps->leaf_pc && ps->nframes)
			return py_shift(ps, sc);
		ps->fresh = 0;
		if (!frame || frame >= PY_USER_MAX || (frame & 7))
			return py_cut(ps, sc, frame ? EMBER_PY_CUT_FRAME :
						      EMBER_PY_CUT_ENTRY);
		/* two slots for the frame, one kept for a marker */
		if (ps->nframes >= EMBER_MAX_PY_FRAMES || ps->n + 3 > ps->max)
			return py_cut(ps, sc, EMBER_PY_CUT_DEPTH);
		len = ps->fr_len;
		if (len < 8 || py_window(ps->fwin, &ps->fwin_base,
					 frame + ps->fr_lo, len))
			return py_cut(ps, sc, EMBER_PY_CUT_FRAME);
		o = ps->p.fr_owner;
		entry = ((py_fr_u64(ps, frame, o & ~7U) >> ((o & 7) * 8)) &
			 0xff) == ps->p.entry_value;
		/* the loop's own shim frame (3.12+): not written, the end */
		if (entry && ps->p.entry_kind == EMBER_PY_ENTRY_SHIM) {
			if (ps->leaf_pc && !ps->leaf_shim)
				ps->leaf_shim = frame;
			ps->frame = py_fr_u64(ps, frame, ps->p.fr_previous);
			ps->act_done = 1;
			return 1;
		}
		code = py_fr_u64(ps, frame, ps->p.fr_code) &
		       ~ps->p.code_tag_mask;
		instr = py_fr_u64(ps, frame, ps->p.fr_instr);
		len = ps->co_len;
		if (!code || code >= PY_USER_MAX || (code & 3) || len < 4 ||
		    len > PY_CODE_SPAN ||
		    (EMBER_PY_FLOOR != 2 &&
		     py_window(ps->cwin, &ps->cwin_base, code + ps->co_lo, len)))
			return py_cut(ps, sc, EMBER_PY_CUT_FRAME);
		chk = EMBER_PY_FLOOR == 2 ? 0 :
		      EMBER_PY_CHECK(py_co_u32(ps, code, ps->p.co_firstlineno),
				     py_co_u32(ps, code, ps->p.co_argcount),
				     py_co_u32(ps, code, ps->p.co_flags));
		off = instr - code;
		if (instr < code || off > 0xfffffffeULL)
			off = EMBER_PY_NO_OFFSET;
		py_put(ps, sc, EMBER_IP_PY | code);
		py_put(ps, sc, (__u64)chk << 32 | off);
		ps->nframes++;
		ps->flags |= EMBER_SF_PYTHON;
		ps->frame = py_fr_u64(ps, frame, ps->p.fr_previous);
		if (entry) {	/* 3.11's is_entry frame: written, the end */
			ps->act_done = 1;
			return 1;
		}
	}
	return 0;
}

/*
 * The activation the walk in slot met, PY_FRAMES_PER_CALL frames a call:
 * PY_RET_ACTIVATION while it goes on, 0 when it is over, its outcome
 * left for the walk (py_state.pending; uw_state's py, n, flags for the
 * CFI walk): PY_REPLACED, or PY_NATIVE after a cut (the marker, then the
 * native frame). Global: checked once by the verifier.
 */
__noinline int py_frames(__u32 slot)
{
	struct py_state *ps = bpf_map_lookup_elem(&py_state, &slot);
	struct scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	struct uw_state *w;

	if (!ps || !sc)
		return 0;
	if (!py_walk(ps, sc))
		return PY_RET_ACTIVATION;
	ps->pending = ps->cut == 1 ? PY_NATIVE : PY_REPLACED;
	if (ps->cfi) {
		w = bpf_map_lookup_elem(&uw_state, &slot);
		if (w) {
			w->py = ps->pending;
			w->n = ps->n;
			w->flags |= ps->flags;
		}
	}
	return 0;
}

/*
 * The walk met an eval-loop frame: its activation is next (py_frames()
 * from the walk's loop), written from the walk's position n.
 */
static __always_inline void py_pending(struct py_state *ps, __u32 n,
				       __u32 max)
{
	ps->n = n;
	ps->max = max;
	ps->act_done = 0;
	ps->fresh = 1;
}

/*
 * The native walk is over short of the outermost frame (uapi: "When the
 * native walk stops short"): the next activation left in the chain gets
 * an EMBER_PY_CUT_NATIVE marker and PY_RET_ACTIVATION (the walk's loop
 * runs py_frames() for it, then calls here again); 1 when none is left.
 * cfi: the walk is uw_frames()' (its uw_state holds n and the verdict),
 * else the frame-pointer merge's (ps->n; any activation left means the
 * frame pointers missed its eval-loop frame). Global: checked once.
 */
__noinline int py_rest(__u32 slot, __u32 cfi)
{
	struct py_state *ps = bpf_map_lookup_elem(&py_state, &slot);
	struct scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	struct uw_state *w = NULL;

	if (!ps || !sc || !ps->on || ps->cut)
		return 1;
	if (cfi) {
		w = bpf_map_lookup_elem(&uw_state, &slot);
		/* PY_OFF: ps is another process's, left from an earlier walk */
		if (!w || w->py == PY_OFF ||
		    (w->flags & (EMBER_SF_USER_COMPLETE | EMBER_SF_USER_TRUNC)))
			return 1;
		ps->n = w->n;
		ps->max = w->max;
	} else if (ps->flags & EMBER_SF_USER_TRUNC) {
		return 1;
	}
	if (!ps->started) {
		/* no activation met: the whole chain is left, if any */
		ps->started = 1;
		ps->frame = py_newest_frame(&ps->p, &ps->cframe);
	} else if (!ps->act_done) {
		return 1;
	}
	/* the marker and one frame's two slots, or nothing */
	if (!ps->frame || ps->n + 3 > ps->max)
		return 1;
	py_put(ps, sc, EMBER_IP_PY_CUT | EMBER_PY_CUT_NATIVE);
	ps->act_done = 0;
	ps->flags |= EMBER_SF_USER_CUT;
	if (w) {
		w->n = ps->n;
		w->flags |= EMBER_SF_USER_CUT;
	}
	return PY_RET_ACTIVATION;
}

/*
 * The frame-pointer path: native[] (bpf_get_stack's answer, ps->nn
 * frames) merged into scratch[slot] up to PY_FP_PER_CALL natives per
 * call, each one in the eval loop replaced by its activation: it returns
 * PY_RET_ACTIVATION there, its caller runs py_frames() to the end of the
 * activation and calls again. 1 when done.
 */
__noinline int py_merge_fp(__u32 slot)
{
	struct py_state *ps = bpf_map_lookup_elem(&py_state, &slot);
	struct scratch *sc = bpf_map_lookup_elem(&scratch, &slot);
	__u64 pc;
	__u32 ni;
	int i;

	if (!ps || !sc)
		return 1;
	for (i = 0; i < PY_FP_PER_CALL; i++) {
		ni = ps->ni;
		if (ni >= ps->nn || ni >= PY_FP_FRAMES)
			return 1;
		if (ps->n >= ps->max) {
			ps->flags |= EMBER_SF_USER_TRUNC;
			return 1;
		}
		/* the check above on the same register as the index (clang
		 * would drop a mask it can prove redundant) */
		asm volatile("" : "+r"(ni));
		pc = ps->native[ni & (PY_FP_FRAMES - 1)];
		if (ps->pending == PY_REPLACED) {
			ps->pending = 0;
			ps->ni = ni + 1;
			continue;
		}
		/* the first frame is the exact PC, the others return to */
		if (ps->pending != PY_NATIVE && !ps->cut &&
		    py_in_eval(ps, ni ? pc - 1 : pc)) {
			ps->pending = PY_PENDING;
			py_pending(ps, ps->n, ps->max);
			if (!ni)
				ps->leaf_pc = pc;
			return PY_RET_ACTIVATION;
		}
		ps->pending = 0;
		ps->ni = ni + 1;
		if (py_put(ps, sc, pc))
			return 1;
	}
	return 0;
}

#endif /* EMBER_PYTHON_BPF_H */
