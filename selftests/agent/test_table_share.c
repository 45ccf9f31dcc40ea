// SPDX-License-Identifier: GPL-2.0-only
/*
 * The table share (agent/unwind/table_share.h): files by device and
 * inode, tables held while a walker holds them, bytes counted once per
 * table however many files share it, the cap kept by evicting the least
 * recently used, and a forget that only takes the table its tag names.
 */
#include <stdint.h>
#include <string.h>

#include "unwind/table_share.h"
#include "test_util.h"

static const struct table_share_seg seg = { 0x1000, 0x1000, 0x2000 };

static struct table_blob *blob_of(struct table_share *ts, size_t len,
				  uint8_t fill)
{
	static uint8_t buf[8192];

	memset(buf, fill, sizeof(buf));
	return table_blob_new(ts, buf, len);
}

int main(void)
{
	struct table_share *ts = table_share_new(3 * 4096);
	struct table_share_stats st;
	struct table_blob *a, *b, *c;
	struct table_ref ref, ref2;
	uint64_t bias = 0;

	T_CHECK("table_share_new", ts != NULL, "out of memory");
	if (!ts)
		T_EXIT();
	T_CHECK("table_share_unknown",
		!table_share_get(ts, 1, 2, &ref) && !ref.table && !ref.blob,
		"an unknown file was found");
	T_CHECK("table_share_blob_over_cap", !blob_of(ts, 4 * 4096, 1),
		"a table bigger than the cap was taken");

	a = blob_of(ts, 4096, 0xaa);
	table_share_put(ts, 8, 100, &seg, 1, a, 1);
	/* a second file with the same table (one build-id): bytes once */
	table_share_put(ts, 8, 101, &seg, 1, a, 1);
	/* a file without a table: known, no bytes */
	table_share_put(ts, 8, 102, &seg, 1, NULL, 0);
	table_share_get_stats(ts, &st);
	T_CHECK("table_share_bytes_once", st.bytes == 4096 && st.files == 3,
		"bytes %lu files %u", (unsigned long)st.bytes, st.files);
	T_CHECK("table_share_get",
		table_share_get(ts, 8, 101, &ref) && ref.table &&
		((const uint8_t *)ref.table)[0] == 0xaa && ref.nr_segs == 1,
		"the shared table was not found");
	T_CHECK("table_share_no_table",
		table_share_get(ts, 8, 102, &ref2) && !ref2.table,
		"a file without a table got one");
	table_share_unref(ts, &ref2);
	T_CHECK("table_ref_bias",
		table_ref_bias(&ref, 0x7f0000002000ull, 0x1000, &bias) &&
		bias == 0x7f0000001000ull &&
		!table_ref_bias(&ref, 0x7f0000002000ull, 0x9000, &bias),
		"bias %#lx", (unsigned long)bias);

	/* forgotten while held: the walker's reference keeps the bytes */
	table_share_forget(ts, 8, 100, 1);
	table_share_forget(ts, 8, 101, 1);
	table_share_get_stats(ts, &st);
	T_CHECK("table_share_forget", st.files == 1 && st.bytes == 0 &&
		!table_share_get(ts, 8, 100, &ref2),
		"files %u bytes %lu", st.files, (unsigned long)st.bytes);
	T_CHECK("table_share_held_after_forget",
		((const uint8_t *)ref.table)[4095] == 0xaa,
		"a held table changed");
	table_share_unref(ts, &ref);

	/* a forget naming another table leaves the newer entry */
	b = blob_of(ts, 4096, 0xbb);
	table_share_put(ts, 8, 200, &seg, 1, b, 2);
	table_share_forget(ts, 8, 200, 1);
	T_CHECK("table_share_forget_other_kept", table_share_get(ts, 8, 200, &ref),
		"a newer table was forgotten by an old one's drop");
	table_share_unref(ts, &ref);
	table_blob_put(ts, b);
	table_blob_put(ts, a);		/* the maker's reference: a goes */

	/* over the cap: the least recently used goes */
	c = blob_of(ts, 4096, 0xcc);
	table_share_put(ts, 8, 300, &seg, 1, c, 3);
	table_blob_put(ts, c);
	c = blob_of(ts, 4096, 0xdd);
	table_share_put(ts, 8, 301, &seg, 1, c, 4);
	table_blob_put(ts, c);
	/* 200 (0xbb) used last by the get above, then 300, 301: touch 200 */
	table_share_get(ts, 8, 200, &ref);
	table_share_unref(ts, &ref);
	c = blob_of(ts, 4096, 0xee);
	table_share_put(ts, 8, 302, &seg, 1, c, 5);
	table_blob_put(ts, c);
	table_share_get_stats(ts, &st);
	T_CHECK("table_share_cap", st.bytes <= 3 * 4096 && st.evicted == 1,
		"bytes %lu evicted %lu", (unsigned long)st.bytes,
		(unsigned long)st.evicted);
	T_CHECK("table_share_lru",
		!table_share_get(ts, 8, 300, &ref) &&
		table_share_get(ts, 8, 200, &ref2),
		"the least recently used table was not the one evicted");
	table_share_unref(ts, &ref2);
	/* a replaced entry: the newest table for the inode */
	c = blob_of(ts, 4096, 0x11);
	table_share_put(ts, 8, 200, &seg, 1, c, 6);
	table_blob_put(ts, c);
	T_CHECK("table_share_replace",
		table_share_get(ts, 8, 200, &ref) &&
		((const uint8_t *)ref.table)[0] == 0x11,
		"the file's old table was kept");
	table_share_unref(ts, &ref);
	table_share_free(ts);
	T_EXIT();
}
