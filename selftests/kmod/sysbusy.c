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

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_read), "D"((long)fd), "S"(p), "d"(len)
			 : "rcx", "r11", "memory");
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
