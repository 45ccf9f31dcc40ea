// SPDX-License-Identifier: GPL-2.0-only
/* Shared library of the no-frame-pointer workload, loaded with dlopen. */
#include <poll.h>

#define NOINLINE __attribute__((noinline))

volatile long b_sink;

NOINLINE long b_leaf(long n)
{
	long x = 1;

	for (long i = 0; i < n; i++) {
		x = x * 6364136223846793005L + 1442695040888963407L;
		__asm__ volatile("" : "+r"(x));	/* no closed form, please */
	}
	b_sink = x;
	return x;
}

NOINLINE long b_mid(long n)
{
	long r = b_leaf(n);

	return r ^ b_sink;
}

long b_outer(long n)
{
	return b_mid(n) + b_sink;
}

NOINLINE void b_nap_inner(int ms)
{
	poll(0, 0, ms);
	b_sink += 1;
}

void b_nap(int ms)
{
	b_nap_inner(ms);
	b_sink += 1;
}
