// SPDX-License-Identifier: GPL-2.0-only
/*
 * allocwork-cxx: known bytes per call chain through C++'s operator new
 * and through malloc, for -e alloc -p on a program whose allocator
 * (jemalloc, tcmalloc) defines operator new itself, apart from malloc
 * (selftests/suites/16-alloc-sampler.sh, with check-alloc-pid.sh). The
 * same output as allocwork:
 *   CHAIN <name> <bytes allocated> <bytes still in use>
 *   RUN <ns> ns <calls> calls
 *
 *   chain_new     4 KiB operator new,    every other deleted
 *   chain_newarr  64-byte new[],         all deleted
 *   chain_malloc  4 KiB malloc,          all freed
 * The blocks kept are never freed (exit releases them): in use at the
 * end is what CHAIN says.
 *
 * usage: allocwork-cxx [WARMUP_SECONDS [SCALE]]
 */
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <new>
#include <unistd.h>
#include <vector>

/* C names: the profile's frames read as allocwork's do (chain_new) */
#define NOINLINE extern "C" __attribute__((noinline))
#define ROUNDS 16

struct chain {
	const char *name;
	unsigned long long alloc, inuse;
};

static volatile unsigned long sink;
static std::vector<char *> kept;

NOINLINE void chain_new(chain *c, size_t bytes)
{
	for (size_t done = 0, i = 0; done < bytes; done += 4096, i++) {
		char *p = static_cast<char *>(::operator new(4096));

		p[0] = 1;
		c->alloc += 4096;
		if (i & 1) {
			kept.push_back(p);
			c->inuse += 4096;
		} else {
			::operator delete(p);
		}
	}
}

NOINLINE void chain_newarr(chain *c, size_t bytes)
{
	for (size_t done = 0; done < bytes; done += 64) {
		char *p = new char[64];

		p[0] = 1;
		sink += (unsigned long)p[0];
		c->alloc += 64;
		delete[] p;
	}
}

NOINLINE void chain_malloc(chain *c, size_t bytes)
{
	for (size_t done = 0; done < bytes; done += 4096) {
		char *p = static_cast<char *>(malloc(4096));

		if (!p)
			abort();
		p[0] = 1;
		c->alloc += 4096;
		free(p);
	}
}

NOINLINE void run_rounds(chain *c, double scale)
{
	for (int r = 0; r < ROUNDS; r++) {
		chain_new(&c[0], (size_t)(16e6 * scale / ROUNDS));
		chain_newarr(&c[1], (size_t)(8e6 * scale / ROUNDS));
		chain_malloc(&c[2], (size_t)(16e6 * scale / ROUNDS));
	}
}

int main(int argc, char **argv)
{
	chain c[3] = { { "chain_new", 0, 0 }, { "chain_newarr", 0, 0 },
		       { "chain_malloc", 0, 0 } };
	double warmup = argc > 1 ? atof(argv[1]) : 0;
	double scale = argc > 2 && atof(argv[2]) > 0 ? atof(argv[2]) : 1;
	struct timespec t0, t1;

	/* room for every kept block now: keeping never allocates */
	kept.reserve((size_t)(16e6 * scale / 4096) + 16);
	if (warmup > 0)
		usleep((useconds_t)(warmup * 1e6));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run_rounds(c, scale);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (int i = 0; i < 3; i++)
		printf("CHAIN %s %llu %llu\n", c[i].name, c[i].alloc, c[i].inuse);
	printf("RUN %lld ns %llu calls\n",
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
	       (t1.tv_nsec - t0.tv_nsec),
	       c[0].alloc / 4096 + c[1].alloc / 64 + c[2].alloc / 4096);
	fflush(stdout);
	/*
	 * The blocks kept stay in use until exit, as allocwork's do: an
	 * -e alloc -p profile ends with the process, and its in-use bytes
	 * must be those printed above (operator delete followed).
	 */
	return 0;
}
