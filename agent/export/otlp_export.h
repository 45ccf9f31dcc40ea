/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * OTLP/HTTP profiles exporter: a bounded queue drained by one thread that
 * POSTs each ExportProfilesServiceRequest through libcurl
 * (Content-Type: application/x-protobuf, optional gzip, TLS with a custom
 * CA). Producers never block: enqueue drops the oldest queued profile when
 * the queue is full and counts it.
 *
 * Bounds: at most queue_max profiles wait (the one being sent not
 * counted), and queue_max_bytes bounds all the exporter holds: waiting
 * profiles, the one being sent and its gzip copy. By default 64 slots
 * (about 10 minutes of 10 s intervals) and 64 MiB: the bytes bind first
 * for profiles above 1 MiB, the slots below. When the one being sent
 * leaves no room for a new profile even with nothing else waiting, the new
 * profile is dropped; when it leaves no room for its own gzip copy, it is
 * sent uncompressed. Drops are counted, and which bound caused them.
 *
 * Delivery: success on 2xx (a partial-success body is logged and its
 * rejected count kept); retry with exponential backoff and jitter on
 * connection errors, timeouts, 429 and 5xx; any other 4xx drops the
 * profile with a log line. A profile that is still failing after
 * retry_max_elapsed_ms of attempts and backoff is dropped.
 *
 * Retry-After (seconds or an HTTP date, on 429 and 5xx) is honoured up to
 * retry_after_max_ms: a longer one is cut to it, logged once. The time
 * spent in such a server-requested wait does not count against
 * retry_max_elapsed_ms, so a receiver that asks for more time than that
 * budget still gets the profile; it stays in flight meanwhile, and a
 * shutdown ends the wait at its deadline.
 */
#ifndef EMBER_OTLP_EXPORT_H
#define EMBER_OTLP_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest Retry-After honoured by default: 10 minutes. */
#define OTLP_RETRY_AFTER_MAX_MS 600000u
/* Default queue bounds: the bytes bind first for profiles above 1 MiB. */
#define OTLP_QUEUE_MAX 64
#define OTLP_QUEUE_MAX_BYTES ((size_t)64 << 20)

struct otlp_export_config {
	const char *endpoint;		/* full URL, e.g. http://h:4318/v1development/profiles */
	const char *const *headers;	/* "Name: value" lines, NULL-terminated; may be NULL */
	unsigned int timeout_ms;	/* per request, 0 = 10000 */
	bool gzip;
	const char *ca_file;		/* custom CA bundle (https) */
	const char *client_cert;	/* mTLS, optional */
	const char *client_key;
	size_t queue_max;		/* waiting profiles, 0 = OTLP_QUEUE_MAX */
	size_t queue_max_bytes;		/* all held, 0 = OTLP_QUEUE_MAX_BYTES */
	unsigned int retry_initial_ms;	/* 0 = 1000 */
	unsigned int retry_max_ms;	/* 0 = 30000 */
	unsigned int retry_max_elapsed_ms;	/* 0 = 300000 */
	unsigned int retry_after_max_ms;	/* 0 = OTLP_RETRY_AFTER_MAX_MS */
	bool quiet;			/* no log lines (tests) */
};

struct otlp_export_stats {
	uint64_t enqueued;		/* profiles handed to the exporter */
	uint64_t exported;		/* accepted by the receiver (2xx) */
	uint64_t failed;		/* given up: 4xx, retries exhausted, shutdown */
	uint64_t dropped_queue_full;	/* dropped to make room (all causes) */
	uint64_t dropped_queue_bytes;	/* of which for queue_max_bytes (the
					 * rest: queue_max) */
	uint64_t retries;		/* re-sends after a retryable failure */
	uint64_t partial_rejected;	/* rejected_profiles from partial successes */
	uint64_t bytes_sent;		/* request bodies of successful sends */
	uint64_t queue_depth;		/* waiting, not counting the one in flight */
	uint64_t in_flight;		/* 0 or 1 */
	uint64_t queue_bytes;		/* held now: waiting + in flight + gzip
					 * copy; never above queue_max_bytes */
	uint64_t queue_bytes_peak;	/* the most queue_bytes has been */
	uint64_t in_flight_bytes;	/* of queue_bytes: the one being sent
					 * and its gzip copy */
	int last_status;		/* last HTTP status, 0 = no response */
};

struct otlp_exporter;

/* Validate cfg and start the sender thread. NULL with err set on failure. */
struct otlp_exporter *otlp_exporter_new(const struct otlp_export_config *cfg,
					char *err, size_t err_len);
/* Take ownership of buf (malloc'd packed request). Never blocks on I/O. */
void otlp_exporter_enqueue(struct otlp_exporter *x, uint8_t *buf, size_t len);
void otlp_exporter_stats(struct otlp_exporter *x, struct otlp_export_stats *st);
/* Apply a new configuration (SIGHUP) from the next request on. */
int otlp_exporter_reconfigure(struct otlp_exporter *x,
			      const struct otlp_export_config *cfg,
			      char *err, size_t err_len);
/*
 * Deliver what is queued for up to deadline_ms, then abort, count what is
 * left as failed, stop the thread and free everything. The final counters
 * go to *final when it is not NULL.
 */
void otlp_exporter_shutdown(struct otlp_exporter *x, unsigned int deadline_ms,
			    struct otlp_export_stats *final);

/*
 * Is url an endpoint the exporter can send to: http or https, a host (an
 * IPv6 address in closed brackets), an optional port from 1 to 65535, no
 * spaces or control characters, and parsed by libcurl's URL API? 0, or
 * -EINVAL with why saying what is wrong.
 */
int otlp_endpoint_check(const char *url, char *why, size_t why_len);

/* Call once before any thread starts (curl_global_init is not thread-safe). */
int otlp_global_init(void);

#endif /* EMBER_OTLP_EXPORT_H */
