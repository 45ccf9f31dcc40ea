// SPDX-License-Identifier: GPL-2.0
/*
 * compat32: a freestanding 32-bit program (no libc needed) that burns CPU
 * through a frame-pointer call chain for about SECONDS, then exits. Used
 * to show that sampling 32-bit tasks is safe (flagged COMPAT).
 */
static volatile unsigned int sink;

static unsigned int sys_time(void)
{
	unsigned int ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "0"(13), "b"(0) : "memory");
	return ret;
}

__attribute__((noreturn)) static void sys_exit(int code)
{
	__asm__ volatile("int $0x80" : : "a"(1), "b"(code));
	__builtin_unreachable();
}

__attribute__((noinline)) void c32_leaf(void)
{
	unsigned int i, x = sink;

	for (i = 0; i < 100000; i++)
		x = x * 1103515245U + 12345U;
	sink = x;
}

__attribute__((noinline)) void c32_mid(void)
{
	c32_leaf();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noreturn)) void _start(void)
{
	unsigned int end = sys_time() + 4;

	while (sys_time() < end)
		c32_mid();
	sys_exit(0);
}
