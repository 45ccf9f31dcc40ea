/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * struct profile -> OTLP ExportProfilesServiceRequest (opentelemetry-proto
 * pinned in proto/opentelemetry/VERSION). Used by `ember record -o
 * FILE.otlp` (output_otlp() in output.h) and by `ember run`, which adds
 * the service name and OTEL_RESOURCE_ATTRIBUTES.
 *
 * Layout written:
 *   one ResourceProfiles per process (process.pid, process.executable.name,
 *   process.executable.path, host.name, container.id, service.name, plus
 *   the extra attributes), one ScopeProfiles (scope "ember"), and per event
 *   one Profile: on-CPU typed (samples, count) with period type
 *   (cpu, nanoseconds) and per-sample timestamps; off-CPU typed
 *   (off_cpu, nanoseconds) with values. One shared dictionary whose seven
 *   tables start with their zero entry.
 */
#ifndef EMBER_OUTPUT_OTLP_H
#define EMBER_OUTPUT_OTLP_H

#include <stddef.h>
#include <stdint.h>
#include "aggregate/profile.h"

struct otlp_attr {
	const char *key;
	const char *value;
};

struct otlp_encode_options {
	/* service.name for every resource; NULL = the executable's name. */
	const char *service_name;
	/* Added to every resource (OTEL_RESOURCE_ATTRIBUTES); ember's own
	 * attributes win over these on a key clash. */
	const struct otlp_attr *attrs;
	size_t nr_attrs;
};

/*
 * Encode p as a packed ExportProfilesServiceRequest in a malloc'd buffer
 * (*buf, *len; caller frees). opt may be NULL. 0 or a negative errno.
 */
int otlp_encode_request(const struct profile *p,
			const struct otlp_encode_options *opt,
			uint8_t **buf, size_t *len);

#endif /* EMBER_OUTPUT_OTLP_H */
