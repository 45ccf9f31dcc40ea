// SPDX-License-Identifier: GPL-2.0-only
/*
 * Test driver for the exporter (agent/export/otlp_export.c): enqueue N small
 * but valid ExportProfilesServiceRequests (resource attribute test.seq = i),
 * wait for them to be settled, shut down within a deadline and print the
 * exporter's counters as key=value lines. The receiver (receiver.py)
 * records what arrived; 50-otlp.sh compares both sides.
 *
 *   otlp_send --endpoint URL [--count N] [--interval-ms M] [--queue Q]
 *             [--no-gzip] [--retry-initial-ms R] [--retry-max-ms R]
 *             [--max-elapsed-ms E] [--retry-after-max-ms A]
 *             [--timeout-ms T] [--wait-ms W]
 *             [--shutdown-ms D] [--header "K: V"] [--ca FILE]
 *             [--queue-max-bytes B] [--pad N]
 *
 * --pad N adds a resource attribute test.pad of N pseudo-random letters,
 * so every request is the same size (item_len=, while count < 128) and
 * gzip does not shrink it to nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "gen/opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "export/otlp_export.h"

static unsigned int pad;

static uint8_t *make_request(unsigned int seq, size_t *len)
{
	Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest req =
		OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
	Opentelemetry__Proto__Profiles__V1development__ResourceProfiles rp =
		OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__RESOURCE_PROFILES__INIT;
	Opentelemetry__Proto__Resource__V1__Resource res =
		OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
	Opentelemetry__Proto__Common__V1__KeyValue kv =
		OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
	Opentelemetry__Proto__Common__V1__AnyValue v =
		OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
	Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary d =
		OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	Opentelemetry__Proto__Common__V1__KeyValue kv_pad =
		OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
	Opentelemetry__Proto__Common__V1__AnyValue v_pad =
		OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
	Opentelemetry__Proto__Common__V1__KeyValue *kvs[2] = { &kv, &kv_pad };
	char *pad_str = NULL;
	Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rps[1] = { &rp };
	char *strings[1] = { "" };
	uint8_t *buf;

	v.value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
	v.int_value = seq;
	kv.key = "test.seq";
	kv.value = &v;
	res.attributes = kvs;
	res.n_attributes = 1;
	if (pad) {
		uint32_t r = 2463534242u ^ seq;

		pad_str = malloc(pad + 1);
		if (!pad_str)
			return NULL;
		for (unsigned int i = 0; i < pad; i++) {
			r ^= r << 13;
			r ^= r >> 17;
			r ^= r << 5;
			pad_str[i] = (char)('a' + r % 26);
		}
		pad_str[pad] = '\0';
		v_pad.value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		v_pad.string_value = pad_str;
		kv_pad.key = "test.pad";
		kv_pad.value = &v_pad;
		res.n_attributes = 2;
	}
	rp.resource = &res;
	d.string_table = strings;
	d.n_string_table = 1;
	req.resource_profiles = rps;
	req.n_resource_profiles = 1;
	req.dictionary = &d;
	*len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(&req);
	buf = malloc(*len);
	if (buf)
		opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(&req, buf);
	free(pad_str);
	return buf;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	struct otlp_export_config cfg = { .gzip = true };
	unsigned int count = 1, interval = 0, wait = 10000, shutdown = 2000;
	size_t item_len = 0;
	const char *headers[8] = { NULL };
	size_t nr_headers = 0;
	struct otlp_export_stats st;
	struct otlp_exporter *x;
	char err[256];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--no-gzip")) {
			cfg.gzip = false;
			continue;
		}
		if (!strcmp(a, "--quiet")) {
			cfg.quiet = true;
			continue;
		}
		if (!v) {
			fprintf(stderr, "otlp_send: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--endpoint"))
			cfg.endpoint = v;
		else if (!strcmp(a, "--count"))
			count = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--interval-ms"))
			interval = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--queue"))
			cfg.queue_max = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--queue-max-bytes"))
			cfg.queue_max_bytes = strtoul(v, NULL, 0);
		else if (!strcmp(a, "--pad"))
			pad = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--retry-initial-ms"))
			cfg.retry_initial_ms = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--retry-max-ms"))
			cfg.retry_max_ms = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--max-elapsed-ms"))
			cfg.retry_max_elapsed_ms = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--retry-after-max-ms"))
			cfg.retry_after_max_ms = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--timeout-ms"))
			cfg.timeout_ms = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--wait-ms"))
			wait = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--shutdown-ms"))
			shutdown = (unsigned int)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--ca"))
			cfg.ca_file = v;
		else if (!strcmp(a, "--header") && nr_headers < 7)
			headers[nr_headers++] = v;
		else {
			fprintf(stderr, "otlp_send: unknown option %s\n", a);
			return 2;
		}
	}
	cfg.headers = headers;
	if (otlp_global_init()) {
		fprintf(stderr, "otlp_send: curl init failed\n");
		return 1;
	}
	x = otlp_exporter_new(&cfg, err, sizeof(err));
	if (!x) {
		fprintf(stderr, "otlp_send: %s\n", err);
		return 1;
	}
	for (unsigned int i = 0; i < count; i++) {
		size_t len;
		uint8_t *buf = make_request(i, &len);

		if (buf) {
			item_len = len;
			otlp_exporter_enqueue(x, buf, len);
		}
		if (interval)
			sleep_ms(interval);
	}
	/* Bounded wait for every profile to be settled (sent or given up). */
	for (unsigned int waited = 0; waited < wait; waited += 20) {
		otlp_exporter_stats(x, &st);
		if (st.exported + st.failed + st.dropped_queue_full >= st.enqueued &&
		    !st.in_flight && !st.queue_depth)
			break;
		sleep_ms(20);
	}
	otlp_exporter_stats(x, &st);
	if (getenv("OTLP_SEND_AFTER_SHUTDOWN"))
		otlp_exporter_shutdown(x, shutdown, &st);
	printf("enqueued=%llu\nexported=%llu\nfailed=%llu\ndropped=%llu\n"
	       "retries=%llu\npartial_rejected=%llu\nqueue_depth=%llu\n"
	       "last_status=%d\n",
	       (unsigned long long)st.enqueued, (unsigned long long)st.exported,
	       (unsigned long long)st.failed,
	       (unsigned long long)st.dropped_queue_full,
	       (unsigned long long)st.retries,
	       (unsigned long long)st.partial_rejected,
	       (unsigned long long)st.queue_depth, st.last_status);
	printf("dropped_bytes=%llu\nin_flight=%llu\nqueue_bytes=%llu\n"
	       "queue_bytes_peak=%llu\nin_flight_bytes=%llu\nitem_len=%zu\n",
	       (unsigned long long)st.dropped_queue_bytes,
	       (unsigned long long)st.in_flight,
	       (unsigned long long)st.queue_bytes,
	       (unsigned long long)st.queue_bytes_peak,
	       (unsigned long long)st.in_flight_bytes, item_len);
	fflush(stdout);
	if (!getenv("OTLP_SEND_AFTER_SHUTDOWN"))
		otlp_exporter_shutdown(x, shutdown, NULL);
	return 0;
}
