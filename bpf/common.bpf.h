/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * bpf/common.bpf.h, part of ember.bpf.c (one object, one skeleton, one load).
 *
 * Shared by every program of ember.bpf.c: the loader's settings every
 * concern reads (transport, frame limits), the scratch record slots, the
 * ring (or perf buffers) every record goes out through, the per-CPU
 * counters. The register layouts the programs read their contexts with
 * are arch.bpf.h's. A concern's own settings and maps live in its part.
 */
#ifndef EMBER_COMMON_BPF_H
#define EMBER_COMMON_BPF_H

#include "arch.bpf.h"

/* Stable kernel values not in BTF (they are #defines). */
#define PF_KTHREAD		0x00200000
/* Set by the loader before load (frozen: the verifier sees constants). */
const volatile bool use_perfbuf;
const volatile __u32 kstack_max;	/* frames kept */
const volatile __u32 kstack_req;	/* frames asked: more means truncated */
const volatile __u32 ustack_max;
const volatile __u32 ustack_req;
const volatile __u64 wakeup_bytes;	/* ring fill that wakes the reader */

/* Room for the largest record: a sample with both stacks at their limit. */
struct scratch {
	__u64 raw[sizeof(struct ember_sample) / 8 + EMBER_BPF_SCRATCH_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);		/* resized by the loader */
} ringbuf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perfbuf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EMBER_NR_SLOTS);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ember_bpf_stats);
} stats SEC(".maps");

/* ips[0] of a scratch slot, counted in u64 from its start */
#define SCRATCH_IPS		(sizeof(struct ember_sample) / 8)

static __always_inline struct ember_bpf_stats *get_stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&stats, &zero);
}

static __always_inline struct scratch *get_scratch(__u32 slot)
{
	return bpf_map_lookup_elem(&scratch, &slot);
}

#endif /* EMBER_COMMON_BPF_H */
