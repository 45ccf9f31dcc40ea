/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The backends' table-driven user walk (kmod/unwind_user.c's
 * ember_walk_cfi(), bpf/unwind.bpf.h), run in the agent over a stack
 * copy (EMBER_REC_USER_STACK) with the tables the worker shared
 * (table_share.h): what the backend would have found had the process
 * been bound when the sample was taken. Each rule is one step of
 * include/ember_unwind.h, reads come from the copy only, and a return
 * address outside every mapping ends the walk as cut: never a frame
 * that is not in the copy's chain.
 *
 * Where the tables do not decide (a file the share does not know, or
 * x86 code without CFI at the interrupted instruction, where the
 * backend reads the instruction itself), the walk says so and the
 * caller asks libdwfl instead.
 */
#ifndef EMBER_COPY_WALK_H
#define EMBER_COPY_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ember_unwind.h"
#include "proc/proc_maps.h"
#include "unwind/table_share.h"

/* An executable mapping of the process, as its binding would hold it. */
struct copy_walk_map {
	uint64_t start, end, bias;
	struct table_ref ref;	/* ref.table NULL: frame-pointer steps */
	bool known;		/* false: the share does not know the file */
	/* the file, for a table built on the spot (known false only) */
	uint64_t dev, ino, pgoff;
	char *path;
};

/* The mappings of one process, sorted and disjoint. */
struct copy_walk_maps {
	uint32_t pid;
	struct copy_walk_map *v;
	uint32_t n, cap;
	struct table_share *share;
};

/*
 * How a walk ended. COPY_WALK_UNDECIDED: the tables cannot tell (a file
 * the share does not know; x86 code without CFI at an exact PC), ask
 * libdwfl. COPY_WALK_NO_MAPPING: a return address in no mapping (maybe
 * code mapped after these maps were told: read them again).
 */
enum copy_walk_end {
	COPY_WALK_COMPLETE,	/* the outermost frame: proven whole */
	COPY_WALK_CUT,		/* a rule, a read or a sanity check failed */
	COPY_WALK_READ_PAST,	/* the walk wanted bytes the copy lacks */
	COPY_WALK_FP_END,	/* a frame-pointer chain ended: root decides */
	COPY_WALK_TRUNC,	/* max frames */
	COPY_WALK_NO_MAPPING,
	COPY_WALK_UNDECIDED,
};

struct copy_walk_in {
	const struct copy_walk_maps *maps;
	struct ember_uregs regs;	/* the sample's (exact, lr_ok set) */
	const uint8_t *stack;		/* the copy of memory from regs.sp up */
	size_t stack_len;
	bool at_entry;			/* regs at a function's first instruction */
};

void copy_walk_maps_init(struct copy_walk_maps *m, struct table_share *share,
			 uint32_t pid);
/* proc_maps_fn: add one executable mapping (and its file's table). */
bool copy_walk_maps_add(void *ctx, struct sym_map_line *line);
/* Sort; after the last add. */
void copy_walk_maps_done(struct copy_walk_maps *m);
/* Let go of the tables and the mappings (m is then empty, pid kept). */
void copy_walk_maps_clear(struct copy_walk_maps *m);

/*
 * The table of an unknown file mapping, now in the share: m->ref, its
 * bias and m->known from the share again.
 */
void copy_walk_map_refresh(struct copy_walk_maps *maps,
			   struct copy_walk_map *m);
/*
 * Walk: up to max PCs into ips, leaf first (the exact PC, then return
 * addresses, as in samples); *end says how it ended, and *unknown the
 * index of the mapping whose file the share did not know (-1: none).
 * Returns how many.
 */
int copy_walk(const struct copy_walk_in *in, uint64_t *ips, int max,
	      enum copy_walk_end *end, int *unknown);

#endif
