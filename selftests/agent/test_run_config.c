// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember run's configuration (agent/config.c): settings from flags, from a
 * config file and from OTEL_* variables are validated alike, when the
 * configuration is read, with a message naming what is expected.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config.h"
#include "otlp_export.h"
#include "test_util.h"

static char err[512];
static char conf[] = "/tmp/ember-test-run-config.XXXXXX";

/* Load from argv (after "run"); the config file holds `file` when set. */
static int load(struct run_config *c, const char *file, char **args)
{
	char *argv[16] = { "run", "--config", conf };
	int argc = 3;
	FILE *f = fopen(conf, "w");

	if (!f)
		return -99;
	if (file)
		fputs(file, f);
	fclose(f);
	while (args && *args && argc < 15)
		argv[argc++] = *args++;
	argv[argc] = NULL;
	err[0] = '\0';
	return run_config_load(c, argc, argv, err, sizeof(err));
}

#define ARGS(...) ((char *[]){ __VA_ARGS__, NULL })

/* Refused with exit-2 semantics (negative) and a message holding msg. */
static void refused(const char *name, const char *file, char **args,
		    const char *msg)
{
	struct run_config c;
	int r = load(&c, file, args);

	T_CHECK(name, r < 0 && strstr(err, msg), "r=%d err='%s' (want '%s')",
		r, err, msg);
	run_config_free(&c);
}

int main(void)
{
	struct run_config c;
	int fd, r;

	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	unsetenv("EMBER_CONFIG");
	fd = mkstemp(conf);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);

	/* Queue bounds: defaults, a flag and a file key with a suffix. */
	r = load(&c, NULL, NULL);
	T_CHECK("run_config_queue_defaults", !r && c.queue_max == OTLP_QUEUE_MAX &&
		c.queue_max_bytes == OTLP_QUEUE_MAX_BYTES && OTLP_QUEUE_MAX == 64 &&
		OTLP_QUEUE_MAX_BYTES == 64 << 20, "r=%d %s queue %zu/%zu", r, err,
		c.queue_max, c.queue_max_bytes);
	run_config_free(&c);
	r = load(&c, "queue_max_bytes = 8M\n", NULL);
	T_CHECK("run_config_queue_max_bytes_file", !r && c.queue_max_bytes == 8 << 20,
		"r=%d %s %zu", r, err, c.queue_max_bytes);
	run_config_free(&c);
	r = load(&c, "queue_max_bytes = 8M\n", ARGS("--queue-max-bytes", "131072"));
	T_CHECK("run_config_queue_max_bytes_flag", !r && c.queue_max_bytes == 131072,
		"r=%d %s %zu", r, err, c.queue_max_bytes);
	run_config_free(&c);
	refused("run_config_queue_max_bytes_tiny", "queue_max_bytes = 64\n", NULL,
		"expected bytes from 64K");
	refused("run_config_queue_max_bytes_junk", NULL,
		ARGS("--queue-max-bytes", "12Q"), "queue_max_bytes");

	/* The longest Retry-After honoured. */
	r = load(&c, "retry_after_max_ms = 1000\n", NULL);
	T_CHECK("run_config_retry_after_max_file", !r && c.retry_after_max_ms == 1000,
		"r=%d %s %u", r, err, c.retry_after_max_ms);
	run_config_free(&c);
	r = load(&c, NULL, ARGS("--retry-after-max-ms", "2500"));
	T_CHECK("run_config_retry_after_max_flag", !r && c.retry_after_max_ms == 2500,
		"r=%d %s %u", r, err, c.retry_after_max_ms);
	run_config_free(&c);
	refused("run_config_retry_after_max_zero", NULL,
		ARGS("--retry-after-max-ms", "0"), "retry_after_max_ms");

	unlink(conf);
	T_EXIT();
}
