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
 * This file is the backend's core: probe, open (the skeleton loaded with
 * its fallbacks: tp_btf before raw_tp, the off-CPU designs in order),
 * start, the reader, stats, stop, close, and the ops table at its end.
 * Each concern's settings and attach code is its own file, as the BPF
 * side is split (source_bpf_internal.h lists them; calls go one way,
 * from here to them); the unwind tables' maps are source_bpf_unwind.c,
 * `ember status` status_bpf.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/clock.h"
#include "lib/wake_fd.h"
#include "source/kmem_budget.h"
#include "source/source_bpf_internal.h"
#include "source/bpf_stats.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON	38
#endif
#ifndef CAP_BPF
#define CAP_BPF		39
#endif

static void unwind_maps(struct ember_bpf *skel, struct bpf_unwind_maps *m)
{
	m->pages = skel->maps.uw_pages;
	m->rows = skel->maps.uw_rows;
	m->rules = skel->maps.uw_rules;
	m->tables = skel->maps.uw_tables;
	m->procs = skel->maps.uw_procs;
	m->proc_slots = skel->maps.uw_proc_slots;
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
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL) != 1 &&
	    errno == ENOSYS) {
		say(why, why_len,
		    "this kernel has no bpf() system call (built without CONFIG_BPF_SYSCALL): "
		    "use the kernel module backend, or a kernel with BPF and BTF");
		return -ENOSYS;
	}
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL) != 1) {
		say(why, why_len,
		    "the kernel refused to load a BPF perf_event program (%s): bpf() may be disabled "
		    "(lockdown=confidentiality, a seccomp policy or an LSM); use the kernel module backend",
		    strerror(errno));
		return -EPERM;
	}
	fd = bpf_perf_open_clock(0, EMBER_DEFAULT_FREQ, false);
	if (fd < 0) {
		int err = errno;

		if (err == ENOSYS)
			say(why, why_len,
			    "this kernel has no perf events (built without CONFIG_PERF_EVENTS), "
			    "which on-CPU sampling needs in both backends: use a kernel with "
			    "CONFIG_PERF_EVENTS=y");
		else if (err == ENOENT || err == ENODEV || err == EOPNOTSUPP)
			say(why, why_len,
			    "perf_event_open(cpu-clock) failed: %s: this kernel's perf events "
			    "have no software clock event to sample with",
			    strerror(err));
		else
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
		bpf_offcpu_strip_sched_frames(s, (void *)hdr);
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
	if (!(cfg->events & (EMBER_EV_ONCPU | EMBER_EV_OFFCPU | EMBER_EV_LIFECYCLE |
			     EMBER_EV_LOCK))) {
		say(err, err_len, "no event asked (on-CPU, off-CPU, lock or lifecycle)");
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
	struct kmem_budget kb;

	kmem_budget_get(cfg->kernel_mem_mb, &kb);

	if (sysmax > 0 && (cfg->kstack_max > sysmax || cfg->ustack_max > sysmax))
		fprintf(stderr,
			"ember: kernel.perf_event_max_stack=%ld caps BPF stacks below the %u/%u frames asked "
			"(raise it with sysctl for deeper stacks)\n",
			sysmax, cfg->kstack_max, cfg->ustack_max);

	skel->rodata->use_perfbuf = s->use_perfbuf;
	/* aarch64 PAC bits, stripped from every return address */
	skel->rodata->pac_mask = cfg->pac_mask;
	skel->rodata->kstack_max = cfg->kstack_max < kreq ? cfg->kstack_max : kreq;
	skel->rodata->kstack_req = kreq;
	skel->rodata->ustack_max = cfg->ustack_max < ureq ? cfg->ustack_max : ureq;
	skel->rodata->ustack_req = ureq;

	if (s->use_perfbuf) {
		skel->rodata->wakeup_bytes = ring / 4;
		bpf_map__set_max_entries(skel->maps.ringbuf, 4096);
	} else {
		/* one ring for all CPUs: the default stays bounded on big hosts */
		ring *= s->nr_online;
		if (!cfg->ring_bytes && ring > DEFAULT_RING_MAX)
			ring = DEFAULT_RING_MAX;
		/* a quarter of it at an 8 MiB budget (19 Hz needs far less) */
		if (!cfg->ring_bytes)
			ring = kmem_scale(&kb, ring, 64u << 10);
		ring = pow2_at_least(ring);
		skel->rodata->wakeup_bytes = ring / 4;
		bpf_map__set_max_entries(skel->maps.ringbuf, ring);
	}

	{
		struct bpf_unwind_maps um;

		unwind_maps(skel, &um);
		bpf_unwind_size(&um, &kb, !cfg->no_unwind_tables, cfg->nr_pids > 0);
	}
	/* each concern, after the frame limits (off-CPU sizes from them) */
	bpf_oncpu_configure(s, skel);
	bpf_faults_configure(s, skel);
	bpf_offcpu_configure(s, skel);
	bpf_alloc_configure(s, skel);
	bpf_lifecycle_configure(s, skel);
	bpf_lock_configure(s, skel);
	bpf_python_configure(s, skel);
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
		if (force_mode && off && strcmp(bpf_offcpu_mode_short[a->mode], force_mode))
			continue;
		/* without off-CPU the mode is irrelevant: each tp flavour once */
		if (!off && a->mode != (a->raw_tp ? OFFCPU_KPROBE : OFFCPU_FENTRY))
			continue;
		if (off && a->mode == OFFCPU_KPROBE && !s->back_sym[0])
			continue;
		s->raw_tp = a->raw_tp;
		s->offcpu_mode = a->mode;
		/* the mapping hook's flavours first: never worth a flavour of
		 * everything else (mmap_mode only moves towards MMAP_OFF) */
		for (s->mmap_mode = bpf_mmap_first(s); ;
		     s->mmap_mode = bpf_mmap_next(s->mmap_mode)) {
			s->skel = ember_bpf__open();
			if (!s->skel) {
				ret = -errno;
				break;
			}
			configure(s, s->skel);
			ret = ember_bpf__load(s->skel);
			if (!ret)
				ret = bpf_alloc_loaded(s);
			if (!ret && off)
				ret = bpf_offcpu_attach_back(s);
			if (!ret || s->mmap_mode == MMAP_OFF)
				break;
			ember_bpf__destroy(s->skel);
			s->skel = NULL;
		}
		if (!ret)
			break;
		if (s->skel)
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
			fprintf(stderr, "ember: bpf: %s tracepoints, off-CPU stacks %s, mappings %s, %s transport\n",
				s->raw_tp ? "raw_tp" : "tp_btf",
				off ? bpf_offcpu_mode_name[s->offcpu_mode] : "unused",
				s->mmap_mode == MMAP_FEXIT ? "fexit/mmap_region" :
				s->mmap_mode == MMAP_KPROBE ? "kprobe/perf_event_mmap" :
				s->mmap_mode == MMAP_TP ? "sys_exit_mmap+exec" : "from /proc",
				s->use_perfbuf ? "perf buffer" : "ring buffer");
		return 0;
	}
	fprintf(stderr, "%s", libbpf_log);
	say(err, err_len,
	    "the kernel refused ember's BPF programs (%s); the libbpf messages above say why",
	    strerror(-ret));
	return ret ? ret : -EINVAL;
}

static void bpf_close(struct ember_source *s);

static int bpf_open(struct ember_source **out, const struct ember_source_config *cfg,
		    char *err, size_t err_len)
{
	const char *transport = getenv("EMBER_BPF_TRANSPORT");
	struct ember_source *s;
	size_t ring_pages;
	int ret;

	ret = check_config(cfg, err, err_len);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->cfg.pids = NULL;
	s->stats_fd = -1;
	s->wake_fd = wake_fd_open();
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

	bpf_oncpu_pick_clock(s);
	if (cfg->events & EMBER_EV_OFFCPU)
		bpf_offcpu_scan_kallsyms(s);
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

static int bpf_stop(struct ember_source *s)
{
	bpf_alloc_detach(s);
	bpf_lock_detach(s);
	bpf_python_clear(s);
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

static int bpf_start(struct ember_source *s)
{
	const struct ember_source_config *cfg = &s->cfg;
	int ret;

	if (s->running)
		return -EBUSY;
	ret = bpf_lifecycle_attach(s);
	if (!ret)
		ret = bpf_offcpu_attach(s);
	if (!ret)
		ret = bpf_lock_attach(s);
	if (ret)
		goto fail;
	if (cfg->events & (EMBER_EV_ONCPU | EMBER_EV_FAULTS)) {
		s->links = calloc(2 * (size_t)s->nr_online, sizeof(*s->links));
		if (!s->links) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	ret = bpf_oncpu_attach(s);
	if (!ret)
		ret = bpf_faults_attach(s);
	if (ret)
		goto fail;
	s->running = true;
	return 0;
fail:
	bpf_stop(s);
	return ret;
}

/*
 * New losses become EMBER_REC_LOST records. The stats map is read at most
 * every LOST_READ_NS, and at every drain (timeout 0: what the backend
 * holds at stop is counted): each read is a syscall copying every
 * possible CPU's counters, and every poll read them (20 a second idle,
 * hundreds busy).
 */
#define LOST_READ_NS	100000000ull

static void report_lost(struct ember_source *s, bool drain)
{
	struct ember_bpf_stats *st;
	struct ember_lost rec;
	uint32_t zero = 0;
	uint64_t now = mono_ns();

	if (!drain && now - s->lost_read_ns < LOST_READ_NS)
		return;
	s->lost_read_ns = now;
	st = calloc(s->nr_possible, sizeof(*st));
	if (!st)
		return;
	if (bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stats), &zero, st))
		goto out;
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

/*
 * Wait up to timeout_ms for the rings (libbpf's epoll set of them) or a
 * wake-up from another thread (bpf_wake()): 0 or -errno.
 */
static int wait_rings(struct ember_source *s, int timeout_ms)
{
	struct pollfd pfd[2] = {
		{ .fd = s->rb ? ring_buffer__epoll_fd(s->rb) :
				perf_buffer__epoll_fd(s->pb), .events = POLLIN },
		{ .fd = s->wake_fd, .events = POLLIN },	/* -1: ignored */
	};

	if (!timeout_ms)
		return 0;
	if (poll(pfd, 2, timeout_ms) < 0)
		return -errno;
	if (pfd[1].revents & POLLIN)
		wake_fd_clear(s->wake_fd);
	return 0;
}

static void bpf_wake(struct ember_source *s)
{
	wake_fd_signal(s->wake_fd);
}

static int bpf_poll(struct ember_source *s, int timeout_ms, ember_record_fn fn,
		    void *ctx)
{
	int ret;

	s->fn = fn;
	s->fn_ctx = ctx;
	s->count = 0;
	ret = wait_rings(s, timeout_ms);
	/* wake-ups are batched: take what is there even on timeout */
	if (ret >= 0)
		ret = s->rb ? ring_buffer__consume(s->rb) :
			      perf_buffer__consume(s->pb);
	if (ret < 0 && ret != -EINTR)
		return ret;
	report_lost(s, timeout_ms <= 0);
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
	out->lock_waits = st.lock_waits;
	out->lock_overflow = st.lock_overflow;
	out->lock_wakers = st.lock_wakers;
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
	if (s->wake_fd >= 0)
		close(s->wake_fd);
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
	.wake = bpf_wake,
	.set_filter = bpf_set_filter,
	.alloc_attach = bpf_alloc_attach,
	.stats = bpf_stats,
	.stop = bpf_stop,
	.close = bpf_close,
	.unwind_load = bpf_op_unwind_load,
	.unwind_drop = bpf_op_unwind_drop,
	.unwind_bind = bpf_op_unwind_bind,
	.py_bind = bpf_py_bind,
	.alloc_pid_follows_exec = true,
};
