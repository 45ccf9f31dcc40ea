// SPDX-License-Identifier: GPL-2.0-only
/* `ember run` configuration from file, OTEL_* environment and flags. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "../include/uapi/ember.h"
#include "metrics.h"
#include "otlp_export.h"
#include "symbolize.h"

#define MAX_LIST 64	/* headers, attributes, pids */

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int set_str(char **dst, const char *v)
{
	char *s = v ? strdup(v) : NULL;

	if (v && !s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* In-place %XX decoding (W3C baggage style, as OTEL_* lists use). */
static void pct_decode(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '%' && isxdigit((unsigned char)s[1]) &&
		    isxdigit((unsigned char)s[2])) {
			char hex[3] = { s[1], s[2], 0 };

			*o++ = (char)strtol(hex, NULL, 16);
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

static int parse_uint(const char *v, unsigned long min, unsigned long max,
		      unsigned long *out)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 10);
	if (errno || end == v || *trim(end) || x < min || x > max || *v == '-')
		return -EINVAL;
	*out = x;
	return 0;
}

/* Bytes, with an optional K, M or G suffix (KiB, MiB, GiB). */
static int parse_size(const char *v, unsigned long long min,
		      unsigned long long max, size_t *out)
{
	unsigned long long x, mul = 1;
	char *end;

	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || end == v)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	}
	if (*trim(end) || x > max / mul || x * mul < min || x * mul > max)
		return -EINVAL;
	*out = (size_t)(x * mul);
	return 0;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on"))
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "off"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static void free_headers(struct run_config *c)
{
	for (size_t i = 0; i < c->nr_headers; i++)
		free(c->headers[i]);
	free(c->headers);
	c->headers = NULL;
	c->nr_headers = 0;
}

static int add_header(struct run_config *c, const char *name, const char *value)
{
	char **h;
	char *line;

	if (c->nr_headers >= MAX_LIST)
		return -E2BIG;
	/* A header name or value with CR/LF would smuggle a header. */
	if (strpbrk(name, "\r\n:") || strpbrk(value, "\r\n") || !*name)
		return -EINVAL;
	h = realloc(c->headers, (c->nr_headers + 2) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	c->headers = h;
	if (asprintf(&line, "%s: %s", name, value) < 0)
		return -ENOMEM;
	h[c->nr_headers++] = line;
	h[c->nr_headers] = NULL;
	return 0;
}

/*
 * Walk an OTel "k=v,k2=v2" list (values percent-encoded, W3C baggage
 * style), handing each pair to add().
 */
static int for_each_kv(struct run_config *c, const char *list,
		       int (*add)(struct run_config *, const char *, const char *))
{
	char *dup = strdup(list), *save = NULL, *tok;
	int ret = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq) {
			ret = -EINVAL;
			break;
		}
		*eq = '\0';
		pct_decode(eq + 1);
		ret = add(c, trim(tok), trim(eq + 1));
	}
	free(dup);
	return ret;
}

/* OTEL_EXPORTER_OTLP_HEADERS: replaces the current headers. */
static int set_headers_list(struct run_config *c, const char *list)
{
	free_headers(c);
	return for_each_kv(c, list, add_header);
}

static void free_attrs(struct run_config *c)
{
	for (size_t i = 0; i < c->nr_attrs; i++) {
		free((char *)c->attrs[i].key);
		free((char *)c->attrs[i].value);
	}
	free(c->attrs);
	c->attrs = NULL;
	c->nr_attrs = 0;
}

/* Add or replace one resource attribute; service.name goes to its field. */
static int add_attr(struct run_config *c, const char *k, const char *v)
{
	struct otlp_attr *a;

	if (!*k)
		return -EINVAL;
	if (!strcmp(k, "service.name"))
		return set_str(&c->service_name, v);
	for (size_t i = 0; i < c->nr_attrs; i++) {
		if (!strcmp(c->attrs[i].key, k)) {
			char *nv = strdup(v);

			if (!nv)
				return -ENOMEM;
			free((char *)c->attrs[i].value);
			c->attrs[i].value = nv;
			return 0;
		}
	}
	if (c->nr_attrs >= MAX_LIST)
		return -E2BIG;
	a = realloc(c->attrs, (c->nr_attrs + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	c->attrs = a;
	a[c->nr_attrs].key = strdup(k);
	a[c->nr_attrs].value = strdup(v);
	if (!a[c->nr_attrs].key || !a[c->nr_attrs].value) {
		free((char *)a[c->nr_attrs].key);
		free((char *)a[c->nr_attrs].value);
		return -ENOMEM;
	}
	c->nr_attrs++;
	return 0;
}

static int add_attrs_list(struct run_config *c, const char *list)
{
	return for_each_kv(c, list, add_attr);
}

/* An endpoint URL from a flag, the file or the environment (`what`). */
static int check_url(const char *what, const char *url, char *err, size_t err_len)
{
	char why[256];

	if (otlp_endpoint_check(url, why, sizeof(why)))
		return fail(err, err_len, "invalid %s '%s': %s", what, url, why);
	return 0;
}

/* A base URL gets the profiles path unless it already names a path. */
static int set_endpoint(struct run_config *c, const char *url, bool base_always)
{
	const char *scheme = strstr(url, "://");
	const char *path = scheme ? strchr(scheme + 3, '/') : NULL;
	size_t n = strlen(url);
	char *full;

	if (!scheme)
		return -EINVAL;
	if (!base_always && path && strcmp(path, "/"))
		return set_str(&c->endpoint, url);
	while (n && url[n - 1] == '/')
		n--;
	if (asprintf(&full, "%.*s%s", (int)n, url, OTLP_PROFILES_PATH) < 0)
		return -ENOMEM;
	free(c->endpoint);
	c->endpoint = full;
	return 0;
}

static int add_pid(struct run_config *c, const char *v)
{
	unsigned long pid;
	uint32_t *p;

	if (parse_uint(v, 1, 4194304, &pid))
		return -EINVAL;
	if (c->nr_pids >= MAX_LIST)
		return -E2BIG;
	p = realloc(c->pids, (c->nr_pids + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	c->pids = p;
	p[c->nr_pids++] = (uint32_t)pid;
	return 0;
}

/* One setting by name, from the file or a flag. */
static int apply(struct run_config *c, const char *key, const char *v,
		 char *err, size_t err_len)
{
	unsigned long n;
	int ret = 0;

	if (!strcmp(key, "endpoint")) {
		if (check_url(key, v, err, err_len))
			return -EINVAL;
		ret = set_endpoint(c, v, false);
	} else if (!strcmp(key, "profiles_endpoint")) {
		if (check_url(key, v, err, err_len))
			return -EINVAL;
		ret = set_str(&c->endpoint, v);
	} else if (!strcmp(key, "header")) {
		char *dup = strdup(v), *eq = dup ? strchr(dup, '=') : NULL;

		if (!dup)
			return -ENOMEM;
		if (!eq)
			eq = strchr(dup, ':');
		if (eq) {
			*eq = '\0';
			ret = add_header(c, trim(dup), trim(eq + 1));
		} else {
			ret = -EINVAL;
		}
		free(dup);
	} else if (!strcmp(key, "headers")) {
		ret = set_headers_list(c, v);
	} else if (!strcmp(key, "timeout_ms")) {
		ret = parse_uint(v, 1, 600000, &n);
		c->timeout_ms = (unsigned int)n;
	} else if (!strcmp(key, "compression")) {
		if (!strcmp(v, "gzip"))
			c->gzip = true;
		else if (!strcmp(v, "none"))
			c->gzip = false;
		else
			ret = -EINVAL;
	} else if (!strcmp(key, "ca_file")) {
		ret = set_str(&c->ca_file, v);
	} else if (!strcmp(key, "client_cert")) {
		ret = set_str(&c->client_cert, v);
	} else if (!strcmp(key, "client_key")) {
		ret = set_str(&c->client_key, v);
	} else if (!strcmp(key, "service_name")) {
		ret = set_str(&c->service_name, v);
	} else if (!strcmp(key, "resource_attributes")) {
		ret = add_attrs_list(c, v);
	} else if (!strcmp(key, "interval")) {
		ret = parse_uint(v, 1, 3600, &n);
		c->interval_s = (unsigned int)n;
	} else if (!strcmp(key, "frequency")) {
		ret = parse_uint(v, 1, 10000, &n);
		c->freq_hz = (unsigned int)n;
	} else if (!strcmp(key, "off_cpu")) {
		ret = parse_bool(v, &c->off_cpu);
	} else if (!strcmp(key, "faults")) {
		ret = parse_bool(v, &c->faults);
	} else if (!strcmp(key, "alloc")) {
		ret = parse_bool(v, &c->alloc);
	} else if (!strcmp(key, "fault_period")) {
		ret = parse_uint(v, EMBER_MIN_FAULT_PERIOD, EMBER_MAX_FAULT_PERIOD, &n);
		c->fault_period = (unsigned int)n;
	} else if (!strcmp(key, "backend")) {
		if (strcmp(v, "auto") && strcmp(v, "kmod") && strcmp(v, "bpf"))
			ret = -EINVAL;
		else
			ret = set_str(&c->backend, v);
	} else if (!strcmp(key, "metrics_addr")) {
		char host[256], port[16], why[400];

		/* Checked now, not only when the server starts: a bad address
		 * is a usage error, not a daemon running without metrics. */
		if (*v && metrics_addr_parse(v, host, sizeof(host), port, sizeof(port),
					     why, sizeof(why)))
			return fail(err, err_len, "invalid metrics_addr %s", why);
		ret = set_str(&c->metrics_addr, *v ? v : NULL);
	} else if (!strcmp(key, "queue_size")) {
		ret = parse_uint(v, 1, 1024, &n);
		c->queue_max = n;
	} else if (!strcmp(key, "queue_max_bytes")) {
		if (parse_size(v, 64ULL << 10, 1ULL << 40, &c->queue_max_bytes))
			return fail(err, err_len, "invalid value '%s' for queue_max_bytes: "
				    "expected bytes from 64K to 1024G (suffix K, M or G)", v);
	} else if (!strcmp(key, "shutdown_timeout")) {
		ret = parse_uint(v, 0, 600, &n);
		c->shutdown_timeout_s = (unsigned int)n;
	} else if (!strcmp(key, "pid")) {
		ret = add_pid(c, v);
	} else if (!strcmp(key, "debug_dir")) {
		ret = sym_debug_dirs_add(&c->debug_dirs, v);
	} else if (!strcmp(key, "debuginfod")) {
		ret = parse_bool(v, &c->debuginfod);
	} else if (!strcmp(key, "retry_initial_ms")) {
		ret = parse_uint(v, 1, 3600000, &n);
		c->retry_initial_ms = (unsigned int)n;
	} else if (!strcmp(key, "retry_max_ms")) {
		ret = parse_uint(v, 1, 3600000, &n);
		c->retry_max_ms = (unsigned int)n;
	} else if (!strcmp(key, "retry_max_elapsed_ms")) {
		ret = parse_uint(v, 1, 86400000, &n);
		c->retry_max_elapsed_ms = (unsigned int)n;
	} else if (!strcmp(key, "retry_after_max_ms")) {
		ret = parse_uint(v, 1, 86400000, &n);
		c->retry_after_max_ms = (unsigned int)n;
	} else {
		return fail(err, err_len, "unknown setting '%s'", key);
	}
	if (ret == -ENOMEM)
		return fail(err, err_len, "out of memory");
	if (ret)
		return fail(err, err_len, "invalid value '%s' for %s", v, key);
	return 0;
}

static int load_file(struct run_config *c, const char *path, bool must_exist,
		     char *err, size_t err_len)
{
	char line[4096], e2[768];
	unsigned int lineno = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		if (!must_exist && errno == ENOENT)
			return 0;
		return fail(err, err_len, "cannot read %s: %s", path, strerror(errno));
	}
	if (set_str(&c->config_path, path)) {
		fclose(f);
		return fail(err, err_len, "out of memory");
	}
	while (fgets(line, sizeof(line), f)) {
		char *s = trim(line), *eq;

		lineno++;
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			fclose(f);
			return fail(err, err_len, "%s:%u: expected 'key = value'", path, lineno);
		}
		*eq = '\0';
		if (apply(c, trim(s), trim(eq + 1), e2, sizeof(e2))) {
			fclose(f);
			return fail(err, err_len, "%s:%u: %s", path, lineno, e2);
		}
	}
	fclose(f);
	return 0;
}

/* Signal-specific variable first, then the generic one. */
static const char *env2(const char *specific, const char *generic)
{
	const char *v = getenv(specific);

	if (v && *v)
		return v;
	v = getenv(generic);
	return v && *v ? v : NULL;
}

static int load_env(struct run_config *c, char *err, size_t err_len)
{
	const char *v;
	unsigned long n;

	if ((v = getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")) && *v) {
		if (check_url("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", v, err, err_len))
			return -EINVAL;
		if (set_str(&c->endpoint, v))
			return fail(err, err_len, "out of memory");
	} else if ((v = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) && *v) {
		/* The generic endpoint is a base: the signal path is appended. */
		if (check_url("OTEL_EXPORTER_OTLP_ENDPOINT", v, err, err_len))
			return -EINVAL;
		if (set_endpoint(c, v, true))
			return fail(err, err_len, "out of memory");
	}
	if ((v = env2("OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")) &&
	    set_headers_list(c, v))
		return fail(err, err_len, "OTEL_EXPORTER_OTLP_HEADERS: expected "
			    "name=value[,name=value...], got '%s'", v);
	if ((v = env2("OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"))) {
		if (parse_uint(v, 1, 600000, &n))
			return fail(err, err_len, "OTEL_EXPORTER_OTLP_TIMEOUT='%s': "
				    "expected milliseconds", v);
		c->timeout_ms = (unsigned int)n;
	}
	if ((v = env2("OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION",
		      "OTEL_EXPORTER_OTLP_COMPRESSION")) &&
	    apply(c, "compression", v, err, err_len))
		return -EINVAL;
	if ((v = env2("OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE",
		      "OTEL_EXPORTER_OTLP_CERTIFICATE")) && set_str(&c->ca_file, v))
		return fail(err, err_len, "out of memory");
	if ((v = env2("OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE",
		      "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE")) &&
	    set_str(&c->client_cert, v))
		return fail(err, err_len, "out of memory");
	if ((v = env2("OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY",
		      "OTEL_EXPORTER_OTLP_CLIENT_KEY")) && set_str(&c->client_key, v))
		return fail(err, err_len, "out of memory");
	if ((v = getenv("OTEL_RESOURCE_ATTRIBUTES")) && *v && add_attrs_list(c, v))
		return fail(err, err_len, "OTEL_RESOURCE_ATTRIBUTES: expected "
			    "key=value[,key=value...], got '%s'", v);
	/* OTEL_SERVICE_NAME wins over service.name in the attributes. */
	if ((v = getenv("OTEL_SERVICE_NAME")) && *v && set_str(&c->service_name, v))
		return fail(err, err_len, "out of memory");
	return 0;
}

void run_config_usage(FILE *f)
{
	fputs("usage: ember run [OPTIONS]\n"
	      "Profile the whole system continuously and export one OTLP profile\n"
	      "per interval (POST /v1development/profiles, protobuf, gzip).\n"
	      "\n"
	      "  -c, --config FILE        config file (default " EMBER_CONF_DEFAULT ")\n"
	      "  -e, --endpoint URL       OTLP/HTTP base URL or full profiles URL\n"
	      "                           (default http://localhost:4318)\n"
	      "  -H, --header NAME=VALUE  extra HTTP header (repeatable)\n"
	      "      --timeout-ms MS      per-request timeout (default 10000)\n"
	      "      --compression gzip|none  (default gzip)\n"
	      "      --ca-file FILE       CA bundle for https endpoints\n"
	      "      --client-cert FILE, --client-key FILE  mutual TLS\n"
	      "  -s, --service-name NAME  service.name (default: executable name)\n"
	      "  -a, --resource-attr K=V  extra resource attribute (repeatable)\n"
	      "  -i, --interval SECONDS   export period (default 10)\n"
	      "  -F, --freq HZ            on-CPU sampling frequency (default 19)\n"
	      "      --off-cpu            also record off-CPU time\n"
	      "      --faults             also record page faults (bytes of memory\n"
	      "                           first touched)\n"
	      "      --fault-period N     page faults per sample (default 512)\n"
	      "      --alloc              also record sampled allocations of processes\n"
	      "                           started with LD_PRELOAD=/usr/lib/ember/\n"
	      "                           libember-alloc.so (bytes allocated, in use)\n"
	      "  -b, --backend auto|kmod|bpf\n"
	      "  -p, --pid PID            profile only this process (repeatable)\n"
	      "      --metrics-addr [HOST]:PORT  Prometheus text endpoint\n"
	      "                           (HOST defaults to 127.0.0.1)\n"
	      "      --queue-size N       profiles kept waiting while the receiver is\n"
	      "                           away or slow (default 64)\n"
	      "      --queue-max-bytes B  bound on all the exporter holds, the profile\n"
	      "                           being sent and its gzip copy included\n"
	      "                           (default 64M; suffix K, M or G)\n"
	      "      --shutdown-timeout S delivery deadline on SIGTERM (default 5)\n"
	      "      --retry-initial-ms MS, --retry-max-ms MS  backoff between\n"
	      "                           retries (default 1000, doubling to 30000)\n"
	      "      --retry-max-elapsed-ms MS  give a failing profile up after MS of\n"
	      "                           attempts and backoff (default 300000)\n"
	      "      --retry-after-max-ms MS  longest receiver Retry-After honoured\n"
	      "                           (default 600000; such waits do not count\n"
	      "                           against --retry-max-elapsed-ms)\n"
	      "      --debug-dir DIR      also look for separate debug files under DIR\n"
	      "                           (repeatable; searched before /usr/lib/debug)\n"
	      "      --debuginfod         fetch missing debug info from DEBUGINFOD_URLS\n"
	      "                           (off by default)\n"
	      "\n"
	      "Environment: OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT,\n"
	      "OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT,\n"
	      "OTEL_EXPORTER_OTLP_COMPRESSION, OTEL_EXPORTER_OTLP_CERTIFICATE,\n"
	      "OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME. Precedence: flags >\n"
	      "environment > config file > defaults. SIGHUP reloads; SIGTERM flushes\n"
	      "and exits.\n", f);
}

enum {
	OPT_TIMEOUT = 256, OPT_COMPRESSION, OPT_CA, OPT_CERT, OPT_KEY, OPT_OFFCPU, OPT_FAULTS, OPT_FAULT_PERIOD, OPT_ALLOC,
	OPT_METRICS, OPT_QUEUE, OPT_SHUTDOWN, OPT_R_INIT, OPT_R_MAX, OPT_R_ELAPSED,
	OPT_R_AFTER_MAX, OPT_QUEUE_BYTES,
	OPT_QUIET, OPT_DEBUG_DIR, OPT_DEBUGINFOD,
};

static const struct option long_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "endpoint", required_argument, NULL, 'e' },
	{ "header", required_argument, NULL, 'H' },
	{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
	{ "compression", required_argument, NULL, OPT_COMPRESSION },
	{ "ca-file", required_argument, NULL, OPT_CA },
	{ "client-cert", required_argument, NULL, OPT_CERT },
	{ "client-key", required_argument, NULL, OPT_KEY },
	{ "service-name", required_argument, NULL, 's' },
	{ "resource-attr", required_argument, NULL, 'a' },
	{ "interval", required_argument, NULL, 'i' },
	{ "freq", required_argument, NULL, 'F' },
	{ "off-cpu", no_argument, NULL, OPT_OFFCPU },
	{ "faults", no_argument, NULL, OPT_FAULTS },
	{ "fault-period", required_argument, NULL, OPT_FAULT_PERIOD },
	{ "alloc", no_argument, NULL, OPT_ALLOC },
	{ "backend", required_argument, NULL, 'b' },
	{ "pid", required_argument, NULL, 'p' },
	{ "metrics-addr", required_argument, NULL, OPT_METRICS },
	{ "queue-size", required_argument, NULL, OPT_QUEUE },
	{ "queue-max-bytes", required_argument, NULL, OPT_QUEUE_BYTES },
	{ "shutdown-timeout", required_argument, NULL, OPT_SHUTDOWN },
	{ "retry-initial-ms", required_argument, NULL, OPT_R_INIT },
	{ "retry-max-ms", required_argument, NULL, OPT_R_MAX },
	{ "retry-max-elapsed-ms", required_argument, NULL, OPT_R_ELAPSED },
	{ "retry-after-max-ms", required_argument, NULL, OPT_R_AFTER_MAX },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
	{ "debuginfod", no_argument, NULL, OPT_DEBUGINFOD },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};
static const char short_opts[] = "c:e:H:s:a:i:F:b:p:h";

static const char *opt_key(int c)
{
	switch (c) {
	case 'e': return "endpoint";
	case 'H': return "header";
	case OPT_TIMEOUT: return "timeout_ms";
	case OPT_COMPRESSION: return "compression";
	case OPT_CA: return "ca_file";
	case OPT_CERT: return "client_cert";
	case OPT_KEY: return "client_key";
	case 's': return "service_name";
	case 'a': return "resource_attributes";
	case 'i': return "interval";
	case 'F': return "frequency";
	case 'b': return "backend";
	case 'p': return "pid";
	case OPT_METRICS: return "metrics_addr";
	case OPT_QUEUE: return "queue_size";
	case OPT_QUEUE_BYTES: return "queue_max_bytes";
	case OPT_SHUTDOWN: return "shutdown_timeout";
	case OPT_R_INIT: return "retry_initial_ms";
	case OPT_R_MAX: return "retry_max_ms";
	case OPT_R_ELAPSED: return "retry_max_elapsed_ms";
	case OPT_R_AFTER_MAX: return "retry_after_max_ms";
	case OPT_DEBUG_DIR: return "debug_dir";
	case OPT_FAULT_PERIOD: return "fault_period";
	default: return NULL;
	}
}

void run_config_free(struct run_config *c)
{
	free(c->config_path);
	free(c->endpoint);
	free_headers(c);
	free(c->ca_file);
	free(c->client_cert);
	free(c->client_key);
	free(c->service_name);
	free_attrs(c);
	free(c->backend);
	free(c->metrics_addr);
	free(c->pids);
	free(c->debug_dirs);
	memset(c, 0, sizeof(*c));
}

int run_config_load(struct run_config *c, int argc, char **argv,
		    char *err, size_t err_len)
{
	const char *path = getenv("EMBER_CONFIG");
	bool explicit = path && *path;
	int opt, ret;

	memset(c, 0, sizeof(*c));
	c->timeout_ms = 10000;
	c->gzip = true;
	c->interval_s = EMBER_RUN_DEFAULT_INTERVAL;
	c->freq_hz = EMBER_RUN_DEFAULT_HZ;
	c->fault_period = EMBER_DEFAULT_FAULT_PERIOD;
	c->queue_max = OTLP_QUEUE_MAX;
	c->queue_max_bytes = OTLP_QUEUE_MAX_BYTES;
	c->shutdown_timeout_s = 5;
	if (set_str(&c->backend, "auto") ||
	    set_endpoint(c, "http://localhost:4318", true))
		return fail(err, err_len, "out of memory");

	/* Pass 1: only --config and --help, so the file loads first. */
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		if (opt == 'c') {
			path = optarg;
			explicit = true;
		} else if (opt == 'h') {
			run_config_usage(stdout);
			return 1;
		}
	}
	if (!path || !*path)
		path = EMBER_CONF_DEFAULT;
	ret = load_file(c, path, explicit, err, err_len);
	if (!ret)
		ret = load_env(c, err, err_len);
	if (ret)
		return ret;

	/* Pass 2: flags override everything. */
	optind = 1;
	opterr = 1;
	while ((opt = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		const char *key = opt_key(opt);

		if (opt == 'c' || opt == 'h')
			continue;
		if (opt == OPT_OFFCPU) {
			c->off_cpu = true;
		} else if (opt == OPT_FAULTS) {
			c->faults = true;
		} else if (opt == OPT_ALLOC) {
			c->alloc = true;
		} else if (opt == OPT_QUIET) {
			c->quiet = true;
		} else if (opt == OPT_DEBUGINFOD) {
			c->debuginfod = true;
		} else if (key) {
			ret = apply(c, key, optarg, err, err_len);
			if (ret)
				return ret;
		} else {
			return fail(err, err_len, "see 'ember run --help'");
		}
	}
	if (optind < argc)
		return fail(err, err_len, "unexpected argument '%s' (see 'ember run --help')",
			    argv[optind]);
	return 0;
}
