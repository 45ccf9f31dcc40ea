// SPDX-License-Identifier: GPL-2.0-only
/* The session options ember record and ember run set alike (session_opts.h). */
#include <errno.h>
#include <string.h>
#include "cli/session_opts.h"
#include "unwind/table_store.h"

/* per-sample times (OTLP output uses them) */
#define TIMESTAMPS_PER_STACK 1024

int session_opts_from(struct session_options *so, struct ember_opts *o)
{
	so->backend = o->backend;	/* "auto" is backend_choose()'s NULL */
	so->src.events = o->events | EMBER_EV_LIFECYCLE;
	so->src.freq_hz = o->freq_hz;
	so->src.include_idle = o->include_idle;
	so->src.offcpu_min_ns = o->offcpu_min_ns;
	so->src.fault_period = o->fault_period;
	so->src.lock_min_ns = o->lock_min_ns;
	so->src.lock_waker = o->lock_waker;
	so->src.kstack_max = EMBER_DEFAULT_FRAMES;
	so->src.ustack_max = EMBER_DEFAULT_FRAMES;
	so->src.pids = o->pids;
	so->src.nr_pids = o->nr_pids;
	so->pb.max_stacks = o->max_stacks;
	so->pb.max_timestamps = TIMESTAMPS_PER_STACK;
	so->no_unwind_tables = o->no_cfi;
	so->src.no_unwind_tables = o->no_cfi;
	so->src.kernel_mem_mb = o->kernel_mem_mb;
	/* frame pointers only (--no-cfi): nothing would replay the copies */
	so->src.stack_copy_bytes = o->no_cfi ? 0 :
		(o->stack_copy_bytes + EMBER_STACK_COPY_UNIT - 1) /
		EMBER_STACK_COPY_UNIT * EMBER_STACK_COPY_UNIT;
	so->sym.use_debuginfod = o->debuginfod;
	if (!o->table_cache)
		so->table_cache_dir = TABLE_STORE_DEFAULT_DIR;
	else if (*o->table_cache && strcmp(o->table_cache, "none"))
		so->table_cache_dir = o->table_cache;
	so->table_cache_max = (uint64_t)o->table_cache_max_mb << 20;
	/* --debug-dir adds to the default root, searched last */
	if (o->debug_dirs && sym_debug_dirs_add(&o->debug_dirs, SYM_DEFAULT_DEBUG_DIR))
		return -ENOMEM;
	so->sym.debug_dirs = o->debug_dirs;
	return 0;
}
