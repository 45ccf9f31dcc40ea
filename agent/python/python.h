/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPython in a profiled process (agent/python/README.md): finding the
 * interpreter and describing it for the backends' frame walker
 * (struct ember_py_proc, include/uapi/ember.h "Python frames"), and
 * naming the code objects the walker reports (EMBER_IP_PY slots).
 */
#ifndef EMBER_PYTHON_H
#define EMBER_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "proc/proc_maps.h"
#include "uapi/ember.h"

/* What naming a code object needs: where its members and strings are. */
struct py_layout {
	uint32_t version;		/* PY_VERSION_HEX */
	uint64_t code_type;		/* &PyCode_Type in the process */
	uint16_t ob_type;		/* PyObject.ob_type */
	uint16_t co_filename, co_name, co_qualname, co_linetable;
	uint16_t co_firstlineno, co_argcount, co_flags;
	uint16_t co_code;		/* co_code_adaptive: PyCode_Type's tp_basicsize */
	uint16_t bytes_size, bytes_sval;	/* PyBytesObject (co_linetable) */
	uint16_t uni_length, uni_state;	/* PyASCIIObject */
	uint16_t uni_ascii_size;	/* sizeof(PyASCIIObject): ASCII data */
	uint16_t uni_compact_size;	/* sizeof(PyCompactUnicodeObject) */
};

/* One interpreter found in a process. */
struct py_target {
	struct ember_py_proc proc;	/* for the backend (src->ops->py_bind) */
	struct py_layout lay;		/* for naming its frames */
	char file[128];			/* the ELF it is in, for messages */
};

/*
 * Look for CPython among pid's executable mappings (maps[0..n), as
 * proc_maps_read() gave them): a python3.X executable or libpython3.X.so
 * holding _PyRuntime. Files are opened through /proc/PID/map_files, so a
 * process in another mount namespace is read as it sees its files.
 * 1: found and described in *t; 0: no CPython there (or not yet: 3.11/3.12
 * need glibc mapped, which an exec'd program has not yet); < 0: CPython that
 * ember cannot walk (a version it does not know, a layout that fails its
 * checks), with a sentence in err. Never a guess: everything in *t was
 * read from the file and checked.
 */
int py_detect(uint32_t pid, const struct sym_map_line *maps, uint32_t n,
	      struct py_target *t, char *err, size_t err_len);

/*
 * The same for one file mapped at bias (tests, `ember` without a process):
 * libc is the C library the process maps, for the glibc TSD offset
 * (NULL: not looked for, tstate_kind stays 0 when the version needs it).
 */
int py_detect_file(int fd, const char *name, uint64_t bias, int libc_fd,
		   struct py_target *t, char *err, size_t err_len);

/*
 * The same for a file named by path inside root (NULL: the host's), as a
 * non-PIE or unrelocated image (bias 0): opened with lib/safe_file.c's
 * rules and no symbolic link followed (a FIFO, a device or a link is
 * refused before a byte is read). libc may be NULL. For tests and tools.
 */
int py_detect_path(const char *root, const char *path, const char *libc,
		   struct py_target *t, char *err, size_t err_len);

/* The signed offset from the thread pointer to glibc's specific_1stblock[0].data,
 * decoded from pthread_getspecific's code in libc (fd). 0 or -errno. */
int py_glibc_tsd_offset(int libc_fd, int64_t *off, char *err, size_t err_len);

/* ---- naming code objects (py_code.c) ---- */

/*
 * The line of bytecode unit idx in a 3.11+ location table (co_linetable),
 * starting at firstlineno; -1 when the table has no line there or is
 * malformed (never read past len).
 */
int py_line_of(const uint8_t *table, size_t len, int firstlineno, int64_t idx);

struct py_frame {
	const char *name;	/* co_qualname, else co_name; NULL: unknown */
	const char *file;	/* co_filename, NULL when unknown */
	int line;		/* 0 when unknown */
};

struct py_names;	/* a process's code objects, cached */

/* Bounds: one name, one file name, one line table, and the cache. */
#define PY_MAX_NAME		1024
#define PY_MAX_FILE		4096
#define PY_MAX_LINETABLE	(64u << 10)
#define PY_CACHE_ENTRIES	4096

struct py_names *py_names_new(uint32_t pid, const struct py_layout *lay);
void py_names_free(struct py_names *pn);
/*
 * Name the frame of an EMBER_IP_PY slot pair (code address, then
 * check << 32 | byte offset), reading the code object through
 * /proc/PID/mem (bounded) on the first sight of (code, check). false:
 * the code object is gone, changed (its check differs) or not a code
 * object: the caller shows an unknown-Python-code frame. Strings live
 * until py_names_free().
 */
bool py_names_resolve(struct py_names *pn, uint64_t code, uint64_t word,
		      struct py_frame *out);
/* The interpreter loop's code in a process (ember_py_proc's eval_*). */
struct py_eval_ranges {
	uint64_t start[2], end[2];
};

/*
 * py_splice.c: the walked user frames w[0..nw) of a sample that has
 * Python frames, with the native frames o[0..no) a replay of its stack
 * copy found (complete: the caller checks), into out[0..max): o's frames
 * with each eval-loop frame replaced by the walk's activation of the same
 * rank (an empty one keeps the native frame). The count, or -1 when the
 * activations cannot be placed with certainty (a Python cut in the walk,
 * an eval-loop frame it left native, not one activation per eval-loop
 * frame, no room, another first frame).
 */
int py_splice(const struct py_eval_ranges *ev, const uint64_t *w, int nw,
	      const uint64_t *o, int no, uint64_t *out, int max);

/*
 * py_splice.c: a walk w[0..nw) that holds EMBER_PY_CUT_SHIFT (uapi: "The
 * leaf's eval loop") into out[0..nw) in the true order: the count, or -1
 * when w holds no such marker. A walk not of the shape the marker says,
 * or with an eval-loop frame (ev, when known) left native after the
 * marker, gets an EMBER_PY_CUT_ENTRY cut there instead (never a guessed
 * order) and *cut (the sample's flags must then say EMBER_SF_USER_CUT).
 */
int py_unshift(const uint64_t *w, int nw, uint64_t *out,
	       const struct py_eval_ranges *ev, bool *cut);
/* Where w[0..nw) holds EMBER_PY_CUT_SHIFT, or -1. */
int py_shift_at(const uint64_t *w, int nw);

/* Read the process's memory at addr: 0 or -errno (short reads fail). */
int py_mem_read(int mem_fd, uint64_t addr, void *buf, size_t len);

#endif
