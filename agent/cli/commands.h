/* SPDX-License-Identifier: GPL-2.0-only */
/* The ember subcommands; main.c dispatches argv[1] to one of these. */
#ifndef EMBER_COMMANDS_H
#define EMBER_COMMANDS_H

int cmd_record(int argc, char **argv);	/* cmd_record.c */
int cmd_status(int argc, char **argv);	/* cmd_status.c */
int cmd_run(int argc, char **argv);	/* cmd_run.c: the OTLP daemon */
int cmd_decode(int argc, char **argv);	/* cmd_decode.c: print a .otlp file */
int cmd_unwind_table(int argc, char **argv);	/* cmd_unwind.c */

#endif
