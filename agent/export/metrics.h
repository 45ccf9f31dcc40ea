/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A minimal Prometheus text endpoint (`ember run --metrics-addr`): one
 * thread, one client at a time, GET /metrics answered with whatever the
 * fill callback writes. Binds to loopback unless an address is given, so
 * the daemon's counters are not exposed to the network by accident.
 */
#ifndef EMBER_METRICS_H
#define EMBER_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef void (*metrics_fill_fn)(FILE *out, void *ctx);

struct metrics_server;

/*
 * Check and split addr: "PORT", ":PORT", "HOST:PORT" or "[V6]:PORT"; no
 * host = 127.0.0.1; PORT a number from 0 (any free port) to 65535; an IPv6
 * address only in brackets; no spaces or control characters. Names are
 * not resolved here. 0, or -EINVAL with err ("'ADDR': why (expected...)").
 */
int metrics_addr_parse(const char *addr, char *host, size_t hlen, char *port,
		       size_t plen, char *err, size_t err_len);
/*
 * addr as metrics_addr_parse takes it.
 * NULL with err set on failure (bad address, port in use...).
 */
struct metrics_server *metrics_start(const char *addr, metrics_fill_fn fill,
				     void *ctx, char *err, size_t err_len);
/* The bound port (useful with port 0). */
int metrics_port(const struct metrics_server *m);
void metrics_stop(struct metrics_server *m);

/* Helpers for the fill callback. */
uint64_t metrics_self_rss_bytes(void);
double metrics_self_cpu_seconds(void);

#endif /* EMBER_METRICS_H */
