// SPDX-License-Identifier: GPL-2.0-only
/* One signal set-up for ember record and ember run (signals.h). */
#include <signal.h>
#include "cli/signals.h"

void cli_signals_install(void (*on_stop)(int), void (*on_hup)(int))
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
}
