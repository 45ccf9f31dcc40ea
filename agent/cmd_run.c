// SPDX-License-Identifier: GPL-2.0-only
/* Placeholder until the OTLP daemon lands (issue 5). */
#include <stdio.h>
#include "commands.h"

int cmd_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ember run: the OTLP daemon is not built yet\n");
	return 2;
}
