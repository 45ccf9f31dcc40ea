// SPDX-License-Identifier: GPL-2.0-only
/*
 * Finding CPython in a process and describing it for the backends'
 * walker (struct ember_py_proc). Everything comes from the interpreter's
 * ELF file (the process's own view of it, /proc/PID/map_files): the
 * version (Py_Version, checked against the file name), _PyRuntime, the
 * eval loop's range, PyCode_Type's member table, and, per version, the
 * frame and thread-state offsets: 3.13/3.14 from _Py_DebugOffsets at the
 * start of _PyRuntime, 3.11/3.12 from the table below (each value with its
 * source). Where the thread state lives is decoded from code:
 * PyGILState_GetThisThreadState (the TSS key inside _PyRuntime; 3.13+
 * _PyThreadState_GetCurrent's TLS load only when that is unknown) and
 * glibc's pthread_getspecific (the TSD array's offset from the thread
 * pointer). Any check that fails refuses the interpreter with a sentence:
 * the process then gets native frames only, never guessed ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/safe_file.h"
#include "python/py_decode.h"
#include "python/py_elf.h"
#include "python/python.h"

#define PY_FILE_MAX_BYTES	(1ULL << 30)

/* ---- the version ---- */

/* 3.N from "python3.N", "python3.Nd", "libpython3.N.so...": N, or -1. */
static int minor_of_name(const char *name)
{
	const char *b = strrchr(name, '/');
	char *end;
	long n;

	b = b ? b + 1 : name;
	if (!strncmp(b, "lib", 3))
		b += 3;
	if (strncmp(b, "python3.", 8))
		return -1;
	n = strtol(b + 8, &end, 10);
	if (end == b + 8 || n < 0 || n > 99)
		return -1;
	if (*end && *end != '.' && *end != 'd' && *end != 'm' && *end != 't')
		return -1;
	if (b != name && !strncmp(b - 3, "lib", 3) && strncmp(end, ".so", 3))
		return -1;
	return (int)n;
}

/* ---- per-version layouts ---- */

/*
 * 3.11 and 3.12 (64-bit, default build), where no _Py_DebugOffsets
 * exists. 3.11: offsetof() against Debian 12's python3.11-dev headers
 * (3.11.2), compiled on x86_64 (selftests/agent/python checks them again
 * where the headers are installed); 3.12: CPython v3.12 headers, not
 * checked against a 3.12 binary here (Debian has none).
 */
struct py_table {
	uint8_t minor;
	uint8_t entry_kind, entry_value;
	uint16_t ts_frame[2];	/* tstate->cframe, cframe->current_frame */
	uint16_t fr_previous, fr_code, fr_instr, fr_owner;
	/* &_PyRuntime...autoTSSkey._key - &_PyRuntime (x86_64, aarch64:
	 * glibc's pthread_mutex_t in the runtime state is 40 vs 48 bytes),
	 * 0: decoded only */
	uint16_t key_in_runtime[2];
	uint16_t uni_ascii_size, uni_compact_size;
};

static const struct py_table py_tables[] = {
	{
		.minor = 11,
		/* Include/internal/pycore_frame.h: struct _PyInterpreterFrame
		 * { PyFunctionObject *f_func 0; PyObject *f_globals 8,
		 * *f_builtins 16, *f_locals 24; PyCodeObject *f_code 32;
		 * PyFrameObject *frame_obj 40; _PyInterpreterFrame *previous 48;
		 * _Py_CODEUNIT *prev_instr 56; int stacktop 64; bool is_entry 68;
		 * char owner 69; } */
		.entry_kind = EMBER_PY_ENTRY_FLAG, .entry_value = 1,
		/* Include/cpython/pystate.h: PyThreadState.cframe 56 (after
		 * prev, next, interp, _initialized, _static, recursion_remaining,
		 * recursion_limit, recursion_headroom, tracing, tracing_what);
		 * _PyCFrame { int use_tracing; current_frame 8; previous 16 } */
		.ts_frame = { 56, 8 },
		.fr_previous = 48, .fr_code = 32, .fr_instr = 56, .fr_owner = 68,
		/* pycore_runtime.h: _PyRuntimeState.gilstate 568,
		 * _gilstate_runtime_state.autoTSSkey 24, Py_tss_t._key 4 on
		 * x86_64 (596); 612 on aarch64, read from the code of Debian
		 * 12's arm64 python3.11 (PyGILState_GetThisThreadState) */
		.key_in_runtime = { 596, 612 },
		/* cpython/unicodeobject.h: PyASCIIObject with wstr (48),
		 * PyCompactUnicodeObject (72) */
		.uni_ascii_size = 48, .uni_compact_size = 72,
	},
	{
		.minor = 12,
		/* pycore_frame.h (3.12): f_code 0, previous 8, f_funcobj 16,
		 * f_globals 24, f_builtins 32, f_locals 40, frame_obj 48,
		 * prev_instr 56, stacktop 64, return_offset 68 (uint16),
		 * owner 70; enum _frameowner: FRAME_OWNED_BY_CSTACK = 3 */
		.entry_kind = EMBER_PY_ENTRY_SHIM, .entry_value = 3,
		/* cpython/pystate.h (3.12): cframe 56; _PyCFrame {
		 * current_frame 0; previous 8 } */
		.ts_frame = { 56, 0 },
		.fr_previous = 8, .fr_code = 0, .fr_instr = 56, .fr_owner = 70,
		.key_in_runtime = { 0, 0 },	/* from PyGILState_GetThisThreadState */
		/* 3.12 dropped wstr: PyASCIIObject 40, compact 56 */
		.uni_ascii_size = 40, .uni_compact_size = 56,
	},
};

/* PyTypeObject (Include/cpython/object.h, every 3.x, 64-bit) */
#define TP_BASICSIZE	32
#define TP_MEMBERS	240
/* PyMemberDef { const char *name 0; int type 8; Py_ssize_t offset 16;
 * int flags 24; const char *doc 32 } (descrobject.h) */
#define MEMBERDEF_SIZE	40
#define T_INT		1
#define T_OBJECT	6

/*
 * The code object's members from PyCode_Type's tp_members, as compiled
 * into the file: what the interpreter itself uses for co.co_name etc.
 * in Python, so better than a copied table.
 */
static int code_members(struct pyelf *pe, uint64_t type_v,
			struct py_layout *lay, char *err, size_t err_len)
{
	static const struct {
		const char *name;
		int type;
		size_t off;
	} want[] = {
		{ "co_argcount", T_INT, offsetof(struct py_layout, co_argcount) },
		{ "co_flags", T_INT, offsetof(struct py_layout, co_flags) },
		{ "co_firstlineno", T_INT, offsetof(struct py_layout, co_firstlineno) },
		{ "co_filename", T_OBJECT, offsetof(struct py_layout, co_filename) },
		{ "co_name", T_OBJECT, offsetof(struct py_layout, co_name) },
		{ "co_qualname", T_OBJECT, offsetof(struct py_layout, co_qualname) },
		{ "co_linetable", T_OBJECT, offsetof(struct py_layout, co_linetable) },
	};
	uint32_t found = 0;
	uint64_t basic, members;

	if (!pyelf_read(pe, type_v + TP_BASICSIZE, &basic, 8) ||
	    !pyelf_ptr(pe, type_v + TP_MEMBERS, &members) || !members) {
		py_err(err, err_len, "PyCode_Type cannot be read");
		return -EINVAL;
	}
	if (basic < 64 || basic >= EMBER_PY_MAX_OFFSET) {
		py_err(err, err_len, "PyCode_Type.tp_basicsize %llu is implausible",
		       (unsigned long long)basic);
		return -EINVAL;
	}
	lay->co_code = (uint16_t)basic;
	for (uint32_t i = 0; i < 64; i++) {
		uint64_t v = members + i * MEMBERDEF_SIZE, name_v, off;
		int32_t type;
		char name[32];

		if (!pyelf_ptr(pe, v, &name_v) || !name_v)
			break;
		if (!pyelf_read(pe, v + 8, &type, 4) ||
		    !pyelf_read(pe, v + 16, &off, 8) ||
		    !pyelf_str(pe, name_v, name, sizeof(name)))
			continue;
		for (uint32_t j = 0; j < sizeof(want) / sizeof(want[0]); j++) {
			if (strcmp(name, want[j].name))
				continue;
			if (type != want[j].type || off < 16 || off + 8 > basic)
				break;
			*(uint16_t *)((char *)lay + want[j].off) = (uint16_t)off;
			found |= 1u << j;
		}
	}
	if (found != (1u << (sizeof(want) / sizeof(want[0]))) - 1) {
		py_err(err, err_len, "PyCode_Type's members lack what naming needs (%#x)",
		       found);
		return -EINVAL;
	}
	return 0;
}

/*
 * _Py_DebugOffsets, the first member of _PyRuntime since 3.13: which u64
 * word holds each offset ember reads, per version (its layout is stable
 * only within one minor version), and what the headers say and the debug
 * offsets do not.
 */
struct do_layout {
	uint8_t minor;
	uint8_t nr;		/* words read: up to the unicode section's end */
	uint8_t ts_size, ts_current_frame;
	uint8_t fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_owner;
	uint8_t co_filename, co_name, co_qualname, co_linetable;
	uint8_t co_firstlineno, co_argcount, co_code_adaptive, co_size;
	uint8_t ob_size, ob_type;
	uint8_t bytes_ob_size, bytes_sval;
	uint8_t uni_state, uni_length, uni_ascii_size;
	uint8_t entry_owner;	/* the eval loop's entry frame's owner */
	uint8_t tag_mask;	/* f_executable's tag bits */
};

static const struct do_layout do_layouts[] = {
	{
		/* Include/internal/pycore_runtime.h (v3.13): cookie 0,
		 * version 1, free_threaded 2, runtime_state 3-5,
		 * interpreter_state 6-18 (13 fields), thread_state 19-27
		 * (size, prev, next, interp, current_frame, thread_id,
		 * native_thread_id, datastack_chunk, status),
		 * interpreter_frame 28-33 (size, previous, executable,
		 * instr_ptr, localsplus, owner), code_object 34-43 (size,
		 * filename, name, qualname, linetable, firstlineno,
		 * argcount, localsplusnames, localspluskinds,
		 * co_code_adaptive), pyobject 44-45, type_object 46-49,
		 * tuple 50-52, list 53-55, dict 56-58, float 59-60, long
		 * 61-63, bytes 64-66, unicode 67-70 (size, state, length,
		 * asciiobject_size). Checked against Debian 13's 3.13.5.
		 */
		.minor = 13, .nr = 71,
		.ts_size = 19, .ts_current_frame = 23,
		.fr_size = 28, .fr_previous = 29, .fr_executable = 30,
		.fr_instr_ptr = 31, .fr_owner = 33,
		.co_size = 34, .co_filename = 35, .co_name = 36,
		.co_qualname = 37, .co_linetable = 38, .co_firstlineno = 39,
		.co_argcount = 40, .co_code_adaptive = 43,
		.ob_size = 44, .ob_type = 45,
		.bytes_ob_size = 65, .bytes_sval = 66,
		.uni_state = 68, .uni_length = 69, .uni_ascii_size = 70,
		/* pycore_frame.h: FRAME_OWNED_BY_CSTACK = 3, what ceval.c
		 * gives its entry frame; f_executable a plain pointer */
		.entry_owner = 3, .tag_mask = 0,
	},
	{
		/* Include/internal/pycore_debug_offsets.h (v3.14, and
		 * Debian's libpython3.14-dev 3.14.10): cookie 0, version 1,
		 * free_threaded 2, runtime_state 3-5, interpreter_state
		 * 6-21 (16 fields: 3.13's + threads_main,
		 * code_object_generation, tlbc_generation),
		 * thread_state 22-30 (as 3.13's), interpreter_frame 31-38
		 * (size, previous, executable, instr_ptr, localsplus,
		 * owner, stackpointer, tlbc_index), code_object 39-49
		 * (3.13's + co_tlbc), pyobject 50-51, type_object 52-55,
		 * tuple 56-58, list 59-61, set 62-65 (new), dict 66-68,
		 * float 69-70, long 71-73, bytes 74-76, unicode 77-80.
		 * Debian sid's 3.14.10 (x86_64 and arm64): current_frame
		 * 72, frame size 88, previous 8, executable 0, instr_ptr
		 * 56, owner 74, code size 216, co_code_adaptive 208,
		 * argcount 52, firstlineno 68, PyASCIIObject 40.
		 */
		.minor = 14, .nr = 81,
		.ts_size = 22, .ts_current_frame = 26,
		.fr_size = 31, .fr_previous = 32, .fr_executable = 33,
		.fr_instr_ptr = 34, .fr_owner = 36,
		.co_size = 39, .co_filename = 40, .co_name = 41,
		.co_qualname = 42, .co_linetable = 43, .co_firstlineno = 44,
		.co_argcount = 45, .co_code_adaptive = 48,
		.ob_size = 50, .ob_type = 51,
		.bytes_ob_size = 75, .bytes_sval = 76,
		.uni_state = 78, .uni_length = 79, .uni_ascii_size = 80,
		/*
		 * pycore_interpframe_structs.h (3.14): FRAME_OWNED_BY_
		 * INTERPRETER = 3, CSTACK = 4; ceval.c's entry frame is
		 * `entry.frame.owner = FRAME_OWNED_BY_INTERPRETER` (CSTACK
		 * is given to no frame): 3 again. Debian's binary stores it
		 * so (x86_64: movl $0x30000 over return_offset/owner).
		 * pycore_stackref.h (3.14, GIL build): Py_TAG_BITS 3,
		 * Py_TAG_REFCNT 1 (a borrowed/immortal/deferred pointer),
		 * Py_INT_TAG 3 (an int, never an f_executable). A code
		 * object's reference carries Py_TAG_REFCNT or nothing:
		 * only that bit is cleared, as ceval.c does (`and $-2`),
		 * so a tagged int stays misaligned and the walkers cut.
		 */
		.entry_owner = 3, .tag_mask = 1,
	},
};

#define DO_NR_MAX	81
#define DO_VERSION	1
#define DO_FREE_THREADED 2

static const struct do_layout *do_layout_of(int minor)
{
	for (size_t i = 0; i < sizeof(do_layouts) / sizeof(do_layouts[0]); i++)
		if (do_layouts[i].minor == minor)
			return &do_layouts[i];
	return NULL;
}

/* Every field read lies inside its struct, every struct is small. */
static bool do_plausible(const struct do_layout *o, const uint64_t *d)
{
	for (int i = o->ts_size; i < o->nr; i++)
		if (d[i] >= (1u << 20))
			return false;
	return d[o->ts_current_frame] + 8 <= d[o->ts_size] &&
	       d[o->fr_previous] + 8 <= d[o->fr_size] &&
	       d[o->fr_executable] + 8 <= d[o->fr_size] &&
	       d[o->fr_instr_ptr] + 8 <= d[o->fr_size] &&
	       d[o->fr_owner] + 1 <= d[o->fr_size] &&
	       d[o->fr_size] < EMBER_PY_MAX_OFFSET &&
	       d[o->ts_size] < EMBER_PY_MAX_OFFSET &&
	       d[o->co_size] < EMBER_PY_MAX_OFFSET &&
	       d[o->uni_ascii_size] >= 24 && d[o->uni_ascii_size] <= 256 &&
	       d[o->uni_state] + 4 <= d[o->uni_ascii_size] &&
	       d[o->uni_length] + 8 <= d[o->uni_ascii_size] &&
	       d[o->bytes_ob_size] + 8 <= d[o->bytes_sval] &&
	       d[o->bytes_sval] <= 256 && d[o->ob_type] + 8 <= d[o->ob_size];
}

/* The debug offsets' header: cookie, the version, a GIL build (the
 * free-threaded one's frames and objects are another layout). */
static int debug_header(struct pyelf *pe, uint64_t rt_v, uint32_t version,
			char *err, size_t err_len)
{
	uint64_t d[3];

	if (!pyelf_read(pe, rt_v, d, sizeof(d)) || memcmp(d, "xdebugpy", 8)) {
		py_err(err, err_len, "_PyRuntime has no _Py_DebugOffsets");
		return -EINVAL;
	}
	if ((uint32_t)d[DO_VERSION] != version) {
		py_err(err, err_len, "_Py_DebugOffsets: version %#llx, not Py_Version's",
		       (unsigned long long)d[DO_VERSION]);
		return -EINVAL;
	}
	if (d[DO_FREE_THREADED]) {
		py_err(err, err_len, "CPython 3.%u free-threaded build (ember walks "
		       "GIL builds only)", (version >> 16) & 0xff);
		return -ENOTSUP;
	}
	return 0;
}

static int debug_offsets(struct pyelf *pe, uint64_t rt_v, uint32_t version,
			 struct py_target *t, char *err, size_t err_len)
{
	const struct do_layout *o = do_layout_of((version >> 16) & 0xff);
	struct ember_py_proc *p = &t->proc;
	struct py_layout *l = &t->lay;
	uint64_t d[DO_NR_MAX];

	if (!o || !pyelf_read(pe, rt_v, d, o->nr * 8)) {
		py_err(err, err_len, "_Py_DebugOffsets cannot be read");
		return -EINVAL;
	}
	if (!do_plausible(o, d)) {
		py_err(err, err_len, "_Py_DebugOffsets fail their checks");
		return -EINVAL;
	}
	p->ts_frame[0] = (uint16_t)d[o->ts_current_frame];
	p->ts_frame_nr = 1;
	p->fr_previous = (uint16_t)d[o->fr_previous];
	p->fr_code = (uint16_t)d[o->fr_executable];
	p->fr_instr = (uint16_t)d[o->fr_instr_ptr];
	p->fr_owner = (uint16_t)d[o->fr_owner];
	p->entry_kind = EMBER_PY_ENTRY_SHIM;
	p->entry_value = o->entry_owner;
	p->code_tag_mask = o->tag_mask;
	l->ob_type = (uint16_t)d[o->ob_type];
	l->bytes_size = (uint16_t)d[o->bytes_ob_size];
	l->bytes_sval = (uint16_t)d[o->bytes_sval];
	l->uni_length = (uint16_t)d[o->uni_length];
	l->uni_state = (uint16_t)d[o->uni_state];
	l->uni_ascii_size = (uint16_t)d[o->uni_ascii_size];
	/* PyCompactUnicodeObject: + Py_ssize_t utf8_length, char *utf8 */
	l->uni_compact_size = l->uni_ascii_size + 16;
	/* the member table and the debug offsets must agree */
	if (l->co_filename != d[o->co_filename] || l->co_name != d[o->co_name] ||
	    l->co_qualname != d[o->co_qualname] ||
	    l->co_linetable != d[o->co_linetable] ||
	    l->co_firstlineno != d[o->co_firstlineno] ||
	    l->co_argcount != d[o->co_argcount] ||
	    l->co_code != d[o->co_code_adaptive]) {
		py_err(err, err_len, "PyCode_Type's members and _Py_DebugOffsets disagree");
		return -EINVAL;
	}
	return 0;
}

/*
 * The GIL-state TSS key (_PyRuntime's autoTSSkey), from the code of
 * PyGILState_GetThisThreadState: pthread_getspecific of it is the
 * thread's state for the thread's whole life. On 3.13 too, where the
 * thread-local _Py_tss_tstate is only the *attached* state, cleared
 * whenever the thread releases the GIL: exactly when it blocks, so an
 * off-CPU stack found through it would lose its Python callers.
 * key_in: where the version keeps it (0: decoded only).
 */
static int tss_key(struct pyelf *pe, uint64_t rt_v, uint64_t rt_size,
		   uint64_t bias, uint64_t key_in, struct py_target *t,
		   char *err, size_t err_len)
{
	uint64_t v, size, key_v;
	uint8_t code[64];
	size_t n;

	if (!pyelf_sym(pe, "PyGILState_GetThisThreadState", &v, &size) ||
	    !(n = pyelf_code(pe, v, size, code, sizeof(code))) ||
	    !(key_v = py_decode_key_addr(pe, v, code, n, rt_v))) {
		py_err(err, err_len, "PyGILState_GetThisThreadState is not known code");
		return -ENOTSUP;
	}
	if (key_v < rt_v || key_v + 4 > rt_v + rt_size ||
	    (key_in && key_v - rt_v != key_in)) {
		py_err(err, err_len, "the TSS key at _PyRuntime+%#llx is not where 3.%u keeps it",
		       (unsigned long long)(key_v - rt_v),
		       (t->proc.version >> 16) & 0xff);
		return -EINVAL;
	}
	t->proc.tstate_kind = EMBER_PY_TS_TSD;
	t->proc.key_addr = key_v + bias;
	return 0;
}

/* 3.11/3.12 from py_tables, the TSS key found in the code. */
static int table_offsets(struct pyelf *pe, int minor, uint64_t rt_v,
			 uint64_t rt_size, uint64_t bias, struct py_target *t,
			 char *err, size_t err_len)
{
	const struct py_table *tb = NULL;
	struct ember_py_proc *p = &t->proc;
	struct py_layout *l = &t->lay;

	for (size_t i = 0; i < sizeof(py_tables) / sizeof(py_tables[0]); i++)
		if (py_tables[i].minor == minor)
			tb = &py_tables[i];
	if (!tb)
		return -ENOTSUP;
	p->entry_kind = tb->entry_kind;
	p->entry_value = tb->entry_value;
	p->ts_frame[0] = tb->ts_frame[0];
	p->ts_frame[1] = tb->ts_frame[1];
	p->ts_frame_nr = 2;
	p->fr_previous = tb->fr_previous;
	p->fr_code = tb->fr_code;
	p->fr_instr = tb->fr_instr;
	p->fr_owner = tb->fr_owner;
	/* object.h, bytesobject.h, unicodeobject.h: stable in 3.x */
	l->ob_type = 8;
	l->bytes_size = 16;
	l->bytes_sval = 32;
	l->uni_length = 16;
	l->uni_state = 32;
	l->uni_ascii_size = tb->uni_ascii_size;
	l->uni_compact_size = tb->uni_compact_size;

	return tss_key(pe, rt_v, rt_size, bias,
		       tb->key_in_runtime[pe->eh.e_machine == EM_AARCH64], t,
		       err, err_len);
}

static int tls_offset(struct pyelf *pe, struct py_target *t, char *err,
		      size_t err_len)
{
	uint64_t v, size;
	uint8_t code[32];
	size_t n;
	int64_t off;

	if (!pyelf_sym(pe, "_PyThreadState_GetCurrent", &v, &size) ||
	    !(n = pyelf_code(pe, v, size, code, sizeof(code))) ||
	    !py_decode_tls_get(pe->eh.e_machine, code, n, &off)) {
		/* libpython: general-dynamic TLS (__tls_get_addr), whose
		 * offset only the loader knows */
		py_err(err, err_len, "CPython 3.%u: _PyThreadState_GetCurrent is not a "
		       "thread-pointer load (a libpython's TLS offset is the "
		       "loader's: not supported)", (t->proc.version >> 16) & 0xff);
		return -ENOTSUP;
	}
	if (off < -(1 << 24) || off > (1 << 24) || (off & 7)) {
		py_err(err, err_len, "_Py_tss_tstate at tp%+lld is implausible",
		       (long long)off);
		return -EINVAL;
	}
	t->proc.tstate_kind = EMBER_PY_TS_TLS;
	t->proc.tstate_off = off;
	return 0;
}

/* The eval loop and its .cold part. */
static int eval_range(struct pyelf *pe, uint64_t bias, struct py_target *t,
		      char *err, size_t err_len)
{
	uint64_t v, size, lo, hi;

	if (!pyelf_sym(pe, "_PyEval_EvalFrameDefault", &v, &size) || !size ||
	    size > (16u << 20)) {
		py_err(err, err_len, "no _PyEval_EvalFrameDefault with a size");
		return -ENOTSUP;
	}
	t->proc.eval_start[0] = v + bias;
	t->proc.eval_end[0] = v + bias + size;
	/* a build that kept .symtab names it (pyenv's: 4 and 8 bytes, too
	 * few jumps for the vote) */
	if (pyelf_symtab_func(pe, "_PyEval_EvalFrameDefault.cold", &lo, &hi) &&
	    hi < (16u << 20) && (lo + hi <= v || lo >= v + size))
		hi += lo;
	else
		py_eval_cold(pe, v, size, &lo, &hi);
	if (lo < hi) {
		t->proc.eval_start[1] = lo + bias;
		t->proc.eval_end[1] = hi + bias;
	}
	return 0;
}

int py_detect_file(int fd, const char *name, uint64_t bias, int libc_fd,
		   struct py_target *t, char *err, size_t err_len)
{
	struct pyelf pe;
	uint64_t rt_v, rt_size, ver_v, code_v, ver64 = 0;
	int minor = minor_of_name(name), r;
	int64_t tsd_off;
	uint32_t version;

	memset(t, 0, sizeof(*t));
	snprintf(t->file, sizeof(t->file), "%s", name);
	if (!pyelf_open(&pe, fd)) {
		pyelf_close(&pe);
		return 0;
	}
	r = 0;
	if (!pyelf_sym(&pe, "_PyRuntime", &rt_v, &rt_size))
		goto out;	/* not the interpreter (a python3 launcher) */
	r = -ENOTSUP;
	if (pe.eh.e_machine != EM_X86_64 && pe.eh.e_machine != EM_AARCH64) {
		py_err(err, err_len, "machine %u", pe.eh.e_machine);
		goto out;
	}
	if (!pyelf_sym(&pe, "Py_Version", &ver_v, NULL) ||
	    !pyelf_read(&pe, ver_v, &ver64, 8)) {
		/* 3.10 and older export no Py_Version */
		py_err(err, err_len, "no Py_Version: CPython before 3.11 (ember walks 3.11 to 3.14)");
		goto out;
	}
	version = (uint32_t)ver64;
	t->lay.version = t->proc.version = version;
	if ((version >> 24) != 3 || (minor >= 0 && ((version >> 16) & 0xff) != (uint32_t)minor)) {
		py_err(err, err_len, "Py_Version %#x does not match the file's name",
		       version);
		r = -EINVAL;
		goto out;
	}
	minor = (version >> 16) & 0xff;
	if (minor < 11 || minor > 14) {
		py_err(err, err_len, "CPython 3.%d (ember walks 3.11 to 3.14)", minor);
		goto out;
	}
	if (rt_size < 4096 || rt_size > (16u << 20)) {
		py_err(err, err_len, "_PyRuntime of %llu bytes",
		       (unsigned long long)rt_size);
		r = -EINVAL;
		goto out;
	}
	if (!pyelf_sym(&pe, "PyCode_Type", &code_v, NULL)) {
		py_err(err, err_len, "no PyCode_Type");
		goto out;
	}
	t->lay.code_type = code_v + bias;
	if (minor >= 13 && (r = debug_header(&pe, rt_v, version, err, err_len)))
		goto out;
	if ((r = code_members(&pe, code_v, &t->lay, err, err_len)) ||
	    (r = eval_range(&pe, bias, t, err, err_len)))
		goto out;
	/* what the walker reads of each code object, for the check value */
	t->proc.co_firstlineno = t->lay.co_firstlineno;
	t->proc.co_argcount = t->lay.co_argcount;
	t->proc.co_flags = t->lay.co_flags;
	if (minor >= 13) {
		if ((r = debug_offsets(&pe, rt_v, version, t, err, err_len)))
			goto out;
		/* the TSS key first (blocked threads keep their state);
		 * the attached-only TLS state when that code is unknown */
		r = tss_key(&pe, rt_v, rt_size, bias, 0, t, err, err_len);
		if (r == -ENOTSUP && !(r = tls_offset(&pe, t, err, err_len))) {
			r = 1;
			goto out;
		}
	} else {
		r = table_offsets(&pe, minor, rt_v, rt_size, bias, t, err,
				  err_len);
	}
	if (r)
		goto out;
	if (libc_fd < 0)
		t->proc.tstate_kind = 0;	/* the caller says why */
	else if ((r = py_glibc_tsd_offset(libc_fd, &tsd_off, err, err_len)))
		goto out;
	else
		t->proc.tstate_off = tsd_off;
	r = 1;
out:
	pyelf_close(&pe);
	return r;
}

/* ---- in a process ---- */

static const struct safe_rules map_rules = {
	.max_bytes = PY_FILE_MAX_BYTES,
	.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
	.flags = SAFE_FOLLOW | SAFE_ANYONE,
};

/* The file of a mapping, through map_files (the exact mapped inode,
 * in whatever mount namespace it lives): a regular file or nothing. */
static int open_mapping(uint32_t pid, const struct sym_map_line *m)
{
	struct stat st;
	const char *why;
	int fd;

	fd = proc_map_files_open(pid, m->start, m->end, &map_rules, &st, &why);
	if (fd < 0 && safe_refused(why))
		safe_warn("python file", NULL, m->path, why);
	/* remapped since the line was read: not the file it names (the
	 * inode only: btrfs's stat gives a subvolume's device, maps not) */
	if (fd >= 0 && m->ino && (uint64_t)st.st_ino != m->ino) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* The load bias of a mapping of fd: its start minus the vaddr of its
 * file offset, from the PT_LOAD that holds that offset. */
static bool mapping_bias(int fd, const struct sym_map_line *m, uint64_t *bias)
{
	struct pyelf pe;
	bool ok = false;

	if (!pyelf_open(&pe, fd))
		goto out;
	for (size_t i = 0; i < pe.nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(pe.e, (int)i, &ph) || ph.p_type != PT_LOAD ||
		    m->pgoff < (ph.p_offset & ~0xfffULL) ||
		    m->pgoff >= ph.p_offset + ph.p_filesz)
			continue;
		*bias = m->start - (ph.p_vaddr - ph.p_offset + m->pgoff);
		ok = true;
		break;
	}
out:
	pyelf_close(&pe);
	return ok;
}

static const char *base_name(const struct sym_map_line *m, char *buf,
			     size_t size)
{
	size_t len = m->path_len < size - 1 ? m->path_len : size - 1;
	const char *b;

	memcpy(buf, m->path, len);
	buf[len] = 0;
	b = strrchr(buf, '/');
	return b ? b + 1 : buf;
}

static bool is_glibc(const char *b)
{
	return !strcmp(b, "libc.so.6") ||
	       (!strncmp(b, "libc-2.", 7) && strstr(b, ".so"));
}

int py_detect(uint32_t pid, const struct sym_map_line *maps, uint32_t n,
	      struct py_target *t, char *err, size_t err_len)
{
	const struct sym_map_line *py = NULL, *libc = NULL;
	bool musl = false;
	char buf[256];
	uint64_t bias;
	int fd, libc_fd = -1, r;

	for (uint32_t i = 0; i < n; i++) {
		const char *b;

		if (maps[i].type != SYM_MAP_FILE)
			continue;
		b = base_name(&maps[i], buf, sizeof(buf));
		/* libpython first: an executable linked to it holds no _PyRuntime */
		if (minor_of_name(b) >= 0 &&
		    (!py || !strncmp(b, "lib", 3)))
			py = &maps[i];
		else if (!libc && is_glibc(b))
			libc = &maps[i];
		else if (!strncmp(b, "ld-musl", 7) || !strncmp(b, "libc.musl", 9))
			musl = true;
	}
	if (!py)
		return 0;
	fd = open_mapping(pid, py);
	if (fd < 0)
		return 0;
	if (!mapping_bias(fd, py, &bias)) {
		close(fd);
		return 0;
	}
	if (libc)
		libc_fd = open_mapping(pid, libc);
	base_name(py, buf, sizeof(buf));	/* buf: the path as the process maps it */
	r = py_detect_file(fd, buf, bias, libc_fd, t, err, err_len);
	if (r == 1 && t->proc.tstate_kind == 0) {
		/* right after an exec the loader has not mapped libc yet: not
		 * found for now (the worker's rechecks come back); musl's TSD
		 * is another layout */
		if (musl)
			py_err(err, err_len, "CPython 3.%u on musl: its thread state is not found",
			       (t->proc.version >> 16) & 0xff);
		r = musl ? -ENOTSUP : 0;
	}
	close(fd);
	if (libc_fd >= 0)
		close(libc_fd);
	return r;
}

int py_detect_path(const char *root, const char *path, const char *libc,
		   struct py_target *t, char *err, size_t err_len)
{
	const struct safe_rules rules = {
		.max_bytes = PY_FILE_MAX_BYTES,
		.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
		.flags = SAFE_ANYONE,	/* no symbolic link followed */
	};
	struct stat st;
	const char *why = NULL;
	int fd, libc_fd = -1, r;

	memset(t, 0, sizeof(*t));
	fd = safe_open_at(root, path, &rules, &st, &why);
	if (fd < 0) {
		py_err(err, err_len, "%s: %s", path, why ? why : "cannot be opened");
		return -EPERM;
	}
	if (libc && (libc_fd = safe_open_at(root, libc, &rules, &st, &why)) < 0) {
		py_err(err, err_len, "%s: %s", libc, why ? why : "cannot be opened");
		close(fd);
		return -EPERM;
	}
	r = py_detect_file(fd, path, 0, libc_fd, t, err, err_len);
	close(fd);
	if (libc_fd >= 0)
		close(libc_fd);
	return r;
}
