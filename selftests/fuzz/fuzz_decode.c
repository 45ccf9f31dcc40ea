// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer: files -> `ember decode`. A user runs it on files from
 * anywhere (a collector's dump, a bug report): any bytes, gzip or not,
 * must end in output or a clear error, within bounded memory.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	static int devnull = -1;
	char *argv[] = { "decode", path, NULL };
	int fd, saved1, saved2;

	if (!path[0]) {
		snprintf(path, sizeof(path), "/tmp/ember-fuzz-decode.%d", getpid());
		devnull = open("/dev/null", O_WRONLY);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	close(fd);
	fflush(stdout);
	fflush(stderr);
	saved1 = dup(1);
	saved2 = dup(2);
	dup2(devnull, 1);
	dup2(devnull, 2);
	(void)cmd_decode(2, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved1, 1);
	dup2(saved2, 2);
	close(saved1);
	close(saved2);
	return 0;
}
