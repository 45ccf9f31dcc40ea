/* SPDX-License-Identifier: GPL-2.0-only */
/* Module backend details `ember status` shows (source_kmod.c). */
#ifndef EMBER_SOURCE_KMOD_H
#define EMBER_SOURCE_KMOD_H

#include <stdbool.h>
#include <stdint.h>
#include "source/source.h"

#define KMOD_MAX_RECORD	(64u << 10)	/* larger is corrupt */

struct kmod_info {
	bool valid;
	uint32_t version;	/* EMBER_ABI_VERSION of the module */
	uint64_t caps;		/* EMBER_CAP_* */
	bool running;
	uint32_t nr_rings, ring_size;
	uint32_t clock_used, freq, events;
	/* CFI unwind tables and bindings loaded, and the module's cap */
	uint64_t unwind_used, unwind_cap;
	uint64_t ring_mem_used, ring_mem_cap;
	uint32_t unwind_tables, unwind_bound;
};

struct kmod_cpu_stats {
	uint32_t cpu;
	bool online;
	uint64_t samples, filtered, records, lost, handler_ns;
	uint64_t offcpu_switches, offcpu_overflow, offcpu_ns;
	uint64_t ustack_cfi, ustack_fp, ustack_cut, unwind_miss, unwind_miss_limited;
	uint64_t lock_waits, lock_overflow, lock_wakers;
};

/*
 * GET_INFO, then (if per_cpu) one callback per CPU of GET_STATS.
 * -ENOENT when the module is not loaded.
 */
int kmod_query(struct kmod_info *info,
	       void (*per_cpu)(const struct kmod_cpu_stats *, void *), void *arg);

/*
 * Drain one ring (data_size a power of two) into fn; records the reader
 * cannot delimit make it skip to the producer and count in *corrupt.
 * copy must hold KMOD_MAX_RECORD bytes. Returns records delivered.
 */
int kmod_drain(struct ember_ring_ctrl *ctrl, const unsigned char *data,
	       uint64_t data_size, void *copy, ember_record_fn fn, void *ctx,
	       uint64_t *corrupt);

#endif
