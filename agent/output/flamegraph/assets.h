/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The flame graph's script and style sheet, kept as real files
 * (agent/output/flamegraph/flamegraph.js, flamegraph.css) so they can be
 * edited and linted as such, and embedded at build time by
 * agent/mk/flamegraph.mk into agent/gen/flamegraph_assets.c (see
 * agent/output/flamegraph/embed.sh).
 */
#ifndef EMBER_FLAMEGRAPH_ASSETS_H
#define EMBER_FLAMEGRAPH_ASSETS_H

extern const char ember_flamegraph_js[];
extern const char ember_flamegraph_css[];

#endif
