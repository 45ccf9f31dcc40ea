// SPDX-License-Identifier: GPL-2.0-only
/*
 * -e lock in the aggregation: records valid, waits joined with their
 * wakers in either order, orphan wakers, a waker that never comes (the
 * deadline and the flush point), timeouts, the lock's kind from the
 * waiter's stack and from kernel flags, kernel lock names from kallsyms
 * data symbols, frame layout, and the pending tables' bounds under a
 * million distinct keys.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "aggregate/aggregate.h"
#include "aggregate/lock_join.h"
#include "session/session.h"
#include "source/source.h"
#include "test_util.h"

/* symbolize_internal.h's test hook: kernel symbols from another file */
void sym_set_kallsyms_path(struct symbolizer *s, const char *path);

/* pids far above pid_max: /proc lookups find nothing */
#define P 4000000101u
#define W 4000000102u

static uint64_t buf[2][1024];

/* An EMBER_REC_LOCK of thread tid of P: user stack at base, nu frames. */
static struct ember_sample *lock_rec(uint32_t tid, uint64_t base, uint16_t nu,
				     uint64_t start, uint64_t end,
				     uint64_t addr, uint8_t kind,
				     uint16_t flags, uint32_t waker_tid)
{
	struct ember_sample *s = (void *)buf[0];
	struct ember_lock_wait *w;

	memset(buf[0], 0, sizeof(buf[0]));
	s->hdr.type = EMBER_REC_LOCK;
	s->hdr.size = sizeof(*s) + 8 * (nu + 3);
	s->pid = P;
	s->tid = tid;
	s->nr_user = nu;
	/* whole stacks, as a CFI walk that reached _start reports them */
	s->flags = EMBER_SF_USER_COMPLETE;
	s->time_ns = end;
	s->weight_ns = end - start;
	strcpy(s->comm, "waiter");
	for (int i = 0; i < nu; i++)
		s->ips[i] = base + i;
	w = (struct ember_lock_wait *)EMBER_LOCK_WAIT(s);
	w->addr = addr;
	w->start_ns = start;
	w->waker_tid = waker_tid;
	w->kind = kind;
	w->flags = flags;
	return s;
}

/* An EMBER_REC_LOCK_WAKER by thread W of pid W for (tid, start). */
static struct ember_sample *waker_rec(uint32_t tid, uint64_t start,
				      uint64_t now, uint64_t base)
{
	struct ember_sample *s = (void *)buf[1];
	struct ember_lock_waker *k;

	memset(buf[1], 0, sizeof(buf[1]));
	s->hdr.type = EMBER_REC_LOCK_WAKER;
	s->hdr.size = sizeof(*s) + 8 * (3 + 3);
	s->pid = W;
	s->tid = W;
	s->nr_kernel = 1;
	s->nr_user = 2;
	s->time_ns = now;
	s->weight_ns = now - start;
	s->flags = EMBER_SF_USER_COMPLETE;	/* a whole stack */
	strcpy(s->comm, "unlocker");
	for (int i = 0; i < 3; i++)
		s->ips[i] = base + i;
	k = (struct ember_lock_waker *)EMBER_LOCK_WAKER(s);
	k->start_ns = start;
	k->addr = 0x7f0000001000;
	k->waiter_pid = P;
	k->waiter_tid = tid;
	return s;
}

static void test_valid(void)
{
	struct ember_sample *s = lock_rec(P, 0x100, 2, 1000, 50000, 0x1000,
					  EMBER_LOCK_FUTEX, 0, 0);
	bool ok = ember_record_valid(&s->hdr, s->hdr.size);

	s->hdr.size -= 8;	/* the trailer cut short */
	T_CHECK("lock_record_valid", ok && !ember_record_valid(&s->hdr, s->hdr.size),
		"LOCK with its trailer valid %d, without it %d", ok,
		ember_record_valid(&s->hdr, s->hdr.size));
	s = waker_rec(P, 1000, 20000, 0x900);
	ok = ember_record_valid(&s->hdr, s->hdr.size);
	s->hdr.size = sizeof(*s) + 8 * 3;
	T_CHECK("lock_waker_record_valid", ok && !ember_record_valid(&s->hdr, s->hdr.size),
		"WAKER valid %d, short %d", ok, ember_record_valid(&s->hdr, s->hdr.size));
}

static const struct prof_sample *lock_sample(const struct profile *p,
					     uint32_t tid, bool waker)
{
	for (size_t i = 0; p && i < p->nr_samples; i++)
		if (p->samples[i].event == PROF_EV_LOCK &&
		    p->samples[i].tid == tid && p->samples[i].lock_waker == waker)
			return &p->samples[i];
	return NULL;
}

static void test_join_orders(void)
{
	struct profile_builder *pb = pb_new(NULL, NULL);
	const struct prof_sample *ps;
	struct pb_counters c;
	struct profile *p;
	char name[64];

	/* waker first (the usual order), then its wait */
	pb_add_record(pb, &waker_rec(P, 1000, 30000, 0x900)->hdr);
	pb_add_record(pb, &lock_rec(P, 0x100, 2, 1000, 50000, 0x7f0000001000,
				    EMBER_LOCK_FUTEX, 0, W)->hdr);
	/* the wait first (its waker in another CPU's ring), then the waker */
	pb_add_record(pb, &lock_rec(P, 0x100, 2, 2000, 60000, 0x7f0000001000,
				    EMBER_LOCK_FUTEX, 0, W)->hdr);
	pb_get_counters(pb, &c);
	T_CHECK("lock_wait_held_for_waker", c.lock_pending == 1 &&
		c.samples[PROF_EV_LOCK] == 1, "pending %zu, aggregated %llu",
		c.lock_pending, (unsigned long long)c.samples[PROF_EV_LOCK]);
	pb_add_record(pb, &waker_rec(P, 2000, 40000, 0x900)->hdr);
	pb_get_counters(pb, &c);
	T_CHECK("lock_join_both_orders", c.lock_joined == 2 &&
		c.lock_pending == 0 && c.lock_missing == 0 &&
		c.samples[PROF_EV_LOCK] == 2, "joined %llu pending %zu missing %llu",
		(unsigned long long)c.lock_joined, c.lock_pending,
		(unsigned long long)c.lock_missing);
	p = pb_finish(pb, NULL);
	ps = lock_sample(p, P, true);
	T_CHECK("lock_joined_merge", ps && ps->count == 2 &&
		ps->weight_ns == 49000 + 58000, "count %llu weight %llu",
		ps ? (unsigned long long)ps->count : 0ull,
		ps ? (unsigned long long)ps->weight_ns : 0ull);
	/* [waker unlocker], its user root..leaf and kernel leaf, [lock], waiter */
	T_CHECK("lock_frames_layout", ps && ps->nr_frames == 1 + 3 + 1 + 2 &&
		!strcmp(ps->frames[0]->function, "[waker unlocker]") &&
		ps->frames[1]->address == 0x902 && ps->frames[3]->address == 0x900 &&
		ps->frames[3]->kind == PROF_FRAME_KERNEL &&
		!strcmp(ps->frames[4]->function,
			prof_lock_frame_name(ps, name, sizeof(name))) &&
		!strcmp(name, "[lock 0x7f0000001000 futex]") &&
		ps->frames[5]->address == 0x100 && ps->frames[6]->address == 0x101,
		"frames %u: %s %s", ps ? ps->nr_frames : 0,
		ps && ps->nr_frames ? prof_frame_label(p, ps->frames[0]) : "-",
		ps && ps->nr_frames > 4 ? prof_frame_label(p, ps->frames[4]) : "-");
	T_CHECK("lock_meta_counts", p && p->meta.lock_wakers_joined == 2 &&
		p->meta.samples[PROF_EV_LOCK] == 2, "meta joined %llu",
		p ? (unsigned long long)p->meta.lock_wakers_joined : 0ull);
	profile_free(p);
	pb_free(pb);
}

/* A waker whose stack nothing proves whole gets [cut] at its root. */
static void test_waker_cut(void)
{
	struct profile_builder *pb = pb_new(NULL, NULL);
	const struct prof_sample *ps;
	struct ember_sample *k;
	struct profile *p;

	k = waker_rec(P, 1000, 30000, 0x900);
	k->flags = EMBER_SF_USER_FP;	/* a frame-pointer walk, unproven */
	pb_add_record(pb, &k->hdr);
	pb_add_record(pb, &lock_rec(P, 0x100, 2, 1000, 50000, 0x7f0000001000,
				    EMBER_LOCK_FUTEX, 0, W)->hdr);
	p = pb_finish(pb, NULL);
	ps = lock_sample(p, P, true);
	T_CHECK("lock_waker_unproven_cut", ps && ps->nr_frames == 8 &&
		ps->frames[1] == &prof_cut_frame &&
		ps->frames[2]->address == 0x902,
		"frames %u", ps ? ps->nr_frames : 0);
	profile_free(p);
	pb_free(pb);
}

static void test_orphans_and_missing(void)
{
	struct profile_builder *pb = pb_new(NULL, NULL);
	struct pb_counters c;
	struct profile *p;
	const uint64_t ms = 1000000;

	/* a waker written, but the wait timed out: no waker_tid */
	pb_add_record(pb, &waker_rec(P, 1000, 30000, 0x900)->hdr);
	pb_add_record(pb, &lock_rec(P, 0x100, 2, 1000, 50000, 0x1000,
				    EMBER_LOCK_FUTEX, EMBER_LOCK_F_TIMEOUT, 0)->hdr);
	/* a waker whose wait never comes: expires after a second */
	pb_add_record(pb, &waker_rec(P + 1, 5000, 6000, 0x900)->hdr);
	/* a wait whose waker never comes: 200 ms of record time */
	pb_add_record(pb, &lock_rec(P + 2, 0x200, 2, 7000, 9000, 0x2000,
				    EMBER_LOCK_FUTEX, 0, W)->hdr);
	pb_get_counters(pb, &c);
	T_CHECK("lock_timeout_orphan", c.lock_orphans == 1 && c.lock_pending == 2 &&
		c.samples[PROF_EV_LOCK] == 1, "orphans %llu pending %zu lock %llu",
		(unsigned long long)c.lock_orphans, c.lock_pending,
		(unsigned long long)c.samples[PROF_EV_LOCK]);
	pb_add_record(pb, &lock_rec(P + 3, 0x300, 1, 8000, 100 * ms, 0x3000,
				    EMBER_LOCK_FUTEX, 0, 0)->hdr);
	pb_get_counters(pb, &c);
	T_CHECK("lock_missing_waits_deadline", c.lock_missing == 0 &&
		c.lock_pending == 2, "missing %llu before the deadline",
		(unsigned long long)c.lock_missing);
	pb_add_record(pb, &lock_rec(P + 3, 0x300, 1, 8000, 300 * ms, 0x3000,
				    EMBER_LOCK_FUTEX, 0, 0)->hdr);
	pb_get_counters(pb, &c);
	T_CHECK("lock_missing_after_deadline", c.lock_missing == 1 &&
		c.lock_pending == 1 && c.samples[PROF_EV_LOCK] == 4,
		"missing %llu pending %zu lock %llu",
		(unsigned long long)c.lock_missing, c.lock_pending,
		(unsigned long long)c.samples[PROF_EV_LOCK]);
	pb_add_record(pb, &lock_rec(P + 3, 0x300, 1, 8000, 1200 * ms, 0x3000,
				    EMBER_LOCK_FUTEX, 0, 0)->hdr);
	pb_get_counters(pb, &c);
	T_CHECK("lock_orphan_expires", c.lock_orphans == 2 && c.lock_pending == 0,
		"orphans %llu pending %zu", (unsigned long long)c.lock_orphans,
		c.lock_pending);
	/* the flush point: a held wait is aggregated without its waker */
	pb_add_record(pb, &lock_rec(P + 4, 0x400, 1, 1200 * ms, 1201 * ms, 0x4000,
				    EMBER_LOCK_FUTEX, 0, W)->hdr);
	p = pb_finish(pb, NULL);
	T_CHECK("lock_flush_point", p && p->meta.samples[PROF_EV_LOCK] == 6 &&
		p->meta.lock_waker_missing == 2 && lock_sample(p, P + 4, false),
		"lock samples %llu missing %llu",
		p ? (unsigned long long)p->meta.samples[PROF_EV_LOCK] : 0ull,
		p ? (unsigned long long)p->meta.lock_waker_missing : 0ull);
	profile_free(p);
	pb_free(pb);
}

/* Waits on distinct locks, or of distinct kinds, are kept apart. */
static void test_keys(void)
{
	struct profile_builder *pb = pb_new(NULL, NULL);
	struct ember_sample *s;
	struct pb_counters c;

	pb_add_record(pb, &lock_rec(P, 0x100, 2, 1000, 50000, 0x1000,
				    EMBER_LOCK_FUTEX, 0, 0)->hdr);
	pb_add_record(pb, &lock_rec(P, 0x100, 2, 1000, 50000, 0x1000,
				    EMBER_LOCK_FUTEX, 0, 0)->hdr);
	pb_add_record(pb, &lock_rec(P, 0x100, 2, 1000, 50000, 0x2000,
				    EMBER_LOCK_FUTEX, 0, 0)->hdr);
	pb_add_record(pb, &lock_rec(P, 0x100, 2, 1000, 50000, 0x1000,
				    EMBER_LOCK_FUTEX_PI, 0, 0)->hdr);
	pb_add_record(pb, &lock_rec(P, 0x100, 2, 1000, 50000, 0x1000,
				    EMBER_LOCK_KERNEL, EMBER_LOCK_F_MUTEX, 0)->hdr);
	/* the same stack as an off-CPU interval is another event */
	s = lock_rec(P, 0x100, 2, 1000, 50000, 0x1000, EMBER_LOCK_FUTEX, 0, 0);
	s->hdr.type = EMBER_REC_OFFCPU;
	pb_add_record(pb, &s->hdr);
	pb_get_counters(pb, &c);
	T_CHECK("lock_keys_apart", c.unique_stacks == 5 &&
		c.samples[PROF_EV_LOCK] == 5, "%zu unique, %llu lock",
		c.unique_stacks, (unsigned long long)c.samples[PROF_EV_LOCK]);
	pb_free(pb);
}

static void test_kinds(void)
{
	static const struct { const char *fn; const char *kind; } user[] = {
		{ "pthread_mutex_lock", "mutex" },
		{ "___pthread_mutex_lock", "mutex" },
		{ "__pthread_mutex_lock_full", "mutex" },
		{ "pthread_mutex_timedlock", "mutex" },
		{ "__pthread_mutex_clocklock_common", "mutex" },
		{ "__pthread_rwlock_wrlock_full64", "rwlock" },
		{ "pthread_rwlock_rdlock", "rwlock" },
		{ "pthread_cond_wait@@GLIBC_2.3.2", "condvar" },
		{ "__pthread_cond_wait_common", "condvar" },
		{ "__GI___pthread_cond_wait", "condvar" },
		{ "__GI___pthread_mutex_lock", "mutex" },
		{ "__pthread_clockjoin_ex", "join" },
		{ "sem_wait", "semaphore" },
		{ "__new_sem_wait_slow64", "semaphore" },
		{ "pthread_barrier_wait", "barrier" },
		{ "main", "futex" },
	};
	struct prof_frame kf = { .kind = PROF_FRAME_KERNEL,
				 .function = "pthread_mutex_lock" };
	struct prof_frame leaf = { .kind = PROF_FRAME_NATIVE,
				   .function = "__futex_abstimed_wait_common" };
	struct prof_frame f = { .kind = PROF_FRAME_NATIVE };
	struct prof_frame outer = { .kind = PROF_FRAME_NATIVE,
				    .function = "pthread_cond_wait" };
	const struct prof_frame *st[4] = { &kf, &leaf, &f, &outer };
	int bad = 0;

	for (size_t i = 0; i < sizeof(user) / sizeof(user[0]); i++) {
		const char *k;

		f.function = user[i].fn;
		k = prof_lock_kind(EMBER_LOCK_FUTEX, 0, st, 3);
		if (strcmp(k, user[i].kind)) {
			printf("# %s -> %s, want %s\n", user[i].fn, k, user[i].kind);
			bad++;
		}
	}
	T_CHECK("lock_kind_from_stack", !bad, "%d names misread", bad);
	/* the leafmost telling frame wins: mutex re-taken inside a condvar */
	f.function = "__pthread_mutex_cond_lock";
	T_CHECK("lock_kind_leafmost",
		!strcmp(prof_lock_kind(EMBER_LOCK_FUTEX, 0, st, 4), "mutex"),
		"got %s", prof_lock_kind(EMBER_LOCK_FUTEX, 0, st, 4));
	f.function = NULL;
	T_CHECK("lock_kind_unresolved",
		!strcmp(prof_lock_kind(EMBER_LOCK_FUTEX, 0, st, 3), "futex") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_FUTEX_PI, 0, st, 3), "pi-mutex") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_FUTEX_WAITV, 0, st, 3), "waitv") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_FUTEX, 0, NULL, 0), "futex"),
		"futex kinds");
	T_CHECK("lock_kind_kernel",
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_MUTEX, NULL, 0), "mutex") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_MUTEX |
				       EMBER_LOCK_F_SPIN, NULL, 0), "mutex") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_READ, NULL, 0), "rwsem-read") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_WRITE |
				       EMBER_LOCK_F_MMAP_LOCK, NULL, 0), "rwsem-write") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_SPIN, NULL, 0), "spinlock") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_SPIN |
				       EMBER_LOCK_F_READ, NULL, 0), "rwlock-read") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_SPIN |
				       EMBER_LOCK_F_WRITE, NULL, 0), "rwlock-write") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_RT, NULL, 0), "rtmutex") &&
		/* PREEMPT_RT: rwbase_rt (rwsem or rwlock_t) and rtlock */
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_RT |
				       EMBER_LOCK_F_READ, NULL, 0), "rt-rw-read") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_RT |
				       EMBER_LOCK_F_WRITE, NULL, 0), "rt-rw-write") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_RT |
				       EMBER_LOCK_F_WRITE | EMBER_LOCK_F_MMAP_LOCK,
				       NULL, 0), "rwsem-write") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_RT |
				       EMBER_LOCK_F_READ | EMBER_LOCK_F_MMAP_LOCK,
				       NULL, 0), "rwsem-read") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_RT |
				       EMBER_LOCK_F_SPIN, NULL, 0), "rt-spinlock") &&
		!strcmp(prof_lock_kind(EMBER_LOCK_KERNEL, EMBER_LOCK_F_PERCPU |
				       EMBER_LOCK_F_READ, NULL, 0), "percpu-rwsem"),
		"kernel kinds");
}

/*
 * End to end through the symbolizer: the waiter's leaf in this process's
 * pthread_mutex_lock names a mutex; kernel locks are named from a
 * kallsyms file's data symbols, or mmap_lock.
 */
static void test_named(void)
{
	static const char ksyms[] =
		"ffffffff81000000 T _text\n"
		"ffffffff81001000 T mutex_lock\n"
		"ffffffff82000000 D jiffies\n"
		"ffffffff82a0c0e0 d rtnl_mutex\n"
		"ffffffff82a0c200 b some_table\n";
	char path[] = "/tmp/ember-test-lock-XXXXXX";
	struct sym_options so = { 0 };
	struct proc_table *procs = proc_table_new(NULL);
	struct symbolizer *sym;
	struct pb_options po = { 0 };
	struct profile_builder *pb;
	struct ember_sample *s;
	struct profile *p;
	const char *kind = NULL, *rtnl = NULL, *mm = NULL, *off = NULL, *heap = "?";
	bool leaked = false;
	char name[128];
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, ksyms, sizeof(ksyms) - 1) != (ssize_t)sizeof(ksyms) - 1) {
		T_CHECK("lock_named_setup", false, "cannot write %s", path);
		return;
	}
	close(fd);
	so.procs = procs;
	sym = sym_new(&so);
	sym_set_kallsyms_path(sym, path);
	po.procs = procs;
	pb = pb_new(&po, sym);

	s = lock_rec((uint32_t)getpid(), 0, 1, 1000, 50000, 0x5000,
		     EMBER_LOCK_FUTEX, 0, 0);
	s->pid = (uint32_t)getpid();
	s->ips[0] = (uint64_t)(uintptr_t)pthread_mutex_lock;
	pb_add_record(pb, &s->hdr);
	s = lock_rec(P, 0x100, 1, 1000, 50000, 0xffffffff82a0c0e0ull,
		     EMBER_LOCK_KERNEL, EMBER_LOCK_F_MUTEX, 0);
	pb_add_record(pb, &s->hdr);
	s = lock_rec(P, 0x100, 1, 1000, 50000, 0xffffffff82a0c208ull,
		     EMBER_LOCK_KERNEL, EMBER_LOCK_F_SPIN, 0);
	pb_add_record(pb, &s->hdr);
	s = lock_rec(P, 0x100, 1, 1000, 50000, 0xffff888012345678ull,
		     EMBER_LOCK_KERNEL, EMBER_LOCK_F_WRITE | EMBER_LOCK_F_MMAP_LOCK, 0);
	pb_add_record(pb, &s->hdr);
	s = lock_rec(P, 0x100, 1, 1000, 50000, 0xffff888000001000ull,
		     EMBER_LOCK_KERNEL, EMBER_LOCK_F_READ, 0);
	pb_add_record(pb, &s->hdr);
	p = pb_finish(pb, NULL);
	for (size_t i = 0; p && i < p->nr_samples; i++) {
		const struct prof_sample *ps = &p->samples[i];

		if (ps->event != PROF_EV_LOCK)
			continue;
		if (ps->lock_addr == 0x5000) {
			kind = ps->lock_kind;
			continue;
		}
		/* kernel locks: a per-run id, never the address (KASLR) */
		if (!ps->lock_addr_is_id || ps->lock_addr > 0xffffffffu)
			leaked = true;
		if (ps->lock_flags & EMBER_LOCK_F_MUTEX)
			rtnl = ps->lock_name;
		else if (ps->lock_flags & EMBER_LOCK_F_SPIN)
			off = ps->lock_name;
		else if (ps->lock_flags & EMBER_LOCK_F_MMAP_LOCK)
			mm = prof_lock_frame_name(ps, name, sizeof(name));
		else
			heap = ps->lock_name;
	}
	T_CHECK("lock_kernel_address_not_exported", !leaked,
		"a kernel lock's address reached the profile");
	T_CHECK("lock_kind_symbolized", kind && !strcmp(kind, "mutex"),
		"pthread_mutex_lock read as %s", kind ? kind : "(none)");
	T_CHECK("lock_kernel_data_symbol", rtnl && !strcmp(rtnl, "rtnl_mutex") &&
		off && !strcmp(off, "some_table+0x8") && !heap,
		"rtnl %s, offset %s, heap %s", rtnl ? rtnl : "-", off ? off : "-",
		heap ? heap : "(none)");
	T_CHECK("lock_mmap_lock_named", mm && !strcmp(mm, "[lock mmap_lock rwsem-write]"),
		"%s", mm ? mm : "(none)");
	profile_free(p);
	pb_free(pb);
	sym_free(sym);
	proc_table_free(procs);
	unlink(path);
}

static void nop_emit(void *ctx, const struct ember_sample *w,
		     const struct ember_sample *k)
{
	uint64_t *n = ctx;

	(void)w;
	n[k ? 1 : 0]++;
}

/* A million distinct keys each way: the tables stay at their caps. */
static void test_bounds(void)
{
	struct lock_join j;
	uint64_t emitted[2] = { 0 }, most = 0;
	size_t bytes, most_bytes = 0;

	lock_join_init(&j);
	for (uint32_t i = 0; i < 1000000; i++) {
		size_t n;

		lock_join_waker(&j, waker_rec(i, 1000 + i, 2000 + i, 0x900),
				nop_emit, emitted);
		lock_join_wait(&j, lock_rec(i + 2000000, 0x100, 4, 5000 + i,
					    6000 + i, 0x1000, EMBER_LOCK_FUTEX,
					    0, W),
			       nop_emit, emitted);
		n = lock_join_held(&j, &bytes);
		if (n > most)
			most = n;
		if (bytes > most_bytes)
			most_bytes = bytes;
	}
	T_CHECK("lock_pending_bounded", most <= LOCK_JOIN_MAX_WAKERS +
		LOCK_JOIN_MAX_WAITS && most_bytes <= 2 * LOCK_JOIN_MAX_BYTES &&
		j.c.evicted == 1000000 - LOCK_JOIN_MAX_WAKERS &&
		j.c.missing == 1000000 - LOCK_JOIN_MAX_WAITS &&
		emitted[0] == j.c.missing && !emitted[1],
		"held %llu (%zu bytes), evicted %llu, missing %llu",
		(unsigned long long)most, most_bytes,
		(unsigned long long)j.c.evicted, (unsigned long long)j.c.missing);
	lock_join_flush(&j, nop_emit, emitted);
	T_CHECK("lock_flush_empties", lock_join_held(&j, NULL) ==
		LOCK_JOIN_MAX_WAKERS && emitted[0] == 1000000,
		"held %zu emitted %llu", lock_join_held(&j, NULL),
		(unsigned long long)emitted[0]);
	lock_join_release(&j);

	/* the same through the builder: its table bound holds too */
	{
		struct pb_options o = { .max_stacks = 1000 };
		struct profile_builder *pb = pb_new(&o, NULL);
		struct pb_counters c;

		for (uint32_t i = 0; i < 200000; i++)
			pb_add_record(pb, &lock_rec(P, 0x100, 2, 1000, 50000,
						    0x10000 + 8 * i,
						    EMBER_LOCK_FUTEX, 0, 0)->hdr);
		pb_get_counters(pb, &c);
		T_CHECK("lock_distinct_addresses_bounded", c.unique_stacks == 1000 &&
			c.dropped_stacks == 199000, "%zu unique, %llu dropped",
			c.unique_stacks, (unsigned long long)c.dropped_stacks);
		pb_free(pb);
	}
}

/* Hostile values: a waker's huge frame counts, times at both ends. */
static void test_hostile(void)
{
	struct profile_builder *pb = pb_new(NULL, NULL);
	struct ember_sample *s;
	struct profile *p;
	struct pb_counters c;

	s = waker_rec(P, UINT64_MAX, UINT64_MAX, 0x900);
	s->nr_user = 600;	/* more than EMBER_MAX_FRAMES: invalid */
	pb_add_record(pb, &s->hdr);
	s = lock_rec(P, 0x100, 2, UINT64_MAX, 0, UINT64_MAX,
		     255, 0xffff, UINT32_MAX);
	pb_add_record(pb, &s->hdr);
	pb_add_record(pb, &waker_rec(P, UINT64_MAX, 0, 0xffffffffffffff00ull)->hdr);
	pb_add_record(pb, &lock_rec(P, 0x100, 2, 0, UINT64_MAX, 0, 0, 0, 1)->hdr);
	pb_get_counters(pb, &c);
	p = pb_finish(pb, NULL);
	T_CHECK("lock_hostile_values", p && c.bad_records == 1 &&
		p->meta.samples[PROF_EV_LOCK] == 2, "bad %llu, lock %llu",
		(unsigned long long)c.bad_records,
		p ? (unsigned long long)p->meta.samples[PROF_EV_LOCK] : 0ull);
	profile_free(p);
	pb_free(pb);
}

/* The one line on what a backend's lock caps leave out. */
static void test_caps_note(void)
{
	char b[256] = "";
	bool all = session_lock_note(EMBER_CAP_LOCK_FUTEX | EMBER_CAP_LOCK_KERNEL |
				     EMBER_CAP_LOCK_WAITV, "kmod", b, sizeof(b));
	bool old = session_lock_note(EMBER_CAP_LOCK_FUTEX, "kmod", b, sizeof(b));

	T_CHECK("lock_caps_note", !all && old && strstr(b, "5.19") &&
		strstr(b, "futex_waitv") && !strchr(b, '\n'),
		"all caps: %d; 5.10's line: %s", all, b);
	session_lock_note(EMBER_CAP_LOCK_FUTEX | EMBER_CAP_LOCK_WAITV, "bpf", b,
			  sizeof(b));
	T_CHECK("lock_caps_note_kernel", strstr(b, "kernel lock contention") &&
		strstr(b, "bpf") && !strstr(b, "waitv"), "%s", b);
}

int main(void)
{
	test_valid();
	test_caps_note();
	test_join_orders();
	test_waker_cut();
	test_orphans_and_missing();
	test_keys();
	test_kinds();
	test_named();
	test_bounds();
	test_hostile();
	T_EXIT();
}
