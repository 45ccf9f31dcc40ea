// SPDX-License-Identifier: GPL-2.0-only
/* Placeholder until OTLP export lands (issue 5). */
#include <stdio.h>
#include "commands.h"

int cmd_decode(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ember decode: OTLP support is not built yet\n");
	return 2;
}
