// SPDX-License-Identifier: GPL-2.0-only
/*
 * syscall-burn: spends its time inside the kernel on behalf of a known
 * user call chain: main -> sc_level1 -> sc_write_loop -> sc_raw_read ->
 * read(/dev/zero) of 64 KiB, so most samples land in the kernel under these
 * frames. Runs for argv[1] seconds (default 5).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 16];

/*
 * The syscall instruction right here: libc's wrappers keep no frame
 * pointer, which would hide their caller from the user stack walk.
 */
__attribute__((noinline)) long sc_raw_read(int fd, void *p, unsigned long n)
{
	long ret;

#if defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_read;
	register long x0 __asm__("x0") = fd;
	register long x1 __asm__("x1") = (long)p;
	register long x2 __asm__("x2") = (long)n;

	asm volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	ret = x0;
#else
	asm volatile("syscall"
		     : "=a"(ret)
		     : "0"((long)SYS_read), "D"((long)fd), "S"(p), "d"(n)
		     : "rcx", "r11", "memory");
#endif
	return ret;
}

__attribute__((noinline)) void sc_write_loop(int fd)
{
	for (int i = 0; i < 200; i++)
		sc_raw_read(fd, buf, sizeof(buf));
}

__attribute__((noinline)) void sc_level1(int fd)
{
	sc_write_loop(fd);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	int fd = open("/dev/zero", O_RDONLY);
	struct timespec a, b;

	if (fd < 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		sc_level1(fd);
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
	return 0;
}
