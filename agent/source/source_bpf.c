// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF backend: loads bpf/ember.bpf.c (through its libbpf skeleton),
 * attaches it to per-CPU cpu-clock events and scheduler tracepoints and
 * reads its records, which use the same UAPI format as the kernel module.
 *
 * Transport: one BPF ring buffer shared by all CPUs (default), or per-CPU
 * perf buffers (EMBER_BPF_TRANSPORT=perfbuf, kept for measurement). Records
 * the programs cannot write are counted per CPU in the "stats" map; poll()
 * turns new losses into EMBER_REC_LOST records.
 *
 * One file (~1350 lines): it is one backend's private state (struct
 * ember_source: the skeleton, links, transports, filters, allocation
 * probes), reached only through the ops table at its end; the unwind
 * tables' maps are source_bpf_unwind.c, `ember status` status_bpf.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <mntent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/clock.h"
#include "source/source.h"
#include "source/source_bpf_unwind.h"
#include "ember_bpf.h"
#include "source/bpf_stats.h"
#include "gen/ember.skel.h"

#define BTF_PATH		"/sys/kernel/btf/vmlinux"
#define DEFAULT_RING_BYTES	(512u * 1024)	/* per CPU */
#define DEFAULT_RING_MAX	(16u << 20)	/* shared ring, by default */
#define MAX_SAMPLE_BYTES	(sizeof(struct ember_sample) + \
				 2 * EMBER_MAX_FRAMES * sizeof(uint64_t) + \
				 sizeof(struct ember_exec) + EMBER_BPF_FILENAME_MAX)
/* the largest record: a sample, or a stack copy (--check-unwind) */
#define MAX_COPY_BYTES		(sizeof(struct ember_user_stack) + \
				 EMBER_STACK_COPY_MAX + 4096)
#define MAX_RECORD_BYTES	(MAX_SAMPLE_BYTES > MAX_COPY_BYTES ? \
				 MAX_SAMPLE_BYTES : MAX_COPY_BYTES)

#ifndef CAP_PERFMON
#define CAP_PERFMON	38
#endif
#ifndef CAP_BPF
#define CAP_BPF		39
#endif

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
enum offcpu_mode {
	OFFCPU_FENTRY,
	OFFCPU_KPROBE,
	OFFCPU_EXIT_TP,
	OFFCPU_PARKED,
};

static const char *const offcpu_mode_short[] = {
	[OFFCPU_FENTRY] = "fentry",
	[OFFCPU_KPROBE] = "kprobe",
	[OFFCPU_EXIT_TP] = "exit_tp",
	[OFFCPU_PARKED] = "parked",
};

static const char *const offcpu_mode_name[] = {
	[OFFCPU_FENTRY] = "deferred (fentry)",
	[OFFCPU_KPROBE] = "deferred (kprobe)",
	[OFFCPU_EXIT_TP] = "deferred (sched_exit_tp)",
	[OFFCPU_PARKED] = "parked",
};

struct ember_source {
	struct ember_bpf *skel;
	struct ring_buffer *rb;
	struct perf_buffer *pb;
	struct bpf_link **links;	/* perf_event links: per online CPU, per event */
	int nr_links;
	struct bpf_link *tp_links[5];	/* exec, exit, switch, 2 fault tps */
	/* allocation probes (EMBER_EV_ALLOC), attach..stop */
	struct bpf_link **alloc_links;
	int nr_alloc_links, cap_alloc_links;
	struct bpf_link *back_link;	/* deferred off-CPU hook, open..close */
	bool running;
	bool use_perfbuf;
	bool raw_tp;			/* tp_btf refused: raw_tp flavour */
	enum offcpu_mode offcpu_mode;
	char back_sym[256];		/* finish_task_switch in kallsyms */
	int stats_fd;			/* BPF_ENABLE_STATS, -1 if refused */
	struct ember_source_config cfg;
	uint32_t clock_event;		/* enum ember_clock_event in use */
	int nr_possible;
	int *online;			/* online CPU numbers */
	int nr_online;
	uint64_t *lost_seen;		/* per possible CPU */
	uint64_t corrupt;
	/* kernel frames before __schedule in off-CPU stacks are BPF's own */
	uint64_t sched_lo, sched_hi;
	/* the current poll() */
	ember_record_fn fn;
	void *fn_ctx;
	int count;
	uint64_t *bounce;		/* aligned copy of one record */
	struct bpf_unwind *uw;		/* CFI tables, NULL with --no-cfi */
};

static void unwind_maps(struct ember_bpf *skel, struct bpf_unwind_maps *m)
{
	m->pages = skel->maps.uw_pages;
	m->rows = skel->maps.uw_rows;
	m->rules = skel->maps.uw_rules;
	m->tables = skel->maps.uw_tables;
	m->procs = skel->maps.uw_procs;
	m->proc_slots = skel->maps.uw_proc_slots;
}

static void say(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static long read_sysctl_long(const char *path, long dflt)
{
	FILE *f = fopen(path, "r");
	long v = dflt;

	if (!f)
		return dflt;
	if (fscanf(f, "%ld", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

static bool have_cap(int cap)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[cap / 32].effective & (1u << (cap % 32));
}

/* Kernels before 5.8 know neither CAP_BPF nor CAP_PERFMON. */
static bool kernel_knows_cap_bpf(void)
{
	return read_sysctl_long("/proc/sys/kernel/cap_last_cap", 0) >= CAP_BPF;
}

static int perf_open_clock(int cpu, uint32_t freq, bool cycles)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = cycles ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE,
		.config = cycles ? PERF_COUNT_HW_CPU_CYCLES :
				   PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = freq,
	};

	return syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * EMBER_FAULTS_HOOK=tp: page faults through x86's
 * exceptions:page_fault_user/_kernel tracepoints instead of the software
 * perf event. Not the default: on the 6.18 host the raw_tp call on every
 * fault cost more than the whole perf event (docs/NOTES.md, bench 9).
 */
static bool faults_hook_tp(void)
{
	const char *hook = getenv("EMBER_FAULTS_HOOK");

	return hook && !strcmp(hook, "tp");
}

/* Every period-th page fault on cpu (any task), for ember_faults. */
static int perf_open_faults(int cpu, uint32_t period)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.sample_period = period,
	};

	return syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int bpf_probe(char *why, size_t why_len)
{
	bool admin = have_cap(CAP_SYS_ADMIN);
	long unpriv;
	int fd;

	if (access(BTF_PATH, R_OK)) {
		say(why, why_len,
		    "no kernel BTF at %s: this kernel was built without CONFIG_DEBUG_INFO_BTF, "
		    "which the eBPF backend needs (use the kernel module backend, or a kernel with BTF)",
		    BTF_PATH);
		return -ENOENT;
	}
	if (!admin) {
		if (!kernel_knows_cap_bpf()) {
			say(why, why_len,
			    "the eBPF backend needs CAP_SYS_ADMIN on this kernel (it predates CAP_BPF/CAP_PERFMON): run ember as root");
			return -EPERM;
		}
		if (!have_cap(CAP_BPF) || !have_cap(CAP_PERFMON)) {
			unpriv = read_sysctl_long("/proc/sys/kernel/unprivileged_bpf_disabled", -1);
			say(why, why_len,
			    "the eBPF backend needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN); this process has %s%s%s "
			    "(run as root, or grant them: setcap cap_bpf,cap_perfmon+ep ember)%s",
			    have_cap(CAP_BPF) ? "CAP_BPF" : "no CAP_BPF",
			    have_cap(CAP_PERFMON) ? ", CAP_PERFMON" : ", no CAP_PERFMON",
			    "",
			    unpriv > 0 ? "; kernel.unprivileged_bpf_disabled is set, so bpf() is refused without them" : "");
			return -EPERM;
		}
	}
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL) != 1) {
		say(why, why_len,
		    "the kernel refused to load a BPF perf_event program (%s): bpf() may be disabled "
		    "(lockdown=confidentiality, a seccomp policy or an LSM); use the kernel module backend",
		    strerror(errno));
		return -EPERM;
	}
	fd = perf_open_clock(0, EMBER_DEFAULT_FREQ, false);
	if (fd < 0) {
		int err = errno;

		say(why, why_len,
		    "perf_event_open(cpu-clock) failed: %s (kernel.perf_event_paranoid=%ld; CAP_PERFMON or root is needed)",
		    strerror(err), read_sysctl_long("/proc/sys/kernel/perf_event_paranoid", 99));
		return -err;
	}
	close(fd);
	return 0;
}

/* "0-3,5,7-8" (sysfs CPU list) into an array. */
static int parse_cpu_list(const char *path, int **out, int *nr)
{
	char buf[4096], *p, *end;
	int *cpus = NULL, n = 0, cap = 0;
	FILE *f = fopen(path, "r");
	long a, b;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	for (p = buf; *p && *p != '\n';) {
		a = strtol(p, &end, 10);
		if (end == p || a < 0)
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || b < a)
				goto bad;
		}
		for (; a <= b; a++) {
			if (n == cap) {
				int *tmp = realloc(cpus, (cap = cap ? 2 * cap : 16) * sizeof(*cpus));

				if (!tmp)
					goto bad;
				cpus = tmp;
			}
			cpus[n++] = a;
		}
		p = end;
		if (*p == ',')
			p++;
	}
	*out = cpus;
	*nr = n;
	return n ? 0 : -EIO;
bad:
	free(cpus);
	return -EINVAL;
}

/*
 * From /proc/kallsyms (root sees addresses): the range of __schedule, for
 * strip_sched_frames(), and the name finish_task_switch has here.
 */
static void scan_kallsyms(struct ember_source *s)
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
static void strip_sched_frames(struct ember_source *s, struct ember_sample *smp)
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

/* Validate a record as read from a ring and hand it to the callback. */
static void deliver(struct ember_source *s, const void *data, size_t avail)
{
	struct ember_rec_header *hdr = (void *)s->bounce;

	if (avail < sizeof(*hdr) || avail > MAX_RECORD_BYTES) {
		s->corrupt++;
		return;
	}
	memcpy(s->bounce, data, avail);	/* perf buffer data is 4-aligned */
	if (!ember_record_valid(hdr, avail)) {
		s->corrupt++;
		return;
	}
	if (hdr->type == EMBER_REC_PAD)
		return;
	if (hdr->type == EMBER_REC_OFFCPU)
		strip_sched_frames(s, (void *)hdr);
	s->count++;
	s->fn(hdr, s->fn_ctx);
}

static int ringbuf_cb(void *ctx, void *data, size_t size)
{
	deliver(ctx, data, size);
	return 0;
}

static enum bpf_perf_event_ret perfbuf_cb(void *ctx, int cpu,
					  struct perf_event_header *ev)
{
	struct {
		struct perf_event_header hdr;
		uint32_t size;
		char data[];
	} *raw = (void *)ev;

	(void)cpu;
	if (ev->type == PERF_RECORD_SAMPLE) {
		if (ev->size < sizeof(*raw) ||
		    raw->size > ev->size - sizeof(*raw)) {
			((struct ember_source *)ctx)->corrupt++;
			return LIBBPF_PERF_EVENT_CONT;
		}
		deliver(ctx, raw->data, raw->size);
	}
	/* PERF_RECORD_LOST: the programs count the same losses in "stats" */
	return LIBBPF_PERF_EVENT_CONT;
}

static uint32_t pow2_at_least(uint64_t v)
{
	uint64_t p = 4096;

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

static int check_config(const struct ember_source_config *cfg, char *err,
			size_t err_len)
{
	if (cfg->freq_hz < EMBER_MIN_FREQ || cfg->freq_hz > EMBER_MAX_FREQ) {
		say(err, err_len, "frequency %u Hz out of range (%u..%u)",
		    cfg->freq_hz, EMBER_MIN_FREQ, EMBER_MAX_FREQ);
		return -EINVAL;
	}
	if (cfg->kstack_max > EMBER_MAX_FRAMES || cfg->ustack_max > EMBER_MAX_FRAMES) {
		say(err, err_len, "stack limit out of range (0..%u frames)",
		    EMBER_MAX_FRAMES);
		return -EINVAL;
	}
	if (cfg->nr_pids > EMBER_MAX_FILTER_PIDS || (cfg->nr_pids && !cfg->pids)) {
		say(err, err_len, "at most %u processes can be filtered",
		    EMBER_MAX_FILTER_PIDS);
		return -EINVAL;
	}
	if (cfg->offcpu_sample_ppm > 1000000) {
		say(err, err_len, "off-CPU sampling %u ppm is more than a million",
		    cfg->offcpu_sample_ppm);
		return -EINVAL;
	}
	if (!(cfg->events & (EMBER_EV_ONCPU | EMBER_EV_OFFCPU | EMBER_EV_LIFECYCLE))) {
		say(err, err_len, "no event asked (on-CPU, off-CPU or lifecycle)");
		return -EINVAL;
	}
	return 0;
}

/* Frames asked of bpf_get_stack: one more than kept, within the sysctl. */
static uint32_t frames_req(uint32_t max, long sysctl_max)
{
	if (!max)
		return 0;
	if (sysctl_max > 0 && (long)max + 1 > sysctl_max)
		return sysctl_max;
	return max + 1;
}

static void configure(struct ember_source *s, struct ember_bpf *skel)
{
	const struct ember_source_config *cfg = &s->cfg;
	long sysmax = read_sysctl_long("/proc/sys/kernel/perf_event_max_stack", 127);
	uint32_t kreq = frames_req(cfg->kstack_max, sysmax);
	uint32_t ureq = frames_req(cfg->ustack_max, sysmax);
	uint64_t ring = (uint64_t)(cfg->ring_bytes ? cfg->ring_bytes : DEFAULT_RING_BYTES);
	uint32_t vsize = sizeof(struct ember_sample) + (kreq + ureq) * sizeof(uint64_t);
	bool off = cfg->events & EMBER_EV_OFFCPU;
	bool life = cfg->events & EMBER_EV_LIFECYCLE;
	/* threads tracked off CPU at once; EMBER_BPF_INFLIGHT for tests */
	const char *env_inflight = getenv("EMBER_BPF_INFLIGHT");
	unsigned long inflight = env_inflight ? strtoul(env_inflight, NULL, 10) : 0;

	if (sysmax > 0 && (cfg->kstack_max > sysmax || cfg->ustack_max > sysmax))
		fprintf(stderr,
			"ember: kernel.perf_event_max_stack=%ld caps BPF stacks below the %u/%u frames asked "
			"(raise it with sysctl for deeper stacks)\n",
			sysmax, cfg->kstack_max, cfg->ustack_max);

	skel->rodata->include_idle = cfg->include_idle;
	skel->rodata->stack_copy = cfg->stack_copy;
	skel->rodata->use_perfbuf = s->use_perfbuf;
	skel->rodata->kstack_max = cfg->kstack_max < kreq ? cfg->kstack_max : kreq;
	skel->rodata->kstack_req = kreq;
	skel->rodata->ustack_max = cfg->ustack_max < ureq ? cfg->ustack_max : ureq;
	skel->rodata->ustack_req = ureq;
	/* cpu-clock periods are ns; a cycles period is not */
	skel->rodata->fixed_weight_ns =
		s->clock_event == EMBER_CLOCK_CYCLES ? 1000000000ull / cfg->freq_hz : 0;
	skel->rodata->fault_page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	skel->rodata->fault_period = cfg->fault_period ? cfg->fault_period :
				     EMBER_DEFAULT_FAULT_PERIOD;
	skel->rodata->offcpu_min_ns = cfg->offcpu_min_ns;
	skel->rodata->offcpu_ppm = cfg->offcpu_sample_ppm;
	skel->rodata->inflight_value_size = vsize;

	if (s->use_perfbuf) {
		skel->rodata->wakeup_bytes = ring / 4;
		bpf_map__set_max_entries(skel->maps.ringbuf, 4096);
	} else {
		/* one ring for all CPUs: the default stays bounded on big hosts */
		ring *= s->nr_online;
		if (!cfg->ring_bytes && ring > DEFAULT_RING_MAX)
			ring = DEFAULT_RING_MAX;
		ring = pow2_at_least(ring);
		skel->rodata->wakeup_bytes = ring / 4;
		bpf_map__set_max_entries(skel->maps.ringbuf, ring);
	}
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

	{
		struct bpf_unwind_maps um;

		unwind_maps(skel, &um);
		bpf_unwind_size(&um, !cfg->no_unwind_tables, cfg->nr_pids > 0);
	}
	bpf_program__set_autoload(skel->progs.ember_oncpu, cfg->events & EMBER_EV_ONCPU);
	bpf_program__set_autoload(skel->progs.ember_faults,
				  (cfg->events & EMBER_EV_FAULTS) && !faults_hook_tp());
	bpf_program__set_autoload(skel->progs.ember_fault_tp,
				  (cfg->events & EMBER_EV_FAULTS) && faults_hook_tp());
	bpf_program__set_autoload(skel->progs.ember_alloc, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_free, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_rdi, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_rsi, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_nmemb, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_rdx, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_ret, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_free, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_realloc, cfg->events & EMBER_EV_ALLOC);
	if (cfg->alloc_rate)
		skel->data->alloc_rate = cfg->alloc_rate;
	/* the entry probes follow sampled blocks to their free (-p) */
	skel->rodata->alloc_inuse = (cfg->events & EMBER_EV_ALLOC) &&
				    !cfg->alloc_no_inuse;
	if (!skel->rodata->alloc_inuse) {
		bpf_map__set_max_entries(skel->maps.alloc_pending, 1);
		bpf_map__set_max_entries(skel->maps.alloc_live, 1);
	}
	bpf_program__set_autoload(skel->progs.ember_switch_btf, off && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_switch_raw, off && s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exec_btf, life && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exec_raw, life && s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exit_btf, life && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exit_raw, life && s->raw_tp);
}

/*
 * libbpf's messages while we try program flavours the kernel may refuse:
 * kept, and shown only if every attempt fails.
 */
static char libbpf_log[8192];
static size_t libbpf_log_len;

static int libbpf_capture(enum libbpf_print_level level, const char *fmt,
			  va_list ap)
{
	static int verbose = -1;
	int n;

	/* EMBER_BPF_VERBOSE=1: everything libbpf says, verifier logs too */
	if (verbose < 0)
		verbose = getenv("EMBER_BPF_VERBOSE") != NULL;
	if (verbose && level != LIBBPF_DEBUG)
		return vfprintf(stderr, fmt, ap);
	if (level == LIBBPF_DEBUG)
		return 0;
	if (libbpf_log_len >= sizeof(libbpf_log) - 1)
		libbpf_log_len = 0;	/* keep the latest messages */
	n = vsnprintf(libbpf_log + libbpf_log_len,
		      sizeof(libbpf_log) - libbpf_log_len, fmt, ap);
	if (n > 0)
		libbpf_log_len += (size_t)n < sizeof(libbpf_log) - libbpf_log_len ?
				  (size_t)n : sizeof(libbpf_log) - 1 - libbpf_log_len;
	return n;
}

/*
 * The deferred off-CPU hook, attached at open: harmless before sched_switch
 * is, and a kernel that refuses it (no kprobes, a renamed static function
 * fentry cannot find) must make us fall back to another flavour now.
 */
static int attach_back(struct ember_source *s)
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

struct load_attempt {
	bool raw_tp;
	enum offcpu_mode mode;
};

/*
 * Open and load the skeleton, trying flavours from the cheapest: tp_btf
 * before raw_tp, deferred off-CPU stacks before parked ones.
 * EMBER_BPF_RAW_TP=1 and EMBER_BPF_OFFCPU=fentry|kprobe|parked force one
 * (tests and measurements).
 */
static int load_skel(struct ember_source *s, char *err, size_t err_len)
{
	static const struct load_attempt attempts[] = {
		{ false, OFFCPU_EXIT_TP }, { false, OFFCPU_FENTRY },
		{ false, OFFCPU_KPROBE }, { false, OFFCPU_PARKED },
		{ true, OFFCPU_EXIT_TP }, { true, OFFCPU_KPROBE },
		{ true, OFFCPU_PARKED },
	};
	const char *force_raw = getenv("EMBER_BPF_RAW_TP");
	const char *force_mode = getenv("EMBER_BPF_OFFCPU");
	bool off = s->cfg.events & EMBER_EV_OFFCPU;
	libbpf_print_fn_t old_print;
	int ret = -ENOENT;

	libbpf_log_len = 0;
	libbpf_log[0] = '\0';
	old_print = libbpf_set_print(libbpf_capture);
	for (size_t i = 0; i < sizeof(attempts) / sizeof(attempts[0]); i++) {
		const struct load_attempt *a = &attempts[i];

		if (force_raw && *force_raw == '1' && !a->raw_tp)
			continue;
		if (force_mode && off && strcmp(offcpu_mode_short[a->mode], force_mode))
			continue;
		/* without off-CPU the mode is irrelevant: each tp flavour once */
		if (!off && a->mode != (a->raw_tp ? OFFCPU_KPROBE : OFFCPU_FENTRY))
			continue;
		if (off && a->mode == OFFCPU_KPROBE && !s->back_sym[0])
			continue;
		s->raw_tp = a->raw_tp;
		s->offcpu_mode = a->mode;
		s->skel = ember_bpf__open();
		if (!s->skel) {
			ret = -errno;
			continue;
		}
		configure(s, s->skel);
		ret = ember_bpf__load(s->skel);
		if (!ret && off)
			ret = attach_back(s);
		if (!ret)
			break;
		ember_bpf__destroy(s->skel);
		s->skel = NULL;
	}
	libbpf_set_print(old_print);
	if (!ret && !s->cfg.no_unwind_tables) {
		struct bpf_unwind_maps um;
		char why[256];

		unwind_maps(s->skel, &um);
		s->uw = bpf_unwind_new(&um, why, sizeof(why));
		if (!s->uw)	/* frame pointers only: say so, keep going */
			fprintf(stderr, "ember: bpf: no CFI unwinding: %s\n", why);
	}
	if (!ret) {
		if (getenv("EMBER_BPF_VERBOSE"))
			fprintf(stderr, "ember: bpf: %s tracepoints, off-CPU stacks %s, %s transport\n",
				s->raw_tp ? "raw_tp" : "tp_btf",
				off ? offcpu_mode_name[s->offcpu_mode] : "unused",
				s->use_perfbuf ? "perf buffer" : "ring buffer");
		return 0;
	}
	fprintf(stderr, "%s", libbpf_log);
	say(err, err_len,
	    "the kernel refused ember's BPF programs (%s); the libbpf messages above say why",
	    strerror(-ret));
	return ret ? ret : -EINVAL;
}

/* Depth of the cgroup v2 directory whose inode is id, or -1. */
static uint64_t want_cgid;
static int found_level;

static int cg_visit(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)path;
	if (flag == FTW_D && (uint64_t)st->st_ino == want_cgid) {
		found_level = ftw->level;
		return 1;
	}
	return 0;
}

static int cgroup_level(uint64_t id)
{
	struct mntent *m;
	char root[PATH_MAX] = "";
	FILE *f = setmntent("/proc/self/mounts", "r");

	if (!f)
		return -1;
	while ((m = getmntent(f))) {
		if (!strcmp(m->mnt_type, "cgroup2")) {
			snprintf(root, sizeof(root), "%s", m->mnt_dir);
			break;
		}
	}
	endmntent(f);
	if (!root[0])
		return -1;
	want_cgid = id;
	found_level = -1;
	nftw(root, cg_visit, 16, FTW_PHYS | FTW_MOUNT);
	return found_level;
}

static int bpf_set_filter(struct ember_source *s, const uint32_t *pids,
			  size_t nr_pids, uint64_t cgroup_id)
{
	int fd = bpf_map__fd(s->skel->maps.filter_pids);
	uint32_t key, next, *pkey = NULL;
	uint8_t one = 1;
	int level = 0;
	size_t i;

	if (nr_pids > EMBER_MAX_FILTER_PIDS || (nr_pids && !pids))
		return -EINVAL;
	if (cgroup_id) {
		level = cgroup_level(cgroup_id);
		if (level < 0)
			return -ENOENT;
	}
	for (i = 0; i < nr_pids; i++) {
		if (bpf_map_update_elem(fd, &pids[i], &one, BPF_ANY))
			return -errno;
	}
	/* then drop the keys that are no longer wanted */
	while (!bpf_map_get_next_key(fd, pkey, &next)) {
		bool keep = false;

		for (i = 0; i < nr_pids && !keep; i++)
			keep = pids[i] == next;
		if (!keep && !bpf_map_delete_elem(fd, &next)) {
			pkey = NULL;	/* restart: the iteration order changed */
			continue;
		}
		key = next;
		pkey = &key;
	}
	s->skel->bss->filter_pids_on = nr_pids > 0;
	s->skel->bss->filter_cgroup_level = level;
	__atomic_store_n(&s->skel->bss->filter_cgroup, cgroup_id, __ATOMIC_RELEASE);
	return 0;
}

static void bpf_close(struct ember_source *s);

static int bpf_open(struct ember_source **out, const struct ember_source_config *cfg,
		    char *err, size_t err_len)
{
	const char *transport = getenv("EMBER_BPF_TRANSPORT");
	struct ember_source *s;
	size_t ring_pages;
	int ret, fd;

	ret = check_config(cfg, err, err_len);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->cfg.pids = NULL;
	s->stats_fd = -1;
	s->use_perfbuf = transport && !strcmp(transport, "perfbuf");
	s->nr_possible = libbpf_num_possible_cpus();
	s->bounce = malloc(MAX_RECORD_BYTES + 8);
	s->lost_seen = calloc(s->nr_possible > 0 ? s->nr_possible : 1, sizeof(uint64_t));
	if (s->nr_possible <= 0 || !s->bounce || !s->lost_seen) {
		say(err, err_len, "out of memory");
		ret = -ENOMEM;
		goto fail;
	}
	ret = parse_cpu_list("/sys/devices/system/cpu/online", &s->online, &s->nr_online);
	if (ret) {
		say(err, err_len, "cannot read /sys/devices/system/cpu/online: %s", strerror(-ret));
		goto fail;
	}

	s->clock_event = EMBER_CLOCK_CPU_CLOCK;
	if (cfg->use_cycles && (cfg->events & EMBER_EV_ONCPU)) {
		fd = perf_open_clock(s->online[0], cfg->freq_hz, true);
		if (fd >= 0) {
			s->clock_event = EMBER_CLOCK_CYCLES;
			close(fd);
		} else {
			fprintf(stderr,
				"ember: hardware cycles not available (%s: no PMU here?): sampling cpu-clock instead\n",
				strerror(errno));
		}
	}

	if (cfg->events & EMBER_EV_OFFCPU)
		scan_kallsyms(s);
	ret = load_skel(s, err, err_len);
	if (ret)
		goto fail;

	ret = bpf_set_filter(s, cfg->pids, cfg->nr_pids, cfg->cgroup_id);
	if (ret) {
		say(err, err_len, ret == -ENOENT ?
		    "cgroup id %" PRIu64 " not found in the cgroup v2 hierarchy" :
		    "cannot set the filters (cgroup %" PRIu64 ")", cfg->cgroup_id);
		goto fail;
	}

	if (s->use_perfbuf) {
		struct perf_event_attr attr = {
			.size = sizeof(attr),
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_BPF_OUTPUT,
			.sample_type = PERF_SAMPLE_RAW,
			.watermark = 1,
		};

		ring_pages = pow2_at_least(cfg->ring_bytes ? cfg->ring_bytes : DEFAULT_RING_BYTES) /
			     sysconf(_SC_PAGESIZE);
		attr.wakeup_watermark = ring_pages * sysconf(_SC_PAGESIZE) / 4;
		s->pb = perf_buffer__new_raw(bpf_map__fd(s->skel->maps.perfbuf), ring_pages,
					     &attr, perfbuf_cb, s, NULL);
		if (!s->pb) {
			ret = -errno;
			say(err, err_len, "cannot create the perf buffers: %s", strerror(-ret));
			goto fail;
		}
	} else {
		s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.ringbuf), ringbuf_cb, s, NULL);
		if (!s->rb) {
			ret = -errno;
			say(err, err_len, "cannot map the BPF ring buffer: %s", strerror(-ret));
			goto fail;
		}
	}
	/* Program run times for stats(); refused on kernels before 5.8. */
	s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	*out = s;
	return 0;
fail:
	bpf_close(s);
	return ret;
}

/* uprobes for every process of a file plus per-process ones: bounded */
/* (each one an fd: under the usual 1024 open files) */
#define MAX_ALLOC_LINKS	896

static void alloc_detach(struct ember_source *s)
{
	for (int i = 0; i < s->nr_alloc_links; i++)
		bpf_link__destroy(s->alloc_links[i]);
	free(s->alloc_links);
	s->alloc_links = NULL;
	s->nr_alloc_links = s->cap_alloc_links = 0;
}

static struct bpf_program *alloc_prog(struct ember_source *s, uint32_t kind)
{
	switch (kind) {
	case EMBER_PROBE_SAMPLED_ALLOC:
		return s->skel->progs.ember_alloc;
	case EMBER_PROBE_SAMPLED_FREE:
		return s->skel->progs.ember_free;
	case EMBER_PROBE_ENTRY_SIZE_RDI:
		return s->skel->progs.ember_entry_rdi;
	case EMBER_PROBE_ENTRY_SIZE_RSI:
		return s->skel->progs.ember_entry_rsi;
	case EMBER_PROBE_ENTRY_NMEMB_SIZE:
		return s->skel->progs.ember_entry_nmemb;
	case EMBER_PROBE_ENTRY_SIZE_RDX:
		return s->skel->progs.ember_entry_rdx;
	case EMBER_PROBE_ENTRY_FREE:
		return s->skel->progs.ember_entry_free;
	case EMBER_PROBE_ENTRY_REALLOC:
		return s->skel->progs.ember_entry_realloc;
	default:
		return NULL;
	}
}

/* An allocator entry point whose return gives the block (in-use). */
static bool returns_block(uint32_t kind)
{
	return kind == EMBER_PROBE_ENTRY_SIZE_RDI ||
	       kind == EMBER_PROBE_ENTRY_SIZE_RSI ||
	       kind == EMBER_PROBE_ENTRY_NMEMB_SIZE ||
	       kind == EMBER_PROBE_ENTRY_SIZE_RDX ||
	       kind == EMBER_PROBE_ENTRY_REALLOC;
}

/*
 * Uprobes on the probe points of path (struct ember_alloc_probe, file
 * offsets), for process pid or every process that maps it (0): the
 * filters apply in the programs. The kernel raises each probe's semaphore
 * in those processes while it is attached. All or none.
 */
static int bpf_alloc_attach(struct ember_source *s, uint32_t pid,
			    const char *path,
			    const struct ember_alloc_probe *probes, size_t nr,
			    char *err, size_t err_len)
{
	int first = s->nr_alloc_links;

	if (!(s->cfg.events & EMBER_EV_ALLOC) || !s->running) {
		say(err, err_len, "allocation probes need a running session with -e alloc");
		return -EINVAL;
	}
	/* an entry point takes two links: its probe and its return's */
	if (!nr || nr > EMBER_MAX_ALLOC_PROBES ||
	    s->nr_alloc_links + 2 * nr > MAX_ALLOC_LINKS) {
		say(err, err_len, "%zu more allocation probes: at most %d at once, %d in all",
		    nr, EMBER_MAX_ALLOC_PROBES, MAX_ALLOC_LINKS);
		return -E2BIG;
	}
	if (s->nr_alloc_links + 2 * (int)nr > s->cap_alloc_links) {
		int cap = s->cap_alloc_links ? 2 * s->cap_alloc_links : 16;
		void *p;

		while (cap < s->nr_alloc_links + 2 * (int)nr)
			cap *= 2;
		p = realloc(s->alloc_links, cap * sizeof(*s->alloc_links));
		if (!p)
			return -ENOMEM;
		s->alloc_links = p;
		s->cap_alloc_links = cap;
	}
	for (size_t i = 0; i < nr; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, o,
			    .ref_ctr_offset = probes[i].ref_ctr_offset);
		struct bpf_program *prog = alloc_prog(s, probes[i].kind);
		struct bpf_link *l;
		int e;

		if (!prog) {
			say(err, err_len, "unknown allocation probe kind %u",
			    probes[i].kind);
			e = -EINVAL;
			goto undo;
		}
		l = bpf_program__attach_uprobe_opts(prog, pid ? (int)pid : -1,
						    path, probes[i].offset, &o);
		if (!l) {
			e = -errno;
			say(err, err_len, "cannot put a uprobe on %s+0x%llx: %s",
			    path, (unsigned long long)probes[i].offset,
			    strerror(-e));
			goto undo;
		}
		s->alloc_links[s->nr_alloc_links++] = l;
		if (!returns_block(probes[i].kind) || s->cfg.alloc_no_inuse)
			continue;
		/* where a sampled call's record gets its address */
		o.retprobe = true;
		o.ref_ctr_offset = 0;
		l = bpf_program__attach_uprobe_opts(s->skel->progs.ember_entry_ret,
						    pid ? (int)pid : -1, path,
						    probes[i].offset, &o);
		if (!l) {
			e = -errno;
			say(err, err_len, "cannot put a return probe on %s+0x%llx: %s",
			    path, (unsigned long long)probes[i].offset,
			    strerror(-e));
			goto undo;
		}
		s->alloc_links[s->nr_alloc_links++] = l;
		continue;
undo:
		while (s->nr_alloc_links > first)
			bpf_link__destroy(s->alloc_links[--s->nr_alloc_links]);
		return e;
	}
	return 0;
}

static int bpf_stop(struct ember_source *s)
{
	alloc_detach(s);
	for (int i = 0; i < s->nr_links; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	s->links = NULL;
	s->nr_links = 0;
	for (size_t i = 0; i < sizeof(s->tp_links) / sizeof(s->tp_links[0]); i++) {
		bpf_link__destroy(s->tp_links[i]);
		s->tp_links[i] = NULL;
	}
	s->running = false;
	return 0;
}

static int attach_tp(struct ember_source *s, int slot, struct bpf_program *btf,
		     struct bpf_program *raw)
{
	struct bpf_program *p = s->raw_tp ? raw : btf;

	s->tp_links[slot] = bpf_program__attach(p);
	return s->tp_links[slot] ? 0 : -errno;
}

/* Every period-th page fault on each CPU through the software event. */
static int attach_faults_perf(struct ember_source *s, uint32_t period)
{
	struct bpf_program *p = s->skel->progs.ember_faults;
	int fd, ret;

	for (int i = 0; i < s->nr_online; i++) {
		fd = perf_open_faults(s->online[i], period);
		if (fd < 0) {
			ret = -errno;
			fprintf(stderr, "ember: perf_event_open(page-faults) on CPU %d: %s\n",
				s->online[i], strerror(-ret));
			return ret;
		}
		s->links[s->nr_links] = bpf_program__attach_perf_event(p, fd);
		if (!s->links[s->nr_links]) {
			ret = -errno;
			close(fd);
			return ret;
		}
		s->nr_links++;
	}
	return 0;
}

/* Page faults through the tracepoints when asked, else the perf event. */
static int attach_faults(struct ember_source *s)
{
	static const char *const tps[] = { "page_fault_user", "page_fault_kernel" };
	struct bpf_program *p = s->skel->progs.ember_fault_tp;
	uint32_t period = s->cfg.fault_period ? s->cfg.fault_period :
			  EMBER_DEFAULT_FAULT_PERIOD;
	bool perf = !faults_hook_tp();
	int ret;

	for (int i = 0; i < 2 && !perf; i++) {
		s->tp_links[3 + i] = bpf_program__attach_raw_tracepoint(p, tps[i]);
		if (s->tp_links[3 + i])
			continue;
		ret = -errno;
		/* bpf_stop() drops the link already made */
		fprintf(stderr, "ember: bpf: cannot attach to the %s tracepoint: %s\n",
			tps[i], strerror(-ret));
		return ret;
	}
	if (getenv("EMBER_BPF_VERBOSE"))
		fprintf(stderr, "ember: bpf: page faults through %s, 1 in %u\n",
			perf ? "the perf software event" :
			"the page_fault_user/kernel tracepoints", period);
	return perf ? attach_faults_perf(s, period) : 0;
}

static int bpf_start(struct ember_source *s)
{
	const struct ember_source_config *cfg = &s->cfg;
	struct ember_bpf *k = s->skel;
	int ret = 0, fd;

	if (s->running)
		return -EBUSY;
	if (cfg->events & EMBER_EV_LIFECYCLE) {
		ret = attach_tp(s, 0, k->progs.ember_exec_btf, k->progs.ember_exec_raw);
		if (!ret)
			ret = attach_tp(s, 1, k->progs.ember_exit_btf, k->progs.ember_exit_raw);
		if (ret)
			goto fail;
	}
	if (cfg->events & EMBER_EV_OFFCPU) {
		ret = attach_tp(s, 2, k->progs.ember_switch_btf, k->progs.ember_switch_raw);
		if (ret)
			goto fail;
	}
	if (cfg->events & (EMBER_EV_ONCPU | EMBER_EV_FAULTS)) {
		s->links = calloc(2 * (size_t)s->nr_online, sizeof(*s->links));
		if (!s->links) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	if (cfg->events & EMBER_EV_ONCPU) {
		for (int i = 0; i < s->nr_online; i++) {
			fd = perf_open_clock(s->online[i], cfg->freq_hz,
					     s->clock_event == EMBER_CLOCK_CYCLES);
			if (fd < 0) {
				ret = -errno;
				fprintf(stderr, "ember: perf_event_open on CPU %d: %s\n",
					s->online[i], strerror(-ret));
				goto fail;
			}
			s->links[s->nr_links] =
				bpf_program__attach_perf_event(k->progs.ember_oncpu, fd);
			if (!s->links[s->nr_links]) {
				ret = -errno;
				close(fd);
				goto fail;
			}
			s->nr_links++;
		}
	}
	if (cfg->events & EMBER_EV_FAULTS) {
		ret = attach_faults(s);
		if (ret)
			goto fail;
	}
	s->running = true;
	return 0;
fail:
	bpf_stop(s);
	return ret;
}

/* New losses since the last poll become EMBER_REC_LOST records. */
static void report_lost(struct ember_source *s)
{
	struct ember_bpf_stats *st;
	struct ember_lost rec;
	uint32_t zero = 0;
	uint64_t now;

	st = calloc(s->nr_possible, sizeof(*st));
	if (!st)
		return;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &zero, st))
		goto out;
	now = mono_ns();
	for (int cpu = 0; cpu < s->nr_possible; cpu++) {
		if (st[cpu].lost <= s->lost_seen[cpu])
			continue;
		memset(&rec, 0, sizeof(rec));
		rec.hdr.type = EMBER_REC_LOST;
		rec.hdr.size = sizeof(rec);
		rec.time_ns = now;
		rec.lost = st[cpu].lost - s->lost_seen[cpu];
		rec.cpu = cpu;
		s->lost_seen[cpu] = st[cpu].lost;
		s->count++;
		s->fn(&rec.hdr, s->fn_ctx);
	}
out:
	free(st);
}

static int bpf_poll(struct ember_source *s, int timeout_ms, ember_record_fn fn,
		    void *ctx)
{
	int ret;

	s->fn = fn;
	s->fn_ctx = ctx;
	s->count = 0;
	if (s->rb) {
		ret = ring_buffer__poll(s->rb, timeout_ms);
		/* wake-ups are batched: take what is there even on timeout */
		if (ret >= 0)
			ret = ring_buffer__consume(s->rb);
	} else {
		ret = perf_buffer__poll(s->pb, timeout_ms);
		if (ret >= 0)
			ret = perf_buffer__consume(s->pb);
	}
	if (ret < 0 && ret != -EINTR)
		return ret;
	report_lost(s);
	if (ret == -EINTR && !s->count)
		return -EINTR;
	return s->count;
}

static int bpf_stats(struct ember_source *s, struct ember_source_stats *out)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	struct ember_bpf_stats st;
	int ret;

	memset(out, 0, sizeof(*out));
	out->nr_cpus = s->nr_online;
	out->corrupt = s->corrupt;
	ret = bpf_stats_sum(bpf_map__fd(s->skel->maps.stats), s->nr_possible, &st);
	if (ret)
		return ret;
	out->samples = st.samples;
	out->records = st.records;
	out->lost = st.lost;
	out->filtered = st.filtered;
	out->offcpu_overflow = st.offcpu_overflow;
	out->extra_records = st.unwind_miss;
	out->ustack_cfi = st.ustack_cfi;
	out->ustack_fp = st.ustack_fp;
	out->ustack_cut = st.ustack_cut;
	memset(&info, 0, sizeof(info));
	if (s->cfg.events & EMBER_EV_ONCPU &&
	    !bpf_obj_get_info_by_fd(bpf_program__fd(s->skel->progs.ember_oncpu), &info, &len))
		out->handler_ns = info.run_time_ns;
	return 0;
}

/*
 * Runs the kernel skipped because the same program was already running on
 * that CPU (bpf_prog_info.recursion_misses): a skipped sched_switch or
 * finish_task_switch run loses an off-CPU interval with no other trace.
 */
static void print_recursion_misses(struct ember_source *s)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, s->skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len) ||
		    !info.recursion_misses)
			continue;
		fprintf(stderr, "ember: bpf: %s: %llu runs skipped by the kernel (recursion)\n",
			bpf_program__name(prog), (unsigned long long)info.recursion_misses);
	}
}

/* EMBER_BPF_VERBOSE: counters the generic stats have no field for. */
static void print_extra_stats(struct ember_source *s)
{
	struct bpf_unwind_usage uu;
	struct ember_bpf_stats st;

	if (!bpf_stats_sum(bpf_map__fd(s->skel->maps.stats), s->nr_possible, &st)) {
		fprintf(stderr, "ember: bpf: %" PRIu64 " switches, %" PRIu64
			" off-CPU intervals whose end was never seen (%" PRIu64
			" recovered from CPU time)\n", (uint64_t)st.switches,
			(uint64_t)st.offcpu_stale, (uint64_t)st.offcpu_recovered);
		bpf_unwind_usage(s->uw, &uu);
		fprintf(stderr, "ember: bpf: user stacks by tables %" PRIu64 " (%" PRIu64
			" with frame-pointer steps, %" PRIu64 " cut), misses %" PRIu64
			" (%" PRIu64 " rate-limited); tables %u, processes %u, pools %"
			PRIu64 " of %" PRIu64 " KiB, %" PRIu64 " loads refused\n",
			(uint64_t)st.ustack_cfi, (uint64_t)st.ustack_fp,
			(uint64_t)st.ustack_cut, (uint64_t)st.unwind_miss,
			(uint64_t)st.unwind_miss_limited, uu.tables, uu.procs,
			uu.bytes_used / 1024, uu.bytes_cap / 1024, uu.load_refused);
	}
	print_recursion_misses(s);
}

static int bpf_op_unwind_load(struct ember_source *s, uint32_t id,
			      const void *table, size_t len, char *err,
			      size_t err_len)
{
	if (!s->uw) {
		say(err, err_len, "CFI unwinding is off in the eBPF backend");
		return -EOPNOTSUPP;
	}
	return bpf_unwind_load(s->uw, id, table, len, err, err_len);
}

static int bpf_op_unwind_drop(struct ember_source *s, uint32_t id)
{
	return s->uw ? bpf_unwind_drop(s->uw, id) : -EOPNOTSUPP;
}

static int bpf_op_unwind_bind(struct ember_source *s, uint32_t pid,
			      const struct ember_unwind_mapping *maps,
			      size_t nr, char *err, size_t err_len)
{
	if (!s->uw) {
		say(err, err_len, "CFI unwinding is off in the eBPF backend");
		return -EOPNOTSUPP;
	}
	return bpf_unwind_bind(s->uw, pid, maps, nr, err, err_len);
}

static void bpf_close(struct ember_source *s)
{
	if (!s)
		return;
	if (s->skel && getenv("EMBER_BPF_VERBOSE"))
		print_extra_stats(s);
	bpf_stop(s);
	bpf_unwind_free(s->uw);
	bpf_link__destroy(s->back_link);
	ring_buffer__free(s->rb);
	perf_buffer__free(s->pb);
	ember_bpf__destroy(s->skel);
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	free(s->online);
	free(s->lost_seen);
	free(s->bounce);
	free(s);
}

const struct ember_source_ops ember_source_bpf = {
	.name = "bpf",
	.probe = bpf_probe,
	.open = bpf_open,
	.start = bpf_start,
	.poll = bpf_poll,
	.set_filter = bpf_set_filter,
	.alloc_attach = bpf_alloc_attach,
	.stats = bpf_stats,
	.stop = bpf_stop,
	.close = bpf_close,
	.unwind_load = bpf_op_unwind_load,
	.unwind_drop = bpf_op_unwind_drop,
	.unwind_bind = bpf_op_unwind_bind,
	.alloc_pid_follows_exec = true,
};
