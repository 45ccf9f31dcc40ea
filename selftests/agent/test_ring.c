// SPDX-License-Identifier: GPL-2.0-only
/*
 * The module ring reader on fake rings: well-formed records with padding,
 * then corrupt counters, sizes and random garbage. It must deliver only
 * records within bounds, count what it skipped, always catch up with the
 * producer, and never crash.
 */
#include <stdlib.h>
#include <string.h>
#include "aggregate/aggregate.h"
#include "source/source_kmod.h"
#include "test_util.h"

#define RING (64 * 1024)

static unsigned char data[RING];
static struct ember_ring_ctrl ctrl;
static unsigned char copy[KMOD_MAX_RECORD];
static int delivered, bad_size;

static void count_cb(const struct ember_rec_header *h, void *ctx)
{
	(void)ctx;
	delivered++;
	if (h->size < 8 || h->size % 8 || h->size > KMOD_MAX_RECORD)
		bad_size++;
}

static uint64_t put_sample(uint64_t pos, uint16_t nips)
{
	struct ember_sample *s = (void *)(data + (pos & (RING - 1)));

	memset(s, 0, sizeof(*s));
	s->hdr.type = EMBER_REC_SAMPLE;
	s->hdr.size = sizeof(*s) + 8 * nips;
	s->pid = s->tid = 4000000001u;
	s->nr_user = nips;
	strcpy(s->comm, "x");
	for (int i = 0; i < nips; i++)
		s->ips[i] = 0x1000 + i;
	return pos + s->hdr.size;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(void)
{
	uint64_t corrupt = 0, pos = 0;
	int n;

	/* well-formed: fill past the end with a PAD, wrap around */
	while (RING - (pos & (RING - 1)) >= 200)
		pos = put_sample(pos, 10);
	{
		struct ember_rec_header *pad = (void *)(data + (pos & (RING - 1)));
		uint32_t left = RING - (pos & (RING - 1));

		pad->type = EMBER_REC_PAD;
		pad->size = left;
		pos += left;
	}
	ctrl.producer = pos;
	n = kmod_drain(&ctrl, data, RING, copy, count_cb, NULL, &corrupt);
	T_CHECK("ring_drains_all", n > 0 && ctrl.consumer == pos && !corrupt && !bad_size,
		"n=%d consumer=%llu pos=%llu corrupt=%llu", n,
		(unsigned long long)ctrl.consumer, (unsigned long long)pos,
		(unsigned long long)corrupt);
	pos = put_sample(pos, 3);	/* after the wrap, at offset 0 */
	ctrl.producer = pos;
	delivered = 0;
	n = kmod_drain(&ctrl, data, RING, copy, count_cb, NULL, &corrupt);
	T_CHECK("ring_after_wrap", n == 1 && delivered == 1 && ctrl.consumer == pos,
		"n=%d", n);

	/* producer behind consumer, or a whole ring ahead: resync, count */
	ctrl.consumer = pos + 64;
	ctrl.producer = pos;
	corrupt = 0;
	n = kmod_drain(&ctrl, data, RING, copy, count_cb, NULL, &corrupt);
	T_CHECK("ring_producer_behind", n == 0 && corrupt == 1 && ctrl.consumer == pos,
		"n=%d corrupt=%llu", n, (unsigned long long)corrupt);
	ctrl.consumer = 0;
	ctrl.producer = 10ull * RING;
	corrupt = 0;
	n = kmod_drain(&ctrl, data, RING, copy, count_cb, NULL, &corrupt);
	T_CHECK("ring_producer_too_far", n == 0 && corrupt == 1 &&
		ctrl.consumer == 10ull * RING, "n=%d", n);

	/* a record claiming more than the producer wrote / than the tail */
	ctrl.consumer = ctrl.producer = 0;
	pos = put_sample(0, 4);
	((struct ember_rec_header *)data)->size = 4096;
	ctrl.producer = pos;
	corrupt = 0;
	n = kmod_drain(&ctrl, data, RING, copy, count_cb, NULL, &corrupt);
	T_CHECK("ring_size_beyond_producer", n == 0 && corrupt == 1 && ctrl.consumer == pos,
		"n=%d", n);
	ctrl.consumer = ctrl.producer = RING - 64;
	((struct ember_rec_header *)(data + RING - 64))->type = EMBER_REC_SAMPLE;
	((struct ember_rec_header *)(data + RING - 64))->size = 128;	/* wraps */
	ctrl.producer += 512;
	corrupt = 0;
	n = kmod_drain(&ctrl, data, RING, copy, count_cb, NULL, &corrupt);
	T_CHECK("ring_record_across_end", n == 0 && corrupt == 1, "n=%d", n);

	/* fuzz: garbage data and counters into the builder */
	{
		struct profile_builder *pb = pb_new(NULL, NULL);
		struct pb_counters c;
		uint64_t total = 0;

		delivered = bad_size = 0;
		for (int round = 0; round < 3000; round++) {
			for (size_t i = 0; i < 512; i++) {
				uint64_t w = rnd();

				/* small plausible sizes now and then */
				if (!(i % 4))
					w = (w & ~0xffffffff0000ffffull) | ((rnd() % 64) * 8) << 32 | (rnd() % 7);
				memcpy(data + ((rnd() % (RING / 8)) * 8), &w, 8);
			}
			if (rnd() % 8 == 0)
				ctrl.consumer = rnd();
			ctrl.producer = ctrl.consumer + (rnd() % 8 ? rnd() % 8192 : rnd());
			total += kmod_drain(&ctrl, data, RING, copy, pb_record_cb, pb, &corrupt);
			if (ctrl.consumer != ctrl.producer)
				break;
		}
		pb_get_counters(pb, &c);
		T_CHECK("ring_fuzz_catches_up", ctrl.consumer == ctrl.producer,
			"consumer %llu producer %llu", (unsigned long long)ctrl.consumer,
			(unsigned long long)ctrl.producer);
		T_CHECK("ring_fuzz_all_counted", c.records == total && total > 0 &&
			c.bad_records > 0, "records %llu delivered %llu bad %llu",
			(unsigned long long)c.records, (unsigned long long)total,
			(unsigned long long)c.bad_records);
		pb_free(pb);
	}
	T_EXIT();
}
