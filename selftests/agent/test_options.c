// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shared option table (agent/cli/options.c): every option is in the --help
 * of each command that takes it and of no other, a config key sets what
 * its flag sets, deprecated spellings still work and say so, an option of
 * the other command is refused saying which command takes it.
 */
#include <stdlib.h>
#include <string.h>
#include "cli/options.h"
#include "source/source.h"
#include "test_util.h"

static char err[1024];
static char *warned;
static size_t warned_len;

static const char *cmd_str(unsigned int cmd)
{
	return cmd == CMD_RUN ? "run" : "record";
}

/* Parse argv (argv[0] = command) from cmd's defaults; notices in warned. */
static int parse(struct ember_opts *o, unsigned int cmd, char **argv)
{
	FILE *w;
	int argc = 0, r;

	while (argv[argc])
		argc++;
	opts_init(o, cmd);
	free(warned);
	warned = NULL;
	w = open_memstream(&warned, &warned_len);
	err[0] = '\0';
	r = opts_parse_argv(o, cmd, argc, argv, OPTS_PASS_ALL, w, err, sizeof(err));
	fclose(w);
	return r;
}

static int set_key(struct ember_opts *o, const char *key, const char *v)
{
	FILE *w;
	int r;

	opts_init(o, CMD_RUN);
	free(warned);
	warned = NULL;
	w = open_memstream(&warned, &warned_len);
	err[0] = '\0';
	r = opts_set_key(o, key, v, "test.conf:1", w, err, sizeof(err));
	fclose(w);
	return r;
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Every setting, compared field by field. */
static bool same(const struct ember_opts *a, const struct ember_opts *b)
{
	if (a->nr_pids != b->nr_pids || a->nr_headers != b->nr_headers ||
	    a->nr_attrs != b->nr_attrs)
		return false;
	for (size_t i = 0; i < a->nr_pids; i++)
		if (a->pids[i] != b->pids[i])
			return false;
	for (size_t i = 0; i < a->nr_headers; i++)
		if (strcmp(a->headers[i], b->headers[i]))
			return false;
	for (size_t i = 0; i < a->nr_attrs; i++)
		if (strcmp(a->attrs[i].key, b->attrs[i].key) ||
		    strcmp(a->attrs[i].value, b->attrs[i].value))
			return false;
	return a->freq_hz == b->freq_hz && a->events == b->events &&
	       str_eq(a->backend, b->backend) && a->fault_period == b->fault_period &&
	       a->offcpu_min_ns == b->offcpu_min_ns && a->max_stacks == b->max_stacks &&
	       a->lock_min_ns == b->lock_min_ns && a->lock_waker == b->lock_waker &&
	       a->include_idle == b->include_idle && a->no_cfi == b->no_cfi &&
	       str_eq(a->debug_dirs, b->debug_dirs) && a->debuginfod == b->debuginfod &&
	       str_eq(a->table_cache, b->table_cache) &&
	       a->table_cache_max_mb == b->table_cache_max_mb &&
	       a->stack_copy_bytes == b->stack_copy_bytes &&
	       a->kernel_mem_mb == b->kernel_mem_mb &&
	       str_eq(a->local_dir, b->local_dir) &&
	       a->local_max_bytes == b->local_max_bytes &&
	       str_eq(a->cgroup_path, b->cgroup_path) && a->all == b->all &&
	       a->duration_ms == b->duration_ms && str_eq(a->output, b->output) &&
	       a->format == b->format && a->alloc_rate == b->alloc_rate &&
	       str_eq(a->alloc_lib, b->alloc_lib) && a->offcpu_state == b->offcpu_state &&
	       a->alloc_no_inuse == b->alloc_no_inuse &&
	       a->group_by == b->group_by && a->verbose_cfi == b->verbose_cfi &&
	       a->check_unwind == b->check_unwind &&
	       str_eq(a->endpoint, b->endpoint) && a->timeout_ms == b->timeout_ms &&
	       a->gzip == b->gzip && str_eq(a->ca_file, b->ca_file) &&
	       str_eq(a->client_cert, b->client_cert) &&
	       str_eq(a->client_key, b->client_key) &&
	       str_eq(a->service_name, b->service_name) &&
	       a->interval_s == b->interval_s && str_eq(a->metrics_addr, b->metrics_addr) &&
	       a->queue_max == b->queue_max && a->queue_max_bytes == b->queue_max_bytes &&
	       a->shutdown_timeout_s == b->shutdown_timeout_s &&
	       a->retry_initial_ms == b->retry_initial_ms &&
	       a->retry_max_ms == b->retry_max_ms &&
	       a->retry_max_elapsed_ms == b->retry_max_elapsed_ms &&
	       a->retry_after_max_ms == b->retry_after_max_ms && a->quiet == b->quiet;
}

/* A value other than the default for each option ember run reads. */
static const struct { const char *name, *value; } examples[] = {
	{ "freq", "7" }, { "event", "cpu,offcpu" }, { "pid", "1,2" },
	{ "backend", "bpf" }, { "fault-period", "16" }, { "offcpu-min", "250" },
	{ "lock-min", "50" }, { "waker", NULL },
	{ "max-stacks", "1000" }, { "idle", NULL }, { "no-cfi", NULL },
	{ "debug-dir", "/srv/debug" }, { "debuginfod", NULL },
	{ "table-cache", "/srv/tables" }, { "table-cache-max", "64" },
	{ "stack-copy", "4096" },
	{ "kernel-mem", "8" }, { "local-dir", "/data/ember" }, { "local-max", "2M" },
	{ "endpoint", "http://collector:4318" },
	{ "profiles-endpoint", "https://c:4318/x/profiles" },
	{ "header", "Authorization=Bearer t" }, { "headers", "a=1,b=2" },
	{ "timeout-ms", "500" }, { "compression", "none" },
	{ "ca-file", "/etc/ca.pem" }, { "client-cert", "/etc/c.pem" },
	{ "client-key", "/etc/k.pem" }, { "service-name", "checkout" },
	{ "resource-attributes", "team=perf,env=ci" }, { "interval", "3" },
	{ "metrics-addr", "127.0.0.1:9464" }, { "queue-size", "8" },
	{ "queue-max-bytes", "1M" }, { "shutdown-timeout", "9" },
	{ "retry-initial-ms", "5" }, { "retry-max-ms", "50" },
	{ "retry-max-elapsed-ms", "500" }, { "retry-after-max-ms", "700" },
	{ "quiet", NULL },
};

static bool usage_has(const char *usage, const struct ember_option *d)
{
	char line[96];

	if (d->short_name)
		snprintf(line, sizeof(line), "\n  -%c, --%s%s", d->short_name,
			 d->name, d->arg ? " " : "");
	else
		snprintf(line, sizeof(line), "\n      --%s%s", d->name,
			 d->arg ? " " : "");
	if (d->arg)
		strncat(line, d->arg, sizeof(line) - strlen(line) - 1);
	/* the whole option: --alloc is not --alloc-rate */
	for (const char *p = strstr(usage, line); p; p = strstr(p + 1, line))
		if (p[strlen(line)] == ' ' || p[strlen(line)] == '\n')
			return true;
	return false;
}

static void check_usage(unsigned int cmd)
{
	char *usage = NULL, name[128];
	size_t len;
	FILE *f = open_memstream(&usage, &len);
	int missing = 0, extra = 0;
	char what[512] = "";

	opts_usage(cmd, f);
	fclose(f);
	for (size_t i = 0; i < ember_nr_options; i++) {
		const struct ember_option *d = &ember_options[i];
		bool has;

		if (d->flags & OPTF_KEY_ONLY)
			continue;
		has = usage_has(usage, d);
		if ((d->cmds & cmd) && !d->deprecated && !has) {
			missing++;
			strncat(what, d->name, sizeof(what) - strlen(what) - 2);
			strcat(what, " ");
		}
		if ((!(d->cmds & cmd) || d->deprecated) && has) {
			extra++;
			strncat(what, d->name, sizeof(what) - strlen(what) - 2);
			strcat(what, " ");
		}
		/* a deprecated spelling is listed with what replaces it */
		if ((d->cmds & cmd) && d->deprecated) {
			snprintf(name, sizeof(name), "%s: use %s", d->name, d->deprecated);
			if (!strstr(usage, name)) {
				missing++;
				strncat(what, d->name, sizeof(what) - strlen(what) - 2);
				strcat(what, " ");
			}
		}
	}
	snprintf(name, sizeof(name), "options_usage_%s", cmd_str(cmd));
	T_CHECK(name, !missing && !extra, "%d missing, %d not its own: %s",
		missing, extra, what);
	/* the sentence that had strayed below --alloc-lib */
	if (cmd == CMD_RECORD) {
		const char *a = strstr(usage, "--offcpu-min USEC");
		const char *b = strstr(usage, "no stack walk");
		const char *c = strstr(usage, "--max-stacks");

		T_CHECK("options_usage_offcpu_min_help_in_place", a && b && c &&
			a < b && b < c, "offcpu-min help out of place");
	}
	free(usage);
}

int main(void)
{
	struct ember_opts a, b, def;
	bool unique = true;
	int r;

	/* names and letters: each once per command */
	for (size_t i = 0; i < ember_nr_options; i++)
		for (size_t j = i + 1; j < ember_nr_options; j++) {
			const struct ember_option *x = &ember_options[i], *y = &ember_options[j];

			if (!strcmp(x->name, y->name) ||
			    (x->short_name && x->short_name == y->short_name &&
			     (x->cmds & y->cmds))) {
				printf("# %s and %s clash\n", x->name, y->name);
				unique = false;
			}
		}
	T_CHECK("options_unique", unique, "names or letters clash");

	check_usage(CMD_RECORD);
	check_usage(CMD_RUN);

	/* a config key sets what its flag sets, for every option run reads */
	opts_init(&def, CMD_RUN);
	for (size_t i = 0; i < ember_nr_options; i++) {
		const struct ember_option *d = &ember_options[i];
		const char *value = NULL;
		char flag[80], key[80], tname[128];
		bool found = false;

		if (!(d->cmds & CMD_RUN) || d->deprecated ||
		    (d->flags & (OPTF_NO_KEY | OPTF_KEY_ONLY)))
			continue;
		for (size_t k = 0; k < sizeof(examples) / sizeof(examples[0]); k++)
			if (!strcmp(examples[k].name, d->name)) {
				value = examples[k].value;
				found = true;
			}
		snprintf(tname, sizeof(tname), "options_key_is_flag_%s", d->name);
		if (!found) {
			T_CHECK(tname, false, "no example value for --%s in test_options.c",
				d->name);
			continue;
		}
		snprintf(flag, sizeof(flag), "--%s", d->name);
		snprintf(key, sizeof(key), "%s", d->name);
		for (char *p = key; *p; p++)
			if (*p == '-')
				*p = '_';
		r = parse(&a, CMD_RUN, value ? (char *[]){ "run", flag, (char *)value, NULL } :
						(char *[]){ "run", flag, NULL });
		if (r)
			printf("# --%s: %s\n", d->name, err);
		r |= set_key(&b, key, value ? value : "true");
		T_CHECK(tname, !r && same(&a, &b) && !same(&a, &def),
			"r=%d %s: flag and key %s differ, or left the default", r, err, key);
		opts_free(&a);
		opts_free(&b);
	}
	opts_free(&def);

	/* the same flag means the same in both commands */
	r = parse(&a, CMD_RECORD, (char *[]){ "record", "-e", "offcpu,faults", "-p", "5",
					      "-b", "kmod", "-F", "33", NULL });
	r |= parse(&b, CMD_RUN, (char *[]){ "run", "-e", "offcpu,faults", "-p", "5",
					    "-b", "kmod", "-F", "33", NULL });
	T_CHECK("options_same_meaning", !r && a.events == b.events &&
		a.events == (EMBER_EV_OFFCPU | EMBER_EV_FAULTS) && a.nr_pids == 1 &&
		b.nr_pids == 1 && !strcmp(a.backend, b.backend) && a.freq_hz == 33 &&
		b.freq_hz == 33, "r=%d %s", r, err);
	opts_free(&a);
	opts_free(&b);

	/* deprecated spellings: still work, and say what to use instead */
	r = parse(&a, CMD_RUN, (char *[]){ "run", "--off-cpu", NULL });
	T_CHECK("options_deprecated_off_cpu", !r &&
		a.events == (EMBER_EV_ONCPU | EMBER_EV_OFFCPU) && warned &&
		strstr(warned, "--off-cpu is deprecated") && strstr(warned, "use -e cpu,offcpu"),
		"r=%d %s events=%#x warned '%s'", r, err, a.events, warned);
	opts_free(&a);
	r = parse(&a, CMD_RUN, (char *[]){ "run", "-e", "http://h:4318", NULL });
	T_CHECK("options_deprecated_e_url", !r && a.events == EMBER_EV_ONCPU &&
		!strcmp(a.endpoint, "http://h:4318/v1development/profiles") && warned &&
		strstr(warned, "-e URL") && strstr(warned, "use --endpoint URL"),
		"r=%d %s endpoint=%s warned '%s'", r, err, a.endpoint, warned);
	opts_free(&a);
	r = parse(&a, CMD_RUN, (char *[]){ "run", "-a", "team=perf", NULL });
	T_CHECK("options_deprecated_a_attr", !r && a.nr_attrs == 1 &&
		!strcmp(a.attrs[0].key, "team") && warned &&
		strstr(warned, "use --resource-attributes"), "r=%d %s warned '%s'",
		r, err, warned);
	opts_free(&a);
	r = set_key(&a, "frequency", "7");
	T_CHECK("options_deprecated_key_frequency", !r && a.freq_hz == 7 && warned &&
		strstr(warned, "test.conf:1: 'frequency' is deprecated") &&
		strstr(warned, "use freq"), "r=%d %s warned '%s'", r, err, warned);
	opts_free(&a);
	r = set_key(&a, "off_cpu", "true");
	T_CHECK("options_deprecated_key_off_cpu", !r &&
		a.events == (EMBER_EV_ONCPU | EMBER_EV_OFFCPU) && warned &&
		strstr(warned, "event = cpu,offcpu"), "r=%d %s warned '%s'", r, err, warned);
	opts_free(&a);
	/* the new spellings say nothing */
	r = parse(&a, CMD_RUN, (char *[]){ "run", "-e", "cpu,offcpu", "--endpoint",
					   "http://h:4318", NULL });
	T_CHECK("options_new_spellings_quiet", !r && (!warned || !*warned) &&
		a.events == (EMBER_EV_ONCPU | EMBER_EV_OFFCPU), "r=%d %s warned '%s'",
		r, err, warned);
	opts_free(&a);

	/* an option of the other command: refused, naming the one that takes it */
	const struct { const char *name; unsigned int cmd; char **argv; const char *msg; } bad[] = {
		{ "options_run_refuses_duration", CMD_RUN, (char *[]){ "run", "-d", "5", NULL },
		  "-d is an option of ember record only, not of ember run" },
		{ "options_run_refuses_output", CMD_RUN, (char *[]){ "run", "--output", "x.svg", NULL },
		  "--output is an option of ember record only" },
		{ "options_run_refuses_all_cpus", CMD_RUN, (char *[]){ "run", "--all-cpus", NULL },
		  "--all-cpus is an option of ember record only" },
		{ "options_record_refuses_endpoint", CMD_RECORD,
		  (char *[]){ "record", "--endpoint", "http://h:1", NULL },
		  "--endpoint is an option of ember run only, not of ember record" },
		{ "options_record_refuses_interval", CMD_RECORD, (char *[]){ "record", "-i", "5", NULL },
		  "-i is an option of ember run only" },
		{ "options_record_refuses_off_cpu", CMD_RECORD, (char *[]){ "record", "--off-cpu", NULL },
		  "--off-cpu is not an option of ember record: use -e cpu,offcpu" },
		{ "options_unknown", CMD_RUN, (char *[]){ "run", "--bogus", NULL },
		  "unknown option '--bogus' (see ember run --help)" },
		{ "options_run_bad_event", CMD_RUN, (char *[]){ "run", "-e", "cycles", NULL },
		  "-e (event) wants cpu, offcpu, faults, alloc, lock or a list like cpu,faults, not 'cycles'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = parse(&a, bad[i].cmd, bad[i].argv);
		T_CHECK(bad[i].name, r < 0 && strstr(err, bad[i].msg), "r=%d err='%s'", r, err);
		opts_free(&a);
	}
	r = set_key(&a, "duration", "5");
	T_CHECK("options_run_refuses_record_key", r < 0 &&
		strstr(err, "test.conf:1: 'duration' is a setting of ember record only"),
		"r=%d err='%s'", r, err);
	opts_free(&a);
	free(warned);
	T_EXIT();
}
