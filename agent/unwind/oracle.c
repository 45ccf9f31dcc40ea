// SPDX-License-Identifier: GPL-2.0-only
/*
 * libdwfl unwinding of stack copies (oracle.h), the way perf's
 * util/unwind-libdw.c does it: report the process's modules from
 * /proc/PID/maps once, attach a "thread state" whose memory is the copy
 * and whose initial registers are the sample's, and let
 * dwfl_getthread_frames walk .eh_frame/.debug_frame.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdwfl.h>

#include "oracle.h"

#define ORACLE_MAX_PROCS	64

struct oracle_proc {
	uint32_t pid;
	Dwfl *dwfl;
	const struct oracle_stack *cur;	/* the sample being unwound */
	bool thread_given;
};

struct oracle {
	struct oracle_proc procs[ORACLE_MAX_PROCS];
	unsigned int next_victim;
};

static char *debuginfo_path;

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct oracle_proc *p = arg;

	(void)dwfl;
	if (p->thread_given)
		return 0;
	p->thread_given = true;
	*thread_argp = p;
	return (pid_t)p->cur->tid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	struct oracle_proc *p = arg;
	const struct oracle_stack *s = p->cur;
	uint64_t sp = s->regs[7];

	(void)dwfl;
	/* only the copy: what was on the stack when the sample was taken */
	if (addr < sp || addr - sp + 8 > s->stack_len)
		return false;
	memcpy(result, s->stack + (addr - sp), 8);
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct oracle_proc *p = arg;

	return dwfl_thread_state_registers(thread, 0, ORACLE_NR_REGS,
					   (const Dwarf_Word *)p->cur->regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct oracle *oracle_new(void)
{
	return calloc(1, sizeof(struct oracle));
}

static void proc_drop(struct oracle_proc *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	memset(p, 0, sizeof(*p));
}

static struct oracle_proc *proc_get(struct oracle *o, uint32_t pid)
{
	struct oracle_proc *p = NULL;

	for (int i = 0; i < ORACLE_MAX_PROCS; i++)
		if (o->procs[i].pid == pid && o->procs[i].dwfl)
			return &o->procs[i];
	for (int i = 0; i < ORACLE_MAX_PROCS && !p; i++)
		if (!o->procs[i].dwfl)
			p = &o->procs[i];
	if (!p) {
		p = &o->procs[o->next_victim++ % ORACLE_MAX_PROCS];
		proc_drop(p);
	}
	p->dwfl = dwfl_begin(&proc_callbacks);
	if (!p->dwfl)
		return NULL;
	if (dwfl_linux_proc_report(p->dwfl, (pid_t)pid) ||
	    dwfl_report_end(p->dwfl, NULL, NULL) ||
	    !dwfl_attach_state(p->dwfl, NULL, (pid_t)pid, &thread_callbacks, p)) {
		proc_drop(p);
		return NULL;
	}
	p->pid = pid;
	return p;
}

struct walk {
	uint64_t *ips;
	int n, max;
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (w->n == w->max)
		return DWARF_CB_ABORT;
	/* ember records return addresses as read; libdwfl's are the same
	 * values (activation tells whether to subtract one for lookups) */
	w->ips[w->n++] = pc;
	return DWARF_CB_OK;
}

int oracle_unwind(struct oracle *o, const struct oracle_stack *s,
		  uint64_t *ips, int max, int *complete)
{
	struct oracle_proc *p = proc_get(o, s->pid);
	struct walk w = { ips, 0, max };
	int r;

	*complete = 0;
	if (!p)
		return -1;
	/* a library mapped after the modules were reported: report again */
	if (!dwfl_addrmodule(p->dwfl, s->regs[16])) {
		proc_drop(p);
		p = proc_get(o, s->pid);
		if (!p)
			return -1;
	}
	p->cur = s;
	p->thread_given = false;
	r = dwfl_getthread_frames(p->dwfl, (pid_t)s->tid, frame_cb, &w);
	/* 0: walked to the end; -1 with frames: stopped (copy ended, or an
	 * outermost frame libdwfl reports as an error) */
	*complete = r == 0;
	p->cur = NULL;
	return w.n;
}

void oracle_forget(struct oracle *o, uint32_t pid)
{
	for (int i = 0; i < ORACLE_MAX_PROCS; i++)
		if (o->procs[i].pid == pid)
			proc_drop(&o->procs[i]);
}

void oracle_free(struct oracle *o)
{
	if (!o)
		return;
	for (int i = 0; i < ORACLE_MAX_PROCS; i++)
		proc_drop(&o->procs[i]);
	free(o);
}
