/* SPDX-License-Identifier: GPL-2.0-only */
/* ember record's command line (cmd_record.c), parsed apart so tests can. */
#ifndef EMBER_RECORD_OPTS_H
#define EMBER_RECORD_OPTS_H

#include <stddef.h>
#include "cli/options.h"

/*
 * Parse argv (argv[0] = "record") with the shared option table
 * (options.c), then check what only makes sense together. Returns 0, or
 * -1 with a message in err. Resolves the output format (OUT_AUTO never
 * remains).
 */
int record_parse_args(int argc, char **argv, struct ember_opts *o,
		      char *err, size_t err_len);
void record_opts_free(struct ember_opts *o);
/* The format an output file name implies; OUT_AUTO when unknown. */
enum out_format format_from_name(const char *path);
const char *format_name(enum out_format f);

#endif
