/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The eBPF backend's own definitions, shared by its files and by no one
 * else (the rest of the agent sees only ember_source_bpf, source.h):
 *   source_bpf.c            probe, open (load with fallbacks), start,
 *                           poll (the reader), stats, stop, close
 *   source_bpf_oncpu.c      on-CPU: cpu-clock or cycles perf events
 *   source_bpf_offcpu.c     off-CPU: the designs, the switch-in hook
 *   source_bpf_faults.c     page faults: perf event or tracepoints
 *   source_bpf_alloc.c      allocation uprobes
 *   source_bpf_lifecycle.c  exec and exit tracepoints, mmap records
 *   source_bpf_lock.c       lock contention: futex, lock:contention_*,
 *                           sched_waking
 *   source_bpf_filter.c     pid and cgroup filters
 *   source_bpf_python.c     Python frames: the py_procs map (py_bind)
 * Calls go one way, from source_bpf.c to the others: what they share
 * (say(), the tracefs helpers, attach_tp(), attach_perf_link()) is static
 * inline here.
 */
#ifndef EMBER_SOURCE_BPF_INTERNAL_H
#define EMBER_SOURCE_BPF_INTERNAL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "source/source.h"
#include "source/source_bpf_unwind.h"
#include "ember_bpf.h"
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

/* The off-CPU designs, cheapest first (source_bpf_offcpu.c says why). */
enum offcpu_mode {
	OFFCPU_FENTRY,
	OFFCPU_KPROBE,
	OFFCPU_EXIT_TP,
	OFFCPU_PARKED,
};

/* EMBER_REC_MMAP's hook (source_bpf_lifecycle.c), tried in this order */
enum mmap_mode {
	MMAP_FEXIT,		/* fexit/mmap_region */
	MMAP_KPROBE,		/* kprobe/perf_event_mmap */
	MMAP_TP,		/* sys_exit_mmap + exec, bpf_find_vma (5.17+) */
	MMAP_OFF,		/* none: /proc for every process */
};

struct ember_source {
	struct ember_bpf *skel;
	struct ring_buffer *rb;
	struct perf_buffer *pb;
	int wake_fd;			/* cuts bpf_poll()'s wait short */
	struct bpf_link **links;	/* perf_event links: per online CPU, per event */
	int nr_links;
	struct bpf_link *tp_links[7];	/* exec, exit, switch, 2 fault tps, 2 mmap */
	/* allocation probes (EMBER_EV_ALLOC), attach..stop */
	struct bpf_link **alloc_links;
	int nr_alloc_links, cap_alloc_links;
	struct bpf_link *back_link;	/* deferred off-CPU hook, open..close */
	struct bpf_link *lock_links[8];	/* -e lock: source_bpf_lock.c */
	uint64_t lock_caps;		/* EMBER_CAP_LOCK_* that run here */
	bool lock_said;			/* what is missing was said once */
	bool faults_probed;		/* faults_tp decided (once per open) */
	bool faults_tp;			/* page faults by tracepoints */
	bool running;
	bool use_perfbuf;
	bool raw_tp;			/* tp_btf refused: raw_tp flavour */
	enum offcpu_mode offcpu_mode;
	enum mmap_mode mmap_mode;
	char back_sym[256];		/* finish_task_switch in kallsyms */
	int stats_fd;			/* BPF_ENABLE_STATS, -1 if refused */
	struct ember_source_config cfg;
	uint32_t clock_event;		/* enum ember_clock_event in use */
	int nr_possible;
	int *online;			/* online CPU numbers */
	int nr_online;
	uint64_t *lost_seen;		/* per possible CPU */
	uint64_t lost_read_ns;		/* when report_lost() last read them */
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

/* The message of a failure, for the caller's buffer (may be NULL). */
static inline void say(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/*
 * A tracepoint with a BTF type (btf_trace_NAME): tp_btf and raw_tp can
 * attach to it. Found in the kernel's BTF, no tracefs needed.
 */
static inline bool kernel_has_raw_tp(const char *name)
{
	char type[128];
	struct btf *btf = btf__load_vmlinux_btf();
	bool found;

	if (!btf)
		return false;
	snprintf(type, sizeof(type), "btf_trace_%s", name);
	found = btf__find_by_name_kind(btf, type, BTF_KIND_TYPEDEF) > 0;
	btf__free(btf);
	return found;
}

/* A syscall tracepoint in tracefs (where libbpf attaches it from). */
static inline bool tracefs_has_syscall_tp(const char *name)
{
	static const char *const roots[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[256];

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/syscalls/%s", roots[i], name);
		if (!access(path, F_OK))
			return true;
	}
	return false;
}

/*
 * Syscall tracepoints attach by their tracefs id, so tracefs must be
 * mounted. systemd mounts it at boot; a container, a minimal image or a
 * fresh cloud VM often has nothing there: every -e lock session then
 * failed with a bare ENOENT, and mapping records (sys_exit_mmap) were
 * left out, every new process's maps read from /proc. Mount it where the
 * kernel reserves the directory, as perf does, and say what to do when
 * that is refused (a seccomp or systemd sandbox, a read-only /sys).
 * for_what names the feature in the messages.
 */
static inline void tracefs_ensure(const char *for_what)
{
	struct stat st;

	if (!stat("/sys/kernel/tracing/events", &st) ||
	    !stat("/sys/kernel/debug/tracing/events", &st))
		return;
	if (stat("/sys/kernel/tracing", &st) || !S_ISDIR(st.st_mode))
		return;		/* no tracefs in this kernel: said later */
	if (!mount("tracefs", "/sys/kernel/tracing", "tracefs",
		   MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) {
		fprintf(stderr, "ember: bpf: tracefs was not mounted: mounted it at /sys/kernel/tracing for %s\n",
			for_what);
		return;
	}
	if (errno != EBUSY)
		fprintf(stderr, "ember: bpf: %s needs tracefs and mounting it failed (%s): "
			"run `mount -t tracefs tracefs /sys/kernel/tracing` first\n",
			for_what, strerror(errno));
}

/* A scheduler tracepoint's program, tp_btf or raw_tp as loaded. */
static inline int attach_tp(struct ember_source *s, int slot,
			    struct bpf_program *btf, struct bpf_program *raw)
{
	struct bpf_program *p = s->raw_tp ? raw : btf;

	s->tp_links[slot] = bpf_program__attach(p);
	return s->tp_links[slot] ? 0 : -errno;
}

/*
 * A perf event's fd to prog, into s->links (sized by the caller). On
 * failure the fd is closed and -errno returned; on success the link owns it.
 */
static inline int attach_perf_link(struct ember_source *s,
				   struct bpf_program *prog, int fd)
{
	int ret;

	s->links[s->nr_links] = bpf_program__attach_perf_event(prog, fd);
	if (!s->links[s->nr_links]) {
		ret = -errno;
		close(fd);
		return ret;
	}
	s->nr_links++;
	return 0;
}

/*
 * Each concern, before load (the skeleton is open, configured by
 * source_bpf.c: transport, frame limits) and at start. The attach
 * functions return 0 or -errno; source_bpf.c undoes what was made.
 */
void bpf_oncpu_configure(struct ember_source *s, struct ember_bpf *skel);
void bpf_oncpu_pick_clock(struct ember_source *s);
int bpf_oncpu_attach(struct ember_source *s);
int bpf_perf_open_clock(int cpu, uint32_t freq, bool cycles);

extern const char *const bpf_offcpu_mode_short[];
extern const char *const bpf_offcpu_mode_name[];
void bpf_offcpu_scan_kallsyms(struct ember_source *s);
void bpf_offcpu_strip_sched_frames(struct ember_source *s,
				   struct ember_sample *smp);
void bpf_offcpu_configure(struct ember_source *s, struct ember_bpf *skel);
int bpf_offcpu_attach_back(struct ember_source *s);
int bpf_offcpu_attach(struct ember_source *s);

void bpf_faults_configure(struct ember_source *s, struct ember_bpf *skel);
int bpf_faults_attach(struct ember_source *s);

void bpf_alloc_configure(struct ember_source *s, struct ember_bpf *skel);
int bpf_alloc_loaded(struct ember_source *s);
int bpf_alloc_attach(struct ember_source *s, uint32_t pid, const char *path,
		     const struct ember_alloc_probe *probes, size_t nr,
		     char *err, size_t err_len);
void bpf_alloc_detach(struct ember_source *s);

void bpf_lifecycle_configure(struct ember_source *s, struct ember_bpf *skel);
int bpf_lifecycle_attach(struct ember_source *s);
enum mmap_mode bpf_mmap_first(struct ember_source *s);
enum mmap_mode bpf_mmap_next(enum mmap_mode m);

void bpf_lock_configure(struct ember_source *s, struct ember_bpf *skel);
int bpf_lock_attach(struct ember_source *s);
void bpf_lock_detach(struct ember_source *s);

int bpf_set_filter(struct ember_source *s, const uint32_t *pids,
		   size_t nr_pids, uint64_t cgroup_id);

void bpf_python_configure(struct ember_source *s, struct ember_bpf *skel);
int bpf_py_proc_check(const struct ember_py_proc *p, char *err, size_t err_len);
int bpf_py_bind(struct ember_source *s, uint32_t pid,
		const struct ember_py_proc *py, char *err, size_t err_len);
void bpf_python_clear(struct ember_source *s);

#endif /* EMBER_SOURCE_BPF_INTERNAL_H */
