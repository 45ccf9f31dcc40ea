// SPDX-License-Identifier: GPL-2.0-only
/*
 * semwatch: run with libember-alloc.so preloaded; prints the sampler's
 * uprobe semaphore ("SEM n") each time it changes, and allocates a little
 * meanwhile (4 KiB blocks, one in 8 kept), for the tests that probes come and go with ember
 * (selftests/suites/16-alloc-sampler.sh). Exits after SECONDS.
 *
 * usage: LD_PRELOAD=.../libember-alloc.so semwatch SECONDS
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	volatile unsigned short *sem = dlsym(RTLD_DEFAULT, "ember_alloc_semaphore");
	double secs = argc > 1 ? atof(argv[1]) : 10;
	struct timespec t0, t;
	static void *kept[256];
	int last = -1, n = 0;

	if (!sem) {
		printf("NOSEM\n");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		char *volatile p = malloc(4096);	/* not elided */

		if (p)
			p[0] = 1;
		/* every 8th block stays: something is in use */
		if (n % 8 == 0 && n / 8 < 256)
			kept[n / 8] = p;
		else
			free(p);
		n++;
		if (*sem != last) {
			last = *sem;
			printf("SEM %d\n", last);
			fflush(stdout);
		}
		usleep(20000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
