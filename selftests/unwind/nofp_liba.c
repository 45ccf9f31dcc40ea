// SPDX-License-Identifier: GPL-2.0-only
/* Shared library of the no-frame-pointer workload, called through the PLT. */
#include <time.h>

#define NOINLINE __attribute__((noinline))

volatile double a_sink;

NOINLINE double a_leaf(long n)
{
	double x = 0;

	for (long i = 0; i < n; i++) {
		x += (double)i * 0.5;
#if defined(__aarch64__)
		__asm__ volatile("" : "+w"(x));	/* an FP/SIMD register */
#else
		__asm__ volatile("" : "+x"(x));
#endif
	}
	a_sink = x;
	return x;
}

NOINLINE double a_mid(long n)
{
	double r = a_leaf(n);

	return r + a_sink;	/* not a tail call: a_mid stays on the stack */
}

double a_outer(long n)
{
	return a_mid(n) * 2 + a_sink;
}

/* off-CPU: blocks in libc's nanosleep under a known chain */
NOINLINE void a_nap_inner(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
	a_sink += 1;
}

void a_nap(long ms)
{
	a_nap_inner(ms);
	a_sink += 1;
}
