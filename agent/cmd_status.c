// SPDX-License-Identifier: GPL-2.0-only
/* Placeholder: ember status is being written (issue 4). */
#include <stdio.h>
#include "commands.h"

int cmd_status(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ember status: not built yet\n");
	return 2;
}
