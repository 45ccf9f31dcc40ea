// SPDX-License-Identifier: GPL-2.0-only
/*
 * Freezing the profile builder's table into a struct profile (profile.h):
 * each unique address is resolved once (kernel or user, with inlines),
 * the processes that have samples are described, and everything the
 * profile holds lives in one arena freed by profile_free().
 */
#include <errno.h>
#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/alloc_lib.h"
#include "lib/clock.h"
#include "proc/container.h"
#include "aggregate/aggregate_internal.h"
#include "source/source.h"

/* ---- freezing: symbolization into a struct profile -------------------- */

/* a Python frame's label: a 1 KiB name, a 4 KiB file's base name, a line */
#define PY_LABEL_MAX	(1024 * 4 + 1024 + 32)

/* Everything a profile owns, freed at once by profile_free(). */
struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

struct profile_impl {
	struct profile pub;
	struct arena_chunk *chunks;
};

static void *arena_alloc(struct profile_impl *pi, size_t n)
{
	struct arena_chunk *c = pi->chunks;

	n = (n + 15) & ~(size_t)15;
	if (!c || c->size - c->used < n) {
		size_t size = n > 65536 ? n : 65536;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		c->used = 0;
		c->next = pi->chunks;
		pi->chunks = c;
	}
	c->used += n;
	return c->data + c->used - n;
}

static const char *arena_strdup(struct profile_impl *pi, const char *s)
{
	size_t n;
	char *d;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	d = arena_alloc(pi, n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* Resolved frames of one address, cached for the duration of a freeze. */
struct addr_entry {
	struct addr_entry *next;
	uint64_t addr;
	uint64_t word;		/* a Python slot's second word, else 0 */
	uint32_t pid;		/* UINT32_MAX for kernel addresses */
	bool is_return;
	uint32_t nr;
	const struct prof_frame **frames;
};

struct addr_cache {
	struct addr_entry **b;
	size_t n;		/* power of two */
};

static void unresolved_frame(struct sym_frame *f, uint64_t addr, bool kernel)
{
	memset(f, 0, sizeof(*f));
	f->kind = kernel ? SYM_FRAME_KERNEL : SYM_FRAME_UNKNOWN;
	f->address = addr;
}

/* The symbolizer's frame -> the frozen profile's (profile.h). */
static void frame_freeze(struct prof_frame *to, const struct sym_frame *f)
{
	static const enum prof_frame_kind kinds[] = {
		[SYM_FRAME_KERNEL] = PROF_FRAME_KERNEL,
		[SYM_FRAME_NATIVE] = PROF_FRAME_NATIVE,
		[SYM_FRAME_JIT] = PROF_FRAME_JIT,
		[SYM_FRAME_UNKNOWN] = PROF_FRAME_UNKNOWN,
		[SYM_FRAME_PYTHON] = PROF_FRAME_PYTHON,
	};

	*to = (struct prof_frame){
		.kind = (unsigned int)f->kind < sizeof(kinds) / sizeof(kinds[0]) ?
			kinds[f->kind] : PROF_FRAME_UNKNOWN,
		.function = f->function,
		.module = f->module,
		.build_id = f->build_id,
		.source_file = f->source_file,
		.line = f->line,
		.inlined = f->inlined,
		.address = f->address,
		.module_offset = f->module_offset,
		.map_start = f->map_start,
		.map_end = f->map_end,
		.map_pgoff = f->map_pgoff,
	};
}

/* "[python cut]": where a backend's Python walk stopped (EMBER_IP_PY_CUT) */
#define PY_CUT_FRAME	"[python cut]"

static struct addr_entry *resolve_word(struct profile_builder *pb,
				       struct profile_impl *pi,
				       struct addr_cache *ac, uint32_t pid,
				       uint64_t addr, bool is_return,
				       uint64_t word)
{
	uint64_t h = pb_mix64(pb_mix64(pb_mix64(0, addr), word),
			      ((uint64_t)pid << 1) | is_return);
	struct addr_entry *e;
	struct sym_frame tmp[PB_MAX_INLINE];
	struct prof_frame *copy;
	bool kernel = pid == UINT32_MAX;
	uint64_t tag = kernel ? 0 : EMBER_IP_TAG(addr);
	int n = 0;

	for (e = ac->b[h & (ac->n - 1)]; e; e = e->next)
		if (e->addr == addr && e->word == word && e->pid == pid &&
		    e->is_return == is_return)
			return e;

	if (tag == EMBER_IP_TAG(EMBER_IP_PY)) {
		sym_resolve_python(pb->sym, pid, EMBER_IP_VALUE(addr), word, tmp);
		if (!tmp[0].function)
			tmp[0].function = SYM_PY_UNKNOWN;
		n = 1;
	} else if (addr == (EMBER_IP_PY_CUT | EMBER_PY_CUT_NATIVE)) {
		/* native frames missing between two parts: a cut, not Python's */
		memset(tmp, 0, sizeof(tmp[0]));
		tmp[0].kind = SYM_FRAME_UNKNOWN;
		tmp[0].function = PROF_CUT_FRAME;
		n = 1;
	} else if (tag == EMBER_IP_TAG(EMBER_IP_PY_CUT)) {
		memset(tmp, 0, sizeof(tmp[0]));
		tmp[0].kind = SYM_FRAME_PYTHON;
		tmp[0].function = PY_CUT_FRAME;
		n = 1;
	} else if (pb->sym) {
		if (kernel)
			n = sym_resolve_kernel(pb->sym, is_return ? addr - 1 : addr,
					       tmp, PB_MAX_INLINE);
		else
			n = sym_resolve_user(pb->sym, pid, addr, is_return, tmp,
					     PB_MAX_INLINE);
	}
	if (n < 1 || n > PB_MAX_INLINE) {
		unresolved_frame(&tmp[0], addr, kernel);
		n = 1;
	}
	e = arena_alloc(pi, sizeof(*e));
	copy = arena_alloc(pi, n * sizeof(*copy));
	if (!e || !copy)
		return NULL;
	e->frames = arena_alloc(pi, n * sizeof(*e->frames));
	if (!e->frames)
		return NULL;
	for (int i = 0; i < n; i++) {
		frame_freeze(&copy[i], &tmp[i]);
		/* the symbolizer's kind is authoritative, except for a run's origin */
		if (kernel)
			copy[i].kind = PROF_FRAME_KERNEL;
		e->frames[i] = &copy[i];
	}
	e->addr = addr;
	e->word = word;
	e->pid = pid;
	e->is_return = is_return;
	e->nr = n;
	e->next = ac->b[h & (ac->n - 1)];
	ac->b[h & (ac->n - 1)] = e;
	return e;
}

static struct addr_entry *resolve(struct profile_builder *pb,
				  struct profile_impl *pi,
				  struct addr_cache *ac, uint32_t pid,
				  uint64_t addr, bool is_return)
{
	return resolve_word(pb, pi, ac, pid, addr, is_return, 0);
}

/* The second slot of a Python frame: it resolves to no frame. */
static struct addr_entry no_frames;

/*
 * The frames of user slot ips[i] (of n): a Python slot takes the slot
 * after it too, whose entry (*second) is then no_frames.
 */
static struct addr_entry *resolve_user(struct profile_builder *pb,
				       struct profile_impl *pi,
				       struct addr_cache *ac, uint32_t pid,
				       const uint64_t *ips, size_t i, size_t n,
				       bool is_return, bool *second)
{
	*second = EMBER_IP_TAG(ips[i]) == EMBER_IP_TAG(EMBER_IP_PY) && i + 1 < n;
	return resolve_word(pb, pi, ac, pid, ips[i], *second ? false : is_return,
			    *second ? ips[i + 1] : 0);
}

/* container.id from the cgroup path (container.c knows the runtimes). */
static const char *container_id_of(struct profile_impl *pi, const char *path)
{
	char id[CONTAINER_ID_LEN + 1];

	if (!path || !container_id_from_cgroup(path, id, sizeof(id)))
		return NULL;
	return arena_strdup(pi, id);
}

struct procs_out {
	struct profile_impl *pi;
	struct prof_process *procs;
	size_t n, max;
};

static int add_process(const struct proc_info *p, void *ctx)
{
	struct procs_out *o = ctx;
	struct prof_process *pp;

	if (o->n == o->max)
		return 0;	/* the table only grows under another thread */
	pp = &o->procs[o->n++];
	memset(pp, 0, sizeof(*pp));
	pp->pid = p->pid;
	pp->comm = arena_strdup(o->pi, p->comm);
	pp->exe_path = arena_strdup(o->pi, p->exe_path);
	pp->cgroup_id = p->cgroup_id;
	pp->cgroup_path = arena_strdup(o->pi, p->cgroup_path);
	pp->container_id = p->container_id ?
			   arena_strdup(o->pi, p->container_id) :
			   container_id_of(o->pi, p->cgroup_path);
	return 0;
}

/* The processes sampled in this interval, from the process model. */
static int build_processes(struct profile_builder *pb, struct profile_impl *pi,
			   struct prof_process **out)
{
	struct proc_table_stats st;
	struct procs_out o = { .pi = pi };

	proc_table_get_stats(pb->procs, &st);
	o.max = st.procs;
	o.procs = arena_alloc(pi, (o.max + 1) * sizeof(*o.procs));
	if (!o.procs)
		return -ENOMEM;
	proc_table_visit(pb->procs, proc_table_generation(pb->procs),
			 add_process, &o);
	pi->pub.processes = o.procs;
	pi->pub.nr_processes = o.n;
	*out = o.procs;
	return 0;
}

static struct prof_process *find_process(struct prof_process *procs, size_t n,
					 uint32_t pid)
{
	/* build_processes emits in bucket order; a linear scan per unique
	 * stack would be quadratic, so callers go through this bsearch on a
	 * pid-sorted array. */
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (procs[mid].pid == pid)
			return &procs[mid];
		if (procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct prof_process *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The root of a stack the unwinder could not finish. */
const struct prof_frame prof_cut_frame = {
	.kind = PROF_FRAME_UNKNOWN,
	.function = PROF_CUT_FRAME,
};

/*
 * Where a user stack legitimately ends: the entry of the main thread, of
 * a thread, of the dynamic loader run as a program, and of the runtimes
 * that do their own (Go). A stack whose root is one of them is whole.
 */
static const char *const outermost_functions[] = {
	"_start", "__libc_start_main", "__libc_start_main_impl",
	"__libc_start_call_main", "_dl_start", "_dl_start_user",
	"clone", "__clone", "__GI___clone", "clone3", "__clone3",
	"__GI___clone3", "__clone_internal", "start_thread", "thread_start",
	"_start_c", "start_c",				/* musl */
	"runtime.goexit", "runtime.rt0_go", "runtime.mstart",
	"runtime.mstart0", "runtime.goexit.abi0", "runtime.rt0_go.abi0",
};

static bool frame_is_outermost(const struct prof_frame *f)
{
	if (!f->function)
		return false;
	for (size_t i = 0; i < sizeof(outermost_functions) /
			       sizeof(outermost_functions[0]); i++)
		if (!strcmp(f->function, outermost_functions[i]))
			return true;
	return false;
}

/* A user frame that no mapping of the process holds. */
static bool frame_unmapped(const struct prof_frame *f)
{
	return f->kind == PROF_FRAME_UNKNOWN && !f->map_end;
}

/*
 * Whether the user frames [first, *nr) are a whole stack. A return
 * address outside every mapping of a process whose leaf was mapped is
 * data a frame-pointer walk took for a frame: the stack ends before it
 * (*nr shrinks). A stack the unwinder proved complete is whole; any
 * other is whole only when its root is an outermost function.
 */
static bool user_stack_whole(const struct agg_entry *e,
			     const struct prof_frame **frames, size_t first,
			     size_t *nr)
{
	if (first >= *nr)
		return false;	/* a user task without a user stack */
	if (!frame_unmapped(frames[first])) {
		for (size_t i = first + 1; i < *nr; i++) {
			if (frame_unmapped(frames[i])) {
				*nr = i;
				return false;
			}
		}
	}
	return e->user_complete || frame_is_outermost(frames[*nr - 1]);
}

/*
 * Kernel frames of the tracing machinery at the leaf of a stack taken in
 * a tracepoint by an eBPF program (bpf_get_stack() starts inside it): the
 * program, bpf_trace_runN, __bpf_trace_X, __traceiter_X. They are ember's
 * own, never the profiled code's: the stack starts below them.
 */
static bool is_tracing_frame(const struct prof_frame *f)
{
	static const char *const prefixes[] = {
		"bpf_prog_", "bpf_trace_run", "__bpf_trace_", "__traceiter_",
	};

	if (f->kind != PROF_FRAME_KERNEL || !f->function)
		return false;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(f->function, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

static size_t tracing_frames(const struct prof_frame **frames, size_t nr)
{
	size_t n = 0;

	while (n < nr && is_tracing_frame(frames[n]))
		n++;
	return n < nr ? n : 0;
}

/*
 * Frames of the allocation sampler itself (preload/ember_alloc.c) at the
 * leaf of an allocation stack: all but the outermost, the malloc-family
 * function the program called, which stays as the leaf.
 */
static size_t sampler_frames(const struct prof_frame **frames, size_t nr)
{
	size_t n = 0;

	while (n < nr && frames[n]->module) {
		const char *base = strrchr(frames[n]->module, '/');

		if (strcmp(base ? base + 1 : frames[n]->module,
			   EMBER_ALLOC_LIB_NAME))
			break;
		n++;
	}
	return n > 1 ? n - 1 : 0;
}

/* ---- -e lock: the lock's frame, its kind, the waker's frames ---------- */

/*
 * Synthetic frames ("[lock ...]", "[waker COMM]"), one per name in a
 * profile: writers that key locations by frame pointer (pprof, OTLP) then
 * share them across samples.
 */
struct name_frame {
	struct name_frame *next;
	struct prof_frame f;
	char name[];
};

struct name_frames {
	struct name_frame *b[1024];
};

static const struct prof_frame *name_frame(struct profile_impl *pi,
					   struct name_frames *nf,
					   const char *name)
{
	size_t len = strlen(name);
	uint64_t h = 0;
	struct name_frame *e;

	for (size_t i = 0; i < len; i++)
		h = pb_mix64(h, (unsigned char)name[i]);
	for (e = nf->b[h % 1024]; e; e = e->next)
		if (!strcmp(e->name, name))
			return &e->f;
	e = arena_alloc(pi, sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	memcpy(e->name, name, len + 1);
	e->f = (struct prof_frame){ .kind = PROF_FRAME_UNKNOWN,
				    .function = e->name };
	e->next = nf->b[h % 1024];
	nf->b[h % 1024] = e;
	return &e->f;
}

/*
 * What a futex wait was, from the functions of the waiter's user stack
 * (leaf first; the first that tells wins): glibc's names, with their
 * internal "__"/"___" and version suffixes.
 */
static const char *futex_kind_of(const char *fn)
{
	static const struct { const char *prefix, *kind; } kinds[] = {
		{ "pthread_mutex_lock", "mutex" },
		{ "pthread_mutex_timedlock", "mutex" },
		{ "pthread_mutex_clocklock", "mutex" },
		{ "pthread_mutex_cond_lock", "mutex" },
		{ "pthread_rwlock_", "rwlock" },
		{ "pthread_cond_", "condvar" },
		{ "sem_wait", "semaphore" },
		{ "sem_timedwait", "semaphore" },
		{ "sem_clockwait", "semaphore" },
		{ "new_sem_wait", "semaphore" },
		{ "pthread_barrier_wait", "barrier" },
		{ "pthread_join", "join" },
		{ "pthread_clockjoin", "join" },
		{ "pthread_timedjoin", "join" },
	};

	/* glibc's internal aliases: __GI___pthread_cond_wait */
	while (*fn == '_')
		fn++;
	if (!strncmp(fn, "GI_", 3))
		fn += 3;
	while (*fn == '_')
		fn++;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(fn, kinds[i].prefix, strlen(kinds[i].prefix)))
			return kinds[i].kind;
	return NULL;
}

/*
 * PREEMPT_RT kernels (LCB_F_RT): rw_semaphore and rwlock_t both wait in
 * rwbase_rt with the same flags (RT|READ, RT|WRITE) and cannot be told
 * apart, except the mmap_lock, known to be an rwsem; spinlock_t waits as
 * an rtlock (RT|SPIN); mutex and rt_mutex in the rtmutex (RT).
 */
static const char *rt_lock_kind(uint16_t flags)
{
	int rd = flags & EMBER_LOCK_F_READ;

	if (flags & (EMBER_LOCK_F_READ | EMBER_LOCK_F_WRITE)) {
		if (flags & EMBER_LOCK_F_MMAP_LOCK)
			return rd ? "rwsem-read" : "rwsem-write";
		return rd ? "rt-rw-read" : "rt-rw-write";
	}
	if (flags & EMBER_LOCK_F_SPIN)
		return "rt-spinlock";
	return "rtmutex";
}

const char *prof_lock_kind(uint8_t kind, uint16_t flags,
			   const struct prof_frame *const *frames, size_t nr)
{
	if (kind == EMBER_LOCK_KERNEL) {
		/* LCB_F_*: a mutex may spin first; rw spinlocks are rwlock_t */
		if (flags & EMBER_LOCK_F_PERCPU)
			return "percpu-rwsem";
		if (flags & EMBER_LOCK_F_RT)
			return rt_lock_kind(flags);
		if (flags & EMBER_LOCK_F_MUTEX)
			return "mutex";
		if (flags & EMBER_LOCK_F_SPIN)
			return flags & EMBER_LOCK_F_READ ? "rwlock-read" :
			       flags & EMBER_LOCK_F_WRITE ? "rwlock-write" :
			       "spinlock";
		if (flags & EMBER_LOCK_F_READ)
			return "rwsem-read";
		if (flags & EMBER_LOCK_F_WRITE)
			return "rwsem-write";
		return "kernel-lock";
	}
	if (kind == EMBER_LOCK_FUTEX_PI)
		return "pi-mutex";
	if (kind == EMBER_LOCK_FUTEX_WAITV)
		return "waitv";
	for (size_t i = 0; i < nr; i++) {
		const char *k;

		if (!frames[i] || frames[i]->kind == PROF_FRAME_KERNEL ||
		    !frames[i]->function)
			continue;
		k = futex_kind_of(frames[i]->function);
		if (k)
			return k;
	}
	return "futex";
}

/*
 * A kernel lock's id in outputs: 32 bits of a hash of its address keyed
 * by a random value of this run, so one lock keeps one id in a profile
 * and across ember run's intervals, and the address (KASLR) stays in.
 */
static uint64_t kernel_lock_key;

static void kernel_lock_key_init(void)
{
	if (getrandom(&kernel_lock_key, sizeof(kernel_lock_key), 0) !=
	    sizeof(kernel_lock_key))
		kernel_lock_key = mono_ns() ^ ((uint64_t)getpid() << 32);
}

static uint64_t kernel_lock_id(uint64_t addr)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, kernel_lock_key_init);
	return pb_mix64(kernel_lock_key, addr) & 0xffffffffu;
}

/* A kernel lock's name: mmap_lock, or the static lock's data symbol. */
static const char *lock_name(struct profile_builder *pb,
			     struct profile_impl *pi, const struct agg_entry *e)
{
	char buf[256];
	const char *sym;
	uint64_t off = 0;

	if (e->lock_kind != EMBER_LOCK_KERNEL)
		return NULL;
	if (e->lock_flags & EMBER_LOCK_F_MMAP_LOCK)
		return "mmap_lock";
	sym = pb->sym ? sym_kernel_data_symbol(pb->sym, e->lock_addr, &off) :
	      NULL;
	if (!sym)
		return NULL;
	if (!off)
		return sym;
	snprintf(buf, sizeof(buf), "%s+0x%llx", sym, (unsigned long long)off);
	return arena_strdup(pi, buf);
}

/*
 * Whether the waker's user stack is short of its root, by the rules of
 * user_stack_whole(): its [cut] goes between "[waker COMM]" and its root.
 */
static bool waker_cut(const struct agg_entry *e,
		      const struct prof_frame **wk, size_t nr_wk)
{
	size_t user = 0;

	for (size_t i = 0; i < nr_wk; i++)
		if (wk[i]->kind != PROF_FRAME_KERNEL)
			user = i + 1;
	if (user && frame_is_outermost(wk[user - 1]))
		return false;
	if (e->wk_flags & EMBER_SF_USER_CUT)
		return true;
	if (!e->wk_pid || (e->wk_flags & (EMBER_SF_KTHREAD | EMBER_SF_IDLE)))
		return false;
	return !e->wk_nr_user || !user ||
	       !(e->wk_flags & EMBER_SF_USER_COMPLETE);
}

/*
 * frames[] of a lock wait: the waker's "[waker COMM]" and its frames
 * root first (copies: an inlined flag would now point the wrong way),
 * the lock's frame, then the waiter's (wait[0..nr_wait), leaf first).
 */
static int lock_frames(struct profile_builder *pb, struct profile_impl *pi,
		       struct addr_cache *ac, struct name_frames *nf,
		       const struct agg_entry *e, struct prof_sample *ps,
		       const struct prof_frame **wait, size_t nr_wait,
		       const struct prof_frame ***out, size_t *nr_out)
{
	const struct prof_frame **wk = NULL, **frames;
	size_t wk_nips = (size_t)e->wk_nr_kernel + e->wk_nr_user, nr_wk = 0;
	size_t wk_skip;
	const uint64_t *ips = e->ips + e->nr_kernel + e->nr_user;
	char name[PROF_GROUP_NAME_MAX];
	struct addr_entry *ae;
	size_t n = 0;

	ps->lock_addr = e->lock_addr;
	if (e->lock_kind == EMBER_LOCK_KERNEL) {
		ps->lock_addr = kernel_lock_id(e->lock_addr);
		ps->lock_addr_is_id = true;
	}
	ps->lock_flags = e->lock_flags;
	ps->lock_kind = prof_lock_kind(e->lock_kind, e->lock_flags,
				       (const struct prof_frame *const *)wait,
				       nr_wait);
	ps->lock_name = lock_name(pb, pi, e);
	ps->lock_waker = e->has_waker;
	for (size_t i = 0; e->has_waker && i < wk_nips; i++) {
		bool second = false;

		/* resolve() caches: the second pass below costs a lookup */
		if (i < e->wk_nr_kernel)
			ae = resolve(pb, pi, ac, UINT32_MAX, ips[i], i > 0);
		else
			ae = resolve_user(pb, pi, ac, e->wk_pid, ips, i, wk_nips,
					  i > e->wk_nr_kernel, &second);
		if (!ae)
			return -ENOMEM;
		nr_wk += ae->nr;
		i += second;
	}
	if (e->has_waker) {
		wk = arena_alloc(pi, (nr_wk + 1) * sizeof(*wk));
		if (!wk)
			return -ENOMEM;
		nr_wk = 0;
		for (size_t i = 0; i < wk_nips; i++) {
			bool kernel = i < e->wk_nr_kernel, second = false;
			bool is_ret = kernel ? i > 0 : i > e->wk_nr_kernel;

			if (kernel)
				ae = resolve(pb, pi, ac, UINT32_MAX, ips[i], is_ret);
			else
				ae = resolve_user(pb, pi, ac, e->wk_pid, ips, i,
						  wk_nips, is_ret, &second);
			if (!ae)
				return -ENOMEM;
			i += second;
			for (uint32_t j = 0; j < ae->nr; j++) {
				struct prof_frame *c = arena_alloc(pi, sizeof(*c));

				if (!c)
					return -ENOMEM;
				*c = *ae->frames[j];
				c->inlined = false;
				wk[nr_wk++] = c;
			}
		}
	}
	frames = arena_alloc(pi, (nr_wk + nr_wait + 4) * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	if (e->has_waker) {
		snprintf(name, sizeof(name), "[waker %s]",
			 e->wk_comm[0] ? e->wk_comm : "?");
		if (!(frames[n++] = name_frame(pi, nf, name)))
			return -ENOMEM;
		if (waker_cut(e, wk, nr_wk))
			frames[n++] = &prof_cut_frame;
		wk_skip = tracing_frames(wk, nr_wk);
		for (size_t i = nr_wk; i-- > wk_skip;)
			frames[n++] = wk[i];
	}
	if (!(frames[n++] = name_frame(pi, nf, prof_lock_frame_name(ps, name,
								     sizeof(name)))))
		return -ENOMEM;
	memcpy(frames + n, wait, nr_wait * sizeof(*frames));
	*out = frames;
	*nr_out = n + nr_wait;
	return 0;
}

/* Fill one prof_sample from an aggregated entry. */
static int freeze_entry(struct profile_builder *pb, struct profile_impl *pi,
			struct addr_cache *ac, struct name_frames *nf,
			const struct agg_entry *e,
			struct prof_sample *ps, struct prof_process *procs,
			size_t nr_procs, uint64_t mono_to_real)
{
	const struct prof_frame **frames;
	struct addr_entry *ae[EMBER_MAX_FRAMES * 2];
	size_t nips = (size_t)e->nr_kernel + e->nr_user, nr = 0, user = 0;

	for (size_t i = 0; i < nips; i++) {
		bool kernel = i < e->nr_kernel, second = false;
		/* the first address of each run is an exact IP, the rest
		 * return addresses */
		bool is_ret = kernel ? i > 0 : i > e->nr_kernel;

		if (kernel)
			ae[i] = resolve(pb, pi, ac, UINT32_MAX, e->ips[i], is_ret);
		else
			ae[i] = resolve_user(pb, pi, ac, e->pid, e->ips, i, nips,
					     is_ret, &second);
		if (!ae[i])
			return -ENOMEM;
		nr += ae[i]->nr;
		if (second)
			ae[++i] = &no_frames;
	}
	frames = arena_alloc(pi, (nr + 1) * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	nr = 0;
	for (size_t i = 0; i < nips; i++) {
		if (i == e->nr_kernel)
			user = nr;
		for (uint32_t j = 0; j < ae[i]->nr; j++)
			frames[nr++] = ae[i]->frames[j];
	}
	if (!e->nr_user)
		user = nr;
	if (e->user_cut && nr > user && frame_is_outermost(frames[nr - 1])) {
		/* the walk went wrong past the thread's entry: the stack is
		 * whole (a Go M's mstart under runtime.clone's frame) */
		if (e->event != PROF_EV_INUSE)
			pi->pub.meta.cut_user_stacks -= e->records;
	} else if (e->user_cut) {
		frames[nr++] = &prof_cut_frame;
	} else if (e->user_expected && !user_stack_whole(e, frames, user, &nr)) {
		/* a short stack shown as whole would be a wrong answer */
		frames[nr++] = &prof_cut_frame;
		if (e->event != PROF_EV_INUSE) {
			pi->pub.meta.cut_user_stacks += e->records;
			pi->pub.meta.unproven_user_stacks += e->records;
		}
	}
	if (e->event == PROF_EV_ALLOC || e->event == PROF_EV_INUSE) {
		size_t skip = sampler_frames(frames, nr);

		frames += skip;
		nr -= skip;
	}
	{
		size_t skip = tracing_frames(frames, nr);

		frames += skip;
		nr -= skip;
	}

	memset(ps, 0, sizeof(*ps));
	if (e->event == PROF_EV_LOCK &&
	    lock_frames(pb, pi, ac, nf, e, ps, frames, nr, &frames, &nr))
		return -ENOMEM;
	ps->process = find_process(procs, nr_procs, e->pid);
	ps->tid = e->tid;
	ps->thread_name = arena_strdup(pi, e->comm);
	ps->event = e->event;
	ps->offcpu_state = e->state;
	ps->nr_frames = nr;
	ps->frames = (const struct prof_frame *const *)frames;
	ps->count = e->count;
	ps->weight_ns = e->weight_ns;
	if (e->nr_timestamps) {
		uint64_t *ts = arena_alloc(pi, e->nr_timestamps * 8);

		if (!ts)
			return -ENOMEM;
		for (uint32_t i = 0; i < e->nr_timestamps; i++)
			ts[i] = e->timestamps[i] + mono_to_real;
		ps->timestamps_ns = ts;
		ps->nr_timestamps = e->nr_timestamps;
	}
	return 0;
}

/* Fill in the executable's build-id from a resolved frame of that file. */
static void exe_build_ids(struct prof_sample *samples, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct prof_process *p = (struct prof_process *)samples[i].process;

		if (!p || p->exe_build_id || !p->exe_path)
			continue;
		for (uint32_t j = 0; j < samples[i].nr_frames; j++) {
			const struct prof_frame *f = samples[i].frames[j];

			if (f->build_id && f->module &&
			    !strcmp(f->module, p->exe_path)) {
				p->exe_build_id = f->build_id;
				break;
			}
		}
	}
}

struct profile *pb_finish(struct profile_builder *pb,
			  const struct prof_meta *meta)
{
	struct profile_impl *pi = calloc(1, sizeof(*pi));
	struct addr_cache ac = { 0 };
	struct name_frames *nf = calloc(1, sizeof(*nf));
	struct prof_process *procs = NULL;
	struct prof_sample *samples;
	uint64_t mono_to_real;
	size_t n = 0;

	if (!pi || !nf) {
		free(pi);
		free(nf);
		return NULL;
	}
	/* a flush point: waits still waiting for their waker go in now */
	pb_flush_locks(pb);
	if (meta)
		pi->pub.meta = *meta;
	for (int i = 0; i < PROF_EV__COUNT; i++)
		pi->pub.meta.samples[i] += pb->c.samples[i];
	pi->pub.meta.lost += pb->c.lost;
	pi->pub.meta.bad_records += pb->c.bad_records;
	pi->pub.meta.dropped_stacks += pb->c.dropped_stacks;
	pi->pub.meta.cut_user_stacks += pb->c.cut_user_stacks;
	pi->pub.meta.late_samples += pb->c.late_samples;
	pi->pub.meta.late_periods += pb->c.late_periods;
	pi->pub.meta.late_applied = pb->opt.late_periods_are_cpu;
	pi->pub.meta.lock_wakers_joined += pb->locks.c.joined;
	pi->pub.meta.lock_waker_missing += pb->locks.c.missing;
	pi->pub.meta.lock_waker_orphans += pb->locks.c.orphans;
	pi->pub.meta.lock_waker_evicted += pb->locks.c.evicted;
	pi->pub.meta.host_name = arena_strdup(pi, pi->pub.meta.host_name);
	pi->pub.meta.backend = arena_strdup(pi, pi->pub.meta.backend);

	if (build_processes(pb, pi, &procs))
		goto fail;
	qsort(procs, pi->pub.nr_processes, sizeof(*procs), cmp_proc);

	ac.n = 4096;
	while (ac.n < pb->nr_entries * 4)
		ac.n *= 2;
	ac.b = calloc(ac.n, sizeof(*ac.b));
	samples = arena_alloc(pi, (pb->nr_entries + 1) * sizeof(*samples));
	if (!ac.b || !samples)
		goto fail;

	mono_to_real = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	for (size_t i = 0; i < pb->nr_buckets; i++)
		for (struct agg_entry *e = pb->buckets[i]; e; e = e->next) {
			/* every block of it was freed: nothing in use */
			if (e->event == PROF_EV_INUSE && !e->nr_live)
				continue;
			if (freeze_entry(pb, pi, &ac, nf, e, &samples[n++], procs,
					 pi->pub.nr_processes, mono_to_real))
				goto fail;
		}
	pi->pub.meta.inuse_untracked += pb->c.inuse_untracked;
	pi->pub.samples = samples;
	pi->pub.nr_samples = n;
	exe_build_ids(samples, n);
	free(ac.b);
	free(nf);
	return &pi->pub;
fail:
	free(ac.b);
	free(nf);
	profile_free(&pi->pub);
	return NULL;
}

void profile_free(struct profile *p)
{
	struct profile_impl *pi = (struct profile_impl *)p;
	struct arena_chunk *c, *next;

	if (!p)
		return;
	for (c = pi->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(pi);
}

/* ---- labels ----------------------------------------------------------- */

/*
 * Function name when resolved; otherwise "file+0xoffset" (basename of the
 * mapped file) or the raw "0xaddress". Unresolved labels are formatted
 * into a small ring of thread-local buffers: copy the string before the
 * 16th next call.
 */
/* "qualname (file.py:line)": names are bounded (agent/python/python.h) */
static const char *python_label(const struct prof_frame *f)
{
	static __thread char bufs[4][PY_LABEL_MAX];
	static __thread unsigned int next;
	const char *base = strrchr(f->source_file, '/');
	char *buf = bufs[next++ % 4];

	base = base ? base + 1 : f->source_file;
	if (f->line)
		snprintf(buf, PY_LABEL_MAX, "%s (%s:%u)", f->function, base, f->line);
	else
		snprintf(buf, PY_LABEL_MAX, "%s (%s)", f->function, base);
	return buf;
}

const char *prof_frame_label(const struct profile *p, const struct prof_frame *f)
{
	static __thread char bufs[16][128];
	static __thread unsigned int next;
	char *buf;

	(void)p;
	if (f->kind == PROF_FRAME_PYTHON && f->function && f->source_file)
		return python_label(f);
	if (f->function && f->function[0])
		return f->function;
	buf = bufs[next++ % 16];
	if (f->module && f->module[0]) {
		const char *base = strrchr(f->module, '/');

		snprintf(buf, sizeof(bufs[0]), "%s+0x%llx",
			 base ? base + 1 : f->module,
			 (unsigned long long)f->module_offset);
	} else {
		snprintf(buf, sizeof(bufs[0]), "0x%llx",
			 (unsigned long long)f->address);
	}
	return buf;
}
