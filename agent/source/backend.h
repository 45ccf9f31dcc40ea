/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * --backend auto|kmod|bpf (backend.c): which source a session opens, and
 * whether each one can run here (ember status).
 */
#ifndef EMBER_BACKEND_H
#define EMBER_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include "source/source.h"

/* Chosen backend (backend.c): NULL and err set when none can run. */
const struct ember_source_ops *backend_choose(const char *want, char *why,
					      size_t why_len, char *err,
					      size_t err_len);

/*
 * For ember status: 0 when the backend can run now, negative errno with
 * the reason otherwise. backend_kmod_check returns 1 when the module is
 * installed but not loaded and try_load is false.
 */
int backend_kmod_check(char *why, size_t why_len, bool try_load);
int backend_bpf_check(char *why, size_t why_len);

#endif /* EMBER_BACKEND_H */
