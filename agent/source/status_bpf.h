/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef EMBER_STATUS_BPF_H
#define EMBER_STATUS_BPF_H

/* Prints what a running ember has loaded as eBPF programs and maps. */
void status_bpf_running(void);

#endif
