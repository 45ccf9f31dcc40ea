// SPDX-License-Identifier: GPL-2.0-only
/*
 * py-bpf-dump: the eBPF backend on running processes with their unwind
 * tables bound (the agent's unwind service) and CPython described by a
 * struct ember_py_proc given on the command line, every sample printed
 * raw (user slots in hex, Python ones included). Used by
 * selftests/bpf/check-python.sh; the agent's own discovery of CPython is
 * not involved: the test fills the struct itself.
 *
 *   py-bpf-dump -p pid[,pid..] [-Y hex] [-N] [-T] [-d secs] [-F hz]
 *               [-e on,off] [-u frames] [-C bytes] [-q]
 *
 * -Y: the 96 bytes of struct ember_py_proc, hex, bound for every pid.
 * -N: no py_bind (native frames only, for cost comparisons).
 * -T: no unwind tables (the frame-pointer path).
 * -C: --stack-copy: bytes of user stack copied ahead of each cut or
 *     unbound sample (0, the default: none); counted as copies= and
 *     copy_bytes= (bench/stack-copy-cost.sh)
 * -V: instead, py_bind's checks: struct ember_py_proc values each refused
 *     with -EINVAL (kinds, offsets, ranges, key address...), a good one
 *     taken, unbinding; one PASS/FAIL line each (needs root: a real source)
 * -q: no record lines, only the summary lines:
 *   BOUND pid=N py=0|1
 *   STATS samples=N kept=N handler_ns=N ns_per_run=N python=N cut=N ...
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "proc/pac_mask.h"
#include "proc/proc.h"
#include "source/source.h"
#include "unwind/unwind_service.h"

#define MAX_PIDS	16

static bool quiet;
static uint64_t kept, with_py, with_cut, py_slots, offcpu;
static uint64_t copies, copy_bytes, copied;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_record(const struct ember_rec_header *h, void *ctx)
{
	const struct ember_sample *s = (const void *)h;

	(void)ctx;
	if (h->type == EMBER_REC_USER_STACK) {
		copies++;
		copy_bytes += ((const struct ember_user_stack *)h)->stack_len;
		return;
	}
	if (h->type != EMBER_REC_SAMPLE && h->type != EMBER_REC_OFFCPU)
		return;
	kept++;
	copied += !!(s->flags & EMBER_SF_USER_COPIED);
	offcpu += h->type == EMBER_REC_OFFCPU;
	with_py += !!(s->flags & EMBER_SF_PYTHON);
	with_cut += !!(s->flags & EMBER_SF_USER_CUT);
	for (unsigned int i = 0; i < s->nr_user; i++)
		py_slots += EMBER_IP_TAG(s->ips[s->nr_kernel + i]) ==
			    EMBER_IP_TAG(EMBER_IP_PY);
	if (quiet)
		return;
	printf("%s time=%llu pid=%u tid=%u flags=0x%x nk=%u nu=%u u=",
	       h->type == EMBER_REC_SAMPLE ? "SAMPLE" : "OFFCPU",
	       (unsigned long long)s->time_ns, s->pid, s->tid, s->flags,
	       s->nr_kernel, s->nr_user);
	for (unsigned int i = 0; i < s->nr_user; i++)
		printf("%s%llx", i ? "," : "",
		       (unsigned long long)s->ips[s->nr_kernel + i]);
	printf("\n");
}

static int parse_hex(const char *hex, struct ember_py_proc *py)
{
	unsigned char *b = (unsigned char *)py;

	if (strlen(hex) != 2 * sizeof(*py))
		return -1;
	for (size_t i = 0; i < sizeof(*py); i++) {
		unsigned int v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		b[i] = v;
	}
	return 0;
}

/* The good description bad_cases() breaks one field of at a time. */
static void good_proc(struct ember_py_proc *p)
{
	memset(p, 0, sizeof(*p));
	p->version = 0x030b02f0;
	p->tstate_kind = EMBER_PY_TS_TSD;
	p->entry_kind = EMBER_PY_ENTRY_FLAG;
	p->entry_value = 1;
	p->ts_frame_nr = 2;
	p->tstate_off = 0x318;
	p->key_addr = 0xa5b994;
	p->eval_start[0] = 0x52b0f0;
	p->eval_end[0] = 0x52b0f0 + 55644;
	p->ts_frame[0] = 56;
	p->ts_frame[1] = 8;
	p->fr_previous = 48;
	p->fr_code = 32;
	p->fr_instr = 56;
	p->fr_owner = 68;
	p->co_firstlineno = 72;
	p->co_argcount = 56;
	p->co_flags = 48;
}

static int bind_checks(const struct ember_source_ops *ops, struct ember_source *src)
{
	static const struct {
		const char *name;
		int field;
	} cases[] = {
		{ "tstate_kind", 0 }, { "entry_kind", 1 }, { "ts_frame_nr_0", 2 },
		{ "ts_frame_nr_3", 3 }, { "offset_4096", 4 }, { "misaligned", 5 },
		{ "frame_span", 6 }, { "eval_reversed", 7 }, { "eval_empty", 8 },
		{ "eval_kernel", 9 }, { "range1_half", 10 }, { "tsd_no_key", 11 },
		{ "tls_with_key", 12 }, { "tstate_off_far", 13 }, { "tag_mask", 14 },
		{ "reserved", 15 }, { "code_span", 16 }, { "ranges_overlap", 17 },
	};
	uint32_t pid = getpid();
	struct ember_py_proc p;
	int fails = 0, r;
	char err[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		good_proc(&p);
		switch (cases[i].field) {
		case 0: p.tstate_kind = 3; break;
		case 1: p.entry_kind = 0; break;
		case 2: p.ts_frame_nr = 0; break;
		case 3: p.ts_frame_nr = 3; break;
		case 4: p.fr_code = EMBER_PY_MAX_OFFSET; break;
		case 5: p.fr_previous = 44; break;
		case 6: p.fr_owner = 4000; break;
		case 7: p.eval_end[0] = p.eval_start[0] - 1; break;
		case 8: p.eval_end[0] = p.eval_start[0]; break;
		case 9: p.eval_start[0] = 0xffffffff81000000ULL;
			p.eval_end[0] = p.eval_start[0] + 4096; break;
		case 10: p.eval_end[1] = 0x1000; break;
		case 11: p.key_addr = 0; break;
		case 12: p.tstate_kind = EMBER_PY_TS_TLS; break;
		case 13: p.tstate_off = -(1LL << 40); break;
		case 14: p.code_tag_mask = 0xff; break;
		case 15: p.__reserved[6] = 1; break;
		case 16: p.co_flags = 1000; break;
		case 17: p.eval_start[1] = p.eval_end[0] - 16;
			p.eval_end[1] = p.eval_end[0] + 4096; break;
		}
		err[0] = '\0';
		r = ops->py_bind(src, pid, &p, err, sizeof(err));
		if (r == -EINVAL && err[0]) {
			printf("PASS: py_bind_refuses_%s (%s)\n", cases[i].name, err);
		} else {
			printf("FAIL: py_bind_refuses_%s: %d %s\n", cases[i].name, r, err);
			fails++;
		}
	}
	good_proc(&p);
	r = ops->py_bind(src, pid, &p, err, sizeof(err));
	printf("%s: py_bind_takes_good%s%s\n", r ? "FAIL" : "PASS", r ? ": " : "",
	       r ? err : "");
	fails += !!r;
	r = ops->py_bind(src, pid, NULL, err, sizeof(err)) ||
	    ops->py_bind(src, pid, NULL, err, sizeof(err)) ||
	    ops->py_bind(src, pid + 1000000, NULL, err, sizeof(err));
	printf("%s: py_unbind_is_idempotent\n", r ? "FAIL" : "PASS");
	fails += !!r;
	r = ops->py_bind(src, 0, &p, err, sizeof(err));
	printf("%s: py_bind_refuses_pid_0\n", r == -EINVAL ? "PASS" : "FAIL");
	fails += r != -EINVAL;
	return fails ? 1 : 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct ember_source_config cfg = {
		.events = EMBER_EV_ONCPU,
		.freq_hz = EMBER_DEFAULT_FREQ,
		.kstack_max = EMBER_DEFAULT_FRAMES,
		.ustack_max = EMBER_DEFAULT_FRAMES,
	};
	const struct ember_source_ops *ops = &ember_source_bpf;
	/* the test's own struct ember_py_proc, not the agent's discovery */
	struct unwind_service_opts uo = { .no_python = true };
	struct unwind_service *us = NULL;
	struct ember_source_stats st;
	struct ember_py_proc py;
	struct proc_table *procs;
	struct ember_source *src;
	uint32_t pids[MAX_PIDS];
	bool have_py = false, no_py = false, checks = false;
	size_t nr = 0;
	double secs = 3, end;
	char err[512], *tok, *save = NULL;
	int opt, ret;

	while ((opt = getopt(argc, argv, "p:Y:NTd:F:e:u:qVC:")) != -1) {
		switch (opt) {
		case 'p':
			for (tok = strtok_r(optarg, ",", &save); tok && nr < MAX_PIDS;
			     tok = strtok_r(NULL, ",", &save))
				pids[nr++] = strtoul(tok, NULL, 10);
			break;
		case 'Y':
			if (parse_hex(optarg, &py)) {
				fprintf(stderr, "py-bpf-dump: -Y wants %zu hex bytes\n",
					sizeof(py));
				return 2;
			}
			have_py = true;
			break;
		case 'N': no_py = true; break;
		case 'T': cfg.no_unwind_tables = true; break;
		case 'd': secs = atof(optarg); break;
		case 'F': cfg.freq_hz = strtoul(optarg, NULL, 10); break;
		case 'e':
			cfg.events = (strstr(optarg, "on") ? EMBER_EV_ONCPU : 0) |
				     (strstr(optarg, "off") ? EMBER_EV_OFFCPU : 0);
			break;
		case 'u': cfg.ustack_max = strtoul(optarg, NULL, 10); break;
		case 'q': quiet = true; break;
		case 'C': cfg.stack_copy_bytes = strtoul(optarg, NULL, 10); break;
		case 'V': checks = true; break;
		default:
			fprintf(stderr, "usage: see selftests/bpf/py-bpf-dump.c\n");
			return 2;
		}
	}
	if (!checks && (!nr || (!have_py && !no_py))) {
		fprintf(stderr, "py-bpf-dump: -p and one of -Y, -N are needed\n");
		return 2;
	}
	cfg.pids = pids;
	cfg.nr_pids = nr;
	ret = ops->probe(err, sizeof(err));
	if (ret) {
		fprintf(stderr, "py-bpf-dump: eBPF backend unavailable: %s\n", err);
		return 1;
	}
	if (proc_pac_insn_mask(&cfg.pac_mask))
		cfg.pac_mask = 0;
	ret = ops->open(&src, &cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "py-bpf-dump: open: %s\n", err);
		return 1;
	}
	if (checks) {
		ret = bind_checks(ops, src);
		ops->close(src);
		return ret;
	}
	procs = proc_table_new(NULL);
	if (!procs)
		return 1;
	if (!cfg.no_unwind_tables)
		us = unwind_service_start(ops, src, procs, &uo);
	for (size_t i = 0; i < nr; i++) {
		if (us)
			unwind_service_request(us, pids[i], 0);
		ret = no_py ? 0 : ops->py_bind(src, pids[i], &py, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "py-bpf-dump: py_bind %u: %s\n", pids[i], err);
			return 1;
		}
		printf("BOUND pid=%u py=%d\n", pids[i], !no_py);
	}
	if (us)
		unwind_service_flush(us, 20000);
	ret = ops->start(src);
	if (ret) {
		fprintf(stderr, "py-bpf-dump: start: %s\n", strerror(-ret));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fflush(stdout);
	end = now_s() + secs;
	while (!stop && now_s() < end) {
		ret = ops->poll(src, 100, on_record, NULL);
		if (ret < 0 && ret != -EINTR)
			break;
	}
	ops->stats(src, &st);	/* before stop: the counters of this run */
	if (us)
		unwind_service_source_stopping(us);
	ops->stop(src);
	while (ops->poll(src, 0, on_record, NULL) > 0)
		;
	printf("STATS samples=%" PRIu64 " kept=%" PRIu64 " offcpu=%" PRIu64
	       " handler_ns=%" PRIu64 " ns_per_run=%" PRIu64 " python=%" PRIu64
	       " py_slots=%" PRIu64 " cut=%" PRIu64 " ustack_cfi=%" PRIu64
	       " ustack_cut=%" PRIu64 " lost=%" PRIu64 " copies=%" PRIu64
	       " copy_bytes=%" PRIu64 " copied=%" PRIu64 "\n",
	       st.samples, kept, offcpu, st.handler_ns,
	       st.samples ? st.handler_ns / st.samples : 0, with_py, py_slots,
	       with_cut, st.ustack_cfi, st.ustack_cut, st.lost, copies,
	       copy_bytes, copied);
	if (us)
		unwind_service_stop(us);
	ops->close(src);
	proc_table_free(procs);
	return 0;
}
