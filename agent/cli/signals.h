/* SPDX-License-Identifier: GPL-2.0-only */
/* The signals of ember record and ember run (signals.c). */
#ifndef EMBER_CLI_SIGNALS_H
#define EMBER_CLI_SIGNALS_H

/*
 * SIGINT and SIGTERM call on_stop, SIGHUP on_hup. No SA_RESTART: a
 * signal interrupts the ring poll at once. No other signal is blocked
 * while a handler runs.
 */
void cli_signals_install(void (*on_stop)(int), void (*on_hup)(int));

#endif
