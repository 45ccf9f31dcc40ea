// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF backend, off-CPU (EMBER_EV_OFFCPU, bpf/offcpu.bpf.h): which
 * design and switch-in hook this kernel takes (source_bpf.c's load_skel()
 * tries them in order), sched_switch, and the BPF frames stripped from
 * the kernel stacks of off-CPU records.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "source/kmem_budget.h"
#include "source/source_bpf_internal.h"

/*
 * Off-CPU designs, measured on this project's 6.18 host (2 vCPUs), per
 * sched_switch, `perf bench sched pipe` load, threshold 1 ms:
 *   parked:   stacks taken at every switch-out   ~7.5 us per switch
 *   deferred: timestamp at switch-out, stacks when the thread is back
 *             (finish_task_switch), only for intervals >= threshold
 *                                                ~1.1 us per switch
 * So deferred first: the sched_exit_tp tracepoint at the end of
 * __schedule (6.16+; the only way on the 6.18 host, which refuses every
 * fentry/fexit program with EPERM and has no kprobes), else fentry, else
 * a kprobe on finish_task_switch (often finish_task_switch.isra.0);
 * parked when none can attach.
 * (Taking the kernel stack at switch-in with bpf_get_task_stack() instead
 * was tried: it cannot serve, stack_trace_save_tsk() drops every __sched
 * function, do_nanosleep and schedule included.)
 */

const char *const bpf_offcpu_mode_short[] = {
	[OFFCPU_FENTRY] = "fentry",
	[OFFCPU_KPROBE] = "kprobe",
	[OFFCPU_EXIT_TP] = "exit_tp",
	[OFFCPU_PARKED] = "parked",
};

const char *const bpf_offcpu_mode_name[] = {
	[OFFCPU_FENTRY] = "deferred (fentry)",
	[OFFCPU_KPROBE] = "deferred (kprobe)",
	[OFFCPU_EXIT_TP] = "deferred (sched_exit_tp)",
	[OFFCPU_PARKED] = "parked",
};

/*
 * From /proc/kallsyms (root sees addresses): the range of __schedule, for
 * strip_sched_frames(), and the name finish_task_switch has here.
 */
void bpf_offcpu_scan_kallsyms(struct ember_source *s)
{
	char line[512], name[256], type;
	unsigned long long addr;
	bool in = false;
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (!s->back_sym[0] && (type == 't' || type == 'T') &&
		    (!strcmp(name, "finish_task_switch") ||
		     !strncmp(name, "finish_task_switch.", 19)))
			snprintf(s->back_sym, sizeof(s->back_sym), "%s", name);
		if (in && addr > s->sched_lo) {
			s->sched_hi = addr;
			in = false;
		}
		if (!s->sched_lo && !strcmp(name, "__schedule") && addr) {
			s->sched_lo = addr;
			in = true;
		}
	}
	fclose(f);
	if (!s->sched_hi)
		s->sched_lo = 0;
}

/*
 * A sched_switch program's kernel stack starts with the BPF and tracepoint
 * machinery; the module's starts at __schedule. Drop what is above it.
 */
void bpf_offcpu_strip_sched_frames(struct ember_source *s,
				   struct ember_sample *smp)
{
	unsigned int i, n = smp->nr_kernel < 16 ? smp->nr_kernel : 16;

	if (!s->sched_lo)
		return;
	for (i = 0; i < n; i++) {
		if (smp->ips[i] >= s->sched_lo && smp->ips[i] < s->sched_hi)
			break;
	}
	if (i == 0 || i == n)
		return;
	memmove(smp->ips, smp->ips + i,
		(smp->nr_kernel - i + smp->nr_user) * sizeof(uint64_t));
	smp->nr_kernel -= i;
	smp->hdr.size -= i * sizeof(uint64_t);
}

/*
 * Before load, after source_bpf.c set the frame limits: the parked
 * record's size follows from them.
 */
void bpf_offcpu_configure(struct ember_source *s, struct ember_bpf *skel)
{
	const struct ember_source_config *cfg = &s->cfg;
	uint32_t vsize = sizeof(struct ember_sample) +
			 (skel->rodata->kstack_req + skel->rodata->ustack_req) *
			 sizeof(uint64_t);
	bool off = cfg->events & EMBER_EV_OFFCPU;
	/* threads tracked off CPU at once; EMBER_BPF_INFLIGHT for tests */
	const char *env_inflight = getenv("EMBER_BPF_INFLIGHT");
	unsigned long inflight = env_inflight ? strtoul(env_inflight, NULL, 10) : 0;
	struct kmem_budget kb;

	/* parked stacks are ~2 KiB each: 8 MiB at the default 4096 */
	kmem_budget_get(cfg->kernel_mem_mb, &kb);
	if (!inflight)
		inflight = kmem_scale(&kb, EMBER_BPF_INFLIGHT_DEFAULT, 256);

	skel->rodata->offcpu_min_ns = cfg->offcpu_min_ns;
	skel->rodata->offcpu_ppm = cfg->offcpu_sample_ppm;
	skel->rodata->inflight_value_size = vsize;
	skel->rodata->offcpu_deferred = s->offcpu_mode != OFFCPU_PARKED;
	if (inflight && inflight <= 1000000) {
		bpf_map__set_max_entries(skel->maps.inflight, inflight);
		bpf_map__set_max_entries(skel->maps.offstart, inflight);
	}
	bpf_map__set_value_size(skel->maps.inflight, vsize);
	if (!off || s->offcpu_mode != OFFCPU_PARKED)
		bpf_map__set_max_entries(skel->maps.inflight, 1);
	if (!off || s->offcpu_mode == OFFCPU_PARKED)
		bpf_map__set_max_entries(skel->maps.offstart, 1);
	bpf_program__set_autoload(skel->progs.ember_back_fentry,
				  off && s->offcpu_mode == OFFCPU_FENTRY);
	bpf_program__set_autoload(skel->progs.ember_back_kprobe,
				  off && s->offcpu_mode == OFFCPU_KPROBE);
	bpf_program__set_autoload(skel->progs.ember_back_tp_btf,
				  off && s->offcpu_mode == OFFCPU_EXIT_TP && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_back_tp_raw,
				  off && s->offcpu_mode == OFFCPU_EXIT_TP && s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_switch_btf, off && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_switch_raw, off && s->raw_tp);
}

/*
 * The deferred off-CPU hook, attached at open: harmless before sched_switch
 * is, and a kernel that refuses it (no kprobes, a renamed static function
 * fentry cannot find) must make us fall back to another flavour now.
 */
int bpf_offcpu_attach_back(struct ember_source *s)
{
	struct ember_bpf *k = s->skel;

	if (s->offcpu_mode == OFFCPU_FENTRY)
		s->back_link = bpf_program__attach(k->progs.ember_back_fentry);
	else if (s->offcpu_mode == OFFCPU_KPROBE)
		s->back_link = bpf_program__attach_kprobe(k->progs.ember_back_kprobe,
							  false, s->back_sym);
	else if (s->offcpu_mode == OFFCPU_EXIT_TP)
		s->back_link = bpf_program__attach(s->raw_tp ?
						   k->progs.ember_back_tp_raw :
						   k->progs.ember_back_tp_btf);
	else
		return 0;
	return s->back_link ? 0 : -errno;
}

/* At start: sched_switch, into tp_links[2]. */
int bpf_offcpu_attach(struct ember_source *s)
{
	struct ember_bpf *k = s->skel;

	if (!(s->cfg.events & EMBER_EV_OFFCPU))
		return 0;
	return attach_tp(s, 2, k->progs.ember_switch_btf, k->progs.ember_switch_raw);
}
