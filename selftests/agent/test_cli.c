// SPDX-License-Identifier: GPL-2.0-only
/* ember record's command line: defaults, every option, and the errors. */
#include <string.h>
#include "cli/record_opts.h"
#include "source/source.h"
#include "test_util.h"

static char err[1024];

static int parse(struct ember_opts *o, char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	err[0] = '\0';
	return record_parse_args(argc, argv, o, err, sizeof(err));
}

#define ARGV(...) ((char *[]){ "record", __VA_ARGS__, NULL })

int main(void)
{
	struct ember_opts o;
	int r;

	r = parse(&o, (char *[]){ "record", NULL });
	T_CHECK("cli_defaults", !r && o.all && o.freq_hz == 99 &&
		o.events == EMBER_EV_ONCPU && !o.duration_ms && !o.command &&
		!strcmp(o.backend, "auto") && !strcmp(o.output, "ember.svg") &&
		o.format == OUT_SVG, "r=%d %s", r, err);
	record_opts_free(&o);

	r = parse(&o, ARGV("-F", "997", "-e", "cpu,offcpu", "-d", "2.5", "-o",
			   "x.folded", "--backend", "bpf"));
	T_CHECK("cli_options", !r && o.freq_hz == 997 &&
		o.events == (EMBER_EV_ONCPU | EMBER_EV_OFFCPU) &&
		o.duration_ms == 2500 && o.format == OUT_FOLDED &&
		!strcmp(o.backend, "bpf"), "r=%d %s", r, err);
	record_opts_free(&o);

	r = parse(&o, ARGV("-e", "offcpu", "--offcpu-min", "250"));
	T_CHECK("cli_offcpu_min", !r && o.offcpu_min_ns == 250000, "r=%d %s", r, err);
	record_opts_free(&o);

	r = parse(&o, ARGV("-p", "1,22,333"));
	T_CHECK("cli_pids", !r && o.nr_pids == 3 && o.pids[2] == 333 && !o.all,
		"r=%d %s", r, err);
	record_opts_free(&o);

	r = parse(&o, ARGV("-o", "out.svg", "--", "prog", "-x", "--flag"));
	T_CHECK("cli_command", !r && o.command && !strcmp(o.command[0], "prog") &&
		!strcmp(o.command[1], "-x") && !strcmp(o.command[2], "--flag") &&
		!o.command[3] && !o.all, "r=%d %s", r, err);
	record_opts_free(&o);

	r = parse(&o, ARGV("--cgroup", "/system.slice/..x/a..b/.../"));
	T_CHECK("cli_cgroup_dots_in_names", !r && o.cgroup_path && !o.all,
		"r=%d %s", r, err);
	record_opts_free(&o);

	T_CHECK("cli_format_ext_pprof", format_from_name("a.pb.gz") == OUT_PPROF &&
		format_from_name("a.pprof") == OUT_PPROF &&
		format_from_name("a.otlp") == OUT_OTLP &&
		format_from_name("a.txt") == OUT_FOLDED &&
		format_from_name("a.SVG") == OUT_SVG &&
		format_from_name("a.data") == OUT_AUTO, "extension mapping wrong");

	r = parse(&o, ARGV("-o", "-"));
	T_CHECK("cli_stdout_folded", !r && o.format == OUT_FOLDED, "r=%d", r);
	record_opts_free(&o);
	r = parse(&o, ARGV("-o", "x.bin", "--format", "pprof"));
	T_CHECK("cli_format_overrides", !r && o.format == OUT_PPROF, "r=%d %s", r, err);
	record_opts_free(&o);

	/* errors: each says what is wrong */
	const struct { const char *name; char **argv; const char *msg; } bad[] = {
		{ "cli_err_freq_zero", ARGV("-F", "0"), "-F" },
		{ "cli_err_freq_high", ARGV("-F", "10001"), "-F" },
		{ "cli_err_freq_junk", ARGV("-F", "9x"), "-F" },
		{ "cli_err_event", ARGV("-e", "cycles"), "-e" },
		{ "cli_err_event_empty", ARGV("-e", ","), "-e" },
		{ "cli_err_pid", ARGV("-p", "1,,2"), "-p" },
		{ "cli_err_pid_neg", ARGV("-p", "-5"), "-p" },
		{ "cli_err_duration", ARGV("-d", "0"), "-d" },
		{ "cli_err_duration_junk", ARGV("-d", "abc"), "-d" },
		{ "cli_err_format", ARGV("--format", "json"), "--format" },
		{ "cli_err_backend", ARGV("--backend", "perf"), "--backend" },
		{ "cli_err_offcpu_min", ARGV("--offcpu-min", "1ms"), "--offcpu-min" },
		{ "cli_err_unknown_ext", ARGV("-o", "out.data"), "format" },
		{ "cli_err_unknown_opt", ARGV("--bogus"), "unknown option" },
		{ "cli_err_missing_value", ARGV("-F"), "needs a value" },
		{ "cli_err_a_and_p", ARGV("-a", "-p", "1"), "cannot be combined" },
		{ "cli_err_cmd_and_p", ARGV("-p", "1", "--", "true"), "cannot be combined" },
		{ "cli_err_cmd_without_dashes", ARGV("true"), "after --" },
		/* "--" and nothing after it recorded the whole system */
		{ "cli_err_dashdash_without_command", ARGV("--"),
		  "'--' must be followed by a COMMAND" },
		{ "cli_err_dashdash_without_command_opts", ARGV("-o", "x.folded", "--"),
		  "'--' must be followed by a COMMAND" },
		{ "cli_err_dashdash_empty_command", ARGV("--", ""),
		  "'--' must be followed by a COMMAND" },
		/* --cgroup stays under the cgroup v2 root */
		{ "cli_err_cgroup_dotdot", ARGV("--cgroup", "../../../../etc"),
		  "'..' is not allowed; expected a cgroup v2 directory: a path relative to /sys/fs/cgroup" },
		{ "cli_err_cgroup_dotdot_inside", ARGV("--cgroup", "/sys/fs/cgroup/a/../../../etc/"),
		  "'..' is not allowed" },
		{ "cli_err_cgroup_dotdot_last", ARGV("--cgroup", "system.slice/.."),
		  "'..' is not allowed" },
		{ "cli_err_cgroup_empty", ARGV("--cgroup", ""), "--cgroup wants a cgroup v2 directory" },
		/* -o's value "--" does not end the options */
		{ "cli_err_dashdash_as_value", ARGV("-o", "--", "prog"),
		  "unexpected argument 'prog'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = parse(&o, bad[i].argv);
		T_CHECK(bad[i].name, r == -1 && strstr(err, bad[i].msg),
			"r=%d err='%s'", r, err);
		record_opts_free(&o);
	}
	T_EXIT();
}
