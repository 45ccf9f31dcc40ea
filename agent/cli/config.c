// SPDX-License-Identifier: GPL-2.0-only
/*
 * `ember run` configuration from file, OTEL_* environment and flags. What
 * each key and flag means and how it is checked is options.c's table.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/config.h"
#include "lib/errmsg.h"
#include "cli/options.h"

static int set_path(char **dst, const char *v)
{
	char *s = strdup(v);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

static int load_file(struct ember_opts *c, const char *path, bool must_exist,
		     char *err, size_t err_len)
{
	char line[4096], where[4200];
	unsigned int lineno = 0;
	FILE *f = fopen(path, "re");
	int r;

	if (!f) {
		if (!must_exist && errno == ENOENT)
			return 0;
		return errmsg_inval(err, err_len, "cannot read %s: %s", path, strerror(errno));
	}
	if (path != c->config_path && set_path(&c->config_path, path)) {
		fclose(f);
		return errmsg_inval(err, err_len, "out of memory");
	}
	while (fgets(line, sizeof(line), f)) {
		char *s = opts_trim(line), *eq;

		lineno++;
		snprintf(where, sizeof(where), "%s:%u", path, lineno);
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			fclose(f);
			return errmsg_inval(err, err_len, "%s: expected 'key = value'", where);
		}
		*eq = '\0';
		r = opts_set_key(c, opts_trim(s), opts_trim(eq + 1), where, NULL, err, err_len);
		if (r) {
			fclose(f);
			return r;
		}
	}
	fclose(f);
	return 0;
}

/* Signal-specific variable first, then the generic one; its name in *name. */
static const char *env2(const char *specific, const char *generic,
			const char **name)
{
	const char *v = getenv(specific);

	*name = specific;
	if (v && *v)
		return v;
	*name = generic;
	v = getenv(generic);
	return v && *v ? v : NULL;
}

/*
 * The standard OTEL_* variables, each set as the config key it stands
 * for (messages name the variable).
 */
static int load_env(struct ember_opts *c, char *err, size_t err_len)
{
	static const struct { const char *specific, *generic, *key; } vars[] = {
		{ "OTEL_EXPORTER_OTLP_PROFILES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS", "headers" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", "timeout_ms" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION", "compression" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE", "OTEL_EXPORTER_OTLP_CERTIFICATE", "ca_file" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "client_cert" },
		{ "OTEL_EXPORTER_OTLP_PROFILES_CLIENT_KEY", "OTEL_EXPORTER_OTLP_CLIENT_KEY", "client_key" },
		{ "OTEL_RESOURCE_ATTRIBUTES", "OTEL_RESOURCE_ATTRIBUTES", "resource_attributes" },
		/* OTEL_SERVICE_NAME wins over service.name in the attributes. */
		{ "OTEL_SERVICE_NAME", "OTEL_SERVICE_NAME", "service_name" },
	};
	const char *v, *name;
	int r;

	if ((v = getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")) && *v) {
		r = opts_set_endpoint(c, "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", v,
				      ENDPOINT_AS_IS, err, err_len);
		if (r)
			return r;
	} else if ((v = getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) && *v) {
		/* The generic endpoint is a base: the signal path is appended. */
		r = opts_set_endpoint(c, "OTEL_EXPORTER_OTLP_ENDPOINT", v,
				      ENDPOINT_BASE, err, err_len);
		if (r)
			return r;
	}
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		if (!(v = env2(vars[i].specific, vars[i].generic, &name)))
			continue;
		r = opts_set_key(c, vars[i].key, v, name, NULL, err, err_len);
		if (r)
			return r;
	}
	return 0;
}

void run_config_usage(FILE *f)
{
	opts_usage(CMD_RUN, f);
}

void run_config_free(struct ember_opts *c)
{
	opts_free(c);
}

int run_config_load(struct ember_opts *c, int argc, char **argv,
		    char *err, size_t err_len)
{
	const char *path = getenv("EMBER_CONFIG");
	bool explicit = path && *path;
	int ret;

	if (opts_init(c, CMD_RUN))
		return errmsg_inval(err, err_len, "out of memory");
	/* Pass 1: only --config and --help, so the file loads first. */
	ret = opts_parse_argv(c, CMD_RUN, argc, argv, OPTS_PASS_EARLY, NULL,
			      err, err_len);
	if (ret)
		return ret;
	if (c->help) {
		run_config_usage(stdout);
		return 1;
	}
	if (c->config_path) {
		path = c->config_path;
		explicit = true;
	}
	if (!path || !*path)
		path = EMBER_CONF_DEFAULT;
	ret = load_file(c, path, explicit, err, err_len);
	if (!ret)
		ret = load_env(c, err, err_len);
	if (ret)
		return ret;
	/* Pass 2: flags override everything. */
	return opts_parse_argv(c, CMD_RUN, argc, argv, OPTS_PASS_LATE, NULL,
			       err, err_len);
}
