// SPDX-License-Identifier: GPL-2.0-only
/*
 * jit_work SECONDS [WARMUP [tiny]]: runs machine code it generated into an
 * anonymous executable mapping, described in /tmp/perf-PID.map the way
 * JITs (V8, the JVM with perf-map-agent, LuaJIT) describe theirs, called
 * from C built without frame pointers:
 *
 *	main -> run_jit -> jit_outer (generated) -> jit_inner (generated)
 *
 * or with "tiny", a loop calling a function that is all prologue and
 * epilogue, so that most samples land where rbp is not yet, or no longer,
 * the function's own frame (push %rbp, mov %rsp,%rbp, ret):
 *
 *	main -> run_jit -> jit_loop (generated) -> jit_tiny (generated)
 *
 * The generated functions set up frame pointers, as JIT code does: no
 * unwind table covers an anonymous mapping, so the unwinder must take
 * frame-pointer steps through them and resume with the tables of the C
 * code below. WARMUP seconds of sleep come after the code is in place, so
 * an agent slow to bind the process (emulated VMs) binds it with the JIT
 * mapping already there. The map file is left behind (the profile is symbolized after
 * the process is gone); the test removes it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef long (*jit_fn)(void);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * jit_inner: push rbp; mov rbp,rsp; mov ecx,N; 1: dec rcx; jnz 1b;
 * mov eax,1; pop rbp; ret (the epilogue in the order compilers and JITs
 * emit it: between a pop rbp and its ret no frame-pointer walk can tell
 * the frame from its caller's)
 */
static const unsigned char inner_code[] = {
	0x55, 0x48, 0x89, 0xe5,
	0xb9, 0x40, 0x42, 0x0f, 0x00,	/* mov ecx, 1000000 */
	0x48, 0xff, 0xc9, 0x75, 0xfb,
	0xb8, 0x01, 0x00, 0x00, 0x00, 0x5d, 0xc3,
};

/* jit_outer: push rbp; mov rbp,rsp; call jit_inner; pop rbp; ret */
static const unsigned char outer_code[] = {
	0x55, 0x48, 0x89, 0xe5,
	0xe8, 0, 0, 0, 0,		/* call rel32, patched */
	0x5d, 0xc3,
};

/* jit_tiny: push rbp; mov rbp,rsp; pop rbp; ret */
static const unsigned char tiny_code[] = { 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3 };

/* jit_loop: push rbp; mov rbp,rsp; mov ecx,N; 1: call jit_tiny; dec rcx;
 * jnz 1b; mov eax,1; pop rbp; ret */
static const unsigned char loop_code[] = {
	0x55, 0x48, 0x89, 0xe5,
	0xb9, 0xa0, 0x86, 0x01, 0x00,	/* mov ecx, 100000 */
	0xe8, 0, 0, 0, 0,		/* call rel32, patched */
	0x48, 0xff, 0xc9, 0x75, 0xf6,
	0xb8, 0x01, 0x00, 0x00, 0x00, 0x5d, 0xc3,
};

#define INNER_OFF	0x100
#define OUTER_OFF	0x200
#define TINY_OFF	0x300
#define LOOP_OFF	0x400

volatile long sink;

__attribute__((noinline)) static long run_jit(jit_fn f, double until)
{
	long n = 0;

	while (now() < until)
		n += f();
	return n + 1;	/* no tail call into the JIT */
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	double warmup = argc > 2 ? atof(argv[2]) : 0;
	int tiny = argc > 3 && !strcmp(argv[3], "tiny");
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *m;
	int32_t rel;
	char path[64];
	FILE *f;

	m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (m == MAP_FAILED)
		return 1;
	memset(m, 0xcc, page);	/* int3 everywhere else */
	memcpy(m + INNER_OFF, inner_code, sizeof(inner_code));
	memcpy(m + OUTER_OFF, outer_code, sizeof(outer_code));
	rel = (int32_t)(INNER_OFF - (OUTER_OFF + 9));
	memcpy(m + OUTER_OFF + 5, &rel, sizeof(rel));
	memcpy(m + TINY_OFF, tiny_code, sizeof(tiny_code));
	memcpy(m + LOOP_OFF, loop_code, sizeof(loop_code));
	rel = (int32_t)(TINY_OFF - (LOOP_OFF + 14));
	memcpy(m + LOOP_OFF + 10, &rel, sizeof(rel));
	if (mprotect(m, page, PROT_READ | PROT_EXEC))
		return 1;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit_inner\n", (unsigned long)(m + INNER_OFF),
		sizeof(inner_code));
	fprintf(f, "%lx %zx jit_outer\n", (unsigned long)(m + OUTER_OFF),
		sizeof(outer_code));
	fprintf(f, "%lx %zx jit_tiny\n", (unsigned long)(m + TINY_OFF),
		sizeof(tiny_code));
	fprintf(f, "%lx %zx jit_loop\n", (unsigned long)(m + LOOP_OFF),
		sizeof(loop_code));
	fclose(f);
	if (warmup > 0)
		usleep((useconds_t)(warmup * 1e6));
	sink = run_jit((jit_fn)(void *)(m + (tiny ? LOOP_OFF : OUTER_OFF)),
		       now() + secs);
	printf("jit_work: pid %d, %ld calls\n", (int)getpid(), sink);
	return 0;
}
