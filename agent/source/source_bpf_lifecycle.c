// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF backend, process lifecycle (EMBER_EV_LIFECYCLE,
 * bpf/lifecycle.bpf.h): EXEC and EXIT records from sched_process_exec and
 * sched_process_exit, tp_btf or raw_tp as loaded; EMBER_REC_MMAP
 * (bpf/mmap.bpf.h) at mmap_region's return, or a kprobe on
 * perf_event_mmap when the kernel refuses the fexit (load_skel() tries
 * the next hook, then none, before giving up a tracepoint flavour). A
 * kernel that refuses the hook at attach loses the records only: the
 * agent reads /proc for every process then (agent/proc/kmaps.h).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include "source/source_bpf_internal.h"

static bool kprobe_mmap_ok(void);
static bool fexit_loadable(const char *func);

/*
 * The first EMBER_REC_MMAP hook to try: EMBER_BPF_MMAP=off|kprobe|fexit
 * forces one. load_skel() tries the next one when a load fails.
 */
enum mmap_mode bpf_mmap_first(struct ember_source *s)
{
	const char *e = getenv("EMBER_BPF_MMAP");

	if (!(s->cfg.events & EMBER_EV_LIFECYCLE) || (e && !strcmp(e, "off")))
		return MMAP_OFF;
	if (e && !strcmp(e, "kprobe"))
		return kprobe_mmap_ok() ? MMAP_KPROBE : MMAP_OFF;
	if (e && !strcmp(e, "tp"))
		return MMAP_TP;
	return fexit_loadable("mmap_region") ? MMAP_FEXIT
					      : bpf_mmap_next(MMAP_FEXIT);
}

/*
 * Whether the kernel takes an fexit program on FUNC: asked with a
 * two-instruction program before the skeleton loads, because a refusal
 * there costs a second load of every program (0.7 s on a host kernel that
 * refuses all tracing programs with EPERM, seconds under TCG). A program
 * that loads here can still be refused with the real body; load_skel()
 * then tries the next hook as before.
 */
static bool fexit_loadable(const char *func)
{
	const struct bpf_insn ret0[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o,
		    .expected_attach_type = BPF_TRACE_FEXIT);
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int id, fd;

	if (!vmlinux)
		return false;
	id = btf__find_by_name_kind(vmlinux, func, BTF_KIND_FUNC);
	btf__free(vmlinux);
	if (id <= 0)
		return false;
	o.attach_btf_id = (__u32)id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "ember_probe", "GPL", ret0,
			   2, &o);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/*
 * The kprobe flavour only where it was seen to work: on Debian's 5.10
 * (x86_64) it attaches and never runs its program for perf_event_mmap
 * (suite 21, 2026-11-28; the module's kprobe on the same function does
 * run there; cause not found), on 6.1 and 6.12 it works.
 */
static bool kprobe_mmap_ok(void)
{
	struct utsname u;
	unsigned int major = 0, minor = 0;

	if (access("/sys/bus/event_source/devices/kprobe", F_OK))
		return false;
	if (uname(&u) || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 1);
}

/* The next hook after one that failed to load; kprobes only where they are. */
enum mmap_mode bpf_mmap_next(enum mmap_mode m)
{
	if (m == MMAP_FEXIT && kprobe_mmap_ok())
		return MMAP_KPROBE;
	if (m == MMAP_FEXIT || m == MMAP_KPROBE)
		return MMAP_TP;
	return MMAP_OFF;
}

void bpf_lifecycle_configure(struct ember_source *s, struct ember_bpf *skel)
{
	bool life = s->cfg.events & EMBER_EV_LIFECYCLE;

	bpf_program__set_autoload(skel->progs.ember_exec_btf, life && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exec_raw, life && s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exit_btf, life && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exit_raw, life && s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_mmap_fexit,
				  s->mmap_mode == MMAP_FEXIT);
	bpf_program__set_autoload(skel->progs.ember_mmap_kprobe,
				  s->mmap_mode == MMAP_KPROBE);
	bpf_program__set_autoload(skel->progs.ember_mmap_tp,
				  s->mmap_mode == MMAP_TP);
	bpf_program__set_autoload(skel->progs.ember_mmap_exec_btf,
				  s->mmap_mode == MMAP_TP && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_mmap_exec_raw,
				  s->mmap_mode == MMAP_TP && s->raw_tp);
	skel->rodata->mmap_records = s->mmap_mode != MMAP_OFF;
	if (s->mmap_mode != MMAP_OFF) {
		uint64_t key = 0;

		/* mm_gen hashes the mm's address: keyed, never the address */
		if (getrandom(&key, sizeof(key), 0) != sizeof(key))
			key = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ULL;
		skel->rodata->mmap_gen_key = key | 1;
	}
}

/* The mapping hook, into tp_links[5] (and [6]); none: said, not fatal. */
static void mmap_attach(struct ember_source *s)
{
	struct ember_bpf *k = s->skel;
	const char *hook = "perf_event_mmap";

	if (s->mmap_mode == MMAP_KPROBE) {
		s->tp_links[5] = bpf_program__attach_kprobe(
			k->progs.ember_mmap_kprobe, false, hook);
	} else if (s->mmap_mode == MMAP_FEXIT) {
		hook = "mmap_region";
		s->tp_links[5] = bpf_program__attach(k->progs.ember_mmap_fexit);
	} else {
		hook = "sys_exit_mmap";
		/* unmounted, every new process's maps were read from /proc:
		 * ~150 us of agent CPU each beside an exec storm */
		tracefs_ensure("mapping records");
		s->tp_links[5] = bpf_program__attach_tracepoint(
			k->progs.ember_mmap_tp, "syscalls", "sys_exit_mmap");
		if (s->tp_links[5])
			s->tp_links[6] = bpf_program__attach(s->raw_tp ?
				k->progs.ember_mmap_exec_raw : k->progs.ember_mmap_exec_btf);
		if (s->tp_links[5] && !s->tp_links[6]) {
			hook = "sched_process_exec";
			bpf_link__destroy(s->tp_links[5]);
			s->tp_links[5] = NULL;
		}
	}
	if (!s->tp_links[5])
		fprintf(stderr, "ember: bpf: no mapping records (%s: %s): new processes' maps are read from /proc\n",
			hook, strerror(errno));
}

/*
 * Into tp_links[0] and [1]. The mapping hook first: at sched_process_exec
 * the tracepoint flavour's program then runs before the EXEC record's, so
 * a new image's mappings reach the agent ahead of its EXEC, as from the
 * mmap hooks.
 */
int bpf_lifecycle_attach(struct ember_source *s)
{
	struct ember_bpf *k = s->skel;
	int ret;

	if (!(s->cfg.events & EMBER_EV_LIFECYCLE))
		return 0;
	if (s->mmap_mode != MMAP_OFF)
		mmap_attach(s);
	ret = attach_tp(s, 0, k->progs.ember_exec_btf, k->progs.ember_exec_raw);
	if (!ret)
		ret = attach_tp(s, 1, k->progs.ember_exit_btf, k->progs.ember_exit_raw);
	return ret;
}
