/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Internals shared by the symbolizer's files (symbolize.c and sym_*.c).
 * Nothing outside the symbolizer includes this, except its unit tests.
 *
 *   process (pid) --maps--> mapping --> sym_file (one per dev+inode, holds
 *   the mmapped ELF and its PT_LOAD table) --> sym_elf (one per build-id:
 *   symbol table + DWARF, loaded lazily, evicted LRU under cache_bytes).
 */
#ifndef EMBER_SYMBOLIZE_INTERNAL_H
#define EMBER_SYMBOLIZE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "symbolize/symbolize.h"
#include "proc/proc_maps.h"

/* ---- string interning (sym_intern.c) ---- */
struct sym_strings;
struct sym_strings *sym_strings_new(void);
void sym_strings_free(struct sym_strings *t);
const char *sym_intern_n(struct sym_strings *t, const char *str, size_t len);
const char *sym_intern(struct sym_strings *t, const char *str);
size_t sym_strings_bytes(const struct sym_strings *t);

/* ---- demangling (sym_demangle.c) ---- */
/* Demangled copy of name (malloc'd) or NULL when it is not mangled. */
char *sym_demangle(const char *name);

/* ---- kernel symbols (sym_kernel.c) ---- */
struct sym_kernel;
/* Parses path (normally /proc/kallsyms); NULL on failure (errno set). */
struct sym_kernel *sym_kernel_load(const char *path);
void sym_kernel_free(struct sym_kernel *k);
/* True when every address read as zero (kptr_restrict hides them). */
bool sym_kernel_hidden(const struct sym_kernel *k);
size_t sym_kernel_bytes(const struct sym_kernel *k);
/*
 * Symbol containing addr: name (valid until the next lookup), module
 * ("[kernel.kallsyms]" or "[mod]"), offset of addr from the module's base.
 * false when nothing matches.
 */
bool sym_kernel_lookup(struct sym_kernel *k, uint64_t addr,
		       const char **name, const char **module,
		       uint64_t *module_offset);
/*
 * Data symbols (d, D, b, B) of the same file, read on first need: the
 * names of static kernel locks. Lookup: the symbol addr is in (within
 * 4 KiB of its start), with the offset; NULL when none.
 */
struct sym_kdata;
struct sym_kdata *sym_kdata_load(const char *path);
void sym_kdata_free(struct sym_kdata *d);
const char *sym_kdata_lookup(const struct sym_kdata *d, uint64_t addr,
			     uint64_t *off);

/* ---- /proc/PID/maps lines: proc/proc_maps.h ---- */

/* ---- ELF files and their symbols (sym_elf.c) ---- */
struct sym_load {
	uint64_t offset, filesz, vaddr;
};

struct sym_symbol {
	uint64_t addr, size;
	const char *name;	/* into the ELF's mapped string table */
};

struct sym_elf;

struct sym_dwfunc {
	uint64_t lo, hi;	/* [lo, hi) */
	uint64_t die;		/* Dwarf_Off of the DW_TAG_subprogram */
	uint32_t cu;		/* index of its unit, for cu_seen */
};

/* One mapped file, shared by every process that maps the same dev+inode. */
struct sym_file {
	uint64_t dev, ino, size, mtime;	/* identity (dev/ino as in maps) */
	const char *path;	/* display path, interned */
	Elf *elf;		/* mmapped main file, NULL if not ELF/unreadable */
	Elf *debug_elf;		/* separate debug file found locally, or NULL */
	void *mem;		/* for in-memory images (vdso): freed with the file */
	struct sym_load *loads;
	size_t nr_loads;
	const char *build_id;	/* hex, interned; NULL when none */
	struct sym_elf *se;	/* shared parsed data; NULL if elf is NULL */
	uint32_t refs;		/* mappings pointing here */
	/*
	 * Read the file into memory instead of mapping it: a memfd can be
	 * shrunk by its owner at any time, and touching a mapped page past
	 * its new end would kill us with SIGBUS.
	 */
	bool copy_in;
	/* No fd could be had (process gone, no permission): retry later. */
	bool open_failed;
	struct sym_file *hash_next;
};

/*
 * Parsed symbols and DWARF for one build-id (or one file identity when the
 * file has no build-id). Loaded on first lookup from one of its files; the
 * loaded data points into that file's mapping (loaded_from).
 */
struct sym_elf {
	char *key;
	uint32_t refs;		/* sym_files pointing here */
	bool loaded, load_failed;
	struct sym_file *loaded_from;
	struct sym_symbol *syms;
	size_t nr_syms;
	char *plt_names;	/* "fn@plt" names of synthesized PLT symbols */
	Elf *dbgd_elf;		/* debug file from debuginfod, or NULL */
	Dwarf *dwarf;		/* NULL when no DWARF found or no_dwarf */
	bool dwarf_tried;
	/*
	 * Address ranges of every concrete function in the DWARF, sorted: a
	 * lookup goes straight to its function's DIE instead of walking the
	 * compilation unit's tree (dwarf_getscopes), which is 100x slower.
	 */
	struct sym_dwfunc *funcs;
	size_t nr_funcs;
	uint8_t *cu_seen;	/* per CU: its line table was loaded (cost) */
	/* Go's function table (sym_gopclntab.c), NULL when not a Go file */
	struct sym_gopcln *gopcln;
	size_t nr_cus;
	uint64_t index_fp;	/* dwarf_fingerprint() of what funcs indexes */
	size_t cost;		/* approximate heap bytes while loaded */
	size_t dwarf_cost;	/* the part of cost that is DWARF state */
	uint64_t used_gen;	/* sym_cache trim generation of its last lookup */
	struct sym_resolved *resolved;	/* sym_cache.c's answers, or NULL */
	struct sym_elf *lru_prev, *lru_next;
	struct sym_elf *hash_next;
};

/*
 * Largest ELF file mapped (main or debug file). Mapping costs address
 * space, not memory: pages are read as lookups touch them, and what is
 * touched is bounded apart (SYM_SYMTAB_MAX_BYTES, the DWARF cap, CRCs in
 * pieces). A file mostly made of holes is refused when opened
 * (SAFE_SPARSE_RATIO), so a process cannot have us walk gigabytes its
 * owner never paid disk for.
 */
#define SYM_ELF_MAX_BYTES (16ull << 30)
/*
 * A symbol table over this is not read (the next table is used): its
 * entries become our heap (24 bytes each, like the file's), and no real
 * program has 5 million symbols in one table.
 */
#define SYM_SYMTAB_MAX_BYTES (128ull << 20)
/*
 * A separate debug file matched by .gnu_debuglink CRC (a file without a
 * build-id) is read whole: not one over this.
 */
#define SYM_CRC_MAX_BYTES (2ull << 30)
/* Longest .gnu_debuglink name followed (it comes from the file itself). */
#define SYM_DEBUGLINK_MAX 255

struct sym_elf_ctx {
	const char *debug_dirs;	/* never NULL */
	bool no_dwarf;
	uint64_t dwarf_max_bytes;	/* per-file DWARF cap, 0 = none */
	void *debuginfod;	/* debuginfod_client *, NULL when off */
	struct sym_strings *strings;
};

/*
 * Where a mapped file was found, for finding its debug file by name: root
 * "/proc/PID/root" (or "": ours), path as the process sees it (NULL:
 * unknown), and who may own files found there besides root
 * (safe_proc_owners(); SAFE_ANY_OWNER in unused slots).
 */
struct sym_origin {
	const char *root;
	const char *path;
	uid_t owners[2];
};

/*
 * Opens and maps fd's ELF (takes ownership of fd: it is closed). Fills
 * f->elf, loads, build_id, and finds a separate debug file now (while the
 * process's root is still there): by build-id under the debug roots, then
 * by .gnu_debuglink next to o->path (inside o->root) and under the debug
 * roots. A non-ELF or corrupt file leaves f->elf NULL.
 */
void sym_file_open_fd(struct sym_file *f, int fd, const struct sym_origin *o,
		      const struct sym_elf_ctx *ctx);
/* Same from memory (the vdso); takes ownership of mem (malloc'd). */
void sym_file_open_mem(struct sym_file *f, void *mem, size_t size,
		       const struct sym_elf_ctx *ctx);
void sym_file_close(struct sym_file *f);
/* File offset -> ELF virtual address via PT_LOAD; false if outside all. */
bool sym_file_vaddr(const struct sym_file *f, uint64_t off, uint64_t *vaddr);

/* Helpers shared by sym_elf.c, sym_debugfile.c and sym_dwarf.c. */
/* Maps fd's file (native-endian ELF only); NULL if it is not one. */
Elf *sym_map_elf(int fd);
/* elf_end() and unmap an Elf from sym_map_elf(); NULL is fine. */
void sym_unmap_elf(Elf *elf);
/* Drops a mapped Elf's pages from our RSS (they come back on access). */
void sym_release_pages(Elf *elf);
/* The same for the pages within [off, off + len) of the image. */
void sym_release_range(Elf *elf, size_t off, size_t len);
/*
 * Drops an image's libelf state and creates it again on the same mapped
 * bytes (sym_map_elf() images only, never in-memory ones). false when
 * that failed: *elfp is then NULL and the mapping gone.
 */
bool sym_reset_elf(Elf **elfp);
/* GNU build-id bytes of elf (0 when none). */
/* The section named want (its header into *sh), or NULL. */
Elf_Scn *sym_find_section(Elf *elf, const char *want, GElf_Shdr *sh);
ssize_t sym_build_id(Elf *elf, const unsigned char **id);
/* Lower-case hex of len bytes into out (2 len + 1 chars). */
void sym_hex(char *out, const unsigned char *id, size_t len);
/* The separate debug file of f (see sym_file_open_fd()), or NULL. */
Elf *sym_find_debug_file(const struct sym_file *f, const struct sym_origin *o,
			 const struct sym_elf_ctx *ctx);

/* ---- DWARF (sym_dwarf.c) ---- */
/*
 * A debuginfod client with a per-query time limit and a size limit that
 * follows the per-file DWARF cap (0: none); NULL on failure.
 */
void *sym_debuginfod_begin(uint64_t dwarf_max_bytes);
void sym_debuginfod_end(void *client);
/* Finds the DWARF of a loaded se (once) and indexes its functions. */
void sym_dwarf_open(struct sym_elf *se, const struct sym_elf_ctx *ctx);
/*
 * Frees se's DWARF state, including what libelf decompressed for it (the
 * images it was read from are reset), but its function index, which the
 * next open reuses. false when an image could not be re-created: se must
 * then be unloaded (its symbol names are gone).
 */
bool sym_dwarf_close(struct sym_elf *se);
/* Frees the function index sym_dwarf_close() keeps (at unload). */
void sym_dwarf_free_index(struct sym_elf *se);
/* Inline chain and lines for vaddr, innermost first; 0 if none. */
int sym_dwarf_frames(struct sym_elf *se, const struct sym_elf_ctx *ctx,
		     uint64_t vaddr, struct sym_frame *out, int max);

/* ---- Go's function table, .gopclntab (sym_gopclntab.c) ---- */
struct sym_gopcln;
/*
 * The table of a Go ELF file (pointing into its image, which must outlive
 * it), or NULL: not Go, or (one warning naming path) malformed.
 */
struct sym_gopcln *sym_gopcln_open(Elf *elf, const char *path);
/* A table at tab (loaded at vaddr, 0: unknown); NULL if its header is bad. */
struct sym_gopcln *sym_gopcln_new(const uint8_t *tab, uint64_t size,
				  uint64_t vaddr, const char *path);
/* Loaded bytes at vaddr (1.16, 1.17 inline trees are found by address). */
void sym_gopcln_add_seg(struct sym_gopcln *g, uint64_t vaddr,
			const uint8_t *data, uint64_t size);
/* go:func.* (1.18+ inline trees are offsets into it). */
void sym_gopcln_set_gofunc(struct sym_gopcln *g, const uint8_t *data,
			   uint64_t size);
void sym_gopcln_free(struct sym_gopcln *g);
size_t sym_gopcln_bytes(const struct sym_gopcln *g);
/* 12, 116, 118 or 120 (the layout's first Go version x100); 0: none. */
uint32_t sym_gopcln_version(const struct sym_gopcln *g);
bool sym_gopcln_has_inline(const struct sym_gopcln *g);
/* The entry addresses of up to max functions (tests, fuzzer). */
size_t sym_gopcln_entries(const struct sym_gopcln *g, uint64_t *pcs,
			  size_t max);
/*
 * Frames of the Go code at vaddr, innermost first (inlined calls, then the
 * function), function/source_file/line/inlined set; only the function
 * without lines. 0 when vaddr is not Go code or the table is malformed
 * there (one warning per table).
 */
int sym_gopcln_frames(struct sym_gopcln *g, struct sym_strings *strings,
		      uint64_t vaddr, bool lines, struct sym_frame *out, int max);

/* Loads symbols (and DWARF lazily later) of se from f. */
void sym_elf_load(struct sym_elf *se, struct sym_file *f,
		  const struct sym_elf_ctx *ctx);
void sym_elf_unload(struct sym_elf *se);
/*
 * Resolves vaddr in a loaded sym_elf into up to max frames (innermost
 * first). Fills function/source_file/line/inlined only; returns the number
 * of frames (0 when no symbol or DWARF function contains vaddr).
 */
int sym_elf_resolve(struct sym_elf *se, const struct sym_elf_ctx *ctx,
		    uint64_t vaddr, struct sym_frame *out, int max);

/* ---- the file cache (sym_cache.c) ---- */
struct sym_cache;
struct sym_cache *sym_cache_new(size_t budget, const struct sym_elf_ctx *ctx);
void sym_cache_free(struct sym_cache *c);
/*
 * The sym_file for a mapping identity, opening it if new: open_file(arg, f)
 * then finds the file (map_files, /proc/PID/root/path) and calls
 * sym_file_open_fd(). Returns a referenced file (sym_cache_put() drops it),
 * NULL only on ENOMEM.
 */
typedef void (*sym_open_fn)(void *arg, struct sym_file *f);
struct sym_file *sym_cache_get(struct sym_cache *c, uint64_t dev,
			       uint64_t ino, const char *path,
			       sym_open_fn open_file, void *arg);
/* The one vdso file (our own image; same kernel for every process). */
struct sym_file *sym_cache_vdso(struct sym_cache *c);
void sym_cache_put(struct sym_cache *c, struct sym_file *f);
/* Resolve through f's sym_elf, loading it (and evicting others) if needed. */
int sym_cache_resolve(struct sym_cache *c, struct sym_file *f, uint64_t vaddr,
		      struct sym_frame *out, int max);
size_t sym_cache_bytes(const struct sym_cache *c);
/*
 * Between profiles: drop loaded files' DWARF state (it is rebuilt on the
 * next lookup that needs it) and mapped files' pages from our RSS; symbol
 * tables stay. DWARF is the bulk of the heap, but rebuilding it every
 * interval for the files every interval needs (decompressing sections,
 * re-reading the symbol table that went with the Elf) was the agent's
 * biggest steady cost: the most recently used files that were looked up
 * since the last trim keep theirs, up to SYM_TRIM_KEEP_BYTES of DWARF
 * state together. Returns the bytes of DWARF state dropped.
 */
#define SYM_TRIM_KEEP_BYTES (4u << 20)
size_t sym_cache_trim(struct sym_cache *c);
uint64_t sym_cache_files_open(const struct sym_cache *c);

/* ---- JIT maps (sym_perfmap.c) ---- */
struct sym_perfmap;
/*
 * path inside root (NULL: ours; see safe_open_at()); owners: who may own
 * the file besides root (safe_proc_owners()), NULL: anyone.
 */
struct sym_perfmap *sym_perfmap_load(const char *root, const char *path,
				     const uid_t owners[2]);
void sym_perfmap_free(struct sym_perfmap *m);
/* Name of the JIT symbol containing addr (into the map), or NULL. */
const char *sym_perfmap_lookup(const struct sym_perfmap *m, uint64_t addr);
/* Size of the file when loaded, to notice it grew. */
off_t sym_perfmap_file_size(const struct sym_perfmap *m);
size_t sym_perfmap_bytes(const struct sym_perfmap *m);

/* For tests: read kernel symbols from path instead of /proc/kallsyms. */
void sym_set_kallsyms_path(struct symbolizer *s, const char *path);

/* Heap bytes currently allocated (mallinfo2), for cost accounting. */
size_t sym_heap_bytes(void);

#endif /* EMBER_SYMBOLIZE_INTERNAL_H */
