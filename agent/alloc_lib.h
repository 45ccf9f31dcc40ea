/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libember-alloc.so, the in-process allocation sampler (preload/): where
 * it is, and where its probe points are for the backends' uprobes.
 */
#ifndef EMBER_ALLOC_LIB_H
#define EMBER_ALLOC_LIB_H

#include <stddef.h>
#include "../include/uapi/ember.h"

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

#endif /* EMBER_ALLOC_LIB_H */
