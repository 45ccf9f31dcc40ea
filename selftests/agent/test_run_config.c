// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember run's configuration (agent/cli/config.c): settings from flags, from a
 * config file and from OTEL_* variables are validated alike, when the
 * configuration is read, with a message naming what is expected.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/config.h"
#include "uapi/ember.h"
#include "export/otlp_export.h"
#include "test_util.h"

static char err[512];
static char conf[] = "/tmp/ember-test-run-config.XXXXXX";

/* Load from argv (after "run"); the config file holds `file` when set. */
static int load(struct ember_opts *c, const char *file, char **args)
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
	struct ember_opts c;
	int r = load(&c, file, args);

	T_CHECK(name, r < 0 && strstr(err, msg), "r=%d err='%s' (want '%s')",
		r, err, msg);
	run_config_free(&c);
}

int main(void)
{
	struct ember_opts c;
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
		"queue_max_bytes wants bytes from 64K to 1024G (suffix K, M or G), not '64'");
	refused("run_config_queue_max_bytes_junk", NULL,
		ARGS("--queue-max-bytes", "12Q"), "queue_max_bytes");

	/* Page faults: off by default, from the file or flags, period bounded. */
	r = load(&c, NULL, NULL);
	T_CHECK("run_config_faults_default_off", !r && !!!(c.events & EMBER_EV_FAULTS) && c.fault_period == EMBER_DEFAULT_FAULT_PERIOD,
		"r=%d %s faults=%d period=%u", r, err, !!(c.events & EMBER_EV_FAULTS), c.fault_period);
	run_config_free(&c);
	r = load(&c, "faults = true\nfault_period = 16\n", NULL);
	T_CHECK("run_config_faults_file", !r && !!(c.events & EMBER_EV_FAULTS) && c.fault_period == 16,
		"r=%d %s faults=%d period=%u", r, err, !!(c.events & EMBER_EV_FAULTS), c.fault_period);
	run_config_free(&c);
	r = load(&c, NULL, ARGS("--faults", "--fault-period", "1000"));
	T_CHECK("run_config_faults_flags", !r && !!(c.events & EMBER_EV_FAULTS) && c.fault_period == 1000,
		"r=%d %s faults=%d period=%u", r, err, !!(c.events & EMBER_EV_FAULTS), c.fault_period);
	run_config_free(&c);
	/* the same with the spellings ember record uses */
	r = load(&c, "event = cpu,faults\n", NULL);
	T_CHECK("run_config_faults_file_event", !r &&
		c.events == (EMBER_EV_ONCPU | EMBER_EV_FAULTS), "r=%d %s events=%#x",
		r, err, c.events);
	run_config_free(&c);
	r = load(&c, NULL, ARGS("-e", "cpu,faults", "--fault-period", "1000"));
	T_CHECK("run_config_faults_flags_event", !r &&
		c.events == (EMBER_EV_ONCPU | EMBER_EV_FAULTS) && c.fault_period == 1000,
		"r=%d %s events=%#x period=%u", r, err, c.events, c.fault_period);
	run_config_free(&c);
	refused("run_config_fault_period_zero", NULL, ARGS("--fault-period", "0"),
		"fault_period");
	refused("run_config_fault_period_high", "fault_period = 1000001\n", NULL,
		"fault_period");

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

	/*
	 * --metrics-addr / metrics_addr: checked when read (getaddrinfo with
	 * AI_NUMERICSERV took ":99999" as a port), port 0 (any) kept.
	 */
	r = load(&c, NULL, ARGS("--metrics-addr", ":0"));
	T_CHECK("run_config_metrics_addr_port0", !r && !strcmp(c.metrics_addr, ":0"),
		"r=%d %s", r, err);
	run_config_free(&c);
	r = load(&c, "metrics_addr = [::1]:9464\n", NULL);
	T_CHECK("run_config_metrics_addr_v6", !r && !strcmp(c.metrics_addr, "[::1]:9464"),
		"r=%d %s", r, err);
	run_config_free(&c);
	r = load(&c, NULL, ARGS("--metrics-addr", "65535"));
	T_CHECK("run_config_metrics_addr_port_only", !r, "r=%d %s", r, err);
	run_config_free(&c);
	r = load(&c, "metrics_addr =\n", NULL);
	T_CHECK("run_config_metrics_addr_empty_is_off", !r && !c.metrics_addr,
		"r=%d %s", r, err);
	run_config_free(&c);
	refused("run_config_metrics_addr_port_high", NULL,
		ARGS("--metrics-addr", ":99999"), "port is above 65535");
	refused("run_config_metrics_addr_port_high_file", "metrics_addr = 127.0.0.1:65536\n",
		NULL, ":1: invalid metrics_addr '127.0.0.1:65536': the port is above 65535");
	refused("run_config_metrics_addr_v6_unclosed", NULL,
		ARGS("--metrics-addr", "[::1:9464"), "no ']' closes");
	refused("run_config_metrics_addr_v6_empty", NULL,
		ARGS("--metrics-addr", "[]:9464"), "empty IPv6 address");
	refused("run_config_metrics_addr_v6_bare", NULL,
		ARGS("--metrics-addr", "::1:9464"), "needs brackets");
	refused("run_config_metrics_addr_no_port", NULL,
		ARGS("--metrics-addr", "localhost:"), "no port");
	refused("run_config_metrics_addr_port_junk", "metrics_addr = :94x4\n", NULL,
		"not a number");

	/*
	 * Endpoints from flags, the file and OTEL_* variables: http or https,
	 * a host, IPv6 in closed brackets, a port from 1 to 65535, no spaces
	 * or control characters.
	 */
	r = load(&c, NULL, ARGS("-e", "http://[::1]:4318"));
	T_CHECK("run_config_endpoint_v6", !r && !strcmp(c.endpoint,
		"http://[::1]:4318/v1development/profiles"), "r=%d %s %s", r, err,
		c.endpoint);
	run_config_free(&c);
	r = load(&c, NULL, ARGS("--endpoint", "http://[::1]:4318"));
	T_CHECK("run_config_endpoint_v6_long", !r && !strcmp(c.endpoint,
		"http://[::1]:4318/v1development/profiles"), "r=%d %s %s", r, err,
		c.endpoint);
	run_config_free(&c);
	r = load(&c, "profiles_endpoint = https://user:pw@collector.example:4318/v1development/profiles\n",
		 NULL);
	T_CHECK("run_config_profiles_endpoint_file", !r && !strcmp(c.endpoint,
		"https://user:pw@collector.example:4318/v1development/profiles"),
		"r=%d %s", r, err);
	run_config_free(&c);
	r = load(&c, NULL, ARGS("--endpoint", "HTTPS://Collector.Example/custom/path"));
	T_CHECK("run_config_endpoint_path_kept", !r && !strcmp(c.endpoint,
		"HTTPS://Collector.Example/custom/path"), "r=%d %s", r, err);
	run_config_free(&c);
	refused("run_config_endpoint_v6_unclosed", NULL, ARGS("-e", "http://[::1"),
		"invalid endpoint 'http://[::1': no ']' closes the IPv6 address");
	refused("run_config_endpoint_v6_unclosed_long", NULL, ARGS("--endpoint", "http://[::1"),
		"invalid endpoint 'http://[::1': no ']' closes the IPv6 address");
	refused("run_config_endpoint_v6_unclosed_port", NULL,
		ARGS("-e", "http://[::1:4318/x"), "no ']' closes");
	refused("run_config_endpoint_scheme", NULL, ARGS("-e", "ftp://x"),
		"scheme 'ftp' is not http or https");
	refused("run_config_endpoint_no_scheme", NULL, ARGS("-e", "localhost:4318"),
		"expected http://HOST");
	refused("run_config_endpoint_no_host", NULL, ARGS("-e", "http://:4318"),
		"no host");
	refused("run_config_endpoint_port_high", NULL, ARGS("-e", "http://h:65536"),
		"not a number from 1 to 65535");
	refused("run_config_endpoint_port_zero", NULL, ARGS("-e", "http://h:0/"),
		"port 0");
	refused("run_config_endpoint_port_junk", NULL, ARGS("-e", "http://h:43l8"),
		"not a number");
	refused("run_config_endpoint_space", NULL, ARGS("-e", "http://h:4318 /x"),
		"space or control character");
	refused("run_config_endpoint_ctrl", NULL, ARGS("-e", "http://h\r\nX-Evil: 1"),
		"space or control character");
	refused("run_config_endpoint_v6_bare", NULL, ARGS("-e", "http://::1:4318"),
		"needs brackets");
	refused("run_config_endpoint_file", "endpoint = http://[::1\n", NULL,
		":1: invalid endpoint 'http://[::1'");
	refused("run_config_profiles_endpoint_file_bad",
		"profiles_endpoint = https://h:99999/v1development/profiles\n", NULL,
		":1: invalid profiles_endpoint");
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://[::1", 1);
	refused("run_config_env_endpoint", NULL, NULL,
		"invalid OTEL_EXPORTER_OTLP_ENDPOINT 'http://[::1'");
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	setenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "gopher://h/", 1);
	refused("run_config_env_profiles_endpoint", NULL, NULL,
		"invalid OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT 'gopher://h/': scheme");
	unsetenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318", 1);
	r = load(&c, NULL, NULL);
	T_CHECK("run_config_env_endpoint_ok", !r && !strcmp(c.endpoint,
		"http://collector:4318/v1development/profiles"), "r=%d %s", r, err);
	run_config_free(&c);
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");

	unlink(conf);
	T_EXIT();
}
