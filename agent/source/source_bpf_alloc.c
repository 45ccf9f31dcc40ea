// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF backend, allocations (EMBER_EV_ALLOC, bpf/alloc.bpf.h): uprobes
 * on the preloaded sampler's probe points and on allocators' entry points
 * (with a return probe where the call gives the block), put and removed
 * while running; at most MAX_ALLOC_LINKS links.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "source/source_bpf_internal.h"

void bpf_alloc_configure(struct ember_source *s, struct ember_bpf *skel)
{
	const struct ember_source_config *cfg = &s->cfg;

	bpf_program__set_autoload(skel->progs.ember_alloc, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_alloc_record, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_free, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_rdi, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_rsi, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_nmemb, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_rdx, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_ret, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_free, cfg->events & EMBER_EV_ALLOC);
	bpf_program__set_autoload(skel->progs.ember_entry_realloc, cfg->events & EMBER_EV_ALLOC);
	if (cfg->alloc_rate)
		skel->data->alloc_rate = cfg->alloc_rate;
	/* the entry probes follow sampled blocks to their free (-p) */
	skel->rodata->alloc_inuse = (cfg->events & EMBER_EV_ALLOC) &&
				    !cfg->alloc_no_inuse;
	if (!skel->rodata->alloc_inuse) {
		bpf_map__set_max_entries(skel->maps.alloc_pending, 1);
		bpf_map__set_max_entries(skel->maps.alloc_live, 1);
	}
}

/* The probes tail-call the one program that builds the record. */
int bpf_alloc_loaded(struct ember_source *s)
{
	int fd = bpf_program__fd(s->skel->progs.ember_alloc_record);
	__u32 zero = 0;

	if (!(s->cfg.events & EMBER_EV_ALLOC))
		return 0;
	if (fd < 0)
		return -EINVAL;
	return bpf_map__update_elem(s->skel->maps.alloc_tail, &zero,
				    sizeof(zero), &fd, sizeof(fd), 0);
}

/* uprobes for every process of a file plus per-process ones: bounded */
/* (each one an fd: under the usual 1024 open files) */
#define MAX_ALLOC_LINKS	896

void bpf_alloc_detach(struct ember_source *s)
{
	for (int i = 0; i < s->nr_alloc_links; i++)
		bpf_link__destroy(s->alloc_links[i]);
	free(s->alloc_links);
	s->alloc_links = NULL;
	s->nr_alloc_links = s->cap_alloc_links = 0;
}

static struct bpf_program *alloc_prog(struct ember_source *s, uint32_t kind)
{
	switch (kind) {
	case EMBER_PROBE_SAMPLED_ALLOC:
		return s->skel->progs.ember_alloc;
	case EMBER_PROBE_SAMPLED_FREE:
		return s->skel->progs.ember_free;
	case EMBER_PROBE_ENTRY_SIZE_RDI:
		return s->skel->progs.ember_entry_rdi;
	case EMBER_PROBE_ENTRY_SIZE_RSI:
		return s->skel->progs.ember_entry_rsi;
	case EMBER_PROBE_ENTRY_NMEMB_SIZE:
		return s->skel->progs.ember_entry_nmemb;
	case EMBER_PROBE_ENTRY_SIZE_RDX:
		return s->skel->progs.ember_entry_rdx;
	case EMBER_PROBE_ENTRY_FREE:
		return s->skel->progs.ember_entry_free;
	case EMBER_PROBE_ENTRY_REALLOC:
		return s->skel->progs.ember_entry_realloc;
	default:
		return NULL;
	}
}

/* An allocator entry point whose return gives the block (in-use). */
static bool returns_block(uint32_t kind)
{
	return kind == EMBER_PROBE_ENTRY_SIZE_RDI ||
	       kind == EMBER_PROBE_ENTRY_SIZE_RSI ||
	       kind == EMBER_PROBE_ENTRY_NMEMB_SIZE ||
	       kind == EMBER_PROBE_ENTRY_SIZE_RDX ||
	       kind == EMBER_PROBE_ENTRY_REALLOC;
}

/*
 * Uprobes on the probe points of path (struct ember_alloc_probe, file
 * offsets), for process pid or every process that maps it (0): the
 * filters apply in the programs. The kernel raises each probe's semaphore
 * in those processes while it is attached. All or none.
 */
int bpf_alloc_attach(struct ember_source *s, uint32_t pid, const char *path,
		     const struct ember_alloc_probe *probes, size_t nr,
		     char *err, size_t err_len)
{
	int first = s->nr_alloc_links;

	if (!(s->cfg.events & EMBER_EV_ALLOC) || !s->running) {
		say(err, err_len, "allocation probes need a running session with -e alloc");
		return -EINVAL;
	}
	/* an entry point takes two links: its probe and its return's */
	if (!nr || nr > EMBER_MAX_ALLOC_PROBES ||
	    s->nr_alloc_links + 2 * nr > MAX_ALLOC_LINKS) {
		say(err, err_len, "%zu more allocation probes: at most %d at once, %d in all",
		    nr, EMBER_MAX_ALLOC_PROBES, MAX_ALLOC_LINKS);
		return -E2BIG;
	}
	if (s->nr_alloc_links + 2 * (int)nr > s->cap_alloc_links) {
		int cap = s->cap_alloc_links ? 2 * s->cap_alloc_links : 16;
		void *p;

		while (cap < s->nr_alloc_links + 2 * (int)nr)
			cap *= 2;
		p = realloc(s->alloc_links, cap * sizeof(*s->alloc_links));
		if (!p)
			return -ENOMEM;
		s->alloc_links = p;
		s->cap_alloc_links = cap;
	}
	for (size_t i = 0; i < nr; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, o,
			    .ref_ctr_offset = probes[i].ref_ctr_offset);
		struct bpf_program *prog = alloc_prog(s, probes[i].kind);
		struct bpf_link *l;
		int e;

		if (!prog) {
			say(err, err_len, "unknown allocation probe kind %u",
			    probes[i].kind);
			e = -EINVAL;
			goto undo;
		}
		l = bpf_program__attach_uprobe_opts(prog, pid ? (int)pid : -1,
						    path, probes[i].offset, &o);
		if (!l) {
			e = -errno;
			say(err, err_len, "cannot put a uprobe on %s+0x%llx: %s",
			    path, (unsigned long long)probes[i].offset,
			    strerror(-e));
			goto undo;
		}
		s->alloc_links[s->nr_alloc_links++] = l;
		if (!returns_block(probes[i].kind) || s->cfg.alloc_no_inuse)
			continue;
		/* where a sampled call's record gets its address */
		o.retprobe = true;
		o.ref_ctr_offset = 0;
		l = bpf_program__attach_uprobe_opts(s->skel->progs.ember_entry_ret,
						    pid ? (int)pid : -1, path,
						    probes[i].offset, &o);
		if (!l) {
			e = -errno;
			say(err, err_len, "cannot put a return probe on %s+0x%llx: %s",
			    path, (unsigned long long)probes[i].offset,
			    strerror(-e));
			goto undo;
		}
		s->alloc_links[s->nr_alloc_links++] = l;
		continue;
undo:
		while (s->nr_alloc_links > first)
			bpf_link__destroy(s->alloc_links[--s->nr_alloc_links]);
		return e;
	}
	return 0;
}
