/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * /proc/PID/maps (proc_maps.c): one line parsed in place. Used by the
 * process model (proc.c), the symbolizer and the unwind service.
 */
#ifndef EMBER_PROC_MAPS_H
#define EMBER_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sym_map_type {
	SYM_MAP_FILE,		/* a regular file (maybe deleted) */
	SYM_MAP_MEMFD,		/* "/memfd:NAME (deleted)" */
	SYM_MAP_ANON,		/* anonymous executable memory: JIT */
	SYM_MAP_VDSO,
	SYM_MAP_VSYSCALL,
	SYM_MAP_OTHER,		/* [stack], [heap], [anon:...] */
};

struct sym_map_line {
	uint64_t start, end, pgoff;
	uint64_t dev, ino;	/* makedev(major, minor), inode */
	bool exec, deleted;
	enum sym_map_type type;
	const char *path;	/* points into the parsed line; "" if none */
	size_t path_len;	/* without " (deleted)" */
};

/* Parses one maps line in place (line is modified). false if malformed. */
bool sym_maps_parse_line(char *line, struct sym_map_line *m);

#endif
