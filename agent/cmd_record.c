// SPDX-License-Identifier: GPL-2.0-only
/* Placeholder: ember record is being written (issue 4). */
#include <stdio.h>
#include "commands.h"

int cmd_record(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "ember record: not built yet\n");
	return 2;
}
