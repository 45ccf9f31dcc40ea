/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ember record -e alloc: probes for the processes a recording allocates
 * in (record_alloc.c). cmd_record.c's only.
 */
#ifndef EMBER_RECORD_ALLOC_H
#define EMBER_RECORD_ALLOC_H

#include <stddef.h>
#include "cli/record_opts.h"
#include "session/session.h"

/*
 * Probes on the sampler library lib, and on the allocator of each -p
 * process started without it (said per process, with the cost).
 */
int record_alloc_start(struct session *s, const struct ember_opts *o,
		       const char *lib, char *err, size_t err_len);

struct alloc_cgroup;
/*
 * --cgroup dir: probe its processes' allocators now and at each of the
 * session's scans (s->on_scan). *out is the caller's to free().
 */
int alloc_cgroup_start(struct session *s, const char *dir, const char *lib,
		       struct alloc_cgroup **out, char *err, size_t err_len);

#endif
