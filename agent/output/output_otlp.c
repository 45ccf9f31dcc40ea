// SPDX-License-Identifier: GPL-2.0-only
/*
 * struct profile -> OTLP ExportProfilesServiceRequest (see output_otlp.h).
 *
 * Every message lives in one arena freed after packing. Dictionary entries
 * are deduplicated through intern tables keyed by their encoded content, so
 * each table holds a value once; each table's index 0 is interned first as
 * the zero value that receivers require ("" for strings, Mapping{}...).
 *
 * One file: one encoder behind one entry point, output_otlp(); every section
 * below interns into the same dictionary, whose tables index one another.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "gen/opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "proc/container.h"
#include "output/otlp_intern.h"
#include "output/output.h"
#include "output/output_otlp.h"
#include "lib/clock.h"
#include "lib/utf8.h"

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary PDict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles PResProf;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles PScopeProf;
typedef Opentelemetry__Proto__Profiles__V1development__Profile PProfile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample PSample;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType PValueType;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping PMapping;
typedef Opentelemetry__Proto__Profiles__V1development__Location PLocation;
typedef Opentelemetry__Proto__Profiles__V1development__Line PLine;
typedef Opentelemetry__Proto__Profiles__V1development__Function PFunction;
typedef Opentelemetry__Proto__Profiles__V1development__Stack PStack;
typedef Opentelemetry__Proto__Profiles__V1development__Link PLink;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit PAttr;
typedef Opentelemetry__Proto__Common__V1__AnyValue PAnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue PKeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope PScope;
typedef Opentelemetry__Proto__Resource__V1__Resource PResource;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest PRequest;

/*
 * One dictionary table: the intern table that gives each distinct key its
 * index, and the growable array of the messages at those indices.
 */
struct table {
	struct otlp_intern in;
	void **v;
	size_t n, cap;
};

enum { T_STR, T_ATTR, T_FN, T_MAP, T_LOC, T_STACK, T__COUNT };

struct enc {
	struct otlp_arena a;
	struct table t[T__COUNT];
	int32_t s_thread_id, s_thread_name, s_frame_type, s_build_id, s_state;
	int32_t s_lock_addr, s_lock_id, s_lock_kind, s_lock_name;
	int32_t a_frame_kernel, a_frame_native, a_frame_python;
	uint64_t start_ns, end_ns;	/* covers meta and every timestamp */
	int err;
};

static int table_push(struct table *t, void *item)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		void **v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = item;
	return 0;
}

static void *enc_alloc(struct enc *e, size_t size)
{
	void *p = otlp_arena_alloc(&e->a, size);

	if (!p)
		e->err = -ENOMEM;
	return p;
}

/* Index of s in string_table (NULL and "" are index 0). */
static int32_t str_idx(struct enc *e, const char *s)
{
	bool is_new;
	int64_t idx;

	if (!s)
		s = "";
	/* The single way into string_table: sanitised to UTF-8 there. */
	idx = otlp_intern_str(&e->t[T_STR].in, s, &is_new);
	if (idx < 0) {
		e->err = -ENOMEM;
		return 0;
	}
	/* The interned copy is NUL-terminated and lives until the end. */
	if (is_new &&
	    table_push(&e->t[T_STR], (void *)otlp_intern_key(&e->t[T_STR].in, idx)))
		e->err = -ENOMEM;
	return (int32_t)idx;
}

/*
 * Strings and attributes every request may use (attribute keys, frame
 * types) are interned on first use, so no table holds an unused entry.
 */
static int32_t lazy_str(struct enc *e, int32_t *slot, const char *s)
{
	if (*slot < 0)
		*slot = str_idx(e, s);
	return *slot;
}

static int32_t attr_idx(struct enc *e, int32_t key, bool is_int, int64_t ival,
			const char *sval);

/*
 * The semantic conventions' profile.frame.type: "kernel", "native", and
 * "cpython" for a CPython interpreter frame.
 */
static int32_t frame_type_attr(struct enc *e, enum prof_frame_kind kind)
{
	int32_t *slot = kind == PROF_FRAME_KERNEL ? &e->a_frame_kernel :
			kind == PROF_FRAME_PYTHON ? &e->a_frame_python :
			&e->a_frame_native;

	if (*slot < 0)
		*slot = attr_idx(e, lazy_str(e, &e->s_frame_type, "profile.frame.type"),
				 false, 0, kind == PROF_FRAME_KERNEL ? "kernel" :
				 kind == PROF_FRAME_PYTHON ? "cpython" : "native");
	return *slot;
}

/* A key buffer for intern lookups, built field by field. */
struct keybuf {
	unsigned char b[512];
	size_t n;
	unsigned char *big;	/* used for long stacks */
	size_t cap;
};

static void key_put(struct keybuf *k, const void *p, size_t len)
{
	if (k->n == SIZE_MAX || !len)
		return;		/* poisoned by an earlier allocation failure */
	if (!k->big && k->n + len <= sizeof(k->b)) {
		memcpy(k->b + k->n, p, len);
		k->n += len;
		return;
	}
	if (!k->big || k->n + len > k->cap) {
		size_t cap = (k->n + len) * 2;
		unsigned char *nb = realloc(k->big, cap);

		if (!nb) {
			k->n = SIZE_MAX;	/* poisoned: caller checks */
			return;
		}
		if (!k->big)
			memcpy(nb, k->b, k->n);
		k->big = nb;
		k->cap = cap;
	}
	memcpy(k->big + k->n, p, len);
	k->n += len;
}

static const void *key_data(const struct keybuf *k)
{
	return k->big ? k->big : k->b;
}

/*
 * Intern key k in table id; on a new entry call make() to build the table
 * item. Frees k's buffer either way.
 */
static int32_t intern_item(struct enc *e, int id, struct keybuf *k,
			   void *(*make)(struct enc *, void *), void *ctx)
{
	struct table *t = &e->t[id];
	bool is_new = false;
	int64_t idx = -1;
	void *item;

	if (k->n != SIZE_MAX)
		idx = otlp_intern(&t->in, key_data(k), k->n, &is_new);
	free(k->big);
	k->big = NULL;
	if (idx < 0) {
		e->err = -ENOMEM;
		return 0;
	}
	if (is_new) {
		item = make(e, ctx);
		if (!item || table_push(t, item)) {
			e->err = -ENOMEM;
			return 0;
		}
	}
	return (int32_t)idx;
}

/* ---- attributes (KeyValueAndUnit) ---- */

struct attr_ctx {
	int32_t key;
	bool is_int;
	int64_t ival;
	const char *sval;
};

static void *make_attr(struct enc *e, void *ctx)
{
	struct attr_ctx *c = ctx;
	PAttr *a = enc_alloc(e, sizeof(*a));
	PAnyValue *v;

	if (!a)
		return NULL;
	opentelemetry__proto__profiles__v1development__key_value_and_unit__init(a);
	if (c->key == 0)
		return a;	/* the zero entry: no key, no value */
	v = enc_alloc(e, sizeof(*v));
	if (!v)
		return NULL;
	opentelemetry__proto__common__v1__any_value__init(v);
	a->key_strindex = c->key;
	if (c->is_int) {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
		v->int_value = c->ival;
	} else {
		v->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		v->string_value = otlp_arena_strdup(&e->a, c->sval);
		if (!v->string_value)
			return NULL;
	}
	a->value = v;
	return a;
}

static int32_t attr_idx(struct enc *e, int32_t key, bool is_int, int64_t ival,
			const char *sval)
{
	struct attr_ctx c = { key, is_int, ival, sval ? sval : "" };
	struct keybuf k = { .n = 0 };
	unsigned char type = key == 0 ? 0 : (is_int ? 1 : 2);
	char *owned = NULL;
	int32_t idx;

	/* Key on the UTF-8 the value will be (make_attr's strdup keeps it),
	 * so values differing only in invalid bytes share one entry. */
	if (type == 2 && !(c.sval = utf8_sanitize(c.sval, &owned))) {
		e->err = -ENOMEM;
		return 0;
	}
	key_put(&k, &key, sizeof(key));
	key_put(&k, &type, 1);
	if (type == 1)
		key_put(&k, &ival, sizeof(ival));
	else if (type == 2)
		key_put(&k, c.sval, strlen(c.sval));
	idx = intern_item(e, T_ATTR, &k, make_attr, &c);
	free(owned);
	return idx;
}

/* ---- functions, mappings, locations, stacks ---- */

struct fn_ctx {
	int32_t name, file;
};

static void *make_fn(struct enc *e, void *ctx)
{
	struct fn_ctx *c = ctx;
	PFunction *f = enc_alloc(e, sizeof(*f));

	if (!f)
		return NULL;
	opentelemetry__proto__profiles__v1development__function__init(f);
	f->name_strindex = c->name;
	/* ember resolves demangled names only: system name is the same. */
	f->system_name_strindex = c->name;
	f->filename_strindex = c->file;
	return f;
}

static int32_t fn_idx(struct enc *e, const struct prof_frame *f)
{
	struct fn_ctx c = { 0, 0 };
	struct keybuf k = { .n = 0 };

	if (f) {
		c.name = str_idx(e, f->function);
		c.file = str_idx(e, f->source_file);
	}
	key_put(&k, &c, sizeof(c));
	return intern_item(e, T_FN, &k, make_fn, &c);
}

/*
 * Point a message's attribute_indices at the one attribute attr, if any
 * (0 is the zero entry: none). False when out of memory.
 */
static bool set_one_attr(struct enc *e, int32_t **indices, size_t *n,
			 int32_t attr)
{
	if (!attr)
		return true;
	*indices = enc_alloc(e, sizeof(**indices));
	if (!*indices)
		return false;
	(*indices)[0] = attr;
	*n = 1;
	return true;
}

struct map_ctx {
	uint64_t start, limit, offset;
	int32_t file, build_id_attr;
};

static void *make_map(struct enc *e, void *ctx)
{
	struct map_ctx *c = ctx;
	PMapping *m = enc_alloc(e, sizeof(*m));

	if (!m)
		return NULL;
	opentelemetry__proto__profiles__v1development__mapping__init(m);
	m->memory_start = c->start;
	m->memory_limit = c->limit;
	m->file_offset = c->offset;
	m->filename_strindex = c->file;
	if (!set_one_attr(e, &m->attribute_indices, &m->n_attribute_indices,
			  c->build_id_attr))
		return NULL;
	return m;
}

static int32_t map_idx(struct enc *e, const struct prof_frame *f)
{
	struct map_ctx c;
	struct keybuf k = { .n = 0 };

	memset(&c, 0, sizeof(c));
	if (f) {
		if (!f->module)
			return 0;	/* no mapping known: the zero mapping */
		c.start = f->map_start;
		c.limit = f->map_end;
		c.offset = f->map_pgoff;
		c.file = str_idx(e, f->module);
		if (f->build_id && *f->build_id)
			c.build_id_attr = attr_idx(e, lazy_str(e, &e->s_build_id,
					"process.executable.build_id.gnu"), false, 0, f->build_id);
	}
	key_put(&k, &c, sizeof(c));
	return intern_item(e, T_MAP, &k, make_map, &c);
}

struct loc_ctx {
	int32_t mapping, kind_attr;
	uint64_t address;
	uint32_t nr_lines;
	const int32_t *fns;
	const int64_t *lines;
};

static void *make_loc(struct enc *e, void *ctx)
{
	struct loc_ctx *c = ctx;
	PLocation *l = enc_alloc(e, sizeof(*l));

	if (!l)
		return NULL;
	opentelemetry__proto__profiles__v1development__location__init(l);
	l->mapping_index = c->mapping;
	l->address = c->address;
	if (!set_one_attr(e, &l->attribute_indices, &l->n_attribute_indices,
			  c->kind_attr))
		return NULL;
	if (c->nr_lines) {
		l->lines = enc_alloc(e, c->nr_lines * sizeof(*l->lines));
		if (!l->lines)
			return NULL;
		for (uint32_t i = 0; i < c->nr_lines; i++) {
			PLine *ln = enc_alloc(e, sizeof(*ln));

			if (!ln)
				return NULL;
			opentelemetry__proto__profiles__v1development__line__init(ln);
			ln->function_index = c->fns[i];
			ln->line = c->lines[i];
			l->lines[i] = ln;
		}
		l->n_lines = c->nr_lines;
	}
	return l;
}

#define MAX_INLINE 64	/* inline levels kept per location */

/* Intern the location c describes (also the zero location, at dict_init). */
static int32_t loc_intern(struct enc *e, struct loc_ctx *c)
{
	struct keybuf k = { .n = 0 };

	key_put(&k, &c->mapping, sizeof(c->mapping));
	key_put(&k, &c->kind_attr, sizeof(c->kind_attr));
	key_put(&k, &c->address, sizeof(c->address));
	key_put(&k, c->fns, c->nr_lines * sizeof(c->fns[0]));
	key_put(&k, c->lines, c->nr_lines * sizeof(c->lines[0]));
	return intern_item(e, T_LOC, &k, make_loc, c);
}

/*
 * One location for frames[0..n-1]: all but the last are inline frames
 * inside the last (same address); lines go innermost first.
 */
static int32_t loc_idx(struct enc *e, const struct prof_frame *const *frames,
		       uint32_t n)
{
	const struct prof_frame *outer = frames[n - 1];
	int32_t fns[MAX_INLINE];
	int64_t lines[MAX_INLINE];
	struct loc_ctx c = { 0, 0, 0, 0, fns, lines };

	if (n > MAX_INLINE)
		n = MAX_INLINE;
	c.mapping = map_idx(e, outer);
	c.address = outer->address;
	c.kind_attr = frame_type_attr(e, outer->kind);
	for (uint32_t i = 0; i < n; i++) {
		/* Unresolved frames carry no line: the backend can
		 * re-symbolize from mapping, address and build id. */
		if (!frames[i]->function)
			continue;
		fns[c.nr_lines] = fn_idx(e, frames[i]);
		lines[c.nr_lines] = frames[i]->line;
		c.nr_lines++;
	}
	return loc_intern(e, &c);
}

struct stack_ctx {
	const int32_t *locs;
	size_t n;
};

static void *make_stack(struct enc *e, void *ctx)
{
	struct stack_ctx *c = ctx;
	PStack *s = enc_alloc(e, sizeof(*s));

	if (!s)
		return NULL;
	opentelemetry__proto__profiles__v1development__stack__init(s);
	if (c->n) {
		s->location_indices = enc_alloc(e, c->n * sizeof(int32_t));
		if (!s->location_indices)
			return NULL;
		memcpy(s->location_indices, c->locs, c->n * sizeof(int32_t));
		s->n_location_indices = c->n;
	}
	return s;
}

/* Intern the stack of locations c describes (none: the zero stack). */
static int32_t stack_intern(struct enc *e, struct stack_ctx *c)
{
	struct keybuf k = { .n = 0 };

	key_put(&k, c->locs, c->n * sizeof(c->locs[0]));
	return intern_item(e, T_STACK, &k, make_stack, c);
}

/* The stack of a sample: leaf first, as frames[] already is. */
static int32_t stack_idx(struct enc *e, const struct prof_sample *s)
{
	int32_t *locs = NULL;
	struct stack_ctx c = { NULL, 0 };
	int32_t idx;
	uint32_t i = 0;

	if (s->nr_frames && s->frames) {
		locs = malloc(s->nr_frames * sizeof(*locs));
		if (!locs) {
			e->err = -ENOMEM;
			return 0;
		}
	}
	while (locs && i < s->nr_frames) {
		uint32_t j = i;

		if (!s->frames[i]) {
			i++;
			continue;
		}
		/* Group an inline chain with the frame that contains it. */
		while (j + 1 < s->nr_frames && s->frames[j]->inlined &&
		       s->frames[j + 1])
			j++;
		locs[c.n++] = loc_idx(e, s->frames + i, j - i + 1);
		i = j + 1;
	}
	c.locs = locs;
	idx = stack_intern(e, &c);
	free(locs);
	return idx;
}

/* ---- samples and profiles ---- */

static PValueType *value_type(struct enc *e, const char *type, const char *unit)
{
	PValueType *vt = enc_alloc(e, sizeof(*vt));

	if (!vt)
		return NULL;
	opentelemetry__proto__profiles__v1development__value_type__init(vt);
	vt->type_strindex = str_idx(e, type);
	vt->unit_strindex = str_idx(e, unit);
	return vt;
}

/*
 * Append to prof a copy of tmpl (stack and attributes) with room for n
 * values, which the caller fills. NULL when out of memory.
 */
static PSample *add_sample(struct enc *e, PProfile *prof, const PSample *tmpl,
			   size_t n)
{
	PSample *ps = enc_alloc(e, sizeof(*ps));

	if (!ps)
		return NULL;
	*ps = *tmpl;
	ps->values = enc_alloc(e, n * sizeof(*ps->values));
	if (!ps->values)
		return NULL;
	ps->n_values = n;
	prof->samples[prof->n_samples++] = ps;
	return ps;
}

/*
 * -e lock: which lock, as attributes (no semantic convention names locks:
 * ember's own namespace). The address is an int (a futex's user address
 * and a kernel address both fit int64 as their two's complement).
 */
static size_t lock_attrs(struct enc *e, const struct prof_sample *s,
			 int32_t *attrs)
{
	size_t n = 0;

	if (s->lock_addr_is_id)
		attrs[n++] = attr_idx(e, lazy_str(e, &e->s_lock_id, "ember.lock.id"),
				      true, (int64_t)s->lock_addr, NULL);
	else
		attrs[n++] = attr_idx(e, lazy_str(e, &e->s_lock_addr,
						  "ember.lock.address"),
				      true, (int64_t)s->lock_addr, NULL);
	if (s->lock_kind)
		attrs[n++] = attr_idx(e, lazy_str(e, &e->s_lock_kind,
						  "ember.lock.kind"),
				      false, 0, s->lock_kind);
	if (s->lock_name)
		attrs[n++] = attr_idx(e, lazy_str(e, &e->s_lock_name,
						  "ember.lock.name"),
				      false, 0, s->lock_name);
	return n;
}

/*
 * Append the OTLP samples of s to prof (1 or 2): on-CPU samples with
 * timestamps get one Sample whose values are 1 per timestamp, plus one
 * Sample with the remaining count when timestamps were capped. A lock
 * wait goes into one of two profiles: contentions (lock_delay false) or
 * the time waited.
 */
static void add_samples(struct enc *e, PProfile *prof, const struct prof_sample *s,
			bool lock_delay)
{
	int32_t stack = stack_idx(e, s);
	int32_t *attrs = enc_alloc(e, 6 * sizeof(int32_t));
	size_t nr_attrs = 0;
	uint64_t nr_ts = s->timestamps_ns ? s->nr_timestamps : 0;
	PSample tmpl, *ps;

	if (!attrs)
		return;
	attrs[nr_attrs++] = attr_idx(e, lazy_str(e, &e->s_thread_id, "thread.id"),
				     true, s->tid, NULL);
	if (s->thread_name && *s->thread_name)
		attrs[nr_attrs++] = attr_idx(e, lazy_str(e, &e->s_thread_name,
							 "thread.name"),
					     false, 0, s->thread_name);
	/* how an off-CPU thread waited: sleeping, disk, preempted, other */
	if (s->event == PROF_EV_OFFCPU && prof_offcpu_state_name(s->offcpu_state))
		attrs[nr_attrs++] = attr_idx(e, lazy_str(e, &e->s_state,
							 "thread.state"),
					     false, 0,
					     prof_offcpu_state_name(s->offcpu_state));
	if (s->event == PROF_EV_LOCK)
		nr_attrs += lock_attrs(e, s, attrs + nr_attrs);

	opentelemetry__proto__profiles__v1development__sample__init(&tmpl);
	tmpl.stack_index = stack;
	tmpl.attribute_indices = attrs;
	tmpl.n_attribute_indices = nr_attrs;
	if (s->event == PROF_EV_OFFCPU || s->event == PROF_EV_FAULTS ||
	    s->event == PROF_EV_ALLOC || s->event == PROF_EV_INUSE) {
		/* nanoseconds off CPU, or bytes faulted in, allocated, in use */
		ps = add_sample(e, prof, &tmpl, 1);
		if (ps)
			ps->values[0] = (int64_t)s->weight_ns;
		return;
	}
	if (s->event == PROF_EV_LOCK) {
		ps = add_sample(e, prof, &tmpl, 1);
		if (ps)
			ps->values[0] = (int64_t)(lock_delay ? s->weight_ns : s->count);
		return;
	}
	if (nr_ts > s->count)
		nr_ts = s->count;
	if (nr_ts) {
		ps = add_sample(e, prof, &tmpl, nr_ts);
		if (!ps)
			return;
		ps->timestamps_unix_nano = enc_alloc(e, nr_ts * sizeof(uint64_t));
		if (!ps->timestamps_unix_nano)
			return;
		for (uint64_t i = 0; i < nr_ts; i++) {
			ps->values[i] = 1;
			ps->timestamps_unix_nano[i] = s->timestamps_ns[i];
		}
		ps->n_timestamps_unix_nano = nr_ts;
	}
	if (s->count > nr_ts) {
		ps = add_sample(e, prof, &tmpl, 1);
		if (ps)
			ps->values[0] = (int64_t)(s->count - nr_ts);
	}
}

static void fill_profile_id(uint8_t id[16])
{
	uint64_t x;

	if (getrandom(id, 16, GRND_NONBLOCK) == 16)
		goto check;
	/* No entropy yet (early boot): time and pid are unique enough. */
	x = clock_ns(CLOCK_REALTIME);
	memcpy(id, &x, 8);
	x = ((uint64_t)getpid() << 32) ^ (uint64_t)clock();
	memcpy(id + 8, &x, 8);
check:
	id[0] |= 1;	/* an all-zero id is invalid */
}

static PProfile *new_profile(struct enc *e, const struct profile *p,
			     enum prof_event ev, bool lock_delay,
			     size_t max_samples)
{
	PProfile *prof = enc_alloc(e, sizeof(*prof));

	if (!prof)
		return NULL;
	opentelemetry__proto__profiles__v1development__profile__init(prof);
	prof->samples = enc_alloc(e, max_samples * sizeof(*prof->samples));
	prof->profile_id.data = enc_alloc(e, 16);
	if (!prof->samples || !prof->profile_id.data)
		return NULL;
	prof->profile_id.len = 16;
	fill_profile_id(prof->profile_id.data);
	prof->time_unix_nano = e->start_ns;
	prof->duration_nano = e->end_ns - e->start_ns;
	if (ev == PROF_EV_CPU) {
		uint64_t period = p->meta.period_ns;

		if (!period && p->meta.freq_hz)
			period = 1000000000ULL / p->meta.freq_hz;
		prof->sample_type = value_type(e, "samples", "count");
		prof->period_type = value_type(e, "cpu", "nanoseconds");
		prof->period = (int64_t)period;
	} else if (ev == PROF_EV_FAULTS) {
		/* bytes the sampled faults stand for: faults x page size */
		prof->sample_type = value_type(e, "page_faults", "bytes");
		prof->period_type = value_type(e, "page_faults", "count");
		prof->period = p->meta.fault_period;
	} else if (ev == PROF_EV_ALLOC || ev == PROF_EV_INUSE) {
		/* as Go's heap profiles: bytes, one sample per period bytes */
		prof->sample_type = ev == PROF_EV_ALLOC ?
				    value_type(e, "alloc_space", "bytes") :
				    value_type(e, "inuse_space", "bytes");
		prof->period_type = value_type(e, "space", "bytes");
		prof->period = (int64_t)p->meta.alloc_rate;
	} else if (ev == PROF_EV_LOCK) {
		/* Go's mutex profile: contentions and delay, every one kept */
		prof->sample_type = lock_delay ?
				    value_type(e, "delay", "nanoseconds") :
				    value_type(e, "contentions", "count");
		prof->period_type = value_type(e, "contentions", "count");
		prof->period = 1;
	} else {
		prof->sample_type = value_type(e, "off_cpu", "nanoseconds");
	}
	return prof;
}

/* ---- resources ---- */

/* A KeyValue named key with an empty value for the caller to set. */
static PKeyValue *kv_new(struct enc *e, const char *key)
{
	PKeyValue *kv = enc_alloc(e, sizeof(*kv));
	PAnyValue *v = enc_alloc(e, sizeof(*v));

	if (!kv || !v)
		return NULL;
	opentelemetry__proto__common__v1__key_value__init(kv);
	opentelemetry__proto__common__v1__any_value__init(v);
	kv->key = otlp_arena_strdup(&e->a, key);
	if (!kv->key) {
		e->err = -ENOMEM;
		return NULL;
	}
	kv->value = v;
	return kv;
}

static PKeyValue *kv_str(struct enc *e, const char *key, const char *val)
{
	PKeyValue *kv = kv_new(e, key);

	if (!kv)
		return NULL;
	kv->value->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
	kv->value->string_value = otlp_arena_strdup(&e->a, val ? val : "");
	if (!kv->value->string_value) {
		e->err = -ENOMEM;
		return NULL;
	}
	return kv;
}

static PKeyValue *kv_int(struct enc *e, const char *key, int64_t val)
{
	PKeyValue *kv = kv_new(e, key);

	if (!kv)
		return NULL;
	kv->value->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
	kv->value->int_value = val;
	return kv;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

#define OWN_ATTRS 6

static PResource *make_resource(struct enc *e, const struct profile *p,
				const struct prof_process *proc,
				const struct otlp_encode_options *opt)
{
	static const char *const own[OWN_ATTRS] = {
		"process.pid", "process.executable.name",
		"process.executable.path", "host.name", "container.id",
		"service.name",
	};
	PResource *r = enc_alloc(e, sizeof(*r));
	size_t nr_extra = opt ? opt->nr_attrs : 0;
	const char *exe_name = NULL;
	size_t n = 0;

	if (!r)
		return NULL;
	opentelemetry__proto__resource__v1__resource__init(r);
	r->attributes = enc_alloc(e, (OWN_ATTRS + nr_extra) * sizeof(*r->attributes));
	if (!r->attributes)
		return NULL;
	if (proc) {
		exe_name = base_name(proc->exe_path);
		if (!exe_name || !*exe_name)
			exe_name = proc->comm;
		r->attributes[n++] = kv_int(e, own[0], proc->pid);
		if (exe_name && *exe_name)
			r->attributes[n++] = kv_str(e, own[1], exe_name);
		if (proc->exe_path && *proc->exe_path)
			r->attributes[n++] = kv_str(e, own[2], proc->exe_path);
	}
	if (p->meta.host_name && *p->meta.host_name)
		r->attributes[n++] = kv_str(e, own[3], p->meta.host_name);
	if (proc && proc->container_id && *proc->container_id) {
		r->attributes[n++] = kv_str(e, own[4], proc->container_id);
	} else if (proc && proc->cgroup_path) {
		char id[CONTAINER_ID_LEN + 1];

		if (container_id_from_cgroup(proc->cgroup_path, id, sizeof(id)))
			r->attributes[n++] = kv_str(e, own[4], id);
	}
	if (opt && opt->service_name && *opt->service_name)
		r->attributes[n++] = kv_str(e, own[5], opt->service_name);
	else if (exe_name && *exe_name)
		r->attributes[n++] = kv_str(e, own[5], exe_name);
	for (size_t i = 0; i < nr_extra; i++) {
		bool clash = false;

		for (size_t j = 0; j < OWN_ATTRS; j++)
			clash |= !strcmp(opt->attrs[i].key, own[j]);
		if (!clash && opt->attrs[i].key && *opt->attrs[i].key)
			r->attributes[n++] = kv_str(e, opt->attrs[i].key,
						    opt->attrs[i].value);
	}
	for (size_t i = 0; i < n; i++)
		if (!r->attributes[i])
			return NULL;
	r->n_attributes = n;
	return r;
}

static PScope *make_scope(struct enc *e)
{
	PScope *s = enc_alloc(e, sizeof(*s));

	if (!s)
		return NULL;
	opentelemetry__proto__common__v1__instrumentation_scope__init(s);
	s->name = "ember";
#ifdef EMBER_VERSION
	/* From the VERSION file: UTF-8 like every string field (utf8.h). */
	s->version = otlp_arena_strdup(&e->a, EMBER_VERSION);
	if (!s->version) {
		e->err = -ENOMEM;
		return NULL;
	}
#endif
	return s;
}

/* Index of a sample's process in p->processes, or nr_processes if none. */
static size_t proc_slot(const struct profile *p, const struct prof_sample *s)
{
	if (s->process >= p->processes &&
	    s->process < p->processes + p->nr_processes)
		return (size_t)(s->process - p->processes);
	return p->nr_processes;
}

static PResProf *make_resource_profiles(struct enc *e, const struct profile *p,
					size_t slot, const size_t *counts,
					const struct otlp_encode_options *opt)
{
	const struct prof_process *proc = slot < p->nr_processes ?
					  &p->processes[slot] : NULL;
	PResProf *rp = enc_alloc(e, sizeof(*rp));
	PScopeProf *sp = enc_alloc(e, sizeof(*sp));

	if (!rp || !sp)
		return NULL;
	opentelemetry__proto__profiles__v1development__resource_profiles__init(rp);
	opentelemetry__proto__profiles__v1development__scope_profiles__init(sp);
	rp->resource = make_resource(e, p, proc, opt);
	sp->scope = make_scope(e);
	/* + 1: lock waits are two profiles, contentions and delay */
	sp->profiles = enc_alloc(e, (PROF_EV__COUNT + 1) * sizeof(*sp->profiles));
	rp->scope_profiles = enc_alloc(e, sizeof(*rp->scope_profiles));
	if (!rp->resource || !sp->scope || !sp->profiles || !rp->scope_profiles)
		return NULL;
	for (int ev = 0; ev < PROF_EV__COUNT; ev++) {
		for (int delay = 0; delay <= (ev == PROF_EV_LOCK); delay++) {
			PProfile *prof;

			if (!counts[ev])
				continue;
			/* Up to two OTLP samples per ember sample (add_samples) */
			prof = new_profile(e, p, ev, delay, 2 * counts[ev]);
			if (!prof)
				return NULL;
			for (size_t i = 0; i < p->nr_samples && !e->err; i++) {
				const struct prof_sample *s = &p->samples[i];

				if (proc_slot(p, s) == slot && (int)s->event == ev)
					add_samples(e, prof, s, delay);
			}
			sp->profiles[sp->n_profiles++] = prof;
		}
	}
	rp->scope_profiles[0] = sp;
	rp->n_scope_profiles = 1;
	return rp;
}

/* ---- dictionary ---- */

static int dict_init(struct enc *e)
{
	struct loc_ctx lz = { 0, 0, 0, 0, NULL, NULL };
	struct stack_ctx sz = { NULL, 0 };

	/* Index 0 of every table: the zero value meaning "unset". */
	str_idx(e, "");
	attr_idx(e, 0, false, 0, NULL);
	fn_idx(e, NULL);
	map_idx(e, NULL);
	loc_intern(e, &lz);
	stack_intern(e, &sz);
	return e->err;
}

static PDict *make_dict(struct enc *e)
{
	PDict *d = enc_alloc(e, sizeof(*d));
	PLink *link0 = enc_alloc(e, sizeof(*link0));

	if (!d || !link0)
		return NULL;
	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(d);
	opentelemetry__proto__profiles__v1development__link__init(link0);
	/* Samples never link to spans: link_table is just its zero entry. */
	d->link_table = enc_alloc(e, sizeof(*d->link_table));
	if (!d->link_table)
		return NULL;
	d->link_table[0] = link0;
	d->n_link_table = 1;
	d->mapping_table = (PMapping **)e->t[T_MAP].v;
	d->n_mapping_table = e->t[T_MAP].n;
	d->location_table = (PLocation **)e->t[T_LOC].v;
	d->n_location_table = e->t[T_LOC].n;
	d->function_table = (PFunction **)e->t[T_FN].v;
	d->n_function_table = e->t[T_FN].n;
	d->string_table = (char **)e->t[T_STR].v;
	d->n_string_table = e->t[T_STR].n;
	d->attribute_table = (PAttr **)e->t[T_ATTR].v;
	d->n_attribute_table = e->t[T_ATTR].n;
	d->stack_table = (PStack **)e->t[T_STACK].v;
	d->n_stack_table = e->t[T_STACK].n;
	return d;
}

static void enc_free(struct enc *e)
{
	for (int i = 0; i < T__COUNT; i++) {
		otlp_intern_free(&e->t[i].in);
		free(e->t[i].v);
	}
	otlp_arena_free(&e->a);
}

int otlp_encode_request(const struct profile *p,
			const struct otlp_encode_options *opt,
			uint8_t **buf, size_t *len)
{
	struct enc e;
	PRequest req;
	size_t nr_slots = p->nr_processes + 1;	/* + samples without process */
	size_t *counts;
	int ret = 0;

	*buf = NULL;
	*len = 0;
	memset(&e, 0, sizeof(e));
	e.s_thread_id = e.s_thread_name = e.s_frame_type = e.s_build_id = -1;
	e.s_state = -1;
	e.s_lock_addr = e.s_lock_id = e.s_lock_kind = e.s_lock_name = -1;
	e.a_frame_kernel = e.a_frame_native = e.a_frame_python = -1;
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(&req);
	counts = calloc(nr_slots * PROF_EV__COUNT, sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];

		if ((unsigned int)s->event < PROF_EV__COUNT)
			counts[proc_slot(p, s) * PROF_EV__COUNT + s->event]++;
	}
	/*
	 * Records still in the rings when the previous interval was cut are
	 * aggregated into this one: widen the time range so every sample
	 * timestamp falls inside it, as receivers expect.
	 */
	e.start_ns = p->meta.start_ns;
	e.end_ns = p->meta.end_ns > p->meta.start_ns ? p->meta.end_ns : p->meta.start_ns;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];

		for (uint32_t j = 0; s->timestamps_ns && j < s->nr_timestamps; j++) {
			if (s->timestamps_ns[j] < e.start_ns)
				e.start_ns = s->timestamps_ns[j];
			if (s->timestamps_ns[j] > e.end_ns)
				e.end_ns = s->timestamps_ns[j];
		}
	}
	if (dict_init(&e))
		goto out;
	req.resource_profiles = enc_alloc(&e, nr_slots * sizeof(*req.resource_profiles));
	if (!req.resource_profiles)
		goto out;
	for (size_t slot = 0; slot < nr_slots && !e.err; slot++) {
		const size_t *c = counts + slot * PROF_EV__COUNT;
		bool any = false;
		PResProf *rp;

		for (int ev = 0; ev < PROF_EV__COUNT; ev++)
			any |= c[ev] != 0;
		if (!any)
			continue;
		rp = make_resource_profiles(&e, p, slot, c, opt);
		if (!rp)
			break;
		req.resource_profiles[req.n_resource_profiles++] = rp;
	}
	if (e.err)
		goto out;
	req.dictionary = make_dict(&e);
	if (!req.dictionary || e.err)
		goto out;
	*len = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__get_packed_size(&req);
	*buf = malloc(*len ? *len : 1);
	if (!*buf) {
		e.err = -ENOMEM;
		goto out;
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__pack(&req, *buf);
out:
	ret = e.err ? e.err : (req.dictionary ? 0 : -ENOMEM);
	if (ret) {
		free(*buf);
		*buf = NULL;
		*len = 0;
	}
	free(counts);
	enc_free(&e);
	return ret;
}

int output_otlp(const struct profile *p, FILE *out)
{
	uint8_t *buf;
	size_t len;
	int ret = otlp_encode_request(p, NULL, &buf, &len);

	if (ret)
		return ret;
	if (fwrite(buf, 1, len, out) != len || fflush(out))
		ret = -EIO;
	free(buf);
	return ret;
}
