// SPDX-License-Identifier: GPL-2.0
/*
 * compat32: a freestanding 32-bit program (no libc needed) that burns CPU
 * through a frame-pointer call chain for about 4 seconds, then exits. Used
 * to show that sampling 32-bit tasks is safe (flagged COMPAT): i386 on
 * x86-64, AArch32 (-marm) on arm64.
 */
static volatile unsigned int sink;

#if defined(__arm__)
/*
 * AArch32 (an arm64 kernel's compat task), EABI: the number in r7, svc 0.
 * EABI has no time(2): gettimeofday's seconds.
 */
static unsigned int sys_time(void)
{
	unsigned int tv[2];
	register unsigned int r0 __asm__("r0") = (unsigned int)tv;
	register unsigned int r1 __asm__("r1") = 0;
	register unsigned int r7 __asm__("r7") = 78;	/* gettimeofday */

	__asm__ volatile("svc #0" : "+r"(r0) : "r"(r1), "r"(r7) : "memory");
	return tv[0];
}

__attribute__((noreturn)) static void sys_exit(int code)
{
	register int r0 __asm__("r0") = code;
	register unsigned int r7 __asm__("r7") = 1;	/* exit */

	__asm__ volatile("svc #0" : : "r"(r0), "r"(r7));
	__builtin_unreachable();
}
#else
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
#endif

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
