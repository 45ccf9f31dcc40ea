// SPDX-License-Identifier: GPL-2.0-only
/*
 * The symbolizer (symbolize.h): processes and their mappings, and the path
 * from an address to frames.
 *
 *   user address -> mapping of the process (start, end, pgoff, file)
 *                -> file offset = addr - start + pgoff
 *                -> ELF virtual address through the file's PT_LOAD table
 *                -> symbols / DWARF of the file (sym_cache.c, sym_elf.c)
 *
 * Mappings are read from /proc/PID/maps when a process is first seen
 * (exec record, touch, or first lookup) and their files are opened then,
 * through /proc/PID/map_files or /proc/PID/root (containers), so lookups
 * keep working after the process exits. A process's state (struct
 * sym_proc) hangs off its entry in the process model (proc/proc.h) and
 * goes with it: an exited process once the profile holding its samples
 * is written (proc_table_release(), or sym_sweep() on a table of our
 * own), a live one when the table's cap evicts it. Main thread only.
 *
 * One file (~1000 lines): the per-process state (mappings, their opened
 * files, JIT maps, re-read timers) and the lookups over it change
 * together; the file layers below it (sym_cache.c and down) are apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "proc/exec_snap.h"
#include "proc/kmaps.h"
#include "proc/proc.h"
#include "lib/clock.h"
#include "lib/safe_file.h"
#include "python/python.h"
#include "symbolize/symbolize_internal.h"

#define DEFAULT_CACHE_BYTES (32u << 20)	/* "tens of MB" for the whole agent */
#define REREAD_NS 1000000000ull		/* re-read maps on a miss at most 1/s */
#define SYM_MALLOC_TRIM_BYTES (1u << 20)
#define AFTER_EXEC_NS 5000000ull	/* ld.so has mapped the libraries by then */
#define DUE_SLOTS	256	/* timed re-reads pending; beyond, lazy ones */
#define VSYSCALL_BASE 0xffffffffff600000ull

struct sym_map {
	uint64_t start, end, pgoff;
	const char *path;	/* interned, without " (deleted)" */
	struct sym_file *file;	/* NULL for anonymous/pseudo mappings */
	enum sym_map_type type;
};

struct sym_proc {
	uint32_t pid, nspid;
	bool exited, maps_read, jit_tried;
	/*
	 * Who may own the files it names besides root (safe_proc_owners()),
	 * learnt while it lives; unknown: root only.
	 */
	uid_t owners[2];
	bool owners_known;
	/*
	 * Read once: a process keeps its pid namespace across execs. Both
	 * are learnt only when needed, so a short-lived process of an
	 * exec-heavy host whose files are all known costs its maps only.
	 */
	bool nspid_known;
	/* it took a sample (proc_exit() may read its JIT map) */
	bool sampled;
	/*
	 * Maps read at an exec record may predate the dynamic loader mapping
	 * the libraries: the next touch or miss reads them again.
	 */
	bool after_exec;
	/*
	 * The kernel told this image's mappings (kmaps), and keeps them a
	 * while after the exit: read at its first sample, not at its exec
	 * (most processes of an exec storm are never sampled), and read
	 * again after its exit too.
	 */
	bool lazy_maps;
	uint64_t read_ns;
	struct sym_map *maps;
	size_t nr_maps;
	/*
	 * The image before the last exec: consulted only for addresses the
	 * current maps do not have even after a re-read (samples taken just
	 * before the exec), so a stale mapping never shadows a new one.
	 */
	struct sym_map *old_maps;
	size_t nr_old_maps;
	struct sym_perfmap *jit;
	const char *jit_name;	/* "/tmp/perf-PID.map", interned: jit_module() */
	/* CPython's code objects (python/), looked for at the first
	 * Python frame of the image */
	struct py_names *py;
	struct py_eval_ranges py_eval;	/* its eval loop, with py */
	bool py_tried;		/* refused: not again for this image */
	uint64_t py_tried_ns;	/* not found (yet): again after PY_RETRY_NS */
};

struct symbolizer {
	struct sym_options opt;
	char *debug_dirs;
	struct sym_elf_ctx ctx;
	struct sym_strings *strings;
	struct sym_cache *cache;
	char *kallsyms_path;
	struct sym_kernel *kernel;
	bool kernel_tried;
	struct sym_kdata *kdata;	/* data symbols: -e lock's lock names */
	bool kdata_tried;
	/* processes: a sym_proc in each one's PROC_SLOT_SYM */
	struct proc_table *procs;
	bool own_procs;		/* made by sym_new(), freed by sym_free() */
	uint64_t lookups, hits, misses;
	struct exec_snaps *snaps;	/* the session's, or NULL */
	uint64_t snapshot_reads;	/* maps of gone processes from it */
	struct kmaps *kmaps;		/* the session's, or NULL */
	bool reading_kmaps;		/* add_map() of kmaps_read()'s */
	uint64_t kmaps_reads;		/* maps from it, /proc not read */
	/* processes whose maps are read again AFTER_EXEC_NS after exec */
	uint32_t due_pid[DUE_SLOTS];
	uint64_t due_ns[DUE_SLOTS];
	uint32_t nr_due;
};

int sym_debug_dirs_add(char **list, const char *dir)
{
	size_t old = *list ? strlen(*list) : 0, len = strlen(dir);
	char *n;

	if (!len || strchr(dir, ':'))
		return -EINVAL;
	n = realloc(*list, old + len + 2);
	if (!n)
		return -ENOMEM;
	if (old)
		n[old++] = ':';
	memcpy(n + old, dir, len + 1);
	*list = n;
	return 0;
}

static void proc_slot_free(void *data, void *ctx);
static void proc_slot_event(void **data, const struct proc_event *ev,
			    void *ctx);

struct symbolizer *sym_new(const struct sym_options *opt)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (opt)
		s->opt = *opt;
	if (!s->opt.cache_bytes)
		s->opt.cache_bytes = DEFAULT_CACHE_BYTES;
	elf_version(EV_CURRENT);
	s->debug_dirs = strdup(s->opt.debug_dirs && s->opt.debug_dirs[0] ?
			       s->opt.debug_dirs : "/usr/lib/debug");
	s->strings = sym_strings_new();
	s->kallsyms_path = strdup("/proc/kallsyms");
	if (!s->debug_dirs || !s->strings || !s->kallsyms_path)
		goto fail;
	s->opt.debug_dirs = s->debug_dirs;
	s->ctx.debug_dirs = s->debug_dirs;
	s->ctx.no_dwarf = s->opt.no_dwarf;
	s->ctx.dwarf_max_bytes = !s->opt.dwarf_max_bytes ? SYM_DEFAULT_DWARF_MAX :
				 s->opt.dwarf_max_bytes == SIZE_MAX ? 0 :
				 s->opt.dwarf_max_bytes;
	s->ctx.strings = s->strings;
	if (s->opt.use_debuginfod && getenv("DEBUGINFOD_URLS"))
		s->ctx.debuginfod = sym_debuginfod_begin(s->ctx.dwarf_max_bytes);
	s->cache = sym_cache_new(s->opt.cache_bytes, &s->ctx);
	if (!s->cache)
		goto fail;
	s->snaps = s->opt.exec_snaps;
	s->kmaps = s->opt.kmaps;
	s->procs = s->opt.procs;
	if (!s->procs) {
		s->procs = proc_table_new(NULL);
		s->own_procs = true;
		if (!s->procs)
			goto fail;
	}
	proc_table_slot_owner(s->procs, PROC_SLOT_SYM, proc_slot_free, s);
	proc_table_slot_events(s->procs, PROC_SLOT_SYM, proc_slot_event);
	return s;
fail:
	sym_free(s);
	return NULL;
}

static void proc_drop_maps(struct symbolizer *s, struct sym_map *maps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sym_cache_put(s->cache, maps[i].file);
	free(maps);
}

static void proc_free(struct symbolizer *s, struct sym_proc *p)
{
	proc_drop_maps(s, p->maps, p->nr_maps);
	proc_drop_maps(s, p->old_maps, p->nr_old_maps);
	sym_perfmap_free(p->jit);
	py_names_free(p->py);
	free(p);
}

/* A process leaves the table (released, evicted): its mappings go. */
static void proc_slot_free(void *data, void *ctx)
{
	proc_free(ctx, data);
}

void sym_free(struct symbolizer *s)
{
	if (!s)
		return;
	if (s->procs) {
		/* before the cache: the mappings hold files of it */
		proc_table_slot_drop(s->procs, PROC_SLOT_SYM);
		if (s->own_procs)
			proc_table_free(s->procs);
	}
	sym_cache_free(s->cache);
	sym_kernel_free(s->kernel);
	sym_kdata_free(s->kdata);
	sym_debuginfod_end(s->ctx.debuginfod);
	sym_strings_free(s->strings);
	free(s->kallsyms_path);
	free(s->debug_dirs);
	free(s);
}

/* For tests: read kernel symbols from another file than /proc/kallsyms. */
void sym_set_kallsyms_path(struct symbolizer *s, const char *path)
{
	char *p = strdup(path);

	if (!p)
		return;
	free(s->kallsyms_path);
	s->kallsyms_path = p;
	sym_kernel_free(s->kernel);
	s->kernel = NULL;
	s->kernel_tried = false;
	sym_kdata_free(s->kdata);
	s->kdata = NULL;
	s->kdata_tried = false;
}

/* ------------------------------------------------------------ processes */

/* The state of the newest process of pid (proc/proc.h), if any. */
static struct sym_proc *proc_find(struct symbolizer *s, uint32_t pid)
{
	void **slot = proc_table_slot(s->procs, pid, PROC_SLOT_SYM, false);

	return slot ? *slot : NULL;
}

/* The state in slot (of pid), made if empty; NULL: no slot (table full). */
static struct sym_proc *slot_get(void **slot, uint32_t pid)
{
	struct sym_proc *p;

	if (!slot)
		return NULL;	/* the process table is full */
	if (*slot)
		return *slot;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->nspid = pid;
	p->owners[0] = p->owners[1] = SAFE_ANY_OWNER;
	*slot = p;
	return p;
}

/*
 * The module name of its JIT frames, made at the first one: interned
 * for every new process, it was work (and strings) an exec storm paid
 * for processes that never run JIT code.
 */
static const char *jit_module(struct symbolizer *s, struct sym_proc *p)
{
	char name[64];

	if (!p->jit_name) {
		snprintf(name, sizeof(name), "/tmp/perf-%u.map", p->pid);
		p->jit_name = sym_intern(s->strings, name);
	}
	return p->jit_name;
}

static struct sym_proc *proc_get(struct symbolizer *s, uint32_t pid)
{
	return slot_get(proc_table_slot(s->procs, pid, PROC_SLOT_SYM, true),
			pid);
}

/*
 * Gone (an exit record, or its maps could not be read). The shared
 * process model learns exits from the session, with their times; a
 * table of our own learns them here, for sym_sweep().
 */
static void proc_gone(struct symbolizer *s, struct sym_proc *p)
{
	p->exited = true;
	if (s->own_procs)
		proc_table_exit(s->procs, p->pid, mono_ns(), NULL, false);
}

/* Who may own its debug files and JIT map, read while it lives. */
static void proc_learn_owners(struct sym_proc *p)
{
	if (!p->owners_known && !p->exited) {
		safe_proc_owners(p->pid, p->owners);
		p->owners_known = true;
	}
}

struct open_ctx {
	struct symbolizer *s;
	struct sym_proc *p;
	const struct sym_map_line *m;
	const char *root;	/* the gone process's root; NULL: it lives */
	bool kernel_maps;	/* the mapping came from kmaps: the process may
				 * be gone, and no snapshot holds its root */
	char path[4096];	/* m->path, NUL-terminated, without " (deleted)" */
};

/*
 * Open the exact file the process maps. /proc/PID/map_files/START-END is
 * that file whatever its path (deleted, a memfd, another mount namespace)
 * and is what we use where we may (it takes CAP_SYS_ADMIN). Without it (a
 * unit that drops CAP_SYS_ADMIN, or the mapping went away meanwhile), the
 * path under the process's root: resolved inside that root without
 * following any symbolic link (maps shows a canonical path, so a link
 * there means the tree changed since, and an absolute one would lead into
 * our own tree: /proc/PID/root/a/b with a -> / is our /b), and kept only
 * if it is still the inode the maps line names.
 *
 * Either way the file is examined before it is opened (safe_open_at()): a
 * FIFO, a device (a mapped /dev/zero), a sparse file or one larger than
 * SYM_ELF_MAX_BYTES is skipped with one warning, never retried. There is
 * no owner check: the process mapped this very file, so it could read it,
 * and libraries of a deploy user or of a container's own root are normal.
 * Ownership matters for what is found by name: debug files
 * (sym_debugfile.c) and JIT maps.
 */
static void open_mapped_file(void *arg, struct sym_file *f)
{
	struct open_ctx *o = arg;
	struct safe_rules rules = {
		.max_bytes = SYM_ELF_MAX_BYTES,
		.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
		.flags = SAFE_ANYONE | SAFE_FOLLOW,
	};
	bool is_file = o->m->type == SYM_MAP_FILE;
	struct sym_origin origin;
	const char *why = NULL;
	char root[64];
	struct stat st;
	int fd;

	fd = -1;
	if (!o->root)
		fd = proc_map_files_open(o->p->pid, o->m->start, o->m->end,
					 &rules, &st, &why);
	if (fd >= 0 && (uint64_t)st.st_ino != o->m->ino) {
		close(fd);
		fd = -1;
		why = NULL;
	}
	if (o->root)
		snprintf(root, sizeof(root), "%s", o->root);
	else
		snprintf(root, sizeof(root), "/proc/%u/root", o->p->pid);
	if (fd < 0 && !safe_refused(why) && !o->m->deleted && is_file) {
		rules.flags = SAFE_ANYONE;
		fd = safe_open_at(root, o->path, &rules, &st, &why);
		if (fd >= 0 && (uint64_t)st.st_ino != o->m->ino) {
			close(fd);
			fd = -1;
			why = NULL;
		}
	}
	/*
	 * Told by the kernel of a process gone since: its path in our own
	 * tree, kept only if it is the very inode (device and inode number)
	 * the kernel named; the path of a process in another mount
	 * namespace names another file, or none.
	 */
	if (fd < 0 && o->kernel_maps && !safe_refused(why) && !o->m->deleted &&
	    is_file) {
		rules.flags = SAFE_ANYONE;
		fd = safe_open_at("/", o->path, &rules, &st, &why);
		if (fd >= 0 && ((uint64_t)st.st_ino != o->m->ino ||
				(uint64_t)st.st_dev != o->m->dev)) {
			close(fd);
			fd = -1;
			why = NULL;
		}
		if (fd >= 0)
			snprintf(root, sizeof(root), "/");
	}
	f->copy_in = o->m->type == SYM_MAP_MEMFD;
	/* A refused file stays refused; a missing one may come back. */
	f->open_failed = fd < 0 && !safe_refused(why);
	if (fd < 0) {
		/* memfds are anonymous memory: nothing to name */
		if (is_file)
			safe_warn("mapped file", NULL, o->path, why);
		return;
	}
	origin.root = root;
	origin.path = is_file ? o->path : NULL;
	proc_learn_owners(o->p);
	origin.owners[0] = o->p->owners[0];
	origin.owners[1] = o->p->owners[1];
	sym_file_open_fd(f, fd, &origin, &o->s->ctx);
}

static int cmp_map(const void *a, const void *b)
{
	const struct sym_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static const struct sym_map *map_find(const struct sym_map *maps, size_t n,
				      uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < maps[lo - 1].end)
		return &maps[lo - 1];
	return NULL;
}

static bool map_overlaps(const struct sym_map *maps, size_t n,
			 const struct sym_map *m)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {	/* first new mapping ending after m->start */
		size_t mid = lo + (hi - lo) / 2;

		if (maps[mid].end <= m->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && maps[lo].start < m->end;
}

static void read_nspid(struct sym_proc *p)
{
	char path[64], buf[1024], *line;
	struct safe_lines lines;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", p->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	/* Groups: and the CPU lists can be long: skipped, never grown */
	safe_lines_init(&lines, f, buf, sizeof(buf), 1u << 20, 0);
	while ((line = safe_line(&lines, NULL))) {
		if (strncmp(line, "NSpid:", 6) == 0) {
			char *last = strrchr(line, '\t');
			unsigned long v = strtoul(last ? last + 1 : line + 6, NULL, 10);

			if (v)
				p->nspid = (uint32_t)v;
			break;
		}
	}
	fclose(f);
}

static bool add_map(struct symbolizer *s, struct sym_proc *p,
		    struct sym_map_line *ml, struct sym_map **maps,
		    size_t *n, size_t *cap, const char *root)
{
	struct sym_map *m;
	struct open_ctx o;

	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct sym_map *nm = realloc(*maps, c * sizeof(*nm));

		if (!nm)
			return false;
		*maps = nm;
		*cap = c;
	}
	m = &(*maps)[*n];
	memset(m, 0, sizeof(*m));
	m->start = ml->start;
	m->end = ml->end;
	m->pgoff = ml->pgoff;
	m->type = ml->type;
	m->path = ml->path_len ? sym_intern_n(s->strings, ml->path, ml->path_len) : NULL;
	if (ml->type == SYM_MAP_FILE || ml->type == SYM_MAP_MEMFD) {
		o.s = s;
		o.p = p;
		o.m = ml;
		o.root = root;
		o.kernel_maps = s->reading_kmaps;
		snprintf(o.path, sizeof(o.path), "%.*s", (int)ml->path_len, ml->path);
		m->file = sym_cache_get(s->cache, ml->dev, ml->ino, o.path,
					open_mapped_file, &o);
	} else if (ml->type == SYM_MAP_VDSO) {
		m->file = sym_cache_vdso(s->cache);
		/* A 32-bit process has another vdso than ours: leave it unresolved. */
		if (m->file && m->file->size != ml->end - ml->start)
			m->file = NULL;
	}
	(*n)++;
	return true;
}

/* What proc_maps_read() fills, one executable mapping at a time. */
struct maps_read {
	struct symbolizer *s;
	struct sym_proc *p;
	struct sym_map *maps;
	size_t n, cap;
	const char *root;	/* a snapshot's root (open_ctx.root) */
};

static bool maps_read_one(void *ctx, struct sym_map_line *ml)
{
	struct maps_read *r = ctx;

	return add_map(r->s, r->p, ml, &r->maps, &r->n, &r->cap, r->root);
}

/*
 * The process is gone before we read its maps (a program of a few ms, or
 * this thread was busy): what the snapshot thread took of it right after
 * its exec (proc/exec_snap.h), its files opened inside the root it had.
 */
static bool maps_from_snapshot(struct symbolizer *s, struct maps_read *r)
{
	char root[64];
	int fd, err;

	if (!s->snaps)
		return false;
	fd = exec_snaps_root(s->snaps, r->p->pid);
	/* without its root, files found in our own tree are not its files */
	if (fd < 0)
		return false;
	snprintf(root, sizeof(root), "/proc/self/fd/%d", fd);
	r->root = root;
	err = exec_snaps_read(s->snaps, r->p->pid, maps_read_one, r);
	r->root = NULL;
	close(fd);
	return !err;
}
/*
 * (Re)read /proc/PID/maps (proc/proc_maps.c reads it, bounded). New
 * mappings replace the ones they overlap; old ones that do not overlap
 * anything stay, so samples taken before an exec or a dlclose() still
 * resolve.
 */
static bool proc_read_maps(struct symbolizer *s, struct sym_proc *p)
{
	struct maps_read r = { .s = s, .p = p };
	struct sym_map *maps;
	size_t n, keep = 0;
	int err;

	p->read_ns = mono_ns();
	s->reading_kmaps = true;
	err = kmaps_read(s->kmaps, p->pid, maps_read_one, &r, NULL);
	s->reading_kmaps = false;
	if (!err) {
		s->kmaps_reads++;	/* the kernel told them: no /proc */
	} else if (proc_maps_read(NULL, p->pid, maps_read_one, &r, NULL)) {
		proc_gone(s, p);	/* gone, or not ours to see */
		if (!maps_from_snapshot(s, &r))
			return false;
		s->snapshot_reads++;
	} else if (!p->nspid_known) {
		read_nspid(p);
		p->nspid_known = true;
	}
	maps = r.maps;
	n = r.n;
	qsort(maps, n, sizeof(*maps), cmp_map);
	for (size_t i = 0; i < p->nr_maps; i++) {
		if (map_overlaps(maps, n, &p->maps[i])) {
			sym_cache_put(s->cache, p->maps[i].file);
			continue;
		}
		p->maps[keep++] = p->maps[i];
	}
	if (keep) {
		struct sym_map *all = realloc(maps, (n + keep) * sizeof(*all));

		if (all) {
			memcpy(all + n, p->maps, keep * sizeof(*all));
			maps = all;
			n += keep;
			qsort(maps, n, sizeof(*maps), cmp_map);
		} else {
			proc_drop_maps(s, p->maps, keep);
			p->maps = NULL;
		}
	}
	free(p->maps);
	p->maps = maps;
	p->nr_maps = n;
	p->maps_read = true;
	return true;
}

/*
 * The maps read just after an exec hold the executable and ld.so only. A
 * program that lives a few ms may be gone before a sample of it asks for
 * them again, and its libraries would stay addresses: read them again on
 * time (sym_run_due), not on the next sample.
 */
static void read_again_soon(struct symbolizer *s, uint32_t pid)
{
	if (s->nr_due < DUE_SLOTS) {
		s->due_pid[s->nr_due] = pid;
		s->due_ns[s->nr_due++] = mono_ns() + AFTER_EXEC_NS;
	}
}

/* A new image in pid, whose state is (to be) in slot. */
static void proc_exec(struct symbolizer *s, void **slot, uint32_t pid)
{
	struct sym_proc *p;

	if (!(p = slot_get(slot, pid)))
		return;
	if (p->exited) {
		/* the pid may be another process's now: learn it again */
		p->nspid_known = false;
		p->owners_known = false;
		p->owners[0] = p->owners[1] = SAFE_ANY_OWNER;
	}
	p->exited = false;
	p->jit_tried = false;
	/* a new image: its interpreter (if any) is found again */
	py_names_free(p->py);
	p->py = NULL;
	p->py_tried = false;
	p->py_tried_ns = 0;
	if (p->maps_read) {
		/* A new image: the old one becomes the fallback generation. */
		proc_drop_maps(s, p->old_maps, p->nr_old_maps);
		p->old_maps = p->maps;
		p->nr_old_maps = p->nr_maps;
		p->maps = NULL;
		p->nr_maps = 0;
		p->maps_read = false;
	}
	p->after_exec = true;
	p->lazy_maps = kmaps_knows(s->kmaps, pid);
	if (p->lazy_maps)
		return;
	proc_read_maps(s, p);
	read_again_soon(s, pid);
}

void sym_process_exec(struct symbolizer *s, uint32_t pid)
{
	if (!s)
		return;
	/* an exec after an exit is a new process (a shared table knows) */
	if (s->own_procs)
		proc_table_exec(s->procs, pid, mono_ns(), NULL, NULL);
	proc_exec(s, proc_table_slot(s->procs, pid, PROC_SLOT_SYM, true), pid);
}

uint64_t sym_run_due(struct symbolizer *s)
{
	uint64_t now, next = UINT64_MAX;
	uint32_t i = 0;

	if (!s || !s->nr_due)
		return next;
	now = mono_ns();
	while (i < s->nr_due) {
		struct sym_proc *p;

		if (s->due_ns[i] > now) {
			if (s->due_ns[i] - now < next)
				next = s->due_ns[i] - now;
			i++;
			continue;
		}
		p = proc_find(s, s->due_pid[i]);
		if (p && (!p->exited || p->lazy_maps) && p->after_exec) {
			p->after_exec = false;
			proc_read_maps(s, p);	/* merges with what it had */
		}
		s->nr_due--;
		s->due_pid[i] = s->due_pid[s->nr_due];
		s->due_ns[i] = s->due_ns[s->nr_due];
	}
	return next;
}

/*
 * New code was mapped (the unwinder met a PC outside the mappings it was
 * given: dlopen, a library loaded late): read the maps again now, while
 * the process lives. At most once per AFTER_EXEC_NS a process.
 */
static void proc_refresh(struct symbolizer *s, struct sym_proc *p)
{
	if (!p || p->exited)
		return;
	if (p->maps_read && mono_ns() - p->read_ns < AFTER_EXEC_NS)
		return;
	/* merges: mappings the new read does not overlap are kept */
	proc_read_maps(s, p);
}

void sym_process_refresh(struct symbolizer *s, uint32_t pid)
{
	if (s)
		proc_refresh(s, proc_get(s, pid));
}

static void py_warm(struct symbolizer *s, struct sym_proc *p,
		    const uint64_t *ips, size_t n);

static void proc_check(struct symbolizer *s, struct sym_proc *p,
		       const uint64_t *ips, size_t n)
{
	if (!p || p->exited || !p->maps_read)
		return;
	py_warm(s, p, ips, n);
	for (size_t i = 0; i < n; i++) {
		/* Python slots are not code addresses (a PY slot is followed
		 * by its word) */
		if (EMBER_IP_TAG(ips[i]) == EMBER_IP_TAG(EMBER_IP_PY)) {
			i++;
			continue;
		}
		if (EMBER_IP_TAG(ips[i]) == EMBER_IP_TAG(EMBER_IP_PY_CUT))
			continue;
		if (!map_find(p->maps, p->nr_maps, ips[i])) {
			proc_refresh(s, p);
			return;
		}
	}
}

void sym_process_check(struct symbolizer *s, uint32_t pid,
		       const uint64_t *ips, size_t n)
{
	if (s)
		proc_check(s, proc_find(s, pid), ips, n);
}

/* Cheap when nothing is to be done: callers may touch on every sample. */
static void proc_touch(struct symbolizer *s, struct sym_proc *p)
{
	if (!p || (p->exited && !p->lazy_maps))
		return;
	p->sampled = true;
	if (!p->maps_read) {
		proc_read_maps(s, p);
		if (p->lazy_maps && p->after_exec)
			read_again_soon(s, p->pid);
	} else if (p->after_exec && mono_ns() - p->read_ns >= AFTER_EXEC_NS) {
		p->after_exec = false;
		proc_read_maps(s, p);
	}
}

void sym_process_touch(struct symbolizer *s, uint32_t pid)
{
	if (s)
		proc_touch(s, proc_get(s, pid));
}

static void proc_load_jit(struct symbolizer *s, struct sym_proc *p);

static bool proc_maps_anon_code(const struct sym_proc *p)
{
	for (size_t i = 0; i < p->nr_maps; i++)
		if (p->maps[i].type == SYM_MAP_ANON ||
		    p->maps[i].type == SYM_MAP_MEMFD)
			return true;
	return false;
}

static void proc_exit(struct symbolizer *s, struct sym_proc *p)
{
	if (!p)
		return;
	/*
	 * A JIT's map file may sit in a container root that goes away. Only
	 * for a process that maps anonymous code, or was sampled and whose
	 * maps are not known: on an exec-heavy host the others are most
	 * exits (a perf map names anonymous code only), and a late sample
	 * still finds a host map at its lookup.
	 */
	if (!p->jit_tried &&
	    ((p->sampled && !p->maps_read) || proc_maps_anon_code(p)))
		proc_load_jit(s, p);
	proc_gone(s, p);
}

void sym_process_exit(struct symbolizer *s, uint32_t pid)
{
	if (s)
		proc_exit(s, proc_find(s, pid));
}

/*
 * PROC_SLOT_SYM's events (proc_table_event()): a process's exec, exit,
 * miss and samples, handed to the process model once. data is this
 * process's slot: nothing here asks the table again.
 */
static void proc_slot_event(void **data, const struct proc_event *ev,
			    void *ctx)
{
	struct symbolizer *s = ctx;

	switch (ev->type) {
	case PROC_EV_EXEC:
		/* new image: re-read mappings now, before it can exit */
		proc_exec(s, data, ev->pid);
		break;
	case PROC_EV_EXIT:
		/*
		 * Only marked: samples of this process may still sit in
		 * other CPUs' rings. It goes with its entry, once the
		 * profile with its samples was written.
		 */
		proc_exit(s, *data);
		break;
	case PROC_EV_MISS:
		/* code mapped since the maps were read: a library
		 * dlopen'ed late must be symbolizable after the exit */
		proc_refresh(s, slot_get(data, ev->pid));
		break;
	case PROC_EV_SAMPLE:
		if (!ev->pid)
			break;	/* the idle task: kernel frames only */
		/* a stack never seen: its code may be newly mapped */
		if (ev->nr_ips)
			proc_check(s, *data, ev->ips, ev->nr_ips);
		/*
		 * Every sample, not only the first of a pid: the maps of a
		 * process that just exec'd are read again (its libraries
		 * get mapped after the exec record); nothing otherwise.
		 */
		proc_touch(s, slot_get(data, ev->pid));
		break;
	}
}

/*
 * A shared process model frees exited processes (and their sym_proc)
 * when the aggregation releases the generation their samples were in.
 */
void sym_sweep(struct symbolizer *s)
{
	if (s && s->own_procs)
		proc_table_release(s->procs, proc_table_advance(s->procs));
}

void sym_trim(struct symbolizer *s)
{
	if (!s)
		return;
	/*
	 * Freed DWARF left holes in the heap: hand them back, but only when
	 * there is much to give. Otherwise the next profile faults the same
	 * pages back in (the heap's free top goes back by M_TRIM_THRESHOLD).
	 */
	if (sym_cache_trim(s->cache) >= SYM_MALLOC_TRIM_BYTES)
		malloc_trim(0);
}

/* ------------------------------------------------------------------ JIT */

/*
 * perf's rule: the map must be the process's own (or root's). Inside a
 * container it is the container's /tmp, resolved inside the process's
 * root (safe_open_at()): a /tmp that is a link to "/" must not lead to
 * our own files.
 */
static struct sym_perfmap *open_perfmap(struct sym_proc *p)
{
	struct sym_perfmap *m;
	char root[48], path[64];

	proc_learn_owners(p);
	if (!p->nspid_known && !p->exited) {	/* maps from kmaps: not yet */
		read_nspid(p);
		p->nspid_known = true;
	}
	snprintf(root, sizeof(root), "/proc/%u/root", p->pid);
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", p->nspid);
	m = sym_perfmap_load(root, path, p->owners);
	if (!m) {
		snprintf(path, sizeof(path), "/tmp/perf-%u.map", p->pid);
		m = sym_perfmap_load(NULL, path, p->owners);
	}
	return m;
}

static void proc_load_jit(struct symbolizer *s, struct sym_proc *p)
{
	struct sym_perfmap *m = open_perfmap(p);

	(void)s;
	p->jit_tried = true;
	if (!m)
		return;
	sym_perfmap_free(p->jit);
	p->jit = m;
}

static const char *jit_lookup(struct symbolizer *s, struct sym_proc *p,
			      uint64_t addr)
{
	const char *name;

	if (!p->jit_tried)
		proc_load_jit(s, p);
	name = sym_perfmap_lookup(p->jit, addr);
	if (!name && !p->exited) {
		/* The JIT may have written more since: reload if it grew. */
		char root[48], path[64];
		struct stat st;

		snprintf(root, sizeof(root), "/proc/%u/root", p->pid);
		snprintf(path, sizeof(path), "/tmp/perf-%u.map", p->nspid);
		if (safe_stat_at(root, path, &st) == 0 &&
		    st.st_size != sym_perfmap_file_size(p->jit)) {
			proc_load_jit(s, p);
			name = sym_perfmap_lookup(p->jit, addr);
		}
	}
	return name;
}

/* ------------------------------------------------------------ resolving */

static const char *vsyscall_name(uint64_t addr)
{
	switch ((addr - VSYSCALL_BASE) >> 10) {
	case 0: return "__vsyscall_gettimeofday";
	case 1: return "__vsyscall_time";
	case 2: return "__vsyscall_getcpu";
	default: return NULL;
	}
}

static int resolve_in_map(struct symbolizer *s, struct sym_proc *p,
			  const struct sym_map *m, uint64_t addr,
			  uint64_t lookup, struct sym_frame *out, int max)
{
	struct sym_frame base = out[0];
	uint64_t vaddr;
	const char *name;
	int n = 0;

	base.map_start = m->start;
	base.map_end = m->end;
	base.map_pgoff = m->pgoff;
	base.module = m->path;
	base.module_offset = addr - m->start + m->pgoff;
	if (m->file) {
		base.build_id = m->file->build_id;
		if (m->file->elf &&
		    sym_file_vaddr(m->file, lookup - m->start + m->pgoff, &vaddr))
			n = sym_cache_resolve(s->cache, m->file, vaddr, out, max);
		for (int i = 0; i < n; i++) {
			struct sym_frame r = out[i];

			out[i] = base;
			out[i].kind = SYM_FRAME_NATIVE;
			out[i].function = r.function;
			out[i].source_file = r.source_file;
			out[i].line = r.line;
			out[i].inlined = r.inlined;
		}
		if (n)
			return n;
	}
	out[0] = base;
	if (m->type == SYM_MAP_VSYSCALL && (name = vsyscall_name(lookup))) {
		out[0].kind = SYM_FRAME_NATIVE;
		out[0].function = sym_intern(s->strings, name);
		return 1;
	}
	if (m->type == SYM_MAP_ANON || m->type == SYM_MAP_MEMFD) {
		name = jit_lookup(s, p, lookup);
		if (name) {
			out[0].kind = SYM_FRAME_JIT;
			out[0].function = sym_intern(s->strings, name);
			out[0].module = jit_module(s, p);
			return 1;
		}
	}
	if (m->type == SYM_MAP_ANON || m->type == SYM_MAP_OTHER) {
		/* No file: nothing to show but the address. */
		out[0].module = NULL;
		out[0].module_offset = 0;
	}
	return 1;
}

/*
 * The pid was reused (an exec after its exit): a late sample of the old
 * process resolves in the maps of that process, which the process model
 * keeps until its samples are written. *p becomes the one that had it.
 */
static const struct sym_map *older_find(struct symbolizer *s,
					struct sym_proc **p, uint64_t addr)
{
	struct sym_proc *o = *p;
	const struct sym_map *m = NULL;

	while (!m && (o = proc_table_slot_older(s->procs, o->pid,
						PROC_SLOT_SYM, o))) {
		m = map_find(o->maps, o->nr_maps, addr);
		if (!m)
			m = map_find(o->old_maps, o->nr_old_maps, addr);
	}
	if (m)
		*p = o;
	return m;
}

int sym_resolve_user(struct symbolizer *s, uint32_t pid, uint64_t addr,
		     bool is_return, struct sym_frame *out, int max)
{
	uint64_t lookup = is_return && addr ? addr - 1 : addr;
	const struct sym_map *m;
	const char *name;
	struct sym_proc *p;
	int n;

	if (!out || max <= 0)
		return 0;
	memset(out, 0, sizeof(*out));
	out[0].kind = SYM_FRAME_UNKNOWN;
	out[0].address = addr;
	if (!s)
		return 1;
	s->lookups++;
	p = proc_get(s, pid);
	if (!p) {
		s->misses++;
		return 1;
	}
	if (!p->maps_read && !p->exited)
		proc_read_maps(s, p);
	m = map_find(p->maps, p->nr_maps, lookup);
	if (!m && !p->exited &&
	    (p->after_exec || mono_ns() - p->read_ns >= REREAD_NS)) {
		p->after_exec = false;
		/* Maybe mapped (dlopen) after we read the maps. */
		proc_read_maps(s, p);
		m = map_find(p->maps, p->nr_maps, lookup);
	}
	if (!m)
		m = map_find(p->old_maps, p->nr_old_maps, lookup);
	if (!m)
		m = older_find(s, &p, lookup);
	if (m) {
		n = resolve_in_map(s, p, m, addr, lookup, out, max);
	} else if ((name = jit_lookup(s, p, lookup))) {
		out[0].kind = SYM_FRAME_JIT;
		out[0].function = sym_intern(s->strings, name);
		out[0].module = jit_module(s, p);
		n = 1;
	} else {
		n = 1;
	}
	if (out[0].function)
		s->hits++;
	else
		s->misses++;
	return n;
}

/* ---- Python frames (python/) ---- */

/* A process with Python slots whose interpreter was not found (libc not
 * mapped yet, maps unreadable for a moment) is looked at again after: */
#define PY_RETRY_NS	(200 * 1000000ull)

/* The executable mappings, copied (py_detect() takes an array). */
struct py_maps {
	struct sym_map_line v[512];
	char paths[512][128];
	uint32_t n;
};

static bool py_maps_add(void *ctx, struct sym_map_line *m)
{
	struct py_maps *pm = ctx;
	size_t len = m->path_len < 127 ? m->path_len : 127;

	if (pm->n == 512)
		return false;
	pm->v[pm->n] = *m;
	memcpy(pm->paths[pm->n], m->path, len);
	pm->paths[pm->n][len] = 0;
	pm->v[pm->n].path = pm->paths[pm->n];
	pm->v[pm->n].path_len = len;
	pm->n++;
	return true;
}

/*
 * The process's interpreter, found once per image while it lives (its
 * code objects cannot be read after). A process the unwind worker
 * refused is refused here too, silently: the worker said why.
 */
static struct py_names *py_get(struct symbolizer *s, struct sym_proc *p)
{
	struct py_maps *pm;
	struct py_target t;
	char err[256];
	int r;

	(void)s;
	if (p->py || p->py_tried || p->exited ||
	    (p->py_tried_ns && mono_ns() - p->py_tried_ns < PY_RETRY_NS))
		return p->py;
	p->py_tried_ns = mono_ns();
	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return NULL;
	r = proc_maps_read(NULL, p->pid, py_maps_add, pm, NULL) ? 0 :
	    py_detect(p->pid, pm->v, pm->n, &t, err, sizeof(err));
	if (r == 1 && (p->py = py_names_new(p->pid, &t.lay))) {
		memcpy(p->py_eval.start, t.proc.eval_start,
		       sizeof(p->py_eval.start));
		memcpy(p->py_eval.end, t.proc.eval_end, sizeof(p->py_eval.end));
	} else if (r < 0)
		p->py_tried = true;
	free(pm);
	return p->py;
}

/*
 * A new stack's Python frames, named now while the process lives: the
 * cache keeps them for the freeze (by code address and check, so a
 * code object freed since is still named as it was when sampled).
 */
static void py_warm(struct symbolizer *s, struct sym_proc *p,
		    const uint64_t *ips, size_t n)
{
	struct py_frame f;

	for (size_t i = 0; i + 1 < n; i++) {
		if (EMBER_IP_TAG(ips[i]) != EMBER_IP_TAG(EMBER_IP_PY))
			continue;
		if (!py_get(s, p))
			return;
		py_names_resolve(p->py, EMBER_IP_VALUE(ips[i]), ips[i + 1], &f);
		i++;
	}
}

/*
 * The names an older process of this pid found: a record after the
 * process's exit (past the model's tail) makes a new process of the pid,
 * whose interpreter is never found, and the freeze then asks that one
 * for every sample of the old one. As for native frames (older_find()),
 * an older generation answers, and only when the newest has no
 * interpreter of its own: what the old one named while it lived (by
 * code address and check value, through the /proc/PID/mem it opened
 * while it lived: a reused pid's memory is not read for it).
 */
static struct py_names *py_older(struct symbolizer *s, struct sym_proc *p)
{
	struct sym_proc *o = p;

	while ((o = proc_table_slot_older(s->procs, o->pid, PROC_SLOT_SYM, o)))
		if (o->py)
			return o->py;
	return NULL;
}

bool sym_python_eval(struct symbolizer *s, uint32_t pid,
		     struct py_eval_ranges *ev)
{
	struct sym_proc *p = s ? proc_get(s, pid) : NULL;

	if (!p || !py_get(s, p))
		return false;
	*ev = p->py_eval;
	return true;
}

void sym_resolve_python(struct symbolizer *s, uint32_t pid, uint64_t code,
			uint64_t word, struct sym_frame *out)
{
	struct sym_proc *p = s ? proc_get(s, pid) : NULL;
	struct py_names *pn = NULL;
	struct py_frame f;

	memset(out, 0, sizeof(*out));
	out->kind = SYM_FRAME_PYTHON;
	out->address = code;
	if (!s)
		return;
	s->lookups++;
	if (p && !(pn = py_get(s, p)))
		pn = py_older(s, p);
	if (pn && py_names_resolve(pn, code, word, &f)) {
		out->function = sym_intern(s->strings, f.name);
		out->source_file = f.file ? sym_intern(s->strings, f.file) : NULL;
		out->line = f.line > 0 ? (uint32_t)f.line : 0;
		s->hits++;
		return;
	}
	out->function = sym_intern(s->strings, SYM_PY_UNKNOWN);
	s->misses++;
}

/* /proc/kallsyms once: kernel symbols change only with modules. */
static void kernel_load(struct symbolizer *s)
{
	if (s->kernel_tried)
		return;
	s->kernel_tried = true;
	s->kernel = sym_kernel_load(s->kallsyms_path);
	if (!s->kernel)
		fprintf(stderr, "ember: cannot read %s (%s): kernel frames "
			"will show as addresses\n", s->kallsyms_path,
			strerror(errno));
	else if (sym_kernel_hidden(s->kernel))
		fprintf(stderr, "ember: kernel symbol addresses are hidden "
			"(%s shows zeros because of kernel.kptr_restrict): "
			"run as root, or set 'sysctl kernel.kptr_restrict=0'; "
			"kernel frames will show as addresses\n",
			s->kallsyms_path);
}

void sym_preload_kernel(struct symbolizer *s)
{
	if (s)
		kernel_load(s);
}

int sym_resolve_kernel(struct symbolizer *s, uint64_t addr,
		       struct sym_frame *out, int max)
{
	const char *name, *module;
	uint64_t off;

	if (!out || max <= 0)
		return 0;
	memset(out, 0, sizeof(*out));
	out[0].kind = SYM_FRAME_KERNEL;
	out[0].address = addr;
	if (!s)
		return 1;
	s->lookups++;
	kernel_load(s);
	if (sym_kernel_lookup(s->kernel, addr, &name, &module, &off)) {
		out[0].function = sym_intern(s->strings, name);
		out[0].module = module[0] == '[' && strcmp(module, "[kernel.kallsyms]") ?
			sym_intern(s->strings, module) :
			sym_intern(s->strings, "[kernel.kallsyms]");
		out[0].module_offset = off;
		s->hits++;
	} else {
		s->misses++;
	}
	return 1;
}

const char *sym_kernel_data_symbol(struct symbolizer *s, uint64_t addr,
				   uint64_t *off)
{
	const char *name;

	if (!s)
		return NULL;
	if (!s->kdata_tried) {
		s->kdata_tried = true;
		s->kdata = sym_kdata_load(s->kallsyms_path);
	}
	name = sym_kdata_lookup(s->kdata, addr, off);
	return name ? sym_intern(s->strings, name) : NULL;
}

const char *sym_frame_name(struct symbolizer *s, const struct sym_frame *f)
{
	char buf[4200];
	const char *base;

	if (!f)
		return NULL;
	if (f->function)
		return f->function;
	if (f->module) {
		base = strrchr(f->module, '/');
		base = base && base[1] ? base + 1 : f->module;
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base, f->module_offset);
	} else {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, f->address);
	}
	return s ? sym_intern(s->strings, buf) : NULL;
}

static int proc_stats(void *data, void *ctx)
{
	const struct sym_proc *p = data;
	struct sym_stats *st = ctx;

	st->cache_bytes += sizeof(*p) + sym_perfmap_bytes(p->jit) +
		(p->nr_maps + p->nr_old_maps) * sizeof(struct sym_map);
	st->processes++;
	return 0;
}

void sym_get_stats(struct symbolizer *s, struct sym_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	st->lookups = s->lookups;
	st->hits = s->hits;
	st->misses = s->misses;
	st->snapshot_reads = s->snapshot_reads;
	st->kmaps_reads = s->kmaps_reads;
	st->elf_files_open = sym_cache_files_open(s->cache);
	st->cache_bytes = sym_cache_bytes(s->cache) + sym_kernel_bytes(s->kernel) +
		sym_strings_bytes(s->strings) + sizeof(*s);
	/* Stats are rare: walking the processes is fine. */
	proc_table_slot_visit(s->procs, PROC_SLOT_SYM, proc_stats, st);
}
