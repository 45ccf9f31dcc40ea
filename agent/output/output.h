/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The writers: a frozen profile (aggregate/profile.h) -> one format on
 * out. 0, or a negative errno (-EIO: out could not be written).
 */
#ifndef EMBER_OUTPUT_H
#define EMBER_OUTPUT_H

#include <stdio.h>
#include "aggregate/profile.h"

int output_folded(const struct profile *p, FILE *out);
int output_svg(const struct profile *p, FILE *out);
int output_pprof(const struct profile *p, FILE *out);	/* gzipped profile.proto */
int output_otlp(const struct profile *p, FILE *out);	/* ExportProfilesServiceRequest */

#endif /* EMBER_OUTPUT_H */
