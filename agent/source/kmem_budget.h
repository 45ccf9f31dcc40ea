/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef EMBER_KMEM_BUDGET_H
#define EMBER_KMEM_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The kernel memory a backend may hold (maps, rings, unwind tables): the
 * kernel_mem key / --kernel-mem MB when set, else 1/32 of the machine's
 * RAM (8 MiB on a 256 MiB image). The backends keep their full defaults
 * when those fit (EMBER_KMEM_FULL and more: machines of 1 GiB and up) and
 * scale their tables down by kmem_scale() otherwise.
 */
#define EMBER_KMEM_FULL		(32ull << 20)
#define EMBER_KMEM_MIN		(4ull << 20)
#define EMBER_KMEM_RAM_SHARE	32

struct kmem_budget {
	uint64_t bytes;
	uint64_t ram_bytes;	/* 0 when unknown */
	bool from_config;
};

/* mb: the configured budget in MiB, 0 for the RAM-based default. */
void kmem_budget_get(uint32_t mb, struct kmem_budget *b);
/* n scaled to the budget (n * bytes / EMBER_KMEM_FULL, >= floor, <= n). */
uint64_t kmem_scale(const struct kmem_budget *b, uint64_t n, uint64_t floor);
/* "8 MiB (1/32 of 256 MiB of RAM)" or "16 MiB (kernel_mem)". */
void kmem_budget_describe(const struct kmem_budget *b, char *buf, size_t len);

#endif
