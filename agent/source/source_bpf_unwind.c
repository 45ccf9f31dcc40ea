// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unwind tables and process bindings in the eBPF backend's maps
 * (source_bpf_unwind.h).
 *
 * A table's three parts go into pool ranges allocated first-fit; the
 * table's descriptor in uw_tables is written after its data (the map
 * update is the publication), and removed before its ranges are reused.
 * A program that looked the descriptor up just before the removal may
 * still read the ranges: they are kept out of reuse for a grace period,
 * and even stale data only ever yields bounded lookups and a cut stack.
 *
 * One file: first-fit allocation, publication order and the grace period are
 * one protocol over the same maps; split, its invariants would live in two
 * places.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "ember_unwind.h"
#include "ember_bpf.h"
#include "lib/clock.h"
#include "source/kmem_budget.h"
#include "source/source_bpf_unwind.h"

#define GRACE_NS	(1000ULL * 1000000)	/* ranges of dropped tables */
#define MAX_FREE	4096			/* free ranges per pool */

/* Must match bpf/unwind.bpf.h. */
struct uw_table {
	uint64_t base;
	uint32_t nr_pages, page_off, nr_rows, row_off, nr_rules, rule_off;
};

struct uw_proc {
	uint32_t nr, pad;
	struct ember_unwind_mapping m[EMBER_BPF_MAX_MAPPINGS];
};

struct range {
	uint32_t off, len;
};

struct pool {
	int fd;
	size_t map_bytes;
	uint32_t entries, esize;
	struct range free[MAX_FREE];
	uint32_t nr_free;
	uint64_t used;		/* entries */
};

struct held {
	uint32_t id;
	struct range r[3];
	uint64_t dropped_ns;	/* 0 while loaded */
};

/* A process slot: who holds it, and since when it is free. */
struct slot {
	uint32_t pid;		/* 0: free */
	uint64_t freed_ns;
};

struct bpf_unwind {
	pthread_mutex_t lock;
	struct pool pool[3];	/* pages, rows, rules */
	int tables_fd, procs_fd, slots_fd;
	struct slot *slots;
	uint32_t nr_slots;
	struct held *held;
	uint32_t nr_held, cap_held;
	uint32_t tables, procs;
	uint64_t load_refused, mappings_dropped;
	struct uw_proc *buf;
};

static uint32_t env_entries(const char *name, uint32_t dflt)
{
	const char *v = getenv(name);
	unsigned long n = v ? strtoul(v, NULL, 10) : 0;

	return n >= 1024 && n <= (1UL << 28) ? (uint32_t)n : dflt;
}

/*
 * Sizes under the kernel memory budget: the defaults on a machine of 1 GiB
 * and more, a quarter of them at the 8 MiB of a 256 MiB image (process
 * slots 2.5 MiB, rows 2 MiB). The EMBER_BPF_UNWIND_* variables (tests)
 * win over both.
 */
void bpf_unwind_size(const struct bpf_unwind_maps *m, const struct kmem_budget *kb,
		     bool enabled, bool few_processes)
{
	uint32_t procs = env_entries("EMBER_BPF_UNWIND_PROCS",
				     kmem_scale(kb, few_processes ? EMBER_BPF_FEW_PROCS :
						EMBER_BPF_MAX_PROCS, 64));

	if (procs > EMBER_BPF_MAX_PROCS_LIMIT)
		procs = EMBER_BPF_MAX_PROCS_LIMIT;
	/* a binding is written to a free slot before the old one is freed */
	bpf_map__set_max_entries(m->procs, enabled ? procs : 1);
	bpf_map__set_max_entries(m->proc_slots, enabled ? procs + procs / 4 + 1 : 1);
	/* two page-index entries and two rows per element */
	bpf_map__set_max_entries(m->pages, enabled ?
		env_entries("EMBER_BPF_UNWIND_PAGES",
			    kmem_scale(kb, EMBER_BPF_POOL_PAGES, 4096)) / 2 : 1);
	bpf_map__set_max_entries(m->rows, enabled ?
		env_entries("EMBER_BPF_UNWIND_ROWS",
			    kmem_scale(kb, EMBER_BPF_POOL_ROWS, 65536)) / 2 : 1);
	bpf_map__set_max_entries(m->rules, enabled ?
		env_entries("EMBER_BPF_UNWIND_RULES",
			    kmem_scale(kb, EMBER_BPF_POOL_RULES, 16384)) : 1);
	if (!enabled)
		bpf_map__set_max_entries(m->tables, 1);
}

/*
 * esize: bytes of one pool entry. A map element may hold several (the
 * kernel aligns array elements to 8 bytes: 4-byte entries come in pairs),
 * so the mapping is a plain array of entries either way.
 */
static int pool_map(struct pool *p, const struct bpf_map *map, uint32_t esize)
{
	long page = sysconf(_SC_PAGESIZE);

	p->esize = esize;
	p->entries = bpf_map__max_entries(map) * (bpf_map__value_size(map) / esize);
	p->map_bytes = ((size_t)p->entries * p->esize + page - 1) & ~(size_t)(page - 1);
	p->fd = bpf_map__fd(map);
	p->free[0] = (struct range){ 0, p->entries };
	p->nr_free = 1;
	return 0;
}

/*
 * Write n entries at entry off. The pool is mapped only for the copy:
 * mapped for good, its every page would count in the agent's RSS (the
 * kernel maps a BPF array whole), 10 MB of memory that is the kernel's.
 */
static int pool_write(struct pool *p, uint32_t off, const void *src, uint32_t n)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t start = ((size_t)off * p->esize) & ~(size_t)(page - 1);
	size_t end = (size_t)(off + n) * p->esize;
	size_t len = end - start;
	char *mem;

	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd,
		   (off_t)start);
	if (mem == MAP_FAILED)
		return -errno;
	memcpy(mem + ((size_t)off * p->esize - start), src, (size_t)n * p->esize);
	munmap(mem, len);
	return 0;
}

static int pool_alloc(struct pool *p, uint32_t n, uint32_t *off)
{
	for (uint32_t i = 0; i < p->nr_free; i++) {
		if (p->free[i].len < n)
			continue;
		*off = p->free[i].off;
		p->free[i].off += n;
		p->free[i].len -= n;
		if (!p->free[i].len) {
			memmove(&p->free[i], &p->free[i + 1],
				(p->nr_free - i - 1) * sizeof(p->free[0]));
			p->nr_free--;
		}
		p->used += n;
		return 0;
	}
	return -ENOSPC;
}

/* Give a range back, merging with its neighbours (free[] stays sorted). */
static void pool_free(struct pool *p, struct range r)
{
	uint32_t i = 0;

	if (!r.len)
		return;
	p->used -= r.len;
	while (i < p->nr_free && p->free[i].off < r.off)
		i++;
	if (i > 0 && p->free[i - 1].off + p->free[i - 1].len == r.off) {
		p->free[i - 1].len += r.len;
		if (i < p->nr_free && r.off + r.len == p->free[i].off) {
			p->free[i - 1].len += p->free[i].len;
			memmove(&p->free[i], &p->free[i + 1],
				(p->nr_free - i - 1) * sizeof(p->free[0]));
			p->nr_free--;
		}
		return;
	}
	if (i < p->nr_free && r.off + r.len == p->free[i].off) {
		p->free[i].off = r.off;
		p->free[i].len += r.len;
		return;
	}
	if (p->nr_free == MAX_FREE)
		return;		/* fragmented beyond tracking: leak the range */
	memmove(&p->free[i + 1], &p->free[i], (p->nr_free - i) * sizeof(p->free[0]));
	p->free[i] = r;
	p->nr_free++;
}

struct bpf_unwind *bpf_unwind_new(const struct bpf_unwind_maps *m,
				  char *err, size_t err_len)
{
	struct bpf_unwind *u = calloc(1, sizeof(*u));
	const struct bpf_map *maps[3] = { m->pages, m->rows, m->rules };
	int r = 0;

	if (!u || !(u->buf = malloc(sizeof(*u->buf)))) {
		free(u);
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	static const uint32_t esize[3] = {
		sizeof(uint32_t), sizeof(struct ember_unwind_row),
		sizeof(struct ember_unwind_rule),
	};

	for (int i = 0; i < 3 && !r; i++)
		r = pool_map(&u->pool[i], maps[i], esize[i]);
	if (r) {
		snprintf(err, err_len, "cannot use the unwind pools: %s",
			 strerror(-r));
		bpf_unwind_free(u);
		return NULL;
	}
	u->tables_fd = bpf_map__fd(m->tables);
	u->procs_fd = bpf_map__fd(m->procs);
	u->slots_fd = bpf_map__fd(m->proc_slots);
	u->nr_slots = bpf_map__max_entries(m->proc_slots);
	u->slots = calloc(u->nr_slots, sizeof(*u->slots));
	if (!u->slots) {
		snprintf(err, err_len, "out of memory");
		bpf_unwind_free(u);
		return NULL;
	}
	pthread_mutex_init(&u->lock, NULL);
	return u;
}

/* Ranges of tables dropped long enough ago go back to the pools. */
static void reclaim(struct bpf_unwind *u, uint64_t now)
{
	for (uint32_t i = 0; i < u->nr_held;) {
		struct held *h = &u->held[i];

		if (!h->dropped_ns || now - h->dropped_ns < GRACE_NS) {
			i++;
			continue;
		}
		for (int k = 0; k < 3; k++)
			pool_free(&u->pool[k], h->r[k]);
		u->held[i] = u->held[--u->nr_held];
	}
}

static struct held *new_held(struct bpf_unwind *u)
{
	if (u->nr_held == u->cap_held) {
		uint32_t cap = u->cap_held ? u->cap_held * 2 : 64;
		void *p = realloc(u->held, cap * sizeof(*u->held));

		if (!p)
			return NULL;
		u->held = p;
		u->cap_held = cap;
	}
	memset(&u->held[u->nr_held], 0, sizeof(u->held[0]));
	return &u->held[u->nr_held++];
}

/*
 * Test hook (EMBER_TEST_GARBAGE_TABLES): what a bug in the agent could
 * hand the programs, past validation: random bytes over the table's pool
 * ranges ("data"), and huge counts in its descriptor too ("desc"). The
 * programs' own bounds must turn it into cut or wrong stacks, never a
 * fault or a hang (suite 22).
 */
static void garbage(struct bpf_unwind *u, const uint32_t *off,
		    const uint32_t *n, struct uw_table *desc, bool counts)
{
	static uint64_t x = 0x9e3779b97f4a7c15ULL;

	for (int k = 0; k < 3; k++) {
		size_t bytes = (size_t)n[k] * u->pool[k].esize;
		uint8_t *p = malloc(bytes);

		if (!p)
			continue;
		for (size_t i = 0; i < bytes; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			p[i] = (uint8_t)x;
		}
		pool_write(&u->pool[k], off[k], p, n[k]);
		free(p);
	}
	if (!counts)
		return;
	desc->nr_rows = 0xfffffff0u;
	desc->nr_rules = 0xfffffff0u;
	desc->nr_pages = 0xfffffff0u;
}

int bpf_unwind_load(struct bpf_unwind *u, uint32_t id, const void *table,
		    size_t len, char *err, size_t err_len)
{
	const struct ember_unwind_table *t = table;
	uint32_t n[3], off[3] = { 0 };
	const void *src[3];
	struct uw_table desc;
	struct held *h;
	const char *why;
	int r = 0, k;

	if (ember_unwind_table_check(table, len, &why)) {
		snprintf(err, err_len, "%s", why);
		return -EINVAL;
	}
	n[0] = t->nr_pages + 1;
	n[1] = t->nr_rows;
	n[2] = t->nr_rules;
	src[0] = ember_unwind_page_rows(t);
	src[1] = ember_unwind_rows(t);
	src[2] = ember_unwind_rules(t);
	pthread_mutex_lock(&u->lock);
	reclaim(u, mono_ns());
	h = new_held(u);
	for (k = 0; k < 3 && h && !r; k++) {
		r = pool_alloc(&u->pool[k], n[k], &off[k]);
		if (!r)
			h->r[k] = (struct range){ off[k], n[k] };
	}
	if (!h || r) {
		for (int j = 0; h && j < k - 1; j++)
			pool_free(&u->pool[j], h->r[j]);
		if (h)
			u->nr_held--;
		u->load_refused++;
		pthread_mutex_unlock(&u->lock);
		snprintf(err, err_len, "the eBPF unwind pools are full (%u of %u rows "
			 "used; raise kernel_mem, or EMBER_BPF_UNWIND_ROWS)",
			 (unsigned int)u->pool[1].used, u->pool[1].entries);
		return -ENOSPC;
	}
	for (k = 0; k < 3 && !r; k++)
		r = pool_write(&u->pool[k], off[k], src[k], n[k]);
	if (r) {
		h->dropped_ns = mono_ns();	/* ranges back after the grace */
		pthread_mutex_unlock(&u->lock);
		snprintf(err, err_len, "cannot write the unwind pools: %s",
			 strerror(-r));
		return r;
	}
	h->id = id;
	desc = (struct uw_table){ t->base, t->nr_pages, off[0], t->nr_rows,
				  off[1], t->nr_rules, off[2] };
	if (getenv("EMBER_TEST_GARBAGE_TABLES"))
		garbage(u, off, n, &desc,
			!strcmp(getenv("EMBER_TEST_GARBAGE_TABLES"), "desc"));
	/* after the data: the update publishes the table */
	if (bpf_map_update_elem(u->tables_fd, &id, &desc, BPF_ANY)) {
		r = -errno;
		h->dropped_ns = mono_ns();
		pthread_mutex_unlock(&u->lock);
		snprintf(err, err_len, "cannot add the table to uw_tables: %s",
			 strerror(-r));
		return r;
	}
	u->tables++;
	pthread_mutex_unlock(&u->lock);
	return 0;
}

int bpf_unwind_drop(struct bpf_unwind *u, uint32_t id)
{
	int r = -ENOENT;

	pthread_mutex_lock(&u->lock);
	for (uint32_t i = 0; i < u->nr_held; i++) {
		if (u->held[i].id != id || u->held[i].dropped_ns)
			continue;
		bpf_map_delete_elem(u->tables_fd, &id);
		u->held[i].dropped_ns = mono_ns();
		u->tables--;
		r = 0;
		break;
	}
	pthread_mutex_unlock(&u->lock);
	return r;
}

/* A free slot whose last reader is surely gone, or -1. */
static int slot_get(struct bpf_unwind *u, uint32_t pid, uint64_t now)
{
	for (uint32_t i = 0; i < u->nr_slots; i++) {
		if (u->slots[i].pid || now - u->slots[i].freed_ns < GRACE_NS)
			continue;
		u->slots[i].pid = pid;
		return (int)i;
	}
	return -1;
}

static void slot_put(struct bpf_unwind *u, int i, uint64_t now)
{
	if (i >= 0 && (uint32_t)i < u->nr_slots) {
		u->slots[i].pid = 0;
		u->slots[i].freed_ns = now;
	}
}

/*
 * Free every slot the agent gave pid but keep; whether it had one. The
 * slots array says so without asking uw_procs (a syscall per bind and
 * unbind cost more than the scan), and also for a slot whose index entry
 * the BPF exec hook deleted.
 */
static bool slots_put_pid(struct bpf_unwind *u, uint32_t pid, int keep,
			  uint64_t now)
{
	bool had = false;

	for (uint32_t i = 0; i < u->nr_slots; i++) {
		if (u->slots[i].pid != pid || (int)i == keep)
			continue;
		slot_put(u, (int)i, now);
		had = true;
	}
	return had;
}

int bpf_unwind_bind(struct bpf_unwind *u, uint32_t pid,
		    const struct ember_unwind_mapping *maps, size_t nr,
		    char *err, size_t err_len)
{
	uint64_t now = mono_ns();
	int slot, r = 0;
	uint32_t key;

	pthread_mutex_lock(&u->lock);
	if (!nr) {
		if (slots_put_pid(u, pid, -1, now)) {
			bpf_map_delete_elem(u->procs_fd, &pid);
			u->procs--;
		}
		pthread_mutex_unlock(&u->lock);
		return 0;
	}
	if (nr > EMBER_BPF_MAX_MAPPINGS) {
		u->mappings_dropped += nr - EMBER_BPF_MAX_MAPPINGS;
		nr = EMBER_BPF_MAX_MAPPINGS;
	}
	slot = slot_get(u, pid, now);
	if (slot < 0) {
		pthread_mutex_unlock(&u->lock);
		if (err)
			snprintf(err, err_len, "cannot bind pid %u: all %u process "
				 "slots in use (EMBER_BPF_UNWIND_PROCS raises it)",
				 pid, u->nr_slots);
		return -ENOSPC;
	}
	memset(u->buf, 0, sizeof(*u->buf));
	u->buf->nr = (uint32_t)nr;
	memcpy(u->buf->m, maps, nr * sizeof(*maps));
	key = (uint32_t)slot;
	/* the new binding first, then the index: a reader sees one or the
	 * other, never a half-written one */
	if (bpf_map_update_elem(u->slots_fd, &key, u->buf, BPF_ANY) ||
	    bpf_map_update_elem(u->procs_fd, &pid, &key, BPF_ANY)) {
		r = -errno;
		slot_put(u, slot, now);
	} else if (!slots_put_pid(u, pid, slot, now)) {
		u->procs++;	/* not bound before */
	}
	pthread_mutex_unlock(&u->lock);
	if (r && err)
		snprintf(err, err_len, "cannot bind pid %u in uw_procs: %s%s", pid,
			 strerror(-r), r == -E2BIG || r == -ENOMEM ?
			 " (too many processes bound)" : "");
	return r;
}

void bpf_unwind_usage(struct bpf_unwind *u, struct bpf_unwind_usage *out)
{
	memset(out, 0, sizeof(*out));
	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	for (int k = 0; k < 3; k++) {
		out->bytes_used += u->pool[k].used * u->pool[k].esize;
		out->bytes_cap += (uint64_t)u->pool[k].entries * u->pool[k].esize;
	}
	out->tables = u->tables;
	out->procs = u->procs;
	out->load_refused = u->load_refused;
	out->mappings_dropped = u->mappings_dropped;
	pthread_mutex_unlock(&u->lock);
}

void bpf_unwind_free(struct bpf_unwind *u)
{
	if (!u)
		return;
	free(u->held);
	free(u->buf);
	free(u->slots);
	free(u);
}
