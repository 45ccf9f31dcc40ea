// SPDX-License-Identifier: GPL-2.0
/*
 * Sampled page faults, every fault_period-th fault on a CPU, recorded in
 * the faulting task's context with the registers of the faulting
 * instruction: the pid/cgroup filter, then an EMBER_REC_FAULT through the
 * sampling path (kernel and user stacks, CFI tables included).
 *
 * Two hooks count the faults. Where x86's exceptions:page_fault_user and
 * page_fault_kernel tracepoints exist (configure probe fault_tracepoints:
 * every x86-64 kernel, no arm64 one), a probe on
 * them keeps a per-CPU count: a fault that is not sampled costs one
 * per-CPU increment instead of the software event's hash walk
 * (docs/NOTES.md). Elsewhere, or with fault_perf=1, one software perf
 * event PERF_COUNT_SW_PAGE_FAULTS per online CPU in period mode, CPU
 * hotplug as in oncpu.c.
 */
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/perf_event.h>
#include <linux/percpu.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>

#include "ember_kmod.h"

static DEFINE_PER_CPU(struct perf_event *, ember_fault_event);
static int ember_fault_hp_state = -1;
static struct perf_event_attr ember_fault_attr;
static u64 ember_fault_weight;
static int ember_fault_online_err;	/* first error while starting */

static bool ember_fault_perf;
module_param_named(fault_perf, ember_fault_perf, bool, 0644);
MODULE_PARM_DESC(fault_perf,
		 "Sample page faults through the perf software event even where the page-fault tracepoints exist");

static struct tracepoint *ember_tp_fault_user;
static struct tracepoint *ember_tp_fault_kernel;
static bool ember_fault_tp_on;
static u32 ember_fault_period;
static DEFINE_PER_CPU(u32, ember_fault_seen);	/* faults since the last record */

/* One sampled fault: filters first, a filtered one costs no unwinding. */
static void ember_fault_record(struct pt_regs *regs)
{
	struct ember_cpu_stats *st = this_cpu_ptr(ember_stats);
	u64 t0 = ktime_get_mono_fast_ns();

	if (!ember_filter_pass(current)) {
		local64_inc(&st->filtered);
	} else {
		ember_emit_sample(EMBER_REC_FAULT, regs, t0,
				  ember_fault_weight, 0, st);
	}
	local64_add(ktime_get_mono_fast_ns() - t0, &st->handler_ns);
}

static void ember_fault_overflow(struct perf_event *event,
				 struct perf_sample_data *data,
				 struct pt_regs *regs)
{
	ember_fault_record(regs);
}

/*
 * Both tracepoints, preemption off, interrupts still off from the
 * exception entry. The software event does not count a fault on a kernel
 * address or one with page faults disabled (a nofault read such as the
 * user unwinder's own), so neither does this count.
 */
static void ember_fault_probe(void *data, unsigned long address,
			      struct pt_regs *regs, unsigned long error_code)
{
	if (!user_mode(regs) &&
	    (address >= TASK_SIZE_MAX || pagefault_disabled()))
		return;
	/* single instructions on x86: an NMI in between loses no count */
	if (this_cpu_inc_return(ember_fault_seen) < ember_fault_period)
		return;
	this_cpu_sub(ember_fault_seen, ember_fault_period);
	ember_fault_record(regs);
}

/* 0 with the tracepoint probes on, else why not (the perf event then). */
static int ember_faults_tp_start(void)
{
	int cpu, ret;

	ember_check_fault_probe(ember_fault_probe);
	if (!EMBER_FAULT_TRACEPOINTS)
		return -EOPNOTSUPP;
	ember_tp_fault_user = ember_find_tracepoint("page_fault_user");
	ember_tp_fault_kernel = ember_find_tracepoint("page_fault_kernel");
	if (!ember_tp_fault_user || !ember_tp_fault_kernel)
		return -ENOENT;
	for_each_possible_cpu(cpu)
		per_cpu(ember_fault_seen, cpu) = 0;
	ret = tracepoint_probe_register(ember_tp_fault_user, ember_fault_probe,
					NULL);
	if (ret)
		return ret;
	ret = tracepoint_probe_register(ember_tp_fault_kernel,
					ember_fault_probe, NULL);
	if (ret) {
		tracepoint_probe_unregister(ember_tp_fault_user,
					    ember_fault_probe, NULL);
		tracepoint_synchronize_unregister();
		return ret;
	}
	ember_fault_tp_on = true;
	return 0;
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
	ember_fault_period = cfg->fault_period;
	ember_fault_online_err = 0;

	if (!ember_fault_perf) {
		ret = ember_faults_tp_start();
		if (!ret) {
			pr_debug("ember: page faults through the exceptions tracepoints\n");
			return 0;
		}
		pr_info("ember: no page-fault tracepoints (%d): page faults through the perf software event\n",
			ret);
	}

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
	if (ember_fault_tp_on) {
		tracepoint_probe_unregister(ember_tp_fault_user,
					    ember_fault_probe, NULL);
		tracepoint_probe_unregister(ember_tp_fault_kernel,
					    ember_fault_probe, NULL);
		/* no probe runs, or uses the session's rings, after this */
		tracepoint_synchronize_unregister();
		ember_fault_tp_on = false;
	}
	if (ember_fault_hp_state < 0)
		return;
	cpuhp_remove_state(ember_fault_hp_state);
	ember_fault_hp_state = -1;
}

/* The tracepoints, or the software event wherever perf events exist. */
bool ember_faults_available(void)
{
	struct perf_event_attr attr;
	struct perf_event *ev;

	if (EMBER_FAULT_TRACEPOINTS && ember_find_tracepoint("page_fault_user") &&
	    ember_find_tracepoint("page_fault_kernel"))
		return true;
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
