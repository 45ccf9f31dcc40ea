// SPDX-License-Identifier: GPL-2.0
/*
 * CPython frames in user stacks (include/uapi/ember.h, "Python frames").
 * The user unwinder (unwind_user.c) calls ember_py_activation() for each
 * native frame whose PC lies in the interpreter loop of a bound process;
 * the Python frames that activation runs are written in its place, leaf
 * first, two slots each, and the chain position is kept in the walk state
 * for the next activation further out.
 *
 * Everything read comes from user memory the process can rewrite at any
 * moment, so: nofault reads with page faults disabled (the user
 * unwinder's own primitive, copy_from_user_nofault()), every address
 * checked against the user range first, a bounded number of frames per
 * sample (EMBER_MAX_PY_FRAMES and the stack's own limit), and a chain
 * that cannot be read or does not end where it must ends with an
 * EMBER_IP_PY_CUT marker and EMBER_SF_USER_CUT: never a made-up frame.
 * A cut ends the Python part of the sample; the native walk goes on, and
 * activations further out keep their native eval-loop frame. A native
 * walk cut short with activations left gets them after it
 * (ember_py_rest()).
 */
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "ember_kmod.h"
#include "arch.h"

enum {
	EMBER_PY_START = 0,	/* no activation met yet */
	EMBER_PY_GOING,		/* w->frame: the next activation's newest */
	EMBER_PY_DONE,		/* cut, or the outermost entry passed */
};

static int ember_py_read(u64 addr, void *dst, unsigned int len)
{
	if (!addr || addr > TASK_SIZE_MAX - len)
		return -EFAULT;
	return copy_from_user_nofault(dst, (const void __user *)addr, len) ?
	       -EFAULT : 0;
}

static int ember_py_read_ptr(u64 addr, u64 *val)
{
	if (addr & 7)
		return -EFAULT;
	return ember_py_read(addr, val, sizeof(*val));
}

/*
 * The members of one object: one read of the window that holds them all
 * when it is at most EMBER_PY_WINDOW bytes (every CPython layout so far),
 * else one read per member.
 */
struct ember_py_obj {
	u64 base;
	u16 lo;
	bool win;
	u8 buf[EMBER_PY_WINDOW];
};

static int ember_py_obj_read(struct ember_py_obj *o, u64 base, u16 lo,
			     u16 len)
{
	o->base = base;
	o->lo = lo;
	o->win = len <= sizeof(o->buf);
	return o->win ? ember_py_read(base + lo, o->buf, len) : 0;
}

static int ember_py_get(const struct ember_py_obj *o, u16 off, void *dst,
			unsigned int size)
{
	if (!o->win)
		return ember_py_read(o->base + off, dst, size);
	memcpy(dst, o->buf + (off - o->lo), size);
	return 0;
}

/*
 * The newest frame from the thread state, or 0; *cframe: the _PyCFrame
 * it went through (3.11, 3.12), else left as it was.
 */
static u64 ember_py_newest(const struct ember_py_proc *p, u64 *cframe)
{
	u64 tp = ember_user_tp(), addr, tstate, frame;
	s32 key;

	if (!tp)
		return 0;
	addr = tp + (u64)p->tstate_off;
	if (p->tstate_kind == EMBER_PY_TS_TSD) {
		/* glibc's pthread_getspecific() for a key of its first block */
		if (ember_py_read(p->key_addr, &key, sizeof(key)) ||
		    key < 0 || key >= 32)
			return 0;
		addr += (u64)key * 16;
	}
	if (ember_py_read_ptr(addr, &tstate) || !tstate ||
	    ember_py_read_ptr(tstate + p->ts_frame[0], &frame))
		return 0;
	if (p->ts_frame_nr == 2)
		*cframe = frame;
	if (p->ts_frame_nr == 2 && frame &&
	    ember_py_read_ptr(frame + p->ts_frame[1], &frame))
		return 0;
	return frame;
}

/* Ends the Python part of the sample with a marker, if it fits. */
static unsigned int ember_py_cut(struct ember_py_walk *w, u64 why, u64 *ips,
				 unsigned int n, unsigned int max, u16 *flags)
{
	w->state = EMBER_PY_DONE;
	*flags |= EMBER_SF_USER_CUT;
	if (n < max)
		ips[n++] = EMBER_IP_PY_CUT | why;
	return n;
}

/*
 * One Python frame at frame: its two slots into ips[0..1] unless it is
 * the loop's own shim (*shim). -EFAULT when the frame or its code cannot
 * be read; *prev and *entry say how the chain goes on.
 */
static int ember_py_frame(const struct ember_py_info *in, u64 frame,
			  u64 *ips, u64 *prev, bool *entry, bool *shim)
{
	const struct ember_py_proc *p = &in->p;
	struct ember_py_obj o;
	s32 first, argc, cflags;
	u64 code, instr, off;
	u8 owner;

	if ((frame & 7) || ember_py_obj_read(&o, frame, in->fr_lo, in->fr_len) ||
	    ember_py_get(&o, p->fr_previous, prev, sizeof(*prev)) ||
	    ember_py_get(&o, p->fr_code, &code, sizeof(code)) ||
	    ember_py_get(&o, p->fr_instr, &instr, sizeof(instr)) ||
	    ember_py_get(&o, p->fr_owner, &owner, sizeof(owner)))
		return -EFAULT;
	*entry = owner == p->entry_value;
	*shim = *entry && p->entry_kind == EMBER_PY_ENTRY_SHIM;
	if (*shim)
		return 0;	/* the loop's own frame: not written */
	code &= ~p->code_tag_mask;
	if (!code || (code & 7) || code >= TASK_SIZE_MAX ||
	    ember_py_obj_read(&o, code, in->co_lo, in->co_len) ||
	    ember_py_get(&o, p->co_firstlineno, &first, sizeof(first)) ||
	    ember_py_get(&o, p->co_argcount, &argc, sizeof(argc)) ||
	    ember_py_get(&o, p->co_flags, &cflags, sizeof(cflags)))
		return -EFAULT;
	off = instr - code;
	if (instr < code || off > U32_MAX)
		off = EMBER_PY_NO_OFFSET;
	ips[0] = EMBER_IP_PY | code;
	ips[1] = (u64)EMBER_PY_CHECK(first, argc, cflags) << 32 | off;
	return 0;
}

/*
 * One activation from w->frame, to its entry frame, into ips[n..max):
 * the new n (a shim alone writes nothing).
 */
static unsigned int ember_py_run(struct ember_py_walk *w, u64 *ips,
				 unsigned int n, unsigned int max, u16 *flags)
{
	const struct ember_py_info *in = w->py;
	u64 frame, prev, anchor;
	bool entry, shim;

	frame = w->frame;
	/*
	 * None left for this eval-loop frame although the leaf's activation
	 * wrote frames: those were this one's (uapi: "The leaf's eval loop")
	 * when what owned them lives on the C stack of an eval-loop frame
	 * further out (at or above sp2). A chain that truly ends early (a
	 * greenlet's, another thread state's) has it in the leaf's own
	 * frame, and is cut.
	 */
	anchor = in->p.entry_kind == EMBER_PY_ENTRY_SHIM ? w->leaf_shim :
							   w->cframe;
	if (!frame && w->leaf_pc && w->nr && n + 2 <= max && w->sp2 &&
	    anchor >= w->sp2) {
		w->state = EMBER_PY_DONE;
		ips[n++] = EMBER_IP_PY_CUT | EMBER_PY_CUT_SHIFT;
		ips[n++] = w->leaf_pc;
		return n;
	}
	for (;;) {
		if (!frame)
			/* the previous activation's entry was the outermost */
			return ember_py_cut(w, EMBER_PY_CUT_ENTRY, ips, n, max,
					    flags);
		if (w->nr >= EMBER_MAX_PY_FRAMES || n + 2 > max) {
			if (n + 2 > max)
				*flags |= EMBER_SF_USER_TRUNC;
			return ember_py_cut(w, EMBER_PY_CUT_DEPTH, ips, n, max,
					    flags);
		}
		if (ember_py_frame(in, frame, ips + n, &prev, &entry, &shim))
			return ember_py_cut(w, EMBER_PY_CUT_FRAME, ips, n, max,
					    flags);
		if (!shim) {
			n += 2;
			w->nr++;
			*flags |= EMBER_SF_PYTHON;
		} else if (w->leaf_pc && !w->leaf_shim) {
			w->leaf_shim = frame;
		}
		if (entry) {
			w->frame = prev;
			break;
		}
		/* a frame that is its own caller: rewritten under us */
		if (prev == frame)
			return ember_py_cut(w, EMBER_PY_CUT_FRAME, ips, n, max,
					    flags);
		frame = prev;
	}
	return n;
}

/*
 * The native walk met a frame at pc (a lookup PC: a return address less
 * one) with ips[0..n) written and room up to max. When pc is in the eval
 * loop of a bound process, writes that activation's Python frames (or
 * where the chain was cut) and returns the new n; otherwise, or when
 * there is nothing to write, returns n and the caller writes the native
 * frame.
 */
unsigned int ember_py_activation(struct ember_py_walk *w, u64 pc, u64 sp,
				 u64 *ips, unsigned int n, unsigned int max,
				 u16 *flags)
{
	const struct ember_py_info *in = w->py;

	if (!in || w->state == EMBER_PY_DONE ||
	    !((pc >= in->p.eval_start[0] && pc < in->p.eval_end[0]) ||
	      (pc >= in->p.eval_start[1] && pc < in->p.eval_end[1])))
		return n;
	if (w->state == EMBER_PY_START) {
		w->state = EMBER_PY_GOING;
		w->frame = ember_py_newest(&in->p, &w->cframe);
		if (!w->frame)
			return ember_py_cut(w, EMBER_PY_CUT_TSTATE, ips, n, max,
					    flags);
		/* the leaf's own activation: it may be empty (see run) */
		if (!n)
			w->leaf_pc = pc;
	} else if (!w->sp2) {
		w->sp2 = sp;	/* the first eval-loop frame out of the leaf */
	}
	return ember_py_run(w, ips, n, max, flags);
}

/*
 * The native walk stopped short of the outermost frame (cut, or frame
 * pointers that end) with ips[0..n) written: the activations left in the
 * chain go after it, each after an EMBER_PY_CUT_NATIVE marker (uapi:
 * "When the native walk stops short"), so a sample in code not bound yet
 * keeps its Python callers. Returns the new n.
 */
unsigned int ember_py_rest(struct ember_py_walk *w, u64 *ips, unsigned int n,
			   unsigned int max, u16 *flags)
{
	unsigned int i;

	if (!w->py || w->state == EMBER_PY_DONE ||
	    (*flags & (EMBER_SF_USER_COMPLETE | EMBER_SF_USER_TRUNC)))
		return n;
	if (w->state == EMBER_PY_START) {
		/* no activation met: the whole chain is left, if any */
		w->state = EMBER_PY_GOING;
		w->frame = ember_py_newest(&w->py->p, &w->cframe);
	}
	/* each activation writes a frame or ends the walk, but a shim alone */
	for (i = 0; i <= EMBER_MAX_PY_FRAMES; i++) {
		/* the marker and one frame's two slots, or nothing */
		if (w->state != EMBER_PY_GOING || !w->frame || n + 3 > max)
			break;
		ips[n++] = EMBER_IP_PY_CUT | EMBER_PY_CUT_NATIVE;
		*flags |= EMBER_SF_USER_CUT;
		n = ember_py_run(w, ips, n, max, flags);
	}
	return n;
}
