// SPDX-License-Identifier: GPL-2.0-only
/*
 * Ground truth for unwinding without frame pointers. Built the way
 * distributions build (-O2, -fomit-frame-pointer, with gcc and with clang),
 * with a shared library called through the PLT (libnofp_a.so), one loaded
 * with dlopen (libnofp_b.so), libc's qsort calling back into us, and a
 * signal handler that burns CPU on top of an interrupted loop.
 *
 * usage: nofp-work cpu|offcpu SECONDS [WARMUP]
 * WARMUP seconds of sleep first (off CPU, not counted in any truth).
 *
 * cpu: four phases take turns in rounds under main -> do_cpu; each measures
 * its own thread CPU time and the program prints "truth PHASE SECONDS"
 * lines at the end:
 *   run_plt   -> a_outer -> a_mid -> a_leaf          (libnofp_a.so, PLT)
 *   run_dl    -> b_outer -> b_mid -> b_leaf          (libnofp_b.so, dlopen)
 *   run_qsort -> qsort (libc) -> ... -> cmp_burn     (callback from libc)
 *   run_sig   -> sig_spin, interrupted by SIGALRM -> sig_handler -> sig_burn
 * offcpu: two chains under main -> do_offcpu block for known times,
 * "truth CHAIN SECONDS" of wall time each:
 *   run_nap_a -> a_nap -> a_nap_inner -> nanosleep   (libnofp_a.so)
 *   run_nap_b -> b_nap -> b_nap_inner -> poll        (libnofp_b.so)
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))

double a_outer(long n);
void a_nap(long ms);

static long (*b_outer)(long n);
static void (*b_nap)(int ms);
static volatile long sink;
static volatile sig_atomic_t in_sig_phase;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE static void run_plt(double secs)
{
	double end = cpu_now() + secs;

	while (cpu_now() < end)
		sink += (long)a_outer(200000);
}

NOINLINE static void run_dl(double secs)
{
	double end = cpu_now() + secs;

	while (cpu_now() < end)
		sink += b_outer(300000);
}

NOINLINE static int cmp_burn(const void *x, const void *y)
{
	long a = *(const long *)x, b = *(const long *)y;

	for (int i = 0; i < 400; i++)
		sink += i;
	return (a > b) - (a < b);
}

NOINLINE static void run_qsort(double secs)
{
	static long v[512];
	double end = cpu_now() + secs;

	while (cpu_now() < end) {
		for (int i = 0; i < 512; i++)
			v[i] = (i * 7919L) % 512;
		qsort(v, 512, sizeof(v[0]), cmp_burn);
	}
}

NOINLINE static void sig_burn(void)
{
	/* about 2 ms of CPU per signal */
	double end = cpu_now() + 0.002;

	while (cpu_now() < end)
		sink++;
}

NOINLINE static void sig_handler(int sig)
{
	(void)sig;
	if (in_sig_phase)
		sig_burn();
	sink++;
}

NOINLINE static void sig_spin(double end)
{
	while (cpu_now() < end)
		sink += 3;
}

NOINLINE static void run_sig(double secs)
{
	struct itimerval it = { { 0, 4000 }, { 0, 4000 } };
	struct itimerval off = { { 0, 0 }, { 0, 0 } };

	in_sig_phase = 1;
	setitimer(ITIMER_PROF, &it, NULL);
	sig_spin(cpu_now() + secs);
	setitimer(ITIMER_PROF, &off, NULL);
	in_sig_phase = 0;
}

NOINLINE static void run_nap_a(int ms)
{
	a_nap(ms);
	sink++;
}

NOINLINE static void run_nap_b(int ms)
{
	b_nap(ms);
	sink++;
}

static int load_b(const char *self)
{
	char path[4096];
	const char *slash = strrchr(self, '/');
	void *h;

	snprintf(path, sizeof(path), "%.*slibnofp_b.so",
		 slash ? (int)(slash - self + 1) : 0, self);
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "nofp-work: %s\n", dlerror());
		return -1;
	}
	b_outer = (long (*)(long))dlsym(h, "b_outer");
	b_nap = (void (*)(int))dlsym(h, "b_nap");
	return b_outer && b_nap ? 0 : -1;
}

NOINLINE static int do_cpu(double secs)
{
	double t[4] = { 0 }, slice = 0.05;
	const char *names[4] = { "run_plt", "run_dl", "run_qsort", "run_sig" };
	/* unequal shares, so a mix-up between phases shows */
	const double weight[4] = { 1.0, 0.6, 0.8, 0.5 };
	double end = wall_now() + secs;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_handler;
	sigaction(SIGPROF, &sa, NULL);
	while (wall_now() < end) {
		for (int p = 0; p < 4; p++) {
			double c0 = cpu_now();

			switch (p) {
			case 0: run_plt(slice * weight[p]); break;
			case 1: run_dl(slice * weight[p]); break;
			case 2: run_qsort(slice * weight[p]); break;
			case 3: run_sig(slice * weight[p]); break;
			}
			t[p] += cpu_now() - c0;
		}
	}
	for (int p = 0; p < 4; p++)
		printf("truth %s %.6f\n", names[p], t[p]);
	return 0;
}

NOINLINE static int do_offcpu(double secs)
{
	double ta = 0, tb = 0, end = wall_now() + secs;

	while (wall_now() < end) {
		double w0 = wall_now();

		run_nap_a(30);
		ta += wall_now() - w0;
		w0 = wall_now();
		run_nap_b(15);
		tb += wall_now() - w0;
	}
	printf("truth run_nap_a %.6f\ntruth run_nap_b %.6f\n", ta, tb);
	return 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 3;
	double warmup = argc > 3 ? atof(argv[3]) : 0;
	int rc = 2;

	if (argc < 2 || load_b(argv[0])) {
		fprintf(stderr, "usage: nofp-work cpu|offcpu SECONDS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (warmup > 0) {
		struct timespec ts = { (time_t)warmup,
				       (long)((warmup - (time_t)warmup) * 1e9) };

		nanosleep(&ts, NULL);
	}
	/* not tail calls: main stays on the stack under every phase */
	if (!strcmp(argv[1], "cpu"))
		rc = do_cpu(secs);
	else if (!strcmp(argv[1], "offcpu"))
		rc = do_offcpu(secs);
	sink += rc;
	return rc;
}
