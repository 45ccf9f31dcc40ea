/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `ember run` configuration: defaults, then /etc/ember/ember.conf (or
 * --config FILE / EMBER_CONFIG), then the standard OTEL_* environment
 * variables, then command-line flags; each later source overrides the
 * earlier ones. SIGHUP re-runs the same load so an edited file or a changed
 * environment of a re-exec takes effect.
 *
 * Config file: "key = value" lines, '#' comments. The keys are ember run's
 * long options with '_' for '-' (options.c's table, `ember run --help`).
 */
#ifndef EMBER_CONFIG_H
#define EMBER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "cli/options.h"

/*
 * Fill c from every source. 0, 1 when --help was printed (exit 0), or a
 * negative errno with a message in err saying what to fix. Deprecated
 * spellings work and are said on stderr.
 */
int run_config_load(struct ember_opts *c, int argc, char **argv,
		    char *err, size_t err_len);
void run_config_free(struct ember_opts *c);
void run_config_usage(FILE *f);

#endif /* EMBER_CONFIG_H */
