// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF backend, Python frames (EMBER_CAP_PYTHON, bpf/python.bpf.h):
 * the py_procs map, tgid -> struct ember_py_proc, written by the py_bind
 * op from the unwind worker and emptied when the session stops.
 *
 * Every field is checked here as the module checks EMBER_CMD_PY_BIND:
 * known kinds, offsets below EMBER_PY_MAX_OFFSET, one or two thread-state
 * steps, ordered user-address eval ranges. The programs still bound every
 * read themselves: a wrong value that passes only cuts Python chains.
 */
#include <inttypes.h>
#include <string.h>
#include <bpf/bpf.h>
#include "source/kmem_budget.h"
#include "source/source_bpf_internal.h"

/* User addresses fit below the slot tag (include/uapi/ember.h). */
#define PY_USER_MAX		(1ULL << EMBER_IP_TAG_SHIFT)
/* The thread state is near the thread pointer: TLS blocks, struct pthread */
#define PY_TSTATE_OFF_MAX	(1LL << 24)
/* 3.14's _PyStackRef tag bits; the code object itself is 8-aligned */
#define PY_TAG_MASK_MAX		7
/* bpf/python.bpf.h reads a frame's fields in PY_FRAME_SPAN bytes */
#define PY_FRAME_SPAN		128
#define PY_CODE_SPAN		64

static uint32_t min3(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t m = a < b ? a : b;

	return m < c ? m : c;
}

static uint32_t max3(uint32_t a, uint32_t b, uint32_t c)
{
	uint32_t m = a > b ? a : b;

	return m > c ? m : c;
}

static int check_offsets(const struct ember_py_proc *p, char *err,
			 size_t err_len)
{
	const uint16_t offs[] = {
		p->ts_frame[0], p->ts_frame[1], p->fr_previous, p->fr_code,
		p->fr_instr, p->fr_owner, p->co_firstlineno, p->co_argcount,
		p->co_flags,
	};
	uint32_t lo, hi;

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		if (offs[i] >= EMBER_PY_MAX_OFFSET) {
			say(err, err_len, "Python struct offset %u is not below %u",
			    offs[i], EMBER_PY_MAX_OFFSET);
			return -EINVAL;
		}
	}
	/* pointers are 8-aligned in every CPython, the code's ints 4 */
	if ((p->ts_frame[0] | p->ts_frame[1] | p->fr_previous | p->fr_code |
	     p->fr_instr) & 7 ||
	    (p->co_firstlineno | p->co_argcount | p->co_flags) & 3) {
		say(err, err_len, "a Python frame or code offset is misaligned");
		return -EINVAL;
	}
	lo = min3(p->fr_previous, p->fr_code, p->fr_instr);
	lo = (lo < p->fr_owner ? lo : p->fr_owner) & ~7U;
	hi = max3(p->fr_previous, p->fr_code, p->fr_instr) + 8;
	hi = hi > p->fr_owner + 1U ? hi : p->fr_owner + 1U;
	if (hi - lo > PY_FRAME_SPAN) {
		say(err, err_len, "the Python frame's fields span %u bytes (at most %u)",
		    hi - lo, PY_FRAME_SPAN);
		return -EINVAL;
	}
	lo = min3(p->co_firstlineno, p->co_argcount, p->co_flags);
	hi = max3(p->co_firstlineno, p->co_argcount, p->co_flags) + 4;
	if (hi - lo > PY_CODE_SPAN) {
		say(err, err_len, "the code object's fields span %u bytes (at most %u)",
		    hi - lo, PY_CODE_SPAN);
		return -EINVAL;
	}
	return 0;
}

static int check_ranges(const struct ember_py_proc *p, char *err,
			size_t err_len)
{
	for (int i = 0; i < 2; i++) {
		uint64_t a = p->eval_start[i], b = p->eval_end[i];

		if (!a && !b && i)
			continue;	/* unused */
		if (!a || a >= b || b > PY_USER_MAX) {
			say(err, err_len, "eval range %d [0x%" PRIx64 ", 0x%" PRIx64
			    ") is empty, reversed or not user space", i, a, b);
			return -EINVAL;
		}
	}
	if (p->eval_end[1] && p->eval_start[1] < p->eval_end[0] &&
	    p->eval_start[0] < p->eval_end[1]) {
		say(err, err_len, "the two eval ranges overlap");
		return -EINVAL;
	}
	return 0;
}

/* 0, or -EINVAL with what is wrong in err. */
int bpf_py_proc_check(const struct ember_py_proc *p, char *err, size_t err_len)
{
	static const uint16_t zero[7];
	int ret;

	if (p->tstate_kind != EMBER_PY_TS_TLS && p->tstate_kind != EMBER_PY_TS_TSD) {
		say(err, err_len, "unknown thread-state kind %u", p->tstate_kind);
		return -EINVAL;
	}
	if (p->entry_kind != EMBER_PY_ENTRY_FLAG && p->entry_kind != EMBER_PY_ENTRY_SHIM) {
		say(err, err_len, "unknown entry-frame kind %u", p->entry_kind);
		return -EINVAL;
	}
	if (p->ts_frame_nr < 1 || p->ts_frame_nr > 2) {
		say(err, err_len, "%u thread-state steps (1 or 2)", p->ts_frame_nr);
		return -EINVAL;
	}
	if (p->tstate_kind == EMBER_PY_TS_TSD ?
	    !p->key_addr || p->key_addr >= PY_USER_MAX || (p->key_addr & 3) :
	    p->key_addr != 0) {
		say(err, err_len, "TSD key address 0x%" PRIx64 " does not fit thread-state kind %u",
		    (uint64_t)p->key_addr, p->tstate_kind);
		return -EINVAL;
	}
	if (p->tstate_off <= -PY_TSTATE_OFF_MAX || p->tstate_off >= PY_TSTATE_OFF_MAX) {
		say(err, err_len, "thread-state offset %" PRId64 " is not near the thread pointer",
		    (int64_t)p->tstate_off);
		return -EINVAL;
	}
	if (p->code_tag_mask > PY_TAG_MASK_MAX) {
		say(err, err_len, "code tag mask 0x%" PRIx64 " is more than the low bits",
		    (uint64_t)p->code_tag_mask);
		return -EINVAL;
	}
	if (memcmp(p->__reserved, zero, sizeof(zero))) {
		say(err, err_len, "reserved fields of struct ember_py_proc are not zero");
		return -EINVAL;
	}
	ret = check_offsets(p, err, err_len);
	return ret ? ret : check_ranges(p, err, err_len);
}

/* Before load: as many processes as the kernel memory budget allows. */
void bpf_python_configure(struct ember_source *s, struct ember_bpf *skel)
{
	struct kmem_budget kb;
	uint64_t n;

	kmem_budget_get(s->cfg.kernel_mem_mb, &kb);
	n = kmem_scale(&kb, s->cfg.nr_pids ? EMBER_BPF_FEW_PROCS :
			    EMBER_MAX_PY_PROCS, 64);
	bpf_map__set_max_entries(skel->maps.py_procs, (uint32_t)n);
}

int bpf_py_bind(struct ember_source *s, uint32_t pid,
		const struct ember_py_proc *py, char *err, size_t err_len)
{
	int fd = bpf_map__fd(s->skel->maps.py_procs);
	int ret;

	if (!pid) {
		say(err, err_len, "no process 0");
		return -EINVAL;
	}
	if (!py) {
		if (bpf_map_delete_elem(fd, &pid) && errno != ENOENT) {
			ret = -errno;
			say(err, err_len, "cannot unbind Python in process %u: %s",
			    pid, strerror(-ret));
			return ret;
		}
		return 0;
	}
	ret = bpf_py_proc_check(py, err, err_len);
	if (ret)
		return ret;
	if (bpf_map_update_elem(fd, &pid, py, BPF_ANY)) {
		ret = errno == E2BIG ? -ENOSPC : -errno;
		say(err, err_len, ret == -ENOSPC ?
		    "Python frames: %u processes bound already, the most this session holds" :
		    "cannot bind Python in process %u: %s",
		    ret == -ENOSPC ? bpf_map__max_entries(s->skel->maps.py_procs) : pid,
		    strerror(-ret));
		return ret;
	}
	/* the programs look processes up from now on */
	s->skel->bss->py_bound = 1;
	return 0;
}

/* At stop: no binding outlives its session. */
void bpf_python_clear(struct ember_source *s)
{
	int fd;
	uint32_t key, max;

	if (!s->skel)
		return;
	fd = bpf_map__fd(s->skel->maps.py_procs);
	max = bpf_map__max_entries(s->skel->maps.py_procs);
	s->skel->bss->py_bound = 0;
	for (uint32_t i = 0; i <= max; i++)
		if (bpf_map_get_next_key(fd, NULL, &key) ||
		    bpf_map_delete_elem(fd, &key))
			break;
}
