// SPDX-License-Identifier: GPL-2.0-only
/*
 * How much kernel memory ember's backend may hold, from the configuration
 * or the machine's RAM: an appliance with 256 MiB must not give 22 MiB of
 * it to eBPF maps sized for a server (issue 23). One rule for both
 * backends, so `ember status` can say what a run will use.
 */
#include <stdbool.h>
#include <stdio.h>
#include <sys/sysinfo.h>
#include "source/kmem_budget.h"

void kmem_budget_get(uint32_t mb, struct kmem_budget *b)
{
	struct sysinfo si;

	b->ram_bytes = 0;
	if (!sysinfo(&si))
		b->ram_bytes = (uint64_t)si.totalram * (si.mem_unit ? si.mem_unit : 1);
	b->from_config = mb != 0;
	if (mb) {
		b->bytes = (uint64_t)mb << 20;
		return;
	}
	/* RAM unknown: the full defaults, as before budgets existed */
	b->bytes = b->ram_bytes ? b->ram_bytes / EMBER_KMEM_RAM_SHARE : EMBER_KMEM_FULL;
	if (b->bytes < EMBER_KMEM_MIN)
		b->bytes = EMBER_KMEM_MIN;
}

uint64_t kmem_scale(const struct kmem_budget *b, uint64_t n, uint64_t floor)
{
	uint64_t v;

	if (b->bytes >= EMBER_KMEM_FULL)
		return n;
	/* bytes < 32 MiB and n < 2^32 here: no overflow */
	v = n * (b->bytes >> 10) / (EMBER_KMEM_FULL >> 10);
	if (v < floor)
		v = floor;
	return v < n ? v : n;
}

void kmem_budget_describe(const struct kmem_budget *b, char *buf, size_t len)
{
	if (b->from_config)
		snprintf(buf, len, "%llu MiB (kernel_mem)",
			 (unsigned long long)(b->bytes >> 20));
	else if (b->ram_bytes)
		snprintf(buf, len, "%llu MiB (1/%d of %llu MiB of RAM; kernel_mem sets it)",
			 (unsigned long long)(b->bytes >> 20), EMBER_KMEM_RAM_SHARE,
			 (unsigned long long)(b->ram_bytes >> 20));
	else
		snprintf(buf, len, "%llu MiB (RAM unknown)",
			 (unsigned long long)(b->bytes >> 20));
}
