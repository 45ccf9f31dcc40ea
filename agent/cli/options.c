// SPDX-License-Identifier: GPL-2.0-only
/*
 * The one option table of `ember record`, `ember run` and ember.conf, and
 * what is made from it: getopt_long tables, --help texts, config keys
 * (options.h says why). To add an option: one entry in ember_options[],
 * a field in struct ember_opts, and its use in the command.
 *
 * One file: the table and everything made from it (parsers, getopt tables,
 * config keys, --help) stay side by side, so an option is added in one
 * place.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "cli/options.h"
#include "alloc/alloc_lib.h"
#include "export/metrics.h"
#include "export/otlp_export.h"
#include "aggregate/profile.h"
#include "source/source.h"
#include "symbolize/symbolize.h"
#include "unwind/table_store.h"

#define MAX_LIST 64	/* headers, attributes */
#define PID_MAX 4194304	/* PID_MAX_LIMIT on 64-bit */

static const char *cmd_name(unsigned int cmd)
{
	return cmd == CMD_RUN ? "run" : "record";
}

static int fail(struct opt_ctx *cx, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cx->where)
		snprintf(cx->err, cx->err_len, "%s: %s", cx->where, msg);
	else
		snprintf(cx->err, cx->err_len, "%s", msg);
	return -EINVAL;
}

/*
 * A bad value: "NAME wants WHAT, not 'VALUE'", named as it was spelled; a
 * flag of ember run also by its config key, as the daemon's other
 * messages name it.
 */
static int bad_value(struct opt_ctx *cx, const struct ember_option *d,
		     const char *v)
{
	char key[64];

	if (cx->cmd == CMD_RUN && !cx->where && !(d->flags & OPTF_NO_KEY)) {
		snprintf(key, sizeof(key), "%s", d->name);
		for (char *p = key; *p; p++)
			if (*p == '-')
				*p = '_';
		return fail(cx, "%s (%s) wants %s, not '%s'", cx->spelling, key,
			    d->expected, v ? v : "");
	}
	return fail(cx, "%s wants %s, not '%s'", cx->spelling, d->expected,
		    v ? v : "");
}

static void deprecated(struct opt_ctx *cx, const char *old, const char *use)
{
	FILE *f = cx->warn ? cx->warn : stderr;

	if (cx->where)
		fprintf(f, "ember %s: %s: '%s' is deprecated and will be removed in the next release: use %s\n",
			cmd_name(cx->cmd), cx->where, old, use);
	else
		fprintf(f, "ember %s: %s is deprecated and will be removed in the next release: use %s\n",
			cmd_name(cx->cmd), old, use);
}

/* ---- values ------------------------------------------------------------ */

static int set_str(char **dst, const char *v)
{
	char *s = v ? strdup(v) : NULL;

	if (v && !s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

char *opts_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static bool parse_u64(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *e;
	char *end;
	unsigned long long x;

	if (!v || !isdigit((unsigned char)*v))
		return false;
	errno = 0;
	x = strtoull(v, &end, 10);
	for (e = end; isspace((unsigned char)*e); e++)
		;
	if (errno || *e || x < min || x > max)
		return false;
	*out = x;
	return true;
}

/* Bytes, with an optional K, M or G suffix (KiB, MiB, GiB). */
static bool parse_size(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long x, mul = 1;
	char *end;

	if (!isdigit((unsigned char)*v))
		return false;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || end == v)
		return false;
	switch (*end) {
	case 'k': case 'K': mul = 1ULL << 10; end++; break;
	case 'm': case 'M': mul = 1ULL << 20; end++; break;
	case 'g': case 'G': mul = 1ULL << 30; end++; break;
	}
	while (isspace((unsigned char)*end))
		end++;
	if (*end || x > max / mul || x * mul < min || x * mul > max)
		return false;
	*out = x * mul;
	return true;
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

static void store_uint(void *field, size_t size, uint64_t v)
{
	if (size == sizeof(uint64_t))
		*(uint64_t *)field = v;
	else
		*(uint32_t *)field = (uint32_t)v;
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

/* ---- lists: headers, resource attributes, pids --------------------------- */

static void free_headers(struct ember_opts *o)
{
	for (size_t i = 0; i < o->nr_headers; i++)
		free(o->headers[i]);
	free(o->headers);
	o->headers = NULL;
	o->nr_headers = 0;
}

static int add_header(struct ember_opts *o, const char *name, const char *value)
{
	char **h;
	char *line;

	if (o->nr_headers >= MAX_LIST)
		return -E2BIG;
	/* A header name or value with CR/LF would smuggle a header. */
	if (strpbrk(name, "\r\n:") || strpbrk(value, "\r\n") || !*name)
		return -EINVAL;
	h = realloc(o->headers, (o->nr_headers + 2) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	o->headers = h;
	if (asprintf(&line, "%s: %s", name, value) < 0)
		return -ENOMEM;
	h[o->nr_headers++] = line;
	h[o->nr_headers] = NULL;
	return 0;
}

/* Walk an OTel "k=v,k2=v2" list (values percent-encoded), pair by pair. */
static int for_each_kv(struct ember_opts *o, const char *list,
		       int (*add)(struct ember_opts *, const char *, const char *))
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
		ret = add(o, opts_trim(tok), opts_trim(eq + 1));
	}
	free(dup);
	return ret;
}

static void free_attrs(struct ember_opts *o)
{
	for (size_t i = 0; i < o->nr_attrs; i++) {
		free((char *)o->attrs[i].key);
		free((char *)o->attrs[i].value);
	}
	free(o->attrs);
	o->attrs = NULL;
	o->nr_attrs = 0;
}

/* Add or replace one resource attribute; service.name goes to its field. */
static int add_attr(struct ember_opts *o, const char *k, const char *v)
{
	struct otlp_attr *a;

	if (!*k)
		return -EINVAL;
	if (!strcmp(k, "service.name"))
		return set_str(&o->service_name, v);
	for (size_t i = 0; i < o->nr_attrs; i++) {
		if (!strcmp(o->attrs[i].key, k)) {
			char *nv = strdup(v);

			if (!nv)
				return -ENOMEM;
			free((char *)o->attrs[i].value);
			o->attrs[i].value = nv;
			return 0;
		}
	}
	if (o->nr_attrs >= MAX_LIST)
		return -E2BIG;
	a = realloc(o->attrs, (o->nr_attrs + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	o->attrs = a;
	a[o->nr_attrs].key = strdup(k);
	a[o->nr_attrs].value = strdup(v);
	if (!a[o->nr_attrs].key || !a[o->nr_attrs].value) {
		free((char *)a[o->nr_attrs].key);
		free((char *)a[o->nr_attrs].value);
		return -ENOMEM;
	}
	o->nr_attrs++;
	return 0;
}

/* ---- parse functions ------------------------------------------------------ */

#define PARSE(fn) static int fn(struct ember_opts *o, const struct ember_option *d, \
				const char *v, struct opt_ctx *cx)

static int nomem(struct opt_ctx *cx)
{
	fail(cx, "out of memory");
	return -ENOMEM;
}

static int parse_events(const char *s, uint32_t *ev)
{
	char buf[64], *tok, *save;

	*ev = 0;
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		tok = opts_trim(tok);
		if (!strcmp(tok, "cpu") || !strcmp(tok, "oncpu"))
			*ev |= EMBER_EV_ONCPU;
		else if (!strcmp(tok, "offcpu"))
			*ev |= EMBER_EV_OFFCPU;
		else if (!strcmp(tok, "faults"))
			*ev |= EMBER_EV_FAULTS;
		else if (!strcmp(tok, "alloc"))
			*ev |= EMBER_EV_ALLOC;
		else if (!strcmp(tok, "lock"))
			*ev |= EMBER_EV_LOCK;
		else
			return -1;
	}
	return *ev ? 0 : -1;
}

PARSE(p_endpoint);

PARSE(p_event)
{
	uint32_t ev;

	/*
	 * ember run's -e was --endpoint: a value with ':' or '/' (which no
	 * event has) is still taken as one, for one release.
	 */
	if (cx->cmd == CMD_RUN && !cx->where && !strcmp(cx->spelling, "-e") &&
	    strpbrk(v, ":/")) {
		deprecated(cx, "-e URL (the OTLP endpoint; -e is now --event, as in ember record)",
			   "--endpoint URL");
		return p_endpoint(o, opts_find_key("endpoint"), v, cx);
	}
	if (parse_events(v, &ev))
		return bad_value(cx, d, v);
	o->events = ev;
	return 0;
}

/* Deprecated switches of ember run that added an event (d->min). */
PARSE(p_add_event)
{
	bool on = true;

	if (v && parse_bool(v, &on))
		return bad_value(cx, d, v);
	if (on)
		o->events |= (uint32_t)d->min;
	else
		o->events &= ~(uint32_t)d->min;
	return 0;
}

PARSE(p_pid)
{
	const char *p = v;
	size_t n0 = o->nr_pids;

	while (*p) {
		char num[16];
		size_t len = strcspn(p, ",");
		uint64_t pid;
		uint32_t *np;

		if (!len || len >= sizeof(num))
			return bad_value(cx, d, v);
		memcpy(num, p, len);
		num[len] = '\0';
		if (!parse_u64(opts_trim(num), 1, PID_MAX, &pid) ||
		    o->nr_pids >= EMBER_MAX_FILTER_PIDS)
			return bad_value(cx, d, v);
		np = realloc(o->pids, (o->nr_pids + 1) * sizeof(*np));
		if (!np)
			return nomem(cx);
		o->pids = np;
		o->pids[o->nr_pids++] = (uint32_t)pid;
		p += len;
		if (*p == ',')
			p++;
	}
	return o->nr_pids > n0 ? 0 : bad_value(cx, d, v);
}

/* Index of v in names[n] (the values an option takes), or -1. */
static int name_index(const char *v, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (names[i] && !strcmp(v, names[i]))
			return i;
	return -1;
}

#define NAME_INDEX(v, names) \
	name_index(v, names, (int)(sizeof(names) / sizeof((names)[0])))

PARSE(p_backend)
{
	static const char *const names[] = { "auto", "kmod", "bpf" };
	int i = NAME_INDEX(v, names);

	if (i < 0)
		return bad_value(cx, d, v);
	o->backend = names[i];
	return 0;
}

PARSE(p_offcpu_min)
{
	uint64_t us;

	if (!parse_u64(v, 0, 60000000, &us))
		return bad_value(cx, d, v);
	o->offcpu_min_ns = us * 1000;
	return 0;
}

PARSE(p_lock_min)
{
	uint64_t us;

	if (!parse_u64(v, 0, EMBER_MAX_LOCK_MIN_NS / 1000, &us))
		return bad_value(cx, d, v);
	o->lock_min_ns = us * 1000;
	return 0;
}

PARSE(p_debug_dir)
{
	int r = sym_debug_dirs_add(&o->debug_dirs, v);

	if (r == -ENOMEM)
		return nomem(cx);
	return r ? bad_value(cx, d, v) : 0;
}

/* A ".." component: --cgroup must stay under the cgroup v2 root. */
static bool has_dotdot(const char *path)
{
	const char *p = path;

	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return true;
		p += n;
		while (*p == '/')
			p++;
	}
	return false;
}

PARSE(p_cgroup)
{
	(void)d;
	if (!*v)
		return fail(cx, "%s wants " CGROUP_EXPECTED, cx->spelling, CGROUP_ROOT);
	if (has_dotdot(v))
		return fail(cx, "%s %s: '..' is not allowed; expected " CGROUP_EXPECTED,
			    cx->spelling, v, CGROUP_ROOT);
	return set_str(&o->cgroup_path, v) ? nomem(cx) : 0;
}

PARSE(p_duration)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(v, &end);
	if (errno || end == v || *end || !(s > 0) || s > 365 * 86400.0)
		return bad_value(cx, d, v);
	o->duration_ms = (uint64_t)(s * 1000 + 0.5);
	if (!o->duration_ms)
		o->duration_ms = 1;
	return 0;
}

PARSE(p_output)
{
	if (!*v)
		return bad_value(cx, d, v);
	return set_str(&o->output, v) ? nomem(cx) : 0;
}

PARSE(p_format)
{
	static const char *const names[] = {
		[OUT_FOLDED] = "folded", [OUT_SVG] = "svg",
		[OUT_PPROF] = "pprof", [OUT_OTLP] = "otlp",
	};
	int f = NAME_INDEX(v, names);

	if (f < 0)
		return bad_value(cx, d, v);
	o->format = f;
	return 0;
}

PARSE(p_group_by)
{
	static const char *const names[] = {
		[PROF_GROUP_PROCESS] = "process",
		[PROF_GROUP_CONTAINER] = "container",
		[PROF_GROUP_NONE] = "none",
	};
	int g = NAME_INDEX(v, names);

	if (g < 0)
		return bad_value(cx, d, v);
	o->group_by = g;
	return 0;
}

PARSE(p_help)
{
	(void)d;
	(void)v;
	(void)cx;
	o->help = true;
	return 0;
}

/* A base URL gets the profiles path unless it already names a path. */
static int set_endpoint(struct ember_opts *o, const char *url, bool base_always)
{
	const char *scheme = strstr(url, "://");
	const char *path = scheme ? strchr(scheme + 3, '/') : NULL;
	size_t n = strlen(url);
	char *full;

	if (!scheme)
		return -EINVAL;
	if (!base_always && path && strcmp(path, "/"))
		return set_str(&o->endpoint, url);
	while (n && url[n - 1] == '/')
		n--;
	if (asprintf(&full, "%.*s%s", (int)n, url, OTLP_PROFILES_PATH) < 0)
		return -ENOMEM;
	free(o->endpoint);
	o->endpoint = full;
	return 0;
}

int opts_set_endpoint(struct ember_opts *o, const char *what, const char *url,
		      int how, char *err, size_t err_len)
{
	char why[256];
	int r;

	if (otlp_endpoint_check(url, why, sizeof(why))) {
		snprintf(err, err_len, "invalid %s '%s': %s", what, url, why);
		return -EINVAL;
	}
	r = how == ENDPOINT_AS_IS ? set_str(&o->endpoint, url) :
	    set_endpoint(o, url, how == ENDPOINT_BASE);
	if (r)
		snprintf(err, err_len, "out of memory");
	return r;
}

static int endpoint(struct ember_opts *o, const char *what, const char *v,
		    int how, struct opt_ctx *cx)
{
	char msg[512];
	int r = opts_set_endpoint(o, what, v, how, msg, sizeof(msg));

	return r ? fail(cx, "%s", msg), r : 0;
}

PARSE(p_endpoint)
{
	(void)d;
	return endpoint(o, "endpoint", v, ENDPOINT_BASE_OR_URL, cx);
}

PARSE(p_profiles_endpoint)
{
	(void)d;
	return endpoint(o, "profiles_endpoint", v, ENDPOINT_AS_IS, cx);
}

PARSE(p_header)
{
	char *dup = strdup(v), *eq = dup ? strchr(dup, '=') : NULL;
	int r = -EINVAL;

	if (!dup)
		return nomem(cx);
	if (!eq)
		eq = strchr(dup, ':');
	if (eq) {
		*eq = '\0';
		r = add_header(o, opts_trim(dup), opts_trim(eq + 1));
	}
	free(dup);
	if (r == -ENOMEM)
		return nomem(cx);
	return r ? bad_value(cx, d, v) : 0;
}

PARSE(p_headers)
{
	int r;

	free_headers(o);
	r = for_each_kv(o, v, add_header);
	if (r == -ENOMEM)
		return nomem(cx);
	return r ? bad_value(cx, d, v) : 0;
}

PARSE(p_compression)
{
	static const char *const names[] = { "none", "gzip" };
	int c = NAME_INDEX(v, names);

	if (c < 0)
		return bad_value(cx, d, v);
	o->gzip = c == 1;
	return 0;
}

PARSE(p_resource_attributes)
{
	int r = for_each_kv(o, v, add_attr);

	if (r == -ENOMEM)
		return nomem(cx);
	return r ? bad_value(cx, d, v) : 0;
}

PARSE(p_metrics_addr)
{
	char host[256], port[16], why[400];

	(void)d;
	/* Checked now, not only when the server starts: a bad address is a
	 * usage error, not a daemon running without metrics. */
	if (*v && metrics_addr_parse(v, host, sizeof(host), port, sizeof(port),
				     why, sizeof(why)))
		return fail(cx, "invalid metrics_addr %s", why);
	return set_str(&o->metrics_addr, *v ? v : NULL) ? nomem(cx) : 0;
}

PARSE(p_queue_max_bytes)
{
	uint64_t n;

	if (!parse_size(v, 64ULL << 10, 1ULL << 40, &n))
		return bad_value(cx, d, v);
	o->queue_max_bytes = n;
	return 0;
}

PARSE(p_local_max)
{
	uint64_t n;

	if (!parse_size(v, 64ULL << 10, 1ULL << 40, &n))
		return bad_value(cx, d, v);
	o->local_max_bytes = n;
	return 0;
}

/* ---- the table ----------------------------------------------------------- */

#define FIELD(m) .off = offsetof(struct ember_opts, m), \
		 .size = sizeof(((struct ember_opts *)0)->m)
#define BOTH (CMD_RECORD | CMD_RUN)
#define UINT(m, lo, hi) .type = F_UINT, FIELD(m), .min = (lo), .max = (hi)

const struct ember_option ember_options[] = {
	/* sampling: both commands */
	{ "freq", 'F', "HZ", BOTH, 0, UINT(freq_hz, EMBER_MIN_FREQ, EMBER_MAX_FREQ),
	  .expected = "a frequency from 1 to 10000 Hz",
	  .help = "on-CPU sampling frequency, 1..10000 (default: 99 for ember record, 19 for ember run)" },
	{ "event", 'e', "EVENTS", BOTH, 0, F_CUSTOM, FIELD(events), .parse = p_event,
	  .expected = "cpu, offcpu, faults, alloc, lock or a list like cpu,faults",
	  .help = "cpu (on-CPU samples, the default), offcpu (time spent blocked or "
		  "waiting), faults (where memory is first touched: sampled page "
		  "faults, in bytes), alloc (sampled allocations in bytes, and the "
		  "bytes still in use: of the COMMAND ember record starts, or of "
		  "processes started with LD_PRELOAD=" EMBER_ALLOC_LIB_DIR "/"
		  EMBER_ALLOC_LIB_NAME "), lock (contended waits: futex waits of "
		  "pthread mutexes, rwlocks, condition variables, semaphores, and "
		  "kernel locks, with the time waited), or a list: cpu,offcpu" },
	{ "pid", 'p', "PID,...", BOTH, 0, F_CUSTOM, FIELD(pids), .parse = p_pid,
	  .expected = "a list of process ids like 12,345 (at most 1024)",
	  .help = "only these processes, all their threads (repeatable)" },
	{ "backend", 'b', "auto|kmod|bpf", BOTH, 0, F_CUSTOM, FIELD(backend),
	  .parse = p_backend, .expected = "auto, kmod or bpf",
	  .help = "auto (default): the module if loaded or loadable, else eBPF" },
	{ "fault-period", 0, "N", BOTH, 0,
	  UINT(fault_period, EMBER_MIN_FAULT_PERIOD, EMBER_MAX_FAULT_PERIOD),
	  .expected = "page faults per sample from 1 to 1000000",
	  .help = "-e faults: one sample per N page faults (default 512)" },
	{ "offcpu-min", 0, "USEC", BOTH, 0, F_CUSTOM, FIELD(offcpu_min_ns),
	  .parse = p_offcpu_min, .expected = "microseconds from 0 to 60000000",
	  .help = "off-CPU intervals shorter than USEC are not recorded (default "
		  "0: all; in the kernel, so shorter ones cost no stack walk)" },
	{ "lock-min", 0, "USEC", BOTH, 0, F_CUSTOM, FIELD(lock_min_ns),
	  .parse = p_lock_min, .expected = "microseconds from 0 to 60000000",
	  .help = "-e lock: waits shorter than USEC are not recorded (default "
		  "10; in the kernel, so shorter ones cost no stack walk)" },
	{ "waker", 0, NULL, BOTH, 0, F_FLAG, FIELD(lock_waker),
	  .expected = "true or false",
	  .help = "-e lock: also the stack of the thread that woke each waiter "
		  "(the unlock path), above the waiter's as [waker COMM]" },
	{ "max-stacks", 0, "N", BOTH, 0, UINT(max_stacks, 1, 1u << 24),
	  .expected = "a number from 1 to 16777216",
	  .help = "unique stacks kept in memory (default 65536)" },
	{ "idle", 0, NULL, BOTH, 0, F_FLAG, FIELD(include_idle),
	  .expected = "true or false", .help = "include samples of idle CPUs" },
	{ "no-cfi", 0, NULL, BOTH, 0, F_FLAG, FIELD(no_cfi),
	  .expected = "true or false",
	  .help = "walk user stacks by frame pointers only (no unwind tables "
		  "from .eh_frame/.debug_frame)" },
	{ "debug-dir", 0, "DIR", BOTH, 0, F_CUSTOM, FIELD(debug_dirs),
	  .parse = p_debug_dir, .expected = "a directory without ':'",
	  .help = "also look for separate debug files under DIR (repeatable; "
		  "searched before /usr/lib/debug)" },
	{ "table-cache", 0, "DIR", BOTH, 0, .type = F_STR, FIELD(table_cache),
	  .expected = "a directory, or none",
	  .help = "keep the unwind tables built from CFI in DIR (root's, mode "
		  "0700) for the next run and the next boot (default "
		  TABLE_STORE_DEFAULT_DIR "; none: no cache)" },
	{ "table-cache-max", 0, "MB", BOTH, 0,
	  UINT(table_cache_max_mb, 1, 1u << 20),
	  .expected = "megabytes from 1 to 1048576",
	  .help = "--table-cache: at most MB megabytes of tables, the least "
		  "recently used go first (default 256)" },
	{ "stack-copy", 0, "BYTES", BOTH, 0,
	  UINT(stack_copy_bytes, 0, EMBER_STACK_COPY_MAX),
	  .expected = "bytes from 0 to 16384",
	  .help = "copy BYTES of a sample's user stack (rounded up to 256) "
		  "when its walk was cut or ran before the process had unwind "
		  "tables (late dlopen, -a/-p start), and unwind the copy in "
		  "ember; 0: never (default 12288: 4096 covers python3, xz, "
		  "perl, openssl; gcc's cc1 needs 8192; deep recursion more)" },
	{ "kernel-mem", 0, "MB", BOTH, 0, UINT(kernel_mem_mb, 4, 1u << 20),
	  .expected = "megabytes from 4 to 1048576",
	  .help = "kernel memory the backend may hold: eBPF maps, rings "
		  "(default 1/32 of RAM: 8 on a 256 MiB machine; the full "
		  "sizes from 32 up)" },
	{ "debuginfod", 0, NULL, BOTH, 0, F_FLAG, FIELD(debuginfod),
	  .expected = "true or false",
	  .help = "fetch missing debug info from DEBUGINFOD_URLS (off by "
		  "default: it may download a lot)" },

	/* ember record */
	{ "cgroup", 0, "PATH", CMD_RECORD, 0, F_CUSTOM, FIELD(cgroup_path),
	  .parse = p_cgroup, .expected = "a cgroup v2 directory",
	  .help = "only this cgroup v2: relative to " CGROUP_ROOT " (as "
		  "/proc/PID/cgroup shows it) or an absolute path under it" },
	{ "all-cpus", 'a', NULL, CMD_RECORD, 0, F_FLAG, FIELD(all),
	  .expected = "true or false",
	  .help = "the whole system (default without -p/--cgroup/COMMAND)" },
	{ "duration", 'd', "SECS", CMD_RECORD, 0, F_CUSTOM, FIELD(duration_ms),
	  .parse = p_duration, .expected = "a positive number of seconds",
	  .help = "stop after SECS seconds (default: Ctrl-C, or COMMAND's end)" },
	{ "output", 'o', "FILE", CMD_RECORD, 0, F_CUSTOM, FIELD(output),
	  .parse = p_output, .expected = "a file name",
	  .help = "where to write (default ember.svg; - = stdout)" },
	{ "format", 0, "FMT", CMD_RECORD, 0, F_CUSTOM, FIELD(format),
	  .parse = p_format, .expected = "folded, svg, pprof or otlp",
	  .help = "folded, svg, pprof or otlp (default: from FILE's extension: "
		  ".folded/.txt, .svg, .pb.gz/.pprof, .otlp)" },
	{ "group-by", 0, "G", CMD_RECORD, 0, F_CUSTOM, FIELD(group_by),
	  .parse = p_group_by, .expected = "process, container or none",
	  .help = "root frames of folded and SVG output: process (comm, the "
		  "default), container (the container id or cgroup, then comm) "
		  "or none (every process merged)" },
	{ "off-cpu-state", 0, NULL, CMD_RECORD, 0, F_FLAG, FIELD(offcpu_state),
	  .expected = "true or false",
	  .help = "end off-CPU stacks (folded, SVG) with how the thread waited: "
		  "[sleeping], [disk] (uninterruptible, mostly I/O), [preempted] "
		  "or [other] (pprof and OTLP always carry it as a label)" },
	{ "alloc-rate", 0, "BYTES", CMD_RECORD, 0, UINT(alloc_rate, 1, 1ULL << 40),
	  .expected = "bytes between samples from 1 to 1099511627776",
	  .help = "-e alloc: one sample per BYTES allocated on average "
		  "(default 524288, 1..2^40)" },
	{ "alloc-lib", 0, "PATH", CMD_RECORD, 0, .type = F_STR, FIELD(alloc_lib),
	  .expected = "a file",
	  .help = "-e alloc: the sampler library (default: found next to ember, "
		  "or in " EMBER_ALLOC_LIB_DIR ")" },
	{ "alloc-no-inuse", 0, NULL, CMD_RECORD, 0, F_FLAG,
	  FIELD(alloc_no_inuse), .expected = "true or false",
	  .help = "-e alloc with -p/--cgroup, a process without the sampler: "
		  "probe its allocator's entry points only, not their returns "
		  "and free (about half the cost; no inuse_space)" },
	{ "verbose-cfi", 0, NULL, CMD_RECORD, 0, F_FLAG, FIELD(verbose_cfi),
	  .expected = "true or false",
	  .help = "say which unwind tables are built and their sizes" },
	{ "check-unwind", 0, NULL, CMD_RECORD, 0, F_FLAG, FIELD(check_unwind),
	  .expected = "true or false",
	  .help = "test mode: copy each sample's user stack too, unwind it with "
		  "libdwfl and report how often both agree" },

	/* ember run */
	{ "config", 'c', "FILE", CMD_RUN, OPTF_NO_KEY | OPTF_EARLY, .type = F_STR,
	  FIELD(config_path), .expected = "a file",
	  .help = "config file (default " EMBER_CONF_DEFAULT "; or $EMBER_CONFIG)" },
	{ "endpoint", 0, "URL", CMD_RUN, 0, F_CUSTOM, FIELD(endpoint),
	  .parse = p_endpoint, .expected = "an http:// or https:// URL",
	  .help = "OTLP/HTTP base URL (" OTLP_PROFILES_PATH " appended) or full "
		  "profiles URL (default http://localhost:4318)" },
	{ "profiles-endpoint", 0, "URL", CMD_RUN, 0, F_CUSTOM, FIELD(endpoint),
	  .parse = p_profiles_endpoint, .expected = "an http:// or https:// URL",
	  .help = "the full URL of the profiles endpoint, used as is" },
	{ "header", 'H', "NAME=VALUE", CMD_RUN, 0, F_CUSTOM, FIELD(headers),
	  .parse = p_header, .expected = "NAME=VALUE",
	  .help = "extra HTTP header (repeatable)" },
	{ "headers", 0, "N=V,...", CMD_RUN, 0, F_CUSTOM, FIELD(headers),
	  .parse = p_headers, .expected = "name=value[,name=value...]",
	  .help = "replace all headers with this list, as "
		  "OTEL_EXPORTER_OTLP_HEADERS (values %-encoded)" },
	{ "timeout-ms", 0, "MS", CMD_RUN, 0, UINT(timeout_ms, 1, 600000),
	  .expected = "milliseconds from 1 to 600000",
	  .help = "per-request timeout (default 10000)" },
	{ "compression", 0, "gzip|none", CMD_RUN, 0, F_CUSTOM, FIELD(gzip),
	  .parse = p_compression, .expected = "gzip or none",
	  .help = "request body compression (default gzip)" },
	{ "ca-file", 0, "FILE", CMD_RUN, 0, .type = F_STR, FIELD(ca_file),
	  .expected = "a file", .help = "CA bundle for https endpoints" },
	{ "client-cert", 0, "FILE", CMD_RUN, 0, .type = F_STR, FIELD(client_cert),
	  .expected = "a file", .help = "client certificate, for mutual TLS" },
	{ "client-key", 0, "FILE", CMD_RUN, 0, .type = F_STR, FIELD(client_key),
	  .expected = "a file", .help = "client key, for mutual TLS" },
	{ "service-name", 's', "NAME", CMD_RUN, 0, .type = F_STR, FIELD(service_name),
	  .expected = "a name",
	  .help = "service.name (default: each process's executable name)" },
	{ "resource-attributes", 0, "K=V,...", CMD_RUN, 0, F_CUSTOM, FIELD(attrs),
	  .parse = p_resource_attributes, .expected = "key=value[,key=value...]",
	  .help = "extra resource attributes (repeatable)" },
	{ "interval", 'i', "SECONDS", CMD_RUN, 0, UINT(interval_s, 1, 3600),
	  .expected = "seconds from 1 to 3600",
	  .help = "export period (default 10)" },
	{ "metrics-addr", 0, "[HOST]:PORT", CMD_RUN, 0, F_CUSTOM, FIELD(metrics_addr),
	  .parse = p_metrics_addr, .expected = "[HOST]:PORT",
	  .help = "Prometheus text endpoint (HOST defaults to 127.0.0.1)" },
	{ "queue-size", 0, "N", CMD_RUN, 0, UINT(queue_max, 1, 1024),
	  .expected = "a number from 1 to 1024",
	  .help = "profiles kept waiting while the receiver is away or slow "
		  "(default 64)" },
	{ "queue-max-bytes", 0, "B", CMD_RUN, 0, F_CUSTOM, FIELD(queue_max_bytes),
	  .parse = p_queue_max_bytes,
	  .expected = "bytes from 64K to 1024G (suffix K, M or G)",
	  .help = "bound on all the exporter holds, the profile being sent and "
		  "its gzip copy included (default 64M; suffix K, M or G)" },
	{ "local-dir", 0, "DIR", CMD_RUN, 0, .type = F_STR, FIELD(local_dir),
	  .expected = "a writable directory",
	  .help = "also keep each interval's profile as DIR/ember-*.otlp (ember "
		  "decode reads them), at most --local-max bytes, the oldest "
		  "removed first; a file that cannot be written is said and "
		  "counted (default: none)" },
	{ "local-max", 0, "B", CMD_RUN, 0, F_CUSTOM, FIELD(local_max_bytes),
	  .parse = p_local_max,
	  .expected = "bytes from 64K to 1024G (suffix K, M or G)",
	  .help = "bound on --local-dir's profiles (default 16M; suffix K, M or G)" },
	{ "shutdown-timeout", 0, "S", CMD_RUN, 0, UINT(shutdown_timeout_s, 0, 600),
	  .expected = "seconds from 0 to 600",
	  .help = "delivery deadline on SIGTERM (default 5)" },
	{ "retry-initial-ms", 0, "MS", CMD_RUN, 0, UINT(retry_initial_ms, 1, 3600000),
	  .expected = "milliseconds from 1 to 3600000",
	  .help = "first backoff between retries (default 1000)" },
	{ "retry-max-ms", 0, "MS", CMD_RUN, 0, UINT(retry_max_ms, 1, 3600000),
	  .expected = "milliseconds from 1 to 3600000",
	  .help = "longest backoff, doubling from --retry-initial-ms (default 30000)" },
	{ "retry-max-elapsed-ms", 0, "MS", CMD_RUN, 0,
	  UINT(retry_max_elapsed_ms, 1, 86400000),
	  .expected = "milliseconds from 1 to 86400000",
	  .help = "give a failing profile up after MS of attempts and backoff "
		  "(default 300000)" },
	{ "retry-after-max-ms", 0, "MS", CMD_RUN, 0,
	  UINT(retry_after_max_ms, 1, 86400000),
	  .expected = "milliseconds from 1 to 86400000",
	  .help = "longest receiver Retry-After honoured (default 600000; such "
		  "waits do not count against --retry-max-elapsed-ms)" },
	{ "quiet", 0, NULL, CMD_RUN, 0, F_FLAG, FIELD(quiet),
	  .expected = "true or false",
	  .help = "no start, reload and stop lines on stderr" },

	{ "help", 'h', NULL, BOTH, OPTF_NO_KEY | OPTF_EARLY, F_CUSTOM, FIELD(help),
	  .parse = p_help, .help = "this text" },

	/* Deprecated spellings, accepted for one release with a notice. */
	{ "off-cpu", 0, NULL, CMD_RUN, 0, F_CUSTOM, FIELD(events),
	  .parse = p_add_event, .min = EMBER_EV_OFFCPU, .expected = "true or false",
	  .deprecated = "-e cpu,offcpu (event = cpu,offcpu in the config file)" },
	{ "faults", 0, NULL, CMD_RUN, 0, F_CUSTOM, FIELD(events),
	  .parse = p_add_event, .min = EMBER_EV_FAULTS, .expected = "true or false",
	  .deprecated = "-e cpu,faults (event = cpu,faults in the config file)" },
	{ "alloc", 0, NULL, CMD_RUN, 0, F_CUSTOM, FIELD(events),
	  .parse = p_add_event, .min = EMBER_EV_ALLOC, .expected = "true or false",
	  .deprecated = "-e cpu,alloc (event = cpu,alloc in the config file)" },
	{ "frequency", 0, "HZ", CMD_RUN, OPTF_KEY_ONLY,
	  UINT(freq_hz, EMBER_MIN_FREQ, EMBER_MAX_FREQ),
	  .expected = "a frequency from 1 to 10000 Hz", .deprecated = "freq" },
	{ "resource-attr", 'a', "K=V", CMD_RUN, OPTF_NO_KEY, F_CUSTOM, FIELD(attrs),
	  .parse = p_resource_attributes, .expected = "key=value[,key=value...]",
	  .deprecated = "--resource-attributes K=V (-a is --all-cpus in ember record)" },
};
const size_t ember_nr_options = sizeof(ember_options) / sizeof(ember_options[0]);

/* ---- applying one value ---------------------------------------------------- */

static int opt_apply(struct ember_opts *o, const struct ember_option *d,
		     const char *v, struct opt_ctx *cx)
{
	void *field = (char *)o + d->off;
	uint64_t n;
	bool b;

	if (d->deprecated) {
		char old[80];

		snprintf(old, sizeof(old), "%s", cx->spelling);
		deprecated(cx, old, d->deprecated);
	}
	if (d->parse)
		return d->parse(o, d, v, cx);
	switch (d->type) {
	case F_FLAG:
		if (!v) {
			*(bool *)field = true;
		} else {
			if (parse_bool(v, &b))
				return bad_value(cx, d, v);
			*(bool *)field = b;
		}
		return 0;
	case F_UINT:
		if (!parse_u64(v, d->min, d->max, &n))
			return bad_value(cx, d, v);
		store_uint(field, d->size, n);
		return 0;
	case F_STR:
		return set_str(field, v) ? nomem(cx) : 0;
	case F_CUSTOM:
		break;
	}
	return fail(cx, "%s: no parser", cx->spelling);
}

const struct ember_option *opts_find_key(const char *key)
{
	for (size_t i = 0; i < ember_nr_options; i++) {
		const struct ember_option *d = &ember_options[i];
		size_t j;

		if (d->flags & OPTF_NO_KEY)
			continue;
		for (j = 0; d->name[j] && key[j]; j++)
			if ((d->name[j] == '-' ? '_' : d->name[j]) != key[j])
				break;
		if (!d->name[j] && !key[j])
			return d;
	}
	return NULL;
}

int opts_set_key(struct ember_opts *o, const char *key, const char *value,
		 const char *where, FILE *warn, char *err, size_t err_len)
{
	const struct ember_option *d = opts_find_key(key);
	struct opt_ctx cx = {
		.cmd = CMD_RUN, .spelling = key, .where = where, .warn = warn,
		.err = err, .err_len = err_len,
	};

	if (!d)
		return fail(&cx, "unknown setting '%s'", key);
	if (!(d->cmds & CMD_RUN))
		return fail(&cx, "'%s' is a setting of ember record only, not of ember run", key);
	return opt_apply(o, d, value, &cx);
}

/* ---- command lines ---------------------------------------------------------- */

/* Options with a short letter for cmd: its own first, then the others'. */
static int short_owner(unsigned int cmd, char c)
{
	int other = -1;

	for (size_t i = 0; i < ember_nr_options; i++) {
		if (ember_options[i].short_name != c)
			continue;
		if (ember_options[i].cmds & cmd)
			return (int)i;
		if (other < 0)
			other = (int)i;
	}
	return other;
}

int opts_parse_argv(struct ember_opts *o, unsigned int cmd, int argc,
		    char **argv, unsigned int pass, FILE *warn, char *err,
		    size_t err_len)
{
	bool early = pass == OPTS_PASS_EARLY;
	struct option lo[sizeof(ember_options) / sizeof(ember_options[0]) + 1];
	char so[3 * (sizeof(ember_options) / sizeof(ember_options[0])) + 2];
	struct opt_ctx cx = { .cmd = cmd, .warn = warn, .err = err, .err_len = err_len };
	const char *last_value = NULL;
	size_t nl = 0, ns = 0;
	bool dashdash;
	int c, r;

	/* '+': stop at the first non-option; a COMMAND comes after "--" */
	so[ns++] = '+';
	for (size_t i = 0; i < ember_nr_options; i++) {
		const struct ember_option *d = &ember_options[i];

		if (!(d->flags & OPTF_KEY_ONLY))
			lo[nl++] = (struct option){ d->name, d->arg ? required_argument :
						    no_argument, NULL, 256 + (int)i };
		if (d->short_name && short_owner(cmd, d->short_name) == (int)i) {
			so[ns++] = d->short_name;
			if (d->arg)
				so[ns++] = ':';
		}
	}
	lo[nl] = (struct option){ NULL, 0, NULL, 0 };
	so[ns] = '\0';

	optind = 0;		/* full reset: parsed more than once */
	opterr = 0;
	while ((c = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		const struct ember_option *d;
		char spelling[80];
		int idx;

		if (c == '?' || c == ':') {
			if (early)
				continue;
			if (optopt >= 256)
				return fail(&cx, "option --%s needs a value",
					    ember_options[optopt - 256].name);
			if (optopt > 0 && optopt < 256 &&
			    short_owner(cmd, (char)optopt) >= 0)
				return fail(&cx, "option -%c needs a value", optopt);
			return fail(&cx, "unknown option '%s' (see ember %s --help)",
				    argv[optind - 1], cmd_name(cmd));
		}
		idx = c >= 256 ? c - 256 : short_owner(cmd, (char)c);
		d = &ember_options[idx];
		if ((early && !(d->flags & OPTF_EARLY)) ||
		    (pass == OPTS_PASS_LATE && (d->flags & OPTF_EARLY)))
			continue;
		if (c >= 256)
			snprintf(spelling, sizeof(spelling), "--%s", d->name);
		else
			snprintf(spelling, sizeof(spelling), "-%c", c);
		cx.spelling = spelling;
		if (!(d->cmds & cmd)) {
			if (d->deprecated)
				return fail(&cx, "%s is not an option of ember %s: use %s",
					    spelling, cmd_name(cmd), d->deprecated);
			return fail(&cx, "%s is an option of ember %s only, not of ember %s (see ember %s --help)",
				    spelling, cmd_name(d->cmds), cmd_name(cmd),
				    cmd_name(cmd));
		}
		r = opt_apply(o, d, optarg, &cx);
		if (r)
			return r;
		last_value = optarg;
		if (o->help)
			return 0;
	}
	if (early)
		return 0;
	/* getopt skips a "--" that ends the options; one that was an
	 * option's value (-o --) is not that */
	dashdash = optind > 1 && optind <= argc && !strcmp(argv[optind - 1], "--") &&
		   argv[optind - 1] != last_value;
	if (cmd == CMD_RUN) {
		if (optind < argc)
			return fail(&cx, "unexpected argument '%s' (see 'ember run --help')",
				    argv[optind]);
		return 0;
	}
	if (dashdash && (optind == argc || !*argv[optind]))
		return fail(&cx, "'--' must be followed by a COMMAND (without '--', the whole system is recorded)");
	if (optind < argc) {
		/* a command must come after "--" so its own options are
		 * never ours */
		if (!dashdash)
			return fail(&cx, "unexpected argument '%s': put the command after --",
				    argv[optind]);
		o->command = &argv[optind];
	}
	return 0;
}

/* ---- defaults --------------------------------------------------------------- */

int opts_init(struct ember_opts *o, unsigned int cmd)
{
	memset(o, 0, sizeof(*o));
	o->events = EMBER_EV_ONCPU;
	o->backend = "auto";
	o->fault_period = EMBER_DEFAULT_FAULT_PERIOD;
	o->lock_min_ns = EMBER_DEFAULT_LOCK_MIN_NS;
	o->stack_copy_bytes = EMBER_DEFAULT_STACK_COPY;
	if (cmd == CMD_RECORD) {
		o->freq_hz = EMBER_DEFAULT_FREQ;
		return 0;
	}
	o->freq_hz = EMBER_RUN_DEFAULT_HZ;
	o->timeout_ms = 10000;
	o->gzip = true;
	o->interval_s = EMBER_RUN_DEFAULT_INTERVAL;
	o->queue_max = OTLP_QUEUE_MAX;
	o->queue_max_bytes = OTLP_QUEUE_MAX_BYTES;
	o->shutdown_timeout_s = 5;
	o->local_max_bytes = 16ULL << 20;
	return set_endpoint(o, "http://localhost:4318", true);
}

void opts_free(struct ember_opts *o)
{
	free(o->pids);
	free(o->debug_dirs);
	free(o->table_cache);
	free(o->local_dir);
	free(o->cgroup_path);
	free(o->output);
	free(o->alloc_lib);
	free(o->config_path);
	free(o->endpoint);
	free_headers(o);
	free(o->ca_file);
	free(o->client_cert);
	free(o->client_key);
	free(o->service_name);
	free_attrs(o);
	free(o->metrics_addr);
	memset(o, 0, sizeof(*o));
}

/* ---- --help ----------------------------------------------------------------- */

#define HELP_COL 25
#define HELP_WIDTH 79

/* "LEFT  help..." with the help wrapped at HELP_WIDTH, indented. */
static void put_option(FILE *f, const char *left, const char *help)
{
	int col = fprintf(f, "%s", left);
	const char *p = help;

	if (col >= HELP_COL - 1) {
		fputc('\n', f);
		col = 0;
	}
	col += fprintf(f, "%*s", HELP_COL - col, "");
	while (*p) {
		int len = (int)strcspn(p, " ");

		if (col > HELP_COL) {
			if (col + 1 + len > HELP_WIDTH) {
				col = fprintf(f, "\n%*s", HELP_COL, "") - 1;
			} else {
				fputc(' ', f);
				col++;
			}
		}
		col += fprintf(f, "%.*s", len, p);
		p += len;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

static const char record_head[] =
"usage: ember record [-F HZ] [-e cpu,offcpu,faults,alloc,lock] [-p PID,...]\n"
"                    [--cgroup PATH] [-a] [-d SECONDS] [-o FILE]\n"
"                    [--format folded|svg|pprof|otlp] [--backend auto|kmod|bpf]\n"
"                    [-- COMMAND [ARGS...]]\n"
"\n"
"Record stack samples and write a profile.\n"
"\n";

static const char record_tail[] =
"\n"
"Folded output is \"comm;root;...;leaf VALUE\": VALUE counts samples, or\n"
"microseconds when off-CPU time or lock waits are recorded. See ember(1).\n";

static const char run_head[] =
"usage: ember run [OPTIONS]\n"
"Profile the whole system continuously and export one OTLP profile\n"
"per interval (POST " OTLP_PROFILES_PATH ", protobuf, gzip).\n"
"\n";

static const char run_tail[] =
"\n"
"Config file keys are the long options with '_' for '-' (freq = 99,\n"
"event = cpu,offcpu, queue_max_bytes = 64M); flags (true|false).\n"
"Environment: OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT,\n"
"OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT,\n"
"OTEL_EXPORTER_OTLP_COMPRESSION, OTEL_EXPORTER_OTLP_CERTIFICATE,\n"
"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, OTEL_EXPORTER_OTLP_CLIENT_KEY,\n"
"OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME. Precedence: flags >\n"
"environment > config file > defaults. SIGHUP reloads; SIGTERM flushes\n"
"and exits. See ember(1).\n";

void opts_usage(unsigned int cmd, FILE *f)
{
	bool any = false;

	fputs(cmd == CMD_RUN ? run_head : record_head, f);
	for (size_t i = 0; i < ember_nr_options; i++) {
		const struct ember_option *d = &ember_options[i];
		char left[96];
		int n;

		if (!(d->cmds & cmd) || d->deprecated || !d->help)
			continue;
		if (d->short_name && short_owner(cmd, d->short_name) == (int)i)
			n = snprintf(left, sizeof(left), "  -%c, --%s", d->short_name, d->name);
		else
			n = snprintf(left, sizeof(left), "      --%s", d->name);
		if (d->arg)
			snprintf(left + n, sizeof(left) - n, " %s", d->arg);
		put_option(f, left, d->help);
	}
	if (cmd == CMD_RECORD)
		put_option(f, "  -- COMMAND [ARGS...]",
			   "start COMMAND, profile it and its children until it "
			   "exits; its stdio and exit status pass through");
	for (size_t i = 0; i < ember_nr_options; i++) {
		const struct ember_option *d = &ember_options[i];

		if (!(d->cmds & cmd) || !d->deprecated)
			continue;
		if (!any)
			fputs("\nDeprecated, accepted until the next release:\n", f);
		any = true;
		if (d->short_name && short_owner(cmd, d->short_name) == (int)i)
			fprintf(f, "  -%c, --%s: use %s\n", d->short_name,
				d->name, d->deprecated);
		else
			fprintf(f, "  %s%s: use %s\n", d->flags & OPTF_KEY_ONLY ?
				"config key " : "--", d->name, d->deprecated);
	}
	if (cmd == CMD_RUN)
		fputs("  -e URL: use --endpoint URL (-e is --event, as in ember record)\n", f);
	fputs(cmd == CMD_RUN ? run_tail : record_tail, f);
}
