/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The options of `ember record` and `ember run`, and the keys of ember.conf,
 * in one table (options.c).
 *
 * Why: the two commands had a parser each, and drifted apart (-e was
 * --event in one and --endpoint in the other, off-CPU time was -e offcpu
 * in one and --off-cpu in the other). Each option is now defined once:
 * its long name (whose '-' become '_' in its config key), short letter,
 * argument, help, the commands that take it, how its value is checked and
 * the field it sets. Both getopt_long tables, both --help texts and the
 * config file's keys are made from that table, so a flag means the same in
 * both commands, a config key and its flag set the same field, and an
 * option one command does not take is refused with a message saying which
 * command does.
 */
#ifndef EMBER_OPTIONS_H
#define EMBER_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "output/output_otlp.h"

enum out_format {
	OUT_AUTO,		/* from -o's extension */
	OUT_FOLDED,
	OUT_SVG,
	OUT_PPROF,
	OUT_OTLP,
};

/* ember run's defaults (config.c reads the file; the table names them) */
#define EMBER_CONF_DEFAULT "/etc/ember/ember.conf"
#define EMBER_RUN_DEFAULT_HZ 19
#define EMBER_RUN_DEFAULT_INTERVAL 10
#define OTLP_PROFILES_PATH "/v1development/profiles"

#define CGROUP_ROOT "/sys/fs/cgroup"
/* What --cgroup takes, after "expected " (%s: the cgroup v2 root). */
#define CGROUP_EXPECTED "a cgroup v2 directory: a path relative to %s " \
	"(as /proc/PID/cgroup shows it, e.g. system.slice/nginx.service) " \
	"or an absolute path under it"

/* The commands an option belongs to (a bit mask). */
enum opt_cmd {
	CMD_RECORD = 1,
	CMD_RUN = 2,
};

/* Every setting of either command; each command uses its part. */
struct ember_opts {
	/* sampling: record and run */
	uint32_t freq_hz;
	uint32_t events;		/* EMBER_EV_ONCPU/OFFCPU/FAULTS/ALLOC/LOCK */
	uint32_t *pids;			/* -p */
	size_t nr_pids;
	const char *backend;		/* "auto", "kmod", "bpf" (static) */
	uint32_t fault_period;		/* 0: the default */
	uint64_t offcpu_min_ns;		/* 0: every interval */
	uint64_t lock_min_ns;		/* -e lock: shorter waits not recorded */
	bool lock_waker;		/* -e lock: the wakers' stacks too */
	size_t max_stacks;		/* 0: the default */
	bool include_idle;
	bool no_cfi;			/* frame pointers only */
	char *debug_dirs;		/* ':'-joined; NULL = default */
	bool debuginfod;
	/* the persistent unwind-table cache: NULL = the default directory,
	 * "" or "none" = none */
	char *table_cache;
	uint32_t table_cache_max_mb;	/* 0: the default */
	/* bytes of user stack copied for cut/unbound samples, 0 = none */
	uint32_t stack_copy_bytes;
	uint32_t kernel_mem_mb;		/* 0: from RAM (source/kmem_budget.h) */
	/* ember record */
	char *cgroup_path;
	bool all;			/* -a (the default without -p/--cgroup/cmd) */
	uint64_t duration_ms;		/* 0 = until Ctrl-C */
	char *output;			/* "-" = stdout */
	enum out_format format;
	uint64_t alloc_rate;		/* 0: the default */
	char *alloc_lib;		/* NULL: found */
	bool alloc_no_inuse;		/* -p/--cgroup: entry points only */
	bool offcpu_state;
	int group_by;			/* enum prof_group_by */
	bool verbose_cfi;
	bool check_unwind;		/* test mode */
	char **command;			/* after --, in argv; NULL if none */
	bool help;
	/* ember run */
	char *config_path;		/* the file read, NULL if none */
	char *endpoint;			/* full URL */
	char **headers;			/* "Name: value", NULL-terminated */
	size_t nr_headers;
	unsigned int timeout_ms;
	bool gzip;
	char *ca_file, *client_cert, *client_key;
	char *service_name;		/* NULL: each process's executable name */
	struct otlp_attr *attrs;	/* OTEL_RESOURCE_ATTRIBUTES & co */
	size_t nr_attrs;
	unsigned int interval_s;
	char *metrics_addr;		/* NULL = no metrics endpoint */
	size_t queue_max;		/* waiting profiles */
	size_t queue_max_bytes;		/* all the exporter holds */
	unsigned int shutdown_timeout_s;
	unsigned int retry_initial_ms, retry_max_ms, retry_max_elapsed_ms;
	unsigned int retry_after_max_ms;	/* 0: the exporter's default */
	char *local_dir;		/* NULL: no local profiles */
	uint64_t local_max_bytes;	/* what local_dir may hold */
	bool quiet;
};

/* How an option's value is read. */
enum opt_field {
	F_FLAG,		/* bool: a flag without a value; true|false as a key */
	F_UINT,		/* unsigned integer of the field's size, min..max */
	F_STR,		/* owned string */
	F_CUSTOM,	/* its parse function does it all */
};

/* Option flags. */
#define OPTF_KEY_ONLY	0x1	/* a config key, no flag */
#define OPTF_NO_KEY	0x2	/* a flag, no config key */
#define OPTF_EARLY	0x4	/* read before the config file (--config, --help) */

struct opt_ctx;

struct ember_option {
	const char *name;	/* long option; config key with '-' -> '_' */
	char short_name;	/* 0: none */
	const char *arg;	/* the value's name in --help; NULL: no value */
	unsigned int cmds;	/* enum opt_cmd mask */
	unsigned int flags;	/* OPTF_* */
	enum opt_field type;
	size_t off, size;	/* the field in struct ember_opts */
	uint64_t min, max;	/* F_UINT */
	int (*parse)(struct ember_opts *o, const struct ember_option *d,
		     const char *v, struct opt_ctx *cx);
	const char *expected;	/* what a bad value is told it should be */
	const char *help;
	const char *deprecated;	/* the spelling to use instead */
};

extern const struct ember_option ember_options[];
extern const size_t ember_nr_options;

/* Where a value comes from, for messages. */
struct opt_ctx {
	unsigned int cmd;	/* CMD_RECORD or CMD_RUN */
	const char *spelling;	/* "-F", "--freq", "freq" */
	const char *where;	/* "FILE:LINE" for a config key, else NULL */
	FILE *warn;		/* deprecation notices (stderr if NULL) */
	char *err;
	size_t err_len;
};

/* Each command's defaults. */
int opts_init(struct ember_opts *o, unsigned int cmd);
void opts_free(struct ember_opts *o);

/* Which options a pass over argv reads (ember run reads --config first). */
enum {
	OPTS_PASS_ALL,
	OPTS_PASS_EARLY,	/* only OPTF_EARLY ones, errors ignored */
	OPTS_PASS_LATE,		/* all but those */
};

/*
 * Parse argv (argv[0] = the command name) into o; a COMMAND after "--"
 * (ember record) goes to o->command. 0, or -EINVAL/-ENOMEM with a
 * message in err. Deprecated spellings are said on warn (NULL: stderr).
 */
int opts_parse_argv(struct ember_opts *o, unsigned int cmd, int argc,
		    char **argv, unsigned int pass, FILE *warn, char *err,
		    size_t err_len);
/* One config key (run). where: "FILE:LINE" or the variable's name. */
int opts_set_key(struct ember_opts *o, const char *key, const char *value,
		 const char *where, FILE *warn, char *err, size_t err_len);
void opts_usage(unsigned int cmd, FILE *f);
/* s without its leading and trailing white space (cut in place). */
char *opts_trim(char *s);
/*
 * An OTLP endpoint from `what` (named in messages): used as is, a base
 * URL getting OTLP_PROFILES_PATH unless it has a path, or always.
 */
enum { ENDPOINT_AS_IS, ENDPOINT_BASE_OR_URL, ENDPOINT_BASE };
int opts_set_endpoint(struct ember_opts *o, const char *what, const char *url,
		      int how, char *err, size_t err_len);
/* The option a config key names, or NULL. */
const struct ember_option *opts_find_key(const char *key);

#endif /* EMBER_OPTIONS_H */
