/* SPDX-License-Identifier: GPL-2.0-only */
/* What ember record and ember run both tell their session (session_opts.c). */
#ifndef EMBER_CLI_SESSION_OPTS_H
#define EMBER_CLI_SESSION_OPTS_H

#include "cli/options.h"
#include "session/session.h"

/*
 * Fill so's part the two commands share from o: backend, events and
 * rates, the pid filter, stack bounds, unwind tables, debug files. The
 * default debug root is added to o->debug_dirs after --debug-dir's
 * (searched last); -ENOMEM when it cannot be (so->sym.debug_dirs then
 * unset), else 0. What only one command sets is the caller's.
 */
int session_opts_from(struct session_options *so, struct ember_opts *o);

#endif
