// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember decode FILE.otlp: print an ExportProfilesServiceRequest (what
 * `ember record -o FILE.otlp` writes and `ember run` sends) readably:
 * resources, profiles, samples with their stacks resolved through the
 * dictionary. Also reads gzip-compressed files. Every index is checked
 * before use: a hostile or truncated file prints "<bad index>" markers and
 * makes the exit status 1, never a crash.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include "cli/commands.h"
#include "gen/opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

/*
 * Inputs come from anywhere: a gzip bomb of 1 MB inflating to 512 MiB cost
 * 533 MB. Refuse what inflates past this (--max-bytes raises it).
 */
#define DECODE_DEFAULT_MAX (64u << 20)
#define DECODE_LIMIT_MAX (4096ull << 20)
static size_t decode_max_bytes = DECODE_DEFAULT_MAX;

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest Req;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dict;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;

struct dec {
	const Dict *d;
	FILE *out;
	int bad;		/* count of invalid references seen */
	bool summary;		/* no per-sample stacks */
};

static const char *str(struct dec *x, int32_t i)
{
	if (!x->d || i < 0 || (size_t)i >= x->d->n_string_table) {
		x->bad++;
		return "<bad string index>";
	}
	return x->d->string_table[i] ? x->d->string_table[i] : "";
}

static void print_value(struct dec *x, const AnyValue *v)
{
	if (!v) {
		fputs("<unset>", x->out);
		return;
	}
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		fprintf(x->out, "\"%s\"", v->string_value ? v->string_value : "");
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		fprintf(x->out, "%" PRId64, v->int_value);
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
		fputs(v->bool_value ? "true" : "false", x->out);
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
		fprintf(x->out, "%g", v->double_value);
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX:
		fprintf(x->out, "\"%s\"", str(x, v->string_value_strindex));
		break;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BYTES_VALUE:
		fprintf(x->out, "<%zu bytes>", v->bytes_value.len);
		break;
	default:
		fputs("<complex value>", x->out);
		break;
	}
}

/* " key=value" for each attribute_table index. */
static void print_attrs(struct dec *x, const int32_t *idx, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *a;

		if (idx[i] <= 0 || (size_t)idx[i] >= x->d->n_attribute_table) {
			x->bad++;
			fprintf(x->out, " <bad attribute index %d>", idx[i]);
			continue;
		}
		a = x->d->attribute_table[idx[i]];
		fprintf(x->out, " %s=", str(x, a->key_strindex));
		/* -e lock's addresses read as addresses */
		if (a->value && a->value->value_case ==
		    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE &&
		    !strcmp(str(x, a->key_strindex), "ember.lock.address"))
			fprintf(x->out, "0x%" PRIx64, (uint64_t)a->value->int_value);
		else
			print_value(x, a->value);
	}
}

static void print_location(struct dec *x, int32_t li, unsigned int depth)
{
	const Opentelemetry__Proto__Profiles__V1development__Location *l;
	const Opentelemetry__Proto__Profiles__V1development__Mapping *m = NULL;

	if (li <= 0 || (size_t)li >= x->d->n_location_table) {
		x->bad++;
		fprintf(x->out, "      #%-3u <bad location index %d>\n", depth, li);
		return;
	}
	l = x->d->location_table[li];
	if (l->mapping_index < 0 || (size_t)l->mapping_index >= x->d->n_mapping_table)
		x->bad++;
	else if (l->mapping_index)
		m = x->d->mapping_table[l->mapping_index];
	if (!l->n_lines) {
		/* Unsymbolized: module + file offset, as a backend would. */
		fprintf(x->out, "      #%-3u 0x%" PRIx64, depth, l->address);
		if (m)
			fprintf(x->out, " %s+0x%" PRIx64, str(x, m->filename_strindex),
				l->address >= m->memory_start ?
				l->address - m->memory_start + m->file_offset : 0);
		print_attrs(x, l->attribute_indices, l->n_attribute_indices);
		fputc('\n', x->out);
		return;
	}
	for (size_t i = 0; i < l->n_lines; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Line *ln = l->lines[i];
		const Opentelemetry__Proto__Profiles__V1development__Function *f = NULL;

		if (ln->function_index <= 0 ||
		    (size_t)ln->function_index >= x->d->n_function_table)
			x->bad++;
		else
			f = x->d->function_table[ln->function_index];
		fprintf(x->out, "      #%-3u %s", depth,
			f ? str(x, f->name_strindex) : "<bad function index>");
		if (f && f->filename_strindex && ln->line)
			fprintf(x->out, " %s:%" PRId64, str(x, f->filename_strindex), ln->line);
		if (i + 1 < l->n_lines)
			fputs(" (inlined)", x->out);
		if (m)
			fprintf(x->out, " [%s]", str(x, m->filename_strindex));
		if (i + 1 == l->n_lines)
			print_attrs(x, l->attribute_indices, l->n_attribute_indices);
		fputc('\n', x->out);
	}
}

static void print_time(FILE *out, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000ULL);
	struct tm tm;
	char buf[64];

	if (gmtime_r(&t, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm))
		fprintf(out, "%s.%03uZ", buf, (unsigned int)(ns / 1000000 % 1000));
	else
		fprintf(out, "%" PRIu64, ns);
}

static void print_profile(struct dec *x,
			  const Opentelemetry__Proto__Profiles__V1development__Profile *p,
			  size_t pi)
{
	uint64_t total = 0;

	for (size_t i = 0; i < p->n_samples; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Sample *s = p->samples[i];

		if (s->n_values)
			for (size_t j = 0; j < s->n_values; j++)
				total += (uint64_t)s->values[j];
		else
			total += s->n_timestamps_unix_nano;
	}
	fprintf(x->out, "  profile %zu: %s/%s", pi,
		p->sample_type ? str(x, p->sample_type->type_strindex) : "?",
		p->sample_type ? str(x, p->sample_type->unit_strindex) : "?");
	if (p->period_type)
		fprintf(x->out, ", period %" PRId64 " %s/%s", p->period,
			str(x, p->period_type->type_strindex),
			str(x, p->period_type->unit_strindex));
	fputs(", start ", x->out);
	print_time(x->out, p->time_unix_nano);
	fprintf(x->out, ", %.3f s, %zu samples, total %" PRIu64,
		(double)p->duration_nano / 1e9, p->n_samples, total);
	/* a time (off_cpu, -e lock's delay) also in seconds */
	if (p->sample_type &&
	    !strcmp(str(x, p->sample_type->unit_strindex), "nanoseconds"))
		fprintf(x->out, " (%.6f s)", (double)total / 1e9);
	fputc('\n', x->out);
	if (x->summary)
		return;
	for (size_t i = 0; i < p->n_samples; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Sample *s = p->samples[i];
		uint64_t v = 0;

		for (size_t j = 0; j < s->n_values; j++)
			v += (uint64_t)s->values[j];
		if (!s->n_values)
			v = s->n_timestamps_unix_nano;
		fprintf(x->out, "    sample %zu: value %" PRIu64, i, v);
		if (s->n_timestamps_unix_nano)
			fprintf(x->out, " (%zu timestamps)", s->n_timestamps_unix_nano);
		print_attrs(x, s->attribute_indices, s->n_attribute_indices);
		fputc('\n', x->out);
		if (s->stack_index < 0 || (size_t)s->stack_index >= x->d->n_stack_table) {
			x->bad++;
			fprintf(x->out, "      <bad stack index %d>\n", s->stack_index);
			continue;
		}
		{
			const Opentelemetry__Proto__Profiles__V1development__Stack *st =
				x->d->stack_table[s->stack_index];

			for (size_t j = 0; j < st->n_location_indices; j++)
				print_location(x, st->location_indices[j], (unsigned int)j);
		}
	}
}

/* Check the zero entries receivers insist on. */
static void check_dict(struct dec *x)
{
	const Dict *d = x->d;

	if (!d->n_string_table || (d->string_table[0] && *d->string_table[0])) {
		fprintf(x->out, "warning: string_table[0] is not \"\"\n");
		x->bad++;
	}
	if (!d->n_mapping_table || !d->n_location_table || !d->n_function_table ||
	    !d->n_link_table || !d->n_attribute_table || !d->n_stack_table) {
		fprintf(x->out, "warning: a dictionary table lacks its zero entry\n");
		x->bad++;
	}
	if (d->n_link_table && (d->link_table[0]->trace_id.len ||
				d->link_table[0]->span_id.len)) {
		fprintf(x->out, "warning: link_table[0] is not empty\n");
		x->bad++;
	}
}

/* Whole file, gunzipped when it starts with the gzip magic. */
static uint8_t *read_input(const char *path, size_t *len)
{
	gzFile gz = gzopen(path, "rb");	/* reads plain files as they are */
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	int r;

	if (!gz || !buf) {
		if (gz)
			gzclose(gz);
		free(buf);
		return NULL;
	}
	while ((r = gzread(gz, buf + n, (unsigned int)(cap - n))) > 0) {
		n += (size_t)r;
		if (n == cap) {
			uint8_t *nb;

			if (cap >= decode_max_bytes) {
				errno = EFBIG;
				r = -1;
				break;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				r = -1;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	gzclose(gz);
	if (r < 0) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static void usage(FILE *f)
{
	fputs("usage: ember decode [--summary] [--max-bytes N] FILE.otlp\n"
	      "Print an OTLP ExportProfilesServiceRequest (from `ember record -o\n"
	      "FILE.otlp` or captured from `ember run`) readably. Exit status 1\n"
	      "when the file does not decode or refers to missing entries.\n"
	      "Input larger than --max-bytes once decompressed (default 64 MiB)\n"
	      "is refused.\n", f);
}

int cmd_decode(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "summary", no_argument, NULL, 's' },
		{ "max-bytes", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct dec x = { .out = stdout };
	uint8_t *buf;
	size_t len = 0;
	Req *req;
	int c;

	optind = 1;
	decode_max_bytes = DECODE_DEFAULT_MAX;
	while ((c = getopt_long(argc, argv, "shm:", opts, NULL)) != -1) {
		if (c == 'm') {
			char *end;
			unsigned long long v;

			errno = 0;
			v = strtoull(optarg, &end, 10);
			if (errno || *end || !v || v > DECODE_LIMIT_MAX ||
			    optarg[0] == '-') {
				fprintf(stderr, "ember decode: --max-bytes wants 1..%llu "
					"bytes, not '%s'\n", DECODE_LIMIT_MAX, optarg);
				return 2;
			}
			decode_max_bytes = (size_t)v;
		} else if (c == 's') {
			x.summary = true;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	errno = 0;
	buf = read_input(argv[optind], &len);
	if (!buf) {
		if (errno == EFBIG)
			fprintf(stderr, "ember decode: %s is larger than %zu bytes once "
				"decompressed (--max-bytes raises the limit)\n",
				argv[optind], decode_max_bytes);
		else
			fprintf(stderr, "ember decode: cannot read %s: %s\n", argv[optind],
				strerror(errno ? errno : EIO));
		return 1;
	}
	req = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(NULL, len, buf);
	free(buf);
	if (!req) {
		fprintf(stderr, "ember decode: %s is not an OTLP profiles request "
			"(ExportProfilesServiceRequest, opentelemetry-proto v1.10+)\n",
			argv[optind]);
		return 1;
	}
	if (!req->dictionary) {
		fprintf(stderr, "ember decode: %s has no dictionary\n", argv[optind]);
		opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(req, NULL);
		return 1;
	}
	x.d = req->dictionary;
	printf("ExportProfilesServiceRequest: %zu bytes, %zu resources; dictionary: "
	       "%zu strings, %zu functions, %zu locations, %zu mappings, %zu stacks, "
	       "%zu attributes, %zu links\n", len, req->n_resource_profiles,
	       x.d->n_string_table, x.d->n_function_table, x.d->n_location_table,
	       x.d->n_mapping_table, x.d->n_stack_table, x.d->n_attribute_table,
	       x.d->n_link_table);
	check_dict(&x);
	for (size_t r = 0; r < req->n_resource_profiles; r++) {
		const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
			req->resource_profiles[r];

		printf("resource %zu:", r);
		for (size_t i = 0; rp->resource && i < rp->resource->n_attributes; i++) {
			const Opentelemetry__Proto__Common__V1__KeyValue *kv =
				rp->resource->attributes[i];

			printf(" %s=", kv->key && *kv->key ? kv->key :
			       str(&x, kv->key_strindex));
			print_value(&x, kv->value);
		}
		putchar('\n');
		for (size_t s = 0; s < rp->n_scope_profiles; s++)
			for (size_t p = 0; p < rp->scope_profiles[s]->n_profiles; p++)
				print_profile(&x, rp->scope_profiles[s]->profiles[p], p);
	}
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(req, NULL);
	if (x.bad) {
		fprintf(stderr, "ember decode: %d invalid reference(s) in %s\n", x.bad,
			argv[optind]);
		return 1;
	}
	return 0;
}
