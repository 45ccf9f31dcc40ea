// SPDX-License-Identifier: GPL-2.0-only
/*
 * Test driver: encode a hand-built struct profile (profile.h is plain data)
 * with the real OTLP encoder and write the ExportProfilesServiceRequest to
 * the file named by argv[1]. check_otlp.py then decodes it independently.
 *
 * What the fixture exercises: two processes (one containerized through its
 * cgroup path, one with container_id set), kernel + native frames, an
 * inline chain, an unresolved frame (mapping + build-id only), on-CPU
 * samples with capped timestamps, off-CPU time, a stack-less sample, and a
 * stack shared by two threads (one stack entry in the dictionary).
 *
 * Totals it encodes (checked by 50-otlp.sh): on-CPU count 5+2+1+4 = 12,
 * off-CPU 123456789 ns, 2 processes.
 *
 * otlp_fixture --user-only OUT.otlp encodes only the worker's sample (no
 * kernel frame, no build-id, no timestamps): no table may then hold the
 * entries those would need.
 *
 * otlp_fixture --container CGROUP_PATH prints the container.id ember
 * derives from a cgroup path (empty line when none).
 *
 * otlp_fixture --bad-utf8 OUT.otlp encodes a profile whose function names,
 * source file, thread names, comm, exe path, build id, host name, service
 * name and extra resource attribute hold invalid UTF-8 (see bad_utf8()):
 * proto3 decoders must still accept it, with U+FFFD for each bad byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc/container.h"
#include "output/output.h"
#include "output/output_otlp.h"

#define BID_APP "0123456789abcdef0123456789abcdef01234567"
#define BID_LIBC "fedcba9876543210fedcba9876543210fedcba98"
#define CID "9d1c7f0e2b3a4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5"

static const struct prof_frame k_sys = {
	.kind = PROF_FRAME_KERNEL, .function = "do_syscall_64",
	.module = "[kernel.kallsyms]", .address = 0xffffffff81000100ULL,
};
static const struct prof_frame k_read = {
	.kind = PROF_FRAME_KERNEL, .function = "ksys_read",
	.module = "[kernel.kallsyms]", .address = 0xffffffff81200200ULL,
};
/* inline_helper is inlined into compute, at the same address. */
static const struct prof_frame u_inl = {
	.kind = PROF_FRAME_NATIVE, .function = "inline_helper",
	.module = "/usr/bin/app", .build_id = BID_APP,
	.source_file = "app.c", .line = 12, .inlined = true,
	.address = 0x401234, .map_start = 0x400000, .map_end = 0x410000,
	.map_pgoff = 0, .module_offset = 0x1234,
};
static const struct prof_frame u_compute = {
	.kind = PROF_FRAME_NATIVE, .function = "compute",
	.module = "/usr/bin/app", .build_id = BID_APP,
	.source_file = "app.c", .line = 40,
	.address = 0x401234, .map_start = 0x400000, .map_end = 0x410000,
	.map_pgoff = 0, .module_offset = 0x1234,
};
static const struct prof_frame u_main = {
	.kind = PROF_FRAME_NATIVE, .function = "main",
	.module = "/usr/bin/app", .build_id = BID_APP,
	.source_file = "app.c", .line = 80,
	.address = 0x401400, .map_start = 0x400000, .map_end = 0x410000,
	.module_offset = 0x1400,
};
static const struct prof_frame u_libc = {
	.kind = PROF_FRAME_NATIVE, .function = NULL,
	.module = "/usr/lib/x86_64-linux-gnu/libc.so.6", .build_id = BID_LIBC,
	.address = 0x7f0000012345ULL, .map_start = 0x7f0000000000ULL,
	.map_end = 0x7f0000100000ULL, .map_pgoff = 0x28000,
	.module_offset = 0x3a345,
};
static const struct prof_frame w_loop = {
	.kind = PROF_FRAME_NATIVE, .function = "worker_loop",
	.module = "/opt/w/worker", .address = 0x55550000aaaaULL,
	.map_start = 0x555500000000ULL, .map_end = 0x555500100000ULL,
};

/* Leaf first: kernel frames, then user frames, as on the stack. */
static const struct prof_frame *const st_cpu[] = {
	&k_sys, &u_inl, &u_compute, &u_main,
};
static const struct prof_frame *const st_off[] = {
	&k_read, &k_sys, &u_libc, &u_main,
};
static const struct prof_frame *const st_w[] = { &w_loop };

static const uint64_t ts_a[] = {
	1700000000100000000ULL, 1700000000200000000ULL, 1700000000300000000ULL,
};
static const uint64_t ts_b[] = {
	1700000001000000000ULL, 1700000001100000000ULL,
};

/*
 * Invalid UTF-8 of every kind, each bad byte becoming one U+FFFD; the
 * expected decoded strings are spelled out in 50-otlp.sh. String literals
 * are split after each \x escape so the next character is not eaten.
 */
static const struct prof_frame b_lone = {
	.kind = PROF_FRAME_NATIVE, .function = "lone_\xff" "_byte",
	.module = "/opt/b\xc3(ad/app\xff", .build_id = "b1d\xfe",
	.source_file = "src/\x80x.c", .line = 7,
	.address = 0x401000, .map_start = 0x400000, .map_end = 0x410000,
};
static const struct prof_frame b_trunc = {	/* 3-byte sequence cut short */
	.kind = PROF_FRAME_NATIVE, .function = "trunc_\xe2\x82" "_x",
	.module = "/opt/b\xc3(ad/app\xff", .build_id = "b1d\xfe",
	.address = 0x401100, .map_start = 0x400000, .map_end = 0x410000,
};
static const struct prof_frame b_overlong = {	/* '/' as 2 and 3 bytes */
	.kind = PROF_FRAME_NATIVE, .function = "overlong_\xc0\xaf" "_\xe0\x80\xaf",
	.module = "/opt/b\xc3(ad/app\xff", .build_id = "b1d\xfe",
	.address = 0x401200, .map_start = 0x400000, .map_end = 0x410000,
};
static const struct prof_frame b_surrogate = {	/* U+D800, U+DFFF */
	.kind = PROF_FRAME_NATIVE, .function = "surrogate_\xed\xa0\x80" "_\xed\xbf\xbf",
	.module = "/opt/b\xc3(ad/app\xff", .build_id = "b1d\xfe",
	.address = 0x401300, .map_start = 0x400000, .map_end = 0x410000,
};
static const struct prof_frame b_range = {	/* > U+10FFFF, cut 4-byte at end */
	.kind = PROF_FRAME_NATIVE, .function = "big_\xf4\x90\x80\x80" "_end\xf0\x9f\x94",
	.module = "/opt/b\xc3(ad/app\xff", .build_id = "b1d\xfe",
	.address = 0x401400, .map_start = 0x400000, .map_end = 0x410000,
};
static const struct prof_frame b_valid = {	/* valid multibyte: untouched */
	.kind = PROF_FRAME_NATIVE, .function = "na\xc3\xafve_\xce\xbb_\xf0\x9f\x94\xa5",
	.module = "/opt/b\xc3(ad/app\xff", .build_id = "b1d\xfe",
	.address = 0x401500, .map_start = 0x400000, .map_end = 0x410000,
};
/* Two names differing only in their invalid byte: one dictionary entry. */
static const struct prof_frame b_dup1 = {
	.kind = PROF_FRAME_NATIVE, .function = "dup_\xff",
	.module = "/opt/w\xffrk", .address = 0x555500000100ULL,
	.map_start = 0x555500000000ULL, .map_end = 0x555500100000ULL,
};
static const struct prof_frame b_dup2 = {
	.kind = PROF_FRAME_NATIVE, .function = "dup_\xfe",
	.module = "/opt/w\xffrk", .address = 0x555500000100ULL,
	.map_start = 0x555500000000ULL, .map_end = 0x555500100000ULL,
};
static const struct prof_frame *const st_bad[] = {
	&b_lone, &b_trunc, &b_overlong, &b_surrogate, &b_range, &b_valid,
};
static const struct prof_frame *const st_dup1[] = { &b_dup1 };
static const struct prof_frame *const st_dup2[] = { &b_dup2 };

static int bad_utf8(const char *out)
{
	struct prof_process procs[2] = {
		{ .pid = 300, .comm = "app", .exe_path = "/opt/b\xc3(ad/app\xff" },
		/* No exe path: comm names the executable. */
		{ .pid = 301, .comm = "co\xffmm\xc3", .exe_path = NULL },
	};
	struct prof_sample samples[] = {
		{ &procs[0], 300, "thr\xe2\x82", PROF_EV_CPU, 6, st_bad, 3,
		  3 * 52631578ULL, 0, NULL, 0 },
		{ &procs[1], 301, "w\xed\xb0\x80", PROF_EV_CPU, 1, st_dup1, 2,
		  2 * 52631578ULL, 0, NULL, 0 },
		{ &procs[1], 302, "w\xed\xb0\x81", PROF_EV_CPU, 1, st_dup2, 1,
		  52631578ULL, 0, NULL, 0 },
	};
	struct profile p = {
		.meta = {
			.host_name = "host\xc1\xbf", .backend = "bpf",
			.events = 1U << PROF_EV_CPU,
			.freq_hz = 19, .period_ns = 1000000000ULL / 19,
			.start_ns = 1700000000000000000ULL,
			.end_ns = 1700000010000000000ULL,
		},
		.nr_processes = 2, .processes = procs,
		.nr_samples = sizeof(samples) / sizeof(samples[0]),
		.samples = samples,
	};
	static const struct otlp_attr attrs[] = {
		{ "team\xff", "perf\xed\xa0\x80" },
	};
	struct otlp_encode_options opt = {
		.service_name = "svc\xc0\x80", .attrs = attrs, .nr_attrs = 1,
	};
	uint8_t *buf;
	size_t len;
	FILE *f;
	int ret = otlp_encode_request(&p, &opt, &buf, &len);

	if (ret) {
		fprintf(stderr, "otlp_encode_request failed: %d\n", ret);
		return 1;
	}
	f = fopen(out, "we");
	if (!f) {
		perror(out);
		free(buf);
		return 1;
	}
	ret = fwrite(buf, 1, len, f) != len;
	free(buf);
	if (fclose(f) || ret) {
		perror(out);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct prof_process procs[2] = {
		{ .pid = 100, .comm = "app", .exe_path = "/usr/bin/app",
		  .exe_build_id = BID_APP,
		  .cgroup_path = "/system.slice/docker-" CID ".scope" },
		{ .pid = 200, .comm = "worker", .exe_path = NULL,
		  .container_id = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00" },
	};
	struct prof_sample samples[] = {
		/* 5 samples, only 3 timestamps kept: split in two OTLP samples. */
		{ &procs[0], 101, "app-main", PROF_EV_CPU, 4, st_cpu, 5,
		  5 * 52631578ULL, 3, ts_a, 0 },
		/* Same stack, another thread: same stack_index. */
		{ &procs[0], 102, "app-io", PROF_EV_CPU, 4, st_cpu, 2,
		  2 * 52631578ULL, 2, ts_b, 0 },
		/* No frames at all (stack index 0 is legal). */
		{ &procs[0], 101, "app-main", PROF_EV_CPU, 0, NULL, 1,
		  52631578ULL, 0, NULL, 0 },
		{ &procs[0], 103, "app-io", PROF_EV_OFFCPU, 4, st_off, 2,
		  123456789ULL, 0, NULL, 0 },
		{ &procs[1], 200, "worker", PROF_EV_CPU, 1, st_w, 4,
		  4 * 52631578ULL, 0, NULL, 0 },
	};
	struct profile p = {
		.meta = {
			.host_name = "fixture-host", .backend = "bpf",
			.events = (1U << PROF_EV_CPU) | (1U << PROF_EV_OFFCPU),
			.freq_hz = 19, .period_ns = 1000000000ULL / 19,
			.start_ns = 1700000000000000000ULL,
			.end_ns = 1700000010000000000ULL,
		},
		.nr_processes = 2, .processes = procs,
		.nr_samples = sizeof(samples) / sizeof(samples[0]),
		.samples = samples,
	};
	FILE *f;
	int ret;

	if (argc == 3 && !strcmp(argv[1], "--container")) {
		char id[CONTAINER_ID_LEN + 1];

		printf("%s\n", container_id_from_cgroup(argv[2], id, sizeof(id)) ? id : "");
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--bad-utf8"))
		return bad_utf8(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--user-only")) {
		p.samples = &samples[4];
		p.nr_samples = 1;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s [--user-only|--bad-utf8] OUT.otlp\n", argv[0]);
		return 2;
	}
	f = fopen(argv[1], "we");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	ret = output_otlp(&p, f);
	if (fclose(f) || ret) {
		fprintf(stderr, "output_otlp failed: %d\n", ret);
		return 1;
	}
	return 0;
}
