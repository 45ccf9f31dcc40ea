// SPDX-License-Identifier: GPL-2.0-only
/*
 * The aarch64 PAC mask of user code addresses (pac_mask.h), from the
 * kernel, never guessed: its width follows the kernel's virtual address
 * size and whether the CPU uses tagged addresses, which only the kernel
 * knows. The regset is readable only on a stopped tracee, so a child of
 * ours stops itself, we read the regset and kill it. Once per start.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>
#include "proc/pac_mask.h"

#if defined(__aarch64__)
#include <elf.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

#ifndef HWCAP_PACA
#define HWCAP_PACA		(1UL << 30)
#endif
#ifndef NT_ARM_PAC_MASK
#define NT_ARM_PAC_MASK		0x406
#endif

/* arch/arm64/include/uapi/asm/ptrace.h struct user_pac_mask */
struct pac_regset {
	uint64_t data_mask;
	uint64_t insn_mask;
};

/* Waits for pid, retrying on EINTR: its status, or -1. */
static int wait_child(pid_t pid, int *status)
{
	while (waitpid(pid, status, __WALL) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return 0;
}

/* The child: traced by us, stopped, killed when we are done. */
static void stopped_child(void)
{
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0)
		raise(SIGSTOP);
	_exit(127);
}

int proc_pac_insn_mask(uint64_t *mask)
{
	struct pac_regset pm = { 0, 0 };
	struct iovec iov = { .iov_base = &pm, .iov_len = sizeof(pm) };
	int status = 0, err = 0;
	pid_t pid;

	*mask = 0;
	if (!(getauxval(AT_HWCAP) & HWCAP_PACA))
		return 0;	/* no address authentication: nothing signed */
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		stopped_child();
	if (wait_child(pid, &status))
		return -errno;	/* not ours to reap any more */
	if (!WIFSTOPPED(status))
		return -EPERM;	/* PTRACE_TRACEME refused: it has exited */
	if (ptrace(PTRACE_GETREGSET, pid, (void *)NT_ARM_PAC_MASK, &iov))
		err = errno == EINVAL ? 0 : -errno;	/* EINVAL: no PAC */
	else if (iov.iov_len == sizeof(pm))
		*mask = pm.insn_mask;
	else
		err = -EIO;
	kill(pid, SIGKILL);
	wait_child(pid, &status);
	return err;
}

#else

int proc_pac_insn_mask(uint64_t *mask)
{
	*mask = 0;	/* no pointer authentication on this architecture */
	return 0;
}

#endif
