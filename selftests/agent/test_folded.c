// SPDX-License-Identifier: GPL-2.0-only
/*
 * The folded writer on hand-made profiles: root-to-leaf order, comm first,
 * _[k] on kernel frames, merged identical lines, counts for on-CPU only,
 * microseconds with off-CPU, [cpu]/[offcpu] with both, labels of
 * unresolved frames, separators in names.
 */
#include <stdlib.h>
#include <string.h>
#include "output/output.h"
#include "test_util.h"

static char *fold(const struct profile *p)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (output_folded(p, f))
		printf("# output_folded failed\n");
	fclose(f);
	return out;
}

int main(void)
{
	struct prof_frame k1 = { .kind = PROF_FRAME_KERNEL, .function = "schedule" };
	struct prof_frame k0 = { .kind = PROF_FRAME_KERNEL, .function = "do_syscall_64" };
	struct prof_frame leaf = { .kind = PROF_FRAME_NATIVE, .function = "burn" };
	struct prof_frame mid = { .kind = PROF_FRAME_NATIVE, .function = "fa" };
	struct prof_frame root = { .kind = PROF_FRAME_NATIVE, .function = "main" };
	struct prof_frame unres = { .kind = PROF_FRAME_UNKNOWN, .module = "/usr/lib/libfoo.so",
				   .module_offset = 0x1234, .address = 0x7f001234 };
	struct prof_frame raw = { .kind = PROF_FRAME_UNKNOWN, .address = 0xdeadbeef };
	struct prof_frame semi = { .kind = PROF_FRAME_NATIVE, .function = "a;b\nc" };
	const struct prof_frame *s1[] = { &k1, &k0, &leaf, &mid, &root };
	const struct prof_frame *s2[] = { &leaf, &mid, &root };
	const struct prof_frame *s3[] = { &raw, &unres, &root };
	const struct prof_frame *s4[] = { &semi };
	struct prof_process proc = { .pid = 7, .comm = "prog" };
	struct prof_sample samples[] = {
		{ .process = &proc, .tid = 7, .thread_name = "prog", .event = PROF_EV_CPU,
		  .nr_frames = 5, .frames = s1, .count = 3, .weight_ns = 3000000 },
		{ .process = &proc, .tid = 7, .thread_name = "prog", .event = PROF_EV_CPU,
		  .nr_frames = 3, .frames = s2, .count = 10, .weight_ns = 10000000 },
		/* another thread, same stack: merged into one line */
		{ .process = &proc, .tid = 8, .thread_name = "worker", .event = PROF_EV_CPU,
		  .nr_frames = 3, .frames = s2, .count = 5, .weight_ns = 5000000 },
		{ .process = &proc, .tid = 7, .thread_name = "prog", .event = PROF_EV_CPU,
		  .nr_frames = 3, .frames = s3, .count = 1, .weight_ns = 1000000 },
		{ .process = NULL, .tid = 9, .thread_name = "x;y", .event = PROF_EV_CPU,
		  .nr_frames = 1, .frames = s4, .count = 2, .weight_ns = 2000000 },
		{ .process = &proc, .tid = 7, .thread_name = "prog", .event = PROF_EV_OFFCPU,
		  .nr_frames = 5, .frames = s1, .count = 4, .weight_ns = 2500400 },
		/* page faults: weight_ns holds bytes (2 samples x 64 x 4096) */
		{ .process = &proc, .tid = 7, .thread_name = "prog", .event = PROF_EV_FAULTS,
		  .nr_frames = 3, .frames = s2, .count = 2, .weight_ns = 524288 },
	};
	struct profile p = { .samples = samples, .nr_samples = 5,
			     .processes = &proc, .nr_processes = 1 };
	char *out;

	p.meta.events = 1u << PROF_EV_CPU;
	out = fold(&p);
	T_CHECK("folded_cpu_counts", out && !strcmp(out,
		"prog;main;fa;burn 15\n"
		"prog;main;fa;burn;do_syscall_64_[k];schedule_[k] 3\n"
		"prog;main;libfoo.so+0x1234;0xdeadbeef 1\n"
		"x:y;a:b c 2\n"), "got:\n%s", out ? out : "(null)");
	free(out);

	/* off-CPU only: microseconds */
	p.samples = &samples[5];
	p.nr_samples = 1;
	p.meta.events = 1u << PROF_EV_OFFCPU;
	out = fold(&p);
	T_CHECK("folded_offcpu_microseconds", out && !strcmp(out,
		"prog;main;fa;burn;do_syscall_64_[k];schedule_[k] 2500\n"),
		"got:\n%s", out ? out : "(null)");
	free(out);

	/* both: [cpu]/[offcpu] after comm, microseconds everywhere */
	p.samples = samples;
	p.nr_samples = 6;
	p.meta.events = (1u << PROF_EV_CPU) | (1u << PROF_EV_OFFCPU);
	out = fold(&p);
	T_CHECK("folded_both_events", out &&
		strstr(out, "prog;[cpu];main;fa;burn 15000\n") &&
		strstr(out, "prog;[offcpu];main;fa;burn;do_syscall_64_[k];schedule_[k] 2500\n") &&
		strstr(out, "prog;[cpu];main;fa;burn;do_syscall_64_[k];schedule_[k] 3000\n"),
		"got:\n%s", out ? out : "(null)");
	free(out);

	/* faults only: bytes, no meta frame */
	p.samples = &samples[6];
	p.nr_samples = 1;
	p.meta.events = 1u << PROF_EV_FAULTS;
	out = fold(&p);
	T_CHECK("folded_faults_bytes", out && !strcmp(out, "prog;main;fa;burn 524288\n"),
		"got:\n%s", out ? out : "(null)");
	free(out);

	/* cpu and faults: [cpu] counts, [faults] bytes */
	p.samples = samples;
	p.nr_samples = 7;
	p.meta.events = (1u << PROF_EV_CPU) | (1u << PROF_EV_FAULTS);
	out = fold(&p);
	T_CHECK("folded_cpu_and_faults", out &&
		strstr(out, "prog;[faults];main;fa;burn 524288\n") &&
		strstr(out, "prog;[cpu];main;fa;burn 15000\n"),
		"got:\n%s", out ? out : "(null)");
	free(out);

	/* empty profile: empty output, no error */
	p.nr_samples = 0;
	out = fold(&p);
	T_CHECK("folded_empty", out && !out[0], "got '%s'", out ? out : "(null)");
	free(out);

	T_CHECK("label_function", !strcmp(prof_frame_label(&p, &leaf), "burn"), "wrong");
	T_CHECK("label_module_offset",
		!strcmp(prof_frame_label(&p, &unres), "libfoo.so+0x1234"), "got %s",
		prof_frame_label(&p, &unres));
	T_CHECK("label_raw", !strcmp(prof_frame_label(&p, &raw), "0xdeadbeef"), "got %s",
		prof_frame_label(&p, &raw));
	T_EXIT();
}
