// SPDX-License-Identifier: GPL-2.0-only
/*
 * Validation of ember records (include/uapi/ember.h). Every reader runs
 * records through ember_record_valid() before looking inside them, so
 * nothing downstream has to distrust a record: a truncated, corrupt or
 * unknown one is skipped and counted instead of crashing the agent.
 *
 * Records may be longer than the structure we know (fields appended by a
 * newer producer); they may never be shorter.
 */
#include <string.h>
#include "source/source.h"

static bool str_terminated(const char *s, size_t max)
{
	return memchr(s, '\0', max) != NULL;
}

/* extra: u64s that follow the frames (EMBER_REC_ALLOC's address, size;
 * the 3 of struct ember_lock_wait or ember_lock_waker) */
static bool sample_valid(const struct ember_rec_header *hdr, unsigned int extra)
{
	const struct ember_sample *s = (const void *)hdr;
	uint64_t need;

	if (hdr->size < sizeof(*s))
		return false;
	if (s->nr_kernel > EMBER_MAX_FRAMES || s->nr_user > EMBER_MAX_FRAMES)
		return false;
	need = sizeof(*s) + 8ull * ((uint64_t)s->nr_kernel + s->nr_user + extra);
	return need <= hdr->size && str_terminated(s->comm, sizeof(s->comm));
}

static bool exec_valid(const struct ember_rec_header *hdr)
{
	const struct ember_exec *e = (const void *)hdr;

	if (hdr->size < sizeof(*e) || e->filename_len == 0)
		return false;
	if ((uint64_t)sizeof(*e) + e->filename_len > hdr->size)
		return false;
	return e->filename[e->filename_len - 1] == '\0' &&
	       str_terminated(e->comm, sizeof(e->comm));
}

static bool mmap_valid(const struct ember_rec_header *hdr)
{
	const struct ember_mmap *m = (const void *)hdr;

	if (hdr->size < sizeof(*m) || m->path_len == 0 ||
	    m->path_len > EMBER_MMAP_PATH_MAX)
		return false;
	if ((uint64_t)sizeof(*m) + m->path_len > hdr->size)
		return false;
	return m->path[m->path_len - 1] == '\0' && m->len &&
	       m->start + m->len > m->start;
}

static bool exit_valid(const struct ember_rec_header *hdr)
{
	const struct ember_exit *e = (const void *)hdr;

	return hdr->size >= sizeof(*e) &&
	       str_terminated(e->comm, sizeof(e->comm));
}

bool ember_record_has_stack(uint16_t type)
{
	switch (type) {
	case EMBER_REC_SAMPLE:
	case EMBER_REC_OFFCPU:
	case EMBER_REC_FAULT:
	case EMBER_REC_ALLOC:
	case EMBER_REC_LOCK:
	case EMBER_REC_LOCK_WAKER:
		return true;
	default:
		return false;
	}
}

struct ember_sample *ember_sample_with_user(const struct ember_sample *s,
					    const uint64_t *user,
					    unsigned int n,
					    struct ember_sample *d)
{
	unsigned int nk = s->nr_kernel, nu = s->nr_user;
	size_t tail = s->hdr.size - sizeof(*s) - 8ull * (nk + nu);

	if (n > EMBER_MAX_FRAMES || tail > 3 * sizeof(uint64_t) || tail % 8)
		return NULL;
	/* the user frames first: the header and kernel frames are below them */
	if ((const void *)user != (const void *)(d->ips + nk))
		memmove(d->ips + nk, user, 8ull * n);
	memcpy(d, s, sizeof(*s) + 8ull * nk);
	memcpy(d->ips + nk + n, s->ips + nk + nu, tail);
	d->nr_user = (uint16_t)n;
	d->hdr.size = (uint32_t)(sizeof(*s) + 8ull * (nk + n) + tail);
	return d;
}

bool ember_record_valid(const struct ember_rec_header *hdr, size_t avail)
{
	if (!hdr || avail < sizeof(*hdr))
		return false;
	if (hdr->size < sizeof(*hdr) || hdr->size % 8 || hdr->size > avail)
		return false;

	switch (hdr->type) {
	case EMBER_REC_PAD:
		return true;
	case EMBER_REC_SAMPLE:
	case EMBER_REC_OFFCPU:
	case EMBER_REC_FAULT:
		return sample_valid(hdr, 0);
	case EMBER_REC_ALLOC:
		return sample_valid(hdr, 2);
	case EMBER_REC_LOCK:
	case EMBER_REC_LOCK_WAKER:
		return sample_valid(hdr, 3);
	case EMBER_REC_FREE:
		return hdr->size >= sizeof(struct ember_free);
	case EMBER_REC_EXEC:
		return exec_valid(hdr);
	case EMBER_REC_EXIT:
		return exit_valid(hdr);
	case EMBER_REC_MMAP:
		return mmap_valid(hdr);
	case EMBER_REC_LOST:
		return hdr->size >= sizeof(struct ember_lost);
	case EMBER_REC_UNWIND_MISS:
		return hdr->size >= sizeof(struct ember_unwind_miss);
	case EMBER_REC_USER_STACK: {
		const struct ember_user_stack *u = (const void *)hdr;

		return hdr->size >= sizeof(*u) &&
		       u->stack_len <= EMBER_STACK_COPY_MAX &&
		       u->stack_len <= hdr->size - sizeof(*u);
	}
	default:
		return false;	/* unknown: the caller skips hdr->size bytes */
	}
}
