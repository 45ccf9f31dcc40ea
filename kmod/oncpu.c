// SPDX-License-Identifier: GPL-2.0
/*
 * On-CPU sampling: one kernel perf event per online CPU, in frequency mode,
 * whose overflow handler writes a stack sample into that CPU's ring. A
 * dynamic CPU hotplug state creates the event when a CPU comes online and
 * releases it before the CPU goes away.
 */
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/perf_event.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/timekeeping.h>

#include "ember_kmod.h"
#include "../include/ember_clock.h"

static DEFINE_PER_CPU(struct perf_event *, ember_event);
static int ember_hp_state = -1;
static struct perf_event_attr ember_attr;
static u64 ember_weight_ns;
static bool ember_include_idle;
static int ember_online_err;	/* first error while starting */
/* each CPU's cpu-clock event, as its firings saw it (ember_clock.h) */
static DEFINE_PER_CPU(struct ember_clock, ember_cpu_clock);

/*
 * The sampling periods a firing of this CPU's event at now stands for
 * (include/ember_clock.h). A cycles event counts only what runs: never
 * late that way.
 */
static u8 ember_periods_since(u64 now)
{
	if (ember_attr.type != PERF_TYPE_SOFTWARE)
		return 1;
	return ember_clock_periods(this_cpu_ptr(&ember_cpu_clock), now,
				   ember_weight_ns, current->pid,
				   current->nvcsw + current->nivcsw);
}

static void ember_oncpu_overflow(struct perf_event *event,
				 struct perf_sample_data *data,
				 struct pt_regs *regs)
{
	struct ember_cpu_stats *st = this_cpu_ptr(ember_stats);
	u64 t0 = ktime_get_mono_fast_ns();
	/* every firing, filtered or not, or the gaps would be the filter's */
	u8 periods = event ? ember_periods_since(t0) : 1;

	local64_inc(&st->samples);
	/* filters first: a filtered sample costs no unwinding */
	if ((!ember_include_idle && is_idle_task(current)) ||
	    !ember_filter_pass(current)) {
		local64_inc(&st->filtered);
	} else {
		ember_emit_sample(EMBER_REC_SAMPLE, regs, t0,
				  ember_weight_ns * periods, periods, st);
	}
	local64_add(ktime_get_mono_fast_ns() - t0, &st->handler_ns);
}

#ifdef EMBER_SELFTEST
/*
 * Test builds only. Without a PMU (qemu TCG) nothing samples from NMI
 * context, the context hardware events run in; selftests/kmod/nmi's
 * module calls this from an NMI handler for NMIs the host injects, so the
 * same sampling path runs there. Stopping turns it off and waits for NMI
 * handlers in flight (they are RCU readers), as releasing a perf event
 * waits for its overflow handler.
 */
static bool ember_selftest_on;

void ember_selftest_nmi_sample(struct pt_regs *regs)
{
	if (READ_ONCE(ember_selftest_on))
		ember_oncpu_overflow(NULL, NULL, regs);
}
EXPORT_SYMBOL_GPL(ember_selftest_nmi_sample);

static void ember_selftest_set(bool on)
{
	WRITE_ONCE(ember_selftest_on, on);
	if (!on)
		synchronize_rcu();
}
#else
static void ember_selftest_set(bool on)
{
}
#endif

static void ember_attr_init(struct perf_event_attr *attr, u32 clock, u32 freq)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	if (clock == EMBER_CLOCK_CYCLES) {
		attr->type = PERF_TYPE_HARDWARE;
		attr->config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		attr->type = PERF_TYPE_SOFTWARE;
		attr->config = PERF_COUNT_SW_CPU_CLOCK;
	}
	attr->freq = 1;
	attr->sample_freq = freq;
	attr->pinned = 1;
	attr->disabled = 0;
}

static int ember_cpu_online(unsigned int cpu)
{
	struct perf_event *ev;

	/* a CPU back online: a new event, a new grid */
	per_cpu(ember_cpu_clock, cpu).next_ns = 0;
	ev = perf_event_create_kernel_counter(&ember_attr, cpu, NULL,
					      ember_oncpu_overflow, NULL);
	if (IS_ERR(ev)) {
		/*
		 * Never block a CPU from coming online: it just goes
		 * unsampled, visible as ONLINE=0 in the statistics.
		 */
		pr_warn("ember: no sampling event on CPU %u: %ld\n", cpu,
			PTR_ERR(ev));
		if (!ember_online_err)
			ember_online_err = PTR_ERR(ev);
		return 0;
	}
	per_cpu(ember_event, cpu) = ev;
	per_cpu_ptr(ember_stats, cpu)->online = true;
	return 0;
}

static int ember_cpu_offline(unsigned int cpu)
{
	struct perf_event *ev = per_cpu(ember_event, cpu);

	per_cpu_ptr(ember_stats, cpu)->online = false;
	if (ev) {
		per_cpu(ember_event, cpu) = NULL;
		/* waits for a running overflow handler */
		perf_event_release_kernel(ev);
	}
	return 0;
}

/* A hardware cycles event answers only where there is a PMU. */
bool ember_cycles_available(void)
{
	struct perf_event_attr attr;
	struct perf_event *ev;

	ember_attr_init(&attr, EMBER_CLOCK_CYCLES, EMBER_DEFAULT_FREQ);
	attr.disabled = 1;
	ev = perf_event_create_kernel_counter(&attr, raw_smp_processor_id(),
					      NULL, NULL, NULL);
	if (IS_ERR(ev))
		return false;
	perf_event_release_kernel(ev);
	return true;
}

int ember_oncpu_start(struct ember_config *cfg,
		      struct netlink_ext_ack *extack)
{
	int ret;

	cfg->clock_used = cfg->clock;
	if (cfg->clock == EMBER_CLOCK_CYCLES && !ember_cycles_available()) {
		cfg->clock_used = EMBER_CLOCK_CPU_CLOCK;
		/* an extack message on success reaches the caller as a warning */
		NL_SET_ERR_MSG(extack,
			       "no hardware PMU: cycles unavailable, sampling with cpu-clock");
		pr_info("ember: no hardware PMU for cycles, using cpu-clock\n");
	}
	ember_attr_init(&ember_attr, cfg->clock_used, cfg->freq);
	/* cpu-clock runs at exactly NSEC_PER_SEC / freq; cycles near it */
	ember_weight_ns = div_u64(NSEC_PER_SEC, cfg->freq);
	ember_include_idle = cfg->flags & EMBER_F_INCLUDE_IDLE;
	ember_online_err = 0;

	ret = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "ember/oncpu:online",
				ember_cpu_online, ember_cpu_offline);
	if (ret < 0) {
		NL_SET_ERR_MSG(extack, "cannot register CPU hotplug callbacks");
		return ret;
	}
	ember_hp_state = ret;
	if (ember_online_err) {
		ret = ember_online_err;
		ember_oncpu_stop();
		NL_SET_ERR_MSG(extack,
			       "cannot create the sampling perf event (see dmesg)");
		return ret;
	}
	ember_selftest_set(true);
	return 0;
}

void ember_oncpu_stop(void)
{
	if (ember_hp_state < 0)
		return;
	ember_selftest_set(false);
	cpuhp_remove_state(ember_hp_state);
	ember_hp_state = -1;
}
