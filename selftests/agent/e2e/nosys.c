// SPDX-License-Identifier: GPL-2.0-only
/*
 * nosys: run a command as if the kernel lacked some system calls, the way
 * a kernel built without them answers: ENOSYS. A seccomp filter, so the
 * agent sees what it would see on a kernel without perf events
 * (CONFIG_PERF_EVENTS=n: perf_event_open), without bpf(2)
 * (CONFIG_BPF_SYSCALL=n) or without module loading (CONFIG_MODULES=n:
 * init_module, finit_module).
 *
 * usage: nosys NAME[,NAME...] CMD [ARG...]
 *	NAME: perf_event_open, bpf, init_module, finit_module
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_AARCH64
#else
#error "nosys: add this architecture's AUDIT_ARCH"
#endif

static const struct { const char *name; long nr; } calls[] = {
	{ "perf_event_open", SYS_perf_event_open },
	{ "bpf", SYS_bpf },
	{ "init_module", SYS_init_module },
	{ "finit_module", SYS_finit_module },
};

static long syscall_nr(const char *name)
{
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (!strcmp(calls[i].name, name))
			return calls[i].nr;
	return -1;
}

int main(int argc, char **argv)
{
	struct sock_filter f[64];
	struct sock_fprog prog;
	size_t n = 0;
	char *list, *name, *save;

	if (argc < 3) {
		fprintf(stderr, "usage: nosys NAME[,NAME...] CMD [ARG...]\n");
		return 2;
	}
	/* another architecture's calls: refused outright */
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      AUDIT_ARCH_SELF, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	list = strdup(argv[1]);
	for (name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		long nr = syscall_nr(name);

		if (nr < 0 || n + 3 > sizeof(f) / sizeof(f[0])) {
			fprintf(stderr, "nosys: unknown or too many calls: %s\n", name);
			return 2;
		}
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (unsigned int)nr, 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						      SECCOMP_RET_ERRNO | ENOSYS);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog.len = (unsigned short)n;
	prog.filter = f;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("nosys: seccomp");
		return 2;
	}
	execvp(argv[2], argv + 2);
	perror("nosys: exec");
	return 127;
}
