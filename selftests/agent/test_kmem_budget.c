// SPDX-License-Identifier: GPL-2.0-only
/*
 * source/kmem_budget.c: the kernel memory budget of both backends. The full
 * default sizes from 32 MiB up, a quarter of them at the 8 MiB of a 256 MiB
 * appliance, never under a table's floor, and kernel_mem wins over RAM.
 */
#include <string.h>
#include "source/kmem_budget.h"
#include "test_util.h"

int main(void)
{
	struct kmem_budget kb = { .bytes = 8ull << 20, .ram_bytes = 256ull << 20 };
	struct kmem_budget big = { .bytes = 64ull << 20, .ram_bytes = 2ull << 30 };
	char d[128];

	T_CHECK("kmem_quarter_at_8mib", kmem_scale(&kb, 2u << 20, 65536) == 512u << 10,
		"rows %lu", (unsigned long)kmem_scale(&kb, 2u << 20, 65536));
	T_CHECK("kmem_floor", kmem_scale(&kb, 128, 64) == 64, "%lu",
		(unsigned long)kmem_scale(&kb, 128, 64));
	T_CHECK("kmem_never_above", kmem_scale(&kb, 100, 4096) == 100, "%lu",
		(unsigned long)kmem_scale(&kb, 100, 4096));
	T_CHECK("kmem_full_from_32mib", kmem_scale(&big, 1024, 64) == 1024, "%lu",
		(unsigned long)kmem_scale(&big, 1024, 64));
	kmem_budget_get(16, &kb);
	T_CHECK("kmem_config_wins", kb.bytes == 16ull << 20 && kb.from_config, "%lu",
		(unsigned long)kb.bytes);
	kmem_budget_describe(&kb, d, sizeof(d));
	T_CHECK("kmem_describe_config", !strcmp(d, "16 MiB (kernel_mem)"), "%s", d);
	kmem_budget_get(0, &kb);
	T_CHECK("kmem_from_ram", !kb.from_config && kb.ram_bytes &&
		(kb.bytes == kb.ram_bytes / 32 || kb.bytes == EMBER_KMEM_MIN),
		"%lu of %lu", (unsigned long)kb.bytes, (unsigned long)kb.ram_bytes);
	T_EXIT();
}
