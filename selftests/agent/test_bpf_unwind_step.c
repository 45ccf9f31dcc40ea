// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF unwinder's step (bpf/unwind.bpf.h uw_step, built here as plain
 * C with the BPF helpers it calls replaced by reads of a fake stack) must
 * do exactly what include/ember_unwind.h's ember_unwind_step does: same
 * result, and for a step to the caller the same pc, sp, fp, lr and
 * validity flags. Random valid rules of every kind (x86_64's and
 * aarch64's return-address rules, both signal frames), random registers
 * around and inside the stack, stack words with and without PAC bits,
 * with and without a PAC mask.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <linux/bpf.h>
#include <linux/types.h>

#include "test_util.h"

/* what bpf_helpers.h gives a BPF program, as plain C */
#define SEC(name)
#define __uint(name, val)	int (*name)[val]
#define __type(name, val)	typeof(val) *name
#ifndef __always_inline
#define __always_inline		inline __attribute__((always_inline))
#endif
#define __noinline		__attribute__((noinline))

/* the fake user memory: STACK_SIZE bytes at STACK_BASE */
#define STACK_BASE		0x7ffd00000000ULL
#define STACK_SIZE		(64 * 1024)
static uint64_t stack_mem[STACK_SIZE / 8];

static long bpf_probe_read_user(void *dst, __u32 size, const void *src)
{
	uint64_t a = (uint64_t)(uintptr_t)src;

	if (a < STACK_BASE || a + size > STACK_BASE + STACK_SIZE ||
	    a + size < a) {
		memset(dst, 0, size);
		return -EFAULT;
	}
	memcpy(dst, (char *)stack_mem + (a - STACK_BASE), size);
	return 0;
}

static void *bpf_map_lookup_elem(void *map, const void *key)
{
	(void)map;
	(void)key;
	return NULL;
}

static long bpf_map_update_elem(void *map, const void *key, const void *v,
				__u64 flags)
{
	(void)map;
	(void)key;
	(void)v;
	(void)flags;
	return -ENOENT;
}

/* the loader's setting, writable here (rodata in the program) */
#define UW_TEST_PAC_MASK
static __u64 pac_mask;
#define ARCH_FP_LEAF_TEST	0

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "../../include/ember_bpf.h"
#include "../../bpf/unwind.bpf.h"
#pragma GCC diagnostic pop

static int ref_read(void *ctx, __u64 addr, __u64 *val)
{
	(void)ctx;
	if (addr & 7)
		return -1;
	return bpf_probe_read_user(val, 8, (const void *)(uintptr_t)addr) ? -1 : 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* An address around the stack: mostly inside, 8-aligned, sometimes not. */
static uint64_t rnd_addr(void)
{
	uint64_t a = STACK_BASE + (rnd() % (STACK_SIZE + 2048)) - 1024;

	return rnd() % 16 ? a & ~7ULL : a;
}

/* A stack word: a code address (maybe PAC-signed), a stack address, 0. */
static uint64_t rnd_word(void)
{
	switch (rnd() % 5) {
	case 0:
		return 0x0000aaaa00001000ULL + rnd() % 0x10000;
	case 1:		/* signed: PAC bits 48..54 set */
		return 0x0000aaaa00001000ULL + rnd() % 0x10000 +
		       ((rnd() % 127 + 1) << 48);
	case 2:
		return rnd_addr();
	case 3:
		return 0;
	default:
		return rnd();
	}
}

static void rnd_rule(struct ember_unwind_rule *r)
{
	do {
		r->cfa_type = rnd() % __EMBER_CFA_MAX;
		r->fp_type = EMBER_RULE_FP_RA(rnd() % __EMBER_FP_MAX,
					      rnd() % __EMBER_RA_MAX);
		r->fp_off = (__s16)((int)(rnd() % 33) - 16) * 8;
		if (r->cfa_type == EMBER_CFA_DEREF_FP_ADD ||
		    r->cfa_type == EMBER_CFA_DEREF_SP_ADD)
			r->cfa_off = EMBER_CFA_DEREF_PACK((int)(rnd() % 64) - 32,
							  (int)(rnd() % 64) - 16);
		else
			r->cfa_off = (int)(rnd() % 80) * 8 - 64 +
				     (rnd() % 8 ? 0 : (int)(rnd() % 8));
	} while (ember_unwind_rule_check(r));
}

static int compare_one(const struct ember_unwind_rule *r, char *why,
		       size_t len)
{
	struct ember_uregs ref = { 0 };
	static struct uw_state w;
	int a, b;

	ref.pc = 0x0000aaaa00002000ULL + rnd() % 0x1000;
	ref.sp = rnd_addr();
	ref.fp = rnd() % 8 ? rnd_addr() : 0;
	ref.lr = rnd_word();
	ref.fp_ok = rnd() % 4 != 0;
	ref.lr_ok = rnd() % 2;
	ref.exact = rnd() % 2;
	ref.pac_mask = pac_mask;
	memset(&w, 0, sizeof(w));
	w.pc = ref.pc;
	w.sp = ref.sp;
	w.fp = ref.fp;
	w.lr = ref.lr;
	w.fp_ok = ref.fp_ok;
	w.lr_ok = ref.lr_ok;
	w.exact = ref.exact;
	w.win_base = UW_WIN_NONE;

	a = ember_unwind_step(r, &ref, ref_read, NULL);
	b = uw_step(r, &w);
	if (a != b) {
		snprintf(why, len, "rule %u/%#x/%d/%d: step %d, BPF %d",
			 r->cfa_type, r->fp_type, r->fp_off, r->cfa_off, a, b);
		return -1;
	}
	if (a != EMBER_STEP_NEXT)
		return 0;
	if (w.pc != ref.pc || w.sp != ref.sp || w.exact != (__u32)ref.exact ||
	    w.lr_ok != (__u32)ref.lr_ok || (ref.lr_ok && w.lr != ref.lr) ||
	    w.fp_ok != (__u32)ref.fp_ok || (ref.fp_ok && w.fp != ref.fp)) {
		snprintf(why, len, "rule %u/%#x/%d/%d: pc %llx/%llx sp %llx/%llx fp %llx/%llx",
			 r->cfa_type, r->fp_type, r->fp_off, r->cfa_off,
			 (unsigned long long)ref.pc, (unsigned long long)w.pc,
			 (unsigned long long)ref.sp, (unsigned long long)w.sp,
			 (unsigned long long)ref.fp, (unsigned long long)w.fp);
		return -1;
	}
	return 1;
}

static void run(const char *name, __u64 mask, int n)
{
	struct ember_unwind_rule r;
	int next = 0, bad = 0, lr_steps = 0, signals = 0;
	char why[256] = "";

	pac_mask = mask;
	for (int i = 0; i < n && !bad; i++) {
		int k;

		if (i % 64 == 0)
			for (size_t j = 0; j < STACK_SIZE / 8; j++)
				stack_mem[j] = rnd_word();
		rnd_rule(&r);
		k = compare_one(&r, why, sizeof(why));
		if (k < 0)
			bad = 1;
		if (k > 0) {
			next++;
			lr_steps += EMBER_RULE_RA(r.fp_type) == EMBER_RA_LR;
			signals += r.cfa_type == EMBER_CFA_SIGNAL_A64;
		}
	}
	printf("# %s: %d cases, %d steps to a caller (%d by x30, %d aarch64 signal frames)\n",
	       name, n, next, lr_steps, signals);
	T_CHECK(name, !bad && next > n / 20 && lr_steps > 0 && signals > 0,
		"%s", bad ? why : "too few steps reached a caller");
}

int main(void)
{
	run("bpf_uw_step_matches_shared_step", 0, 200000);
	/* Linux's user insn mask with 48-bit VAs: GENMASK(54, 48) */
	run("bpf_uw_step_matches_shared_step_pac", 0x007f000000000000ULL, 200000);
	T_EXIT();
}
