// SPDX-License-Identifier: GPL-2.0-only
/*
 * Folded stacks: one line per unique stack, "comm;root;...;leaf VALUE",
 * the input format of flamegraph.pl and speedscope. --group-by container
 * puts "[container ID]", "[cgroup PATH]" or "[host]" before comm; none
 * leaves comm out (every process's stacks merge).
 *
 * VALUE is a sample count when only on-CPU samples were recorded (a late
 * timer's sample counting for the periods it stands for, except on a
 * guest that keeps steal out of CPU time: aggregate.h,
 * late_periods_are_cpu), and microseconds as soon as off-CPU time is
 * included (on-CPU samples then weigh their periods' time) so both kinds
 * add up on one scale. With both
 * events the frame after comm is "[cpu]" or "[offcpu]". Page faults
 * (-e faults) weigh the bytes they stand for (faults x page size) and get
 * a "[faults]" frame after comm when another event is in the profile too.
 * Allocations (-e alloc) weigh bytes too, under "[alloc]" (allocated) and
 * "[inuse]" (not freed when the profile was taken). With --off-cpu-state an
 * off-CPU stack ends in the way its thread waited: "[sleeping]", "[disk]"
 * (uninterruptible, mostly I/O), "[preempted]" or "[other]".
 * Lock waits (-e lock) weigh the time waited, in microseconds like
 * off-CPU, under "[lock]": the waiter's stack, a "[lock ADDR KIND]" frame
 * and, with --waker, the waker's stack leaf first and "[waker COMM]"
 * (the frames come in that order from the profile, prof_sample).
 * Kernel frames end
 * in "_[k]", as in stackcollapse-perf.pl. Lines are sorted and identical
 * ones merged (different threads of a process fold into one line).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "output/event_frame.h"
#include "output/output.h"

struct folded_line {
	char *text;
	uint64_t value;
};

struct strbuf {
	char *s;
	size_t len, cap;
};

static int sb_putc(struct strbuf *b, char c)
{
	if (b->len + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		char *s = realloc(b->s, cap);

		if (!s)
			return -ENOMEM;
		b->s = s;
		b->cap = cap;
	}
	b->s[b->len++] = c;
	b->s[b->len] = '\0';
	return 0;
}

/* A frame name must not break the format: ';' separates frames, newline
 * ends the line. */
static int sb_put_name(struct strbuf *b, const char *s)
{
	for (; *s; s++) {
		char c = *s == ';' ? ':' : (*s == '\n' || *s == '\r') ? ' ' : *s;

		if (sb_putc(b, c))
			return -ENOMEM;
	}
	return 0;
}

static int sb_puts(struct strbuf *b, const char *s)
{
	for (; *s; s++)
		if (sb_putc(b, *s))
			return -ENOMEM;
	return 0;
}

/* Time-weighed events (off-CPU, lock waits): values in microseconds. */
static bool profile_has_offcpu(const struct profile *p)
{
	uint32_t timed = 1u << PROF_EV_OFFCPU | 1u << PROF_EV_LOCK;

	if (p->meta.events & timed)
		return true;
	for (size_t i = 0; i < p->nr_samples; i++)
		if (p->samples[i].event == PROF_EV_OFFCPU ||
		    p->samples[i].event == PROF_EV_LOCK)
			return true;
	return false;
}

/* More than one event kind: each line says which after comm. */
static bool profile_has_both(const struct profile *p)
{
	uint32_t all = (1u << PROF_EV__COUNT) - 1;
	uint32_t seen = p->meta.events & all;

	for (size_t i = 0; i < p->nr_samples; i++)
		seen |= 1u << p->samples[i].event;
	seen &= all;
	return seen & (seen - 1);
}

static int build_line(const struct profile *p, const struct prof_sample *s,
		      bool both, struct strbuf *b)
{
	const char *comm = s->process && s->process->comm && s->process->comm[0] ?
			   s->process->comm : s->thread_name;
	char group[PROF_GROUP_NAME_MAX];
	bool first = true;	/* no ';' before the first frame */
	int err = 0;

	b->len = 0;
	if (p->meta.group_by == PROF_GROUP_CONTAINER) {
		err = sb_put_name(b, prof_group_name(s->process, group,
						     sizeof(group)));
		first = false;
	}
	if (!err && p->meta.group_by != PROF_GROUP_NONE) {
		if (!first)
			err = sb_putc(b, ';');
		if (!err)
			err = sb_put_name(b, comm && comm[0] ? comm : "[unknown]");
		first = false;
	}
	if (!err && both) {
		if (!first)
			err = sb_putc(b, ';');
		if (!err)
			err = sb_puts(b, event_frame(s->event));
		first = false;
	}
	/* frames[] is leaf first: walk it backwards for root first */
	for (uint32_t i = s->nr_frames; !err && i-- > 0;) {
		const struct prof_frame *f = s->frames[i];

		if (!first)
			err = sb_putc(b, ';');
		first = false;
		if (!err)
			err = sb_put_name(b, prof_frame_label(p, f));
		if (!err && f->kind == PROF_FRAME_KERNEL)
			err = sb_puts(b, "_[k]");
	}
	/* --off-cpu-state: how the thread waited, as the leaf */
	if (!err && s->event == PROF_EV_OFFCPU && p->meta.offcpu_state_frames &&
	    prof_offcpu_state_name(s->offcpu_state)) {
		err = sb_puts(b, first ? "[" : ";[");
		if (!err)
			err = sb_puts(b, prof_offcpu_state_name(s->offcpu_state));
		if (!err)
			err = sb_putc(b, ']');
	}
	return err;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text,
		      ((const struct folded_line *)b)->text);
}

int output_folded(const struct profile *p, FILE *out)
{
	bool micro = profile_has_offcpu(p), both = profile_has_both(p);
	struct folded_line *lines = calloc(p->nr_samples + 1, sizeof(*lines));
	struct strbuf b = { 0 };
	size_t n = 0;
	int err = 0;

	if (!lines)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_samples && !err; i++) {
		const struct prof_sample *s = &p->samples[i];

		err = build_line(p, s, both, &b);
		if (err)
			break;
		if (s->event == PROF_EV_FAULTS || s->event == PROF_EV_ALLOC ||
		    s->event == PROF_EV_INUSE)
			lines[n].value = s->weight_ns;	/* bytes */
		else
			lines[n].value = micro ? (s->weight_ns + 500) / 1000 :
						 s->count;
		lines[n].text = strdup(b.s ? b.s : "");
		if (!lines[n++].text)
			err = -ENOMEM;
	}
	if (!err) {
		qsort(lines, n, sizeof(*lines), cmp_line);
		for (size_t i = 0; i < n;) {
			uint64_t v = 0;
			size_t j = i;

			for (; j < n && !strcmp(lines[j].text, lines[i].text); j++)
				v += lines[j].value;
			if (v)
				fprintf(out, "%s %llu\n", lines[i].text,
					(unsigned long long)v);
			i = j;
		}
		if (fflush(out) || ferror(out))
			err = -EIO;
	}
	for (size_t i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	free(b.s);
	return err;
}
