// SPDX-License-Identifier: GPL-2.0-only
/*
 * OTLP/HTTP profiles exporter (see otlp_export.h).
 *
 * One sender thread owns the curl handle. The queue is a FIFO protected by
 * a mutex; the producer (the sampling loop) only appends and, when full,
 * frees the oldest waiting item: it never waits for the network. The item
 * being sent is out of the queue, so drop-oldest only ever drops waiting
 * profiles and what is in flight is delivered in order once the receiver
 * recovers.
 *
 * Memory: queue_max_bytes bounds everything the exporter holds, the item
 * in flight and its gzip copy included (x->bytes + x->inflight_bytes).
 * The gzip copy is made once per item, kept for its retries, and its room
 * is taken before compressing (oldest waiting items go to make it; when
 * even that is not enough the item is sent uncompressed). A new item that
 * does not fit beside the one in flight with nothing else queued is
 * dropped itself: the one in flight cannot be.
 *
 * One file: the queue, the HTTP attempt and the sender thread share one
 * struct otlp_exporter under one mutex; split, its locking would be spread
 * over files.
 */
/*
 * libcurl versions: ember builds against Debian 11's 7.74 as well as newer
 * releases. Options that newer libcurl added (or deprecated the old form
 * of) are chosen at compile time below; EMBER_FORCE_OLD_CURL selects the
 * old-libcurl branches on a new libcurl so a test can prove they compile
 * and work (selftests/suites/10-agent-unit.sh, 50-otlp.sh).
 */
#ifdef EMBER_FORCE_OLD_CURL
/* New headers mark the old options deprecated (warnings, -Werror). */
#define CURL_DISABLE_DEPRECATION
#endif
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <zlib.h>
#include "lib/clock.h"
#include "lib/deadline.h"
#include "lib/errmsg.h"
#include "gen/opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "export/otlp_export.h"

#ifndef EMBER_VERSION
#define EMBER_VERSION "0"
#endif
#define RESPONSE_MAX (64 * 1024)	/* bytes of a response body we keep */

#ifndef CURL_AT_LEAST_VERSION	/* itself new in 7.43 */
#define CURL_AT_LEAST_VERSION(x, y, z) \
	(LIBCURL_VERSION_NUM >= (((x) << 16) | ((y) << 8) | (z)))
#endif
/* CURLOPT_PROTOCOLS_STR: 7.85, which deprecated CURLOPT_PROTOCOLS. */
#if CURL_AT_LEAST_VERSION(7, 85, 0) && !defined(EMBER_FORCE_OLD_CURL)
#define HAVE_CURLOPT_PROTOCOLS_STR 1
#endif
/* CURLINFO_RETRY_AFTER: 7.66; before it the header is parsed here. */
#if CURL_AT_LEAST_VERSION(7, 66, 0) && !defined(EMBER_FORCE_OLD_CURL)
#define HAVE_CURLINFO_RETRY_AFTER 1
#endif

struct item {
	struct item *next;
	uint8_t *buf;
	size_t len;
};

struct cfg_copy {
	char *endpoint, *ca_file, *client_cert, *client_key;
	struct curl_slist *headers;	/* the user's (OTEL_EXPORTER_OTLP_HEADERS) */
	unsigned int timeout_ms, retry_initial_ms, retry_max_ms, retry_max_elapsed_ms;
	unsigned int retry_after_max_ms;
	size_t queue_max, queue_max_bytes;
	bool gzip, quiet;
};

struct otlp_exporter {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* queue changed, stop asked, config changed */
	pthread_t thread;
	struct item *head, *tail;
	size_t depth, bytes;		/* waiting items and their bytes */
	size_t inflight_bytes;		/* the item being sent + its gzip copy */
	struct cfg_copy cfg;		/* under lock; sender copies what it needs */
	unsigned int cfg_gen;
	bool stopping;			/* shutdown asked: drain until deadline */
	bool abort;			/* deadline passed: give up now */
	struct timespec deadline;
	struct otlp_export_stats st;
	uint64_t rng;
	bool clamp_logged;		/* sender thread only */
	bool plain_logged;		/* sender thread only */
};

static void xlog(const struct otlp_exporter *x, const char *fmt, ...)
{
	va_list ap;

	if (x->cfg.quiet)
		return;
	va_start(ap, fmt);
	fputs("ember run: otlp: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int otlp_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -EIO;
}

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* Copies of the four strings into c; false if one given could not be. */
static bool cfg_set_strings(struct cfg_copy *c, const char *endpoint,
			    const char *ca_file, const char *client_cert,
			    const char *client_key)
{
	c->endpoint = xstrdup(endpoint);
	c->ca_file = xstrdup(ca_file);
	c->client_cert = xstrdup(client_cert);
	c->client_key = xstrdup(client_key);
	return (!endpoint || c->endpoint) && (!ca_file || c->ca_file) &&
	       (!client_cert || c->client_cert) && (!client_key || c->client_key);
}

/* Append s to *h; out of memory, free the whole list and return false. */
static bool slist_add(struct curl_slist **h, const char *s)
{
	struct curl_slist *t = curl_slist_append(*h, s);

	if (!t) {
		curl_slist_free_all(*h);
		*h = NULL;
		return false;
	}
	*h = t;
	return true;
}

/* Append a copy of every entry of from to *h, as slist_add. */
static bool slist_add_all(struct curl_slist **h, const struct curl_slist *from)
{
	for (; from; from = from->next)
		if (!slist_add(h, from->data))
			return false;
	return true;
}

static void cfg_free(struct cfg_copy *c)
{
	free(c->endpoint);
	free(c->ca_file);
	free(c->client_cert);
	free(c->client_key);
	curl_slist_free_all(c->headers);
	memset(c, 0, sizeof(*c));
}

static bool host_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' ||
	       ch == '~' || ch == '%';
}

int otlp_endpoint_check(const char *url, char *why, size_t why_len)
{
	const char *p, *auth, *auth_end, *host, *host_end, *port = NULL;
	size_t scheme_len;

	for (p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return errmsg_inval(why, why_len, "it holds a space or control "
					    "character at offset %zu", (size_t)(p - url));
	p = strstr(url, "://");
	if (!p)
		return errmsg_inval(why, why_len, "expected http://HOST[:PORT][/PATH] "
				    "or https://HOST[:PORT][/PATH]");
	scheme_len = (size_t)(p - url);
	if (!(scheme_len == 4 && !strncasecmp(url, "http", 4)) &&
	    !(scheme_len == 5 && !strncasecmp(url, "https", 5)))
		return errmsg_inval(why, why_len, "scheme '%.*s' is not http or https",
				    (int)scheme_len, url);
	auth = p + 3;
	auth_end = auth + strcspn(auth, "/?#");
	host = auth;
	for (p = auth; p < auth_end; p++)
		if (*p == '@')
			host = p + 1;	/* user:password@ */
	if (host == auth_end)
		return errmsg_inval(why, why_len, "no host after '://'");
	if (*host == '[') {
		const char *close = memchr(host, ']', (size_t)(auth_end - host));

		if (!close)
			return errmsg_inval(why, why_len, "no ']' closes the IPv6 address");
		if (close == host + 1)
			return errmsg_inval(why, why_len, "empty IPv6 address in []");
		for (p = host + 1; p < close; p++)
			if (!strchr("0123456789abcdefABCDEF:.%", *p) &&
			    !host_char(*p))
				return errmsg_inval(why, why_len, "'%c' in the IPv6 address", *p);
		if (!memchr(host + 1, ':', (size_t)(close - host - 1)))
			return errmsg_inval(why, why_len, "not an IPv6 address in []");
		host_end = close + 1;
		if (host_end < auth_end && *host_end != ':')
			return errmsg_inval(why, why_len, "'%c' after ']'", *host_end);
	} else {
		host_end = memchr(host, ':', (size_t)(auth_end - host));
		if (!host_end)
			host_end = auth_end;
		if (host_end < auth_end &&
		    memchr(host_end + 1, ':', (size_t)(auth_end - host_end - 1)))
			return errmsg_inval(why, why_len, "an IPv6 address needs brackets, "
					    "as in http://[::1]:4318");
		if (host_end == host)
			return errmsg_inval(why, why_len, "no host after '://'");
		for (p = host; p < host_end; p++)
			if (!host_char(*p))
				return errmsg_inval(why, why_len, "'%c' in the host name", *p);
	}
	if (host_end < auth_end)
		port = host_end + 1;
	if (port) {
		unsigned long v = 0;

		if (port == auth_end)
			return errmsg_inval(why, why_len, "no port after ':'");
		for (p = port; p < auth_end; p++) {
			if (*p < '0' || *p > '9' || (v = v * 10 + (unsigned long)(*p - '0')) > 65535)
				return errmsg_inval(why, why_len, "port '%.*s' is not a number "
						    "from 1 to 65535", (int)(auth_end - port), port);
		}
		if (!v)
			return errmsg_inval(why, why_len, "port 0 is not a port to send to");
	}
	/* an image's libcurl may be built for HTTP only (EMBER_CURL_PREFIX) */
	if (scheme_len == 5 &&
	    !(curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_SSL))
		return errmsg_inval(why, why_len, "this ember's libcurl has no TLS "
				    "(built for HTTP only): use an http:// endpoint, or "
				    "build with a libcurl that has TLS "
				    "(scripts/build-min-curl.sh --tls openssl)");
#if CURL_AT_LEAST_VERSION(7, 62, 0)
	{
		/* What libcurl will be handed must parse there too. */
		CURLU *u = curl_url();
		CURLUcode rc;

		if (!u)
			return errmsg_inval(why, why_len, "out of memory");
		rc = curl_url_set(u, CURLUPART_URL, url, 0);
		curl_url_cleanup(u);
		if (rc != CURLUE_OK)
			return errmsg_inval(why, why_len, "libcurl cannot parse it "
					    "(CURLUcode %d)", (int)rc);
	}
#endif
	return 0;
}

static int cfg_copy(struct cfg_copy *c, const struct otlp_export_config *in,
		    char *err, size_t err_len)
{
	struct curl_slist *h = NULL;
	bool ok;
	char why[200];

	memset(c, 0, sizeof(*c));
	if (!in->endpoint || otlp_endpoint_check(in->endpoint, why, sizeof(why))) {
		snprintf(err, err_len, "OTLP endpoint '%s': %s",
			 in->endpoint ? in->endpoint : "",
			 in->endpoint ? why : "none given");
		return -EINVAL;
	}
	ok = cfg_set_strings(c, in->endpoint, in->ca_file, in->client_cert,
			     in->client_key);
	c->timeout_ms = in->timeout_ms ? in->timeout_ms : 10000;
	c->retry_initial_ms = in->retry_initial_ms ? in->retry_initial_ms : 1000;
	c->retry_max_ms = in->retry_max_ms ? in->retry_max_ms : 30000;
	c->retry_max_elapsed_ms = in->retry_max_elapsed_ms ?
				  in->retry_max_elapsed_ms : 300000;
	c->retry_after_max_ms = in->retry_after_max_ms ?
				in->retry_after_max_ms : OTLP_RETRY_AFTER_MAX_MS;
	c->queue_max = in->queue_max ? in->queue_max : OTLP_QUEUE_MAX;
	c->queue_max_bytes = in->queue_max_bytes ? in->queue_max_bytes :
			     OTLP_QUEUE_MAX_BYTES;
	c->gzip = in->gzip;
	c->quiet = in->quiet;
	for (size_t i = 0; ok && in->headers && in->headers[i]; i++)
		ok = slist_add(&h, in->headers[i]);
	c->headers = h;
	if (!ok) {
		cfg_free(c);
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static int cfg_dup(struct cfg_copy *d, const struct cfg_copy *s)
{
	*d = *s;
	d->headers = NULL;
	if (!cfg_set_strings(d, s->endpoint, s->ca_file, s->client_cert,
			     s->client_key) ||
	    !slist_add_all(&d->headers, s->headers)) {
		cfg_free(d);
		return -ENOMEM;
	}
	return 0;
}

/* The request's headers: fixed ones first, then the user's. */
static struct curl_slist *request_headers(const struct cfg_copy *c, bool gzipped)
{
	struct curl_slist *h = NULL;
	const char *fixed[] = {
		/* Exactly this Content-Type: Pyroscope matches it verbatim. */
		"Content-Type: application/x-protobuf",
		/* No "Expect: 100-continue" round trip before each POST. */
		"Expect:",
		gzipped ? "Content-Encoding: gzip" : NULL,
	};

	for (size_t i = 0; i < 3; i++)
		if (fixed[i] && !slist_add(&h, fixed[i]))
			return NULL;
	slist_add_all(&h, c->headers);	/* NULL when out of memory */
	return h;
}

/* ---- time and backoff ---- */

static struct timespec mono_after(uint64_t ms)
{
	return deadline_after_ns(CLOCK_MONOTONIC, ms * 1000000u);
}

static uint64_t ts_ms(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000 + (uint64_t)ts->tv_nsec / 1000000;
}

/* xorshift64*: jitter only, no need for quality. */
static uint64_t rnd(struct otlp_exporter *x)
{
	x->rng ^= x->rng >> 12;
	x->rng ^= x->rng << 25;
	x->rng ^= x->rng >> 27;
	return x->rng * 0x2545F4914F6CDD1DULL;
}

/* Exponential backoff with +-50% jitter so a fleet does not retry in step. */
static uint64_t backoff_ms(struct otlp_exporter *x, const struct cfg_copy *c,
			   unsigned int attempt)
{
	uint64_t d = c->retry_initial_ms;

	while (attempt-- > 0 && d < c->retry_max_ms)
		d *= 2;
	if (d > c->retry_max_ms)
		d = c->retry_max_ms;
	return d / 2 + rnd(x) % (d + 1);
}

/* ---- queue ---- */

static void free_item(struct item *it)
{
	if (it) {
		free(it->buf);
		free(it);
	}
}

static struct item *pop_locked(struct otlp_exporter *x)
{
	struct item *it = x->head;

	if (it) {
		x->head = it->next;
		if (!x->head)
			x->tail = NULL;
		x->depth--;
		x->bytes -= it->len;
		it->next = NULL;
	}
	return it;
}

/* Everything held now, the item in flight and its gzip copy included. */
static size_t held_locked(const struct otlp_exporter *x)
{
	return x->bytes + x->inflight_bytes;
}

static void note_peak_locked(struct otlp_exporter *x)
{
	if (held_locked(x) > x->st.queue_bytes_peak)
		x->st.queue_bytes_peak = held_locked(x);
}

/*
 * Drop the oldest waiting items until `need` more bytes fit under
 * queue_max_bytes; they are chained on *dropped (to free outside the
 * lock). True when it fits.
 */
static bool make_room_locked(struct otlp_exporter *x, size_t need,
			     struct item **dropped, size_t *nr)
{
	while (x->head && held_locked(x) + need > x->cfg.queue_max_bytes) {
		struct item *d = pop_locked(x);

		d->next = *dropped;
		*dropped = d;
		(*nr)++;
		x->st.dropped_queue_full++;
		x->st.dropped_queue_bytes++;
	}
	return held_locked(x) + need <= x->cfg.queue_max_bytes;
}

static void free_chain(struct item *it)
{
	while (it) {
		struct item *next = it->next;

		free_item(it);
		it = next;
	}
}

void otlp_exporter_enqueue(struct otlp_exporter *x, uint8_t *buf, size_t len)
{
	struct item *it = malloc(sizeof(*it));
	struct item *dropped = NULL;
	size_t nr_slots = 0, nr_bytes = 0;
	bool fits;

	pthread_mutex_lock(&x->lock);
	x->st.enqueued++;
	if (!it || x->stopping) {
		x->st.failed++;
		pthread_mutex_unlock(&x->lock);
		free(buf);
		free(it);
		return;
	}
	it->buf = buf;
	it->len = len;
	it->next = NULL;
	/* Drop-oldest: fresh profiles matter more than stale ones. */
	while (x->head && x->depth + 1 > x->cfg.queue_max) {
		struct item *d = pop_locked(x);

		d->next = dropped;
		dropped = d;
		nr_slots++;
		x->st.dropped_queue_full++;
	}
	fits = make_room_locked(x, len, &dropped, &nr_bytes);
	if (fits) {
		if (x->tail)
			x->tail->next = it;
		else
			x->head = it;
		x->tail = it;
		x->depth++;
		x->bytes += len;
		note_peak_locked(x);
		pthread_cond_broadcast(&x->cond);
	} else {
		/* Not even beside the one in flight alone: this one goes. */
		x->st.dropped_queue_full++;
		x->st.dropped_queue_bytes++;
	}
	pthread_mutex_unlock(&x->lock);
	/* Free outside the lock (and log once, not per profile). */
	free_chain(dropped);
	if (!fits) {
		free_item(it);
		xlog(x, "queue_max_bytes: a %zu-byte profile does not fit beside "
		     "the one being sent: dropped it", len);
	}
	if (nr_slots + nr_bytes)
		xlog(x, "queue full: dropped %zu oldest profile(s) (%zu for "
		     "queue_size, %zu for queue_max_bytes)", nr_slots + nr_bytes,
		     nr_slots, nr_bytes);
}

/* ---- one HTTP attempt ---- */

struct response {
	uint8_t *body;
	size_t len;
#ifndef HAVE_CURLINFO_RETRY_AFTER
	long retry_after_s;		/* Retry-After in seconds, 0 = none */
#endif
};

#ifndef HAVE_CURLINFO_RETRY_AFTER
/*
 * libcurl < 7.66 has no CURLINFO_RETRY_AFTER: take "Retry-After: SECONDS"
 * from the headers (an HTTP-date is ignored: the backoff applies). Each
 * response's headers come anew (a retry, a redirect): the last one wins.
 */
static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct response *r = ctx;
	size_t total = size * n;
	static const char name[] = "retry-after:";

	if (total > sizeof(name) - 1 && !strncasecmp(p, name, sizeof(name) - 1)) {
		size_t i = sizeof(name) - 1;
		long v = 0;

		while (i < total && (p[i] == ' ' || p[i] == '\t'))
			i++;
		if (i < total && p[i] >= '0' && p[i] <= '9') {
			for (; i < total && p[i] >= '0' && p[i] <= '9'; i++)
				v = v < 100000000 ? v * 10 + (p[i] - '0') : v;
			r->retry_after_s = v;
		}
	}
	return total;
}
#endif

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct response *r = ctx;
	size_t total = size * n, keep = total;

	if (r->len + keep > RESPONSE_MAX)
		keep = RESPONSE_MAX - r->len;
	if (keep) {
		uint8_t *b = realloc(r->body, r->len + keep);

		if (!b)
			return total;	/* ignore the body, keep the status */
		memcpy(b + r->len, p, keep);
		r->body = b;
		r->len += keep;
	}
	return total;
}

static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	struct otlp_exporter *x = ctx;
	bool abort;

	(void)dt, (void)dn, (void)ut, (void)un;
	pthread_mutex_lock(&x->lock);
	abort = x->abort;
	pthread_mutex_unlock(&x->lock);
	return abort;	/* non-zero aborts the transfer at shutdown */
}

/* Room a gzip copy of len bytes may need. */
static size_t gzip_bound(size_t len)
{
	return compressBound(len) + 64;
}

static int gzip_buf(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream z;
	size_t cap = gzip_bound(len);
	uint8_t *b = malloc(cap);
	int ret;

	if (!b)
		return -ENOMEM;
	memset(&z, 0, sizeof(z));
	/* windowBits 15 + 16: a gzip wrapper, as Content-Encoding: gzip wants. */
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(b);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = b;
	z.avail_out = (uInt)cap;
	ret = deflate(&z, Z_FINISH);
	*out_len = z.total_out;
	deflateEnd(&z);
	if (ret != Z_STREAM_END) {
		free(b);
		return -EIO;
	}
	*out = b;
	return 0;
}

/* Log a partial success; returns the rejected count. */
static int64_t check_partial(struct otlp_exporter *x, const struct response *r)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse *resp;
	int64_t rejected = 0;

	if (!r->len)
		return 0;
	resp = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack(NULL, r->len, r->body);
	if (!resp)
		return 0;	/* not protobuf (a proxy's text): nothing to report */
	if (resp->partial_success && (resp->partial_success->rejected_profiles ||
				      (resp->partial_success->error_message &&
				       *resp->partial_success->error_message))) {
		rejected = resp->partial_success->rejected_profiles;
		xlog(x, "partial success: receiver rejected %lld profile(s): %s",
		     (long long)rejected,
		     resp->partial_success->error_message ?
		     resp->partial_success->error_message : "");
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked(resp, NULL);
	return rejected;
}

enum outcome { SENT, RETRY, DROP };

/*
 * POST one body. On RETRY, *retry_after_ms is what the server asked for
 * (0 = no Retry-After).
 */
static enum outcome post(struct otlp_exporter *x, CURL *c, const struct cfg_copy *cfg,
			 const uint8_t *body, size_t len, bool gzipped,
			 uint64_t budget_ms, uint64_t *retry_after_ms)
{
	struct curl_slist *headers = request_headers(cfg, gzipped);
	struct response r = { 0 };
	char errbuf[CURL_ERROR_SIZE] = "";
	long status = 0;
	curl_off_t ra = 0;
	uint64_t timeout = cfg->timeout_ms;
	enum outcome out;
	CURLcode rc;

	*retry_after_ms = 0;
	if (!headers)
		return RETRY;	/* out of memory: try again later */
	if (budget_ms && budget_ms < timeout)
		timeout = budget_ms;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, cfg->endpoint);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout ? timeout : 1));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout ? timeout : 1));
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "ember/" EMBER_VERSION);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	/* Only http(s); redirects are not followed (no FOLLOWLOCATION). */
#ifdef HAVE_CURLOPT_PROTOCOLS_STR
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	/* The bitmask form, the only one before 7.85 (deprecated since). */
	curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
#ifndef HAVE_CURLINFO_RETRY_AFTER
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
#endif
	if (cfg->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, cfg->ca_file);
	if (cfg->client_cert)
		curl_easy_setopt(c, CURLOPT_SSLCERT, cfg->client_cert);
	if (cfg->client_key)
		curl_easy_setopt(c, CURLOPT_SSLKEY, cfg->client_key);

	rc = curl_easy_perform(c);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(headers);
	if (rc != CURLE_OK) {
		xlog(x, "POST %s failed: %s", cfg->endpoint,
		     *errbuf ? errbuf : curl_easy_strerror(rc));
		free(r.body);
		pthread_mutex_lock(&x->lock);
		x->st.last_status = 0;
		pthread_mutex_unlock(&x->lock);
		/* Bad URL, TLS setup or options: retrying will not help. */
		switch (rc) {
		case CURLE_URL_MALFORMAT:
		case CURLE_UNSUPPORTED_PROTOCOL:
		case CURLE_SSL_CACERT_BADFILE:
		case CURLE_SSL_CERTPROBLEM:
			return DROP;
		default:
			return RETRY;
		}
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	pthread_mutex_lock(&x->lock);
	x->st.last_status = (int)status;
	pthread_mutex_unlock(&x->lock);
	if (status >= 200 && status < 300) {
		char *ctype = NULL;
		int64_t rejected = 0;

		/* Only a protobuf body is an ExportProfilesServiceResponse. */
		curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ctype);
		if (ctype && !strncmp(ctype, "application/x-protobuf", 22))
			rejected = check_partial(x, &r);

		pthread_mutex_lock(&x->lock);
		x->st.partial_rejected += rejected > 0 ? (uint64_t)rejected : 0;
		pthread_mutex_unlock(&x->lock);
		out = SENT;
	} else if (status == 429 || status >= 500) {
#ifdef HAVE_CURLINFO_RETRY_AFTER
		if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) != CURLE_OK)
			ra = 0;
#else
		ra = r.retry_after_s;
#endif
		if (ra > 0)
			*retry_after_ms = (uint64_t)ra * 1000;
		xlog(x, "receiver answered %ld, will retry%s", status,
		     *retry_after_ms ? " after its Retry-After" : "");
		out = RETRY;
	} else {
		xlog(x, "receiver answered %ld: profile dropped (%.*s)", status,
		     (int)(r.len > 200 ? 200 : r.len), r.body ? (char *)r.body : "");
		out = DROP;
	}
	free(r.body);
	return out;
}

/* ---- sender thread ---- */

/* Wait until the timespec or a stop/abort; true when the item must be
 * given up (aborted, or the shutdown deadline passed). */
static bool wait_until(struct otlp_exporter *x, const struct timespec *until)
{
	bool aborted;

	pthread_mutex_lock(&x->lock);
	while (!x->abort) {
		struct timespec t = *until;

		if (x->stopping && ts_ms(&x->deadline) < ts_ms(&t))
			t = x->deadline;
		if (pthread_cond_timedwait(&x->cond, &x->lock, &t) == ETIMEDOUT)
			break;
	}
	/* Past the shutdown deadline a retry cannot succeed in time. */
	aborted = x->abort || (x->stopping && mono_ms() >= ts_ms(&x->deadline));
	pthread_mutex_unlock(&x->lock);
	return aborted;
}

/*
 * The gzip copy of the item in flight, counted against queue_max_bytes:
 * its worst-case room is taken first (oldest waiting items are dropped to
 * make it), the excess given back once the real size is known. NULL when
 * it does not fit or memory is short: the item goes uncompressed.
 */
static uint8_t *gzip_counted(struct otlp_exporter *x, const struct item *it,
			     size_t *gz_len)
{
	size_t need = gzip_bound(it->len), nr = 0;
	struct item *dropped = NULL;
	uint8_t *gz = NULL, *shrunk;
	bool fits;

	pthread_mutex_lock(&x->lock);
	fits = make_room_locked(x, need, &dropped, &nr);
	if (fits) {
		x->inflight_bytes += need;
		note_peak_locked(x);
	}
	pthread_mutex_unlock(&x->lock);
	free_chain(dropped);
	if (nr)
		xlog(x, "queue full: dropped %zu oldest profile(s) (for "
		     "queue_max_bytes, to compress the one being sent)", nr);
	if (!fits) {
		if (!x->plain_logged)
			xlog(x, "a %zu-byte profile and its gzip copy exceed "
			     "queue_max_bytes: sending it uncompressed (logged once)",
			     it->len);
		x->plain_logged = true;
		return NULL;
	}
	if (gzip_buf(it->buf, it->len, &gz, gz_len)) {
		gz = NULL;
		*gz_len = 0;
	} else if ((shrunk = realloc(gz, *gz_len ? *gz_len : 1))) {
		gz = shrunk;	/* hold only what the copy needs */
	}
	pthread_mutex_lock(&x->lock);
	x->inflight_bytes -= need - *gz_len;
	pthread_mutex_unlock(&x->lock);
	return gz;
}

static void drop_gzip(struct otlp_exporter *x, uint8_t **gz, size_t *gz_len)
{
	if (!*gz)
		return;
	free(*gz);
	*gz = NULL;
	pthread_mutex_lock(&x->lock);
	x->inflight_bytes -= *gz_len;
	pthread_mutex_unlock(&x->lock);
	*gz_len = 0;
}

/* The item is settled: account for it and release what it held. */
static void settle(struct otlp_exporter *x, struct item *it, bool sent,
		   size_t sent_len, uint8_t **gz, size_t *gz_len)
{
	drop_gzip(x, gz, gz_len);
	pthread_mutex_lock(&x->lock);
	if (sent) {
		x->st.exported++;
		x->st.bytes_sent += sent_len;
	} else {
		x->st.failed++;
	}
	x->st.in_flight = 0;
	x->inflight_bytes -= it->len;
	pthread_mutex_unlock(&x->lock);
}

/*
 * Send one profile until it is accepted, refused, or retry_max_elapsed_ms
 * of failing attempts and our own backoff have passed. A wait the receiver
 * asked for (Retry-After, up to retry_after_max_ms) is honoured in full and
 * not charged to that budget: the receiver is alive and has said when to
 * come back. The profile stays in flight meanwhile; a shutdown still ends
 * the wait at its deadline.
 */
static void deliver(struct otlp_exporter *x, CURL *c, struct item *it)
{
	uint64_t start = mono_ms(), server_waits = 0;
	unsigned int attempt = 0;
	struct cfg_copy cfg;
	uint8_t *gz = NULL;	/* made once, kept for the retries */
	size_t gz_len = 0;

	for (;;) {
		const uint8_t *body = it->buf;
		size_t len = it->len;
		uint64_t ra, wait, elapsed, budget = 0;
		enum outcome o;
		struct timespec until;
		bool stopping, asked = false;

		/* Snapshot the configuration: SIGHUP may change it meanwhile. */
		pthread_mutex_lock(&x->lock);
		stopping = x->stopping;
		if (stopping) {
			uint64_t d = ts_ms(&x->deadline), n = mono_ms();

			budget = d > n ? d - n : 1;
		}
		if (cfg_dup(&cfg, &x->cfg)) {
			pthread_mutex_unlock(&x->lock);
			settle(x, it, false, 0, &gz, &gz_len);
			return;
		}
		pthread_mutex_unlock(&x->lock);

		/* Without memory or room to compress, send it plain rather than
		 * not; a reload may have turned gzip off or on meanwhile. */
		if (!cfg.gzip)
			drop_gzip(x, &gz, &gz_len);
		else if (!gz)
			gz = gzip_counted(x, it, &gz_len);
		if (gz) {
			body = gz;
			len = gz_len;
		}
		o = post(x, c, &cfg, body, len, gz != NULL, budget, &ra);

		if (o == SENT || o == DROP) {
			settle(x, it, o == SENT, len, &gz, &gz_len);
			cfg_free(&cfg);
			return;
		}
		wait = backoff_ms(x, &cfg, attempt++);
		if (ra > cfg.retry_after_max_ms) {
			if (!x->clamp_logged)
				xlog(x, "receiver asked to retry after %llu s; waiting "
				     "retry_after_max_ms (%u ms) instead (logged once)",
				     (unsigned long long)(ra / 1000),
				     cfg.retry_after_max_ms);
			x->clamp_logged = true;
			ra = cfg.retry_after_max_ms;
		}
		if (ra >= wait) {
			wait = ra;	/* the server knows its load best */
			asked = true;
		}
		elapsed = mono_ms() - start;
		elapsed = elapsed > server_waits ? elapsed - server_waits : 0;
		if (elapsed + (asked ? 0 : wait) > cfg.retry_max_elapsed_ms) {
			xlog(x, "giving up on a profile after %u attempts", attempt);
			settle(x, it, false, 0, &gz, &gz_len);
			cfg_free(&cfg);
			return;
		}
		cfg_free(&cfg);
		until = mono_after(wait);
		if (asked)
			server_waits += wait;
		if (wait_until(x, &until)) {
			settle(x, it, false, 0, &gz, &gz_len);
			return;
		}
		pthread_mutex_lock(&x->lock);
		x->st.retries++;
		pthread_mutex_unlock(&x->lock);
	}
}

static void *sender(void *arg)
{
	struct otlp_exporter *x = arg;
	CURL *c = curl_easy_init();

	pthread_setname_np(pthread_self(), "ember-export");
	for (;;) {
		struct item *it;

		pthread_mutex_lock(&x->lock);
		while (!x->head && !x->stopping)
			pthread_cond_wait(&x->cond, &x->lock);
		if (x->abort || (x->stopping && !x->head)) {
			pthread_mutex_unlock(&x->lock);
			break;
		}
		it = pop_locked(x);
		x->st.in_flight = 1;
		x->inflight_bytes = it->len;	/* still held: counted as queued */
		pthread_mutex_unlock(&x->lock);
		if (!c) {
			size_t none = 0;
			uint8_t *no_gz = NULL;

			settle(x, it, false, 0, &no_gz, &none);
		} else {
			deliver(x, c, it);
		}
		free_item(it);
		/* Wake a shutdown waiting for the queue to drain. */
		pthread_mutex_lock(&x->lock);
		pthread_cond_broadcast(&x->cond);
		pthread_mutex_unlock(&x->lock);
	}
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

/* Free what otlp_exporter_new made, once its thread is gone (or never was). */
static void exporter_free(struct otlp_exporter *x)
{
	cfg_free(&x->cfg);
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->cond);
	free(x);
}

struct otlp_exporter *otlp_exporter_new(const struct otlp_export_config *cfg,
					char *err, size_t err_len)
{
	struct otlp_exporter *x = calloc(1, sizeof(*x));
	pthread_condattr_t ca;
	struct timespec ts;

	if (!x) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	if (cfg_copy(&x->cfg, cfg, err, err_len)) {
		free(x);
		return NULL;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	x->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uintptr_t)x;
	if (!x->rng)
		x->rng = 88172645463325252ULL;
	pthread_mutex_init(&x->lock, NULL);
	/* Timed waits on CLOCK_MONOTONIC: immune to wall-clock jumps. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&x->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&x->thread, NULL, sender, x)) {
		snprintf(err, err_len, "cannot start the exporter thread");
		exporter_free(x);
		return NULL;
	}
	return x;
}

void otlp_exporter_stats(struct otlp_exporter *x, struct otlp_export_stats *st)
{
	pthread_mutex_lock(&x->lock);
	*st = x->st;
	st->queue_depth = x->depth;
	st->queue_bytes = held_locked(x);
	st->in_flight_bytes = x->inflight_bytes;
	pthread_mutex_unlock(&x->lock);
}

int otlp_exporter_reconfigure(struct otlp_exporter *x,
			      const struct otlp_export_config *cfg,
			      char *err, size_t err_len)
{
	struct cfg_copy c;
	int ret = cfg_copy(&c, cfg, err, err_len);

	if (ret)
		return ret;
	pthread_mutex_lock(&x->lock);
	cfg_free(&x->cfg);
	x->cfg = c;
	x->cfg_gen++;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
	return 0;
}

void otlp_exporter_shutdown(struct otlp_exporter *x, unsigned int deadline_ms,
			    struct otlp_export_stats *final)
{
	struct item *it;
	size_t left = 0;

	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	x->stopping = true;
	x->deadline = mono_after(deadline_ms);
	pthread_cond_broadcast(&x->cond);
	/* Wait for the queue to drain or the deadline to pass. */
	while ((x->head || x->st.in_flight) && !x->abort) {
		struct timespec d = x->deadline;

		if (pthread_cond_timedwait(&x->cond, &x->lock, &d) == ETIMEDOUT)
			x->abort = true;
		if (!x->head && !x->st.in_flight)
			break;
	}
	x->abort = true;
	pthread_cond_broadcast(&x->cond);
	pthread_mutex_unlock(&x->lock);
	pthread_join(x->thread, NULL);
	while ((it = pop_locked(x))) {
		x->st.failed++;
		left++;
		free_item(it);
	}
	if (left)
		xlog(x, "shutdown deadline: %zu queued profile(s) not delivered",
		     left);
	if (final) {
		*final = x->st;
		final->queue_depth = 0;
		final->in_flight = 0;
		final->queue_bytes = 0;
		final->in_flight_bytes = 0;
	}
	exporter_free(x);
}
