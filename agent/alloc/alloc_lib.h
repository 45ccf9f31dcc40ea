/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libember-alloc.so, the in-process allocation sampler (preload/): where
 * it is, and where its probe points are for the backends' uprobes.
 */
#ifndef EMBER_ALLOC_LIB_H
#define EMBER_ALLOC_LIB_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include "uapi/ember.h"

/* symbols read from one table at most: a hostile file cannot keep us */
#define ALLOC_MAX_SYMBOLS	(1u << 20)

#ifndef EMBER_ALLOC_LIB_DIR
#define EMBER_ALLOC_LIB_DIR "/usr/lib/ember"	/* packaging/install.sh */
#endif
#define EMBER_ALLOC_LIB_NAME "libember-alloc.so"
#define EMBER_ALLOC_DEFAULT_RATE (512 * 1024)	/* bytes between samples */

/*
 * The library's absolute, canonical path into out: given (--alloc-lib),
 * else $EMBER_ALLOC_LIB, else beside the ember binary (../preload/ in a
 * build tree, ../lib/ember/ installed), else EMBER_ALLOC_LIB_DIR. 0, or -ENOENT
 * with a sentence in err.
 */
int alloc_lib_find(const char *given, char *out, size_t out_len, char *err,
		   size_t err_len);

/*
 * The probe points of the library at path: ember_alloc_probe() and
 * ember_free_probe() with ember_alloc_semaphore as their reference
 * counter, as file offsets. Returns how many (2), or a negative errno
 * with a sentence in err.
 */
int alloc_lib_probes(const char *path, struct ember_alloc_probe probes[2],
		     char *err, size_t err_len);

/*
 * Addresses of the defined symbols names[0..n) in elf's .dynsym (and
 * .symtab with symtab), 0 for those absent; returns how many were found.
 */
int alloc_elf_symbols(Elf *elf, bool symtab, const char *const *names,
		      size_t n, GElf_Addr *addr);
/* The file offset of vaddr (in a section with file contents). */
int alloc_elf_file_offset(Elf *elf, GElf_Addr vaddr, uint64_t *off);

/*
 * The allocator process pid uses, when it runs without the sampler: the
 * first of its mapped files exporting malloc, by preference a malloc
 * library (jemalloc, tcmalloc, mimalloc), then the executable (static,
 * or with its own allocator), then libc. path gets a /proc/PID/map_files/
 * link to the exact file, what its name; probes the malloc family's entry
 * points (EMBER_PROBE_ENTRY_*). Returns how many, or a negative errno
 * with a sentence in err.
 */
int alloc_entry_probes(uint32_t pid, char *path, size_t path_len,
		       char *what, size_t what_len,
		       struct ember_alloc_probe *probes, size_t max,
		       char *err, size_t err_len);

/*
 * For a backend that cannot follow blocks to their free (a module without
 * EMBER_CAP_ALLOC_INUSE): alloc_entry_probes()' probes, in place, without
 * the frees, realloc sampled as an entry point alone, at most the 8 such
 * a backend takes. Returns how many are left.
 */
#define ALLOC_PROBES_WITHOUT_INUSE	8
size_t alloc_probes_without_inuse(struct ember_alloc_probe *probes, size_t n);

#endif /* EMBER_ALLOC_LIB_H */
