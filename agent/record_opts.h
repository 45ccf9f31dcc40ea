/* SPDX-License-Identifier: GPL-2.0-only */
/* ember record's command line (cmd_record.c), parsed apart so tests can. */
#ifndef EMBER_RECORD_OPTS_H
#define EMBER_RECORD_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum out_format {
	OUT_AUTO,		/* from -o's extension */
	OUT_FOLDED,
	OUT_SVG,
	OUT_PPROF,
	OUT_OTLP,
};

struct record_opts {
	uint32_t freq_hz;
	uint32_t events;		/* EMBER_EV_ONCPU/OFFCPU */
	uint32_t *pids;			/* -p, malloc'd */
	size_t nr_pids;
	const char *cgroup_path;	/* --cgroup */
	bool all;			/* -a (the default without -p/--cgroup/cmd) */
	uint64_t duration_ms;		/* -d, 0 = until Ctrl-C */
	const char *output;		/* -o, "-" = stdout */
	enum out_format format;
	const char *backend;		/* auto|kmod|bpf */
	size_t max_stacks;
	bool include_idle;
	uint64_t offcpu_min_ns;	/* --offcpu-min, 0: every interval */
	uint32_t fault_period;		/* --fault-period, 0: the default */
	uint64_t alloc_rate;		/* --alloc-rate bytes, 0: the default */
	const char *alloc_lib;		/* --alloc-lib, NULL: found */
	bool offcpu_state;		/* --off-cpu-state */
	int group_by;			/* --group-by: enum prof_group_by */
	char *debug_dirs;		/* --debug-dir, ':'-joined, malloc'd; NULL = default */
	bool debuginfod;		/* --debuginfod */
	bool no_cfi;			/* --no-cfi: frame pointers only */
	bool verbose_cfi;		/* --verbose-cfi */
	bool check_unwind;		/* --check-unwind (test mode) */
	char **command;			/* after --, NULL-terminated; NULL if none */
	bool help;
};

/*
 * Parse argv (argv[0] = "record"). Returns 0, or -1 with a message in err.
 * Resolves the output format (OUT_AUTO never remains).
 */
int record_parse_args(int argc, char **argv, struct record_opts *o,
		      char *err, size_t err_len);
void record_opts_free(struct record_opts *o);
/* The format an output file name implies; OUT_AUTO when unknown. */
enum out_format format_from_name(const char *path);
const char *format_name(enum out_format f);

#endif
