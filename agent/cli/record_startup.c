// SPDX-License-Identifier: GPL-2.0-only
/*
 * Binding a command's unwind tables before it runs (record_startup.h).
 *
 * Without this, the first samples of `ember record -- CMD` come before the
 * unwind worker has read the new process's maps and bound its tables: the
 * backend falls back to frame pointers that distro code does not keep,
 * and the stacks are cut. On a slow machine (TCG, a small board) that
 * window is ~0.4 s per process. perf has no such window because it copies
 * the stack; ember instead holds the command at the points where code gets
 * mapped and binds there. The command is ember's own child, so the trace
 * needs no privilege beyond what starting it gave; it is held only while
 * the dynamic loader runs (a few dozen system calls), and never killed by
 * the trace: if ember dies, the kernel detaches it and it runs on.
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli/record_startup.h"
#include "lib/clock.h"
#include "proc/proc_maps.h"

/* Bounds: a loader that never finishes is let go, not held forever. */
#define STARTUP_MAX_STOPS	20000
#define STARTUP_MAX_NS		(30ull * 1000000000)
#define SYSCALL_STOP		(SIGTRAP | 0x80)	/* PTRACE_O_TRACESYSGOOD */

struct loader_range {
	uint64_t pc;			/* where the command stopped */
	char path[4096];		/* the mapping holding pc */
	uint64_t lo, hi;		/* its executable mappings' span */
};

static bool find_pc_mapping(void *ctx, struct sym_map_line *m)
{
	struct loader_range *r = ctx;

	if (r->pc >= m->start && r->pc < m->end && m->path_len &&
	    m->path_len < sizeof(r->path)) {
		memcpy(r->path, m->path, m->path_len);
		r->path[m->path_len] = '\0';
		return false;
	}
	return true;
}

static bool span_of_path(void *ctx, struct sym_map_line *m)
{
	struct loader_range *r = ctx;

	if (m->path_len == strlen(r->path) &&
	    !memcmp(m->path, r->path, m->path_len)) {
		if (!r->lo || m->start < r->lo)
			r->lo = m->start;
		if (m->end > r->hi)
			r->hi = m->end;
	}
	return true;
}

/* The registers a syscall stop needs: number, third argument, pc. */
struct sc_regs {
	uint64_t nr, arg2, pc;
};

static int get_regs(pid_t pid, struct sc_regs *r)
{
	struct user_regs_struct u;
	struct iovec iov = { .iov_base = &u, .iov_len = sizeof(u) };

	if (ptrace(PTRACE_GETREGSET, pid, (void *)(uintptr_t)NT_PRSTATUS, &iov))
		return -errno;
#if defined(__x86_64__)
	r->nr = u.orig_rax;
	r->arg2 = u.rdx;
	r->pc = u.rip;
#elif defined(__aarch64__)
	r->nr = u.regs[8];
	r->arg2 = u.regs[2];
	r->pc = u.pc;
#else
#error "record_startup.c: add this architecture's syscall registers"
#endif
	return 0;
}

/*
 * The dynamic loader run as the command (`ld-linux-x86-64.so.2 PROG`, how
 * a program is run against another set of libraries): it maps PROG and
 * its libraries itself, so it is followed as any loader. By its name: a
 * static program is run from its own first instruction as well, and
 * following one would hold it for its whole run.
 */
static bool is_dynamic_loader(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	/* ld-2.31.so: glibc before 2.34, as /proc/PID/exe resolves it */
	return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld-musl-", 8) ||
	       !strncmp(base, "ld64.so", 7) || !strncmp(base, "ld-2.", 5) ||
	       !strcmp(base, "ld.so");
}

/* Whether the command runs its own code yet: an exec with no loader. */
static int loader_of(pid_t pid, struct loader_range *r)
{
	struct sc_regs regs;
	char exe[64], self[4096];
	ssize_t n;
	int e;

	e = get_regs(pid, &regs);
	if (e)
		return e;
	memset(r, 0, sizeof(*r));
	r->pc = regs.pc;
	if (proc_maps_read(NULL, (uint32_t)pid, find_pc_mapping, r, NULL) ||
	    !r->path[0])
		return -ENOENT;
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	n = readlink(exe, self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		/* static: its entry is its own code */
		if (!strcmp(self, r->path) && !is_dynamic_loader(self))
			return 1;
	}
	proc_maps_read(NULL, (uint32_t)pid, span_of_path, r, NULL);
	return 0;
}

static int resume(pid_t pid, int sig)
{
	return ptrace(PTRACE_SYSCALL, pid, 0, (void *)(uintptr_t)sig) ? -errno : 0;
}

/*
 * Wait for the next stop. 1: a syscall stop; 0: another stop whose
 * signal was handed back; 2: the command ended (*status); -errno.
 */
static int next_stop(pid_t pid, int *status)
{
	int st, r;

	while (waitpid(pid, &st, __WALL) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		*status = st;
		return 2;
	}
	if (WIFSTOPPED(st) && WSTOPSIG(st) == SYSCALL_STOP)
		return 1;
	/* a signal for the command: delivered as if untraced (an event or
	 * group stop, st >> 16 set, has none to hand back) */
	r = resume(pid, WIFSTOPPED(st) && !(st >> 16) ? WSTOPSIG(st) : 0);
	return r ? r : 0;
}

static int follow_loader(pid_t pid, const struct loader_range *ld,
			 startup_bind_fn bind, void *ctx, int *status,
			 struct startup_stats *st, uint64_t t0)
{
	bool entry = true, exec_mmap = false;
	struct sc_regs regs;
	int r;

	if ((r = resume(pid, 0)))
		return r;
	for (unsigned int i = 0;; i++) {
		r = next_stop(pid, status);
		if (r == 2 || r < 0)
			return r == 2 ? 1 : r;
		if (r == 0)
			continue;
		st->syscalls++;
		if ((r = get_regs(pid, &regs)))
			return r;
		if (entry && (regs.pc < ld->lo || regs.pc >= ld->hi))
			break;	/* code outside the loader runs: done */
		if (entry)
			exec_mmap = regs.nr == SYS_mmap && (regs.arg2 & PROT_EXEC);
		else if (exec_mmap) {
			bind(ctx, pid);		/* a library's code just mapped */
			st->binds++;
		}
		entry = !entry;
		/* detached from this stop: the loader is taking too long */
		if (i >= STARTUP_MAX_STOPS || mono_ns() - t0 > STARTUP_MAX_NS)
			break;
		if ((r = resume(pid, 0)))
			return r;
	}
	bind(ctx, pid);
	st->binds++;
	return 0;
}

int startup_attach(pid_t pid)
{
	long opts = PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD;

	return ptrace(PTRACE_SEIZE, pid, 0, (void *)opts) ? -errno : 0;
}

int startup_follow(pid_t pid, startup_bind_fn bind, void *ctx, int *status,
		   struct startup_stats *st)
{
	struct loader_range ld;
	uint64_t t0 = mono_ns();
	int r = 0, s;

	memset(st, 0, sizeof(*st));
	/* the exec event stop: the new image is in, nothing of it has run */
	for (;;) {
		while (waitpid(pid, &s, __WALL) < 0)
			if (errno != EINTR)
				return -errno;
		if (WIFEXITED(s) || WIFSIGNALED(s)) {
			*status = s;
			return 1;
		}
		if (WIFSTOPPED(s) && (s >> 8) == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
			break;
		/* anything before it (a signal): handed back */
		r = ptrace(PTRACE_CONT, pid, 0, (void *)(uintptr_t)
			   (WIFSTOPPED(s) && !(s >> 16) ? WSTOPSIG(s) : 0));
		if (r)
			return -errno;
	}
	bind(ctx, pid);
	st->binds++;
	r = loader_of(pid, &ld);
	if (r == 0 && ld.hi)
		r = follow_loader(pid, &ld, bind, ctx, status, st, t0);
	else if (r == 1)
		r = 0;	/* static: bound already */
	if (r == 1) {
		st->held_ns = mono_ns() - t0;
		return 1;
	}
	st->held_ns = mono_ns() - t0;
	/* from any stop: a signal stop's signal was handed back already */
	if (ptrace(PTRACE_DETACH, pid, 0, 0) && !r)
		r = -errno;
	return r < 0 ? r : 0;
}
