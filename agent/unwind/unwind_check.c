// SPDX-License-Identifier: GPL-2.0-only
/*
 * Sample vs. oracle comparison (unwind_check.h). A stack copy follows its
 * sample closely (right after it in a per-CPU ring; in a shared BPF ring
 * other CPUs' records may come between), so the last few samples are
 * kept and a copy is paired by tid and time; a copy without its sample is
 * counted as unpaired, never guessed at.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/oracle.h"
#include "unwind/unwind_check.h"

#define SHOWN_DISAGREEMENTS	3
#define RECENT			64

struct recent_sample {
	uint32_t pid, tid;
	uint64_t time_ns;
	uint16_t flags, nr_user;
	bool used;
	uint64_t user[EMBER_MAX_FRAMES];
};

struct unwind_check {
	struct oracle *oracle;
	uint64_t pac_mask;	/* aarch64: the kernel's, for the oracle, where
				 * the record does not carry it */
	struct unwind_check_stats st;
	struct recent_sample recent[RECENT];
	unsigned int next;
	char shown[SHOWN_DISAGREEMENTS][1024];
	int nr_shown;
};

struct unwind_check *unwind_check_new(void)
{
	struct unwind_check *c = calloc(1, sizeof(*c));

	if (c && !(c->oracle = oracle_new(0))) {
		free(c);
		c = NULL;
	}
	return c;
}

static void remember_sample(struct unwind_check *c,
			    const struct ember_sample *s)
{
	struct recent_sample *r = &c->recent[c->next++ % RECENT];

	r->pid = s->pid;
	r->tid = s->tid;
	r->time_ns = s->time_ns;
	r->flags = s->flags;
	r->nr_user = s->nr_user > EMBER_MAX_FRAMES ? EMBER_MAX_FRAMES : s->nr_user;
	r->used = false;
	memcpy(r->user, s->ips + s->nr_kernel, r->nr_user * sizeof(r->user[0]));
}

static struct recent_sample *partner(struct unwind_check *c,
				     const struct ember_user_stack *u)
{
	for (unsigned int i = 0; i < RECENT; i++) {
		struct recent_sample *r = &c->recent[(c->next - 1 - i) % RECENT];

		if (!r->used && r->tid == u->tid && r->time_ns == u->time_ns &&
		    r->pid == u->pid)
			return r;
	}
	return NULL;
}

/* Up to CHAIN_SHOWN addresses of a chain, for the disagreement's line. */
#define CHAIN_SHOWN	20

static size_t chain(char *buf, size_t len, const char *who,
		    const uint64_t *ips, int n)
{
	size_t at = (size_t)snprintf(buf, len, "; %s", who);

	for (int k = 0; k < n && k < CHAIN_SHOWN && at < len; k++)
		at += (size_t)snprintf(buf + at, len - at, " %" PRIx64, ips[k]);
	return at < len ? at : len;
}

/* The first frame that differs, then both chains: enough to tell whose
 * walk went wrong against the process's maps. */
static void note(struct unwind_check *c, const struct recent_sample *r,
		 int i, int ne, int no, const uint64_t *o)
{
	size_t len = sizeof(c->shown[0]), at;
	char *buf;

	if (c->nr_shown == SHOWN_DISAGREEMENTS)
		return;
	buf = c->shown[c->nr_shown++];
	at = (size_t)snprintf(buf, len, "pid %u: frame %d: ember 0x%" PRIx64
			      ", oracle 0x%" PRIx64 " (ember %d frames%s, "
			      "oracle %d)", r->pid, i,
			      i < ne ? r->user[i] : 0, i < no ? o[i] : 0, ne,
			      r->flags & EMBER_SF_USER_CUT ? " cut" : "", no);
	if (at < len)
		at += chain(buf + at, len - at, "ember:", r->user, ne);
	if (at < len)
		chain(buf + at, len - at, "oracle:", o, no);
}

static void compare(struct unwind_check *c, const struct recent_sample *r,
		    const struct ember_user_stack *u)
{
	struct oracle_stack os = {
		.pid = u->pid, .tid = u->tid, .stack = u->stack,
		.stack_len = u->stack_len, .pac_mask = c->pac_mask,
	};
	uint64_t o[EMBER_MAX_FRAMES];
	int ne = r->nr_user, no, complete, i, n;
	bool ok;

	oracle_regs_from_record(u->regs, os.regs, &os.pac_mask);
	no = oracle_unwind(c->oracle, &os, o, EMBER_MAX_FRAMES, &complete);
	if (no < 1) {
		c->st.oracle_failed++;
		return;
	}
	c->st.compared++;
	n = ne < no ? ne : no;
	for (i = 0; i < n && r->user[i] == o[i]; i++)
		;
	c->st.frames += (uint64_t)(ne > no ? ne : no);
	c->st.frames_agree += (uint64_t)i;
	/* a shorter side is fine only for a reason it states: ember's depth
	 * limit, or the end of the oracle's copy */
	ok = i == n && (ne == no ||
			(ne < no && (r->flags & EMBER_SF_USER_TRUNC)) ||
			(ne > no && !complete));
	if (ok)
		c->st.agree++;
	else
		note(c, r, i, ne, no, o);
}

void unwind_check_record(struct unwind_check *c,
			 const struct ember_rec_header *rec)
{
	switch (rec->type) {
	case EMBER_REC_SAMPLE:
	case EMBER_REC_OFFCPU:
		remember_sample(c, (const struct ember_sample *)rec);
		break;
	case EMBER_REC_USER_STACK: {
		const struct ember_user_stack *u = (const void *)rec;
		struct recent_sample *r = partner(c, u);

		c->st.copies++;
		if (!r) {
			c->st.unpaired++;
			break;
		}
		r->used = true;
		/* the oracle checks the tables: frame-pointer walks of
		 * processes not bound yet are counted, not compared */
		if (!(r->flags & EMBER_SF_USER_CFI)) {
			c->st.not_cfi++;
			break;
		}
		compare(c, r, u);
		break;
	}
	case EMBER_REC_EXEC:
		oracle_forget(c->oracle, ((const struct ember_exec *)rec)->pid);
		break;
	case EMBER_REC_EXIT:
		oracle_forget(c->oracle, ((const struct ember_exit *)rec)->pid);
		break;
	default:
		break;
	}
}

void unwind_check_set_pac_mask(struct unwind_check *c, uint64_t mask)
{
	c->pac_mask = mask;
}

void unwind_check_get(const struct unwind_check *c,
		      struct unwind_check_stats *st)
{
	*st = c->st;
}

void unwind_check_report(const struct unwind_check *c, FILE *out)
{
	const struct unwind_check_stats *s = &c->st;

	fprintf(out, "ember: unwind check: %" PRIu64 " samples compared with "
		"libdwfl, %" PRIu64 " agree frame for frame (%.2f%%), frames "
		"%.2f%%; %" PRIu64 " stack copies, %" PRIu64 " unpaired, %" PRIu64
		" not unwindable by libdwfl, %" PRIu64 " walked by frame pointers "
		"(process not bound yet)\n", s->compared, s->agree,
		s->compared ? 100.0 * s->agree / s->compared : 0,
		s->frames ? 100.0 * s->frames_agree / s->frames : 0,
		s->copies, s->unpaired, s->oracle_failed, s->not_cfi);
	for (int i = 0; i < c->nr_shown; i++)
		fprintf(out, "ember: unwind check: %s\n", c->shown[i]);
}

void unwind_check_free(struct unwind_check *c)
{
	if (!c)
		return;
	oracle_free(c->oracle);
	free(c);
}
