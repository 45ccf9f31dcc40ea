// SPDX-License-Identifier: GPL-2.0-only
/*
 * The unwind worker's bindings (unwind_bind.h): a process's
 * binding lives in the process model, is made from /proc/PID/maps and the
 * table cache, and is unbound when its process exits or goes from the
 * table. Worker thread only, but for unwind_proc_gone().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/safe_file.h"
#include "proc/kmaps.h"
#include "proc/proc_maps.h"
#include "python/python.h"
#include "unwind/unwind_bind.h"

/*
 * The binding of the process a record of pid at time_ns names, made if
 * it has none (but never past MAX_PROCS bindings): NULL when the process
 * model has no room for the process.
 */
struct unwind_proc *unwind_proc_attach(struct unwind_bindings *ub,
				       uint32_t pid, uint64_t time_ns)
{
	struct unwind_proc *up, *fresh = ub->spare;

	if (!fresh && ub->nr_live < MAX_PROCS)
		fresh = ub->spare = calloc(1, sizeof(*fresh));
	up = proc_table_slot_attach(ub->procs, pid, time_ns, PROC_SLOT_UNWIND,
				    fresh);
	if (up && up == fresh) {
		ub->spare = NULL;
		up->pid = pid;
		up->next = ub->live;
		if (ub->live)
			ub->live->prev = up;
		ub->live = up;
		ub->nr_live++;
	}
	return up;
}

static void release_owners(struct unwind_bindings *ub, struct unwind_proc *up)
{
	uint64_t now = mono_ns();

	for (uint32_t i = 0; i < up->nr_owners; i++) {
		struct table_file *f = &ub->cache.files[up->owners[i]];

		if (f->refs && !--f->refs)
			f->idle_since_ns = now;
	}
	free(up->owners);
	up->owners = NULL;
	up->nr_owners = 0;
}

static void py_unbind(struct unwind_bindings *ub, struct unwind_proc *up)
{
	if (up->py && ub->ops->py_bind)
		ub->ops->py_bind(ub->src, up->pid, NULL, NULL, 0);
	free(up->py);
	up->py = NULL;
}

/* Unbind, if bound: an exec that died before its binding has none. */
void unwind_proc_unbind(struct unwind_bindings *ub, struct unwind_proc *up)
{
	if (up->bound_ns)
		ub->ops->unwind_bind(ub->src, up->pid, NULL, 0, NULL, 0);
	py_unbind(ub, up);
	release_owners(ub, up);
	up->bound_ns = up->recheck_ns = up->exec_ns = 0;
}

void unwind_proc_free(struct unwind_bindings *ub, struct unwind_proc *up)
{
	release_owners(ub, up);
	free(up->py);
	if (up->prev)
		up->prev->next = up->next;
	else
		ub->live = up->next;
	if (up->next)
		up->next->prev = up->prev;
	ub->nr_live--;
	free(up);
}

/* The process exited: unbind, and free unless the table has handed it back. */
void unwind_proc_forget(struct unwind_bindings *ub, struct unwind_proc *up)
{
	unwind_proc_unbind(ub, up);
	if (proc_table_slot_detach(ub->procs, up->pid, PROC_SLOT_UNWIND, up))
		unwind_proc_free(ub, up);
	else
		up->dead = true;	/* on the orphans list: freed from there */
}

/*
 * Bindings whose process went from the table. One made for a pid the
 * table did not know was reused yet moves to the newest process of that
 * pid; any other is unbound (unless the pid has another binding) and
 * freed.
 */
void unwind_take_orphans(struct unwind_bindings *ub, struct unwind_proc *up)
{
	struct unwind_proc *next;
	void *held;

	for (; up; up = next) {
		next = up->orphan_next;
		up->orphan_next = NULL;
		if (!up->dead &&
		    proc_table_slot_adopt(ub->procs, up->pid, PROC_SLOT_UNWIND,
					  up, &held))
			continue;
		if (!up->dead && !held)
			unwind_proc_unbind(ub, up);
		unwind_proc_free(ub, up);
	}
}

/*
 * The table entry for one file mapping, opened through map_files so that
 * a file in another mount namespace, or deleted, is the one mapped. It is
 * examined before it is opened (safe_open_at()): a mapped device is never
 * opened, and a sparse file or one over the cap costs one warning.
 * pre_ok: pre holds stat() of the line's map_files entry (line_stat()).
 */
static struct table_file *file_entry(struct unwind_bindings *ub, uint32_t pid,
				     const struct sym_map_line *m,
				     const struct stat *pre, bool pre_ok)
{
	struct table_file *f;
	const char *why;
	struct stat st;
	int fd;
	/*
	 * A file already in the cache (the same inode, size and mtime: the
	 * libraries every new process maps) costs one stat, not the ~8
	 * calls of a safe open: on an exec-heavy host that was most of a
	 * binding. stat() does not open, so a FIFO is still never opened.
	 */
	if (pre_ok && S_ISREG(pre->st_mode) &&
	    (f = table_cache_find(&ub->cache, pre))) {
		f->seen_ns = mono_ns();
		return f;
	}
	/* map_files only: the mapping's own file, no name to trust */
	fd = proc_mapped_open(pid, m->start, m->end, NULL, NULL,
			      TABLE_FILE_MAX_BYTES, &st, &why);
	if (fd < 0) {
		if (m->type == SYM_MAP_FILE)
			safe_warn("mapped file", NULL, m->path, why);
		return NULL;
	}
	f = table_cache_get(&ub->cache, fd, &st, m->path);
	close(fd);
	if (f)
		f->seen_ns = mono_ns();
	return f;
}


struct bind_buf {
	struct ember_unwind_mapping *maps;
	uint32_t *owners;
	uint32_t nr, nr_owners;
};

static void add_mapping(struct unwind_bindings *ub, struct bind_buf *b,
			const struct sym_map_line *m, struct table_file *f,
			uint32_t flags)
{
	struct ember_unwind_mapping *um;
	struct table_file *owner = f ? table_cache_owner(&ub->cache, f) : NULL;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), bias = 0;

	if (b->nr == EMBER_UNWIND_MAX_MAPPINGS)
		return;
	/*
	 * The backends take sorted, disjoint, page-aligned ranges only (the
	 * module refuses the whole binding otherwise): a line that is not,
	 * whatever source made it, is left out, not the process's tables.
	 */
	if (m->end <= m->start || ((m->start | m->end) & (page - 1)) ||
	    (b->nr && m->start < b->maps[b->nr - 1].end)) {
		static bool said;

		if (!said)
			fprintf(stderr, "ember: mapping %llx-%llx (%.*s) overlaps the one before or is not page-aligned: left out of its process's unwind binding (said once)\n",
				(unsigned long long)m->start,
				(unsigned long long)m->end, (int)m->path_len,
				m->path ? m->path : "");
		said = true;
		return;
	}
	um = &b->maps[b->nr++];
	memset(um, 0, sizeof(*um));
	um->start = m->start;
	um->end = m->end;
	um->flags = flags;
	if (owner && owner->table_id &&
	    table_file_bias(f, m->start, m->type == SYM_MAP_VDSO ? 0 : m->pgoff,
			    &bias)) {
		um->table_id = owner->table_id;
		um->bias = bias;
		b->owners[b->nr_owners++] = (uint32_t)(owner - ub->cache.files);
		owner->refs++;
	}
}

/*
 * A file line the kernel told (kmaps: its device and inode as mapped)
 * whose file a stat matched a moment ago: bound without the stat of
 * its map_files entry (a lookup that walks the process's mappings, and
 * an opendir when kmaps' range is not the mapping's own). Files change
 * by a new inode (package upgrades rename); one written in place is
 * seen again within KMAPS_SEEN_TRUST_NS. The range stays kmaps' own:
 * disjoint, and a tail kmaps could not trim holds no code.
 */
#define KMAPS_SEEN_TRUST_NS	(10ull * 1000000000)

static bool bind_seen(struct unwind_bindings *ub, struct bind_buf *b,
		      const struct sym_map_line *m, uint64_t now)
{
	struct table_file *f;

	if (m->type != SYM_MAP_FILE || m->deleted)
		return false;
	f = table_cache_find_seen(&ub->cache, m->dev, m->ino, now,
				  KMAPS_SEEN_TRUST_NS);
	if (!f)
		return false;
	add_mapping(ub, b, m, f, 0);
	return true;
}

/*
 * The executable mappings of a process, copied out of proc_maps_read()'s
 * buffer: whether they changed is known only once all are read, and an
 * unchanged set must cost no file lookup.
 */
struct exec_maps {
	struct sym_map_line *v;
	uint32_t n, cap;
	bool stopped;	/* not every line taken: past the bound, or no memory */
};

static bool exec_maps_add(void *ctx, struct sym_map_line *m)
{
	struct exec_maps *em = ctx;
	struct sym_map_line *c;

	/* one more than a binding holds: the vsyscall line is not bound */
	if (em->n == EMBER_UNWIND_MAX_MAPPINGS + 1)
		goto stop;
	if (em->n == em->cap) {
		/* grown as needed: most processes map a few dozen files */
		uint32_t cap = em->cap ? em->cap * 2 : 64;

		if (cap > EMBER_UNWIND_MAX_MAPPINGS + 1)
			cap = EMBER_UNWIND_MAX_MAPPINGS + 1;
		c = realloc(em->v, cap * sizeof(*c));
		if (!c)
			goto stop;
		em->v = c;
		em->cap = cap;
	}
	c = &em->v[em->n];
	*c = *m;
	c->path = strndup(m->path, m->path_len);
	if (!c->path)
		goto stop;
	em->n++;
	return true;
stop:
	em->stopped = true;
	return false;
}

static void exec_maps_free(struct exec_maps *em)
{
	for (uint32_t i = 0; i < em->n; i++)
		free((char *)em->v[i].path);
	free(em->v);
}

static void bind_add(struct unwind_bindings *ub, struct bind_buf *b,
		     uint32_t pid, const struct sym_map_line *m,
		     const struct stat *pre, bool pre_ok)
{
	switch (m->type) {
	case SYM_MAP_FILE:
	case SYM_MAP_MEMFD:
		add_mapping(ub, b, m, file_entry(ub, pid, m, pre, pre_ok), 0);
		break;
	case SYM_MAP_VDSO:
		add_mapping(ub, b, m, table_cache_vdso(&ub->cache),
			    EMBER_UMF_VDSO);
		break;
	case SYM_MAP_VSYSCALL:
		break;	/* above the user address range */
	default:
		add_mapping(ub, b, m, NULL, EMBER_UMF_ANON);
		break;
	}
}

/*
 * A CPython the walker cannot walk is said once per version and run (a
 * host of them must not flood stderr), and so is a backend that refuses
 * Python bindings. Worker thread only.
 */
#define PY_WARNED_MAX	16

static void py_warn(struct unwind_bindings *ub, uint32_t pid, uint32_t version,
		    const char *why)
{
	static uint32_t warned[PY_WARNED_MAX];
	static uint32_t nr_warned;

	for (uint32_t i = 0; i < nr_warned; i++)
		if (warned[i] == version)
			return;
	if (nr_warned == PY_WARNED_MAX)
		return;
	warned[nr_warned++] = version;
	(void)ub;
	fprintf(stderr, "ember: pid %u: %s; its Python frames stay native "
		"(said once per version)\n", pid, why);
}

/*
 * Find CPython among the process's mappings and bind (or rebind, or
 * unbind) it in the backend: at each new binding of the maps, so an
 * exec, a dlopen'ed libpython and a process first seen by a sample or
 * by -p are all covered. A backend without the op skips it.
 */
static void py_bind_maps(struct unwind_bindings *ub, struct unwind_proc *up,
			 const struct exec_maps *em)
{
	struct py_target t;
	char err[256] = "", msg[320];
	int r;

	if (!ub->ops->py_bind || ub->no_python)
		return;
	r = py_detect(up->pid, em->v, em->n, &t, err, sizeof(err));
	if (r != 1) {
		if (r < 0) {
			snprintf(msg, sizeof(msg), "%s: %s", t.file, err);
			py_warn(ub, up->pid, t.proc.version ? t.proc.version : 1, msg);
		}
		py_unbind(ub, up);
		return;
	}
	/* bound again at each new binding of the maps, even when unchanged:
	 * an exec may have dropped the backend's copy */
	if (!up->py && !(up->py = malloc(sizeof(*up->py))))
		return;
	r = ub->ops->py_bind(ub->src, up->pid, &t.proc, err, sizeof(err));
	if (r) {
		free(up->py);
		up->py = NULL;
		if (r != -ESRCH) {
			snprintf(msg, sizeof(msg), "the backend cannot walk it: %s",
				 err[0] ? err : strerror(-r));
			py_warn(ub, up->pid, 0, msg);
		}
		return;
	}
	*up->py = t.proc;
}

/*
 * stat() a file line's map_files entry into st, for file_entry(): 1 when
 * it is there, 0 when not, -1 when the line is to be left out. Lines
 * from kmaps (fix) are checked: the hooks report executable mappings
 * only, so kmaps misses an munmap (nothing starts there any more: left
 * out) and a mapping that replaced the tail of one it holds (arm64's ELF
 * loader maps a whole image executable, text first, then its data over
 * the tail: the end is taken from map_files). A gone process keeps its
 * lines (the binding fails).
 */
static int line_stat(uint32_t pid, struct sym_map_line *m, bool fix,
		     struct stat *st)
{
	char path[96];
	uint64_t end;

	proc_map_files_path(path, sizeof(path), pid, m->start, m->end);
	if (stat(path, st) == 0)
		return 1;
	if (errno != ENOENT)
		return 0;
	if (proc_map_files_end(pid, m->start, &end))
		return -2;
	if (!fix)
		return 0;
	if (!end)
		return -1;
	m->end = end;
	proc_map_files_path(path, sizeof(path), pid, m->start, m->end);
	return stat(path, st) == 0;
}

/*
 * Bind pid's mappings as /proc/PID/maps shows them now (or kmaps, which
 * the kernel told of them), in up, or when up
 * is NULL in the binding of the process a record at time_ns names. 1: a
 * new binding, 0: nothing changed, < 0: an error (-ESRCH: gone).
 */
int unwind_bind_proc(struct unwind_bindings *ub, uint32_t pid,
		     uint64_t time_ns, struct unwind_proc *up)
{
	struct unwind_proc *pb;
	struct bind_buf b = { 0 };
	struct exec_maps em = { 0 };
	bool from_kmaps, cut = false;
	char err[256] = "";
	uint64_t h, now = mono_ns();
	int r;

	/*
	 * Exited before its turn came (an exec storm's processes live a
	 * few ms, their bindings are due 10 ms after the exec): nothing to
	 * bind, and no /proc lookups that can only fail.
	 */
	if (kmaps_exited(ub->kmaps, pid))
		return -ESRCH;
	/* the kernel told them (a process that exec'd since we started) */
	from_kmaps = !kmaps_read(ub->kmaps, pid, exec_maps_add, &em, &h);
	if (!from_kmaps) {
		if (proc_maps_read_cut(NULL, pid, exec_maps_add, &em, &h,
				       &cut)) {
			exec_maps_free(&em);
			return -ESRCH;	/* gone already */
		}
		/* the misses that sent us here, settled by what /proc shows,
		 * and kmaps mended after a loss: from every line or not at
		 * all (a miss in a line not taken would be dropped as in no
		 * code, a mapping kmaps lacks there not seen) */
		if (!cut && !em.stopped)
			kmaps_settle_from_proc(ub->kmaps, pid, now, em.v, em.n);
	}
	pb = up ? up : unwind_proc_attach(ub, pid, time_ns);
	if (!pb) {
		r = -ENOSPC;
		goto out;
	}
	/* unchanged since the last bind: the miss is not ours to fix (JIT
	 * code, a file without CFI), and a storm of them must stay cheap */
	if (pb->bound_ns && pb->maps_hash == h) {
		r = 0;		/* nothing new */
		goto out;
	}
	pb->recheck_ns = 0;
	/*
	 * one entry per line at most: sized to the lines, not to the
	 * binding's limit (2000 zeroed entries, 88 KiB, were a tenth of a
	 * binding's time beside an exec storm)
	 */
	b.maps = calloc(em.n + 1, sizeof(*b.maps));
	b.owners = calloc(em.n + 1, sizeof(*b.owners));
	if (!b.maps || !b.owners) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < em.n; i++) {
		struct sym_map_line *m = &em.v[i];
		struct stat st;
		int ok = 0;

		if (from_kmaps && bind_seen(ub, &b, m, now))
			continue;
		if (m->type == SYM_MAP_FILE || m->type == SYM_MAP_MEMFD)
			ok = line_stat(pid, m, from_kmaps, &st);
		if (ok == -2) {
			r = -ESRCH;
			goto out;
		}
		if (ok >= 0)
			bind_add(ub, &b, pid, m, &st, ok);
	}
	r = ub->ops->unwind_bind(ub->src, pid, b.maps, b.nr, err, sizeof(err));
	/* the new references replace the old ones either way */
	release_owners(ub, pb);
	pb->owners = b.owners;
	pb->nr_owners = b.nr_owners;
	b.owners = NULL;
	if (!r) {
		pb->maps_hash = h;
		pb->bound_ns = now;
		pb->rechecks = 0;
		pb->recheck_ns = now + recheck_ms[0] * 1000000ull;
		py_bind_maps(ub, pb, &em);
		r = 1;
	} else if (r != -ESRCH) {
		fprintf(stderr, "ember: cannot bind unwind tables of pid %u: %s\n",
			pid, err[0] ? err : strerror(-r));
	}
out:
	free(b.maps);
	free(b.owners);
	exec_maps_free(&em);
	return r;
}
