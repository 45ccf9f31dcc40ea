// SPDX-License-Identifier: GPL-2.0-only
/*
 * ember's eBPF backend: on-CPU samples, off-CPU intervals and process
 * lifecycle records, in exactly the record format the kernel module writes
 * (include/uapi/ember.h), so the agent cannot tell the two apart.
 *
 * Programs:
 *   ember_oncpu            perf_event on each CPU's cpu-clock (or cycles) event
 *   ember_faults           perf_event on each CPU's page-fault software event
 *                          (every fault_period-th fault): EMBER_REC_FAULT
 *   ember_fault_tp         the same from x86's exceptions:page_fault_user
 *                          and _kernel tracepoints with a per-CPU count
 *                          (EMBER_FAULTS_HOOK=tp; measured dearer here)
 *   ember_switch_btf/_raw  sched_switch: note when and how a thread leaves
 *   ember_back_fentry/_kprobe  finish_task_switch, in the returning thread:
 *                          emit its interval with its stacks (deferred mode)
 *   ember_back_tp_btf/_raw the same at the end of __schedule
 *                          (sched_exit_tp, 6.16+), no kprobe/fentry needed
 * Two off-CPU designs, measured (see agent/source/source_bpf.c):
 *   deferred (default): sched_switch stores only a timestamp; the stacks
 *     are taken when the thread is back on CPU and current again (its user
 *     and kernel stacks are unchanged since it left), and only for
 *     intervals above the threshold.
 *   parked (fallback when no switch-in hook attaches): the stacks
 *     are taken at every switch-out and parked until the thread returns.
 *   ember_exec_btf/_raw    sched_process_exec
 *   ember_exit_btf/_raw    sched_process_exit, last thread of a process
 * The loader keeps the tp_btf flavour and falls back to raw_tp when the
 * kernel refuses it.
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
