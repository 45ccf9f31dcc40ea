// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF backend, on-CPU (EMBER_EV_ONCPU): ember_oncpu (bpf/oncpu.bpf.h)
 * on a cpu-clock perf event per online CPU, or on hardware cycles when
 * asked and the CPU has a PMU (cpu-clock otherwise, said once).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "source/source_bpf_internal.h"

int bpf_perf_open_clock(int cpu, uint32_t freq, bool cycles)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = cycles ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE,
		.config = cycles ? PERF_COUNT_HW_CPU_CYCLES :
				   PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = freq,
	};

	return syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* At open, before load: cycles if asked and there, else cpu-clock. */
void bpf_oncpu_pick_clock(struct ember_source *s)
{
	const struct ember_source_config *cfg = &s->cfg;
	int fd;

	s->clock_event = EMBER_CLOCK_CPU_CLOCK;
	if (cfg->use_cycles && (cfg->events & EMBER_EV_ONCPU)) {
		fd = bpf_perf_open_clock(s->online[0], cfg->freq_hz, true);
		if (fd >= 0) {
			s->clock_event = EMBER_CLOCK_CYCLES;
			close(fd);
		} else {
			fprintf(stderr,
				"ember: hardware cycles not available (%s: no PMU here?): sampling cpu-clock instead\n",
				strerror(errno));
		}
	}
}

void bpf_oncpu_configure(struct ember_source *s, struct ember_bpf *skel)
{
	const struct ember_source_config *cfg = &s->cfg;

	skel->rodata->include_idle = cfg->include_idle;
	skel->rodata->stack_copy = cfg->stack_copy;
	skel->rodata->stack_copy_bytes = cfg->stack_copy ? 0 : cfg->stack_copy_bytes;
	/* cpu-clock periods are ns; a cycles period is not */
	skel->rodata->fixed_weight_ns =
		s->clock_event == EMBER_CLOCK_CYCLES ? 1000000000ull / cfg->freq_hz : 0;
	bpf_program__set_autoload(skel->progs.ember_oncpu, cfg->events & EMBER_EV_ONCPU);
}

/* One event per online CPU, into s->links (sized by the caller). */
int bpf_oncpu_attach(struct ember_source *s)
{
	const struct ember_source_config *cfg = &s->cfg;
	struct ember_bpf *k = s->skel;
	int ret, fd;

	if (!(cfg->events & EMBER_EV_ONCPU))
		return 0;
	for (int i = 0; i < s->nr_online; i++) {
		fd = bpf_perf_open_clock(s->online[i], cfg->freq_hz,
					 s->clock_event == EMBER_CLOCK_CYCLES);
		if (fd < 0) {
			ret = -errno;
			fprintf(stderr, "ember: perf_event_open on CPU %d: %s\n",
				s->online[i], strerror(-ret));
			return ret;
		}
		ret = attach_perf_link(s, k->progs.ember_oncpu, fd);
		if (ret)
			return ret;
	}
	return 0;
}
