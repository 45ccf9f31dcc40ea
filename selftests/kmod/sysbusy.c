// SPDX-License-Identifier: GPL-2.0
/*
 * sysbusy SECONDS: spends most of its time in the kernel, reading
 * /dev/zero through a raw syscall issued from a frame-pointer function of
 * its own (libc's read() has no frame pointer and would hide its caller),
 * so samples show raw_read <- read_loop <- main above the kernel's
 * read_zero/vfs_read/ksys_read frames.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 16];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) long raw_read(int fd, void *p, unsigned long len)
{
	long ret;

#if defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_read;
	register long x0 __asm__("x0") = fd;
	register long x1 __asm__("x1") = (long)p;
	register long x2 __asm__("x2") = (long)len;

	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	ret = x0;
#else
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_read), "D"((long)fd), "S"(p), "d"(len)
			 : "rcx", "r11", "memory");
#endif
	return ret;
}

__attribute__((noinline)) void read_loop(int fd, double deadline)
{
	while (now() < deadline)
		if (raw_read(fd, buf, sizeof(buf)) <= 0)
			exit(1);
}

int main(int argc, char **argv)
{
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0) {
		perror("/dev/zero");
		return 1;
	}
	read_loop(fd, now() + (argc > 1 ? atof(argv[1]) : 3));
	return 0;
}
