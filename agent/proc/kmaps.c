// SPDX-License-Identifier: GPL-2.0-only
/*
 * New processes' executable mappings from EMBER_REC_MMAP records
 * (kmaps.h says what "complete" means and what is bounded).
 */
#include "proc/kmaps.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "lib/clock.h"
#include "uapi/ember.h"

#define KMAPS_BUCKETS	16384	/* power of two; up to 8192 processes held */
#define KMAPS_PENDING	4	/* misses waiting for their mapping */

struct kmap {
	uint64_t start, end, pgoff, dev, ino;
	uint32_t flags;		/* EMBER_MMAP_F_* */
	uint32_t path_len;	/* without the NUL */
	char *path;
};

struct kproc {
	struct kproc *hnext;
	struct kproc *prev, *next;	/* live (newest change first) or exited */
	uint32_t pid, gen;
	bool has_gen;		/* gen is the address space's */
	bool fresh;		/* the address space changed since the last exec */
	bool exec_seen;		/* an exec of this process was seen */
	bool complete;
	bool broken;		/* a bound or a cut path: never complete */
	bool lost;		/* broken by kmaps_lost() alone, complete
				 * before: a whole /proc read may mend it */
	bool exited;
	bool untold;		/* counted in st.untold */
	uint8_t npending;
	uint64_t exit_ns, vdso, cgroup_id;
	uint64_t gen_ns;	/* the address space's oldest record */
	uint64_t lost_ns;	/* when kmaps_lost() broke it */
	/*
	 * Misses on PCs no mapping holds yet. The rings are per CPU and
	 * read one after another: a miss can be taken before the mapping
	 * record that was written earlier on another CPU. A miss stays
	 * here until a mapping covers it; while one does not, reads say
	 * "read /proc".
	 */
	uint64_t pending[KMAPS_PENDING];
	uint64_t pending_ns[KMAPS_PENDING];	/* each miss's time */
	struct kmap *maps;	/* sorted by start, disjoint */
	uint32_t n, cap;
	size_t bytes;
};

struct klist {
	struct kproc *head, *tail;
};

struct kmaps {
	pthread_mutex_t lock;
	uint32_t max_procs;
	size_t max_bytes;
	uint64_t vdso_len;
	bool active;
	uint64_t consumed_ns;	/* kmaps_consumed()'s newest; 0: never told */
	uint64_t lost_ns;	/* the last kmaps_lost(): records before it
				 * may be missing */
	struct kproc *hash[KMAPS_BUCKETS];
	struct klist live, exited;
	struct kmaps_stats st;
};

static void klist_del(struct klist *l, struct kproc *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		l->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	else
		l->tail = p->prev;
	p->prev = p->next = NULL;
}

static void klist_add_head(struct klist *l, struct kproc *p)
{
	p->prev = NULL;
	p->next = l->head;
	if (l->head)
		l->head->prev = p;
	else
		l->tail = p;
	l->head = p;
}

static void klist_add_tail(struct klist *l, struct kproc *p)
{
	p->next = NULL;
	p->prev = l->tail;
	if (l->tail)
		l->tail->next = p;
	else
		l->head = p;
	l->tail = p;
}

static struct kproc **bucket(struct kmaps *k, uint32_t pid)
{
	return &k->hash[(pid * 2654435761u) & (KMAPS_BUCKETS - 1)];
}

static struct kproc *find(struct kmaps *k, uint32_t pid)
{
	struct kproc *p;

	for (p = *bucket(k, pid); p; p = p->hnext)
		if (p->pid == pid)
			return p;
	return NULL;
}

static void clear_maps(struct kmaps *k, struct kproc *p)
{
	for (uint32_t i = 0; i < p->n; i++)
		free(p->maps[i].path);
	free(p->maps);
	p->maps = NULL;
	p->n = p->cap = 0;
	k->st.bytes -= p->bytes;
	p->bytes = sizeof(*p);
	k->st.bytes += p->bytes;
}

static void drop(struct kmaps *k, struct kproc *p)
{
	struct kproc **pp;

	for (pp = bucket(k, p->pid); *pp; pp = &(*pp)->hnext)
		if (*pp == p) {
			*pp = p->hnext;
			break;
		}
	klist_del(p->exited ? &k->exited : &k->live, p);
	clear_maps(k, p);
	k->st.bytes -= p->bytes;
	k->st.procs--;
	free(p);
}

/*
 * Exited processes past their keep time go; then room for one more
 * process (or need more bytes), never at the cost of keep. The keep time
 * runs on the consumer's clock when it tells it: records are fed here by
 * the reader, which can be seconds ahead of the thread that symbolizes
 * (a loaded or emulated machine), and a short-lived process's samples
 * reach that thread after its exit.
 */
static void make_room(struct kmaps *k, uint64_t now, size_t need,
		      const struct kproc *keep, bool one_more)
{
	struct kproc *v;

	if (k->consumed_ns && now > k->consumed_ns)
		now = k->consumed_ns;
	while (k->exited.head && now &&
	       k->exited.head->exit_ns + KMAPS_KEEP_NS < now)
		drop(k, k->exited.head);
	while ((one_more && k->st.procs >= k->max_procs) ||
	       k->st.bytes + need > k->max_bytes) {
		v = k->exited.head ? k->exited.head : k->live.tail;
		if (v == keep)
			v = keep->prev;	/* keep is the newest: the one before */
		if (!v)
			return;
		drop(k, v);
		k->st.evicted++;
	}
}

/* Back to "nothing known" (a new process of a reused pid). */
static void reset(struct kmaps *k, struct kproc *p)
{
	clear_maps(k, p);
	if (p->exited) {
		klist_del(&k->exited, p);
		klist_add_head(&k->live, p);
	}
	p->has_gen = p->fresh = p->exec_seen = false;
	p->complete = p->broken = p->exited = p->untold = p->lost = false;
	p->exit_ns = p->vdso = p->cgroup_id = p->gen_ns = p->lost_ns = 0;
	p->npending = 0;
}

/*
 * The process a record of pid at time now belongs to, made if new; NULL
 * when the record is of an exited process (older than its exit) or there
 * is no memory.
 */
static struct kproc *get(struct kmaps *k, uint32_t pid, uint64_t now)
{
	struct kproc *p = find(k, pid);

	if (p && p->exited) {
		if (now && now <= p->exit_ns)
			return NULL;	/* a late record of the one that exited */
		reset(k, p);
	}
	if (p) {
		klist_del(&k->live, p);
		klist_add_head(&k->live, p);
		return p;
	}
	make_room(k, now, sizeof(*p), NULL, true);
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->bytes = sizeof(*p);
	p->hnext = *bucket(k, pid);
	*bucket(k, pid) = p;
	klist_add_head(&k->live, p);
	k->st.procs++;
	k->st.bytes += p->bytes;
	return p;
}

static void broken(struct kproc *p)
{
	p->broken = true;
	p->complete = false;
	p->lost = false;	/* for a reason no /proc read mends */
}

/* Records before when may be gone: broken until /proc mends it. */
static void mark_lost(struct kproc *p, uint64_t when)
{
	broken(p);
	p->lost = true;
	p->lost_ns = when;
}

/*
 * An address space told from before the last loss may lack a record the
 * loss took (its exec's own mappings, even): lost, for /proc to mend.
 */
static bool lost_before(struct kmaps *k, struct kproc *p)
{
	if (!p->has_gen || p->gen_ns > k->lost_ns)
		return false;
	mark_lost(p, k->lost_ns);
	return true;
}

static void set_complete(struct kmaps *k, struct kproc *p, bool on)
{
	on = on && !p->broken;
	if (on && lost_before(k, p))
		return;
	if (on && !p->complete)
		k->st.complete++;
	p->complete = on;
}

static void count_untold(struct kmaps *k, struct kproc *p)
{
	if (!p->untold)
		k->st.untold++;
	p->untold = true;
}

static bool grow(struct kmaps *k, struct kproc *p, uint32_t more)
{
	uint32_t cap;
	struct kmap *m;

	if (p->n + more <= p->cap)
		return true;
	cap = p->cap ? p->cap * 2 : 8;
	while (cap < p->n + more)
		cap *= 2;
	m = realloc(p->maps, cap * sizeof(*m));
	if (!m)
		return false;
	k->st.bytes += (size_t)(cap - p->cap) * sizeof(*m);
	p->bytes += (size_t)(cap - p->cap) * sizeof(*m);
	p->maps = m;
	p->cap = cap;
	return true;
}

static void free_map(struct kmaps *k, struct kproc *p, struct kmap *m)
{
	k->st.bytes -= m->path_len + 1;
	p->bytes -= m->path_len + 1;
	free(m->path);
}

/*
 * [start, end) replaces what it overlaps: mappings inside it go, one
 * across an edge is trimmed, one around it is split in two.
 */
static bool cut_range(struct kmaps *k, struct kproc *p, uint64_t start,
		      uint64_t end)
{
	uint32_t i = 0;

	while (i < p->n) {
		struct kmap *m = &p->maps[i];

		if (m->end <= start || m->start >= end) {
			i++;
			continue;
		}
		if (m->start >= start && m->end <= end) {	/* inside */
			free_map(k, p, m);
			memmove(m, m + 1, (p->n - i - 1) * sizeof(*m));
			p->n--;
			continue;
		}
		if (m->start < start && m->end > end) {		/* around */
			struct kmap tail = *m;
			char *dup = strdup(m->path);

			if (!dup || !grow(k, p, 1)) {
				free(dup);
				return false;
			}
			m = &p->maps[i];
			tail.pgoff += end - m->start;
			tail.start = end;
			tail.path = dup;
			m->end = start;
			memmove(m + 2, m + 1, (p->n - i - 1) * sizeof(*m));
			p->maps[i + 1] = tail;
			p->n++;
			k->st.bytes += tail.path_len + 1;
			p->bytes += tail.path_len + 1;
			i += 2;
			continue;
		}
		if (m->start < start) {				/* its end */
			m->end = start;
		} else {					/* its start */
			m->pgoff += end - m->start;
			m->start = end;
		}
		i++;
	}
	return true;
}

static void add_map(struct kmaps *k, struct kproc *p,
		    const struct ember_mmap *r, uint32_t path_len)
{
	struct kmap *m;
	uint32_t i;
	char *path;

	if (!cut_range(k, p, r->start, r->start + r->len)) {
		broken(p);
		return;
	}
	if (p->n >= KMAPS_MAX_MAPS) {
		k->st.over_maps++;
		broken(p);
		return;
	}
	make_room(k, 0, path_len + 1 + sizeof(*m), p, false);
	path = malloc(path_len + 1);
	if (!path || !grow(k, p, 1)) {
		free(path);
		broken(p);
		return;
	}
	memcpy(path, r->path, path_len);
	path[path_len] = '\0';
	for (i = 0; i < p->n && p->maps[i].start < r->start; i++)
		;
	memmove(&p->maps[i + 1], &p->maps[i], (p->n - i) * sizeof(*m));
	m = &p->maps[i];
	m->start = r->start;
	m->end = r->start + r->len;
	m->pgoff = r->pgoff;
	m->dev = makedev(r->dev_major, r->dev_minor);
	m->ino = r->ino;
	m->flags = r->flags;
	m->path = path;
	m->path_len = path_len;
	p->n++;
	k->st.bytes += path_len + 1;
	p->bytes += path_len + 1;
}

/* Misses a new mapping [start, end) explains. */
static void settle_pending(struct kproc *p, uint64_t start, uint64_t end)
{
	uint8_t keep = 0;

	for (uint8_t i = 0; i < p->npending; i++)
		if (p->pending[i] < start || p->pending[i] >= end) {
			p->pending_ns[keep] = p->pending_ns[i];
			p->pending[keep++] = p->pending[i];
		}
	p->npending = keep;
}

static void kmaps_on_mmap(struct kmaps *k, const struct ember_mmap *r)
{
	uint32_t path_len;
	struct kproc *p;

	if (r->hdr.size < sizeof(*r) || !r->pid || !r->len ||
	    r->start + r->len < r->start || !r->path_len ||
	    r->path_len > EMBER_MMAP_PATH_MAX ||
	    sizeof(*r) + (uint64_t)r->path_len > r->hdr.size) {
		k->st.bad++;
		return;
	}
	path_len = (uint32_t)strnlen(r->path, r->path_len);
	if (path_len == r->path_len) {	/* not NUL-terminated */
		k->st.bad++;
		return;
	}
	k->st.records++;
	k->active = true;
	if (!(p = get(k, r->pid, r->time_ns)))
		return;
	if (!p->has_gen || p->gen != r->mm_gen) {
		/* a new address space: only exec gives a pid one, so after
		 * an exec of it this is that exec's; before, maybe a forked
		 * child's copy (its inherited mappings were never told) */
		clear_maps(k, p);
		p->has_gen = true;
		p->gen = r->mm_gen;
		p->broken = p->untold = p->lost = false;
		p->vdso = 0;
		p->fresh = true;
		p->gen_ns = r->time_ns;
		p->npending = 0;
		set_complete(k, p, p->exec_seen);
	} else if (r->time_ns < p->gen_ns) {
		p->gen_ns = r->time_ns;	/* read late from another ring */
		if (p->complete)
			lost_before(k, p);
	}
	if (r->vdso)
		p->vdso = r->vdso;
	if (r->cgroup_id)
		p->cgroup_id = r->cgroup_id;
	if (r->flags & EMBER_MMAP_F_CUT) {
		broken(p);
		return;
	}
	/* a lost process too: a mapping made after the /proc read that
	 * will mend it is in no line, and must be here then */
	if (!p->broken || p->lost) {
		add_map(k, p, r, path_len);
		settle_pending(p, r->start, r->start + r->len);
	}
}

static void kmaps_on_exec(struct kmaps *k, const struct ember_exec *x)
{
	struct kproc *p;

	if (!x->pid || !(p = get(k, x->pid, x->time_ns)))
		return;
	/* its new address space's mappings came first (the mmap hooks), or
	 * come next (the tracepoint hook): either way complete */
	set_complete(k, p, p->fresh);
	p->fresh = false;
	p->exec_seen = true;
}

static void kmaps_on_exit(struct kmaps *k, const struct ember_exit *x)
{
	struct kproc *p = find(k, x->pid);

	if (!p || p->exited)
		return;
	klist_del(&k->live, p);
	p->exited = true;
	p->exit_ns = x->time_ns;
	klist_add_tail(&k->exited, p);
	make_room(k, x->time_ns, 0, NULL, false);
}

struct kmaps *kmaps_new(uint32_t max_procs, size_t max_bytes)
{
	struct kmaps *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	pthread_mutex_init(&k->lock, NULL);
	k->max_procs = max_procs ? max_procs : KMAPS_MAX_PROCS;
	k->max_bytes = max_bytes ? max_bytes : KMAPS_MAX_BYTES;
	return k;
}

void kmaps_free(struct kmaps *k)
{
	if (!k)
		return;
	while (k->live.head)
		drop(k, k->live.head);
	while (k->exited.head)
		drop(k, k->exited.head);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

void kmaps_set_vdso_len(struct kmaps *k, uint64_t len)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	k->vdso_len = len;
	pthread_mutex_unlock(&k->lock);
}

/*
 * A PC the backend found in none of the bound mappings: code the hooks
 * did not tell (an mprotect that made an anonymous region executable,
 * as JITs do, is seen by no hook but the kprobe). When kmaps has no
 * mapping there either, its list is not the whole truth: the process
 * is read from /proc from now on, as before kmaps.
 */
static void kmaps_on_miss(struct kmaps *k, const struct ember_unwind_miss *m)
{
	struct kproc *p = find(k, m->pid);

	if (!p || !p->complete || !m->pc)
		return;
	/* of the address space before (a forked copy, the old image) */
	if (m->time_ns < p->gen_ns)
		return;
	if (p->vdso && m->pc >= p->vdso && m->pc - p->vdso < k->vdso_len)
		return;
	for (uint32_t i = 0; i < p->n; i++)
		if (m->pc >= p->maps[i].start && m->pc < p->maps[i].end)
			return;
	for (uint8_t i = 0; i < p->npending; i++)
		if (p->pending[i] == m->pc)
			return;
	if (p->npending == KMAPS_PENDING) {
		count_untold(k, p);
		broken(p);
		return;
	}
	p->pending_ns[p->npending] = m->time_ns;
	p->pending[p->npending++] = m->pc;
}

bool kmaps_exited(struct kmaps *k, uint32_t pid)
{
	struct kproc *p;
	bool gone;

	if (!k)
		return false;
	pthread_mutex_lock(&k->lock);
	p = find(k, pid);
	gone = p && p->exited;
	pthread_mutex_unlock(&k->lock);
	return gone;
}

/* Whether one of the n lines at v holds pc. */
static bool lines_hold(const struct sym_map_line *v, uint32_t n, uint64_t pc)
{
	for (uint32_t i = 0; i < n; i++)
		if (pc >= v[i].start && pc < v[i].end)
			return true;
	return false;
}

/*
 * Whether p holds what line l shows: the vDSO it was told, or a mapping
 * that starts there, of the same file (device, inode) and offset, at
 * least as long (a told range may run past the mapping's end: kmaps.h).
 */
static bool told_line(const struct kmaps *k, const struct kproc *p,
		      const struct sym_map_line *l)
{
	const struct kmap *m;

	if (l->type == SYM_MAP_VSYSCALL)
		return true;	/* the kernel's page, never told */
	if (l->type == SYM_MAP_VDSO)
		return p->vdso == l->start && k->vdso_len;
	for (uint32_t i = 0; i < p->n; i++) {
		m = &p->maps[i];
		if (m->start == l->start)
			return m->dev == l->dev && m->ino == l->ino &&
			       m->pgoff == l->pgoff && m->end >= l->end;
	}
	return false;
}

/*
 * A process kmaps_lost() broke, read whole from /proc after the loss:
 * when every executable line is one it holds, no record it lost was a
 * mapping it still needs, and it answers again. Any doubt (a line it
 * lacks, a read begun before the loss) keeps it on /proc.
 */
static void mend_lost(struct kmaps *k, struct kproc *p, uint64_t read_ns,
		      const struct sym_map_line *v, uint32_t n)
{
	bool file = false;

	if (!p->lost || p->exited || read_ns < p->lost_ns)
		return;
	for (uint32_t i = 0; i < n; i++) {
		if (!told_line(k, p, &v[i]))
			return;
		file |= v[i].type == SYM_MAP_FILE;
	}
	/* none: a zombie, or a process whose mm went during the read */
	if (!file)
		return;
	p->broken = false;
	p->lost = false;
	p->complete = true;	/* again: not counted in st.complete twice */
	k->st.mended++;
}

void kmaps_settle_from_proc(struct kmaps *k, uint32_t pid, uint64_t read_ns,
			    const struct sym_map_line *v, uint32_t n)
{
	struct kproc *p;
	uint8_t keep = 0;

	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	p = find(k, pid);
	/* no line at all: a zombie's, or an address space gone mid-read */
	if (!p || !n) {
		pthread_mutex_unlock(&k->lock);
		return;
	}
	mend_lost(k, p, read_ns, v, n);
	for (uint8_t i = 0; i < p->npending; i++) {
		/*
		 * Kept: one taken after the read began (its mapping may be
		 * newer), and one in code /proc shows (its record may still
		 * wait in another CPU's ring; code no record told keeps the
		 * process on /proc as before). Dropped: one in no code.
		 */
		if (p->pending_ns[i] >= read_ns ||
		    lines_hold(v, n, p->pending[i])) {
			p->pending_ns[keep] = p->pending_ns[i];
			p->pending[keep++] = p->pending[i];
		} else {
			k->st.no_code++;
		}
	}
	p->npending = keep;
	pthread_mutex_unlock(&k->lock);
}

bool kmaps_knows(struct kmaps *k, uint32_t pid)
{
	struct kproc *p;
	bool known;

	if (!k)
		return false;
	pthread_mutex_lock(&k->lock);
	p = find(k, pid);
	known = p && p->complete;
	pthread_mutex_unlock(&k->lock);
	return known;
}

void kmaps_record(struct kmaps *k, const struct ember_rec_header *rec)
{
	if (!k || !rec)
		return;
	pthread_mutex_lock(&k->lock);
	switch (rec->type) {
	case EMBER_REC_MMAP:
		kmaps_on_mmap(k, (const void *)rec);
		break;
	case EMBER_REC_EXEC:
		if (rec->size >= sizeof(struct ember_exec))
			kmaps_on_exec(k, (const void *)rec);
		break;
	case EMBER_REC_EXIT:
		if (rec->size >= sizeof(struct ember_exit))
			kmaps_on_exit(k, (const void *)rec);
		break;
	case EMBER_REC_UNWIND_MISS:
		if (rec->size >= sizeof(struct ember_unwind_miss))
			kmaps_on_miss(k, (const void *)rec);
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&k->lock);
}

/* A loss at now: what was complete (or lost already) is lost. */
static void lose(struct kproc *p, uint64_t now)
{
	if (p->complete || p->lost)
		mark_lost(p, now);
	else
		broken(p);
}

void kmaps_lost(struct kmaps *k)
{
	uint64_t now = mono_ns();	/* after the lost records' times */
	struct kproc *p;

	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	k->st.lost++;
	k->lost_ns = now;
	for (p = k->live.head; p; p = p->next)
		lose(p, now);
	for (p = k->exited.head; p; p = p->next)
		lose(p, now);
	pthread_mutex_unlock(&k->lock);
}

void kmaps_consumed(struct kmaps *k, uint64_t time_ns)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	if (time_ns > k->consumed_ns)
		k->consumed_ns = time_ns;
	pthread_mutex_unlock(&k->lock);
}

bool kmaps_active(struct kmaps *k)
{
	bool on;

	if (!k)
		return false;
	pthread_mutex_lock(&k->lock);
	on = k->active;
	pthread_mutex_unlock(&k->lock);
	return on;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

static void line_of(const struct kmap *m, struct sym_map_line *l)
{
	memset(l, 0, sizeof(*l));
	l->start = m->start;
	l->end = m->end;
	l->pgoff = m->pgoff;
	l->dev = m->dev;
	l->ino = m->ino;
	l->exec = true;
	l->deleted = m->flags & EMBER_MMAP_F_DELETED;
	l->path = m->path;
	l->path_len = m->path_len;
	if (m->flags & EMBER_MMAP_F_VDSO)
		l->type = SYM_MAP_VDSO;
	else if (m->flags & EMBER_MMAP_F_ANON)
		l->type = SYM_MAP_ANON;
	else if (!strncmp(m->path, "/memfd:", 7))
		l->type = SYM_MAP_MEMFD;
	else
		l->type = SYM_MAP_FILE;
}

int kmaps_read(struct kmaps *k, uint32_t pid, proc_maps_fn fn, void *ctx,
	       uint64_t *hash)
{
	struct sym_map_line l;
	struct kmap vdso = { 0 };
	bool vdso_told = false;
	uint64_t h = 0xcbf29ce484222325ull;
	struct kproc *p;
	uint32_t i;

	if (!k)
		return -ENOENT;
	pthread_mutex_lock(&k->lock);
	p = find(k, pid);
	/*
	 * A miss no mapping explains yet: maybe only not taken yet, maybe
	 * code no record told, which /proc would show. A process that
	 * exited has no /proc left: what was told still names its code.
	 */
	if (p && p->complete && p->npending && !p->exited)
		count_untold(k, p);
	if (!p || !p->complete || (p->npending && !p->exited)) {
		k->st.misses++;
		pthread_mutex_unlock(&k->lock);
		return -ENOENT;
	}
	k->st.reads++;
	if (p->vdso && k->vdso_len) {
		vdso.start = p->vdso;
		vdso.end = p->vdso + k->vdso_len;
		vdso.flags = EMBER_MMAP_F_VDSO;
		vdso.path = (char *)"[vdso]";
		vdso.path_len = 6;
		for (i = 0; i < p->n; i++)
			if (p->maps[i].flags & EMBER_MMAP_F_VDSO)
				vdso_told = true;
	}
	for (i = 0; i <= p->n; i++) {
		const struct kmap *m = i < p->n ? &p->maps[i] : NULL;

		/*
		 * A mapping across the vDSO that is not it: the vDSO's own
		 * record, made before the kernel set mm->context.vdso
		 * (x86's map_vdso sets it after installing the pages), so
		 * told as anonymous. The vDSO line stands for it: readers
		 * (the module's binding) take only disjoint ranges.
		 */
		if (m && vdso.start && !(m->flags & EMBER_MMAP_F_VDSO) &&
		    m->start < vdso.end && m->end > vdso.start)
			continue;
		if (vdso.start && !vdso_told && (!m || m->start >= vdso.end)) {
			vdso_told = true;
			line_of(&vdso, &l);
			h = mix(mix(h, l.start), l.end);
			if (fn && !fn(ctx, &l))
				break;
		}
		if (!m)
			break;
		line_of(m, &l);
		h = mix(mix(mix(mix(h, l.start), l.end), l.pgoff), l.ino);
		if (fn && !fn(ctx, &l))
			break;
	}
	pthread_mutex_unlock(&k->lock);
	if (hash)
		*hash = h;
	return 0;
}

uint64_t kmaps_cgroup(struct kmaps *k, uint32_t pid)
{
	struct kproc *p;
	uint64_t id = 0;

	if (!k)
		return 0;
	pthread_mutex_lock(&k->lock);
	p = find(k, pid);
	if (p && p->has_gen)
		id = p->cgroup_id;
	pthread_mutex_unlock(&k->lock);
	return id;
}

void kmaps_get_stats(struct kmaps *k, struct kmaps_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	*st = k->st;
	pthread_mutex_unlock(&k->lock);
}
