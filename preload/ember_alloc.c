// SPDX-License-Identifier: GPL-2.0-only OR MIT
/*
 * libember-alloc.so: sampled allocation profiling without a trap per call.
 *
 * Loaded with LD_PRELOAD into a program ember starts (`ember record -e
 * alloc -- CMD`) or a service that opts in, it wraps the malloc family and
 * C++'s operator new and delete, and decides in-process which calls to
 * sample, the way tcmalloc and Go do: a per-thread byte countdown with
 * exponentially distributed (Poisson) spacing, EMBER_ALLOC_RATE bytes on
 * average (default 512 KiB). An unsampled call costs a subtraction and a
 * branch. A sampled call calls ember_alloc_probe() with the bytes it
 * stands for, so totals stay unbiased; ember puts a uprobe there (with
 * ember_alloc_semaphore as its reference counter, so the kernel sets it
 * while a probe is attached) and records the stack. When nobody is
 * attached the semaphore is 0 and even a sampled call only draws its next
 * distance.
 *
 * Frees of sampled blocks are found in a fixed table of sampled addresses
 * (no allocation of ours, ever) and reported through ember_free_probe(),
 * which gives in-use bytes per stack; a full table is counted in
 * ember_alloc_table_full, never a hang or an allocation.
 *
 * Safe anywhere: no locks, no allocation of its own, fork- and
 * thread-safe (thread-local countdowns, atomic table slots). It wraps
 * whichever allocator comes next in the lookup order (jemalloc or tcmalloc
 * preloaded after it, else glibc), found once with dlsym(RTLD_NEXT): a
 * block must go back to the allocator that made it.
 */
#define _GNU_SOURCE	/* RTLD_NEXT */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT		__attribute__((visibility("default")))
#define LIKELY(x)	__builtin_expect(!!(x), 1)
#define UNLIKELY(x)	__builtin_expect(!!(x), 0)
#define TLS		__thread __attribute__((tls_model("initial-exec")))

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

#define DEFAULT_RATE	(512 * 1024)
#define TABLE_SLOTS	(1U << 16)	/* sampled blocks tracked for frees */
#define TABLE_PROBES	8

/*
 * The probe points: ember attaches uprobes to these two functions (the
 * arguments are in rdi, rsi, rdx by the ABI). noinline + an empty asm keep
 * them real calls.
 */
EXPORT __attribute__((noinline, used)) void
ember_alloc_probe(void *ptr, size_t size, size_t weight)
{
	__asm__ volatile("" : : "r"(ptr), "r"(size), "r"(weight) : "memory");
}

EXPORT __attribute__((noinline, used)) void ember_free_probe(void *ptr)
{
	__asm__ volatile("" : : "r"(ptr) : "memory");
}

/*
 * Raised by the kernel while a uprobe with this reference counter is on.
 * In a section of its own (like sys/sdt.h's semaphores), not .bss: the
 * kernel finds the counter through the file mapping at its file offset,
 * and .bss has none.
 */
EXPORT volatile unsigned short ember_alloc_semaphore
	__attribute__((section(".probes")));
EXPORT unsigned long ember_alloc_table_full;	/* frees we cannot follow */

static uintptr_t sampled[TABLE_SLOTS];
/*
 * How many tracked blocks hash to each slot (they sit within the next
 * TABLE_PROBES slots): a free looks at one byte of this 64 KiB array, and
 * scans the slots only when it is not zero.
 */
static unsigned char starts_here[TABLE_SLOTS];
static double rate = DEFAULT_RATE;
static int rate_read;

static TLS int64_t countdown;
static TLS uint64_t rng;

/* ---- the allocator we wrap ---------------------------------------------- */

struct next_allocator {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*memalign)(size_t, size_t);
};

/* glibc's own entry points: the allocator when nothing else follows us */
static const struct next_allocator libc_allocator = {
	__libc_malloc, __libc_free, __libc_calloc, __libc_realloc,
	__libc_memalign,
};
static struct next_allocator found;
static const struct next_allocator *next_alloc;	/* set once resolved */
static TLS int resolving;

#define STORE(field, v)	__atomic_store_n(&found.field, (v), __ATOMIC_RELAXED)

/*
 * The next definitions after ours, all five or none: mixing two
 * allocators would free blocks into the wrong one. dlsym does not
 * allocate when it succeeds; should it call us anyway, that nested call
 * is served by glibc (resolving), as glibc's memusage does. Threads
 * racing here store the same values, atomically, before publishing them.
 */
static __attribute__((noinline)) const struct next_allocator *resolve(void)
{
	struct next_allocator n;

	if (resolving)
		return &libc_allocator;
	resolving = 1;
	n.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	n.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	n.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	n.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	n.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
	resolving = 0;
	if (!n.malloc || !n.free || !n.calloc || !n.realloc || !n.memalign)
		n = libc_allocator;
	STORE(malloc, n.malloc);
	STORE(free, n.free);
	STORE(calloc, n.calloc);
	STORE(realloc, n.realloc);
	STORE(memalign, n.memalign);
	__atomic_store_n(&next_alloc, &found, __ATOMIC_RELEASE);
	return &found;
}

static inline const struct next_allocator *next(void)
{
	const struct next_allocator *n =
		__atomic_load_n(&next_alloc, __ATOMIC_ACQUIRE);

	return LIKELY(n != NULL) ? n : resolve();
}

/* A cycle counter for the seed: x86's TSC, arm64's virtual counter. */
static inline uint64_t seed_clock(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}

static double next_uniform(void)
{
	/* xorshift64*, seeded per thread from its stack address and time */
	if (UNLIKELY(!rng)) {
		rng = (uintptr_t)&rng ^ ((uint64_t)getpid() << 32) ^
		      seed_clock();
		rng |= 1;
	}
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return ((rng * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
}

static void read_rate(void)
{
	const char *s = getenv("EMBER_ALLOC_RATE");	/* no allocation */
	char *end;
	unsigned long v;

	rate_read = 1;
	if (!s || !*s)
		return;
	v = strtoul(s, &end, 10);
	if (*end == '\0' && v >= 1 && v <= (1UL << 40))
		rate = (double)v;
}

/* Distance to the next sample: exponential with mean rate. */
static int64_t next_distance(void)
{
	double u = next_uniform();

	if (UNLIKELY(!rate_read))
		read_rate();
	if (u <= 0)
		u = 1e-12;
	return (int64_t)(-log(u) * rate) + 1;
}

static size_t slot_of(uintptr_t p)
{
	return (size_t)((p >> 4) * 0x9e3779b97f4a7c15ULL >> 48) & (TABLE_SLOTS - 1);
}

static void remember(void *p)
{
	size_t i = slot_of((uintptr_t)p);

	for (int k = 0; k < TABLE_PROBES; k++, i = (i + 1) & (TABLE_SLOTS - 1)) {
		uintptr_t zero = 0;

		if (__atomic_compare_exchange_n(&sampled[i], &zero, (uintptr_t)p,
						0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			__atomic_fetch_add(&starts_here[slot_of((uintptr_t)p)], 1,
					   __ATOMIC_RELAXED);
			return;
		}
	}
	__atomic_fetch_add(&ember_alloc_table_full, 1, __ATOMIC_RELAXED);
}

/* Was p sampled? Then forget it and report the free. */
static void forget(void *p)
{
	size_t i = slot_of((uintptr_t)p);

	for (int k = 0; k < TABLE_PROBES; k++, i = (i + 1) & (TABLE_SLOTS - 1)) {
		uintptr_t v = __atomic_load_n(&sampled[i], __ATOMIC_RELAXED);

		if (v == (uintptr_t)p) {
			if (__atomic_compare_exchange_n(&sampled[i], &v, 0, 0,
							__ATOMIC_RELAXED,
							__ATOMIC_RELAXED)) {
				__atomic_fetch_sub(&starts_here[slot_of((uintptr_t)p)],
						   1, __ATOMIC_RELAXED);
				ember_free_probe(p);
			}
			return;
		}
	}
}

/*
 * The countdown crossed zero inside this allocation of size bytes. With
 * sample points spaced exponentially, an allocation of size n holds one
 * with probability 1 - exp(-n / rate); weighting the sample by n divided
 * by that probability keeps the expected total equal to the bytes
 * allocated, whatever the size mix.
 */
static __attribute__((noinline)) void sample(void *p, size_t size)
{
	double prob, w;

	countdown = next_distance();
	if (!p || !ember_alloc_semaphore)
		return;
	prob = -expm1(-(double)size / rate);
	w = prob > 0 ? (double)size / prob : rate;
	remember(p);
	ember_alloc_probe(p, size, (size_t)w);
}

static inline void account(void *p, size_t size)
{
	countdown -= (int64_t)size;
	if (UNLIKELY(countdown <= 0))
		sample(p, size);
}

static inline void check_free(void *p)
{
	/* the common case: no tracked block hashes here */
	if (p && UNLIKELY(__atomic_load_n(&starts_here[slot_of((uintptr_t)p)],
					  __ATOMIC_RELAXED) != 0))
		forget(p);
}

EXPORT void *malloc(size_t size)
{
	void *p = next()->malloc(size);

	account(p, size);
	return p;
}

EXPORT void free(void *p)
{
	check_free(p);
	next()->free(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	void *p = next()->calloc(n, size);

	if (p)
		account(p, n * size);	/* no overflow: calloc succeeded */
	return p;
}

EXPORT void *realloc(void *old, size_t size)
{
	void *p;

	/* a moved or freed block is a free of the old sample */
	check_free(old);
	p = next()->realloc(old, size);
	if (p)
		account(p, size);
	return p;
}

EXPORT void *memalign(size_t align, size_t size)
{
	void *p = next()->memalign(align, size);

	account(p, size);
	return p;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
	return memalign(align, size);
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	p = next()->memalign(align, size);
	if (!p)
		return ENOMEM;
	account(p, size);
	*out = p;
	return 0;
}

EXPORT void *valloc(size_t size)
{
	return memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

/* ---- C++'s operator new and delete -------------------------------------- */

/*
 * jemalloc and tcmalloc define operator new and delete themselves, not
 * through malloc and free, so a C++ program's blocks under them would pass
 * the wrappers above by: the sampler defines them too (by their mangled
 * names; no C++ runtime of ours) and forwards each to the next definition,
 * found once with dlsym(RTLD_NEXT), only observing the result, so the
 * next new keeps its semantics (new_handler loop, std::bad_alloc). Under
 * glibc that next new is libstdc++'s, which calls malloc, ours: sampled
 * once, in new (see new_enter).
 */
enum cxx_op {
	OP_NEW, OP_NEW_ARR, OP_NEW_NT, OP_NEW_ARR_NT,
	OP_NEW_AL, OP_NEW_ARR_AL, OP_NEW_AL_NT, OP_NEW_ARR_AL_NT,
	OP_DEL, OP_DEL_ARR, OP_DEL_SZ, OP_DEL_ARR_SZ, OP_DEL_NT, OP_DEL_ARR_NT,
	OP_DEL_AL, OP_DEL_ARR_AL, OP_DEL_SZ_AL, OP_DEL_ARR_SZ_AL,
	OP_DEL_AL_NT, OP_DEL_ARR_AL_NT,
	NR_CXX_OPS
};

static const char *const cxx_names[NR_CXX_OPS] = {
	"_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
	"_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
	"_ZnwmSt11align_val_tRKSt9nothrow_t",
	"_ZnamSt11align_val_tRKSt9nothrow_t",
	"_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
	"_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
	"_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
	"_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
	"_ZdlPvSt11align_val_tRKSt9nothrow_t",
	"_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

static void *cxx_next[NR_CXX_OPS];

/*
 * No next definition: a C++ library dlopen'ed with RTLD_LOCAL (a Python
 * extension) whose libstdc++ is outside the global scope RTLD_NEXT
 * searches, while its references bind to ours. Then the C allocator
 * serves, as libstdc++'s new itself would; a throwing new that gets
 * nothing aborts, the one thing we cannot do as it would (throw).
 */
static void *fallback_new(size_t size)
{
	void *p = next()->malloc(size ? size : 1);

	if (!p)
		abort();
	return p;
}

static void *fallback_new_nt(size_t size, const void *nt)
{
	(void)nt;
	return next()->malloc(size ? size : 1);
}

static void *fallback_new_al(size_t size, size_t align)
{
	void *p = next()->memalign(align, size ? size : 1);

	if (!p)
		abort();
	return p;
}

static void *fallback_new_al_nt(size_t size, size_t align, const void *nt)
{
	(void)nt;
	return next()->memalign(align, size ? size : 1);
}

/*
 * Every delete's first argument is the block; the rest (size, alignment)
 * only hint, and a callee ignores the extra argument registers (SysV ABI).
 */
static void fallback_delete(void *p)
{
	next()->free(p);
}

static void *const cxx_fallback[NR_CXX_OPS] = {
	[OP_NEW] = fallback_new, [OP_NEW_ARR] = fallback_new,
	[OP_NEW_NT] = fallback_new_nt, [OP_NEW_ARR_NT] = fallback_new_nt,
	[OP_NEW_AL] = fallback_new_al, [OP_NEW_ARR_AL] = fallback_new_al,
	[OP_NEW_AL_NT] = fallback_new_al_nt,
	[OP_NEW_ARR_AL_NT] = fallback_new_al_nt,
	[OP_DEL ... OP_DEL_ARR_AL_NT] = fallback_delete,
};

static __attribute__((noinline)) void *resolve_cxx(enum cxx_op op)
{
	void *f = dlsym(RTLD_NEXT, cxx_names[op]);

	if (!f)
		f = cxx_fallback[op];
	__atomic_store_n(&cxx_next[op], f, __ATOMIC_RELEASE);
	return f;
}

static inline void *next_cxx(enum cxx_op op)
{
	void *f = __atomic_load_n(&cxx_next[op], __ATOMIC_ACQUIRE);

	return LIKELY(f != NULL) ? f : resolve_cxx(op);
}

/*
 * The reentrancy guard, in the countdown itself: while the next new runs,
 * this thread's countdown sits at NEW_GUARD, which no allocation it makes
 * can bring to zero, so a malloc inside (libstdc++'s new) is not counted
 * a second time, at no cost to malloc. A new of ours inside (libstdc++'s
 * new[], nothrow and aligned news call its new) sees the guard and only
 * forwards. new_exit puts the real countdown back and counts the block
 * once. Should the next new throw out of ours, the guard stays: the next
 * new of this thread whose frame is not below the one that threw (where
 * a live outer new of ours would be: stacks grow down) draws a fresh
 * distance; until then this thread's allocations are not sampled.
 */
#define NEW_GUARD	(INT64_MAX / 2)
#define NEW_STALE	(INT64_MAX / 4)

static TLS uintptr_t new_frame;	/* the outermost new of ours running */

/* Whether this new, whose frame is at here, counts; its saved countdown */
static inline int new_enter(uintptr_t here, int64_t *saved)
{
	if (UNLIKELY(countdown > NEW_STALE)) {
		if (new_frame > here)
			return 0;		/* inside an outer new of ours */
		countdown = next_distance();	/* left by an exception */
	}
	new_frame = here;
	*saved = countdown;
	countdown = NEW_GUARD;
	return 1;
}

static inline void *new_exit(int64_t saved, void *p, size_t size)
{
	new_frame = 0;
	countdown = saved;
	if (p)
		account(p, size);
	return p;
}

typedef void *(*new_fn)(size_t);
typedef void *(*new_nt_fn)(size_t, const void *);
typedef void *(*new_al_fn)(size_t, size_t);
typedef void *(*new_al_nt_fn)(size_t, size_t, const void *);
typedef void (*del_fn)(void *);
typedef void (*del_sz_fn)(void *, size_t);
typedef void (*del_nt_fn)(void *, const void *);
typedef void (*del_sz_al_fn)(void *, size_t, size_t);
typedef void (*del_al_nt_fn)(void *, size_t, const void *);

/* One new: forwarded, guarded, the block it returns counted once. */
#define CXX_NEW(name, op, type, params, args)				\
	EXPORT void *name params;					\
	EXPORT void *name params					\
	{								\
		int64_t saved;						\
									\
		if (!new_enter((uintptr_t)__builtin_frame_address(0),	\
			       &saved))					\
			return ((type)next_cxx(op)) args;		\
		return new_exit(saved, ((type)next_cxx(op)) args, size); \
	}

CXX_NEW(_Znwm, OP_NEW, new_fn, (size_t size), (size))
CXX_NEW(_Znam, OP_NEW_ARR, new_fn, (size_t size), (size))
CXX_NEW(_ZnwmRKSt9nothrow_t, OP_NEW_NT, new_nt_fn,
	(size_t size, const void *nt), (size, nt))
CXX_NEW(_ZnamRKSt9nothrow_t, OP_NEW_ARR_NT, new_nt_fn,
	(size_t size, const void *nt), (size, nt))
CXX_NEW(_ZnwmSt11align_val_t, OP_NEW_AL, new_al_fn,
	(size_t size, size_t al), (size, al))
CXX_NEW(_ZnamSt11align_val_t, OP_NEW_ARR_AL, new_al_fn,
	(size_t size, size_t al), (size, al))
CXX_NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, OP_NEW_AL_NT, new_al_nt_fn,
	(size_t size, size_t al, const void *nt), (size, al, nt))
CXX_NEW(_ZnamSt11align_val_tRKSt9nothrow_t, OP_NEW_ARR_AL_NT, new_al_nt_fn,
	(size_t size, size_t al, const void *nt), (size, al, nt))

/*
 * One delete: the sampled block forgotten (and reported) before it goes
 * back, as free does. No guard: should the next delete call our free
 * (libstdc++'s does), the block is no longer in the table and is not
 * reported again.
 */
#define CXX_DELETE(name, op, type, params, args)			\
	EXPORT void name params;					\
	EXPORT void name params						\
	{								\
		check_free(p);						\
		((type)next_cxx(op)) args;				\
	}

CXX_DELETE(_ZdlPv, OP_DEL, del_fn, (void *p), (p))
CXX_DELETE(_ZdaPv, OP_DEL_ARR, del_fn, (void *p), (p))
CXX_DELETE(_ZdlPvm, OP_DEL_SZ, del_sz_fn, (void *p, size_t n), (p, n))
CXX_DELETE(_ZdaPvm, OP_DEL_ARR_SZ, del_sz_fn, (void *p, size_t n), (p, n))
CXX_DELETE(_ZdlPvRKSt9nothrow_t, OP_DEL_NT, del_nt_fn,
	   (void *p, const void *nt), (p, nt))
CXX_DELETE(_ZdaPvRKSt9nothrow_t, OP_DEL_ARR_NT, del_nt_fn,
	   (void *p, const void *nt), (p, nt))
CXX_DELETE(_ZdlPvSt11align_val_t, OP_DEL_AL, del_sz_fn,
	   (void *p, size_t al), (p, al))
CXX_DELETE(_ZdaPvSt11align_val_t, OP_DEL_ARR_AL, del_sz_fn,
	   (void *p, size_t al), (p, al))
CXX_DELETE(_ZdlPvmSt11align_val_t, OP_DEL_SZ_AL, del_sz_al_fn,
	   (void *p, size_t n, size_t al), (p, n, al))
CXX_DELETE(_ZdaPvmSt11align_val_t, OP_DEL_ARR_SZ_AL, del_sz_al_fn,
	   (void *p, size_t n, size_t al), (p, n, al))
CXX_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, OP_DEL_AL_NT, del_al_nt_fn,
	   (void *p, size_t al, const void *nt), (p, al, nt))
CXX_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, OP_DEL_ARR_AL_NT,
	   del_al_nt_fn, (void *p, size_t al, const void *nt), (p, al, nt))
