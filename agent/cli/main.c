// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember: a Linux continuous profiler. main() only dispatches the first
 * argument to a subcommand (commands.h); record and run parse theirs with
 * one shared table (options.c), the others their own.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"

/*
 * glibc's defaults suit short programs, not a daemon that builds a large
 * transient profile every interval. A fixed mmap threshold sends every
 * big block (decompressed debug sections, symbol arrays, encode buffers)
 * to its own mapping, returned to the kernel when freed, and turns off
 * the threshold's growth that would move them into the heap to fragment
 * it; the trim threshold gives the heap's free top back early. Worker
 * threads (exporter, metrics) allocate little: one extra arena is enough.
 */
static void malloc_tune(void)
{
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 256 * 1024);
	mallopt(M_ARENA_MAX, 2);
}

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "record", cmd_record, "profile the system, processes or a command; write a flame graph/profile" },
	{ "status", cmd_status, "show which backends can run, versions and per-CPU statistics" },
	{ "run", cmd_run, "run as a daemon exporting OTLP profiles continuously" },
	{ "decode", cmd_decode, "print the contents of an .otlp file" },
	{ "unwind-table", cmd_unwind_table, "compile a file's CFI into ember's unwind table and print its size" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: ember [--version] [--help] COMMAND [ARGS...]\n\n"
		"commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nRun 'ember COMMAND --help' for a command's options; see ember(1).\n"
		"record and run share their options (-F, -e, -p, -b, ...: the same\n"
		"meaning in both); run's are also keys of its config file.\n");
}

int main(int argc, char **argv)
{
	malloc_tune();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") ||
	    !strcmp(argv[1], "version")) {
		printf("ember %s\n", EMBER_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "ember: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
