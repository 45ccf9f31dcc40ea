// SPDX-License-Identifier: GPL-2.0-only
/*
 * -e lock through the writers: a profile built from synthetic lock
 * records (a wait joined with its waker, a wait without one, a kernel
 * mmap_lock wait) written as folded stacks, pprof and OTLP, and read back:
 * folded lines in offwaketime's order, pprof's contentions/count and
 * delay/nanoseconds with lock.* labels and the [lock ...]/[waker COMM]
 * frames as locations, OTLP's two profiles with ember.lock.* attributes.
 *
 * With a directory argument (suite 12) the files are also left there
 * (lock.folded, lock.svg, lock.pb.gz, lock.otlp) for readers outside C:
 * protoc, pprof-format, go tool pprof, ember decode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "aggregate/aggregate.h"
#include "output/output.h"
#include "output/output_otlp.h"
#include "source/source.h"
#include "gen/pprof/profile.pb-c.h"
#include "gen/opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "test_util.h"

#define P 4000000201u
#define W 4000000202u
#define FUTEX_ADDR 0x7f0000001000ull

static uint64_t rec[1024];

static const struct ember_rec_header *lock_rec(uint32_t tid, uint64_t start,
					       uint64_t end, uint64_t addr,
					       uint8_t kind, uint16_t flags,
					       uint32_t waker_tid)
{
	struct ember_sample *s = (void *)rec;
	struct ember_lock_wait *w;

	memset(rec, 0, sizeof(rec));
	s->hdr.type = EMBER_REC_LOCK;
	s->hdr.size = sizeof(*s) + 8 * (2 + 3);
	s->pid = P;
	s->tid = tid;
	s->nr_user = 2;
	/* whole stacks, as a CFI walk that reached _start reports them */
	s->flags = EMBER_SF_USER_COMPLETE;
	s->time_ns = end;
	s->weight_ns = end - start;
	strcpy(s->comm, "waiter");
	s->ips[0] = 0x100;
	s->ips[1] = 0x101;
	w = (struct ember_lock_wait *)EMBER_LOCK_WAIT(s);
	w->addr = addr;
	w->start_ns = start;
	w->waker_tid = waker_tid;
	w->kind = kind;
	w->flags = flags;
	return &s->hdr;
}

static const struct ember_rec_header *waker_rec(uint32_t tid, uint64_t start)
{
	struct ember_sample *s = (void *)rec;
	struct ember_lock_waker *k;

	memset(rec, 0, sizeof(rec));
	s->hdr.type = EMBER_REC_LOCK_WAKER;
	s->hdr.size = sizeof(*s) + 8 * (3 + 3);
	s->pid = W;
	s->tid = W;
	s->nr_kernel = 1;
	s->nr_user = 2;
	s->time_ns = start + 1000;
	s->flags = EMBER_SF_USER_COMPLETE;	/* a whole stack */
	strcpy(s->comm, "unlocker");
	s->ips[0] = 0x900;
	s->ips[1] = 0x901;
	s->ips[2] = 0x902;
	k = (struct ember_lock_waker *)EMBER_LOCK_WAKER(s);
	k->start_ns = start;
	k->addr = FUTEX_ADDR;
	k->waiter_pid = P;
	k->waiter_tid = tid;
	return &s->hdr;
}

static struct profile *build(struct profile_builder *pb)
{
	struct prof_meta meta = { .host_name = "testhost", .backend = "bpf",
				  .events = 1u << PROF_EV_LOCK,
				  .lock_min_ns = 10000,
				  .start_ns = 1763726400ULL * 1000000000ULL,
				  .end_ns = 1763726410ULL * 1000000000ULL };

	pb_add_record(pb, waker_rec(P, 1000));
	pb_add_record(pb, lock_rec(P, 1000, 50000, FUTEX_ADDR, EMBER_LOCK_FUTEX, 0, W));
	pb_add_record(pb, lock_rec(P, 2000, 60000, FUTEX_ADDR, EMBER_LOCK_FUTEX, 0, W));
	pb_add_record(pb, waker_rec(P, 2000));
	pb_add_record(pb, lock_rec(P, 3000, 5003000, FUTEX_ADDR, EMBER_LOCK_FUTEX,
				   EMBER_LOCK_F_TIMEOUT, 0));
	pb_add_record(pb, lock_rec(P, 4000, 2004000, 0xffff888000abc000ull,
				   EMBER_LOCK_KERNEL, EMBER_LOCK_F_WRITE |
				   EMBER_LOCK_F_MMAP_LOCK, 0));
	return pb_finish(pb, &meta);
}

static char *to_mem(int (*fn)(const struct profile *, FILE *),
		    const struct profile *p, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	if (fn(p, f)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static void check_folded(const struct profile *p)
{
	size_t len;
	char *out = to_mem(output_folded, p, &len);

	T_CHECK("lock_folded_waker_order", out && strstr(out,
		"waiter;0x101;0x100;[lock 0x7f0000001000 futex];0x900_[k];0x901;"
		"0x902;[waker unlocker] 107\n"), "folded:\n%s", out ? out : "(failed)");
	T_CHECK("lock_folded_no_waker", out && strstr(out,
		"waiter;0x101;0x100;[lock 0x7f0000001000 futex] 5000\n") &&
		strstr(out, "waiter;0x101;0x100;[lock mmap_lock rwsem-write] 2000\n"),
		"folded:\n%s", out ? out : "(failed)");
	free(out);
}

static uint8_t *gunzip(const char *in, size_t len, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream z = { 0 };

	if (!out || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (inflate(&z, Z_FINISH) != Z_STREAM_END) {
		inflateEnd(&z);
		free(out);
		return NULL;
	}
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}

static bool pprof_has_function(const Perftools__Profiles__Profile *pr,
			       const char *name)
{
	for (size_t i = 0; i < pr->n_function; i++)
		if (!strcmp(pr->string_table[pr->function[i]->name], name))
			return true;
	return false;
}

static void check_pprof(const struct profile *p)
{
	size_t len = 0, raw_len = 0;
	char *gz = to_mem(output_pprof, p, &len);
	uint8_t *raw = gz ? gunzip(gz, len, &raw_len) : NULL;
	Perftools__Profiles__Profile *pr = raw ?
		perftools__profiles__profile__unpack(NULL, raw_len, raw) : NULL;
	bool types = false, labels = false;
	char **st;

	if (!pr) {
		T_CHECK("lock_pprof_decodes", false, "no profile");
		goto out;
	}
	st = pr->string_table;
	types = pr->n_sample_type == 2 &&
		!strcmp(st[pr->sample_type[0]->type], "contentions") &&
		!strcmp(st[pr->sample_type[0]->unit], "count") &&
		!strcmp(st[pr->sample_type[1]->type], "delay") &&
		!strcmp(st[pr->sample_type[1]->unit], "nanoseconds") &&
		pr->period_type && !strcmp(st[pr->period_type->type], "contentions") &&
		pr->period == 1 && !strcmp(st[pr->default_sample_type], "delay");
	T_CHECK("lock_pprof_sample_types", types, "%zu sample types",
		pr->n_sample_type);
	for (size_t i = 0; i < pr->n_sample; i++) {
		const Perftools__Profiles__Sample *s = pr->sample[i];
		bool addr = false, kind = false;

		for (size_t j = 0; j < s->n_label; j++) {
			const char *k = st[s->label[j]->key];

			addr |= !strcmp(k, "lock.address") &&
				(uint64_t)s->label[j]->num == FUTEX_ADDR;
			kind |= !strcmp(k, "lock.kind") &&
				!strcmp(st[s->label[j]->str], "futex");
		}
		if (addr && kind && s->n_value == 2 && s->value[0] == 2 &&
		    s->value[1] == 107000)
			labels = true;
	}
	T_CHECK("lock_pprof_labels_values", labels,
		"no sample with lock.address, lock.kind, 2 contentions, 107 us");
	T_CHECK("lock_pprof_lock_frames",
		pprof_has_function(pr, "[lock 0x7f0000001000 futex]") &&
		pprof_has_function(pr, "[waker unlocker]") &&
		pprof_has_function(pr, "[lock mmap_lock rwsem-write]"),
		"lock/waker frames missing from the function table");
out:
	if (pr)
		perftools__profiles__profile__free_unpacked(pr, NULL);
	free(raw);
	free(gz);
}

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest Req;

static void check_otlp(const struct profile *p)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	Req *req = NULL;
	bool count = false, delay = false, attrs = false, frames = false;
	char **st;

	if (otlp_encode_request(p, NULL, &buf, &len) ||
	    !(req = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(NULL, len, buf))) {
		T_CHECK("lock_otlp_decodes", false, "encode or decode failed");
		free(buf);
		return;
	}
	st = req->dictionary->string_table;
	for (size_t r = 0; r < req->n_resource_profiles; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp =
			req->resource_profiles[r]->scope_profiles[0];

		for (size_t i = 0; i < sp->n_profiles; i++) {
			const Opentelemetry__Proto__Profiles__V1development__Profile *pr =
				sp->profiles[i];
			const char *t = st[pr->sample_type->type_strindex];
			const char *u = st[pr->sample_type->unit_strindex];
			uint64_t total = 0;

			for (size_t j = 0; j < pr->n_samples; j++)
				for (size_t k = 0; k < pr->samples[j]->n_values; k++)
					total += (uint64_t)pr->samples[j]->values[k];
			if (!strcmp(t, "contentions") && !strcmp(u, "count"))
				count = total == 4;
			if (!strcmp(t, "delay") && !strcmp(u, "nanoseconds"))
				delay = total == 107000 + 5000000 + 2000000;
		}
	}
	for (size_t i = 0; i < req->dictionary->n_attribute_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *a =
			req->dictionary->attribute_table[i];

		if (!strcmp(st[a->key_strindex], "ember.lock.address") && a->value &&
		    (uint64_t)a->value->int_value == FUTEX_ADDR)
			attrs = true;
	}
	for (size_t i = 0; i < req->dictionary->n_function_table; i++)
		frames |= !strcmp(st[req->dictionary->function_table[i]->name_strindex],
				  "[waker unlocker]");
	T_CHECK("lock_otlp_two_profiles", count && delay,
		"contentions/count %d, delay/nanoseconds %d", count, delay);
	T_CHECK("lock_otlp_attributes_frames", attrs && frames,
		"ember.lock.address %d, [waker unlocker] %d", attrs, frames);
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(req, NULL);
	free(buf);
}

static void write_files(const struct profile *p, const char *dir)
{
	static const struct { const char *ext; int (*fn)(const struct profile *, FILE *); } w[] = {
		{ "folded", output_folded }, { "svg", output_svg },
		{ "pb.gz", output_pprof }, { "otlp", output_otlp },
	};
	char path[4096];

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		FILE *f;
		int err;

		snprintf(path, sizeof(path), "%s/lock.%s", dir, w[i].ext);
		f = fopen(path, "w");
		err = f ? w[i].fn(p, f) : -errno;
		if (f && fclose(f))
			err = -EIO;
		T_CHECK(w[i].ext, !err, "writing %s: %s", path, strerror(-err));
	}
}

int main(int argc, char **argv)
{
	struct profile_builder *pb = pb_new(NULL, NULL);
	struct profile *p = build(pb);
	size_t len;
	char *svg;

	if (!p) {
		T_CHECK("lock_profile_built", false, "pb_finish failed");
		T_EXIT();
	}
	check_folded(p);
	check_pprof(p);
	check_otlp(p);
	svg = to_mem(output_svg, p, &len);
	T_CHECK("lock_svg_frames", svg && strstr(svg, "[lock 0x7f0000001000 futex]") &&
		strstr(svg, "[waker unlocker]") && strstr(svg, "lock: 4 contentions"),
		"svg lacks the lock frames or header");
	free(svg);
	if (argc > 1)
		write_files(p, argv[1]);
	profile_free(p);
	pb_free(pb);
	T_EXIT();
}
