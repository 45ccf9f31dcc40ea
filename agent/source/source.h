/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A source of ember records: the kernel module (source_kmod.c) or the eBPF
 * backend (source_bpf.c). Everything above this interface (aggregation,
 * symbolization, outputs) is backend-agnostic: it sees records in the
 * shared UAPI format (include/uapi/ember.h) and nothing else.
 */
#ifndef EMBER_SOURCE_H
#define EMBER_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "uapi/ember.h"

struct ember_source_config {
	uint32_t events;		/* EMBER_EV_* */
	uint32_t freq_hz;
	bool use_cycles;		/* ask for hardware cycles */
	bool include_idle;
	uint32_t kstack_max;		/* frames, 0 = no kernel stacks */
	uint32_t ustack_max;
	const uint32_t *pids;		/* tgid filter, NULL/0 = all */
	size_t nr_pids;
	uint64_t cgroup_id;		/* cgroup v2 id filter, 0 = all */
	uint64_t offcpu_min_ns;
	uint32_t offcpu_sample_ppm;	/* 0 = keep all */
	uint32_t fault_period;		/* page faults per sample, 0 = default */
	uint64_t alloc_rate;		/* bytes per allocation sample, 0 = default */
	bool alloc_no_inuse;		/* entry probes not followed to free */
	uint64_t lock_min_ns;		/* EMBER_EV_LOCK: shorter waits dropped */
	bool lock_waker;		/* ... and EMBER_REC_LOCK_WAKER records */
	uint32_t ring_bytes;		/* per CPU, 0 = backend default */
	/* MiB of kernel memory the backend may hold, 0 = from RAM (kmem_budget.h) */
	uint32_t kernel_mem_mb;
	/*
	 * Test mode: follow each sample with EMBER_REC_USER_STACK (the user
	 * registers and EMBER_STACK_COPY_MAX bytes of stack) for the oracle.
	 */
	bool stack_copy;
	/*
	 * EMBER_A_STACK_COPY: bytes of user stack copied ahead of each
	 * sample whose user walk was cut or ran without tables, for the
	 * session's replay (unwind/stack_replay.h); 0 = none.
	 */
	uint32_t stack_copy_bytes;
	/* frame pointers only: allocate nothing for unwind tables */
	bool no_unwind_tables;
	/*
	 * aarch64: the kernel's pointer-authentication mask of user code
	 * addresses (proc_pac_insn_mask(), filled by the session); the eBPF
	 * unwinder strips return addresses with it. 0: none (x86_64).
	 */
	uint64_t pac_mask;
};

struct ember_source_stats {
	uint64_t samples;		/* sample handler invocations */
	uint64_t records;		/* records produced */
	uint64_t lost;			/* records the producer dropped */
	uint64_t filtered;
	uint64_t handler_ns;		/* time in the sample handler, if known */
	uint64_t offcpu_overflow;
	/* EMBER_EV_LOCK: waits seen, in-flight table full, waker records */
	uint64_t lock_waits, lock_overflow, lock_wakers;
	/*
	 * Records produced that are not samples: unwind misses (they are in
	 * records or lost like the rest).
	 */
	uint64_t extra_records;
	/* user stacks unwound with tables, with an FP step, cut short */
	uint64_t ustack_cfi, ustack_fp, ustack_cut;
	uint32_t nr_cpus;
	/*
	 * Records the reader itself skipped because their size was out of
	 * bounds (they never reach the callback); the session reports them
	 * with the invalid ones as bad records.
	 */
	uint64_t corrupt;
};

/*
 * Called for each record read from a ring. len is the number of bytes the
 * reader verified to be readable (== rec->size for well-formed records; a
 * source never hands out a record whose size is out of bounds).
 */
typedef void (*ember_record_fn)(const struct ember_rec_header *rec,
				void *ctx);

struct ember_source;

struct ember_source_ops {
	const char *name;		/* "kmod" or "bpf" */
	/*
	 * Can this backend run here? Returns 0, or a negative errno with a
	 * sentence in why (what is missing and what to do).
	 */
	int (*probe)(char *why, size_t why_len);
	int (*open)(struct ember_source **out,
		    const struct ember_source_config *cfg,
		    char *err, size_t err_len);
	int (*start)(struct ember_source *src);
	/*
	 * Wait up to timeout_ms for data, then drain every ring, calling fn
	 * for each record. Returns the number of records or a negative errno
	 * (-EINTR when a signal arrived: not an error for the caller).
	 */
	int (*poll)(struct ember_source *src, int timeout_ms,
		    ember_record_fn fn, void *ctx);
	/*
	 * From another thread: a poll() waiting returns now, and the next
	 * one does not wait if none was (optional; async-signal-safe).
	 */
	void (*wake)(struct ember_source *src);
	int (*set_filter)(struct ember_source *src, const uint32_t *pids,
			  size_t nr_pids, uint64_t cgroup_id);
	int (*stats)(struct ember_source *src, struct ember_source_stats *st);
	int (*stop)(struct ember_source *src);
	void (*close)(struct ember_source *src);	/* stops if running */
	/*
	 * CFI unwinding (NULL when the backend has none). Called from the
	 * unwind worker thread while another thread polls: implementations
	 * must not share state with poll() without their own locking.
	 * unwind_load hands over a table (include/uapi/ember.h) already
	 * checked by ember_unwind_table_check(); the backend keeps its own
	 * copy. unwind_bind replaces a process's mappings (sorted by start,
	 * disjoint; nr 0 unbinds it). All return 0 or a negative errno with a
	 * sentence in err.
	 */
	int (*unwind_load)(struct ember_source *src, uint32_t table_id,
			   const void *table, size_t len,
			   char *err, size_t err_len);
	int (*unwind_drop)(struct ember_source *src, uint32_t table_id);
	int (*unwind_bind)(struct ember_source *src, uint32_t pid,
			   const struct ember_unwind_mapping *maps, size_t nr,
			   char *err, size_t err_len);
	/*
	 * Allocation probes (EMBER_EV_ALLOC, NULL when the backend has
	 * none): uprobes on the file path at the probes' file offsets, for
	 * process pid only, or every process mapping it when pid is 0 (the
	 * filters apply), until stop(). All or none; 0 or a negative errno
	 * with a sentence in err. With pid, the entry points come with
	 * EMBER_PROBE_ENTRY_FREE/REALLOC for in-use, unless
	 * alloc_follows_free says the backend cannot follow blocks to their
	 * free: then the caller passes the entry points alone
	 * (alloc_probes_without_inuse()), and the backend, on success,
	 * says so in err (left as it was otherwise).
	 */
	int (*alloc_attach)(struct ember_source *src, uint32_t pid,
			    const char *path,
			    const struct ember_alloc_probe *probes, size_t nr,
			    char *err, size_t err_len);
	/* Whether alloc_attach for a pid can take frees; NULL: it can. */
	bool (*alloc_follows_free)(struct ember_source *src);
	/*
	 * Whether alloc_attach's probes for a pid stay with it across an
	 * exec (per task, eBPF) rather than end with its address space
	 * (the module): decides whether an exec'd process needs them again.
	 */
	bool alloc_pid_follows_exec;
	/*
	 * EMBER_EV_LOCK: which of EMBER_CAP_LOCK_FUTEX, _KERNEL and _WAITV
	 * the opened source records on this kernel (the session says in one
	 * line what is missing); NULL: the backend does not say.
	 */
	uint64_t (*lock_caps)(struct ember_source *src);
	/*
	 * Python frames (NULL when the backend has none): where CPython's
	 * frames are in process pid (include/uapi/ember.h, "Python
	 * frames"); py NULL unbinds it. Called from the unwind worker like
	 * unwind_bind. 0 or a negative errno with a sentence in err.
	 */
	int (*py_bind)(struct ember_source *src, uint32_t pid,
		       const struct ember_py_proc *py,
		       char *err, size_t err_len);
};

extern const struct ember_source_ops ember_source_kmod;
extern const struct ember_source_ops ember_source_bpf;

/*
 * Record validation shared by every reader: returns true when a record of
 * hdr->size bytes at this position is well-formed for its type (size bounds,
 * frame counts that fit, NUL-terminated strings). Defined in record.c.
 */
bool ember_record_valid(const struct ember_rec_header *hdr, size_t avail);
/* Whether records of this type are a struct ember_sample (a stack). */
bool ember_record_has_stack(uint16_t type);
/*
 * The valid sample s with its user frames replaced by user[0..n), its
 * trailer kept, written into d (room for 2 * EMBER_MAX_FRAMES + 3 frames
 * after the header; user may already be at d->ips + s->nr_kernel): d, or
 * NULL when n is over EMBER_MAX_FRAMES or s's trailer is not a sample's.
 * Flags are s's: the caller says what the new frames are.
 */
struct ember_sample *ember_sample_with_user(const struct ember_sample *s,
					    const uint64_t *user,
					    unsigned int n,
					    struct ember_sample *d);

#endif /* EMBER_SOURCE_H */
