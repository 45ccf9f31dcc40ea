// SPDX-License-Identifier: GPL-2.0-only
/*
 * Code mapped late, unmapped and mapped again while it is sampled, for
 * selftests/agent/mmap/check-mmap.sh: 0.5 s in its own code, then
 * libm.so.6 dlopen'ed (not linked: it is mapped after the exec) and cos()
 * called for SECS s, dlclose'd (unmapped), then dlopen'ed again (mapped
 * anew, maybe elsewhere) and sin() called for SECS s. Every cos/sin
 * sample must come out symbolized from mappings the kernel told the
 * agent, without /proc/PID/maps.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile double sink;

static __attribute__((noinline)) void own_spin(double secs)
{
	double end = now() + secs;
	unsigned long x = 1;

	while (now() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1;
	sink = (double)x;
}

static __attribute__((noinline)) void lib_spin(double (*f)(double), double secs)
{
	double end = now() + secs, a = 0.1;

	while (now() < end)
		for (int i = 0; i < 1000; i++)
			a = f(a + 0.25) + 1.5;
	sink = a;
}

static void phase(const char *fn, double secs)
{
	void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
	double (*f)(double);

	if (!h) {
		fprintf(stderr, "mmapwork: dlopen libm.so.6: %s\n", dlerror());
		exit(1);
	}
	f = (double (*)(double))dlsym(h, fn);
	if (!f) {
		fprintf(stderr, "mmapwork: no %s in libm\n", fn);
		exit(1);
	}
	printf("%s at %p\n", fn, (void *)f);
	fflush(stdout);
	lib_spin(f, secs);
	dlclose(h);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;

	own_spin(0.5);
	phase("cos", secs);
	phase("sin", secs);
	return 0;
}
