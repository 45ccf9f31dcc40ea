// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember unwind-table FILE...: compile each file's CFI into the unwind
 * table the backends load and report its size (rows, rules, bytes per
 * row), optionally writing the table out (-o, one file only). A tool for
 * developers and for bug reports: what would ember unwind this file with?
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libelf.h>
#include "cli/commands.h"
#include "lib/safe_file.h"
#include "unwind/table_cache.h"
#include "unwind/cfi_compile.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: ember unwind-table [-o TABLE] FILE...\n"
		"  compile FILE's .eh_frame/.debug_frame into ember's unwind table\n"
		"  and print its size; -o writes the table (one FILE only)\n");
}

static int one_file(const char *path, const char *out_path)
{
	/* The caller's own file: any link, any owner; never a FIFO or device. */
	const struct safe_rules rules = {
		.max_bytes = TABLE_FILE_MAX_BYTES,
		.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
		.flags = SAFE_FOLLOW | SAFE_ANYONE,
	};
	const char *why;
	struct cfi_stats st;
	char err[256], synth[96] = "";
	void *tab = NULL;
	size_t len = 0;
	Elf *elf;
	int fd, r;

	fd = safe_open_at(NULL, path, &rules, NULL, &why);
	if (fd < 0) {
		if (safe_refused(why))
			fprintf(stderr, "ember: %s: it %s\n", path, why);
		else
			fprintf(stderr, "ember: %s: %s\n", path, strerror(errno));
		return 1;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		fprintf(stderr, "ember: %s: not an ELF file\n", path);
		if (elf)
			elf_end(elf);
		close(fd);
		return 1;
	}
	r = cfi_compile(elf, &tab, &len, &st, err, sizeof(err));
	elf_end(elf);
	close(fd);
	if (r) {
		fprintf(stderr, "ember: %s: %s\n", path, err);
		return 1;
	}
	if (st.bytes_synth)
		snprintf(synth, sizeof(synth), ", %" PRIu64 " bytes without CFI "
			 "given rules (.plt, vDSO)", st.bytes_synth);
	printf("%s: %s, %u FDEs (%u skipped), %" PRIu64 " CFI rows -> %u rows, "
	       "%u rules, %u pages, %" PRIu64 " bytes (%.2f bytes/row), "
	       "%" PRIu64 " rows with rules ember cannot use (%.2f%% of %" PRIu64
	       " code bytes)%s\n",
	       path, st.source, st.fdes, st.fdes_bad, st.rows_in, st.rows,
	       st.rules, st.pages, st.bytes, st.rows ? (double)st.bytes / st.rows : 0,
	       st.rows_unsupported,
	       st.bytes_in ? 100.0 * st.bytes_unsupported / st.bytes_in : 0,
	       st.bytes_in, synth);
	if (out_path) {
		FILE *f = fopen(out_path, "we");

		if (!f || fwrite(tab, 1, len, f) != len || fclose(f)) {
			fprintf(stderr, "ember: cannot write %s: %s\n", out_path,
				strerror(errno));
			free(tab);
			return 1;
		}
	}
	free(tab);
	return 0;
}

int cmd_unwind_table(int argc, char **argv)
{
	const char *out = NULL;
	int c, rc = 0;

	while ((c = getopt(argc, argv, "ho:")) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc || (out && argc - optind != 1)) {
		usage(stderr);
		return 2;
	}
	elf_version(EV_CURRENT);
	for (int i = optind; i < argc; i++)
		rc |= one_file(argv[i], out);
	return rc;
}
