/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * `ember run` configuration: defaults, then /etc/ember/ember.conf (or
 * --config FILE / EMBER_CONFIG), then the standard OTEL_* environment
 * variables, then command-line flags; each later source overrides the
 * earlier ones. SIGHUP re-runs the same load so an edited file or a changed
 * environment of a re-exec takes effect.
 *
 * Config file: "key = value" lines, '#' comments. Keys: endpoint (base URL,
 * /v1development/profiles appended unless it has a path),
 * profiles_endpoint (full URL), header (Name=value, repeatable), timeout_ms,
 * compression (gzip|none), ca_file, client_cert, client_key, service_name,
 * resource_attributes (k=v,k2=v2), interval (s), frequency (Hz), off_cpu
 * (true|false), faults (true|false), fault_period (page faults per sample),
 * alloc (true|false: allocations of processes started with the sampler), backend (auto|kmod|bpf), metrics_addr, queue_size,
 * queue_max_bytes (bytes, suffix K/M/G), shutdown_timeout (s), pid (repeatable), retry_initial_ms, retry_max_ms,
 * retry_max_elapsed_ms, retry_after_max_ms.
 */
#ifndef EMBER_CONFIG_H
#define EMBER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "output_otlp.h"

#define EMBER_CONF_DEFAULT "/etc/ember/ember.conf"
#define EMBER_RUN_DEFAULT_HZ 19
#define EMBER_RUN_DEFAULT_INTERVAL 10
#define OTLP_PROFILES_PATH "/v1development/profiles"

struct run_config {
	char *config_path;		/* the file read, NULL if none */
	char *endpoint;			/* full URL */
	char **headers;			/* "Name: value", NULL-terminated */
	size_t nr_headers;
	unsigned int timeout_ms;
	bool gzip;
	char *ca_file, *client_cert, *client_key;
	char *service_name;		/* NULL: each process's executable name */
	struct otlp_attr *attrs;	/* OTEL_RESOURCE_ATTRIBUTES & co (owned) */
	size_t nr_attrs;
	unsigned int interval_s;
	unsigned int freq_hz;
	bool off_cpu;
	bool faults;			/* sampled page faults (bytes) */
	unsigned int fault_period;	/* page faults per sample */
	bool alloc;			/* sampled allocations of processes
					 * started with the sampler preloaded */
	char *backend;			/* "auto", "kmod", "bpf" */
	char *metrics_addr;		/* NULL = no metrics endpoint */
	size_t queue_max;		/* waiting profiles */
	size_t queue_max_bytes;		/* all the exporter holds */
	unsigned int shutdown_timeout_s;
	uint32_t *pids;
	size_t nr_pids;
	unsigned int retry_initial_ms, retry_max_ms, retry_max_elapsed_ms;
	unsigned int retry_after_max_ms;	/* 0: the exporter's default */
	bool quiet;
	char *debug_dirs;		/* ':'-joined; NULL = /usr/lib/debug */
	bool debuginfod;		/* fetch debug info from DEBUGINFOD_URLS */
};

/*
 * Fill c from every source. 0, 1 when --help was printed (exit 0), or a
 * negative errno with a message in err saying what to fix.
 */
int run_config_load(struct run_config *c, int argc, char **argv,
		    char *err, size_t err_len);
void run_config_free(struct run_config *c);
void run_config_usage(FILE *f);

#endif /* EMBER_CONFIG_H */
