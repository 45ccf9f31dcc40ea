/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Host-side symbolization of kernel and user addresses (elfutils based).
 *
 * One symbolizer serves every process: ELF files are cached by build-id (or
 * device+inode+mtime when there is none) so each library is read once, and
 * the cache is bounded by a memory budget. Processes are tracked by pid;
 * their mappings are read from /proc/PID/maps as early as possible (at exec
 * records) so that short-lived processes still resolve after they exit.
 */
#ifndef EMBER_SYMBOLIZE_H
#define EMBER_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct exec_snaps;
struct kmaps;

enum sym_frame_kind {
	SYM_FRAME_KERNEL,
	SYM_FRAME_NATIVE,
	SYM_FRAME_JIT,		/* from /tmp/perf-PID.map */
	SYM_FRAME_UNKNOWN,	/* no mapping, or nothing resolved */
	SYM_FRAME_PYTHON,	/* a CPython frame: function = co_qualname,
				 * source_file = co_filename, line */
};

/*
 * One resolved frame. Strings are owned by the symbolizer and live until
 * sym_free(); they are interned, so equal strings have equal pointers.
 */
struct sym_frame {
	enum sym_frame_kind kind;
	const char *function;	/* demangled; NULL when unresolved */
	const char *module;	/* file path, "[kernel.kallsyms]" or module name */
	const char *build_id;	/* hex GNU build-id, NULL when none */
	const char *source_file;	/* NULL without DWARF line info */
	uint32_t line;
	bool inlined;		/* an inline frame inside the next one */
	uint64_t address;	/* the address looked up */
	uint64_t module_offset;	/* file offset of address in module */
	uint64_t map_start, map_end, map_pgoff;	/* the mapping, if any */
};

struct symbolizer;

struct sym_options {
	size_t cache_bytes;	/* memory budget for cached ELF/DWARF data */
	bool use_debuginfod;	/* consult DEBUGINFOD_URLS (off by default) */
	bool no_dwarf;		/* symbols only: no line/inline info */
	/*
	 * A file whose DWARF is bigger than this once decompressed resolves
	 * by symbols only (no lines, no inline frames): libdw holds all of it
	 * in the heap while in use. 0 = default (SYM_DEFAULT_DWARF_MAX, which
	 * leaves out e.g. libc6-dbg's 10 MB), SIZE_MAX = no cap.
	 */
	size_t dwarf_max_bytes;
	/*
	 * ':'-separated roots searched for separate debug files
	 * (ROOT/.build-id/xx/yyyy.debug, ROOT/DIR/DEBUGLINK); NULL or "" means
	 * "/usr/lib/debug". Tests point it at a temporary tree.
	 */
	const char *debug_dirs;
	/*
	 * The session's process model (proc/proc.h): the symbolizer's state
	 * of a process goes with its entry. NULL: a table of its own, whose
	 * exited processes sym_sweep() frees.
	 */
	struct proc_table *procs;
	/*
	 * The session's exec snapshots (proc/exec_snap.h): the maps of a
	 * process gone before they were read. NULL: none.
	 */
	struct exec_snaps *exec_snaps;
	/*
	 * The session's mappings from the kernel (proc/kmaps.h): a process
	 * that exec'd while it runs costs no /proc/PID/maps read. NULL: none.
	 */
	struct kmaps *kmaps;
};

#define SYM_DEFAULT_DEBUG_DIR "/usr/lib/debug"
#define SYM_DEFAULT_DWARF_MAX (8u << 20)

/*
 * Append dir to a malloc'd ':'-separated debug_dirs list (*list may be
 * NULL). -EINVAL when dir is empty or holds ':', -ENOMEM.
 */
int sym_debug_dirs_add(char **list, const char *dir);

struct symbolizer *sym_new(const struct sym_options *opt);
void sym_free(struct symbolizer *s);

/*
 * Lifecycle hints from exec/exit records; both are cheap and optional.
 * A symbolizer on the session's process model gets these, the refresh,
 * check and touch below through its slot's events instead
 * (proc_table_event()): these are for callers without one (tests).
 */
void sym_process_exec(struct symbolizer *s, uint32_t pid);
void sym_process_exit(struct symbolizer *s, uint32_t pid);
/* New code may be mapped: re-read the process's maps now (rate-limited). */
void sym_process_refresh(struct symbolizer *s, uint32_t pid);
/*
 * A new stack of a live process: if an address is in none of its cached
 * maps (a library mapped after they were read), re-read them now, while
 * the process can still be read.
 */
void sym_process_check(struct symbolizer *s, uint32_t pid,
		       const uint64_t *ips, size_t n);
/* Make sure a process's mappings are known now (reads /proc if needed). */
void sym_process_touch(struct symbolizer *s, uint32_t pid);
/*
 * Read again the maps of processes that exec'd AFTER_EXEC_NS ago (their
 * libraries are mapped by then); returns the ns until the next such read,
 * UINT64_MAX when none is pending. The reader calls it around each poll.
 */
uint64_t sym_run_due(struct symbolizer *s);
/*
 * Forget processes marked by sym_process_exit(). Call it once the profile
 * that may still need their mappings has been built and freed (a daemon
 * calls it after each interval); sym_free() does it too. With a shared
 * process model (sym_options.procs) it does nothing: releasing the
 * table's generation frees them.
 */
void sym_sweep(struct symbolizer *s);
/*
 * Give memory back once a profile has been built: DWARF state (decompressed
 * debug sections, line tables, the function index) is dropped and rebuilt
 * on demand, mapped ELF pages leave the RSS, free heap returns to the
 * kernel. Symbol tables and process mappings stay. Profiles already built
 * stay valid (their strings are interned, not in DWARF).
 */
void sym_trim(struct symbolizer *s);
/*
 * Read the kernel symbol table now instead of at the first kernel lookup:
 * a daemon calls it at startup so that its first interval does not pay for
 * it. Kept until sym_free().
 */
void sym_preload_kernel(struct symbolizer *s);

/*
 * Resolve one address. For user frames, is_return says the address is a
 * return address (every frame but the leaf), so the call site is looked up.
 * Fills up to max frames, innermost (inlined) first, and returns how many
 * (always >= 1: an unresolved address still yields a SYM_FRAME_UNKNOWN or a
 * module+offset frame).
 */
int sym_resolve_user(struct symbolizer *s, uint32_t pid, uint64_t addr,
		     bool is_return, struct sym_frame *out, int max);
int sym_resolve_kernel(struct symbolizer *s, uint64_t addr,
		       struct sym_frame *out, int max);
/*
 * Where pid's CPython interpreter loop is (python.h), found as for naming
 * its frames: false when pid has no interpreter ember knows.
 */
struct py_eval_ranges;
bool sym_python_eval(struct symbolizer *s, uint32_t pid,
		     struct py_eval_ranges *ev);
/*
 * A Python frame: the EMBER_IP_PY slot's code address and the slot after
 * it (check << 32 | byte offset), include/uapi/ember.h. Always one frame:
 * SYM_FRAME_PYTHON, named "[unknown python code]" (SYM_PY_UNKNOWN) when
 * the code object cannot be read or is not the one sampled.
 */
#define SYM_PY_UNKNOWN	"[unknown python code]"
void sym_resolve_python(struct symbolizer *s, uint32_t pid, uint64_t code,
			uint64_t word, struct sym_frame *out);

/*
 * The kernel data symbol addr lies in (a static lock, or the static
 * object holding it: *off bytes in), read from kallsyms on first use;
 * NULL when none. The name is interned (lives as the symbolizer).
 */
const char *sym_kernel_data_symbol(struct symbolizer *s, uint64_t addr,
				   uint64_t *off);

/* Format an unresolved frame the way outputs show it: "file+0xoff" or "0xaddr". */
const char *sym_frame_name(struct symbolizer *s, const struct sym_frame *f);

struct sym_stats {
	uint64_t lookups, hits, misses;
	uint64_t snapshot_reads;	/* gone processes' maps from exec_snaps */
	uint64_t kmaps_reads;		/* processes' maps from kmaps, not /proc */
	uint64_t elf_files_open;
	size_t cache_bytes;
	uint32_t processes;
};
void sym_get_stats(struct symbolizer *s, struct sym_stats *st);

#endif /* EMBER_SYMBOLIZE_H */
