// SPDX-License-Identifier: GPL-2.0-only
/*
 * libdwfl unwinding of stack copies (oracle.h), the way perf's
 * util/unwind-libdw.c does it: report the process's modules from
 * /proc/PID/maps once, attach a "thread state" whose memory is the copy
 * and whose initial registers are the sample's, and let
 * dwfl_getthread_frames walk .eh_frame/.debug_frame.
 *
 * The files are the process's, which may be anyone's (issue 14): libdwfl's
 * own helpers would read /proc/PID/maps with unbounded lines and open each
 * module by its path on our side (following links, blocking on a FIFO)
 * and its .gnu_debuglink next to it. Here the maps are read in bounded
 * lines and handed over from memory, each module is opened like the
 * symbolizer opens it (the exact file through map_files, or its path
 * inside the process's root, never a FIFO, device, link or sparse file:
 * safe_open_at()), and separate debug files are found by build-id under
 * /usr/lib/debug only (root's tree), as the table cache finds them.
 *
 * The vDSO is reported here too: dwfl_linux_proc_maps_report() leaves
 * [vdso] out when it is handed the maps as a stream (it knows neither the
 * pid nor AT_SYSINFO_EHDR), and libdwfl then walks a vDSO frame by rbp,
 * which is right inside the vDSO's framed code and wrong at its entry and
 * after its epilogue's pop (elfutils 0.188: every such sample disagreed).
 * Its bytes are read from the process's memory once per report. (The
 * arm64 vDSO of Debian's kernels has no CFI at all: libdwfl walks it by
 * x29/x30, right only where a function keeps its frame record.)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <elfutils/libdwfl.h>

#include "lib/clock.h"
#include "lib/safe_file.h"
#include "proc/proc_maps.h"
#include "unwind/oracle.h"
#include "unwind/table_cache.h"
#include "uapi/ember.h"

#define ORACLE_MAX_PROCS	64	/* the most oracle_new() may keep */
/*
 * A PC in no reported module makes the oracle read the maps again, at
 * most this often per process: JIT code (qemu's, a JVM's) is in no
 * module however often they are read, and a process of hundreds of
 * mappings costs milliseconds a read.
 */
#define ORACLE_REREPORT_NS	200000000ull

#define ORACLE_MAPS_MAX_BYTES	(16u << 20)
#define ORACLE_MAPS_MAX_LINE	(4096 + 256)
/* x86-64's vDSO is two pages; anything much larger is not one */
#define ORACLE_VDSO_MAX_BYTES	(1u << 20)

struct oracle_proc {
	uint32_t pid;
	Dwfl *dwfl;
	char *maps;			/* what was reported, bounded lines */
	const struct oracle_stack *cur;	/* the sample being unwound */
	bool thread_given;
	bool read_past;			/* the walk wanted bytes the copy lacks */
	uint64_t reported_ns;		/* CLOCK_MONOTONIC of the maps' report */
	bool from_snap;			/* reported from oracle_gone_fn's maps */
	char *vdso;			/* the [vdso] bytes libdwfl's Elf uses */
	int root_fd;			/* gone: its root (oracle_gone_fn), +1 */
};

struct oracle {
	oracle_gone_fn gone;
	void *gone_ctx;
	struct oracle_proc procs[ORACLE_MAX_PROCS];
	unsigned int nr_procs;		/* kept at once, <= ORACLE_MAX_PROCS */
	bool own_files_only;		/* oracle_no_debuginfo() */
	unsigned int next_victim;
};

/*
 * The process libdwfl is working for: find_elf() is called from inside
 * dwfl_getthread_frames() with no pointer of ours. The oracle is used
 * from one thread.
 */
static struct oracle_proc *oracle_cur;

/* The maps line starting at base, else the first naming name (a path, or
 * a [pseudo] name). */
static bool map_range(const char *maps, uint64_t base, const char *name,
		      uint64_t *start, uint64_t *end)
{
	size_t len = strlen(name);

	for (int pass = 0; pass < 2; pass++) {
		for (const char *l = maps, *nl; l && *l; l = nl ? nl + 1 : NULL) {
			size_t n;
			const char *path;
			char *e;

			nl = strchr(l, '\n');
			n = nl ? (size_t)(nl - l) : strlen(l);
			path = len ? memchr(l, name[0], n) : NULL;
			/* not sscanf: it measures the whole rest of maps first */
			*start = strtoull(l, &e, 16);
			if (e == l || *e != '-')
				continue;
			*end = strtoull(e + 1, &e, 16);
			if (pass == 0 ? *start == base :
			    path && (size_t)(l + n - path) == len &&
			    !memcmp(path, name, len))
				return true;
		}
	}
	return false;
}

/*
 * The vDSO image from the process's memory, as an Elf over a buffer the
 * process entry owns (libdwfl ends the Elf, never the buffer).
 */
static int vdso_elf(struct oracle_proc *p, uint64_t base, Elf **elfp)
{
	uint64_t start, end;
	char path[48];
	ssize_t n = -1;
	int fd;

	*elfp = NULL;
	if (p->vdso || !map_range(p->maps, base, "[vdso]", &start, &end) ||
	    start != base || end - start > ORACLE_VDSO_MAX_BYTES)
		return -1;
	snprintf(path, sizeof(path), "/proc/%u/mem", p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	p->vdso = fd >= 0 ? malloc(end - start) : NULL;
	if (p->vdso)
		n = pread(fd, p->vdso, end - start, (off_t)start);
	if (fd >= 0)
		close(fd);
	if (n == (ssize_t)(end - start))
		*elfp = elf_memory(p->vdso, (size_t)n);
	return -1;
}

static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
		    Dwarf_Addr base, char **file_name, Elf **elfp)
{
	struct oracle_proc *p = oracle_cur;
	uint64_t start = 0, end = 0;
	const char *why = NULL;
	char root[48];
	int fd;

	if (p && !strcmp(modname, "[vdso]"))
		return vdso_elf(p, base, elfp);
	if (!p || modname[0] != '/')
		return dwfl_linux_proc_find_elf(mod, userdata, modname, base,
						file_name, elfp);
	if (!map_range(p->maps, base, modname, &start, &end))
		start = end = 0;
	/* the root the process had when its session began, if pinned */
	if (p->root_fd)
		snprintf(root, sizeof(root), "/proc/self/fd/%d", p->root_fd - 1);
	fd = proc_mapped_open(p->pid, start, end, modname,
			      p->root_fd ? root : NULL, TABLE_FILE_MAX_BYTES,
			      NULL, &why);
	if (fd < 0) {
		safe_warn("mapped file", NULL, modname, why);
		return -1;
	}
	/* libdwfl makes the Elf from fd and closes it */
	*elfp = NULL;
	return fd;
}

/* Only root's tree: a process's own directories are no place to look. */
static char *debuginfo_path = "/usr/lib/debug";

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = dwfl_build_id_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static int no_debuginfo(Dwfl_Module *mod, void **userdata,
			const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file,
			GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base;
	(void)file_name, (void)debuglink_file, (void)debuglink_crc;
	(void)debuginfo_file_name;
	return -1;
}

/* The modules' own files only (oracle_no_debuginfo()). */
static const Dwfl_Callbacks proc_callbacks_own = {
	.find_elf = find_elf,
	.find_debuginfo = no_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

/* /proc/PID/maps in bounded lines (a longer one is left out), or NULL. */
static char *read_maps(uint32_t pid, size_t *len)
{
	char line_buf[ORACLE_MAPS_MAX_LINE];
	struct safe_lines lines;
	char path[64], *out = NULL, *l;
	size_t n;
	FILE *f, *m;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	m = open_memstream(&out, len);
	safe_lines_init(&lines, f, line_buf, sizeof(line_buf),
			ORACLE_MAPS_MAX_BYTES, 0);
	while (m && (l = safe_line(&lines, &n)))
		fprintf(m, "%s\n", l);
	fclose(f);
	if (!m || fclose(m)) {
		free(out);
		return NULL;
	}
	return out;
}

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
	uint64_t sp = s->regs[ORACLE_REG_SP];

	(void)dwfl;
	/* only the copy: what was on the stack when the sample was taken */
	if (addr < sp || addr - sp + 8 > s->stack_len) {
		p->read_past = true;
		return false;
	}
	memcpy(result, s->stack + (addr - sp), 8);
	/*
	 * elfutils 0.188 does not strip a signed return address (aarch64
	 * PAC): every word is, which leaves pointers and small numbers as
	 * they are; what the walk reads is saved registers, and only x30's
	 * value matters to it
	 */
	*result &= ~s->pac_mask;
	return true;
}

/*
 * x86_64: registers 0..16, the last one rip (the return address column
 * libdwfl takes the PC from). aarch64: x0..x30 and sp, then the PC on its
 * own (elfutils' aarch64 backend does the same for a live thread).
 */
static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct oracle_proc *p = arg;
	const struct oracle_stack *s = p->cur;
	Dwarf_Word regs[ORACLE_NR_REGS];

	memcpy(regs, s->regs, sizeof(regs));
#if defined(__aarch64__)
	regs[30] &= ~s->pac_mask;
	if (!dwfl_thread_state_registers(thread, 0, ORACLE_REG_PC, regs))
		return false;
	dwfl_thread_state_register_pc(thread, regs[ORACLE_REG_PC]);
	return true;
#else
	return dwfl_thread_state_registers(thread, 0, ORACLE_NR_REGS, regs);
#endif
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct oracle *oracle_new(unsigned int max_procs)
{
	struct oracle *o = calloc(1, sizeof(struct oracle));

	if (o)
		o->nr_procs = max_procs && max_procs < ORACLE_MAX_PROCS ?
			      max_procs : ORACLE_MAX_PROCS;
	return o;
}

void oracle_no_debuginfo(struct oracle *o)
{
	o->own_files_only = true;
}

void oracle_set_gone_fn(struct oracle *o, oracle_gone_fn fn, void *ctx)
{
	o->gone = fn;
	o->gone_ctx = ctx;
}

static void proc_drop(struct oracle_proc *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	if (p->root_fd)
		close(p->root_fd - 1);
	free(p->vdso);
	free(p->maps);
	memset(p, 0, sizeof(*p));
}

/* The [vdso] line, if the process has one, as a module of its own. */
static bool report_vdso(struct oracle_proc *p)
{
	uint64_t start, end;

	if (!map_range(p->maps, UINT64_MAX, "[vdso]", &start, &end))
		return true;
	return dwfl_report_module(p->dwfl, "[vdso]", start, end) != NULL;
}

/*
 * snap_first: the maps from oracle_gone_fn when it has them (a snapshot
 * taken at the exec: no /proc/PID/maps to generate and parse, about a
 * third of the cost), else /proc/PID/maps; a PC the snapshot does not
 * cover reports /proc's maps at once (proc_again()).
 */
static struct oracle_proc *proc_get(struct oracle *o, uint32_t pid,
				    bool snap_first)
{
	struct oracle_proc *p = NULL;
	char *maps;
	size_t len;
	FILE *f;

	for (unsigned int i = 0; i < o->nr_procs; i++)
		if (o->procs[i].pid == pid && o->procs[i].dwfl)
			return &o->procs[i];
	for (unsigned int i = 0; i < o->nr_procs && !p; i++)
		if (!o->procs[i].dwfl)
			p = &o->procs[i];
	if (!p) {
		p = &o->procs[o->next_victim++ % o->nr_procs];
		proc_drop(p);
	}
	p->dwfl = dwfl_begin(o->own_files_only ? &proc_callbacks_own
					       : &proc_callbacks);
	if (!p->dwfl)
		return NULL;
	maps = snap_first ? NULL : read_maps(pid, &len);
	if (!maps && o->gone) {
		int root = -1;

		if (!o->gone(o->gone_ctx, pid, &maps, &len, &root) && root >= 0)
			p->root_fd = root + 1;
		else if (root >= 0)
			close(root);
		p->from_snap = maps != NULL;
	}
	if (!maps && snap_first)
		maps = read_maps(pid, &len);
	f = maps && len ? fmemopen(maps, len, "r") : NULL;
	p->maps = maps;
	p->pid = pid;
	/* attaching opens the first module's file (for its machine) */
	oracle_cur = p;
	if (!f || dwfl_linux_proc_maps_report(p->dwfl, f) ||
	    !report_vdso(p) || dwfl_report_end(p->dwfl, NULL, NULL) ||
	    !dwfl_attach_state(p->dwfl, NULL, (pid_t)pid, &thread_callbacks, p)) {
		oracle_cur = NULL;
		if (f)
			fclose(f);
		proc_drop(p);
		return NULL;
	}
	oracle_cur = NULL;
	fclose(f);
	p->reported_ns = clock_ns(CLOCK_MONOTONIC);
	return p;
}

/* Report pid's maps again, unless that was done a moment ago. */
/*
 * snap_first: ask oracle_gone_fn again first (kmaps learns each new
 * mapping from the kernel, so a dlopen after the first report is there
 * without a /proc read).
 */
static struct oracle_proc *proc_again(struct oracle *o, struct oracle_proc *p,
				      bool snap_first)
{
	uint32_t pid = p->pid;
	bool snap = p->from_snap;

	if (!snap &&
	    clock_ns(CLOCK_MONOTONIC) - p->reported_ns < ORACLE_REREPORT_NS)
		return NULL;
	proc_drop(p);
	return proc_get(o, pid, snap_first);
}

/*
 * Maps reported again so that addr is covered: oracle_gone_fn's first
 * when they came from it, /proc's when those still miss addr. NULL: no
 * report (the process is gone, or /proc was read a moment ago).
 */
static struct oracle_proc *proc_covering(struct oracle *o,
					 struct oracle_proc *p, uint64_t addr)
{
	bool snap = p->from_snap;

	p = proc_again(o, p, snap);
	if (p && snap && !dwfl_addrmodule(p->dwfl, addr))
		p = proc_again(o, p, false);
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

/*
 * Does CFI describe the interrupted frame at pc? On aarch64 libdwfl
 * walks a frame without CFI by the frame record at x29 (elfutils'
 * aarch64_unwind): right in a function that keeps one, wrong in a leaf,
 * whose caller's record it takes for its own, so the frame after next is
 * off. The arm64 vDSO has no CFI at all: such samples are not the
 * oracle's to judge.
 */
static bool pc_has_cfi(Dwfl *dwfl, uint64_t pc)
{
#if defined(__aarch64__)
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
	Dwarf_CFI *cfi[2];
	Dwarf_Addr bias[2] = { 0, 0 };
	bool found = false;

	if (!mod)
		return false;
	cfi[0] = dwfl_module_eh_cfi(mod, &bias[0]);
	cfi[1] = dwfl_module_dwarf_cfi(mod, &bias[1]);
	for (int i = 0; i < 2 && !found; i++) {
		Dwarf_Frame *f = NULL;

		if (cfi[i] && !dwarf_cfi_addrframe(cfi[i], pc - bias[i], &f)) {
			found = true;
			free(f);
		}
	}
	return found;
#else
	(void)dwfl;
	(void)pc;
	return true;	/* x86_64: the vDSO is reported with its CFI */
#endif
}

int oracle_unwind(struct oracle *o, const struct oracle_stack *s,
		  uint64_t *ips, int max, int *complete)
{
	struct oracle_proc *p = proc_get(o, s->pid, true);
	struct walk w = { ips, 0, max };
	int r;

	*complete = 0;
	if (!p)
		return -1;
	/* a library mapped after the modules were reported: report again */
	if (!dwfl_addrmodule(p->dwfl, s->regs[ORACLE_REG_PC])) {
		p = proc_covering(o, p, s->regs[ORACLE_REG_PC]);
		if (!p || !dwfl_addrmodule(p->dwfl, s->regs[ORACLE_REG_PC]))
			return -1;
	}
	if (!pc_has_cfi(p->dwfl, s->regs[ORACLE_REG_PC]))
		return -1;
	for (int again = 0; ; again++) {
		w.n = 0;
		p->cur = s;
		p->thread_given = false;
		p->read_past = false;
		oracle_cur = p;
		r = dwfl_getthread_frames(p->dwfl, (pid_t)s->tid, frame_cb, &w);
		oracle_cur = NULL;
		p->cur = NULL;
		/*
		 * 0: walked to the end; -1 with frames: stopped (an outermost
		 * frame libdwfl reports as an error). elfutils 0.188 also ends
		 * a walk with 0 when a read past the copy fails: not whole.
		 */
		*complete = r == 0 && !p->read_past;
		/*
		 * A return address into no module: the modules were reported
		 * before that library was mapped (the process's first samples
		 * come while ld.so runs). Once more with the maps of now.
		 */
		if (*complete || again || w.n < 2 ||
		    dwfl_addrmodule(p->dwfl, ips[w.n - 1] - 1))
			break;
		p = proc_covering(o, p, ips[w.n - 1] - 1);
		if (!p)
			break;
	}
	return w.n;
}

/*
 * The stack-copy record's EMBER_NR_UREGS slots -> the oracle's registers
 * (oracle.h: DWARF order of this machine) and the PAC mask the producer
 * stripped with. The one place in the agent that knows the record's
 * layout. x86_64: the same DWARF order. aarch64: include/uapi/ember.h's
 * EMBER_UREG_A64_* (x19..x25 in slots 0..6, sp 7, x26..x28 8..10, x29 11,
 * x30 12, the PAC mask 13, pc 16); x0..x18 are not copied (no CFI rule
 * of the code ember samples needs them).
 */
void oracle_regs_from_record(const __u64 *slot, uint64_t *regs, uint64_t *pac)
{
#if defined(__aarch64__)
	static const signed char dwarf_of_slot[EMBER_NR_UREGS] = {
		19, 20, 21, 22, 23, 24, 25, 31, 26, 27, 28, 29, 30,
		-1, -1, -1, ORACLE_REG_PC,
	};

	memset(regs, 0, ORACLE_NR_REGS * sizeof(*regs));
	for (int i = 0; i < EMBER_NR_UREGS; i++)
		if (dwarf_of_slot[i] >= 0)
			regs[dwarf_of_slot[i]] = slot[i];
	if (slot[13])
		*pac = slot[13];
#else
	_Static_assert(ORACLE_NR_REGS == EMBER_NR_UREGS,
		       "x86_64: the record holds the DWARF registers");
	memcpy(regs, slot, ORACLE_NR_REGS * sizeof(*regs));
	(void)pac;
#endif
}

void oracle_forget(struct oracle *o, uint32_t pid)
{
	for (unsigned int i = 0; i < o->nr_procs; i++)
		if (o->procs[i].pid == pid)
			proc_drop(&o->procs[i]);
}

void oracle_free(struct oracle *o)
{
	if (!o)
		return;
	for (unsigned int i = 0; i < o->nr_procs; i++)
		proc_drop(&o->procs[i]);
	free(o);
}
