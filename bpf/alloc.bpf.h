/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/alloc.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * Allocations (EMBER_EV_ALLOC): the uprobes on the preloaded sampler's
 * probes (ember_alloc, ember_free) and on an allocator's entry points
 * (ember_entry_*: sampling countdown in BPF, in-use tracking through the
 * uretprobe ember_entry_ret and the free probes).
 */
#ifndef EMBER_ALLOC_BPF_H
#define EMBER_ALLOC_BPF_H

#include "common.bpf.h"
#include "filter.bpf.h"
#include "record.bpf.h"
#include "stack.bpf.h"

/*
 * Allocation probes (EMBER_EV_ALLOC): uprobes the agent puts on
 * preload/ember_alloc.c's ember_alloc_probe(ptr, size, weight) and
 * ember_free_probe(ptr), which only sampled calls reach (the sampling
 * decision is made in the process, before any trap). The user stack is
 * the probe's caller chain; the agent trims the sampler's own frames.
 */
/* A uprobe's context: the user registers (arch.bpf.h's uapi_regs). */
#define R(ctx)	((const struct uapi_regs *)(ctx))

/*
 * An EMBER_REC_ALLOC for the current task in its CPU's scratch slot, its
 * user stack unwound from the uprobe's registers, when the filters pass:
 * weight bytes (0: the reader scales it by the rate), the block's address
 * (0: not followed) and size. NULL when filtered or it does not fit.
 */
static __always_inline struct ember_sample *build_alloc(void *ctx,
							 __u64 weight,
							 __u64 addr,
							 __u64 size)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct ember_bpf_stats *st = get_stats();
	struct uw_regs *ur;
	struct scratch *sc;
	struct ember_sample *s;
	__u32 at;

	if (!st)
		return NULL;
	if (!pass_filters(task, tgid)) {
		st->filtered++;
		return NULL;
	}
	st->alloc_hits++;
	sc = get_scratch(EMBER_SLOT_ALLOC);
	ur = uw_regs_slot(EMBER_SLOT_ALLOC);
	if (!sc || !ur)
		return NULL;
	s = (void *)sc;
	fill_common(s, EMBER_REC_ALLOC, bpf_ktime_get_ns(), tgid, tid);
	s->weight_ns = weight;
	arch_uw_regs(R(ctx), ur);
	s->flags = fill_stacks(ctx, s, false, true, EMBER_SLOT_ALLOC, ur);
	/* the block's address and size follow the frames */
	at = s->nr_kernel + s->nr_user;
	if (at > EMBER_BPF_SCRATCH_FRAMES - 2)
		return NULL;
	sc->raw[SCRATCH_IPS + at] = addr;
	sc->raw[SCRATCH_IPS + at + 1] = size;
	s->hdr.size += 2 * sizeof(__u64);
	if (s->hdr.size > sizeof(*sc))
		return NULL;
	return s;
}

/*
 * One program builds every allocation record (ember_alloc_record): the
 * probes are many (the sampler's, five entry points) and each with an
 * unwinder inlined took the verifier 0.12-0.15 s on the host, 0.85 s
 * before `-e alloc -p` could probe anything (longer than a 1.5 s
 * program lived in CI). The probes leave their arguments in their CPU's
 * alloc_args and tail-call it; a uprobe is not migrated while it runs.
 */
/* What ember_alloc_record does with the record (alloc_args.park) */
#define ALLOC_EMIT		0	/* into the ring now */
#define ALLOC_PARK		1	/* in alloc_pending until the return */
#define ALLOC_PARK_MEMPTR	2	/* ... which stores the address at addr */

struct alloc_args {
	__u64 weight;			/* 0: the reader scales by the rate */
	__u64 addr;			/* the block, or memptr (ALLOC_PARK_MEMPTR) */
	__u64 size;
	__u64 park;			/* ALLOC_EMIT, ALLOC_PARK* */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct alloc_args);
} alloc_args SEC(".maps");

/* slot 0: ember_alloc_record, put there by the loader after the load */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} alloc_tail SEC(".maps");

static __always_inline int alloc_record(void *ctx, __u64 weight, __u64 addr,
					__u64 size, __u64 park)
{
	struct ember_bpf_stats *st;
	struct alloc_args *a;
	__u32 zero = 0;

	a = bpf_map_lookup_elem(&alloc_args, &zero);
	if (!a)
		return 0;
	a->weight = weight;
	a->addr = addr;
	a->size = size;
	a->park = park;
	bpf_tail_call(ctx, &alloc_tail, 0);
	/* only with an empty slot (a loader bug): the record is lost */
	st = get_stats();
	if (st)
		st->lost++;
	return 0;
}

SEC("uprobe")
int ember_alloc(void *ctx)
{
	/* ember_alloc_probe(ptr, size, weight) */
	return alloc_record(ctx, ARCH_ARG3(R(ctx)), ARCH_ARG1(R(ctx)),
			    ARCH_ARG2(R(ctx)), ALLOC_EMIT);
}

/*
 * An allocator's entry point in a process without the sampler
 * (EMBER_PROBE_ENTRY_*): every call lands here, so the sampling decision
 * is a per-thread byte countdown with exponentially distributed gaps of
 * alloc_rate bytes on average, as the preloaded sampler draws them.
 */
__u64 alloc_rate = 512 * 1024;		/* set by the loader (.data) */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);			/* tid */
	__type(value, __s64);			/* bytes to the next sample */
} alloc_countdown SEC(".maps");

/* -ln(U) x 1024 for U uniform in (0, 1], from a random 32-bit value */
static __always_inline __u64 neg_ln_1024(__u32 r)
{
	/*
	 * log2(1 + (i + 0.5)/16) x 1024: bin midpoints, so the mean gap is
	 * the rate (0.9998 of it over 200k draws, in integer arithmetic).
	 * On the stack: as a global (static const, in .rodata with the
	 * loader's settings) it made the 6.18 verifier give up on every
	 * program ("sequence of 8193 jumps is too complex" in the unwinder).
	 */
	const __u16 log2_frac[16] = {
		45, 132, 214, 292, 366, 436, 504, 568,
		629, 689, 745, 800, 853, 904, 953, 1001,
	};
	__u32 msb = 0, x = r | 1;

	if (x >> 16) { x >>= 16; msb += 16; }
	if (x >> 8) { x >>= 8; msb += 8; }
	if (x >> 4) { x >>= 4; msb += 4; }
	if (x >> 2) { x >>= 2; msb += 2; }
	if (x >> 1) msb += 1;
	/* -log2(r / 2^32) = 32 - msb - log2(1 + fraction); x ln 2 */
	x = msb >= 4 ? (r >> (msb - 4)) & 15 : (r << (4 - msb)) & 15;
	return ((32 * 1024 - msb * 1024 - log2_frac[x & 15]) * 710) >> 10;
}

static __always_inline __s64 next_distance(void)
{
	return (__s64)(alloc_rate * neg_ln_1024(bpf_get_prandom_u32()) >> 10) + 1;
}

/*
 * In-use tracking (EMBER_PROBE_ENTRY_FREE/REALLOC; alloc_inuse set by
 * the loader): a sampled entry's record, stack and all, waits in
 * alloc_pending under its thread's id until the call returns
 * (ember_entry_ret, a uretprobe on the same entry), which writes the
 * address in, emits it and puts the address in alloc_live, where the
 * free probes look for it. A thread is in one sampled call at a time (a
 * nested one, glibc's realloc(NULL) entering malloc, takes the slot over:
 * one record). LRU: a call that never returns (probes removed meanwhile)
 * leaves a slot that ages out. alloc_live is a plain hash: full, the
 * block is not followed and its record says so.
 */
const volatile bool alloc_inuse;	/* set by the loader (.rodata) */

/* ember_sample.__reserved2 of a parked record: its address slot holds
 * where the call stores the address (posix_memalign's memptr) */
#define ALLOC_PEND_MEMPTR	1

struct alloc_live_key {
	__u32 tgid;
	__u32 pad;
	__u64 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);		/* 1 without in-use (loader) */
	__type(key, __u32);			/* tid */
	__type(value, struct scratch);
} alloc_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EMBER_ALLOC_LIVE_MAX);	/* 1 without in-use */
	__type(key, struct alloc_live_key);
	__type(value, __u8);
} alloc_live SEC(".maps");

/* memptr: posix_memalign's, where the address will be; 0 otherwise */
static __always_inline int alloc_entry(void *ctx, __u64 size, __u64 memptr)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__s64 *left, first;

	if (!size)
		return 0;
	left = bpf_map_lookup_elem(&alloc_countdown, &tid);
	if (!left) {
		first = next_distance();
		bpf_map_update_elem(&alloc_countdown, &tid, &first, BPF_ANY);
		left = bpf_map_lookup_elem(&alloc_countdown, &tid);
		if (!left)
			return 0;
	}
	*left -= (__s64)size;
	if (*left > 0)
		return 0;
	*left = next_distance();
	if (!alloc_inuse)	/* weighed by the reader, not followed */
		return alloc_record(ctx, 0, 0, size, ALLOC_EMIT);
	return alloc_record(ctx, 0, memptr, size,
			    memptr ? ALLOC_PARK_MEMPTR : ALLOC_PARK);
}

/*
 * What the probes tail-call (alloc_tail): the record, its user stack
 * unwound from the probe's registers, emitted (the sampler's probe, or
 * an entry point whose block is not followed) or parked until the call
 * returns.
 */
SEC("uprobe")
int ember_alloc_record(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ember_bpf_stats *st;
	struct ember_sample *s;
	struct alloc_args *a;
	__u64 weight, addr, size, park;
	__u32 zero = 0, len;

	a = bpf_map_lookup_elem(&alloc_args, &zero);
	if (!a)
		return 0;
	/* copied first: build_alloc's unwinder runs long */
	weight = a->weight;
	addr = a->addr;
	size = a->size;
	park = a->park;
	s = build_alloc(ctx, weight, addr, size);
	st = get_stats();
	if (!s || !st)
		return 0;
	if (park == ALLOC_EMIT) {
		/* read once and bounded here: the verifier checks the emit */
		len = s->hdr.size;
		if (len <= sizeof(struct scratch))
			emit(ctx, s, len, st);
		return 0;
	}
	if (park == ALLOC_PARK_MEMPTR)
		s->__reserved2 = ALLOC_PEND_MEMPTR;
	bpf_map_update_elem(&alloc_pending, &tid, s, BPF_ANY);
	return 0;
}

/*
 * The entry programs keep x86_64's register names for the argument they
 * take the size from (rdi, rsi, rdx: the first, second, third; x0..x2 on
 * arm64, arch.bpf.h), as EMBER_PROBE_ENTRY_* do.
 */
SEC("uprobe")
int ember_entry_rdi(void *ctx)
{
	return alloc_entry(ctx, ARCH_ARG1(R(ctx)), 0);
}

SEC("uprobe")
int ember_entry_rsi(void *ctx)
{
	return alloc_entry(ctx, ARCH_ARG2(R(ctx)), 0);
}

SEC("uprobe")
int ember_entry_nmemb(void *ctx)
{
	__u64 n = ARCH_ARG1(R(ctx)), size = ARCH_ARG2(R(ctx));

	/* operands under 2^32 cannot overflow; bigger ones (a calloc of
	 * 4G elements or 4 GiB each) are not sampled */
	if ((n | size) >> 32)
		return 0;
	return alloc_entry(ctx, n * size, 0);
}

SEC("uprobe")
int ember_entry_rdx(void *ctx)
{
	/* posix_memalign(memptr, alignment, size) */
	return alloc_entry(ctx, ARCH_ARG3(R(ctx)), ARCH_ARG1(R(ctx)));
}

/*
 * The return of an entry probe's call: a parked record gets the address
 * and goes out. Without one (the call was not sampled) this is the whole
 * cost: one lookup.
 */
SEC("uretprobe")
int ember_entry_ret(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct alloc_live_key k = { .tgid = id >> 32 };
	struct ember_bpf_stats *st = get_stats();
	struct ember_sample *s;
	struct scratch *sc;
	__u8 one = 1;
	__u32 at, len;

	sc = bpf_map_lookup_elem(&alloc_pending, &tid);
	if (!sc || !st)
		return 0;
	s = (void *)sc;
	at = s->nr_kernel + s->nr_user;
	if (at > EMBER_BPF_SCRATCH_FRAMES - 2)
		goto out;
	k.addr = ARCH_RET(R(ctx));
	if (s->__reserved2 == ALLOC_PEND_MEMPTR) {
		/* posix_memalign returns 0 and stores the address */
		s->__reserved2 = 0;
		if (k.addr || bpf_probe_read_user(&k.addr, sizeof(k.addr),
				(const void *)sc->raw[SCRATCH_IPS + at]))
			k.addr = 0;
	}
	len = s->hdr.size;
	/* NULL: nothing was allocated */
	if (!k.addr || len > sizeof(*sc))
		goto out;
	if (bpf_map_update_elem(&alloc_live, &k, &one, BPF_ANY)) {
		st->alloc_untracked++;
		s->flags |= EMBER_SF_ALLOC_UNTRACKED;
		k.addr = 0;
	}
	sc->raw[SCRATCH_IPS + at] = k.addr;
	emit(ctx, s, len, st);
out:
	bpf_map_delete_elem(&alloc_pending, &tid);
	return 0;
}

/* A free of addr in the current process: a record if it was followed. */
static __always_inline int alloc_free(void *ctx, __u64 addr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct alloc_live_key k = { .tgid = id >> 32, .addr = addr };
	struct ember_bpf_stats *st;
	struct ember_free f = {
		.hdr = { .type = EMBER_REC_FREE, .size = sizeof(f) },
		.pid = id >> 32,
		.tid = (__u32)id,
		.addr = addr,
	};

	/* most frees end here: not a sampled block */
	if (!addr || bpf_map_delete_elem(&alloc_live, &k))
		return 0;
	st = get_stats();
	if (!st)
		return 0;
	st->alloc_hits++;
	f.time_ns = bpf_ktime_get_ns();
	emit(ctx, &f, sizeof(f), st);
	return 0;
}

SEC("uprobe")
int ember_entry_free(void *ctx)
{
	return alloc_free(ctx, ARCH_ARG1(R(ctx)));
}

SEC("uprobe")
int ember_entry_realloc(void *ctx)
{
	/* realloc(ptr, size): ptr is gone once it returns (or moved into
	 * the new block, which is followed anew if sampled) */
	alloc_free(ctx, ARCH_ARG1(R(ctx)));
	return alloc_entry(ctx, ARCH_ARG2(R(ctx)), 0);
}

SEC("uprobe")
int ember_free(void *ctx)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct ember_bpf_stats *st = get_stats();
	struct ember_free f = {
		.hdr = { .type = EMBER_REC_FREE, .size = sizeof(f) },
		.pid = tgid,
		.tid = (__u32)id,
	};

	if (!st)
		return 0;
	if (!pass_filters(task, tgid)) {
		st->filtered++;
		return 0;
	}
	st->alloc_hits++;
	f.time_ns = bpf_ktime_get_ns();
	f.addr = ARCH_ARG1(R(ctx));
	emit(ctx, &f, sizeof(f), st);
	return 0;
}

#endif /* EMBER_ALLOC_BPF_H */
