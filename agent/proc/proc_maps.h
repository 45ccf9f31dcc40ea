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

/*
 * An executable mapping of a process, the line parsed in place; return
 * false to stop reading.
 */
typedef bool (*proc_maps_fn)(void *ctx, struct sym_map_line *m);

/*
 * Read ROOT/PID/maps (root NULL: "/proc") and call fn for each executable
 * mapping. The file is the kernel's but its size is the process's doing
 * (up to vm.max_map_count lines, paths as deep as it likes): it is read in
 * a few large read()s, at most PROC_MAPS_MAX_BYTES and PROC_MAPS_MAX_NS
 * (fn's time included), and a line longer than a path that can be opened
 * is skipped. *hash (when not NULL): of the executable lines' text, to
 * tell whether they changed. 0, or -errno when the file cannot be opened
 * (the process is gone, or not ours to see).
 */
#define PROC_MAPS_MAX_BYTES	(16u << 20)
#define PROC_MAPS_MAX_NS	(2ull * 1000000000)
int proc_maps_read(const char *root, uint32_t pid, proc_maps_fn fn, void *ctx,
		   uint64_t *hash);
/*
 * As proc_maps_read(), and *cut (when not NULL) says whether fn may not
 * have seen every line: a budget ran out before the file's end, a line
 * was skipped for its length, or a read failed. A mapping missing from
 * the lines fn saw may then still exist.
 */
int proc_maps_read_cut(const char *root, uint32_t pid, proc_maps_fn fn,
		       void *ctx, uint64_t *hash, bool *cut);

struct stat;

/* buf = "/proc/PID/map_files/START-END", the entry of that mapping. */
void proc_map_files_path(char *buf, size_t len, uint32_t pid, uint64_t start,
			 uint64_t end);

/*
 * Open pid's /proc/PID/map_files entry for the mapping at [start, end)
 * under rules (which must allow SAFE_FOLLOW: the entry is a magic link).
 * A range told by the kernel's mapping records may run past the mapping's
 * end (they report executable mappings only, and arm64's loader maps a
 * whole image executable, then its data over the tail): when no entry
 * has that name, the one that starts at start is opened. The fd, or -1
 * with *why (lib/safe_file.h).
 */
struct safe_rules;
int proc_map_files_open(uint32_t pid, uint64_t start, uint64_t end,
			const struct safe_rules *rules, struct stat *st,
			const char **why);

/*
 * Open the file process pid maps at [start, end), a regular file of at
 * most max_bytes owned by anyone: its /proc/PID/map_files entry (the very
 * file the mapping holds, whatever its name now; start == end: none to
 * try), else, when that was not refused for cause (safe_refused()), path
 * by name inside root (NULL: /proc/PID/root; "/" for a process already
 * gone, whose file the caller then checks by device and inode). A NULL
 * path, or one the kernel marks deleted, has no name to try. The fd, or
 * -1 with *why (lib/safe_file.h); st (may be NULL): the file opened.
 */
int proc_mapped_open(uint32_t pid, uint64_t start, uint64_t end,
		     const char *path, const char *root, uint64_t max_bytes,
		     struct stat *st, const char **why);

/*
 * The end of pid's mapping that starts at start, from the names in
 * /proc/PID/map_files (no maps text to generate), or 0 when none starts
 * there; -1: pid is gone. Bounded: at most PROC_MAP_FILES_MAX_NAMES
 * names are looked at (four times what a binding holds).
 */
#define PROC_MAP_FILES_MAX_NAMES	8000
int proc_map_files_end(uint32_t pid, uint64_t start, uint64_t *end);

#endif
