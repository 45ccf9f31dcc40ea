/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Allocation probes (alloc.c): uprobes on a preloaded sampler's
 * ember_alloc_probe()/ember_free_probe(), or on a running process's
 * allocator entry points, owned by the running session.
 */
#ifndef EMBER_ALLOC_H
#define EMBER_ALLOC_H

#include <linux/types.h>
#include <net/netlink.h>

#include "../include/uapi/ember.h"

struct net;

/* Whether this kernel's uprobe API is one alloc.c knows (compat.h). */
bool ember_alloc_available(void);

/*
 * Commands. Take ember_alloc_lock and ember_lock themselves, so the
 * caller holds neither; path, probes and pid are the request's,
 * unchecked; rate is 1..EMBER_MAX_ALLOC_RATE; inuse: ALLOC_INUSE.
 */
int ember_alloc_attach(const char *path, const struct ember_alloc_probe *p,
		       unsigned int nr, u32 pid, u64 rate, bool inuse,
		       u32 portid, struct net *net,
		       struct netlink_ext_ack *extack);
int ember_alloc_detach(u32 portid, struct net *net,
		       struct netlink_ext_ack *extack);

/*
 * Session stop, with ember_lock held: no handler writes a record once it
 * returns, but the uprobes are still placed; whoever released ember_lock
 * must then call ember_alloc_reap() to remove them.
 */
void ember_alloc_stop(void);
/* Removes stopped probes; process context, ember_lock not held. */
void ember_alloc_reap(void);

#endif /* EMBER_ALLOC_H */
