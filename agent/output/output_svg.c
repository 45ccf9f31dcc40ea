// SPDX-License-Identifier: GPL-2.0-only
/*
 * SVG writer: a self-contained interactive flame graph. The file carries its
 * own script and style (agent/output/flamegraph/, embedded at build time) and
 * fetches nothing, so it opens offline in any browser; without script it is
 * still a complete static picture.
 *
 * The graph is the prefix tree of all stacks, root at the bottom:
 *   all -> comm -> [cpu]/[offcpu]/[faults] (only when several were
 *   recorded) -> root
 *   frame ... -> leaf frame
 * Identical frame names along the same path merge into one box whose width
 * is its value. Siblings are ordered by name, as flamegraph.pl does, so two
 * profiles of the same program look alike.
 *
 * Values follow the folded writer's rule: sample counts when only on-CPU
 * was recorded; microseconds as soon as off-CPU is included (on-CPU samples
 * then weigh their sampling period, off-CPU intervals their blocked time).
 * Page faults (-e faults) weigh bytes of memory first touched (faults x
 * page size), under a "[faults]" box when another event is there too.
 *
 * Boxes narrower than 1/PRUNE_DIVISOR (0.1%) of the total are not drawn:
 * their time stays in their parent's width. This bounds the file for huge
 * profiles (at most PRUNE_DIVISOR boxes per level) and the graph says how
 * many boxes were left out.
 *
 * Frame names come from arbitrary binaries: everything written is XML
 * escaped, control characters and invalid UTF-8 are replaced.
 *
 * Returns 0, or a negative errno (-ENOMEM, -EIO).
 *
 * One file: one writer behind one entry point, output_svg(); the prefix
 * tree, its layout and its text are private to it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/array.h"
#include "output/event_frame.h"
#include "lib/hash_index.h"
#include "output/output.h"
#include "output/flamegraph/assets.h"

#define PRUNE_DIVISOR	1000	/* boxes under total/1000 (0.1%) are not drawn */
#define IMAGE_WIDTH	1200
#define X_PAD		10
#define FRAME_HEIGHT	16
#define HEADER_HEIGHT	100	/* title, subtitle, note, warnings, buttons */
#define FOOTER_HEIGHT	34	/* details line */
#define FONT_SIZE	12
#define CHAR_WIDTH	7.22	/* monospace at FONT_SIZE: 0.6 em + rounding */

enum node_kind {
	NODE_KERNEL = PROF_FRAME_KERNEL,
	NODE_NATIVE = PROF_FRAME_NATIVE,
	NODE_JIT = PROF_FRAME_JIT,
	NODE_UNKNOWN = PROF_FRAME_UNKNOWN,
	NODE_PYTHON = PROF_FRAME_PYTHON,
	NODE_META,		/* all, comm, [cpu]/[offcpu] */
};

/* Said in each box's tooltip after its value. */
static const char *const kind_text[] = {
	[NODE_KERNEL] = " \xc2\xb7 kernel", [NODE_NATIVE] = " \xc2\xb7 user",
	[NODE_JIT] = " \xc2\xb7 JIT", [NODE_UNKNOWN] = " \xc2\xb7 unresolved",
	[NODE_PYTHON] = " \xc2\xb7 Python",
	[NODE_META] = "",
};

static const char *const kind_class[] = {
	[NODE_KERNEL] = "k", [NODE_NATIVE] = "n", [NODE_JIT] = "j",
	[NODE_UNKNOWN] = "u", [NODE_PYTHON] = "p", [NODE_META] = "m",
};

struct node {
	uint32_t name;		/* string number */
	uint32_t parent;
	uint32_t first_child, next_sibling;	/* 0 = none (node 0 is the root) */
	uint32_t depth;
	uint8_t kind;
	bool inlined;		/* first frame merged here was an inline frame */
	bool drawn;
	uint64_t value;
};

struct tree {
	const struct profile *prof;
	uint32_t events;	/* recorded (meta) or seen in samples */
	bool microseconds;	/* values in ns shown as us; else counts */
	bool bytes;		/* page faults only: values are bytes */
	bool several;		/* more than one event: a box per event */

	char **names;
	size_t nr_names, cap_names;
	struct hash_index name_ix;	/* string -> string number */

	struct node *nodes;
	size_t nr_nodes, cap_nodes;
	struct hash_index child_ix;	/* (parent, name) -> node number */
};

static bool name_eq(void *ctx, uint32_t entry, const void *key)
{
	const struct tree *t = ctx;

	return !strcmp(t->names[entry], key);
}

/*
 * String number of s. Labels are copied: prof_frame_label() may format into
 * a buffer it reuses.
 */
static int64_t intern(struct tree *t, const char *s)
{
	uint64_t h = hash_bytes(s, strlen(s));
	int64_t found = hash_index_find(&t->name_ix, h, s, name_eq, t);

	if (found >= 0)
		return found;
	if (array_grow(&t->names, &t->cap_names, t->nr_names + 1, sizeof(char *)))
		return -ENOMEM;
	t->names[t->nr_names] = strdup(s);
	if (!t->names[t->nr_names])
		return -ENOMEM;
	/* Counted only once indexed: tree_free() frees nr_names strings. */
	if (hash_index_add(&t->name_ix, h, t->nr_names)) {
		free(t->names[t->nr_names]);
		return -ENOMEM;
	}
	return t->nr_names++;
}

static uint64_t child_hash(uint32_t parent, uint32_t name)
{
	uint64_t k = (uint64_t)parent << 32 | name;

	return hash_bytes(&k, sizeof(k));
}

struct child_key {
	uint32_t parent, name;
};

static bool child_eq(void *ctx, uint32_t entry, const void *key)
{
	const struct tree *t = ctx;
	const struct child_key *k = key;

	return t->nodes[entry].parent == k->parent && t->nodes[entry].name == k->name;
}

/* The child of parent named name (created if new), or -ENOMEM. */
static int64_t child(struct tree *t, uint32_t parent, const char *label, enum node_kind kind,
		     bool inlined)
{
	int64_t name = intern(t, label);
	struct child_key key = { .parent = parent };
	struct node *n;
	uint64_t h;
	int64_t found;

	if (name < 0)
		return name;
	key.name = name;
	h = child_hash(parent, name);
	found = hash_index_find(&t->child_ix, h, &key, child_eq, t);
	if (found >= 0)
		return found;
	if (t->nr_nodes >= UINT32_MAX - 1 ||
	    array_grow(&t->nodes, &t->cap_nodes, t->nr_nodes + 1, sizeof(*t->nodes)) ||
	    hash_index_add(&t->child_ix, h, t->nr_nodes))
		return -ENOMEM;
	n = &t->nodes[t->nr_nodes];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->parent = parent;
	n->kind = kind;
	n->inlined = inlined;
	n->depth = t->nodes[parent].depth + 1;
	n->next_sibling = t->nodes[parent].first_child;
	t->nodes[parent].first_child = t->nr_nodes;
	return t->nr_nodes++;
}

static uint64_t sample_value(const struct tree *t, const struct prof_sample *s)
{
	if (s->event == PROF_EV_FAULTS || s->event == PROF_EV_ALLOC ||
	    s->event == PROF_EV_INUSE)
		return s->weight_ns;	/* bytes */
	return t->microseconds ? s->weight_ns : s->count;
}

static int add_sample(struct tree *t, const struct prof_sample *s)
{
	bool both = t->several;
	uint64_t v = sample_value(t, s);
	const char *comm = s->process && s->process->comm ? s->process->comm : "[unknown]";
	int64_t at;

	char group[PROF_GROUP_NAME_MAX];

	t->nodes[0].value += v;
	at = 0;
	if (t->prof->meta.group_by == PROF_GROUP_CONTAINER) {
		at = child(t, at, prof_group_name(s->process, group, sizeof(group)),
			   NODE_META, false);
		if (at >= 0)
			t->nodes[at].value += v;
	}
	if (at >= 0 && t->prof->meta.group_by != PROF_GROUP_NONE) {
		at = child(t, at, comm, NODE_META, false);
		if (at >= 0)
			t->nodes[at].value += v;
	}
	if (at >= 0 && both) {
		at = child(t, at, event_frame(s->event), NODE_META, false);
		if (at >= 0)
			t->nodes[at].value += v;
	}
	/* frames[] is leaf first: walk from the outermost caller down */
	for (uint32_t i = s->nr_frames; i-- > 0 && at >= 0;) {
		const struct prof_frame *f = s->frames[i];
		const char *label = f ? prof_frame_label(t->prof, f) : NULL;
		unsigned int kind = f ? f->kind : PROF_FRAME_UNKNOWN;

		if (kind > PROF_FRAME_PYTHON)
			kind = PROF_FRAME_UNKNOWN;
		/* a lock wait's [lock ...] and [waker COMM] are ember's own */
		if (s->event == PROF_EV_LOCK && f && kind == PROF_FRAME_UNKNOWN &&
		    !f->module && label && label[0] == '[')
			kind = NODE_META;
		at = child(t, at, label ? label : "[unknown]", kind, f && f->inlined);
		if (at >= 0)
			t->nodes[at].value += v;
	}
	/* --off-cpu-state: how the thread waited, as the leaf */
	if (at >= 0 && s->event == PROF_EV_OFFCPU &&
	    t->prof->meta.offcpu_state_frames &&
	    prof_offcpu_state_name(s->offcpu_state)) {
		char box[32];

		snprintf(box, sizeof(box), "[%s]",
			 prof_offcpu_state_name(s->offcpu_state));
		at = child(t, at, box, NODE_META, false);
		if (at >= 0)
			t->nodes[at].value += v;
	}
	return at < 0 ? -ENOMEM : 0;
}

static void tree_free(struct tree *t)
{
	for (size_t i = 0; i < t->nr_names; i++)
		free(t->names[i]);
	free(t->names);
	hash_index_free(&t->name_ix);
	free(t->nodes);
	hash_index_free(&t->child_ix);
}

static int build_tree(struct tree *t, const struct profile *p)
{
	memset(t, 0, sizeof(*t));
	t->prof = p;
	/* Like the folded writer: an event counts if recorded or present. */
	t->events = p->meta.events;
	for (size_t i = 0; i < p->nr_samples; i++)
		if (p->samples[i].event < PROF_EV__COUNT)
			t->events |= 1u << p->samples[i].event;
	t->microseconds = (t->events & (1u << PROF_EV_OFFCPU |
					1u << PROF_EV_LOCK)) != 0;
	t->events &= (1u << PROF_EV__COUNT) - 1;
	/* only byte-weighed events: the widths are bytes */
	t->bytes = t->events && !(t->events & ~(1u << PROF_EV_FAULTS |
						 1u << PROF_EV_ALLOC |
						 1u << PROF_EV_INUSE));
	t->several = (t->events & (t->events - 1)) != 0;
	if (array_grow(&t->nodes, &t->cap_nodes, 1, sizeof(*t->nodes)) || intern(t, "all") < 0)
		return -ENOMEM;
	memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
	t->nodes[0].kind = NODE_META;
	t->nr_nodes = 1;
	for (size_t i = 0; i < p->nr_samples; i++)
		if (add_sample(t, &p->samples[i]))
			return -ENOMEM;
	return 0;
}

/*
 * Decide which boxes are drawn. Parents come before children in nodes[], so
 * one pass suffices. Returns the deepest drawn level; *pruned counts the
 * boxes left out at the top of each pruned subtree.
 */
static uint32_t mark_drawn(struct tree *t, size_t *pruned)
{
	uint64_t total = t->nodes[0].value;
	/* value >= total / PRUNE_DIVISOR, rounded up; no overflow */
	uint64_t min_value = (total + PRUNE_DIVISOR - 1) / PRUNE_DIVISOR;
	uint32_t max_depth = 0;

	*pruned = 0;
	t->nodes[0].drawn = true;
	for (size_t i = 1; i < t->nr_nodes; i++) {
		struct node *n = &t->nodes[i];

		if (!t->nodes[n->parent].drawn)
			continue;
		n->drawn = n->value > 0 && n->value >= min_value;
		if (!n->drawn) {
			(*pruned)++;
			continue;
		}
		if (n->depth > max_depth)
			max_depth = n->depth;
	}
	return max_depth;
}

/* ---- text output ---- */

/*
 * Decode one UTF-8 character of s (NUL-terminated). Returns its length, or
 * 0 when the bytes are not valid UTF-8 (overlong, surrogate, > U+10FFFF,
 * truncated), and stores the code point.
 */
static int utf8_decode(const unsigned char *s, uint32_t *cp)
{
	int len;
	uint32_t c = s[0], min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;	/* also stops at the NUL */
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/*
 * Write s as XML character data (valid in text and in attribute values), at
 * most max_chars characters (0 = all); a cut name ends in "..". XML 1.0
 * forbids control characters and U+FFFE/U+FFFF even as references, and a
 * browser refuses a whole SVG with one invalid UTF-8 byte: those become
 * U+FFFD.
 */
static void put_xml(FILE *out, const char *str, size_t max_chars)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t total = 0, shown = 0;
	uint32_t cp;

	if (max_chars) {
		for (const unsigned char *q = s; *q; total++) {
			int n = utf8_decode(q, &cp);

			q += n ? n : 1;
		}
		if (total > max_chars)
			max_chars = max_chars > 2 ? max_chars - 2 : 0;
		else
			max_chars = 0;
	}
	while (*s) {
		int n = utf8_decode(s, &cp);

		if (max_chars && shown == max_chars) {
			fputs("..", out);
			return;
		}
		shown++;
		if (!n) {
			fputs("\xef\xbf\xbd", out);
			s++;
			continue;
		}
		switch (cp) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default:
			if ((cp < 0x20 && cp != '\t') || cp == 0x7f || cp == 0xfffe || cp == 0xffff)
				fputs("\xef\xbf\xbd", out);
			else
				fwrite(s, 1, n, out);
		}
		s += n;
	}
}

/* 1234567 -> "1,234,567" */
static const char *thousands(uint64_t v, char buf[32])
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v), o = 0;

	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
	return buf;
}

static const char *value_text(const struct tree *t, uint64_t v, char buf[48])
{
	char num[32];

	if (t->bytes)
		snprintf(buf, 48, "%s bytes (%.1f MiB)", thousands(v, num),
			 v / 1048576.0);
	else if (t->microseconds)
		snprintf(buf, 48, "%s us", thousands((v + 500) / 1000, num));
	else
		snprintf(buf, 48, "%s sample%s", thousands(v, num), v == 1 ? "" : "s");
	return buf;
}

/*
 * A fill colour per frame: the hue family says the kind, the name's hash
 * varies it within the family so neighbours stay distinguishable and the
 * same function keeps its colour across profiles.
 */
static void frame_fill(const struct tree *t, const struct node *n, char buf[32])
{
	const char *name = t->names[n->name];
	uint64_t h = hash_bytes(name, strlen(name));
	unsigned int a = h & 0xff, b = (h >> 8) & 0xff;

	switch (n->kind) {
	case NODE_KERNEL:	/* aqua */
		snprintf(buf, 32, "rgb(%u,%u,%u)", 70 + a % 50, 185 + b % 40, 205 + a % 35);
		break;
	case NODE_NATIVE:	/* red to orange, flamegraph.pl's "hot" */
		snprintf(buf, 32, "rgb(%u,%u,%u)", 215 + a % 40, 60 + b % 110, 30 + a % 30);
		break;
	case NODE_JIT:		/* green */
		snprintf(buf, 32, "rgb(%u,%u,%u)", 60 + a % 60, 185 + b % 50, 60 + a % 40);
		break;
	case NODE_PYTHON:	/* blue to teal */
		snprintf(buf, 32, "rgb(%u,%u,%u)", 60 + a % 40, 120 + b % 60, 200 + a % 50);
		break;
	case NODE_UNKNOWN:	/* grey */
		snprintf(buf, 32, "rgb(%u,%u,%u)", 165 + a % 30, 165 + a % 30, 165 + a % 30);
		break;
	default:		/* all / comm / event: lavender */
		snprintf(buf, 32, "rgb(%u,%u,%u)", 175 + a % 30, 170 + b % 30, 235);
	}
}

struct layout {
	double px_per_unit;
	int height;
	uint32_t max_depth;
};

static void put_frame(FILE *out, const struct tree *t, const struct layout *lo,
		      uint32_t i, uint64_t offset)
{
	const struct node *n = &t->nodes[i];
	uint64_t total = t->nodes[0].value;
	double x = X_PAD + offset * lo->px_per_unit;
	double w = n->value * lo->px_per_unit;
	int y = lo->height - FOOTER_HEIGHT - (int)(n->depth + 1) * FRAME_HEIGHT;
	double pct = total ? 100.0 * n->value / total : 0;
	char fill[32], val[48];
	size_t fit = w > 6 ? (size_t)((w - 6) / CHAR_WIDTH) : 0;

	frame_fill(t, n, fill);
	fprintf(out, "<g class=\"f %s\"><title>", kind_class[n->kind]);
	put_xml(out, t->names[n->name], 0);
	fprintf(out, "\n%s, %.2f%%%s%s</title>", value_text(t, n->value, val), pct,
		kind_text[n->kind], n->inlined ? ", inlined" : "");
	fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>",
		x, y, w, FRAME_HEIGHT - 1, fill);
	fprintf(out, "<text x=\"%.2f\" y=\"%d\">", x + 3, y + FRAME_HEIGHT - 4);
	if (fit >= 3)
		put_xml(out, t->names[n->name], fit);
	fputs("</text></g>\n", out);
}

struct pending {
	uint32_t node;
	uint64_t offset;
};

static int cmp_by_name_desc(const void *a, const void *b, void *arg)
{
	const struct tree *t = arg;
	const struct pending *pa = a, *pb = b;

	return strcmp(t->names[t->nodes[pb->node].name], t->names[t->nodes[pa->node].name]);
}

/*
 * Depth-first, explicit stack (stacks can be thousands of frames deep):
 * children are pushed sorted by name, descending, so they pop ascending,
 * each with its x offset.
 */
static int put_frames(FILE *out, const struct tree *t, const struct layout *lo)
{
	struct pending *stack = NULL;
	size_t sp = 0, cap = 0;

	if (array_grow(&stack, &cap, 1, sizeof(*stack)))
		return -ENOMEM;
	stack[sp++] = (struct pending){ 0, 0 };
	while (sp) {
		struct pending cur = stack[--sp];
		size_t first = sp;
		uint64_t off = cur.offset;

		put_frame(out, t, lo, cur.node, cur.offset);
		for (uint32_t c = t->nodes[cur.node].first_child; c; c = t->nodes[c].next_sibling) {
			if (!t->nodes[c].drawn)
				continue;
			if (array_grow(&stack, &cap, sp + 1, sizeof(*stack))) {
				free(stack);
				return -ENOMEM;
			}
			stack[sp++] = (struct pending){ c, 0 };
		}
		qsort_r(stack + first, sp - first, sizeof(*stack), cmp_by_name_desc, (void *)t);
		for (size_t k = sp; k-- > first;) {
			stack[k].offset = off;
			off += t->nodes[stack[k].node].value;
		}
	}
	free(stack);
	return 0;
}

static void put_time(FILE *out, uint64_t ns)
{
	time_t sec = ns / 1000000000ULL;
	struct tm tm;
	char buf[64];

	if (!gmtime_r(&sec, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, sizeof(buf), "%" PRIu64 " s", (uint64_t)sec);
	fputs(buf, out);
}


/*
 * How far the stacks can be trusted: samples whose user stack was cut
 * short (their root is the [cut] frame) and samples with a frame no
 * symbol was found for, so nobody takes a short stack for a real one.
 */
static void put_stack_quality(FILE *out, const struct profile *p)
{
	uint64_t total = 0, cut = 0, unsym = 0;
	char num[32], num2[32];

	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];
		bool missing = false;

		total += s->count;
		if (s->nr_frames && prof_frame_is_cut(s->frames[s->nr_frames - 1]))
			cut += s->count;
		for (uint32_t j = 0; j < s->nr_frames && !missing; j++)
			missing = !prof_frame_is_cut(s->frames[j]) &&
				  (!s->frames[j]->function || !s->frames[j]->function[0]);
		if (missing)
			unsym += s->count;
	}
	if (!total)
		return;
	if (cut)
		fprintf(out, " \xc2\xb7 %s of %s stacks cut short ([cut])",
			thousands(cut, num), thousands(total, num2));
	if (unsym)
		fprintf(out, " \xc2\xb7 %s with unsymbolized frames",
			thousands(unsym, num));
}

static void put_header(FILE *out, const struct tree *t, const struct layout *lo,
		       size_t pruned)
{
	const struct prof_meta *m = &t->prof->meta;
	uint64_t counts[PROF_EV__COUNT] = { 0 };
	bool cpu = t->events & (1u << PROF_EV_CPU), off = t->events & (1u << PROF_EV_OFFCPU);
	bool faults = t->events & (1u << PROF_EV_FAULTS);
	bool alloc = t->events & (1u << PROF_EV_ALLOC | 1u << PROF_EV_INUSE);
	bool lock = t->events & (1u << PROF_EV_LOCK);
	uint64_t fault_bytes = 0, alloc_bytes = 0, inuse_bytes = 0, lock_ns = 0;
	char num[32];
	int y = 24;

	for (size_t i = 0; i < t->prof->nr_samples; i++)
		if (t->prof->samples[i].event < PROF_EV__COUNT)
			counts[t->prof->samples[i].event] += t->prof->samples[i].count;
	for (size_t i = 0; i < t->prof->nr_samples; i++) {
		const struct prof_sample *s = &t->prof->samples[i];

		if (s->event == PROF_EV_FAULTS)
			fault_bytes += s->weight_ns;
		else if (s->event == PROF_EV_ALLOC)
			alloc_bytes += s->weight_ns;
		else if (s->event == PROF_EV_INUSE)
			inuse_bytes += s->weight_ns;
		else if (s->event == PROF_EV_LOCK)
			lock_ns += s->weight_ns;
	}

	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"%d\">ember: ", IMAGE_WIDTH / 2, y);
	put_xml(out, m->host_name ? m->host_name : "unknown host", 0);
	fputs(" \xe2\x80\x94 ", out);	/* em dash */
	if (cpu && off)
		fputs("on-CPU and off-CPU", out);
	else if (off)
		fputs("off-CPU", out);
	else if (cpu || !(faults || alloc || lock))
		fputs("on-CPU", out);
	if (faults)
		fputs(cpu || off ? ", and bytes of memory first touched (page faults)" :
				   "bytes of memory first touched (page faults)", out);
	if (alloc)
		fputs(cpu || off || faults ?
		      ", and bytes allocated and still in use (sampled allocations)" :
		      "bytes allocated and still in use (sampled allocations)", out);
	if (lock)
		fputs(cpu || off || faults || alloc ?
		      ", and time waited for contended locks" :
		      "time waited for contended locks", out);
	fputs("</text>\n", out);

	y += 18;
	fprintf(out, "<text id=\"subtitle\" x=\"%d\" y=\"%d\">", IMAGE_WIDTH / 2, y);
	if (m->start_ns) {
		put_time(out, m->start_ns);
		if (m->end_ns > m->start_ns)
			fprintf(out, " + %.1f s", (m->end_ns - m->start_ns) / 1e9);
		fputs(" \xc2\xb7 ", out);
	}
	if (cpu) {
		fprintf(out, "cpu: %s samples", thousands(counts[PROF_EV_CPU], num));
		if (m->freq_hz)
			fprintf(out, " at %" PRIu32 " Hz", m->freq_hz);
		fputs(off ? ", " : "", out);
	}
	if (off)
		fprintf(out, "offcpu: %s intervals", thousands(counts[PROF_EV_OFFCPU], num));
	if (faults) {
		fputs(cpu || off ? ", " : "", out);
		fprintf(out, "faults: %s samples", thousands(counts[PROF_EV_FAULTS], num));
		if (m->fault_period)
			fprintf(out, ", one per %" PRIu32 " page faults", m->fault_period);
		fprintf(out, ", %.1f MiB of memory first touched", fault_bytes / 1048576.0);
	}
	if (alloc) {
		fputs(cpu || off || faults ? ", " : "", out);
		fprintf(out, "alloc: %s samples", thousands(m->samples[PROF_EV_ALLOC], num));
		if (m->alloc_rate)
			fprintf(out, ", one per %.0f KiB", m->alloc_rate / 1024.0);
		fprintf(out, ", %.1f MiB allocated, %.1f MiB still in use",
			alloc_bytes / 1048576.0, inuse_bytes / 1048576.0);
	}
	if (lock) {
		fputs(cpu || off || faults || alloc ? ", " : "", out);
		fprintf(out, "lock: %s contentions, %.3f s waited",
			thousands(counts[PROF_EV_LOCK], num), lock_ns / 1e9);
		if (m->lock_wakers_joined || m->lock_waker_missing)
			fprintf(out, ", %s with their waker",
				thousands(m->lock_wakers_joined, num));
	}
	if (m->backend) {
		fputs(" \xc2\xb7 backend ", out);
		put_xml(out, m->backend, 0);
	}
	fputs("</text>\n", out);

	/* How to read the widths: a line of its own, it is long */
	y += 16;
	fprintf(out, "<text id=\"note\" x=\"%d\" y=\"%d\">widths: ", IMAGE_WIDTH / 2, y);
	if (t->bytes && !alloc)
		fputs("bytes of memory first touched (sampled page faults x page size; "
		      "a huge-page fault counts as one page)", out);
	else if (t->bytes)
		fputs("bytes: under [alloc] allocated, under [inuse] not freed when "
		      "the profile was taken (each sample weighs the bytes it stands for)",
		      out);
	else if (lock && !cpu && !off)
		fputs("microseconds waited", out);
	else
		fputs(t->microseconds ? "microseconds (on-CPU samples weighted by their period, "
					"off-CPU intervals by their blocked time)"
				      : "sample counts", out);
	if (faults && !t->bytes)
		fputs("; under [faults]: bytes of memory first touched", out);
	if (lock)
		fputs("; lock waits: the waiter's stack, [lock ADDRESS KIND], then "
		      "the waker's stack leaf first and [waker COMM]", out);
	if (pruned)
		fprintf(out, " \xc2\xb7 %s boxes under 0.1%% not drawn", thousands(pruned, num));
	put_stack_quality(out, t->prof);
	fputs("</text>\n", out);

	y += 18;
	if (m->lost || m->bad_records || m->dropped_stacks) {
		fprintf(out, "<text id=\"warning\" x=\"%d\" y=\"%d\">WARNING:", IMAGE_WIDTH / 2, y);
		if (m->lost)
			fprintf(out, " this profile lost %s records;", thousands(m->lost, num));
		if (m->bad_records)
			fprintf(out, " %s corrupt records skipped;", thousands(m->bad_records, num));
		if (m->dropped_stacks)
			fprintf(out, " %s stacks dropped at the memory bound;",
				thousands(m->dropped_stacks, num));
		fputs(" the graph is incomplete</text>\n", out);
	}
	if (!t->nodes[0].value)
		fprintf(out, "<text id=\"empty\" x=\"%d\" y=\"%d\">no samples were recorded</text>\n",
			IMAGE_WIDTH / 2, lo->height / 2);

	/* Controls; the script wires them up (they do nothing without it). */
	y += 16;
	fprintf(out, "<text id=\"unzoom\" class=\"button hide\" x=\"%d\" y=\"%d\">Reset Zoom</text>\n",
		X_PAD, y);
	fprintf(out, "<text id=\"search\" class=\"button\" x=\"%d\" y=\"%d\">Search</text>\n",
		IMAGE_WIDTH - X_PAD - 110, y);
	fprintf(out, "<text id=\"ignorecase\" class=\"button\" x=\"%d\" y=\"%d\">ic</text>\n",
		IMAGE_WIDTH - X_PAD - 20, y);
	fprintf(out, "<text id=\"legend\" x=\"%d\" y=\"%d\">"
		"<tspan class=\"lk\">\xe2\x96\xa0 kernel</tspan> "
		"<tspan class=\"ln\">\xe2\x96\xa0 user</tspan> "
		"<tspan class=\"lj\">\xe2\x96\xa0 JIT</tspan> "
		"<tspan class=\"lu\">\xe2\x96\xa0 unknown</tspan> "
		"<tspan class=\"lm\">\xe2\x96\xa0 process/event</tspan></text>\n",
		IMAGE_WIDTH / 2, y);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n",
		X_PAD, lo->height - 12);
	fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n",
		IMAGE_WIDTH - X_PAD, lo->height - 12);
}

static void put_document(FILE *out, const struct tree *t, const struct layout *lo,
			 size_t pruned, int *err)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n", out);
	fprintf(out, "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"data-total=\"%" PRIu64 "\" data-unit=\"%s\" data-xpad=\"%d\">\n",
		IMAGE_WIDTH, lo->height, IMAGE_WIDTH, lo->height, t->nodes[0].value,
		t->bytes ? "bytes" : t->microseconds ? "us" : "samples", X_PAD);
	fprintf(out, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", ember_flamegraph_css);
	fprintf(out, "<rect id=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\"/>\n",
		IMAGE_WIDTH, lo->height);
	put_header(out, t, lo, pruned);
	fputs("<g id=\"frames\">\n", out);
	*err = put_frames(out, t, lo);
	fputs("</g>\n", out);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n",
		ember_flamegraph_js);
	fputs("</svg>\n", out);
}

int output_svg(const struct profile *p, FILE *out)
{
	struct tree t;
	struct layout lo;
	size_t pruned;
	uint64_t total;
	int err;

	err = build_tree(&t, p);
	if (!err) {
		total = t.nodes[0].value;
		lo.max_depth = mark_drawn(&t, &pruned);
		lo.px_per_unit = total ? (double)(IMAGE_WIDTH - 2 * X_PAD) / total : 0;
		lo.height = HEADER_HEIGHT + (lo.max_depth + 1) * FRAME_HEIGHT + FOOTER_HEIGHT;
		put_document(out, &t, &lo, pruned, &err);
		if (!err && (fflush(out) || ferror(out)))
			err = -EIO;
	}
	tree_free(&t);
	return err;
}
