// SPDX-License-Identifier: GPL-2.0-only
/*
 * Record decoding: ember_record_valid() on well-formed, truncated, corrupt
 * and unknown records, and the builder fed random bytes (must not crash,
 * must count what it skipped).
 */
#include <stdint.h>
#include <string.h>
#include "aggregate/aggregate.h"
#include "source/source.h"
#include "test_util.h"

static uint64_t buf[4096];

static struct ember_sample *make_sample(uint16_t nk, uint16_t nu)
{
	struct ember_sample *s = (void *)buf;

	memset(buf, 0, sizeof(buf));
	s->hdr.type = EMBER_REC_SAMPLE;
	s->hdr.size = sizeof(*s) + 8 * (nk + nu);
	s->pid = 100;
	s->tid = 101;
	s->nr_kernel = nk;
	s->nr_user = nu;
	s->weight_ns = 10101010;
	strcpy(s->comm, "prog");
	for (int i = 0; i < nk + nu; i++)
		s->ips[i] = 0x1000 + i;
	return s;
}

static struct ember_exec *make_exec(const char *file)
{
	struct ember_exec *e = (void *)buf;
	size_t len = strlen(file) + 1;

	memset(buf, 0, sizeof(buf));
	e->hdr.type = EMBER_REC_EXEC;
	e->hdr.size = (sizeof(*e) + len + 7) & ~7u;
	e->pid = 5;
	e->tid = 5;
	strcpy(e->comm, "sh");
	e->filename_len = len;
	memcpy(e->filename, file, len);
	return e;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(void)
{
	struct ember_sample *s;
	struct ember_exec *e;
	struct ember_exit *x;
	struct ember_lost *l;

	s = make_sample(3, 4);
	T_CHECK("record_sample_valid", ember_record_valid(&s->hdr, s->hdr.size), "rejected");
	T_CHECK("record_sample_avail_short", !ember_record_valid(&s->hdr, s->hdr.size - 8),
		"accepted beyond the readable bytes");
	s->hdr.size -= 8;
	T_CHECK("record_sample_frames_overflow", !ember_record_valid(&s->hdr, sizeof(buf)),
		"frames beyond the record accepted");
	s = make_sample(3, 4);
	s->hdr.size += 4;
	T_CHECK("record_size_unaligned", !ember_record_valid(&s->hdr, sizeof(buf)),
		"size not a multiple of 8 accepted");
	s = make_sample(0, 0);
	s->nr_kernel = EMBER_MAX_FRAMES + 1;
	s->hdr.size = sizeof(*s) + 8 * (EMBER_MAX_FRAMES + 1);
	T_CHECK("record_sample_too_many_frames", !ember_record_valid(&s->hdr, sizeof(buf)),
		"more than EMBER_MAX_FRAMES accepted");
	s = make_sample(1, 1);
	memset(s->comm, 'x', sizeof(s->comm));
	T_CHECK("record_sample_comm_unterminated", !ember_record_valid(&s->hdr, sizeof(buf)),
		"comm without NUL accepted");
	s = make_sample(1, 1);
	s->hdr.size = 4;
	T_CHECK("record_size_below_header", !ember_record_valid(&s->hdr, sizeof(buf)),
		"size 4 accepted");
	s->hdr.size = 16;
	T_CHECK("record_sample_truncated", !ember_record_valid(&s->hdr, sizeof(buf)),
		"16-byte sample accepted");
	T_CHECK("record_null", !ember_record_valid(NULL, 100), "NULL accepted");
	T_CHECK("record_avail_below_header", !ember_record_valid(&s->hdr, 4),
		"4 readable bytes accepted");

	e = make_exec("/usr/bin/true");
	T_CHECK("record_exec_valid", ember_record_valid(&e->hdr, e->hdr.size), "rejected");
	e->filename[e->filename_len - 1] = 'x';
	T_CHECK("record_exec_unterminated", !ember_record_valid(&e->hdr, e->hdr.size),
		"filename without NUL accepted");
	e = make_exec("/usr/bin/true");
	e->filename_len = 4096;
	T_CHECK("record_exec_len_overflow", !ember_record_valid(&e->hdr, sizeof(buf)),
		"filename_len beyond the record accepted");
	e->filename_len = 0;
	T_CHECK("record_exec_len_zero", !ember_record_valid(&e->hdr, sizeof(buf)),
		"empty filename accepted");

	x = (void *)buf;
	memset(buf, 0, sizeof(buf));
	x->hdr.type = EMBER_REC_EXIT;
	x->hdr.size = sizeof(*x);
	T_CHECK("record_exit_valid", ember_record_valid(&x->hdr, x->hdr.size), "rejected");
	x->hdr.size = sizeof(*x) - 8;
	T_CHECK("record_exit_truncated", !ember_record_valid(&x->hdr, sizeof(buf)), "accepted");

	l = (void *)buf;
	memset(buf, 0, sizeof(buf));
	l->hdr.type = EMBER_REC_LOST;
	l->hdr.size = sizeof(*l);
	T_CHECK("record_lost_valid", ember_record_valid(&l->hdr, l->hdr.size), "rejected");
	l->hdr.type = __EMBER_REC_MAX;
	T_CHECK("record_unknown_type", !ember_record_valid(&l->hdr, l->hdr.size),
		"unknown type accepted");
	l->hdr.type = EMBER_REC_PAD;
	l->hdr.size = 64;
	T_CHECK("record_pad_valid", ember_record_valid(&l->hdr, 64), "rejected");

	/* A record longer than we know (a newer producer) is still fine. */
	s = make_sample(2, 2);
	s->hdr.size += 16;
	T_CHECK("record_sample_longer_ok", ember_record_valid(&s->hdr, s->hdr.size),
		"appended fields rejected");

	/* Fuzz: random headers and bodies into the builder. */
	{
		struct profile_builder *pb = pb_new(NULL, NULL);
		struct pb_counters c;
		uint64_t valid = 0;
		struct profile *p;

		for (int i = 0; i < 200000; i++) {
			struct ember_rec_header *h = (void *)buf;
			size_t words = 1 + xorshift() % 64;

			for (size_t w = 0; w < words; w++)
				buf[w] = xorshift();
			/* mostly plausible types and sizes: reach deep checks */
			h->type = xorshift() % (__EMBER_REC_MAX + 2);
			if (xorshift() % 4)
				h->size = words * 8;
			if (h->type == EMBER_REC_SAMPLE && xorshift() % 2) {
				struct ember_sample *fs = (void *)buf;

				fs->nr_kernel %= 8;
				fs->nr_user %= 8;
				fs->comm[xorshift() % 16] = '\0';
				h->size = sizeof(*fs) + 8 * (fs->nr_kernel + fs->nr_user);
			}
			if (h->size > words * 8)
				h->size = words * 8;	/* never beyond what is readable */
			valid += ember_record_valid(h, h->size);
			pb_add_record(pb, h);
		}
		pb_get_counters(pb, &c);
		T_CHECK("fuzz_counts", c.records == 200000 &&
			c.bad_records == 200000 - valid,
			"records %llu bad %llu valid %llu",
			(unsigned long long)c.records,
			(unsigned long long)c.bad_records,
			(unsigned long long)valid);
		T_CHECK("fuzz_some_valid", valid > 1000 && c.bad_records > 1000,
			"fuzzer reached too few valid (%llu) or invalid records",
			(unsigned long long)valid);
		p = pb_finish(pb, NULL);
		T_CHECK("fuzz_profile_builds", p != NULL, "pb_finish failed");
		T_CHECK("fuzz_bad_in_meta", p && p->meta.bad_records == c.bad_records,
			"meta.bad_records does not carry the count");
		profile_free(p);
		pb_free(pb);
	}
	T_EXIT();
}
