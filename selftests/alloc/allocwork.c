// SPDX-License-Identifier: GPL-2.0-only
/*
 * allocwork: allocations with known bytes per call chain, for -e alloc's
 * ground truth (selftests/alloc/check-alloc.sh). Built -O2 without frame
 * pointers: the chains cross libc's allocator, so only CFI unwinding
 * gets them right.
 *
 *   chain_small  64-byte malloc,        all freed at once   (in use: 0)
 *   chain_page   4 KiB malloc,          every other freed   (in use: half)
 *   chain_big    1 MiB calloc,          all kept            (in use: all)
 *
 * The chains take turns in rounds; the blocks kept are freed only at exit
 * (after the truth is printed), so in-use at the end is known exactly:
 *   CHAIN <name> <bytes allocated> <bytes still in use>
 * and which allocator served them, by its own count of bytes in use (a
 * wrapper such as ember's sampler must hand them to jemalloc or tcmalloc
 * when either is preloaded after it):
 *   SERVED jemalloc|tcmalloc|glibc <bytes in use>
 *
 * usage: allocwork [WARMUP_SECONDS [SCALE]]
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define ROUNDS 16

static volatile unsigned long sink;

struct chain {
	const char *name;
	unsigned long long alloc, inuse;
	void **kept;
	size_t nr_kept, cap_kept;
};

static void keep(struct chain *c, void *p, size_t n)
{
	if (c->nr_kept == c->cap_kept)
		abort();	/* sized in main() */
	c->kept[c->nr_kept++] = p;
	c->inuse += n;
}

NOINLINE void chain_small(struct chain *c, size_t bytes)
{
	for (size_t done = 0; done < bytes; done += 64) {
		char *p = malloc(64);

		if (!p)
			abort();
		p[0] = 1;
		sink += (unsigned long)p[0];
		c->alloc += 64;
		free(p);
	}
}

NOINLINE void chain_page(struct chain *c, size_t bytes)
{
	int i = 0;

	for (size_t done = 0; done < bytes; done += 4096, i++) {
		char *p = malloc(4096);

		if (!p)
			abort();
		p[0] = 1;
		c->alloc += 4096;
		if (i & 1)
			keep(c, p, 4096);
		else
			free(p);
	}
}

NOINLINE void chain_big(struct chain *c, size_t bytes)
{
	for (size_t done = 0; done < bytes; done += 1 << 20) {
		char *p = calloc(1, 1 << 20);

		if (!p)
			abort();
		c->alloc += 1 << 20;
		keep(c, p, 1 << 20);
	}
}

/* defined only when that allocator is loaded (weak: 0 otherwise) */
extern int mallctl(const char *, void *, size_t *, void *, size_t)
	__attribute__((weak));
extern int MallocExtension_GetNumericProperty(const char *, size_t *)
	__attribute__((weak));

static void print_served(void)
{
	size_t v = 0, len = sizeof(v);
	uint64_t epoch = 1;
	struct mallinfo2 mi;

	if (mallctl) {
		/* jemalloc's statistics are refreshed by a new epoch */
		mallctl("epoch", NULL, NULL, &epoch, sizeof(epoch));
		if (!mallctl("stats.allocated", &v, &len, NULL, 0))
			printf("SERVED jemalloc %zu\n", v);
		return;
	}
	if (MallocExtension_GetNumericProperty) {
		if (MallocExtension_GetNumericProperty("generic.current_allocated_bytes", &v))
			printf("SERVED tcmalloc %zu\n", v);
		return;
	}
	mi = mallinfo2();
	printf("SERVED glibc %zu\n", mi.uordblks + mi.hblkhd);
}

NOINLINE void run_rounds(struct chain *c, double scale)
{
	for (int r = 0; r < ROUNDS; r++) {
		chain_small(&c[0], (size_t)(16e6 * scale / ROUNDS));
		chain_page(&c[1], (size_t)(24e6 * scale / ROUNDS));
		chain_big(&c[2], (size_t)(24e6 * scale / ROUNDS));
	}
}

int main(int argc, char **argv)
{
	struct chain c[3] = {
		{ .name = "chain_small" }, { .name = "chain_page" },
		{ .name = "chain_big" },
	};
	double warmup = argc > 1 ? atof(argv[1]) : 0;
	double scale = argc > 2 && atof(argv[2]) > 0 ? atof(argv[2]) : 1;
	size_t cap = (size_t)(24e6 * scale / 4096) + 16;
	struct timespec t0, t1;

	/* room for every kept block now: keep() never allocates */
	for (int i = 1; i < 3; i++) {
		c[i].kept = malloc(cap * sizeof(void *));
		c[i].cap_kept = cap;
		if (!c[i].kept)
			return 1;
	}

	/* the profiler binds unwind tables to a new process first */
	if (warmup > 0)
		usleep((useconds_t)(warmup * 1e6));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run_rounds(c, scale);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 0; i < 3; i++)
		printf("CHAIN %s %llu %llu\n", c[i].name, c[i].alloc, c[i].inuse);
	print_served();
	/* what an allocator probe costs: the rounds' time per call */
	printf("RUN %lld ns %llu calls\n",
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
	       (t1.tv_nsec - t0.tv_nsec),
	       c[0].alloc / 64 + c[1].alloc / 4096 + c[2].alloc / (1 << 20));
	fflush(stdout);
	return 0;
}
