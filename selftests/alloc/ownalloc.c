// SPDX-License-Identifier: GPL-2.0-only
/*
 * A program's own allocator, linked into allocwork to make
 * allocwork-own (selftests/suites/16-alloc-sampler.sh): the executable
 * defines the malloc family itself, so -e alloc -p must probe the
 * executable's malloc, not libc's (which the process maps too but never
 * calls). A bump allocator over one reserved mapping: never reuses memory,
 * single-threaded (allocwork is), blocks zeroed by the kernel.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ARENA_BYTES	(8ull << 30)	/* reserved, not committed */
#define HEADER		16		/* the block's size, kept in front */

static char *arena;
static size_t used;

static void *bump(size_t align, size_t n)
{
	size_t at;
	char *p;

	if (!arena) {
		p = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		arena = p;
	}
	if (align < HEADER)
		align = HEADER;
	at = (used + HEADER + align - 1) & ~(align - 1);
	if (n > ARENA_BYTES || at + n > ARENA_BYTES) {
		errno = ENOMEM;
		return NULL;
	}
	used = at + n;
	*(size_t *)(arena + at - sizeof(size_t)) = n;
	return arena + at;
}

void *malloc(size_t n)
{
	return bump(HEADER, n);
}

void free(void *p)
{
	(void)p;	/* a bump allocator keeps everything */
}

void *calloc(size_t nmemb, size_t size)
{
	if (size && nmemb > (size_t)-1 / size) {
		errno = ENOMEM;
		return NULL;
	}
	return bump(HEADER, nmemb * size);	/* fresh pages are zero */
}

void *realloc(void *old, size_t n)
{
	size_t had = old ? ((size_t *)old)[-1] : 0;
	void *p = bump(HEADER, n);

	if (p && old)
		memcpy(p, old, had < n ? had : n);
	return p;
}

void *memalign(size_t align, size_t n)
{
	return bump(align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	return bump(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = bump(align, n);

	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *valloc(size_t n)
{
	return bump((size_t)sysconf(_SC_PAGESIZE), n);
}

void *pvalloc(size_t n)
{
	return bump((size_t)sysconf(_SC_PAGESIZE), n);
}

size_t malloc_usable_size(void *p)
{
	return p ? ((size_t *)p)[-1] : 0;
}
