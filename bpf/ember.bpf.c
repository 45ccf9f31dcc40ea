// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember's eBPF backend: on-CPU samples, off-CPU intervals, page faults,
 * allocations, lock contention and process lifecycle records, in exactly
 * the record format the kernel module writes (include/uapi/ember.h), so
 * the agent cannot tell the two apart.
 *
 * One translation unit, so one object, one skeleton (ember_bpf) and one
 * load; each concern is a .bpf.h part over shared parts:
 *   shared    common.bpf.h     settings every part reads, scratch slots,
 *                              ring/perf buffers, counters, regs layouts
 *             filter.bpf.h     pid and cgroup filters
 *             record.bpf.h     common record fields, the emit
 *             stack.bpf.h      kernel and user stacks (unwind.bpf.h: the
 *                              table-driven user unwinder)
 *   concerns  oncpu.bpf.h      ember_oncpu: perf_event on each CPU's
 *                              cpu-clock (or cycles) event
 *             faults.bpf.h     ember_faults: perf_event on each CPU's
 *                              page-fault software event (every
 *                              fault_period-th fault); ember_fault_tp: the
 *                              same from x86's exceptions:page_fault_user
 *                              and _kernel tracepoints with a per-CPU count
 *                              (EMBER_FAULTS_HOOK=tp; measured dearer here)
 *             alloc.bpf.h      ember_alloc, ember_free, ember_entry_*:
 *                              uprobes of EMBER_EV_ALLOC
 *             offcpu.bpf.h     ember_switch_btf/_raw (sched_switch: note
 *                              when and how a thread leaves),
 *                              ember_back_fentry/_kprobe (finish_task_switch,
 *                              in the returning thread: emit its interval
 *                              with its stacks, deferred mode),
 *                              ember_back_tp_btf/_raw (the same at the end
 *                              of __schedule: sched_exit_tp, 6.16+)
 *             lifecycle.bpf.h  ember_exec_btf/_raw (sched_process_exec),
 *                              ember_exit_btf/_raw (sched_process_exit,
 *                              last thread of a process)
 *             mmap.bpf.h       ember_mmap_fentry/_kprobe (perf_event_mmap:
 *                              a new executable mapping, EMBER_REC_MMAP)
 *             lock.bpf.h       ember_futex_enter/_exit, ember_waitv_enter
 *                              (futex and futex_waitv syscall tracepoints),
 *                              ember_lock_begin_/end_btf|raw
 *                              (lock:contention_begin/end,
 *                              5.19+), ember_waking_* (sched_waking: the
 *                              waker's stack): -e lock
 * Two off-CPU designs, measured (see bpf/README.md):
 *   deferred (default): sched_switch stores only a timestamp; the stacks
 *     are taken when the thread is back on CPU and current again (its user
 *     and kernel stacks are unchanged since it left), and only for
 *     intervals above the threshold.
 *   parked (fallback when no switch-in hook attaches): the stacks
 *     are taken at every switch-out and parked until the thread returns.
 * The loader keeps the tp_btf flavour and falls back to raw_tp when the
 * kernel refuses it.
 *
 * The parts are included in this order: the object (programs, maps,
 * globals) comes out as the one file it was split from did.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "../include/uapi/ember.h"
#include "ember_bpf.h"

char LICENSE[] SEC("license") = "GPL";

#include "common.bpf.h"
#include "filter.bpf.h"
#include "record.bpf.h"
#include "stack.bpf.h"
#include "oncpu.bpf.h"
#include "faults.bpf.h"
#include "alloc.bpf.h"
#include "offcpu.bpf.h"
#include "lifecycle.bpf.h"
#include "mmap.bpf.h"
#include "lock.bpf.h"
