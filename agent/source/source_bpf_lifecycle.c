// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF backend, process lifecycle (EMBER_EV_LIFECYCLE,
 * bpf/lifecycle.bpf.h): EXEC and EXIT records from sched_process_exec and
 * sched_process_exit, tp_btf or raw_tp as loaded.
 */
#include "source/source_bpf_internal.h"

void bpf_lifecycle_configure(struct ember_source *s, struct ember_bpf *skel)
{
	bool life = s->cfg.events & EMBER_EV_LIFECYCLE;

	bpf_program__set_autoload(skel->progs.ember_exec_btf, life && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exec_raw, life && s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exit_btf, life && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_exit_raw, life && s->raw_tp);
}

/* Into tp_links[0] and [1]. */
int bpf_lifecycle_attach(struct ember_source *s)
{
	struct ember_bpf *k = s->skel;
	int ret;

	if (!(s->cfg.events & EMBER_EV_LIFECYCLE))
		return 0;
	ret = attach_tp(s, 0, k->progs.ember_exec_btf, k->progs.ember_exec_raw);
	if (!ret)
		ret = attach_tp(s, 1, k->progs.ember_exit_btf, k->progs.ember_exit_raw);
	return ret;
}
