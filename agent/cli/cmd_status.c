// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember status: which backends can run here and why not, the module's
 * version and per-CPU statistics when it is loaded, and what to do when
 * nothing can run. Exit status 0 when some backend can run, 1 otherwise.
 * It never loads the module itself (no side effects).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include "cli/commands.h"
#include "source/backend.h"
#include "source/kmem_budget.h"
#include "source/source_kmod.h"
#include "source/status_bpf.h"
#include "unwind/table_store.h"

/* The eBPF backend may not be linked in (EMBER_BPF=0). */
#pragma weak status_bpf_running

struct cpu_totals {
	uint64_t samples, records, lost, filtered, handler_ns;
	uint64_t cfi, fp, cut, miss, limited;
	uint64_t switches, offcpu_ns, offcpu_overflow;
	uint32_t cpus, online;
};

static void print_cpu(const struct kmod_cpu_stats *c, void *arg)
{
	struct cpu_totals *t = arg;

	printf("  %4u %6s %12" PRIu64 " %10" PRIu64 " %12" PRIu64 " %10" PRIu64
	       " %10" PRIu64 "\n", c->cpu, c->online ? "yes" : "no", c->samples,
	       c->filtered, c->records, c->lost,
	       c->samples ? c->handler_ns / c->samples : 0);
	t->samples += c->samples;
	t->records += c->records;
	t->lost += c->lost;
	t->filtered += c->filtered;
	t->handler_ns += c->handler_ns;
	t->cfi += c->ustack_cfi;
	t->fp += c->ustack_fp;
	t->cut += c->ustack_cut;
	t->miss += c->unwind_miss;
	t->limited += c->unwind_miss_limited;
	t->switches += c->offcpu_switches;
	t->offcpu_ns += c->offcpu_ns;
	t->offcpu_overflow += c->offcpu_overflow;
	t->cpus++;
	t->online += c->online;
}

static void print_caps(uint64_t caps)
{
	static const struct { uint64_t bit; const char *name; } names[] = {
		{ EMBER_CAP_ONCPU, "oncpu" }, { EMBER_CAP_OFFCPU, "offcpu" },
		{ EMBER_CAP_LIFECYCLE, "lifecycle" }, { EMBER_CAP_CYCLES, "cycles" },
		{ EMBER_CAP_CGROUP_FILTER, "cgroup-filter" },
		{ EMBER_CAP_USER_STACKS, "user-stacks" },
		{ EMBER_CAP_KERNEL_STACKS, "kernel-stacks" },
		{ EMBER_CAP_UNWIND_CFI, "cfi-unwind" },
		{ EMBER_CAP_STACK_COPY, "stack-copy" },
		{ EMBER_CAP_FAULTS, "faults" },
		{ EMBER_CAP_ALLOC, "alloc" },
		{ EMBER_CAP_ALLOC_ENTRY, "alloc-entry" },
		{ EMBER_CAP_LOCK_FUTEX, "lock-futex" },
		{ EMBER_CAP_LOCK_KERNEL, "lock-kernel" },
		{ EMBER_CAP_LOCK_WAITV, "lock-waitv" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (caps & names[i].bit)
			printf(" %s", names[i].name);
	printf("\n");
}

static void print_module(void)
{
	struct kmod_info info;
	struct cpu_totals t = { 0 };

	if (kmod_query(&info, NULL, NULL)) {
		printf("  (the module did not answer GET_INFO)\n");
		return;
	}
	printf("  module ABI %u%s, %s, %u rings of %u KiB\n", info.version,
	       info.version == EMBER_ABI_VERSION ? "" : " (MISMATCH: reinstall)",
	       info.running ? "a session is running" : "idle",
	       info.nr_rings, info.ring_size / 1024);
	if (info.ring_mem_cap)
		printf("  ring memory: %.1f of %.0f MiB (module parameter ring_mem_max)\n",
		       info.ring_mem_used / 1048576.0, info.ring_mem_cap / 1048576.0);
	printf("  capabilities:");
	print_caps(info.caps);
	printf("  unwind tables: %u loaded, %u processes bound, %.1f of %.0f MiB "
	       "(module parameter unwind_mem_max)\n", info.unwind_tables,
	       info.unwind_bound, info.unwind_used / 1048576.0,
	       info.unwind_cap / 1048576.0);
	printf("  per-CPU statistics:\n"
	       "   cpu online      samples   filtered      records       lost  ns/sample\n");
	if (kmod_query(&info, print_cpu, &t)) {
		printf("  (the module did not answer GET_STATS)\n");
		return;
	}
	printf("  total: %" PRIu64 " samples, %" PRIu64 " records, %" PRIu64
	       " lost, %" PRIu64 " filtered, %u/%u CPUs online\n",
	       t.samples, t.records, t.lost, t.filtered, t.online, t.cpus);
	printf("  user stacks by tables: %" PRIu64 " (%" PRIu64 " with frame-pointer "
	       "steps, %" PRIu64 " cut); table requests %" PRIu64 " (%" PRIu64
	       " rate-limited)\n", t.cfi, t.fp, t.cut, t.miss, t.limited);
	/* what off-CPU profiling costs per context switch (make bench reads it) */
	if (t.switches)
		printf("  off-CPU: %" PRIu64 " switches, %" PRIu64
		       " ns/switch in the scheduler probes, %" PRIu64 " overflow\n",
		       t.switches, t.offcpu_ns / t.switches, t.offcpu_overflow);
}

/* The default unwind-table cache (--table-cache): looked at, not made. */
static void print_table_cache(void)
{
	uint32_t n;
	uint64_t bytes;
	int r = table_store_usage(TABLE_STORE_DEFAULT_DIR, &n, &bytes);

	if (r)
		printf("unwind-table cache %s: %s\n", TABLE_STORE_DEFAULT_DIR,
		       r == -ENOENT ? "not made yet" : strerror(-r));
	else
		printf("unwind-table cache %s: %u tables, %.1f MiB\n",
		       TABLE_STORE_DEFAULT_DIR, n, bytes / 1048576.0);
}

int cmd_status(int argc, char **argv)
{
	char kwhy[512], bwhy[512];
	struct utsname u;
	int kr, br;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: ember status\n\n"
		       "Show which backends can run, their versions, per-CPU statistics\n"
		       "and lost records. Exits 0 when ember record can run.\n");
		return 0;
	}
	if (argc > 1) {
		fprintf(stderr, "ember status: unexpected argument '%s'\n", argv[1]);
		return 2;
	}
	uname(&u);
	printf("ember %s (record format ABI %d), kernel %s %s\n", EMBER_VERSION,
	       EMBER_ABI_VERSION, u.release, u.machine);

	kr = backend_kmod_check(kwhy, sizeof(kwhy), false);
	printf("module backend: %s: %s\n",
	       kr == 0 ? "available" : kr == 1 ? "loadable" : "unavailable", kwhy);
	if (kr == 0)
		print_module();

	br = backend_bpf_check(bwhy, sizeof(bwhy));
	printf("eBPF backend:   %s%s\n", br ? "unavailable: " : "available",
	       br ? bwhy : "");
	if (br == 0 && status_bpf_running)
		status_bpf_running();

	print_table_cache();
	{
		struct kmem_budget kb;
		char d[128];

		/* what a run without kernel_mem will size its tables to */
		kmem_budget_get(0, &kb);
		kmem_budget_describe(&kb, d, sizeof(d));
		printf("kernel memory budget: %s%s\n", d, kb.bytes >= EMBER_KMEM_FULL ?
		       ": the full default sizes" : ": tables and rings scaled down");
	}
	if (kr == 0 || kr == 1)
		printf("ember record will use: the module backend\n");
	else if (br == 0)
		printf("ember record will use: eBPF\n");
	else {
		printf("ember record cannot run here. To fix it, either:\n"
		       "  - install ember's module package (DKMS) and modprobe ember, or build it\n"
		       "    (make module) and insmod kmod/ember.ko; this needs module support,\n"
		       "    kernel.modules_disabled=0 and a lockdown mode that permits it; or\n"
		       "  - run as root on a kernel with BPF and BTF (/sys/kernel/btf/vmlinux)\n"
		       "    for the eBPF backend.\n");
		return 1;
	}
	return 0;
}
