// SPDX-License-Identifier: GPL-2.0
/*
 * Sampled page faults: one software perf event PERF_COUNT_SW_PAGE_FAULTS
 * per online CPU in period mode, so every FAULT_PERIOD-th fault on that CPU
 * runs the overflow handler in the faulting task's context, with the
 * registers of the faulting instruction. The handler applies the pid/cgroup
 * filter and writes an EMBER_REC_FAULT through the sampling path (kernel
 * and user stacks, CFI tables included). CPU hotplug as in oncpu.c.
 */
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/mm.h>
#include <linux/perf_event.h>
#include <linux/percpu.h>
#include <linux/timekeeping.h>

#include "ember_kmod.h"

static DEFINE_PER_CPU(struct perf_event *, ember_fault_event);
static int ember_fault_hp_state = -1;
static struct perf_event_attr ember_fault_attr;
static u64 ember_fault_weight;
static int ember_fault_online_err;	/* first error while starting */

static void ember_fault_overflow(struct perf_event *event,
				 struct perf_sample_data *data,
				 struct pt_regs *regs)
{
	struct ember_cpu_stats *st = this_cpu_ptr(ember_stats);
	u64 t0 = ktime_get_mono_fast_ns();

	/* filters first: a filtered sample costs no unwinding */
	if (!ember_filter_pass(current)) {
		local64_inc(&st->filtered);
	} else {
		ember_emit_sample(EMBER_REC_FAULT, regs, t0,
				  ember_fault_weight, st);
	}
	local64_add(ktime_get_mono_fast_ns() - t0, &st->handler_ns);
}

static int ember_fault_cpu_online(unsigned int cpu)
{
	struct perf_event *ev;

	ev = perf_event_create_kernel_counter(&ember_fault_attr, cpu, NULL,
					      ember_fault_overflow, NULL);
	if (IS_ERR(ev)) {
		/* never block a CPU from coming online */
		pr_warn("ember: no page-fault event on CPU %u: %ld\n", cpu,
			PTR_ERR(ev));
		if (!ember_fault_online_err)
			ember_fault_online_err = PTR_ERR(ev);
		return 0;
	}
	per_cpu(ember_fault_event, cpu) = ev;
	return 0;
}

static int ember_fault_cpu_offline(unsigned int cpu)
{
	struct perf_event *ev = per_cpu(ember_fault_event, cpu);

	if (ev) {
		per_cpu(ember_fault_event, cpu) = NULL;
		/* waits for a running overflow handler */
		perf_event_release_kernel(ev);
	}
	return 0;
}

int ember_faults_start(const struct ember_config *cfg,
		       struct netlink_ext_ack *extack)
{
	int ret;

	memset(&ember_fault_attr, 0, sizeof(ember_fault_attr));
	ember_fault_attr.size = sizeof(ember_fault_attr);
	ember_fault_attr.type = PERF_TYPE_SOFTWARE;
	ember_fault_attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	ember_fault_attr.sample_period = cfg->fault_period;
	ember_fault_attr.pinned = 1;
	/*
	 * Bytes a sample stands for. The software event does not tell the
	 * size of the page a fault mapped, so a huge-page fault counts as
	 * one base page here.
	 */
	ember_fault_weight = (u64)cfg->fault_period * PAGE_SIZE;
	ember_fault_online_err = 0;

	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "ember/faults:online",
				ember_fault_cpu_online,
				ember_fault_cpu_offline);
	if (ret < 0) {
		NL_SET_ERR_MSG(extack, "cannot register CPU hotplug callbacks");
		return ret;
	}
	ember_fault_hp_state = ret;
	if (ember_fault_online_err) {
		ret = ember_fault_online_err;
		ember_faults_stop();
		NL_SET_ERR_MSG(extack,
			       "cannot create the page-fault perf event (see dmesg)");
		return ret;
	}
	return 0;
}

void ember_faults_stop(void)
{
	if (ember_fault_hp_state < 0)
		return;
	cpuhp_remove_state(ember_fault_hp_state);
	ember_fault_hp_state = -1;
}

/* The page-fault software event exists wherever perf events do. */
bool ember_faults_available(void)
{
	struct perf_event_attr attr;
	struct perf_event *ev;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	attr.sample_period = EMBER_DEFAULT_FAULT_PERIOD;
	attr.disabled = 1;
	ev = perf_event_create_kernel_counter(&attr, raw_smp_processor_id(),
					      NULL, NULL, NULL);
	if (IS_ERR(ev))
		return false;
	perf_event_release_kernel(ev);
	return true;
}
