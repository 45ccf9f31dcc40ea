// SPDX-License-Identifier: GPL-2.0-only
/*
 * ring-fuzz: feeds random and mutated records to the reader side of the
 * eBPF backend (deliver(), perfbuf_cb() of agent/source/source_bpf.c, included
 * here to reach its static functions), built with ASan/UBSan: nothing may
 * crash or read out of bounds, every record handed to the callback must
 * pass ember_record_valid(), the rest must be counted as corrupt.
 * Prints "OK delivered=N corrupt=N" and exits 0.
 */
#include "source/source_bpf.c"

static unsigned long delivered, bad;

static void cb(const struct ember_rec_header *h, void *ctx)
{
	(void)ctx;
	delivered++;
	if (!ember_record_valid(h, h->size))
		bad++;
}

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

int main(void)
{
	static uint8_t buf[MAX_RECORD_BYTES + 64];
	struct ember_source s = { 0 };
	struct ember_sample *smp = (void *)buf;

	s.bounce = malloc(MAX_RECORD_BYTES + 8);
	s.fn = cb;
	s.sched_lo = 0xffffffff81000000ull;
	s.sched_hi = 0xffffffff81001000ull;
	if (!s.bounce)
		return 1;
	for (int i = 0; i < 100000; i++) {
		size_t len = rnd() % sizeof(buf);
		int mode = rnd() % 4;

		for (size_t j = 0; j < len; j += 8) {
			uint64_t v = rnd();

			memcpy(buf + j, &v, len - j < 8 ? len - j : 8);
		}
		if (mode >= 1 && len >= sizeof(*smp)) {
			/* plausible sample headers, random counts and sizes */
			smp->hdr.type = mode == 1 ? EMBER_REC_OFFCPU : rnd() % 8;
			smp->hdr.size = mode == 3 ? len & ~7ul : rnd() % (len + 16);
			smp->nr_kernel = rnd() % 40;
			smp->nr_user = rnd() % 40;
			smp->comm[rnd() % 16] = 0;
			if (smp->nr_kernel)
				smp->ips[rnd() % smp->nr_kernel] = s.sched_lo + 16;
		}
		if (mode == 2) {
			/* through the perf buffer path: header, size, data */
			struct perf_event_header *ev = (void *)buf;

			ev->type = PERF_RECORD_SAMPLE;
			ev->size = len;
			perfbuf_cb(&s, 0, ev);
		} else {
			deliver(&s, buf, len);
		}
	}
	printf("OK delivered=%lu corrupt=%llu invalid_delivered=%lu\n",
	       delivered, (unsigned long long)s.corrupt, bad);
	free(s.bounce);
	return bad ? 1 : 0;
}
