// SPDX-License-Identifier: GPL-2.0-only
/*
 * pprof writer: the profile as a gzipped perftools.profiles.Profile
 * (proto/pprof/profile.proto), which `go tool pprof`, pprof-format,
 * speedscope, Pyroscope and most profile viewers load.
 *
 * Shape of the output:
 * - sample_type: on-CPU adds samples/count and cpu/nanoseconds, off-CPU adds
 *   off_cpu/nanoseconds; every sample carries all of them (0 for the other
 *   event). default_sample_type is cpu when on-CPU was recorded.
 *   Page faults (-e faults) add page_faults/bytes: the bytes the sampled
 *   faults stand for (faults x page size), as Go names heap space. Lock
 *   waits (-e lock) add contentions/count and delay/nanoseconds, the types
 *   of Go's mutex profile (period type contentions/count, period 1 alone),
 *   with labels lock.address (number), lock.kind and, for a named kernel
 *   lock, lock.name; their [lock ...] and [waker COMM] frames are
 *   locations of their own, as in folded output.
 * - period_type cpu/nanoseconds with the sampling period (off_cpu/nanoseconds
 *   and 1 for an off-CPU-only profile, page_faults/count and the fault
 *   period for a faults-only one).
 * - Location: one per run of frames that share an address, i.e. an inlined
 *   chain plus the function it sits in; its lines list the innermost inlined
 *   function first, as the format wants.
 * - Mapping: one per distinct (file, build-id, mapped range); a frame with
 *   no known range (the kernel) widens its mapping to the addresses seen.
 * - Labels pid, tid (numbers), thread_name, comm and container_id (strings,
 *   when known).
 * - Comments: host, backend, and the lost/corrupt record counts, so a
 *   profile that lost data says so in any pprof viewer (`pprof -comments`).
 *
 * The message is packed straight into a deflate stream: the packed bytes
 * are never held in memory in full.
 *
 * Returns 0, or a negative errno (-ENOMEM, -EIO).
 *
 * One file: one writer behind one entry point, output_pprof(); its mapping,
 * location, function and string tables index one another inside one struct
 * builder.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/array.h"
#include "lib/hash_index.h"
#include "output/output.h"
#include "lib/utf8.h"
#include "gen/pprof/profile.pb-c.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__ValueType PbValueType;

struct mapping_key {
	int64_t file, build_id;
	uint64_t start, end, pgoff;
};

struct builder {
	const struct profile *prof;

	char **strings;
	size_t nr_strings, cap_strings;
	struct hash_index string_ix;

	PbFunction *functions;
	size_t nr_functions, cap_functions;
	struct hash_index function_ix;

	PbMapping *mappings;
	struct mapping_key *mapping_keys;
	size_t nr_mappings, cap_mappings, cap_mapping_keys;
	struct hash_index mapping_ix;

	/* Locations: key = the run of prof_frame pointers they came from. */
	PbLocation *locations;
	const struct prof_frame *const **loc_frames;
	uint32_t *loc_nframes;
	size_t nr_locations, cap_locations, cap_loc_frames, cap_loc_nframes;
	struct hash_index location_ix;

	PbLine *lines;		/* one array for all locations' lines */
	size_t nr_lines, cap_lines;
	size_t *loc_line_off;	/* where each location's lines start */
	size_t cap_loc_line_off;

	/*
	 * Set on the first allocation failure: an index may then hold an entry
	 * whose data was never filled, so nothing may be looked up any more.
	 */
	bool failed;
};

static int64_t fail(struct builder *b)
{
	b->failed = true;
	return -ENOMEM;
}

static bool string_eq(void *ctx, uint32_t entry, const void *key)
{
	struct builder *b = ctx;

	return strcmp(b->strings[entry], key) == 0;
}

static int64_t intern_valid(struct builder *b, const char *s)
{
	int64_t id;
	char *copy;

	if (b->failed || array_grow(&b->strings, &b->cap_strings, b->nr_strings + 1, sizeof(char *)))
		return fail(b);
	id = hash_index_get(&b->string_ix, hash_bytes(s, strlen(s)), s,
			    string_eq, b, b->nr_strings);
	if (id != (int64_t)b->nr_strings)
		return id < 0 ? fail(b) : id;
	copy = strdup(s);
	if (!copy)
		return fail(b);
	b->strings[b->nr_strings++] = copy;
	return id;
}

/* String table index of s (NULL counts as ""), or -ENOMEM. */
static int64_t intern(struct builder *b, const char *s)
{
	int64_t id;
	char *fixed;

	if (!s)
		s = "";
	/* proto3 strings must be UTF-8 (see utf8.h). */
	s = utf8_sanitize(s, &fixed);
	if (!s)
		return fail(b);
	id = intern_valid(b, s);
	free(fixed);
	return id;
}

static bool function_eq(void *ctx, uint32_t entry, const void *key)
{
	const struct builder *b = ctx;
	const PbFunction *f = key, *e = &b->functions[entry];

	return e->name == f->name && e->filename == f->filename;
}

static int64_t function_id(struct builder *b, const struct prof_frame *f)
{
	PbFunction key = PERFTOOLS__PROFILES__FUNCTION__INIT;
	int64_t i;

	if (b->failed)
		return -ENOMEM;
	/* a Python frame's function is its qualname; file and line are
	 * the Function's filename and the Line's line */
	key.name = intern(b, f->kind == PROF_FRAME_PYTHON && f->function ?
			  f->function : prof_frame_label(b->prof, f));
	key.filename = intern(b, f->source_file);
	if (key.name < 0 || key.filename < 0)
		return -ENOMEM;
	key.system_name = key.name;
	if (array_grow(&b->functions, &b->cap_functions, b->nr_functions + 1,
		 sizeof(*b->functions)))
		return fail(b);
	i = hash_index_get(&b->function_ix,
			   hash_bytes_more(hash_bytes(&key.name, sizeof(key.name)),
					   &key.filename, sizeof(key.filename)),
			   &key, function_eq, b, b->nr_functions);
	if (i < 0)
		return fail(b);
	if (i == (int64_t)b->nr_functions) {
		key.id = i + 1;
		b->functions[b->nr_functions++] = key;
	}
	return i + 1;
}

static bool mapping_eq(void *ctx, uint32_t entry, const void *key)
{
	const struct builder *b = ctx;

	return memcmp(&b->mapping_keys[entry], key, sizeof(struct mapping_key)) == 0;
}

/* Mapping id for a frame (0 when its file is unknown), or -ENOMEM. */
static int64_t mapping_id(struct builder *b, const struct prof_frame *f)
{
	struct mapping_key key;
	bool ranged = f->map_end > f->map_start;
	PbMapping *m;
	int64_t i;

	if (b->failed)
		return -ENOMEM;
	if (!f->module)
		return 0;
	memset(&key, 0, sizeof(key));	/* padding-free, but memcmp'd: be sure */
	key.file = intern(b, f->module);
	key.build_id = intern(b, f->build_id);
	if (key.file < 0 || key.build_id < 0)
		return -ENOMEM;
	if (ranged) {
		key.start = f->map_start;
		key.end = f->map_end;
		key.pgoff = f->map_pgoff;
	}
	if (array_grow(&b->mappings, &b->cap_mappings, b->nr_mappings + 1,
		 sizeof(*b->mappings)) ||
	    array_grow(&b->mapping_keys, &b->cap_mapping_keys, b->nr_mappings + 1,
		 sizeof(*b->mapping_keys)))
		return fail(b);
	i = hash_index_get(&b->mapping_ix, hash_bytes(&key, sizeof(key)),
			   &key, mapping_eq, b, b->nr_mappings);
	if (i < 0)
		return fail(b);
	m = &b->mappings[i];
	if (i == (int64_t)b->nr_mappings) {
		perftools__profiles__mapping__init(m);
		m->id = i + 1;
		m->filename = key.file;
		m->build_id = key.build_id;
		m->memory_start = ranged ? key.start : f->address;
		m->memory_limit = ranged ? key.end : f->address + 1;
		m->file_offset = key.pgoff;
		b->mapping_keys[i] = key;
		b->nr_mappings++;
	}
	if (!ranged) {
		/* No mapping range known (kernel): cover every address seen. */
		if (f->address < m->memory_start)
			m->memory_start = f->address;
		if (f->address >= m->memory_limit)
			m->memory_limit = f->address + 1;
	}
	return i + 1;
}

/* What symbolic information a mapping's locations carry, for readers. */
static void mapping_note(struct builder *b, int64_t mid,
			 const struct prof_frame *const *frames, uint32_t n)
{
	PbMapping *m;

	if (mid <= 0)
		return;
	m = &b->mappings[mid - 1];
	m->has_inline_frames |= n > 1;
	for (uint32_t k = 0; k < n; k++) {
		m->has_functions |= frames[k]->function != NULL;
		m->has_filenames |= frames[k]->source_file != NULL;
		m->has_line_numbers |= frames[k]->line != 0;
	}
}

struct frame_run {
	const struct prof_frame *const *frames;
	uint32_t n;
};

static bool location_eq(void *ctx, uint32_t entry, const void *key)
{
	const struct builder *b = ctx;
	const struct frame_run *r = key;

	return b->loc_nframes[entry] == r->n &&
	       memcmp(b->loc_frames[entry], r->frames, r->n * sizeof(*r->frames)) == 0;
}

/* Location id for frames[0..n): inlined frames then their caller. */
static int64_t location_id(struct builder *b, const struct prof_frame *const *frames,
			   uint32_t n)
{
	struct frame_run run = { frames, n };
	const struct prof_frame *outer = frames[n - 1];
	PbLocation *loc;
	int64_t i, mid;

	if (b->failed)
		return -ENOMEM;
	if (array_grow(&b->locations, &b->cap_locations, b->nr_locations + 1,
		 sizeof(*b->locations)) ||
	    array_grow(&b->loc_frames, &b->cap_loc_frames, b->nr_locations + 1,
		 sizeof(*b->loc_frames)) ||
	    array_grow(&b->loc_nframes, &b->cap_loc_nframes, b->nr_locations + 1,
		 sizeof(*b->loc_nframes)))
		return fail(b);
	i = hash_index_get(&b->location_ix,
			   hash_bytes(frames, n * sizeof(*frames)), &run,
			   location_eq, b, b->nr_locations);
	if (i != (int64_t)b->nr_locations)
		return i < 0 ? fail(b) : i + 1;

	mid = mapping_id(b, outer);
	if (mid < 0)
		return fail(b);
	mapping_note(b, mid, frames, n);
	loc = &b->locations[i];
	perftools__profiles__location__init(loc);
	loc->id = i + 1;
	loc->mapping_id = mid;
	loc->address = outer->address;
	/* b->lines may still move: finish_tables() points loc->line into it */
	loc->n_line = n;
	if (array_grow(&b->loc_line_off, &b->cap_loc_line_off, b->nr_locations + 1,
		 sizeof(*b->loc_line_off)) ||
	    array_grow(&b->lines, &b->cap_lines, b->nr_lines + n, sizeof(*b->lines)))
		return fail(b);
	b->loc_line_off[i] = b->nr_lines;
	for (uint32_t k = 0; k < n; k++) {
		PbLine *l = &b->lines[b->nr_lines + k];
		int64_t fid = function_id(b, frames[k]);

		if (fid < 0)
			return fail(b);
		perftools__profiles__line__init(l);
		l->function_id = fid;
		l->line = frames[k]->line;
	}
	b->nr_lines += n;
	b->loc_frames[i] = frames;
	b->loc_nframes[i] = n;
	b->nr_locations++;
	return i + 1;
}

/* Sample value slots, in sample_type order. */
struct value_layout {
	int nr;
	int cpu_count, cpu_ns, off_ns, fault_bytes;	/* -1 when absent */
	/* -e alloc, as Go names heap profiles: objects and bytes, allocated
	 * and in use (the four together, or -1) */
	int alloc_objects, alloc_space, inuse_objects, inuse_space;
	int lock_count, lock_ns;	/* -e lock, as Go's mutex profile */
};

static void layout_values(const struct profile *p, struct value_layout *v)
{
	/* Like the folded writer: an event counts if recorded or present. */
	uint32_t events = p->meta.events;

	for (size_t i = 0; i < p->nr_samples; i++)
		if (p->samples[i].event < PROF_EV__COUNT)
			events |= 1u << p->samples[i].event;
	v->nr = 0;
	v->cpu_count = v->cpu_ns = v->off_ns = v->fault_bytes = -1;
	v->alloc_objects = v->alloc_space = -1;
	v->inuse_objects = v->inuse_space = -1;
	v->lock_count = v->lock_ns = -1;
	if (events & (1u << PROF_EV_CPU)) {
		v->cpu_count = v->nr++;
		v->cpu_ns = v->nr++;
	}
	if (events & (1u << PROF_EV_OFFCPU))
		v->off_ns = v->nr++;
	if (events & (1u << PROF_EV_FAULTS))
		v->fault_bytes = v->nr++;
	if (events & (1u << PROF_EV_ALLOC | 1u << PROF_EV_INUSE)) {
		v->alloc_objects = v->nr++;
		v->alloc_space = v->nr++;
		v->inuse_objects = v->nr++;
		v->inuse_space = v->nr++;
	}
	if (events & (1u << PROF_EV_LOCK)) {
		v->lock_count = v->nr++;
		v->lock_ns = v->nr++;
	}
	if (!v->nr) {	/* no event at all: still a valid, empty CPU profile */
		v->cpu_count = v->nr++;
		v->cpu_ns = v->nr++;
	}
}

/* Where the per-sample arrays live; allocated once for all samples. */
struct sample_store {
	PbSample *samples;
	PbSample **sample_ptrs;
	uint64_t *loc_ids;
	int64_t *values;
	PbLabel *labels;
	PbLabel **label_ptrs;
};

#define LABELS_PER_SAMPLE 9

/* A string label key = val at labels[*nl]. */
static int64_t label_str(struct builder *b, PbLabel *labels, size_t *nl,
			 const char *key, const char *val)
{
	int64_t k = intern(b, key), v;

	if (k < 0 || (v = intern(b, val)) < 0)
		return -ENOMEM;
	labels[*nl].key = k;
	labels[(*nl)++].str = v;
	return 0;
}

/* -e lock: which lock (the address as a number, as pprof filters it). */
static int64_t lock_labels(struct builder *b, const struct prof_sample *s,
			   PbLabel *labels, size_t *nl)
{
	int64_t k = intern(b, s->lock_addr_is_id ? "lock.id" : "lock.address");

	if (k < 0)
		return k;
	labels[*nl].key = k;
	labels[(*nl)++].num = (int64_t)s->lock_addr;
	if (s->lock_kind &&
	    label_str(b, labels, nl, "lock.kind", s->lock_kind) < 0)
		return -ENOMEM;
	if (s->lock_name &&
	    label_str(b, labels, nl, "lock.name", s->lock_name) < 0)
		return -ENOMEM;
	return 0;
}

static int build_sample(struct builder *b, const struct prof_sample *s,
			const struct value_layout *vl, PbSample *out,
			uint64_t *loc_ids, int64_t *values, PbLabel *labels,
			PbLabel **label_ptrs)
{
	const char *comm = s->process ? s->process->comm : NULL;
	uint32_t pid = s->process ? s->process->pid : 0;
	size_t nl = 0;
	int64_t k;

	perftools__profiles__sample__init(out);
	for (uint32_t i = 0; i < s->nr_frames;) {
		uint32_t n = 1;
		int64_t id;

		if (!s->frames[i]) {	/* not in the contract, but never a crash */
			i++;
			continue;
		}
		/* An inlined frame belongs to the location of the next frame. */
		while (i + n < s->nr_frames && s->frames[i + n - 1]->inlined && s->frames[i + n])
			n++;
		id = location_id(b, &s->frames[i], n);
		if (id < 0)
			return id;
		loc_ids[out->n_location_id++] = id;
		i += n;
	}
	out->location_id = loc_ids;

	for (int i = 0; i < vl->nr; i++)
		values[i] = 0;
	if (s->event == PROF_EV_CPU && vl->cpu_count >= 0) {
		values[vl->cpu_count] = s->count;
		values[vl->cpu_ns] = s->weight_ns;
	} else if (s->event == PROF_EV_OFFCPU && vl->off_ns >= 0) {
		values[vl->off_ns] = s->weight_ns;
	} else if (s->event == PROF_EV_FAULTS && vl->fault_bytes >= 0) {
		values[vl->fault_bytes] = s->weight_ns;	/* bytes */
	} else if (s->event == PROF_EV_ALLOC && vl->alloc_space >= 0) {
		values[vl->alloc_objects] = s->count;
		values[vl->alloc_space] = s->weight_ns;	/* bytes */
	} else if (s->event == PROF_EV_INUSE && vl->inuse_space >= 0) {
		values[vl->inuse_objects] = s->count;
		values[vl->inuse_space] = s->weight_ns;
	} else if (s->event == PROF_EV_LOCK && vl->lock_ns >= 0) {
		values[vl->lock_count] = s->count;
		values[vl->lock_ns] = s->weight_ns;
	}
	out->n_value = vl->nr;
	out->value = values;

	for (int i = 0; i < LABELS_PER_SAMPLE; i++) {
		perftools__profiles__label__init(&labels[i]);
		label_ptrs[i] = &labels[i];
	}
	if ((k = intern(b, "pid")) < 0)
		return k;
	labels[nl].key = k;
	labels[nl++].num = pid;
	if ((k = intern(b, "tid")) < 0)
		return k;
	labels[nl].key = k;
	labels[nl++].num = s->tid;
	if (s->thread_name) {
		if ((k = intern(b, "thread_name")) < 0)
			return k;
		labels[nl].key = k;
		if ((k = intern(b, s->thread_name)) < 0)
			return k;
		labels[nl++].str = k;
	}
	if (comm) {
		if ((k = intern(b, "comm")) < 0)
			return k;
		labels[nl].key = k;
		if ((k = intern(b, comm)) < 0)
			return k;
		labels[nl++].str = k;
	}
	if (s->event == PROF_EV_OFFCPU && prof_offcpu_state_name(s->offcpu_state)) {
		/* how the thread waited: sleeping, disk, preempted, other */
		if ((k = intern(b, "state")) < 0)
			return k;
		labels[nl].key = k;
		if ((k = intern(b, prof_offcpu_state_name(s->offcpu_state))) < 0)
			return k;
		labels[nl++].str = k;
	}
	if (s->event == PROF_EV_LOCK) {
		k = lock_labels(b, s, labels, &nl);
		if (k < 0)
			return k;
	}
	if (s->process && s->process->container_id) {
		if ((k = intern(b, "container_id")) < 0)
			return k;
		labels[nl].key = k;
		if ((k = intern(b, s->process->container_id)) < 0)
			return k;
		labels[nl++].str = k;
	}
	out->n_label = nl;
	out->label = label_ptrs;
	return 0;
}

static int build_samples(struct builder *b, const struct value_layout *vl,
			 struct sample_store *st, PbProfile *pb)
{
	const struct profile *p = b->prof;
	size_t nr_frames = 0, nf = 0;
	int err;

	for (size_t i = 0; i < p->nr_samples; i++)
		nr_frames += p->samples[i].nr_frames;
	st->samples = calloc(p->nr_samples ? p->nr_samples : 1, sizeof(*st->samples));
	st->sample_ptrs = calloc(p->nr_samples ? p->nr_samples : 1, sizeof(*st->sample_ptrs));
	st->loc_ids = calloc(nr_frames ? nr_frames : 1, sizeof(*st->loc_ids));
	st->values = calloc(p->nr_samples * vl->nr + 1, sizeof(*st->values));
	st->labels = calloc(p->nr_samples * LABELS_PER_SAMPLE + 1, sizeof(*st->labels));
	st->label_ptrs = calloc(p->nr_samples * LABELS_PER_SAMPLE + 1,
				sizeof(*st->label_ptrs));
	if (!st->samples || !st->sample_ptrs || !st->loc_ids || !st->values ||
	    !st->labels || !st->label_ptrs)
		return -ENOMEM;

	for (size_t i = 0; i < p->nr_samples; i++) {
		err = build_sample(b, &p->samples[i], vl, &st->samples[i],
				   st->loc_ids + nf, st->values + i * vl->nr,
				   st->labels + i * LABELS_PER_SAMPLE,
				   st->label_ptrs + i * LABELS_PER_SAMPLE);
		if (err)
			return err;
		nf += p->samples[i].nr_frames;
		st->sample_ptrs[i] = &st->samples[i];
	}
	pb->n_sample = p->nr_samples;
	pb->sample = st->sample_ptrs;
	return 0;
}

#define MAX_COMMENTS 12

static int add_comment(struct builder *b, int64_t *comments, size_t *n,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int add_comment(struct builder *b, int64_t *comments, size_t *n,
		       const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int64_t k;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (*n >= MAX_COMMENTS)
		return 0;	/* a comment is never worth a failed profile */
	k = intern(b, buf);
	if (k < 0)
		return k;
	comments[(*n)++] = k;
	return 0;
}


static int build_header(struct builder *b, const struct value_layout *vl,
			PbValueType types[12], PbValueType *types_ptr[12],
			PbValueType *period_type, int64_t comments[MAX_COMMENTS],
			PbProfile *pb)
{
	const struct prof_meta *m = &b->prof->meta;
	size_t nc = 0;
	int err = 0;

	for (int i = 0; i < vl->nr; i++) {
		perftools__profiles__value_type__init(&types[i]);
		types_ptr[i] = &types[i];
	}
	if (vl->cpu_count >= 0) {
		types[vl->cpu_count].type = intern(b, "samples");
		types[vl->cpu_count].unit = intern(b, "count");
		types[vl->cpu_ns].type = intern(b, "cpu");
		types[vl->cpu_ns].unit = intern(b, "nanoseconds");
	}
	if (vl->off_ns >= 0) {
		types[vl->off_ns].type = intern(b, "off_cpu");
		types[vl->off_ns].unit = intern(b, "nanoseconds");
	}
	if (vl->fault_bytes >= 0) {
		types[vl->fault_bytes].type = intern(b, "page_faults");
		types[vl->fault_bytes].unit = intern(b, "bytes");
	}
	if (vl->alloc_space >= 0) {
		types[vl->alloc_objects].type = intern(b, "alloc_objects");
		types[vl->alloc_objects].unit = intern(b, "count");
		types[vl->alloc_space].type = intern(b, "alloc_space");
		types[vl->alloc_space].unit = intern(b, "bytes");
		types[vl->inuse_objects].type = intern(b, "inuse_objects");
		types[vl->inuse_objects].unit = intern(b, "count");
		types[vl->inuse_space].type = intern(b, "inuse_space");
		types[vl->inuse_space].unit = intern(b, "bytes");
	}
	if (vl->lock_ns >= 0) {
		types[vl->lock_count].type = intern(b, "contentions");
		types[vl->lock_count].unit = intern(b, "count");
		types[vl->lock_ns].type = intern(b, "delay");
		types[vl->lock_ns].unit = intern(b, "nanoseconds");
	}
	pb->n_sample_type = vl->nr;
	pb->sample_type = types_ptr;

	perftools__profiles__value_type__init(period_type);
	if (vl->cpu_ns >= 0) {
		*period_type = types[vl->cpu_ns];
		pb->period = m->period_ns;
		pb->default_sample_type = types[vl->cpu_ns].type;
	} else if (vl->off_ns >= 0) {
		*period_type = types[vl->off_ns];
		pb->period = 1;
		pb->default_sample_type = types[vl->off_ns].type;
	} else if (vl->fault_bytes >= 0) {
		period_type->type = types[vl->fault_bytes].type;
		period_type->unit = intern(b, "count");
		pb->period = m->fault_period ? m->fault_period : 1;
		pb->default_sample_type = types[vl->fault_bytes].type;
	} else if (vl->lock_ns >= 0 && vl->alloc_space < 0) {
		/* Go's mutex profile: contentions, period 1 (every one kept) */
		*period_type = types[vl->lock_count];
		pb->period = 1;
		pb->default_sample_type = types[vl->lock_ns].type;
	} else {
		/* Go's heap profiles: period = bytes between samples */
		*period_type = types[vl->alloc_space];
		pb->period = (int64_t)m->alloc_rate;
		pb->default_sample_type = types[vl->alloc_space].type;
	}
	pb->period_type = period_type;
	pb->time_nanos = m->start_ns;
	pb->duration_nanos = m->end_ns > m->start_ns ? m->end_ns - m->start_ns : 0;

	err |= add_comment(b, comments, &nc, "ember profile of host %s, backend %s",
			   m->host_name ? m->host_name : "?",
			   m->backend ? m->backend : "?");
	if (m->freq_hz)
		err |= add_comment(b, comments, &nc, "on-CPU sampling at %" PRIu32 " Hz",
				   m->freq_hz);
	if (vl->fault_bytes >= 0 && m->fault_period)
		err |= add_comment(b, comments, &nc,
				   "page faults: one sample per %" PRIu32 " faults, weighed as bytes (a huge-page fault counts as one base page)",
				   m->fault_period);
	if (vl->alloc_space >= 0 && m->alloc_rate)
		err |= add_comment(b, comments, &nc,
				   "allocations: one sample per %" PRIu64 " bytes on average (Poisson), weighed as the bytes and objects each stands for; in use = sampled blocks not freed when the profile was taken",
				   m->alloc_rate);
	if (vl->lock_ns >= 0)
		err |= add_comment(b, comments, &nc,
				   "lock waits of %" PRIu64 " us or more; %" PRIu64 " joined with their waker, %" PRIu64 " whose waker record never came",
				   m->lock_min_ns / 1000, m->lock_wakers_joined,
				   m->lock_waker_missing);
	if (m->inuse_untracked)
		err |= add_comment(b, comments, &nc,
				   "WARNING: %" PRIu64 " sampled blocks were not followed to their free (table full): in use is understated",
				   m->inuse_untracked);
	if (m->lost)
		err |= add_comment(b, comments, &nc,
				   "WARNING: this profile lost %" PRIu64 " records", m->lost);
	if (m->bad_records)
		err |= add_comment(b, comments, &nc,
				   "WARNING: %" PRIu64 " corrupt records were skipped",
				   m->bad_records);
	if (m->dropped_stacks)
		err |= add_comment(b, comments, &nc,
				   "WARNING: %" PRIu64 " stacks dropped at the memory bound",
				   m->dropped_stacks);
	if (m->cut_user_stacks)
		err |= add_comment(b, comments, &nc,
				   "%" PRIu64 " user stacks cut short (root frame " PROF_CUT_FRAME ")",
				   m->cut_user_stacks);
	pb->n_comment = nc;
	pb->comment = comments;

	/* Any intern failure above left a negative index somewhere. */
	for (int i = 0; i < vl->nr; i++)
		if (types[i].type < 0 || types[i].unit < 0)
			err = -ENOMEM;
	return err ? -ENOMEM : 0;
}

/*
 * The executable of the process with the most samples (ties: the first
 * to get there), or NULL. pprof readers take the first mapping as the profiled
 * binary (`go tool pprof` prints it as "File:"), so it goes first.
 */
static const char *main_exe(const struct profile *p)
{
	const struct prof_process *best = NULL;
	uint64_t best_count = 0;
	uint64_t *counts;

	if (!p->nr_processes)
		return NULL;
	counts = calloc(p->nr_processes, sizeof(*counts));
	if (!counts)
		return NULL;
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct prof_process *proc = p->samples[i].process;
		size_t at;

		if (!proc || proc < p->processes ||
		    proc >= p->processes + p->nr_processes || !proc->exe_path)
			continue;
		at = (size_t)(proc - p->processes);
		counts[at] += p->samples[i].count;
		if (counts[at] > best_count) {
			best_count = counts[at];
			best = proc;
		}
	}
	free(counts);
	return best ? best->exe_path : NULL;
}

/* Move the main executable's first mapping to the front; ids stay. */
static void main_mapping_first(struct builder *b, PbMapping **mp)
{
	const char *exe = main_exe(b->prof);

	if (!exe)
		return;
	for (size_t i = 0; i < b->nr_mappings; i++) {
		PbMapping *m = mp[i];

		if (strcmp(b->strings[m->filename], exe))
			continue;
		memmove(mp + 1, mp, i * sizeof(*mp));
		mp[0] = m;
		return;
	}
}

/* Turn the builder's growable arrays into the pointer arrays protobuf-c wants. */
static int finish_tables(struct builder *b, PbProfile *pb, void **to_free, size_t *nfree)
{
	PbFunction **fp = calloc(b->nr_functions + 1, sizeof(*fp));
	PbMapping **mp = calloc(b->nr_mappings + 1, sizeof(*mp));
	PbLocation **lp = calloc(b->nr_locations + 1, sizeof(*lp));
	PbLine **linep = calloc(b->nr_lines + 1, sizeof(*linep));

	to_free[(*nfree)++] = fp;
	to_free[(*nfree)++] = mp;
	to_free[(*nfree)++] = lp;
	to_free[(*nfree)++] = linep;
	if (!fp || !mp || !lp || !linep)
		return -ENOMEM;
	for (size_t i = 0; i < b->nr_functions; i++)
		fp[i] = &b->functions[i];
	for (size_t i = 0; i < b->nr_mappings; i++)
		mp[i] = &b->mappings[i];
	main_mapping_first(b, mp);
	for (size_t i = 0; i < b->nr_lines; i++)
		linep[i] = &b->lines[i];
	for (size_t i = 0; i < b->nr_locations; i++) {
		lp[i] = &b->locations[i];
		lp[i]->line = linep + b->loc_line_off[i];
	}
	pb->n_function = b->nr_functions;
	pb->function = fp;
	pb->n_mapping = b->nr_mappings;
	pb->mapping = mp;
	pb->n_location = b->nr_locations;
	pb->location = lp;
	pb->n_string_table = b->nr_strings;
	pb->string_table = b->strings;
	return 0;
}

/* A ProtobufCBuffer that gzips into a FILE as protobuf-c appends bytes. */
struct gz_sink {
	ProtobufCBuffer base;
	z_stream zs;
	FILE *out;
	int err;
	unsigned char chunk[64 * 1024];
};

static void gz_pump(struct gz_sink *g, int flush)
{
	int ret;

	do {
		g->zs.next_out = g->chunk;
		g->zs.avail_out = sizeof(g->chunk);
		ret = deflate(&g->zs, flush);
		if (ret == Z_STREAM_ERROR) {
			g->err = -EIO;
			return;
		}
		size_t have = sizeof(g->chunk) - g->zs.avail_out;

		if (have && fwrite(g->chunk, 1, have, g->out) != have) {
			g->err = -EIO;
			return;
		}
	} while (g->zs.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
}

static void gz_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
	struct gz_sink *g = (struct gz_sink *)buf;

	while (len && !g->err) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

		g->zs.next_in = (Bytef *)data;
		g->zs.avail_in = n;
		gz_pump(g, Z_NO_FLUSH);
		data += n;
		len -= n;
	}
}

static int write_gzipped(const PbProfile *pb, FILE *out)
{
	struct gz_sink *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return -ENOMEM;
	g->base.append = gz_append;
	g->out = out;
	/* windowBits 15 + 16: a gzip header and trailer, as pprof files have */
	if (deflateInit2(&g->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return -ENOMEM;
	}
	protobuf_c_message_pack_to_buffer(&pb->base, &g->base);
	if (!g->err)
		gz_pump(g, Z_FINISH);
	deflateEnd(&g->zs);
	err = g->err;
	free(g);
	if (!err && fflush(out))
		err = -EIO;
	return err;
}

static void builder_free(struct builder *b)
{
	for (size_t i = 0; i < b->nr_strings; i++)
		free(b->strings[i]);
	free(b->strings);
	hash_index_free(&b->string_ix);
	free(b->functions);
	hash_index_free(&b->function_ix);
	free(b->mappings);
	free(b->mapping_keys);
	hash_index_free(&b->mapping_ix);
	free(b->locations);
	free(b->loc_frames);
	free(b->loc_nframes);
	hash_index_free(&b->location_ix);
	free(b->lines);
	free(b->loc_line_off);
}

int output_pprof(const struct profile *p, FILE *out)
{
	PbProfile pb = PERFTOOLS__PROFILES__PROFILE__INIT;
	PbValueType types[12], *types_ptr[12], period_type;
	int64_t comments[MAX_COMMENTS];
	struct value_layout vl;
	struct builder b = { .prof = p };
	struct sample_store st = { 0 };
	void *to_free[4];
	size_t nfree = 0;
	int err;

	layout_values(p, &vl);
	err = intern(&b, "") < 0 ? -ENOMEM : 0;	/* string_table[0] must be "" */
	if (!err)
		err = build_header(&b, &vl, types, types_ptr, &period_type, comments, &pb);
	if (!err)
		err = build_samples(&b, &vl, &st, &pb);
	if (!err)
		err = finish_tables(&b, &pb, to_free, &nfree);
	if (!err)
		err = write_gzipped(&pb, out);

	while (nfree)
		free(to_free[--nfree]);
	free(st.samples);
	free(st.sample_ptrs);
	free(st.loc_ids);
	free(st.values);
	free(st.labels);
	free(st.label_ptrs);
	builder_free(&b);
	return err;
}
