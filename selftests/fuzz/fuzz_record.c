// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: ring bytes -> the agent's record path. Records come from the
 * kernel, but a bug there, a version skew or a corrupted ring must cost a
 * counted bad record, never a crash: split the input into records the way
 * a ring reader does (header size, 8-byte steps) and feed each to the
 * profile builder and the unwind check, then freeze a profile and write
 * it as folded stacks (lock waits' [lock ...]/[waker COMM] frames too).
 * Mapping, exec and exit records also go to a small kmaps (bounds hit
 * quickly), whose view of each record's pid is read back.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/aggregate.h"
#include "aggregate/profile.h"
#include "output/output.h"
#include "proc/kmaps.h"
#include "source/source.h"
#include "unwind/unwind_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct unwind_check *chk;
	static struct kmaps *km;
	static FILE *null_out;
	struct profile *p;
	struct pb_options opt = { .max_stacks = 256, .max_timestamps = 4 };
	struct profile_builder *pb = pb_new(&opt, NULL);
	struct prof_meta meta = { .host_name = "fuzz", .backend = "fuzz",
				  .freq_hz = 99, .period_ns = 10101010 };
	uint64_t buf[8192];
	size_t off = 0;

	if (!chk)
		chk = unwind_check_new();
	if (!km)
		km = kmaps_new(64, 256u << 10);
	if (!null_out)
		null_out = fopen("/dev/null", "w");
	if (!pb || size > sizeof(buf))
		goto out;
	memcpy(buf, data, size);	/* records are 8-byte aligned in rings */
	while (off + sizeof(struct ember_rec_header) <= size) {
		const struct ember_rec_header *h = (const void *)((uint8_t *)buf + off);
		size_t step = h->size >= 8 && h->size % 8 == 0 && h->size <= size - off ?
			      h->size : 8;

		if (ember_record_valid(h, size - off)) {
			pb_add_record(pb, h);
			if (h->type != EMBER_REC_USER_STACK)	/* no libdwfl here */
				unwind_check_record(chk, h);
			if (h->type == EMBER_REC_MMAP || h->type == EMBER_REC_EXEC ||
			    h->type == EMBER_REC_EXIT) {
				uint64_t hash;

				kmaps_record(km, h);
				/* pid sits at the same offset in all three */
				kmaps_read(km, ((const struct ember_exit *)h)->pid,
					   NULL, NULL, &hash);
			}
		}
		off += step;
	}
	p = pb_finish(pb, &meta);
	if (p && null_out)
		output_folded(p, null_out);
	profile_free(p);
out:
	pb_free(pb);
	return 0;
}
