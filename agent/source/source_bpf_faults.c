// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF backend, page faults (EMBER_EV_FAULTS, bpf/faults.bpf.h): every
 * fault_period-th fault on each CPU through the page-fault software perf
 * event (ember_faults, the default, on every architecture), or through
 * x86's exceptions:page_fault_user/_kernel tracepoints (ember_fault_tp,
 * EMBER_FAULTS_HOOK=tp, where the kernel has them).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "source/source_bpf_internal.h"

/*
 * EMBER_FAULTS_HOOK=tp: page faults through x86's
 * exceptions:page_fault_user/_kernel tracepoints instead of the software
 * perf event. Not the default: on the 6.18 host the raw_tp call on every
 * fault cost more than the whole perf event (docs/NOTES.md, bench 9).
 */
static bool faults_hook_tp(void)
{
	const char *hook = getenv("EMBER_FAULTS_HOOK");

	return hook && !strcmp(hook, "tp");
}

/*
 * The tracepoints when asked and the kernel has both (looked up in its
 * BTF, not decided by architecture: arm64 has neither), else the perf
 * software event, which every kernel has; said once. Decided once per
 * open: load_skel() configures every flavour it tries.
 */
static bool faults_use_tp(struct ember_source *s)
{
	if (s->faults_probed)
		return s->faults_tp;
	s->faults_probed = true;
	s->faults_tp = (s->cfg.events & EMBER_EV_FAULTS) && faults_hook_tp();
	if (s->faults_tp && !(kernel_has_raw_tp("page_fault_user") &&
			      kernel_has_raw_tp("page_fault_kernel"))) {
		fprintf(stderr, "ember: EMBER_FAULTS_HOOK=tp: this kernel has no "
			"exceptions:page_fault_user/_kernel tracepoints (x86 has them): "
			"page faults through the perf software event instead\n");
		s->faults_tp = false;
	}
	return s->faults_tp;
}

/* Every period-th page fault on cpu (any task), for ember_faults. */
static int perf_open_faults(int cpu, uint32_t period)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.sample_period = period,
	};

	return syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

void bpf_faults_configure(struct ember_source *s, struct ember_bpf *skel)
{
	const struct ember_source_config *cfg = &s->cfg;

	skel->rodata->fault_page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	skel->rodata->fault_period = cfg->fault_period ? cfg->fault_period :
				     EMBER_DEFAULT_FAULT_PERIOD;
	bpf_program__set_autoload(skel->progs.ember_faults,
				  (cfg->events & EMBER_EV_FAULTS) && !faults_use_tp(s));
	bpf_program__set_autoload(skel->progs.ember_fault_tp, faults_use_tp(s));
}

/* Every period-th page fault on each CPU through the software event. */
static int attach_faults_perf(struct ember_source *s, uint32_t period)
{
	struct bpf_program *p = s->skel->progs.ember_faults;
	int fd, ret;

	for (int i = 0; i < s->nr_online; i++) {
		fd = perf_open_faults(s->online[i], period);
		if (fd < 0) {
			ret = -errno;
			fprintf(stderr, "ember: perf_event_open(page-faults) on CPU %d: %s\n",
				s->online[i], strerror(-ret));
			return ret;
		}
		ret = attach_perf_link(s, p, fd);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Page faults through the tracepoints when asked, else the perf event
 * (into s->links, sized by the caller).
 */
int bpf_faults_attach(struct ember_source *s)
{
	static const char *const tps[] = { "page_fault_user", "page_fault_kernel" };
	struct bpf_program *p = s->skel->progs.ember_fault_tp;
	uint32_t period = s->cfg.fault_period ? s->cfg.fault_period :
			  EMBER_DEFAULT_FAULT_PERIOD;
	bool perf = !faults_use_tp(s);
	int ret;

	if (!(s->cfg.events & EMBER_EV_FAULTS))
		return 0;
	for (int i = 0; i < 2 && !perf; i++) {
		s->tp_links[3 + i] = bpf_program__attach_raw_tracepoint(p, tps[i]);
		if (s->tp_links[3 + i])
			continue;
		ret = -errno;
		/* bpf_stop() drops the link already made */
		fprintf(stderr, "ember: bpf: cannot attach to the %s tracepoint: %s\n",
			tps[i], strerror(-ret));
		return ret;
	}
	if (getenv("EMBER_BPF_VERBOSE"))
		fprintf(stderr, "ember: bpf: page faults through %s, 1 in %u\n",
			perf ? "the perf software event" :
			"the page_fault_user/kernel tracepoints", period);
	return perf ? attach_faults_perf(s, period) : 0;
}
