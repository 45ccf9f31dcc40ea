// SPDX-License-Identifier: GPL-2.0
/*
 * allocprobe: stands in for preload/ember_alloc.c in the allocation-probe
 * test (ember-test alloc, guest.sh alloc). Same probe functions and
 * semaphore, called with known arguments, and only while the semaphore is
 * up, as the sampler does.
 *
 *   allocprobe          commands on stdin, one answer line each:
 *     go N M              N calls ember_alloc_probe(allocprobe_ptr(i),
 *                         allocprobe_size(i), allocprobe_weight(i)) from
 *                         do_allocs(), then M calls ember_free_probe(
 *                         allocprobe_ptr(i)) from do_frees(), if the
 *                         semaphore is nonzero: "calls alloc=A free=F sem=S"
 *     sem                 "sem=S"
 *     quit
 *   allocprobe watch SECS
 *                       "sem=S t=MS" at start and whenever it changes, for
 *                       SECS seconds, then "end sem=S"
 *
 * The semaphore is in .probes, as <sys/sdt.h> puts USDT semaphores: the
 * kernel raises a uprobe's ref_ctr only in a file-backed writable mapping,
 * so it must be initialized data, not .bss. Built without PIE, with frame
 * pointers: the test finds everything by the symbols' addresses.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, used))

/* What call i passes; ember-test computes the same. */
#define ALLOCPROBE_PTR(i)	(0x7e5700000000ULL + (uint64_t)(i) * 0x40)
#define ALLOCPROBE_SIZE(i)	(16 + (uint64_t)(i))
#define ALLOCPROBE_WEIGHT(i)	(100000 + (uint64_t)(i) * 7)

volatile unsigned short ember_alloc_semaphore
	__attribute__((section(".probes"), used));

NOINLINE void ember_alloc_probe(void *ptr, size_t size, size_t weight)
{
	__asm__ volatile("" : : "r"(ptr), "r"(size), "r"(weight) : "memory");
}

NOINLINE void ember_free_probe(void *ptr)
{
	__asm__ volatile("" : : "r"(ptr) : "memory");
}

/*
 * Never called: an instruction uprobes refuse (hlt: x86 and arm64 both
 * reject exception-generating instructions), for the test of a request
 * whose second probe cannot be placed.
 */
#if defined(__aarch64__)
#define ALLOCPROBE_HLT "\thlt #0\n"
#else
#define ALLOCPROBE_HLT "\thlt\n"
#endif
__asm__(".pushsection .text\n"
	".globl allocprobe_bad_insn\n"
	".type allocprobe_bad_insn, @function\n"
	"allocprobe_bad_insn:\n"
	ALLOCPROBE_HLT
	"\tret\n"
	".size allocprobe_bad_insn, . - allocprobe_bad_insn\n"
	".popsection\n");

NOINLINE int do_allocs(int n)
{
	int i;

	for (i = 0; i < n; i++)
		ember_alloc_probe((void *)(uintptr_t)ALLOCPROBE_PTR(i),
				  ALLOCPROBE_SIZE(i), ALLOCPROBE_WEIGHT(i));
	return n;
}

NOINLINE int do_frees(int m)
{
	int i;

	for (i = 0; i < m; i++)
		ember_free_probe((void *)(uintptr_t)ALLOCPROBE_PTR(i));
	return m;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static int watch(double secs)
{
	long end = now_ms() + (long)(secs * 1000);
	int last = -1;

	while (now_ms() < end) {
		int s = ember_alloc_semaphore;

		if (s != last) {
			printf("sem=%d t=%ld\n", s, now_ms());
			fflush(stdout);
			last = s;
		}
		usleep(10000);
	}
	printf("end sem=%d\n", ember_alloc_semaphore);
	return 0;
}

int main(int argc, char **argv)
{
	char line[128];
	int n, m, a, f;

	if (argc == 3 && !strcmp(argv[1], "watch"))
		return watch(atof(argv[2]));
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "go %d %d", &n, &m) == 2) {
			a = 0;
			f = 0;
			/* the sampler's rule: nothing while nobody listens */
			if (ember_alloc_semaphore) {
				a = do_allocs(n);
				f = do_frees(m);
			}
			printf("calls alloc=%d free=%d sem=%d\n", a, f,
			       ember_alloc_semaphore);
		} else if (!strncmp(line, "sem", 3)) {
			printf("sem=%d\n", ember_alloc_semaphore);
		} else if (!strncmp(line, "quit", 4)) {
			break;
		} else {
			printf("unknown command\n");
		}
	}
	return 0;
}
