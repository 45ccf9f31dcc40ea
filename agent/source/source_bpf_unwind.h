/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The eBPF backend's side of CFI unwinding (bpf/unwind.bpf.h): puts the
 * agent's tables into the three mmap'ed array pools (page index, rows,
 * rules) with a first-fit allocator, describes each table in uw_tables and
 * each bound process in uw_procs. Thread-safe: called from the unwind
 * worker while another thread reads the ring.
 */
#ifndef EMBER_SOURCE_BPF_UNWIND_H
#define EMBER_SOURCE_BPF_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <bpf/libbpf.h>
#include "uapi/ember.h"

struct bpf_unwind;

struct bpf_unwind_maps {
	struct bpf_map *pages, *rows, *rules, *tables, *procs, *proc_slots;
};

/*
 * Map sizes before the object is loaded: nothing when CFI is off; few
 * process slots when only some processes are profiled (pid filter).
 */
struct kmem_budget;
void bpf_unwind_size(const struct bpf_unwind_maps *m, const struct kmem_budget *kb,
		     bool enabled,
		     bool few_processes);
/* After load: map the pools. NULL with err set on failure. */
struct bpf_unwind *bpf_unwind_new(const struct bpf_unwind_maps *m,
				  char *err, size_t err_len);
int bpf_unwind_load(struct bpf_unwind *u, uint32_t id, const void *table,
		    size_t len, char *err, size_t err_len);
int bpf_unwind_drop(struct bpf_unwind *u, uint32_t id);
int bpf_unwind_bind(struct bpf_unwind *u, uint32_t pid,
		    const struct ember_unwind_mapping *maps, size_t nr,
		    char *err, size_t err_len);

struct bpf_unwind_usage {
	uint64_t bytes_used, bytes_cap;	/* pools */
	uint32_t tables, procs;
	uint64_t load_refused;		/* pools full: counted, never silent */
	uint64_t mappings_dropped;	/* beyond EMBER_BPF_MAX_MAPPINGS */
};
void bpf_unwind_usage(struct bpf_unwind *u, struct bpf_unwind_usage *out);
void bpf_unwind_free(struct bpf_unwind *u);

#endif
