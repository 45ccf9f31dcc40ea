/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The eBPF backend's counters (struct ember_bpf_stats, one per possible
 * CPU in a per-CPU array) read and summed in one place: the backend's own
 * stats, its verbose report and `ember status` looking at another ember.
 */
#ifndef EMBER_BPF_STATS_H
#define EMBER_BPF_STATS_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "ember_bpf.h"

/*
 * Sum over ncpu CPUs of the counters in map fd into *sum: 0, or a negative
 * errno (*sum is then zero). Every field is a __u64 counter.
 */
static inline int bpf_stats_sum(int fd, int ncpu, struct ember_bpf_stats *sum)
{
	const size_t nf = sizeof(*sum) / sizeof(__u64);
	struct ember_bpf_stats *st;
	__u32 zero = 0;
	int r = 0;

	_Static_assert(sizeof(struct ember_bpf_stats) % sizeof(__u64) == 0,
		       "ember_bpf_stats holds __u64 counters only");
	memset(sum, 0, sizeof(*sum));
	if (ncpu <= 0)
		return -EINVAL;
	st = calloc((size_t)ncpu, sizeof(*st));
	if (!st)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &zero, st)) {
		r = -errno;
	} else {
		for (int c = 0; c < ncpu; c++) {
			const __u64 *in = (const __u64 *)&st[c];
			__u64 *out = (__u64 *)sum;

			for (size_t i = 0; i < nf; i++)
				out[i] += in[i];
		}
	}
	free(st);
	return r;
}

#endif
