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

 */
enum offcpu_mode {
	OFFCPU_FENTRY,
	OFFCPU_KPROBE,
	OFFCPU_EXIT_TP,
	OFFCPU_PARKED,
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
