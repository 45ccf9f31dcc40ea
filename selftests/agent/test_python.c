// SPDX-License-Identifier: GPL-2.0-only
/*
 * agent/python/: CPython detection and code-object naming.
 *  - the location-table decoder against /usr/bin/python3.11's own
 *    co_positions() (selftests/agent/python/linetable_dump.py);
 *  - detection on Debian 12's /usr/bin/python3.11 (version, _PyRuntime,
 *    offsets, eval range with its .cold part, TSD paths), on Debian 13's
 *    python3.13 and sid's python3.14 (scripts/fetch-python.sh; SKIP
 *    offline), executables and libpython, x86_64 and arm64, on the arm64
 *    glibc's pthread_getspecific; sid's python3.15 refused;
 *  - the line-table decoder against 3.14's co_positions() too;
 *  - hostile input: a corrupt line table, files with a forged version,
 *    cookie or code type, a FIFO and a symlink as the binary, a fake code
 *    object, a 2 MB qualname;
 *  - a live python3.11 stopped on a known line (stack_stop.py), directly
 *    and in its own mount namespace, and the fetched 3.13 and 3.14: its
 *    frame chain read with the ember_py_proc found for it, as the
 *    backends' walkers do, gives EMBER_IP_PY slots that name exactly the
 *    stack it printed.
 * Run from the top of the tree (the unit suite does).
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include <elf.h>
#include <gelf.h>
#include <libelf.h>

#include "aggregate/aggregate.h"
#include "output/output.h"
#include "python/python.h"
#include "proc/proc_maps.h"
#include "symbolize/symbolize.h"
#include "test_maps.h"
#include "test_util.h"

#define PY311	"/usr/bin/python3.11"
#define LIBC	"/usr/lib/x86_64-linux-gnu/libc.so.6"
#define DIR	"selftests/agent/python"

static bool have(const char *path)
{
	return access(path, X_OK) == 0;
}

/* ---- the location table ---- */

static size_t unhex(const char *h, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (h[0] && h[1] && n < max) {
		unsigned int b;

		if (sscanf(h, "%2x", &b) != 1)
			break;
		out[n++] = (uint8_t)b;
		h += 2;
	}
	return n;
}

/* name: the check; py: how to run the python whose co_positions() is
 * the truth (its location-table format: 3.11's, unchanged since). */
static void linetable_truth(const char *name, const char *py)
{
	static char line[1 << 20];
	static uint8_t table[1 << 18];
	char cmd[2048];
	FILE *f;
	unsigned long codes = 0, units = 0, bad = 0;

	snprintf(cmd, sizeof(cmd), "%s -I " DIR "/linetable_dump.py", py);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *hex, *lines, *save;
		int first = atoi(strtok_r(line, " ", &save));
		size_t len;
		long idx = 0;

		hex = strtok_r(NULL, " ", &save);
		lines = strtok_r(NULL, " \n", &save);
		if (!hex || !lines)
			continue;
		len = unhex(hex, table, sizeof(table));
		for (char *tok = strtok_r(lines, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save), idx++) {
			int want = atoi(tok), got = py_line_of(table, len, first, idx);

			units++;
			if (got != want && bad++ < 5)
				printf("# code at line %d unit %ld: %d, python says %d\n",
				       first, idx, got, want);
		}
		codes++;
	}
	if (f)
		pclose(f);
	T_CHECK(name, codes > 200 && units > 5000 && !bad,
		"%lu code objects, %lu units, %lu wrong", codes, units, bad);
	printf("# %s: %lu code objects, %lu code units compared\n", name,
	       codes, units);
}

static bool fetched_root(const char *args, char *root, size_t len);

static void test_linetable_truth(void)
{
	char root[512], py[2048];

	if (have(PY311))
		linetable_truth("py_linetable_truth", PY311);
	else
		printf("SKIP: py_linetable_truth: no %s\n", PY311);
	if (!fetched_root("--release sid", root, sizeof(root))) {
		printf("SKIP: py_linetable_truth_314: sid's python3.14 not fetched\n");
		return;
	}
	snprintf(py, sizeof(py), "%s/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "
		 "--library-path %s/usr/lib/x86_64-linux-gnu %s/usr/bin/python3.14",
		 root, root, root);
	linetable_truth("py_linetable_truth_314", py);
}

/* Corrupt tables: every prefix, every byte flipped, random bytes. */
static void test_linetable_hostile(void)
{
	/* a real table: "def f(a):\n  x = a + 1\n  return x" (3.11) */
	static const uint8_t good[] = { 0x80, 0x00, 0xd8, 0x06, 0x07, 0x88,
		0x01, 0x85, 0x05, 0x80, 0x41, 0xd8, 0x0b, 0x0c, 0x80, 0x48 };
	uint8_t buf[64];
	unsigned int seed = 1, ok = 1;

	for (size_t n = 0; n <= sizeof(good); n++)
		for (int64_t i = -2; i < 40; i++)
			if (py_line_of(good, n, 1, i) > 1000)
				ok = 0;
	for (size_t k = 0; k < sizeof(good) * 8; k++) {
		memcpy(buf, good, sizeof(good));
		buf[k / 8] ^= 1u << (k % 8);
		for (int64_t i = 0; i < 40; i++)
			(void)py_line_of(buf, sizeof(good), 1, i);
	}
	for (int round = 0; round < 20000; round++) {
		size_t n = rand_r(&seed) % sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rand_r(&seed);
		(void)py_line_of(buf, n, rand_r(&seed) % 100000,
				 rand_r(&seed) % 200);
	}
	/* a varint that never ends, a line that overflows */
	memset(buf, 0xf0, sizeof(buf));
	buf[0] = 0xe8;		/* code 13: svarint, then 0x7f... */
	memset(buf + 1, 0x7f, sizeof(buf) - 1);
	T_CHECK("py_linetable_hostile", ok && py_line_of(buf, sizeof(buf), 1, 0) == -1 &&
		py_line_of(NULL, 0, 1, 0) == -1 && py_line_of(good, sizeof(good), 1, -1) == -1,
		"a corrupt table gave a line");
}

/* ---- detection on files ---- */

static void test_detect_311(void)
{
	struct py_target t;
	char err[256] = "";
	const struct ember_py_proc *p = &t.proc;
	const struct py_layout *l = &t.lay;
	int r;

	if (!have(PY311) || access(LIBC, R_OK)) {
		printf("SKIP: py_detect_311: no %s\n", PY311);
		return;
	}
	r = py_detect_path(NULL, PY311, LIBC, &t, err, sizeof(err));
	T_CHECK("py_detect_311", r == 1, "%d: %s", r, err);
	if (r != 1)
		return;
	printf("# %s: version %#x, tstate tp%+lld key %#llx, eval %#llx-%#llx cold %#llx-%#llx\n",
	       PY311, p->version, (long long)p->tstate_off,
	       (unsigned long long)p->key_addr,
	       (unsigned long long)p->eval_start[0], (unsigned long long)p->eval_end[0],
	       (unsigned long long)p->eval_start[1], (unsigned long long)p->eval_end[1]);
	T_CHECK("py_detect_311_version", (p->version >> 16) == 0x030b,
		"%#x", p->version);
	/* offsetof() against Debian's python3.11-dev headers (py_detect.c) */
	T_CHECK("py_detect_311_frame",
		p->entry_kind == EMBER_PY_ENTRY_FLAG && p->entry_value == 1 &&
		p->ts_frame_nr == 2 && p->ts_frame[0] == 56 && p->ts_frame[1] == 8 &&
		p->fr_previous == 48 && p->fr_code == 32 && p->fr_instr == 56 &&
		p->fr_owner == 68, "frame offsets");
	T_CHECK("py_detect_311_code",
		l->co_firstlineno == 72 && l->co_argcount == 56 && l->co_flags == 48 &&
		l->co_filename == 112 && l->co_name == 120 && l->co_qualname == 128 &&
		l->co_linetable == 136 && l->co_code == 184 &&
		p->co_firstlineno == 72 && p->co_argcount == 56 && p->co_flags == 48,
		"code members from PyCode_Type");
	/* glibc 2.36: specific_1stblock[0].data at tp + 0x318 (x86_64);
	 * the key is _PyRuntime.gilstate.autoTSSkey._key, 596 bytes in */
	T_CHECK("py_detect_311_tsd", p->tstate_kind == EMBER_PY_TS_TSD &&
		p->tstate_off == 0x318 && p->key_addr,
		"tstate kind %u off %lld", p->tstate_kind, (long long)p->tstate_off);
	T_CHECK("py_detect_311_eval", p->eval_end[0] - p->eval_start[0] > 10000 &&
		p->eval_end[1] > p->eval_start[1] && p->eval_start[1] &&
		(p->eval_end[1] <= p->eval_start[0] || p->eval_start[1] >= p->eval_end[0]),
		"eval ranges");
}

/* Debian 12's libpython3.11 (python3.11-dev's dependency): _PyRuntime
 * through the GOT, the key via PyThread_tss_get */
static void test_detect_libpython311(void)
{
	const char *lib = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
	char err[256] = "", cmd[256], out[64] = "";
	struct py_target t;
	uint64_t rt = 0;
	FILE *f;
	int r;

	if (access(lib, R_OK) || access(LIBC, R_OK)) {
		printf("SKIP: py_detect_libpython311: no %s\n", lib);
		return;
	}
	snprintf(cmd, sizeof(cmd),
		 "readelf -Ws --dyn-syms %s | awk '$8==\"_PyRuntime\"{print $2; exit}'", lib);
	f = popen(cmd, "r");
	if (f && fgets(out, sizeof(out), f))
		rt = strtoull(out, NULL, 16);
	if (f)
		pclose(f);
	r = py_detect_path(NULL, lib, LIBC, &t, err, sizeof(err));
	T_CHECK("py_detect_libpython311", r == 1 && rt && t.proc.key_addr == rt + 596 &&
		t.proc.tstate_off == 0x318 && t.lay.co_code == 184 &&
		t.lay.code_type != 0, "%d %s: key %#llx (_PyRuntime %#llx)", r, err,
		(unsigned long long)t.proc.key_addr, (unsigned long long)rt);
}

/* trixie's python3.13, unpacked into the cache by scripts/fetch-python.sh */
/* _PyRuntime's address in root/bin, from its dynamic symbols (0: none). */
static uint64_t rt_of(const char *root, const char *bin)
{
	char cmd[1024], out[64] = "";
	uint64_t rt = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "readelf -Ws --dyn-syms '%s%s' | awk '$8==\"_PyRuntime\"{print $2; exit}'",
		 root, bin);
	f = popen(cmd, "r");
	if (f && fgets(out, sizeof(out), f))
		rt = strtoull(out, NULL, 16);
	if (f)
		pclose(f);
	return rt;
}

static void test_detect_313(void)
{
	char root[512] = "", err[256] = "";
	struct py_target t;
	FILE *f;
	int r;

	f = popen("scripts/fetch-python.sh --path 2>/dev/null", "r");
	if (!f || !fgets(root, sizeof(root), f)) {
		if (f)
			pclose(f);
		printf("SKIP: py_detect_313: Debian 13's python3.13 not fetched (offline?)\n");
		return;
	}
	pclose(f);
	root[strcspn(root, "\n")] = 0;
	r = py_detect_path(root, "/usr/bin/python3.13",
			   "/usr/lib/x86_64-linux-gnu/libc.so.6", &t, err, sizeof(err));
	T_CHECK("py_detect_313", r == 1, "%d: %s", r, err);
	if (r != 1)
		return;
	printf("# python3.13: version %#x, tstate tp%+lld, eval %#llx-%#llx cold %#llx-%#llx\n",
	       t.proc.version, (long long)t.proc.tstate_off,
	       (unsigned long long)t.proc.eval_start[0], (unsigned long long)t.proc.eval_end[0],
	       (unsigned long long)t.proc.eval_start[1], (unsigned long long)t.proc.eval_end[1]);
	/*
	 * _Py_DebugOffsets of 3.13.5; the thread state through the GIL-state
	 * key (PyGILState_GetThisThreadState: cmpl $0, _PyRuntime+0x870;
	 * mov _PyRuntime+0x874, %edi; jmp pthread_getspecific), which keeps
	 * a blocked thread's state (_Py_tss_tstate is cleared when it
	 * releases the GIL); glibc 2.41's specific_1stblock at tp+0x310
	 */
	T_CHECK("py_detect_313_offsets",
		(t.proc.version >> 16) == 0x030d && t.proc.tstate_kind == EMBER_PY_TS_TSD &&
		t.proc.tstate_off == 792 && t.proc.key_addr == rt_of(root, "/usr/bin/python3.13") + 0x874 &&
		t.proc.entry_kind == EMBER_PY_ENTRY_SHIM &&
		t.proc.entry_value == 3 && t.proc.ts_frame_nr == 1 &&
		t.proc.ts_frame[0] == 72 && t.proc.fr_previous == 8 &&
		t.proc.fr_code == 0 && t.proc.fr_instr == 56 && t.proc.fr_owner == 70 &&
		t.lay.co_code == 200 && t.lay.uni_ascii_size == 40 &&
		t.proc.eval_start[1] != 0, "3.13 layout");
	/* libpython's _Py_tss_tstate is general-dynamic TLS (its offset is
	 * the loader's), but the GIL-state key is found through the GOT */
	r = py_detect_path(root, "/usr/lib/x86_64-linux-gnu/libpython3.13.so.1.0",
			   "/usr/lib/x86_64-linux-gnu/libc.so.6", &t, err, sizeof(err));
	T_CHECK("py_detect_313_libpython", r == 1 && t.proc.tstate_kind == EMBER_PY_TS_TSD &&
		t.proc.tstate_off == 792 && t.proc.key_addr != 0, "%d: %s", r, err);
}

/* A root unpacked by scripts/fetch-python.sh ARGS into root[len], or false. */
static bool fetched_root(const char *args, char *root, size_t len)
{
	char cmd[256];
	FILE *f;
	bool ok;

	snprintf(cmd, sizeof(cmd), "scripts/fetch-python.sh %s --path 2>/dev/null", args);
	f = popen(cmd, "r");
	ok = f && fgets(root, (int)len, f);
	if (f)
		pclose(f);
	if (ok)
		root[strcspn(root, "\n")] = 0;
	return ok;
}

/*
 * Debian sid's python3.14 (3.14.10): _Py_DebugOffsets' 3.14 layout
 * (owner 74, frame 88 bytes, co_code_adaptive 208), the entry frame's
 * owner FRAME_OWNED_BY_INTERPRETER (3), f_executable's Py_TAG_REFCNT
 * cleared, the GIL-state key through PyThread_tss_get (executable: `mov
 * $_PyRuntime+0x920,%edi; jmp PyThread_tss_get`, key 4 bytes in; libpython:
 * lea 0x920(%rax) from the GOT), glibc 2.43's TSD at tp+0x310. sid's
 * python3.15 is refused with one sentence: its debug offsets are another
 * layout (thread_state and unicode sections grew).
 */
static void test_detect_314(void)
{
	char root[512] = "", err[256] = "";
	struct py_target t;
	uint64_t rt;
	int r;

	if (!fetched_root("--release sid", root, sizeof(root))) {
		printf("SKIP: py_detect_314: Debian sid's python3.14 not fetched (offline?)\n");
		return;
	}
	r = py_detect_path(root, "/usr/bin/python3.14",
			   "/usr/lib/x86_64-linux-gnu/libc.so.6", &t, err, sizeof(err));
	T_CHECK("py_detect_314", r == 1, "%d: %s", r, err);
	if (r != 1)
		return;
	printf("# python3.14: version %#x, tstate tp%+lld key %#llx, eval %#llx-%#llx cold %#llx-%#llx\n",
	       t.proc.version, (long long)t.proc.tstate_off,
	       (unsigned long long)t.proc.key_addr,
	       (unsigned long long)t.proc.eval_start[0], (unsigned long long)t.proc.eval_end[0],
	       (unsigned long long)t.proc.eval_start[1], (unsigned long long)t.proc.eval_end[1]);
	rt = rt_of(root, "/usr/bin/python3.14");
	T_CHECK("py_detect_314_offsets",
		(t.proc.version >> 16) == 0x030e && t.proc.tstate_kind == EMBER_PY_TS_TSD &&
		t.proc.tstate_off == 792 && rt && t.proc.key_addr == rt + 0x924 &&
		t.proc.entry_kind == EMBER_PY_ENTRY_SHIM &&
		t.proc.entry_value == 3 && t.proc.code_tag_mask == 1 &&
		t.proc.ts_frame_nr == 1 && t.proc.ts_frame[0] == 72 &&
		t.proc.fr_previous == 8 && t.proc.fr_code == 0 &&
		t.proc.fr_instr == 56 && t.proc.fr_owner == 74 &&
		t.proc.co_argcount == 52 && t.proc.co_firstlineno == 68 &&
		t.proc.co_flags == 48 && t.lay.co_code == 208 &&
		t.lay.co_qualname == 128 && t.lay.co_linetable == 136 &&
		t.lay.uni_ascii_size == 40 && t.lay.uni_state == 32 &&
		t.lay.ob_type == 8 && t.lay.bytes_sval == 32,
		"3.14 layout: tstate %lld key %#llx owner %u/%u mask %#llx code %u",
		(long long)t.proc.tstate_off, (unsigned long long)t.proc.key_addr,
		t.proc.fr_owner, t.proc.entry_value,
		(unsigned long long)t.proc.code_tag_mask, t.lay.co_code);
	/* the executable's eval loop keeps 1184 bytes hot: the dispatch is
	 * all in its .cold part (0x43fb58-0x45451f, 84 KB), which the vote
	 * must find */
	T_CHECK("py_detect_314_cold",
		t.proc.eval_end[0] - t.proc.eval_start[0] == 1184 &&
		t.proc.eval_start[1] == 0x43fb58 && t.proc.eval_end[1] == 0x45451f,
		"cold %#llx-%#llx", (unsigned long long)t.proc.eval_start[1],
		(unsigned long long)t.proc.eval_end[1]);
	r = py_detect_path(root, "/usr/lib/x86_64-linux-gnu/libpython3.14.so.1.0",
			   "/usr/lib/x86_64-linux-gnu/libc.so.6", &t, err, sizeof(err));
	rt = rt_of(root, "/usr/lib/x86_64-linux-gnu/libpython3.14.so.1.0");
	T_CHECK("py_detect_314_libpython", r == 1 && t.proc.tstate_kind == EMBER_PY_TS_TSD &&
		t.proc.tstate_off == 792 && rt && t.proc.key_addr == rt + 0x924 &&
		t.proc.fr_owner == 74 && t.proc.code_tag_mask == 1,
		"%d: %s key %#llx", r, err, (unsigned long long)t.proc.key_addr);
	r = py_detect_path(root, "/usr/bin/python3.15",
			   "/usr/lib/x86_64-linux-gnu/libc.so.6", &t, err, sizeof(err));
	T_CHECK("py_refuse_315", r == -ENOTSUP &&
		!strcmp(err, "CPython 3.15 (ember walks 3.11 to 3.14)"), "%d: %s", r, err);
}

/* The aarch64 decoders on Debian's arm64 interpreters (fetched). */
static void test_detect_arm64(void)
{
	static const struct {
		const char *name, *fetch, *bin, *libc;
		uint32_t minor;
		int64_t tstate_off;
		uint64_t key_in_runtime;
	} cases[] = {
		/* the GIL-state key, as 3.11 (adrp; add #0x698; ldr w0,
		 * [x0, #2164]); glibc 2.41: mov x0, #-0x610; mrs; add; add;
		 * ldr [x2, #8]: tp - 0x608 */
		{ "py_detect_313_arm64", "--arch arm64", "/usr/bin/python3.13",
		  "/usr/lib/aarch64-linux-gnu/libc.so.6", 13, -0x608, 0x874 },
		/* 3.14: adrp x0; ldr w0, [x0, #0x6a0]; cbz w0 (the key's
		 * _is_initialized); adrp x0; add x0, x0, #0x6a0; b
		 * PyThread_tss_get: +0x920 + 4; glibc 2.43 like 2.41 */
		{ "py_detect_314_arm64", "--arch arm64 --release sid", "/usr/bin/python3.14",
		  "/usr/lib/aarch64-linux-gnu/libc.so.6", 14, -0x608, 0x924 },
		/* adrp x19; ldr x19, [x19, #GOT]; add x0, x19, #0x920; bl
		 * PyThread_tss_is_created; cbz w0; add x0, x19, #0x920; ...;
		 * b PyThread_tss_get */
		{ "py_detect_314_arm64_libpython", "--arch arm64 --release sid",
		  "/usr/lib/aarch64-linux-gnu/libpython3.14.so.1.0",
		  "/usr/lib/aarch64-linux-gnu/libc.so.6", 14, -0x608, 0x924 },
		/* trixie's libpython3.13: through the GOT too */
		{ "py_detect_313_arm64_libpython", "--arch arm64",
		  "/usr/lib/aarch64-linux-gnu/libpython3.13.so.1.0",
		  "/usr/lib/aarch64-linux-gnu/libc.so.6", 13, -0x608, 0x874 },
		/* adrp; add #8; ldr w0, [x0, #612]; glibc 2.36: tp - 0x628 */
		{ "py_detect_311_arm64", "--arch arm64 --release bookworm",
		  "/usr/bin/python3.11", "/lib/aarch64-linux-gnu/libc.so.6", 11,
		  -0x628, 612 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char cmd[256], root[512] = "", err[256] = "";
		struct py_target t;
		uint64_t rt = 0;
		FILE *f;
		int r;

		snprintf(cmd, sizeof(cmd), "scripts/fetch-python.sh %s --path 2>/dev/null",
			 cases[i].fetch);
		f = popen(cmd, "r");
		if (!f || !fgets(root, sizeof(root), f)) {
			if (f)
				pclose(f);
			printf("SKIP: %s: Debian's arm64 python not fetched (offline?)\n",
			       cases[i].name);
			continue;
		}
		pclose(f);
		root[strcspn(root, "\n")] = 0;
		r = py_detect_path(root, cases[i].bin, cases[i].libc, &t, err, sizeof(err));
		if (cases[i].key_in_runtime) {
			/* _PyRuntime's address, from the same file */
			snprintf(cmd, sizeof(cmd),
				 "readelf -Ws --dyn-syms '%s%s' | awk '$8==\"_PyRuntime\"{print $2; exit}'",
				 root, cases[i].bin);
			f = popen(cmd, "r");
			if (f && fgets(err + 128, 64, f))
				rt = strtoull(err + 128, NULL, 16);
			if (f)
				pclose(f);
		}
		T_CHECK(cases[i].name, r == 1 &&
			((t.proc.version >> 16) & 0xff) == cases[i].minor &&
			t.proc.tstate_off == cases[i].tstate_off &&
			(!cases[i].key_in_runtime ||
			 t.proc.key_addr == rt + cases[i].key_in_runtime),
			"%d %s: tstate %lld key %#llx", r, err, (long long)t.proc.tstate_off,
			(unsigned long long)t.proc.key_addr);
	}
}

static void test_tsd_arm64(void)
{
	const char *a64 = "/usr/aarch64-linux-gnu/lib/libc.so.6";
	char err[128];
	int64_t off = 0;
	int fd = open(a64, O_RDONLY), r;

	if (fd < 0) {
		printf("SKIP: py_tsd_arm64: no %s\n", a64);
		return;
	}
	r = py_glibc_tsd_offset(fd, &off, err, sizeof(err));
	close(fd);
	/* ubfiz x0, x1, #4, #32; mrs x2, tpidr_el0; sub x0, x0, #0x630;
	 * add x2, x2, x0; ldr x0, [x2, #8] */
	T_CHECK("py_tsd_arm64", r == 0 && off == -0x628, "%d off %lld", r, (long long)off);
}

/* ---- hostile files ---- */

static bool copy_file(const char *from, const char *to)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	return system(cmd) == 0;
}

/* Overwrite len bytes at the file offset of dynamic symbol sym (+ add). */
static bool patch_sym(const char *file, const char *sym, long add,
		      const void *bytes, size_t len)
{
	int fd = open(file, O_RDWR);
	uint64_t off = 0;
	bool found = false, ok = false;
	Elf_Scn *scn = NULL;
	Elf *e;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && !found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s) ||
			    !(n = elf_strptr(e, sh.sh_link, s.st_name)) || strcmp(n, sym))
				continue;
			for (size_t k = 0; ; k++) {
				GElf_Phdr ph;

				if (!gelf_getphdr(e, (int)k, &ph))
					break;
				if (ph.p_type == PT_LOAD && s.st_value >= ph.p_vaddr &&
				    s.st_value < ph.p_vaddr + ph.p_filesz) {
					off = s.st_value - ph.p_vaddr + ph.p_offset;
					found = true;
					break;
				}
			}
			break;
		}
	}
	if (e)
		elf_end(e);
	if (found)
		ok = pwrite(fd, bytes, len, (off_t)(off + (uint64_t)add)) == (ssize_t)len;
	close(fd);
	return ok;
}

static void test_hostile_files(void)
{
	char dir[] = "/tmp/ember-py-XXXXXX", path[128], link[160], err[256];
	struct py_target t;
	uint64_t v;
	int r;

	if (!have(PY311) || !mkdtemp(dir)) {
		printf("SKIP: py_hostile_files: no %s\n", PY311);
		return;
	}
	snprintf(path, sizeof(path), "%s/python3.11", dir);
	/* a version that is not its name's */
	v = 0x030c00f0;
	r = copy_file(PY311, path) && patch_sym(path, "Py_Version", 0, &v, 8) ?
	    py_detect_path(NULL, path, NULL, &t, err, sizeof(err)) : 99;
	T_CHECK("py_hostile_version", r < 0 && r != 99, "%d: %s", r, err);
	/* a version ember does not know, named consistently */
	snprintf(path, sizeof(path), "%s/python3.9", dir);
	v = 0x030900f0;
	r = copy_file(PY311, path) && patch_sym(path, "Py_Version", 0, &v, 8) ?
	    py_detect_path(NULL, path, NULL, &t, err, sizeof(err)) : 99;
	T_CHECK("py_hostile_unknown_version", r == -ENOTSUP && strstr(err, "3.9"),
		"%d: %s", r, err);
	/* PyCode_Type with a huge tp_basicsize */
	snprintf(path, sizeof(path), "%s/python3.11", dir);
	v = 1ULL << 40;
	r = copy_file(PY311, path) && patch_sym(path, "PyCode_Type", 32, &v, 8) ?
	    py_detect_path(NULL, path, LIBC, &t, err, sizeof(err)) : 99;
	T_CHECK("py_hostile_code_type", r < 0 && r != 99, "%d: %s", r, err);
	/* the TSS key moved out of _PyRuntime: the stub decodes elsewhere */
	v = 0;
	r = copy_file(PY311, path) &&
	    patch_sym(path, "PyGILState_GetThisThreadState", 0, "\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90\x90", 18) ?
	    py_detect_path(NULL, path, LIBC, &t, err, sizeof(err)) : 99;
	T_CHECK("py_hostile_tss_stub", r < 0 && r != 99, "%d: %s", r, err);
	/* a fake _PyRuntime in 3.13: its cookie, an offset out of its struct */
	{
		FILE *f = popen("scripts/fetch-python.sh --path 2>/dev/null", "r");
		char root[512] = "", src[600];
		uint64_t big = 1 << 19;

		if (f && fgets(root, sizeof(root), f)) {
			root[strcspn(root, "\n")] = 0;
			snprintf(src, sizeof(src), "%s/usr/bin/python3.13", root);
			snprintf(path, sizeof(path), "%s/python3.13", dir);
			r = copy_file(src, path) && patch_sym(path, "_PyRuntime", 0, "xdebugpX", 8) ?
			    py_detect_path(NULL, path, NULL, &t, err, sizeof(err)) : 99;
			T_CHECK("py_hostile_313_cookie", r < 0 && r != 99, "%d: %s", r, err);
			r = copy_file(src, path) && patch_sym(path, "_PyRuntime", 23 * 8, &big, 8) ?
			    py_detect_path(NULL, path, NULL, &t, err, sizeof(err)) : 99;
			T_CHECK("py_hostile_313_offset", r < 0 && r != 99, "%d: %s", r, err);
		} else {
			printf("SKIP: py_hostile_313: python3.13 not fetched\n");
		}
		if (f)
			pclose(f);
	}
	/* sid's 3.14: a free-threaded flag (one sentence, no layout read),
	 * the frame's owner outside the frame */
	{
		char root[512] = "", src[600];
		uint64_t one = 1, big = 1 << 12;

		if (fetched_root("--release sid", root, sizeof(root))) {
			snprintf(src, sizeof(src), "%s/usr/bin/python3.14", root);
			snprintf(path, sizeof(path), "%s/python3.14", dir);
			r = copy_file(src, path) && patch_sym(path, "_PyRuntime", 2 * 8, &one, 8) ?
			    py_detect_path(NULL, path, NULL, &t, err, sizeof(err)) : 99;
			T_CHECK("py_hostile_314_free_threaded", r == -ENOTSUP &&
				strstr(err, "free-threaded"), "%d: %s", r, err);
			r = copy_file(src, path) && patch_sym(path, "_PyRuntime", 36 * 8, &big, 8) ?
			    py_detect_path(NULL, path, NULL, &t, err, sizeof(err)) : 99;
			T_CHECK("py_hostile_314_owner", r == -EINVAL &&
				strstr(err, "fail their checks"), "%d: %s", r, err);
			/* the TSS stub's PyThread_tss_get jump elsewhere: the
			 * absolute key address is not taken on trust */
			r = copy_file(src, path) &&
			    patch_sym(path, "PyGILState_GetThisThreadState", 19, "\x90\x90\x90\x90", 4) ?
			    py_detect_path(NULL, path, NULL, &t, err, sizeof(err)) : 99;
			T_CHECK("py_hostile_314_tss_jump", r != 99 && !t.proc.key_addr &&
				(r < 0 || t.proc.tstate_kind == EMBER_PY_TS_TLS), "%d: %s kind %u",
				r, err, t.proc.tstate_kind);
		} else {
			printf("SKIP: py_hostile_314: python3.14 not fetched\n");
		}
	}
	/* a FIFO and a symbolic link as the binary: refused, never opened */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	mkfifo(path, 0600);
	r = py_detect_path(NULL, path, NULL, &t, err, sizeof(err));
	T_CHECK("py_hostile_fifo", r < 0, "%d: %s", r, err);
	snprintf(link, sizeof(link), "%s/link", dir);
	r = symlink(PY311, link) ? 99 : py_detect_path(NULL, link, NULL, &t, err, sizeof(err));
	T_CHECK("py_hostile_symlink", r < 0 && r != 99, "%d: %s", r, err);
	/* not an ELF file, an empty one */
	snprintf(path, sizeof(path), "%s/python3.11", dir);
	r = system("true") ? 99 : 0;
	{
		int fd = open(path, O_WRONLY | O_TRUNC);

		if (fd >= 0) {
			if (write(fd, "#!/bin/sh\n", 10) != 10)
				r = 99;
			close(fd);
		}
	}
	r = r ? r : py_detect_path(NULL, path, NULL, &t, err, sizeof(err));
	T_CHECK("py_hostile_not_elf", r == 0, "%d", r);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path))
		printf("# cannot remove %s\n", dir);
}

/* ---- a live python3.11 ---- */

struct live {
	pid_t pid;
	char rows[64][3][512];
	uint64_t code[64];
	int nr;
};

static bool thread_pointer(pid_t pid, uint64_t *tp)
{
	bool ok = false;
	int st;

	if (ptrace(PTRACE_SEIZE, pid, 0, 0) || ptrace(PTRACE_INTERRUPT, pid, 0, 0))
		return false;
	if (waitpid(pid, &st, __WALL) != pid)
		goto out;
#if defined(__x86_64__)
	{
		struct user_regs_struct regs;

		ok = !ptrace(PTRACE_GETREGS, pid, 0, &regs);
		*tp = regs.fs_base;
	}
#elif defined(__aarch64__)
	{
		uint64_t tls;
		struct iovec iov = { &tls, sizeof(tls) };

		ok = !ptrace(PTRACE_GETREGSET, pid, (void *)NT_ARM_TLS, &iov);
		*tp = tls;
	}
#endif
out:
	ptrace(PTRACE_DETACH, pid, 0, 0);
	return ok;
}

static uint64_t rd64(int mem, uint64_t a)
{
	uint64_t v = 0;

	return py_mem_read(mem, a, &v, 8) ? 0 : v;
}

/*
 * The frame chain as a backend's walker reads it (include/uapi/ember.h):
 * thread state from the thread pointer, the newest frame, then previous;
 * EMBER_IP_PY slots, leaf first. Entries (3.11's is_entry) are walked
 * through here: the whole chain is one activation in stack_stop.py.
 */
static int walk(int mem, const struct ember_py_proc *p, uint64_t tp,
		uint64_t *slots, int max)
{
	uint64_t ts, fr;
	int32_t key = -1;
	int n = 0;

	if (p->tstate_kind == EMBER_PY_TS_TSD) {
		if (py_mem_read(mem, p->key_addr, &key, 4) || key < 0 || key >= 32)
			return -1;
		ts = rd64(mem, tp + p->tstate_off + (uint64_t)key * 16);
	} else {
		ts = rd64(mem, tp + p->tstate_off);
	}
	fr = ts ? rd64(mem, ts + p->ts_frame[0]) : 0;
	if (fr && p->ts_frame_nr == 2)
		fr = rd64(mem, fr + p->ts_frame[1]);
	for (; fr && n + 2 <= max; fr = rd64(mem, fr + p->fr_previous)) {
		uint8_t owner = 0;
		uint64_t code, instr, off;
		int32_t first = 0, argc = 0, flags = 0;

		py_mem_read(mem, fr + p->fr_owner, &owner, 1);
		if (p->entry_kind == EMBER_PY_ENTRY_SHIM && owner == p->entry_value)
			continue;
		code = rd64(mem, fr + p->fr_code) & ~p->code_tag_mask;
		instr = rd64(mem, fr + p->fr_instr);
		py_mem_read(mem, code + p->co_firstlineno, &first, 4);
		py_mem_read(mem, code + p->co_argcount, &argc, 4);
		py_mem_read(mem, code + p->co_flags, &flags, 4);
		off = instr >= code && instr - code < 0xffffffffULL ? instr - code :
		      EMBER_PY_NO_OFFSET;
		slots[n++] = EMBER_IP_PY | code;
		slots[n++] = (uint64_t)EMBER_PY_CHECK(first, argc, flags) << 32 | off;
	}
	return n;
}

static bool live_start(struct live *lv, const char *how, const char *arg)
{
	char cmd[1024], line[4096];
	int fds[2], st;
	FILE *f;

	memset(lv, 0, sizeof(*lv));
	if (pipe(fds))
		return false;
	lv->pid = fork();
	if (lv->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		snprintf(cmd, sizeof(cmd), how, arg);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	while (f && fgets(line, sizeof(line), f) && strcmp(line, "END\n")) {
		char *save, *q = strtok_r(line, "|", &save), *file, *ln, *id;

		file = strtok_r(NULL, "|", &save);
		ln = strtok_r(NULL, "|", &save);
		id = strtok_r(NULL, "|\n", &save);
		if (!q || !file || !ln || !id || lv->nr == 64)
			continue;
		snprintf(lv->rows[lv->nr][0], 512, "%.500s", q);
		snprintf(lv->rows[lv->nr][1], 512, "%s", file);
		snprintf(lv->rows[lv->nr][2], 512, "%s", ln);
		lv->code[lv->nr++] = strtoull(id, NULL, 10);
	}
	if (f)
		fclose(f);
	/* stopped by its own SIGSTOP */
	return waitpid(lv->pid, &st, WUNTRACED) == lv->pid && WIFSTOPPED(st) &&
	       lv->nr > 0;
}

static void live_end(struct live *lv)
{
	kill(lv->pid, SIGKILL);
	waitpid(lv->pid, NULL, 0);
}

/*
 * The whole agent path of those slots: a sample record as a backend
 * writes it (Python frames leaf first, then the cut marker), aggregated,
 * symbolized and frozen, then written as folded, pprof and OTLP.
 */
static void check_outputs(const char *name, pid_t pid, const uint64_t *slots,
			  int n, const struct live *lv)
{
	static uint64_t rec[512];
	struct ember_sample *s = (void *)rec;
	struct sym_options so = { 0 };
	struct symbolizer *sym = sym_new(&so);
	struct profile_builder *pb = pb_new(NULL, sym);
	struct prof_meta meta = { .backend = "bpf" };
	struct profile *p;
	char *text = NULL, want[700], tn[96];
	size_t len = 0;
	FILE *out;
	bool folded, leaf, otlp = false;

	memset(rec, 0, sizeof(rec));
	s->hdr.type = EMBER_REC_SAMPLE;
	s->hdr.size = sizeof(*s) + 8 * (n + 1);
	s->pid = s->tid = (uint32_t)pid;
	s->nr_user = (uint16_t)(n + 1);
	s->flags = EMBER_SF_USER_CUT | EMBER_SF_PYTHON;
	s->time_ns = 1;
	strcpy(s->comm, "python3");
	memcpy(s->ips, slots, 8 * n);
	s->ips[n] = EMBER_IP_PY_CUT | EMBER_PY_CUT_ENTRY;
	pb_add_record(pb, &s->hdr);
	p = pb_finish(pb, &meta);
	out = open_memstream(&text, &len);
	if (p && out)
		output_folded(p, out);
	if (out)
		fclose(out);
	/* root first: [cut];[python cut];<module> (stack_stop.py:44);...;leaf (stack_stop.py:33) */
	snprintf(want, sizeof(want), "[cut];[python cut];<module> (stack_stop.py:%s);middle (stack_stop.py:%s);",
		 lv->rows[lv->nr - 1][2], lv->rows[lv->nr - 2][2]);
	folded = text && strstr(text, want);
	snprintf(want, sizeof(want), ";leaf (stack_stop.py:%s) 1", lv->rows[0][2]);
	leaf = text && strstr(text, want);
	snprintf(tn, sizeof(tn), "%s_folded", name);
	T_CHECK(tn, folded && leaf, "folded: %s", text ? text : "(none)");
	free(text);
	text = NULL;
	out = open_memstream(&text, &len);
	if (p && out)
		output_otlp(p, out);
	if (out)
		fclose(out);
	for (size_t i = 0; text && i + 7 <= len; i++)
		otlp |= !memcmp(text + i, "cpython", 7);
	snprintf(tn, sizeof(tn), "%s_otlp_frame_type", name);
	T_CHECK(tn, otlp, "no profile.frame.type cpython in %zu bytes", len);
	free(text);
	/* pprof: the function is the qualname, with its file and line */
	{
		bool fn = false;

		for (size_t i = 0; p && i < p->nr_samples; i++)
			for (uint32_t j = 0; j < p->samples[i].nr_frames; j++) {
				const struct prof_frame *f = p->samples[i].frames[j];

				fn |= f->kind == PROF_FRAME_PYTHON && f->function &&
				      !strcmp(f->function, "Deep.method") &&
				      f->source_file && strstr(f->source_file, "stack_stop.py") &&
				      f->line == 13;
			}
		snprintf(tn, sizeof(tn), "%s_frame", name);
		T_CHECK(tn, fn, "no Deep.method frame at stack_stop.py:13");
	}
	profile_free(p);
	pb_free(pb);
	sym_free(sym);
}

/*
 * The same process detected from ranges that run past its mappings' ends,
 * as the kernel's mapping records tell them on arm64 (the loader maps an
 * image executable, then its data over the tail, and only executable
 * mappings are reported): found all the same, through the map_files
 * entry that starts there.
 */
static void detect_told_ranges(const char *name, pid_t pid,
			       struct sym_map_line *v, uint32_t n,
			       const struct py_target *want)
{
	struct py_target t;
	char err[256] = "", tn[96];
	int r;

	for (uint32_t i = 0; i < n; i++)
		v[i].end += 0x200000;
	r = py_detect((uint32_t)pid, v, n, &t, err, sizeof(err));
	for (uint32_t i = 0; i < n; i++)
		v[i].end -= 0x200000;
	snprintf(tn, sizeof(tn), "%s_detect_told_ranges", name);
	T_CHECK(tn, r == 1 && !memcmp(&t.proc, &want->proc, sizeof(t.proc)),
		"%d: %s", r, err);
}

static void test_live(const char *name, const char *bin, const char *how,
		      const char *arg, bool long_name)
{
	static struct test_maps maps;
	struct live lv;
	struct py_target t;
	struct py_names *pn;
	uint64_t tp = 0, slots[256];
	char err[256] = "", mem_path[64], tn[96];
	int mem, n, r, good = 0, bad = 0, fake = 0;

	if (!have(bin)) {
		printf("SKIP: %s: no %s\n", name, bin);
		return;
	}
	if (!live_start(&lv, how, arg)) {
		printf("SKIP: %s: could not start (%s)\n", name, how);
		live_end(&lv);
		return;
	}
	maps.n = 0;
	r = proc_maps_read(NULL, (uint32_t)lv.pid, test_maps_add, &maps,
			   NULL) ? -1 :
	    py_detect((uint32_t)lv.pid, maps.v, maps.n, &t, err, sizeof(err));
	snprintf(tn, sizeof(tn), "%s_detect", name);
	T_CHECK(tn, r == 1, "%d: %s", r, err);
	if (r == 1)
		detect_told_ranges(name, lv.pid, maps.v, maps.n, &t);
	snprintf(mem_path, sizeof(mem_path), "/proc/%d/mem", lv.pid);
	mem = open(mem_path, O_RDONLY);
	if (r != 1 || mem < 0 || !thread_pointer(lv.pid, &tp)) {
		live_end(&lv);
		if (mem >= 0)
			close(mem);
		return;
	}
	n = walk(mem, &t.proc, tp, slots, 256);
	snprintf(tn, sizeof(tn), "%s_walk", name);
	T_CHECK(tn, n == 2 * lv.nr, "%d slots for %d printed frames", n, lv.nr);
	pn = py_names_new((uint32_t)lv.pid, &t.lay);
	for (int i = 0; pn && i + 1 < n && i / 2 < lv.nr; i += 2) {
		struct py_frame f;
		const char *(*row)[3] = NULL;
		bool ok = py_names_resolve(pn, EMBER_IP_VALUE(slots[i]), slots[i + 1], &f);

		(void)row;
		if (long_name && !strncmp(lv.rows[i / 2][0], "xxxx", 4)) {
			/* the 2 MB qualname is refused: co_name is shown */
			ok = ok && !strcmp(f.name, "middle");
		} else {
			ok = ok && EMBER_IP_VALUE(slots[i]) == lv.code[i / 2] &&
			     !strcmp(f.name, lv.rows[i / 2][0]) && f.file &&
			     !strcmp(f.file, lv.rows[i / 2][1]) &&
			     f.line == atoi(lv.rows[i / 2][2]);
		}
		if (ok) {
			good++;
		} else {
			bad++;
			printf("# frame %d: %s (%s:%d), printed %s (%s:%s)\n", i / 2,
			       f.name ? f.name : "?", f.file ? f.file : "?", f.line,
			       lv.rows[i / 2][0], lv.rows[i / 2][1], lv.rows[i / 2][2]);
		}
	}
	snprintf(tn, sizeof(tn), "%s_names", name);
	T_CHECK(tn, good == lv.nr && !bad, "%d right, %d wrong of %d", good, bad, lv.nr);
	if (pn && n >= 2) {
		struct py_frame f;

		/* the sample's check differs: the code object is not that one */
		fake += py_names_resolve(pn, EMBER_IP_VALUE(slots[0]),
					 slots[1] ^ (1ULL << 40), &f);
		/* not a code object: the thread state, the stack, nothing */
		fake += py_names_resolve(pn, tp, slots[1], &f);
		fake += py_names_resolve(pn, EMBER_IP_VALUE(slots[0]) + 8, slots[1], &f);
		fake += py_names_resolve(pn, 0x10, slots[1], &f);
		fake += py_names_resolve(pn, (1ULL << 55) - 64, slots[1], &f);
		snprintf(tn, sizeof(tn), "%s_fake_code", name);
		T_CHECK(tn, fake == 0, "%d fake code objects named", fake);
	}
	py_names_free(pn);
	if (!long_name && n > 0)
		check_outputs(name, lv.pid, slots, n, &lv);
	close(mem);
	live_end(&lv);
}

/* A fetched Debian python (trixie's 3.13, sid's 3.14) under its own
 * loader and libc: the 3.14 one's f_executable is a tagged _PyStackRef */
static void test_live_fetched(const char *name, const char *fetch, const char *py)
{
	char root[512] = "", bin[600], how[2048];

	if (!fetched_root(fetch, root, sizeof(root))) {
		printf("SKIP: %s: Debian's %s not fetched (offline?)\n", name, py);
		return;
	}
	snprintf(bin, sizeof(bin), "%s/usr/bin/%s", root, py);
	snprintf(how, sizeof(how),
		 "exec %s/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "
		 "--library-path %s/usr/lib/x86_64-linux-gnu %s -I %%s",
		 root, root, bin);
	test_live(name, bin, how, DIR "/stack_stop.py", false);
}

/* The aggregation keeps tagged Python slots and cuts only garbage. */
static void test_user_frames_valid(void)
{
	const __u64 py = EMBER_IP_PY | 0x7f0000001000ULL, cut = EMBER_IP_PY_CUT | 4;
	const __u64 a[] = { 0x401000, py, 0, py, 0xffffffff00000010ULL, 0x402000, cut };
	const __u64 b[] = { 0x401000, py };		/* no word after it */
	const __u64 c[] = { 0x401000, EMBER_IP_PY, 5 };	/* code 0 */
	const __u64 d[] = { 0x401000, 0xffffffff81000000ULL };	/* kernel */

	T_CHECK("py_user_frames_valid",
		pb_user_frames_valid(a, 7) == 7 && pb_user_frames_valid(b, 2) == 1 &&
		pb_user_frames_valid(c, 3) == 1 && pb_user_frames_valid(d, 2) == 1,
		"%u %u %u %u", pb_user_frames_valid(a, 7), pb_user_frames_valid(b, 2),
		pb_user_frames_valid(c, 3), pb_user_frames_valid(d, 2));
}

/*
 * Other builds when this machine has them (pyenv's, built from source with
 * --enable-shared: a PIE launcher and libpython at a random base, no LTO):
 * 3.11 and 3.12 live; a 3.13 libpython is refused (TLS through
 * __tls_get_addr). Nothing fails for their absence.
 */
static void test_live_pyenv(void)
{
	const char *home = getenv("PYENV_ROOT");
	char pat[512], name[64], how[700];
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/versions/3.1[12].*/bin/python3.1[12]",
		 home ? home : "/root/.pyenv");
	if (glob(pat, 0, NULL, &g) || !g.gl_pathc) {
		printf("SKIP: py_live_pyenv: no pyenv 3.11/3.12 (%s)\n", pat);
		return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *minor = strrchr(g.gl_pathv[i], '.');

		snprintf(name, sizeof(name), "py_live_pyenv_3%s", minor ? minor + 1 : "x");
		snprintf(how, sizeof(how), "exec %s -I %%s", g.gl_pathv[i]);
		test_live(name, g.gl_pathv[i], how, DIR "/stack_stop.py", false);
	}
	globfree(&g);
}

/*
 * py_splice(): activations of a walk put back at the replay's eval-loop
 * frames, in order; refused whenever the order is not certain.
 */
static void test_splice(void)
{
	const uint64_t gap = EMBER_IP_PY_CUT | EMBER_PY_CUT_NATIVE;
	const uint64_t A = EMBER_IP_PY | 0xa000, B = EMBER_IP_PY | 0xb000;
	const uint64_t C = EMBER_IP_PY | 0xc000;
	struct py_eval_ranges ev = { .start = { 0x5000 }, .end = { 0x6000 } };
	/* leaf 0x1000, two eval frames (0x5010, 0x5020), main 0x2000 */
	const uint64_t o[] = { 0x1000, 0x1100, 0x5010, 0x1200, 0x5020, 0x2000 };
	/* placed: A before 0x1100's caller; cut; B and C in the rest */
	const uint64_t w1[] = { 0x1000, 0x1100, A, 1, 0x1200, gap, B, 2, C, 3 };
	const uint64_t want1[] = { 0x1000, 0x1100, A, 1, 0x1200, B, 2, C, 3,
				   0x2000 };
	/* cut at the leaf; the first activation was a shim alone */
	const uint64_t w2[] = { 0x1000, gap, gap, B, 2 };
	const uint64_t want2[] = { 0x1000, 0x1100, 0x5010, 0x1200, B, 2, 0x2000 };
	/* an eval-loop frame left native by the walk: refused */
	const uint64_t w3[] = { 0x1000, 0x1100, 0x5010, gap, B, 2 };
	/* one activation for two eval frames: refused */
	const uint64_t w4[] = { 0x1000, gap, B, 2 };
	/* a Python cut: refused */
	const uint64_t w5[] = { 0x1000, gap, B, 2,
				EMBER_IP_PY_CUT | EMBER_PY_CUT_FRAME };
	/* a slot pair cut in half: refused */
	const uint64_t w6[] = { 0x1000, gap, gap, B };
	uint64_t out[16];
	int n;

	n = py_splice(&ev, w1, 10, o, 6, out, 16);
	T_CHECK("py_splice_placed_and_rest", n == 10 &&
		!memcmp(out, want1, sizeof(want1)), "%d frames", n);
	n = py_splice(&ev, w2, 5, o, 6, out, 16);
	T_CHECK("py_splice_empty_activation", n == 7 &&
		!memcmp(out, want2, sizeof(want2)), "%d frames", n);
	T_CHECK("py_splice_native_eval_refused",
		py_splice(&ev, w3, 6, o, 6, out, 16) < 0, "placed");
	T_CHECK("py_splice_count_refused",
		py_splice(&ev, w4, 4, o, 6, out, 16) < 0, "placed");
	T_CHECK("py_splice_python_cut_refused",
		py_splice(&ev, w5, 5, o, 6, out, 16) < 0, "placed");
	T_CHECK("py_splice_half_pair_refused",
		py_splice(&ev, w6, 4, o, 6, out, 16) < 0, "placed");
	T_CHECK("py_splice_room_refused",
		py_splice(&ev, w1, 10, o, 6, out, 9) < 0, "placed");
	/* another leaf: not the same sample */
	T_CHECK("py_splice_other_leaf_refused",
		py_splice(&ev, w1, 10, o + 1, 5, out, 16) < 0, "placed");
}

/*
 * py_unshift(): the backend caught the leaf's eval loop in its prologue
 * or epilogue; each activation goes one eval-loop frame out.
 */
static void test_unshift(void)
{
	const uint64_t shift = EMBER_IP_PY_CUT | EMBER_PY_CUT_SHIFT;
	const uint64_t entry = EMBER_IP_PY_CUT | EMBER_PY_CUT_ENTRY;
	const uint64_t A = EMBER_IP_PY | 0xa000, B = EMBER_IP_PY | 0xb000;
	/* leaf eval 0x5000 (empty): A1 = A,B at the leaf, natives 0x1100
	 * 0x1200, A2 = B, natives 0x1300, then the eval frame with none */
	const uint64_t w[] = { A, 1, B, 2, 0x1100, 0x1200, B, 3, 0x1300,
			       shift, 0x5000, 0x2000, 0x2100 };
	const uint64_t want[] = { 0x5000, 0x1100, 0x1200, A, 1, B, 2, 0x1300,
				  B, 3, 0x2000, 0x2100 };
	/* the leaf is native: not the shape the marker says */
	const uint64_t bad[] = { 0x1000, A, 1, 0x1100, shift, 0x5000, 0x2000 };
	const uint64_t bad_want[] = { 0x1000, A, 1, 0x1100, entry, 0x2000 };
	const uint64_t none[] = { A, 1, 0x1100, 0x2000 };
	uint64_t out[16];
	int n;

	/* eval 0x5000-0x6000; 0x2100 returns into it with wide */
	struct py_eval_ranges ev = { .start = { 0x5000 }, .end = { 0x6000 } };
	uint64_t wide[13];
	bool cut;

	n = py_unshift(w, 13, out, &ev, &cut);
	T_CHECK("py_unshift_order", n == 12 && !cut &&
		!memcmp(out, want, sizeof(want)),
		"%d frames", n);
	n = py_unshift(bad, 7, out, NULL, &cut);
	T_CHECK("py_unshift_bad_shape_cut", n == 6 && cut &&
		!memcmp(out, bad_want, sizeof(bad_want)), "%d frames", n);
	T_CHECK("py_unshift_none", py_unshift(none, 4, out, NULL, &cut) < 0, "rewritten");
	/* another eval frame left native further out: not the leaf's alone */
	memcpy(wide, w, sizeof(wide));
	wide[12] = 0x5101;
	n = py_unshift(wide, 13, out, &ev, &cut);
	T_CHECK("py_unshift_eval_after_cut", n == 12 && out[9] ==
		(EMBER_IP_PY_CUT | EMBER_PY_CUT_ENTRY) && out[11] == 0x5101,
		"%d frames", n);
	/* the marker's PC missing (the walk's last slot) */
	n = py_unshift(w, 10, out, NULL, &cut);
	T_CHECK("py_unshift_no_pc_cut", n == 10 && out[9] == entry,
		"%d frames", n);
}

int main(void)
{
	test_splice();
	test_unshift();
	test_user_frames_valid();
	test_linetable_truth();
	test_linetable_hostile();
	test_detect_311();
	test_detect_libpython311();
	test_detect_313();
	test_detect_314();
	test_tsd_arm64();
	test_detect_arm64();
	test_hostile_files();
	test_live("py_live_311", PY311, "exec " PY311 " -I %s", DIR "/stack_stop.py", false);
	test_live("py_live_311_long_name", PY311, "exec " PY311 " -I %s long", DIR "/stack_stop.py", true);
	/* its own mount namespace: the binary's path there is not the host's */
	if (geteuid() == 0 && have("/usr/bin/unshare"))
		test_live("py_live_311_mntns", PY311,
			  "d=$(mktemp -d /tmp/ember-py-ns-XXXXXX) && "
			  "exec unshare -m sh -c \"mount --bind /usr/bin $d && exec $d/python3.11 -I %s\"",
			  DIR "/stack_stop.py", false);
	else
		printf("SKIP: py_live_311_mntns: needs root and unshare\n");
	test_live_fetched("py_live_313", "", "python3.13");
	test_live_fetched("py_live_314", "--release sid", "python3.14");
	test_live_pyenv();
	if (system("rmdir /tmp/ember-py-ns-* 2>/dev/null")) {
		/* none left */
	}
	T_EXIT();
}
