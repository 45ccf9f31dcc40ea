// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hand-built profiles for the SVG and pprof writer tests, and their writer:
 *
 *   output-fixtures OUTDIR [--bench]
 *
 * writes, for every fixture NAME, OUTDIR/NAME.svg, OUTDIR/NAME.pb.gz and
 * OUTDIR/NAME.expected.json (what the profile holds, for the independent
 * checkers in selftests/agent/output/: check_svg.py, check_pprof.js), and
 * prints PASS/FAIL lines for the checks done here in C.
 *
 * struct profile is plain data, so the writers are tested without the
 * recording pipeline. Stacks are written root first, ';'-separated; a
 * prefix gives the frame kind: "k:" kernel, "j:" JIT, "u:" unresolved
 * (label from module+offset), "x:" unresolved without module (raw address),
 * "i:" a native frame inlined into the frame before it (its caller).
 */
#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "output/output.h"

#define MAX_FRAMES_TOTAL	(1 << 22)
#define MAX_SAMPLES		(1 << 17)

static int failures;

static void check(bool ok, const char *name, const char *why)
{
	if (ok)
		printf("PASS: %s\n", name);
	else
		printf("FAIL: %s: %s\n", name, why);
	failures += !ok;
}

/*
 * Test-only stand-in for profile_freeze.c's prof_frame_label(), same contract.
 * It formats into one static buffer on purpose: writers must copy.
 */
const char *prof_frame_label(const struct profile *p, const struct prof_frame *f)
{
	static char buf[512];
	const char *base;

	(void)p;
	if (f->function)
		return f->function;
	if (f->module) {
		base = strrchr(f->module, '/');
		snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, base ? base + 1 : f->module,
			 f->module_offset);
	} else {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, f->address);
	}
	return buf;
}

/* ---- building profiles ---- */

struct frame_entry {
	uint32_t pid;
	char *token;
	struct prof_frame *frame;
};

static struct frame_entry *frame_table;
static size_t nr_frame_table;

static struct prof_process processes[16];
static size_t nr_processes;
static struct prof_sample samples[MAX_SAMPLES];
static size_t nr_samples;
static const struct prof_frame **frame_pool;
static size_t nr_frame_pool;

static void reset(void)
{
	nr_processes = nr_samples = nr_frame_pool = 0;
}

static const struct prof_process *process(uint32_t pid, const char *comm)
{
	static char exe[16][64], bid[16][48];

	for (size_t i = 0; i < nr_processes; i++)
		if (processes[i].pid == pid)
			return &processes[i];
	snprintf(exe[nr_processes], sizeof(exe[0]), "/usr/bin/%s", comm);
	snprintf(bid[nr_processes], sizeof(bid[0]), "b1d0%08" PRIx32 "feedc0de", pid);
	processes[nr_processes] = (struct prof_process){
		.pid = pid, .comm = comm, .exe_path = exe[nr_processes],
		.exe_build_id = bid[nr_processes],
		.container_id = pid == 200 ? "4f2a9c0de1b7" : NULL,
	};
	return &processes[nr_processes++];
}

/* One prof_frame per (pid, token), like the symbolizer's one per address. */
static const struct prof_frame *frame(const struct prof_process *proc, const char *token)
{
	struct prof_frame *f;
	uint64_t idx;
	char key[600];
	ENTRY e, *found;

	snprintf(key, sizeof(key), "%" PRIu32 ":%s", proc->pid, token);
	e.key = key;
	found = hsearch(e, FIND);
	if (found)
		return found->data;
	frame_table = realloc(frame_table, (nr_frame_table + 1) * sizeof(*frame_table));
	f = calloc(1, sizeof(*f));
	if (!frame_table || !f)
		abort();
	idx = nr_frame_table;
	frame_table[nr_frame_table++] = (struct frame_entry){ proc->pid, strdup(token), f };
	e.key = strdup(key);
	e.data = f;
	if (!e.key || !hsearch(e, ENTER))
		abort();

	if (!strncmp(token, "k:", 2)) {
		f->kind = PROF_FRAME_KERNEL;
		f->function = strdup(token + 2);
		f->module = "[kernel.kallsyms]";
		f->address = 0xffffffff81000000ULL + idx * 0x40;
	} else if (!strncmp(token, "j:", 2)) {
		f->kind = PROF_FRAME_JIT;
		f->function = strdup(token + 2);
		f->module = "/tmp/perf-100.map";
		f->address = 0x7f0000100000ULL + idx * 0x40;
	} else if (!strncmp(token, "u:", 2)) {
		f->kind = PROF_FRAME_UNKNOWN;
		f->module = "/usr/lib/x86_64-linux-gnu/libmystery.so.1";
		f->module_offset = 0x1000 + idx * 0x10;
		f->address = 0x7f0000200000ULL + f->module_offset;
		f->map_start = 0x7f0000200000ULL;
		f->map_end = 0x7f0000300000ULL;
	} else if (!strncmp(token, "x:", 2)) {
		f->kind = PROF_FRAME_UNKNOWN;
		f->address = 0xdead0000ULL + idx * 0x10;
	} else {
		bool inl = !strncmp(token, "i:", 2);

		f->kind = PROF_FRAME_NATIVE;
		f->function = strdup(inl ? token + 2 : token);
		f->inlined = inl;
		f->module = proc->exe_path;
		f->build_id = proc->exe_build_id;
		f->source_file = "src/app.c";
		f->line = 10 + idx;
		f->map_start = 0x400000;
		f->map_end = 0x500000;
		f->address = 0x401000 + idx * 0x20;
		f->module_offset = f->address - f->map_start;
	}
	return f;
}

/* Add a sample; stack is root first. */
static void sample(uint32_t pid, const char *comm, uint32_t tid, const char *thread,
		   enum prof_event ev, const char *stack, uint64_t count, uint64_t weight_ns)
{
	const struct prof_process *proc = process(pid, comm);
	const struct prof_frame *tmp[4096];
	char *copy = strdup(stack), *save = NULL;
	uint32_t n = 0;

	if (nr_samples >= MAX_SAMPLES)
		abort();
	for (char *tok = strtok_r(copy, ";", &save); tok && n < 4096;
	     tok = strtok_r(NULL, ";", &save))
		tmp[n++] = frame(proc, tok);
	if (nr_frame_pool + n > MAX_FRAMES_TOTAL)
		abort();
	/* leaf first */
	for (uint32_t i = 0; i < n; i++)
		frame_pool[nr_frame_pool + i] = tmp[n - 1 - i];
	samples[nr_samples++] = (struct prof_sample){
		.process = proc, .tid = tid, .thread_name = thread, .event = ev,
		.nr_frames = n, .frames = &frame_pool[nr_frame_pool],
		.count = count, .weight_ns = weight_ns,
	};
	nr_frame_pool += n;
	free(copy);
}

static struct profile make_profile(uint32_t events)
{
	struct profile p = { 0 };

	p.meta.host_name = "testhost";
	p.meta.backend = "bpf";
	p.meta.events = events;
	p.meta.freq_hz = 99;
	p.meta.period_ns = 1000000000ULL / 99;
	p.meta.start_ns = 1763726400ULL * 1000000000ULL;	/* 2025-11-21 12:00:00 UTC */
	p.meta.end_ns = p.meta.start_ns + 10ULL * 1000000000ULL;
	for (size_t i = 0; i < nr_samples; i++)
		p.meta.samples[samples[i].event] += samples[i].count;
	p.nr_processes = nr_processes;
	p.processes = processes;
	p.nr_samples = nr_samples;
	p.samples = samples;
	return p;
}

/* ---- fixtures ---- */

#define CPU (1u << PROF_EV_CPU)
#define OFF (1u << PROF_EV_OFFCPU)
#define PERIOD (1000000000ULL / 99)

static struct profile fixture_basic(void)
{
	reset();
	sample(100, "app", 100, "app", PROF_EV_CPU, "_start;main;compute;hot_loop", 50, 50 * PERIOD);
	sample(100, "app", 100, "app", PROF_EV_CPU, "_start;main;compute;i:vec_add", 20, 20 * PERIOD);
	sample(100, "app", 100, "app", PROF_EV_CPU,
	       "_start;main;read_input;k:entry_SYSCALL_64;k:do_syscall_64;k:ksys_read", 15,
	       15 * PERIOD);
	sample(100, "app", 101, "worker", PROF_EV_CPU,
	       "start_thread;worker_fn;j:Interpreter::run;j:jit_hot_method", 8, 8 * PERIOD);
	sample(100, "app", 101, "worker", PROF_EV_CPU, "start_thread;worker_fn;u:lib", 4, 4 * PERIOD);
	sample(100, "app", 101, "worker", PROF_EV_CPU, "start_thread;x:raw", 2, 2 * PERIOD);
	sample(200, "db", 200, "db", PROF_EV_CPU, "_start;main;query;k:do_syscall_64", 1, PERIOD);
	return make_profile(CPU);
}

static struct profile fixture_mixed(void)
{
	reset();
	sample(100, "app", 100, "app", PROF_EV_CPU, "_start;main;compute;hot_loop", 30, 30 * PERIOD);
	sample(100, "app", 100, "app", PROF_EV_OFFCPU,
	       "_start;main;read_input;k:entry_SYSCALL_64;k:schedule", 7, 250000000);
	sample(100, "app", 101, "worker", PROF_EV_OFFCPU,
	       "start_thread;worker_fn;k:futex_wait;k:schedule", 3, 125500000);
	return make_profile(CPU | OFF);
}

static struct profile fixture_offcpu(void)
{
	reset();
	sample(300, "sleeper", 300, "sleeper", PROF_EV_OFFCPU,
	       "_start;main;nap;k:hrtimer_nanosleep;k:schedule", 5, 5000000000ULL);
	return make_profile(OFF);
}

/* Names from arbitrary binaries: XML specials, quotes, unicode, junk bytes. */
static struct profile fixture_nasty(void)
{
	static char deep[500 * 12];
	struct profile p;
	size_t o = 0;

	reset();
	sample(400, "we<ird>&\"co'mm", 400, "t\"h<r>&", PROF_EV_CPU,
	       "main;operator<<(std::ostream&, A<B>&);std::vector<int, std::allocator<int> >::push_back(int const&);"
	       "\"quoted\" 'single' & ampersand;caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac "
	       "\xf0\x9f\x94\xa5;bad\xff\xfe utf8 \xc3;ctrl\x01\x1f char;ends ]]> cdata;"
	       "overlong\xc0\xaf surrogate\xed\xa0\x80 big\xf4\x90\x80\x80 nonchar\xef\xbf\xbe "
	       "del\x7f cut\xe6\x97;"
	       "<script>alert(1)</script>", 40, 40 * PERIOD);
	for (int i = 0; i < 500; i++)
		o += snprintf(deep + o, sizeof(deep) - o, "%sdepth_%d", i ? ";" : "", i);
	sample(400, "we<ird>&\"co'mm", 401, "deep", PROF_EV_CPU, deep, 60, 60 * PERIOD);
	p = make_profile(CPU);
	p.meta.host_name = "host<&>\"'";
	p.meta.lost = 42;
	p.meta.bad_records = 3;
	return p;
}

/*
 * Random bytes as names (a unique prefix each, so that names stay distinct
 * once invalid bytes are replaced), random kinds, inline flags and depths.
 */
static struct profile fixture_fuzz(void)
{
	static char stacks[300][64 * 48];
	static const char *const prefix[] = { "", "k:", "j:", "i:", "u:", "x:" };
	unsigned int seed = 4242;
	int names = 0;

	reset();
	for (int s = 0; s < 300; s++) {
		int depth = 1 + rand_r(&seed) % 60;
		size_t o = 0;

		for (int d = 0; d < depth; d++) {
			int len = rand_r(&seed) % 30;

			/* the root is never inlined ("i:") into a caller it lacks */
			o += snprintf(stacks[s] + o, sizeof(stacks[s]) - o, "%s%sf%d_", d ? ";" : "",
				      prefix[rand_r(&seed) % (d ? 6 : 3)], names++);
			for (int c = 0; c < len; c++) {
				char ch = 1 + rand_r(&seed) % 255;

				if (ch != ';')
					stacks[s][o++] = ch;
			}
			stacks[s][o] = 0;
		}
		sample(700 + s % 5, "fuzz", 700 + s % 7, "fuzz", s % 4 ? PROF_EV_CPU : PROF_EV_OFFCPU,
		       stacks[s], 1 + rand_r(&seed) % 50, 1000 + rand_r(&seed) % 100000000);
	}
	return make_profile(CPU | OFF);
}

static struct profile fixture_empty(void)
{
	reset();
	return make_profile(CPU);
}

/* Many small stacks: most boxes fall under 0.1% and are pruned. */
static struct profile fixture_large(void)
{
	char stack[2048];
	unsigned int seed = 12345;

	reset();
	sample(500, "big", 500, "big", PROF_EV_CPU, "_start;main;dominant", 200000, 200000 * PERIOD);
	for (int s = 0; s < 20000; s++) {
		size_t o = 0;
		int depth = 10 + rand_r(&seed) % 30;

		o += snprintf(stack + o, sizeof(stack) - o, "_start;main");
		for (int d = 0; d < depth; d++)
			o += snprintf(stack + o, sizeof(stack) - o, ";fn_%d_%d", d,
				      rand_r(&seed) % (d < 3 ? 4 : 60));
		sample(500, "big", 500 + s % 8, "big", PROF_EV_CPU, stack, 1 + rand_r(&seed) % 20,
		       PERIOD);
	}
	return make_profile(CPU);
}

/*
 * Worst case for the SVG: 1000 stacks of 40 distinct frames, each exactly
 * 0.1%: nothing merges, nothing is pruned (40,000 boxes). For --bench.
 */
static struct profile fixture_wide(void)
{
	char stack[2048];

	reset();
	for (int s = 0; s < 1000; s++) {
		size_t o = 0;

		for (int d = 0; d < 40; d++)
			o += snprintf(stack + o, sizeof(stack) - o, "%ss%d_fn%d", d ? ";" : "", s, d);
		sample(600, "wide", 600, "wide", PROF_EV_CPU, stack, 1, PERIOD);
	}
	return make_profile(CPU);
}

/* ---- expected.json ---- */

/* JSON string; invalid UTF-8 bytes become U+FFFD as the writers do. */
static void put_json_string(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', out);
	while (*s) {
		int len = 0;
		uint32_t cp = *s, min = 0;

		if (cp < 0x80)
			len = 1;
		else if ((cp & 0xe0) == 0xc0)
			len = 2, cp &= 0x1f, min = 0x80;
		else if ((cp & 0xf0) == 0xe0)
			len = 3, cp &= 0x0f, min = 0x800;
		else if ((cp & 0xf8) == 0xf0)
			len = 4, cp &= 0x07, min = 0x10000;
		for (int i = 1; i < len; i++) {
			if ((s[i] & 0xc0) != 0x80) {
				len = 0;
				break;
			}
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if (len > 1 && (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)))
			len = 0;
		if (!len) {
			fputs("\\ufffd", out);
			s++;
			continue;
		}
		if (cp == '"' || cp == '\\')
			fprintf(out, "\\%c", (int)cp);
		else if (cp < 0x20)
			fprintf(out, "\\u%04x", cp);
		else
			fwrite(s, 1, len, out);
		s += len;
	}
	fputc('"', out);
}

static const char *const kind_names[] = { "kernel", "native", "jit", "unknown" };

/* detail: each frame's kind, module... (else names only: large fixtures) */
static void put_expected(const struct profile *p, FILE *out, bool detail)
{
	fprintf(out, "{\"events\":%" PRIu32 ",\"lost\":%" PRIu64 ",\"period_ns\":%" PRIu64
		",\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"host\":",
		p->meta.events, p->meta.lost, p->meta.period_ns, p->meta.start_ns, p->meta.end_ns);
	put_json_string(out, p->meta.host_name);
	fputs(",\"samples\":[", out);
	for (size_t i = 0; i < p->nr_samples; i++) {
		const struct prof_sample *s = &p->samples[i];

		fprintf(out, "%s\n{\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"event\":\"%s\","
			"\"count\":%" PRIu64 ",\"weight_ns\":%" PRIu64 ",\"comm\":",
			i ? "," : "", s->process->pid, s->tid,
			s->event == PROF_EV_CPU ? "cpu" : "offcpu", s->count, s->weight_ns);
		put_json_string(out, s->process->comm);
		if (s->process->exe_path) {
			fputs(",\"exe\":", out);
			put_json_string(out, s->process->exe_path);
		}
		fputs(",\"thread\":", out);
		put_json_string(out, s->thread_name);
		fputs(",\"container_id\":", out);
		if (s->process->container_id)
			put_json_string(out, s->process->container_id);
		else
			fputs("null", out);
		fputs(",\"frames\":[", out);
		for (uint32_t k = 0; k < s->nr_frames; k++) {
			const struct prof_frame *f = s->frames[k];

			fprintf(out, "%s{\"name\":", k ? "," : "");
			put_json_string(out, prof_frame_label(p, f));
			if (!detail) {
				fputc('}', out);
				continue;
			}
			fprintf(out, ",\"kind\":\"%s\",\"inlined\":%s,\"line\":%" PRIu32
				",\"address\":\"%" PRIu64 "\",\"module\":",
				kind_names[f->kind], f->inlined ? "true" : "false", f->line,
				f->address);
			if (f->module)
				put_json_string(out, f->module);
			else
				fputs("null", out);
			fputs(",\"build_id\":", out);
			if (f->build_id)
				put_json_string(out, f->build_id);
			else
				fputs("null", out);
			fputc('}', out);
		}
		fputs("]}", out);
	}
	fputs("]}\n", out);
}

/* ---- main ---- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void write_fixture(const char *dir, const char *name, const struct profile *p)
{
	char path[4096], test[128];
	const char *ext[] = { "svg", "pb.gz", "expected.json" };

	for (int k = 0; k < 3; k++) {
		FILE *out;
		int err = 0;
		double t0 = now();

		snprintf(path, sizeof(path), "%s/%s.%s", dir, name, ext[k]);
		out = fopen(path, "w");
		if (!out) {
			check(false, name, "cannot create output file");
			return;
		}
		if (k == 0)
			err = output_svg(p, out);
		else if (k == 1)
			err = output_pprof(p, out);
		else
			put_expected(p, out, p->nr_samples < 1000);
		if (fclose(out))
			err = -EIO;
		if (k < 2) {
			snprintf(test, sizeof(test), "%s writer returns 0 on %s", ext[k], name);
			check(err == 0, test, strerror(-err));
			printf("# %s.%s written in %.3f s\n", name, ext[k], now() - t0);
		}
	}
}

/* A full disk must be reported, not ignored. */
static void check_write_errors(const struct profile *p)
{
	FILE *full = fopen("/dev/full", "w");

	if (!full) {
		printf("SKIP: writers report write errors: no /dev/full\n");
		return;
	}
	check(output_svg(p, full) == -EIO, "svg writer reports a full disk (-EIO)",
	      "output_svg on /dev/full did not return -EIO");
	clearerr(full);
	check(output_pprof(p, full) == -EIO, "pprof writer reports a full disk (-EIO)",
	      "output_pprof on /dev/full did not return -EIO");
	fclose(full);
}

int main(int argc, char **argv)
{
	struct profile p;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--bench"))) {
		fprintf(stderr, "usage: %s OUTDIR [--bench]\n", argv[0]);
		return 2;
	}
	frame_pool = calloc(MAX_FRAMES_TOTAL, sizeof(*frame_pool));
	if (!frame_pool || !hcreate(200000))
		return 1;
	if (argc == 3) {	/* the worst case only, for measurements */
		p = fixture_wide();
		write_fixture(argv[1], "wide", &p);
		return failures ? 1 : 0;
	}
	p = fixture_basic();
	write_fixture(argv[1], "basic", &p);
	check_write_errors(&p);
	p = fixture_mixed();
	write_fixture(argv[1], "mixed", &p);
	p = fixture_offcpu();
	write_fixture(argv[1], "offcpu", &p);
	p = fixture_nasty();
	write_fixture(argv[1], "nasty", &p);
	p = fixture_fuzz();
	write_fixture(argv[1], "fuzz", &p);
	p = fixture_empty();
	write_fixture(argv[1], "empty", &p);
	p = fixture_large();
	write_fixture(argv[1], "large", &p);
	return failures ? 1 : 0;
}
