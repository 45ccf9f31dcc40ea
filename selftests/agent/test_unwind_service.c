// SPDX-License-Identifier: GPL-2.0-only
/*
 * The unwind service against a fake backend that keeps what it is given:
 *  - binding this process loads one valid table per executable file and
 *    describes every executable mapping, sorted, with the right bias (a
 *    known function's address minus the bias is its ELF symbol value);
 *  - the live stack of this thread unwinds to _start with only what the
 *    service handed the backend (its tables and bindings, the vDSO too);
 *  - a second request with unchanged mappings binds nothing new; dlopen
 *    of a new library does; forget unbinds; stop drops every table;
 *  - a library loaded with no request is found by the follow-up reads
 *    of a recently bound process's maps;
 *  - an exec is bound after a short delay, not at once, and without a
 *    flush: its request need not wake the worker, which still comes;
 *  - bound again from nothing, every file comes from the cache (no table
 *    built or loaded again); a file changed in place (same inode, new
 *    mtime) is not taken for the one the cache knows.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ember_unwind.h"
#include "lib/clock.h"
#include "unwind/unwind_service.h"
#include "test_util.h"

#define MAX_TABLES	64

struct fake {
	struct { uint32_t id; void *t; size_t len; } tables[MAX_TABLES];
	int nr_tables, loads, drops, binds, unbinds, bad_tables;
	struct ember_unwind_mapping maps[EMBER_UNWIND_MAX_MAPPINGS];
	size_t nr_maps;
	uint32_t bound_pid;
};

static struct fake fk;

static int f_load(struct ember_source *src, uint32_t id, const void *t,
		  size_t len, char *err, size_t err_len)
{
	const char *why;

	(void)src; (void)err; (void)err_len;
	fk.loads++;
	if (ember_unwind_table_check(t, len, &why)) {
		fk.bad_tables++;
		return -EINVAL;
	}
	if (fk.nr_tables == MAX_TABLES)
		return -ENOSPC;
	fk.tables[fk.nr_tables].id = id;
	fk.tables[fk.nr_tables].t = malloc(len);
	memcpy(fk.tables[fk.nr_tables].t, t, len);
	fk.tables[fk.nr_tables++].len = len;
	return 0;
}

static int f_drop(struct ember_source *src, uint32_t id)
{
	(void)src;
	fk.drops++;
	for (int i = 0; i < fk.nr_tables; i++)
		if (fk.tables[i].id == id) {
			free(fk.tables[i].t);
			fk.tables[i] = fk.tables[--fk.nr_tables];
			return 0;
		}
	return -ENOENT;
}

static int f_bind(struct ember_source *src, uint32_t pid,
		  const struct ember_unwind_mapping *m, size_t nr,
		  char *err, size_t err_len)
{
	(void)src; (void)err; (void)err_len;
	if (!nr) {
		fk.unbinds++;
		fk.nr_maps = 0;
		return 0;
	}
	fk.binds++;
	fk.bound_pid = pid;
	memcpy(fk.maps, m, nr * sizeof(*m));
	fk.nr_maps = nr;
	return 0;
}

static const struct ember_source_ops fake_ops = {
	.name = "fake",
	.unwind_load = f_load,
	.unwind_drop = f_drop,
	.unwind_bind = f_bind,
};

static const struct ember_unwind_table *table_of(uint32_t id)
{
	for (int i = 0; i < fk.nr_tables; i++)
		if (fk.tables[i].id == id)
			return fk.tables[i].t;
	return NULL;
}

static const struct ember_unwind_rule *rule_for(uint64_t pc)
{
	for (size_t i = 0; i < fk.nr_maps; i++) {
		const struct ember_unwind_mapping *m = &fk.maps[i];

		if (pc >= m->start && pc < m->end) {
			const struct ember_unwind_table *t = table_of(m->table_id);

			return t ? ember_unwind_find(t, pc - m->bias) : NULL;
		}
	}
	return NULL;
}

static int read_self(void *ctx, __u64 addr, __u64 *val)
{
	(void)ctx;
	if (!addr || addr & 7)
		return -1;
	memcpy(val, (const void *)(uintptr_t)addr, 8);
	return 0;
}

/* Unwinds this frame's caller chain; returns frames, *end the last step. */
static __attribute__((noinline)) int unwind_here(uint64_t *ips, int max,
						  int *end)
{
	struct ember_uregs r = { 0 };
	uint64_t here;
	int n = 0;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(here), "=r"(r.sp), "=r"(r.fp));
	r.pc = here;
	r.exact = 1;
	r.fp_ok = 1;
	*end = -1;
	while (n < max) {
		const struct ember_unwind_rule *rule =
			rule_for(ember_unwind_lookup_pc(&r));

		if (!rule) {
			*end = 99;
			break;
		}
		*end = ember_unwind_step(rule, &r, read_self, NULL);
		if (*end != EMBER_STEP_NEXT)
			break;
		ips[n++] = r.pc;
	}
	return n;
}

static int by_qsort_n, by_qsort_end;
static uint64_t by_qsort[64];

static int cmp(const void *a, const void *b)
{
	static int done;

	if (!done++)
		by_qsort_n = unwind_here(by_qsort, 64, &by_qsort_end);
	return *(const int *)a - *(const int *)b;
}

/* A library this process has not loaded yet, loaded now; NULL if none. */
static void *dlopen_new(void)
{
	static const char *const libs[] = {
		"libmagic.so.1", "libexpat.so.1", "libbz2.so.1.0",
		"libncursesw.so.6", "libgmp.so.10", "libffi.so.8",
		"libz.so.1", "liblzma.so.5", "libzstd.so.1",
	};

	for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD)) {
			void *h = dlopen(libs[i], RTLD_NOW);

			if (h)
				return h;
		}
	return NULL;
}

/* A private copy of a library with CFI, or false. */
static bool copy_lib(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n = 0;
	int in = open(from, O_RDONLY | O_CLOEXEC), out;

	if (in < 0)
		return false;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	while (out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			n = -1;
	close(in);
	if (out >= 0)
		close(out);
	return out >= 0 && n == 0;
}

/*
 * Rewrites the last byte of lib's build-id in place (same inode): a new
 * build of the same library. false if it has none.
 */
static bool change_build_id(const char *lib)
{
	static unsigned char buf[4 << 20];
	int fd = open(lib, O_RDWR | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
	const Elf64_Ehdr *eh = (const void *)buf;
	bool done = false;

	for (int i = 0; len > (ssize_t)sizeof(*eh) && i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = (const void *)(buf + eh->e_shoff +
						      (size_t)i * sizeof(*sh));
		const Elf64_Nhdr *nh = (const void *)(buf + sh->sh_offset);
		off_t at;

		if ((char *)(sh + 1) > (char *)buf + len || sh->sh_type != SHT_NOTE ||
		    sh->sh_offset + sizeof(*nh) > (size_t)len ||
		    nh->n_type != NT_GNU_BUILD_ID || !nh->n_descsz)
			continue;
		at = (off_t)(sh->sh_offset + sizeof(*nh) + ((nh->n_namesz + 3) & ~3u) +
			     nh->n_descsz - 1);
		if (at >= len)
			break;
		buf[at] ^= 0xff;
		done = pwrite(fd, &buf[at], 1, at) == 1;
		break;
	}
	if (fd >= 0)
		close(fd);
	return done;
}

/* Tables loaded by a binding of this process made from nothing. */
static int rebind_loads(struct unwind_service *us)
{
	int loads = fk.loads;

	unwind_service_forget(us, (uint32_t)getpid(), 0);
	unwind_service_flush(us, 10000);
	unwind_service_request(us, (uint32_t)getpid(), 0);
	unwind_service_flush(us, 10000);
	return fk.loads - loads;
}

/*
 * The cheap path of a known file (a stat, no open) must not serve a
 * stale table: the same inode with a new mtime is a new file.
 */
static void test_file_cache(struct unwind_service *us)
{
	char lib[] = "/tmp/ember-ut-XXXXXX";
	struct timespec later[2] = { { 0, UTIME_OMIT }, { 0, 0 } };
	void *h;
	int fd = mkstemp(lib), loads;

	loads = rebind_loads(us);
	T_CHECK("unwind_service_known_files_from_cache", loads == 0 &&
		fk.nr_maps >= 3 && rule_for((uint64_t)(uintptr_t)&qsort),
		"%d tables loaded again, %zu mappings", loads, fk.nr_maps);
	if (fd >= 0)
		close(fd);
	/* libz: libelf's own dependency, so present wherever ember runs */
	if (fd < 0 || !copy_lib("/usr/lib/x86_64-linux-gnu/libz.so.1", lib)) {
		T_CHECK("unwind_service_changed_file_rebuilt", false,
			"cannot copy libz.so.1 to %s", lib);
		unlink(lib);
		return;
	}
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	loads = rebind_loads(us);
	if (h)
		dlclose(h);
	/*
	 * The same inode rewritten (a build step writing its output in
	 * place): the copy's table was libz's own (same build-id), the
	 * rewritten file's must be built anew.
	 */
	later[1].tv_sec = time(NULL) + 100;
	if (!change_build_id(lib) || utimensat(AT_FDCWD, lib, later, 0)) {
		T_CHECK("unwind_service_changed_file_rebuilt", false,
			"cannot rewrite %s", lib);
		unlink(lib);
		return;
	}
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	T_CHECK("unwind_service_changed_file_rebuilt", h && loads == 0 &&
		rebind_loads(us) == 1, "copy loaded %d tables, dlopen %s",
		loads, h ? "ok" : dlerror());
	if (h)
		dlclose(h);
	unlink(lib);
}

static void *binding_of(struct proc_table *procs)
{
	return proc_table_slot_attach(procs, (uint32_t)getpid(), 0,
				      PROC_SLOT_UNWIND, NULL);
}

/*
 * The binding lives in the process model: a binding made before the
 * table knew the pid was reused moves to the newer process, and one whose
 * process goes from the table (its exit written) is unbound.
 */
static void test_process_model(struct unwind_service *us,
			       struct proc_table *procs)
{
	uint32_t me = (uint32_t)getpid();
	struct unwind_service_stats st;
	int unbinds = fk.unbinds;
	struct timespec now;
	uint64_t t;

	clock_gettime(CLOCK_MONOTONIC, &now);
	t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	T_CHECK("unwind_service_binding_in_process_model", binding_of(procs) &&
		fk.nr_maps > 0, "no binding on the process");
	/* a sample a second after the exit: the pid's next process (one
	 * within the exit's tail would still be the exited one's) */
	proc_table_exit(procs, me, t, NULL, false);
	proc_table_sample(procs, me, t + 1000000000ull, "again", true, 0);
	proc_table_release(procs, proc_table_advance(procs));
	unwind_service_flush(us, 10000);
	T_CHECK("unwind_service_binding_adopted_by_reused_pid",
		fk.unbinds == unbinds && binding_of(procs) && fk.nr_maps > 0,
		"unbinds %d", fk.unbinds - unbinds);
	proc_table_exit(procs, me, t + 1000000001ull, NULL, false);
	proc_table_release(procs, proc_table_advance(procs));
	unwind_service_flush(us, 10000);
	unwind_service_get_stats(us, &st);
	T_CHECK("unwind_service_unbound_when_process_released",
		fk.unbinds == unbinds + 1 && fk.nr_maps == 0 && st.bound == 0 &&
		!binding_of(procs), "unbinds %d, %u bound",
		fk.unbinds - unbinds, st.bound);
}

/* Up to 5 s for *count to leave was (a loaded machine): the ms it took. */
static int wait_changed(const int *count, int was)
{
	int i;

	for (i = 0; i < 1000 && *count == was; i++)
		usleep(5000);
	return 5 * i;
}

/* Check name: *count went from was up by exactly one, within 5 s. */
static void check_one_more(const char *name, const int *count, int was,
			   const char *what)
{
	int ms = wait_changed(count, was);

	T_CHECK(name, *count == was + 1, "%s %d times in %d ms", what,
		*count - was, ms);
}

/*
 * Exec and exit requests do not wake the worker at once (LAZY_WAKE_NS):
 * with nobody flushing, an exec is still bound and its exit unbound,
 * whether they come after a second of quiet (the request wakes the
 * worker) or in a storm of such requests (LAZY_STORM_RATE a second: the
 * worker wakes on its own every LAZY_WAKE_NS).
 */
static void test_lazy_unflushed(struct unwind_service *us)
{
	uint32_t me = (uint32_t)getpid();
	int binds = fk.binds, unbinds = fk.unbinds;

	usleep(1200000);	/* quiet: the worker sleeps long */
	for (int round = 0; round < 2; round++) {
		if (round)	/* exits of pids nobody bound: a storm */
			for (uint32_t pid = 4000000; pid < 4000100; pid++)
				unwind_service_forget(us, pid, mono_ns());
		unwind_service_exec(us, me, mono_ns());
		check_one_more(round ? "unwind_service_lazy_exec_bound_busy" :
				       "unwind_service_lazy_exec_bound_idle",
			       &fk.binds, binds, "bound");
		unwind_service_forget(us, me, mono_ns());
		check_one_more(round ? "unwind_service_lazy_exit_unbound_busy" :
				       "unwind_service_lazy_exit_unbound_idle",
			       &fk.unbinds, unbinds, "unbound");
		binds = fk.binds;
		unbinds = fk.unbinds;
	}
}

int main(void)
{
	struct proc_table *procs = proc_table_new(NULL);
	const struct unwind_service_opts uo = { .verbose = getenv("V") != NULL };
	struct unwind_service *us = unwind_service_start(&fake_ops, NULL, procs,
							 &uo);
	struct unwind_service_stats st;
	bool sorted = true, vdso = false, bias_ok = false;
	int v[4] = { 3, 1, 2, 0 }, binds;
	void *h, *h2;

	T_CHECK("unwind_service_starts", us != NULL, "no service");
	if (!us)
		T_EXIT();
	unwind_service_request(us, (uint32_t)getpid(), 0);
	unwind_service_flush(us, 10000);
	unwind_service_get_stats(us, &st);
	T_CHECK("unwind_service_binds_self", fk.binds == 1 &&
		fk.bound_pid == (uint32_t)getpid() && fk.nr_maps >= 3 &&
		fk.nr_tables >= 2 && fk.bad_tables == 0 && st.binds == 1,
		"binds %d, %zu mappings, %d tables (%d refused), stats binds %" PRIu64,
		fk.binds, fk.nr_maps, fk.nr_tables, fk.bad_tables, st.binds);
	for (size_t i = 0; i < fk.nr_maps; i++) {
		if (i && fk.maps[i].start < fk.maps[i - 1].end)
			sorted = false;
		if (fk.maps[i].flags & EMBER_UMF_VDSO)
			vdso = fk.maps[i].table_id != 0;
	}
	T_CHECK("unwind_service_mappings_sorted", sorted, "overlap or disorder");
	T_CHECK("unwind_service_vdso_has_table", vdso, "no vDSO table");
	/* bias: a libc function's address minus the bias is inside the table */
	{
		uint64_t pc = (uint64_t)(uintptr_t)&qsort;

		for (size_t i = 0; i < fk.nr_maps; i++)
			if (pc >= fk.maps[i].start && pc < fk.maps[i].end &&
			    fk.maps[i].table_id)
				bias_ok = rule_for(pc) != NULL &&
					  rule_for(pc)->cfa_type == EMBER_CFA_SP;
	}
	T_CHECK("unwind_service_bias_finds_qsort", bias_ok,
		"qsort's entry has no SP rule through the binding");

	qsort(v, 4, sizeof(v[0]), cmp);
	T_CHECK("unwind_service_stack_complete", by_qsort_n >= 5 &&
		by_qsort_end == EMBER_STEP_END,
		"%d frames, ended with %d", by_qsort_n, by_qsort_end);

	binds = fk.binds;
	unwind_service_request(us, (uint32_t)getpid(), 0);
	unwind_service_flush(us, 10000);
	T_CHECK("unwind_service_unchanged_not_rebound", fk.binds == binds,
		"rebound %d times", fk.binds - binds);

	/* a library this process has not loaded yet */
	h = dlopen_new();
	unwind_service_request(us, (uint32_t)getpid(), 0);
	unwind_service_flush(us, 10000);
	T_CHECK("unwind_service_dlopen_rebinds", !h || fk.binds == binds + 1,
		"binds %d", fk.binds - binds);

	/*
	 * Another one, and no request: a process that maps code and then
	 * sleeps says nothing, so the service reads the maps of a process
	 * it has just bound again by itself, a little later.
	 */
	binds = fk.binds;
	h2 = dlopen_new();
	for (int i = 0; h2 && i < 40 && fk.binds == binds; i++) {
		usleep(100000);
		unwind_service_flush(us, 10000);
	}
	unwind_service_get_stats(us, &st);
	T_CHECK("unwind_service_recheck_finds_dlopen", !h2 ||
		(fk.binds == binds + 1 && st.recheck_binds >= 1),
		"binds %d, %" PRIu64 " rechecks, %" PRIu64 " of them bound",
		fk.binds - binds, st.rechecks, st.recheck_binds);

	unwind_service_forget(us, (uint32_t)getpid(), 0);
	unwind_service_flush(us, 10000);
	T_CHECK("unwind_service_forget_unbinds", fk.unbinds == 1 && fk.nr_maps == 0,
		"unbinds %d", fk.unbinds);
	test_file_cache(us);
	unwind_service_forget(us, (uint32_t)getpid(), 0);
	unwind_service_flush(us, 10000);
	/*
	 * An exec is bound a little later (EXEC_BIND_DELAY_MS), not at once.
	 * Its record is dated 300 ms ahead: on a loaded machine the flush
	 * alone can take longer than the delay, which must not count as
	 * "at once".
	 */
	{
		struct timespec now;
		int before = fk.binds;

		clock_gettime(CLOCK_MONOTONIC, &now);
		unwind_service_exec(us, (uint32_t)getpid(),
				    (uint64_t)now.tv_sec * 1000000000ull +
				    (uint64_t)now.tv_nsec + 300000000ull);
		unwind_service_flush(us, 10000);
		T_CHECK("unwind_service_exec_not_bound_at_once", fk.binds == before,
			"bound %d times at once", fk.binds - before);
		for (int i = 0; i < 200 && fk.binds == before; i++) {
			usleep(10000);
			unwind_service_flush(us, 10000);
		}
		T_CHECK("unwind_service_exec_bound_after_delay", fk.binds == before + 1,
			"bound %d times", fk.binds - before);
	}
	test_process_model(us, procs);
	test_lazy_unflushed(us);
	unwind_service_stop(us);
	T_CHECK("unwind_service_stop_drops_tables", fk.nr_tables == 0,
		"%d tables left", fk.nr_tables);
	T_CHECK("unwind_service_stop_leaves_no_binding",
		!proc_table_slot_attach(procs, (uint32_t)getpid(), 0,
					PROC_SLOT_UNWIND, NULL),
		"a binding left in the process model");
	proc_table_free(procs);
	if (h)
		dlclose(h);
	if (h2)
		dlclose(h2);
	T_EXIT();
}
