// SPDX-License-Identifier: GPL-2.0-only
/*
 * The exporter of an agent built with EMBER_OTLP=none (agent/agent.mk): an
 * image that keeps no libcurl. `ember run` then stops at once, saying how
 * it was built; ember record still writes .otlp files (-o x.otlp).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export/otlp_export.h"

#define NO_EXPORT "this ember was built without OTLP export (EMBER_OTLP=none): " \
	"rebuild with EMBER_OTLP=curl for ember run"

struct otlp_exporter *otlp_exporter_new(const struct otlp_export_config *cfg,
					char *err, size_t err_len)
{
	(void)cfg;
	snprintf(err, err_len, "%s", NO_EXPORT);
	return NULL;
}

void otlp_exporter_enqueue(struct otlp_exporter *x, uint8_t *buf, size_t len)
{
	(void)x;
	(void)len;
	free(buf);
}

void otlp_exporter_stats(struct otlp_exporter *x, struct otlp_export_stats *st)
{
	(void)x;
	memset(st, 0, sizeof(*st));
}

int otlp_exporter_reconfigure(struct otlp_exporter *x,
			      const struct otlp_export_config *cfg,
			      char *err, size_t err_len)
{
	(void)x;
	(void)cfg;
	snprintf(err, err_len, "%s", NO_EXPORT);
	return -ENOTSUP;
}

void otlp_exporter_shutdown(struct otlp_exporter *x, unsigned int deadline_ms,
			    struct otlp_export_stats *final)
{
	(void)x;
	(void)deadline_ms;
	if (final)
		memset(final, 0, sizeof(*final));
}

/* The URL is checked as text only: nothing will send to it. */
int otlp_endpoint_check(const char *url, char *why, size_t why_len)
{
	(void)url;
	(void)why;
	(void)why_len;
	return 0;
}

int otlp_global_init(void)
{
	return 0;
}
