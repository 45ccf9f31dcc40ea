// SPDX-License-Identifier: GPL-2.0-only
/*
 * Python activations put back into a replayed stack (python.h,
 * py_splice()). A sample whose native walk was cut keeps its Python
 * frames (include/uapi/ember.h, "When the native walk stops short"); the
 * stack replay later unwinds the sample's stack copy natively, and each
 * eval-loop frame of that unwinding gets its activation back, in order.
 * Nothing is placed by guess: any doubt about which activation belongs
 * to which eval-loop frame refuses the splice, and the caller keeps the
 * walk as it was (with its [cut]).
 */
#include <string.h>

#include "python/python.h"

struct py_group {
	int at, len;	/* slots of the walk; len 0: the activation was empty */
};

#define PY_MAX_GROUPS	(EMBER_MAX_PY_FRAMES + 2)

static bool in_eval(const struct py_eval_ranges *ev, uint64_t pc)
{
	for (int i = 0; i < 2; i++)
		if (pc >= ev->start[i] && pc < ev->end[i])
			return true;
	return false;
}

/* The lookup PC of frame i: the first is exact, the others return. */
static uint64_t lookup_pc(const uint64_t *v, int i)
{
	return i ? v[i] - 1 : v[i];
}

/*
 * The walk's activations, leaf first: runs of Python slots (a native
 * frame between two), and each EMBER_PY_CUT_NATIVE marker's. -1 when the
 * walk cannot be matched: a Python cut, a slot pair cut in half, or an
 * eval-loop frame the walk left native (an activation that wrote nothing
 * or was lost: which one is not known).
 */
static int walk_groups(const struct py_eval_ranges *ev, const uint64_t *w,
		       int nw, struct py_group *g)
{
	bool open = false;
	int ng = 0;

	for (int i = 0; i < nw; i++) {
		uint64_t tag = EMBER_IP_TAG(w[i]);

		if (tag == EMBER_IP_TAG(EMBER_IP_PY)) {
			if (i + 1 >= nw)
				return -1;
			if (!open) {
				if (ng == PY_MAX_GROUPS)
					return -1;
				g[ng++] = (struct py_group){ .at = i };
				open = true;
			}
			g[ng - 1].len += 2;
			i++;
		} else if (tag == EMBER_IP_TAG(EMBER_IP_PY_CUT)) {
			if (w[i] != (EMBER_IP_PY_CUT | EMBER_PY_CUT_NATIVE) ||
			    ng == PY_MAX_GROUPS)
				return -1;
			g[ng++] = (struct py_group){ .at = i + 1 };
			open = true;
		} else if (in_eval(ev, lookup_pc(w, i))) {
			return -1;
		} else {
			open = false;
		}
	}
	return ng;
}

int py_splice(const struct py_eval_ranges *ev, const uint64_t *w, int nw,
	      const uint64_t *o, int no, uint64_t *out, int max)
{
	struct py_group g[PY_MAX_GROUPS];
	int ng = walk_groups(ev, w, nw, g), nev = 0, n = 0, k = 0;

	if (ng < 0 || no < 1 || nw < 1)
		return -1;
	for (int j = 0; j < no; j++)
		nev += in_eval(ev, lookup_pc(o, j));
	/* one activation per eval-loop frame, or the order is not known */
	if (nev != ng)
		return -1;
	for (int j = 0; j < no; j++) {
		if (!in_eval(ev, lookup_pc(o, j)) || !g[k].len) {
			k += in_eval(ev, lookup_pc(o, j));
			if (n == max)
				return -1;
			out[n++] = o[j];
			continue;
		}
		if (g[k].len > max - n)
			return -1;
		memcpy(out + n, w + g[k].at, (size_t)g[k].len * sizeof(*out));
		n += g[k].len;
		k++;
	}
	/* the same sample: its first frame (native or Python) is the walk's */
	return out[0] == w[0] ? n : -1;
}

/*
 * The walk's activations moved one eval-loop frame out (uapi: "The
 * leaf's eval loop"): w[at] is the EMBER_PY_CUT_SHIFT marker, w[at + 1]
 * the leaf's PC. Before it the walk alternates an activation (a run of
 * Python slot pairs, the first at the leaf) and the native frames after
 * it; each activation goes past its natives, the leaf's PC first. -1
 * when the walk is not that shape.
 */
static int unshift(const uint64_t *w, int nw, int at, uint64_t *out)
{
	int n = 0, i = 0;

	if (at + 1 >= nw || EMBER_IP_TAG(w[0]) != EMBER_IP_TAG(EMBER_IP_PY))
		return -1;
	out[n++] = w[at + 1];
	while (i < at) {
		int py = i, nat;

		while (i + 1 < at && EMBER_IP_TAG(w[i]) == EMBER_IP_TAG(EMBER_IP_PY))
			i += 2;
		nat = i;
		while (i < at && !EMBER_IP_TAG(w[i]))
			i++;
		/* a run of each, or a slot that is neither */
		if (nat == py || (i < at && EMBER_IP_TAG(w[i]) !=
				  EMBER_IP_TAG(EMBER_IP_PY)))
			return -1;
		memcpy(out + n, w + nat, (size_t)(i - nat) * sizeof(*out));
		n += i - nat;
		memcpy(out + n, w + py, (size_t)(nat - py) * sizeof(*out));
		n += nat - py;
	}
	memcpy(out + n, w + at + 2, (size_t)(nw - at - 2) * sizeof(*out));
	return n + nw - at - 2;
}

/*
 * An eval-loop frame among w[from..nw): more than the leaf's activation
 * is missing from the chain, and which is not known.
 */
static bool eval_after(const struct py_eval_ranges *ev, const uint64_t *w,
		       int nw, int from)
{
	for (int i = from; ev && i < nw; i++)
		if (!EMBER_IP_TAG(w[i]) && in_eval(ev, w[i] - 1))
			return true;
	return false;
}

int py_shift_at(const uint64_t *w, int nw)
{
	for (int i = 0; i < nw; i++) {
		if (EMBER_IP_TAG(w[i]) == EMBER_IP_TAG(EMBER_IP_PY)) {
			i++;
			continue;
		}
		if (w[i] == (EMBER_IP_PY_CUT | EMBER_PY_CUT_SHIFT))
			return i;
	}
	return -1;
}

int py_unshift(const uint64_t *w, int nw, uint64_t *out,
	       const struct py_eval_ranges *ev, bool *cut)
{
	int at = py_shift_at(w, nw), n;

	*cut = false;
	if (at < 0)
		return -1;
	n = eval_after(ev, w, nw, at + 2) ? -1 : unshift(w, nw, at, out);
	if (n >= 0)
		return n;
	*cut = true;
	/* not that shape: an honest end of the chain, the PC dropped */
	memcpy(out, w, (size_t)at * sizeof(*out));
	out[at] = EMBER_IP_PY_CUT | EMBER_PY_CUT_ENTRY;
	n = nw - at - 2;
	if (n > 0)
		memcpy(out + at + 1, w + at + 2, (size_t)n * sizeof(*out));
	return at + 1 + (n > 0 ? n : 0);
}
