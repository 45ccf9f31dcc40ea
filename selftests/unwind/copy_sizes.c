// SPDX-License-Identifier: GPL-2.0-only
/*
 * copy-sizes: which --stack-copy size covers real programs (issue 25 item
 * 4). The eBPF backend in test mode (EMBER_F_STACK_COPY: every sample of
 * the given processes is followed by 16 KiB of its user stack) and the
 * stack replay's unwinder (libdwfl over the live process, oracle.h) on
 * the first 4, 8, 12 and 16 KiB of each copy: how many samples reach the
 * outermost frame (_start, a thread start) with each.
 *
 *   copy-sizes -p pid[,pid..] [-d secs] [-F hz]
 * prints: SIZES samples=N whole4096=N frames4096=F ... whole16384=N
 *         frames16384=F mean_bytes16384=B (frames: per sample)
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
#include "source/source.h"
#include "unwind/oracle.h"

#define MAX_PIDS	16
#define NR_SIZES	4

static const uint32_t sizes[NR_SIZES] = { 4096, 8192, 12288, 16384 };
static uint64_t samples, whole[NR_SIZES], used[NR_SIZES], frames[NR_SIZES];
static struct oracle *oracle;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_record(const struct ember_rec_header *h, void *ctx)
{
	const struct ember_user_stack *u = (const void *)h;
	uint64_t ips[EMBER_MAX_FRAMES];

	(void)ctx;
	if (h->type != EMBER_REC_USER_STACK || !ember_record_valid(h, h->size))
		return;
	samples++;
	for (int i = 0; i < NR_SIZES; i++) {
		struct oracle_stack os = {
			.pid = u->pid, .tid = u->tid, .stack = u->stack,
			.stack_len = u->stack_len < sizes[i] ? u->stack_len : sizes[i],
		};
		int complete = 0, n;

		oracle_regs_from_record(u->regs, os.regs, &os.pac_mask);
		n = oracle_unwind(oracle, &os, ips, EMBER_MAX_FRAMES, &complete);
		if (n > 0 && complete)
			whole[i]++;
		if (n > 0)
			frames[i] += (uint64_t)n;
		used[i] += os.stack_len;
	}
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
		.freq_hz = 199,
		.kstack_max = 0,
		.ustack_max = EMBER_DEFAULT_FRAMES,
		.stack_copy = true,
		.no_unwind_tables = true,
	};
	const struct ember_source_ops *ops = &ember_source_bpf;
	struct ember_source *src;
	uint32_t pids[MAX_PIDS];
	char err[512], *tok, *save = NULL;
	double secs = 3, end;
	size_t nr = 0;
	int opt, ret;

	while ((opt = getopt(argc, argv, "p:d:F:")) != -1) {
		switch (opt) {
		case 'p':
			for (tok = strtok_r(optarg, ",", &save); tok && nr < MAX_PIDS;
			     tok = strtok_r(NULL, ",", &save))
				pids[nr++] = strtoul(tok, NULL, 10);
			break;
		case 'd': secs = atof(optarg); break;
		case 'F': cfg.freq_hz = strtoul(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: copy-sizes -p pid[,pid..] [-d secs] [-F hz]\n");
			return 2;
		}
	}
	if (!nr) {
		fprintf(stderr, "copy-sizes: -p is needed\n");
		return 2;
	}
	cfg.pids = pids;
	cfg.nr_pids = nr;
	oracle = oracle_new(0);
	ret = ops->probe(err, sizeof(err));
	if (!ret)
		ret = ops->open(&src, &cfg, err, sizeof(err));
	if (ret || !oracle) {
		fprintf(stderr, "copy-sizes: eBPF backend: %s\n", err);
		return 1;
	}
	ret = ops->start(src);
	if (ret) {
		fprintf(stderr, "copy-sizes: start: %s\n", strerror(-ret));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	end = now_s() + secs;
	while (!stop && now_s() < end) {
		ret = ops->poll(src, 100, on_record, NULL);
		if (ret < 0 && ret != -EINTR)
			break;
	}
	ops->stop(src);
	while (ops->poll(src, 0, on_record, NULL) > 0)
		;
	printf("SIZES samples=%" PRIu64, samples);
	for (int i = 0; i < NR_SIZES; i++)
		printf(" whole%u=%" PRIu64 " frames%u=%.1f", sizes[i], whole[i],
		       sizes[i], samples ? (double)frames[i] / samples : 0);
	printf(" mean_bytes16384=%" PRIu64 "\n", samples ? used[NR_SIZES - 1] / samples : 0);
	ops->close(src);
	oracle_free(oracle);
	return 0;
}
