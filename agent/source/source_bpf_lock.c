// SPDX-License-Identifier: GPL-2.0-only
/*
 * The eBPF backend, lock contention (EMBER_EV_LOCK, bpf/lock.bpf.h): the
 * futex syscall tracepoints (futex_waitv's where the kernel has it,
 * 5.16+), lock:contention_begin/end where the kernel has them (5.19+),
 * and sched_waking for the wakers' stacks (EMBER_F_LOCK_WAKER). What runs
 * is kept as EMBER_CAP_LOCK_* bits in s->lock_caps, and what this kernel
 * cannot give is said in one line when the session starts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <bpf/btf.h>
#include "source/source_bpf_internal.h"

/* s->lock_links[] */
enum {
	LOCK_LINK_FUTEX_ENTER,
	LOCK_LINK_FUTEX_EXIT,
	LOCK_LINK_WAITV_ENTER,
	LOCK_LINK_WAITV_EXIT,
	LOCK_LINK_BEGIN,
	LOCK_LINK_END,
	LOCK_LINK_WAKING,
	LOCK_NR_LINKS,
};

_Static_assert(LOCK_NR_LINKS <= sizeof(((struct ember_source *)0)->lock_links) /
	       sizeof(struct bpf_link *), "lock_links too small");

/* Map sizes for tests (EMBER_BPF_LOCK_INFLIGHT: both tables). */
static void size_tables(struct ember_source *s, struct ember_bpf *skel, bool on)
{
	const char *env = getenv("EMBER_BPF_LOCK_INFLIGHT");
	unsigned long n = env ? strtoul(env, NULL, 10) : 0;

	(void)s;
	if (!on) {
		bpf_map__set_max_entries(skel->maps.lock_futex, 1);
		bpf_map__set_max_entries(skel->maps.lock_kernel, 1);
		return;
	}
	if (n && n <= 1000000) {
		bpf_map__set_max_entries(skel->maps.lock_futex, n);
		bpf_map__set_max_entries(skel->maps.lock_kernel, n);
	}
}

/*
 * Before load: settings, and which programs load. The kernel lock
 * programs load only where the tracepoints exist (a tp_btf program for a
 * tracepoint the kernel lacks fails the whole load); the futex_waitv
 * program loads anyway (a perf tracepoint program loads without its
 * tracepoint) and is attached only where the tracepoint is.
 */
void bpf_lock_configure(struct ember_source *s, struct ember_bpf *skel)
{
	const struct ember_source_config *cfg = &s->cfg;
	bool on = cfg->events & EMBER_EV_LOCK;
	bool waker = on && cfg->lock_waker;
	bool kern;

	/* once per open: load_skel() configures every flavour it tries */
	if (on && !s->lock_caps) {
		tracefs_ensure("-e lock");
		s->lock_caps = EMBER_CAP_LOCK_FUTEX;
		if (kernel_has_raw_tp("contention_begin") &&
		    kernel_has_raw_tp("contention_end"))
			s->lock_caps |= EMBER_CAP_LOCK_KERNEL;
		if (tracefs_has_syscall_tp("sys_enter_futex_waitv") &&
		    tracefs_has_syscall_tp("sys_exit_futex_waitv"))
			s->lock_caps |= EMBER_CAP_LOCK_WAITV;
	}
	kern = on && (s->lock_caps & EMBER_CAP_LOCK_KERNEL);
	skel->rodata->lock_min_ns = cfg->lock_min_ns;
	skel->rodata->lock_waker = waker;
	/* the ring guard (record.bpf.h) costs only where it is needed */
	skel->rodata->lock_kernel_on = kern;
	size_tables(s, skel, on);
	bpf_program__set_autoload(skel->progs.ember_futex_enter, on);
	bpf_program__set_autoload(skel->progs.ember_futex_exit, on);
	bpf_program__set_autoload(skel->progs.ember_waitv_enter,
				  s->lock_caps & EMBER_CAP_LOCK_WAITV);
	bpf_program__set_autoload(skel->progs.ember_lock_begin_btf, kern && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_lock_end_btf, kern && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_lock_begin_raw, kern && s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_lock_end_raw, kern && s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_waking_btf, waker && !s->raw_tp);
	bpf_program__set_autoload(skel->progs.ember_waking_raw, waker && s->raw_tp);
}

static int attach_one(struct ember_source *s, int slot, struct bpf_link *l)
{
	if (!l)
		return -errno;
	s->lock_links[slot] = l;
	return 0;
}

static int attach_syscall(struct ember_source *s, int slot,
			  struct bpf_program *p, const char *tp)
{
	int ret = attach_one(s, slot, bpf_program__attach_tracepoint(p, "syscalls", tp));

	if (ret)
		fprintf(stderr, "ember: bpf: cannot attach to the syscalls:%s tracepoint: %s\n",
			tp, strerror(-ret));
	return ret;
}

/* An optional part that did not attach whole: none of it, and not said
 * to run. */
static void drop_links(struct ember_source *s, int a, int b)
{
	bpf_link__destroy(s->lock_links[a]);
	bpf_link__destroy(s->lock_links[b]);
	s->lock_links[a] = s->lock_links[b] = NULL;
	if (a == LOCK_LINK_WAITV_ENTER)
		s->lock_caps &= ~EMBER_CAP_LOCK_WAITV;
}

/* The one line saying what -e lock cannot give on this kernel. */
static void say_missing(struct ember_source *s)
{
	struct utsname u;
	char what[160] = "";

	if (s->lock_said)
		return;
	s->lock_said = true;
	if (!(s->lock_caps & EMBER_CAP_LOCK_KERNEL))
		snprintf(what, sizeof(what),
			 "kernel lock contention (lock:contention_begin/end, Linux 5.19+)");
	if (!(s->lock_caps & EMBER_CAP_LOCK_WAITV))
		snprintf(what + strlen(what), sizeof(what) - strlen(what), "%s%s",
			 what[0] ? " and " : "", "futex_waitv waits (Linux 5.16+)");
	if (!what[0])
		return;
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	fprintf(stderr, "ember: -e lock on Linux %s (eBPF backend): %s not available on this kernel; "
		"futex waits are recorded\n", u.release, what);
}

/* At start, into s->lock_links; bpf_lock_detach() undoes it. */
int bpf_lock_attach(struct ember_source *s)
{
	struct ember_bpf *k = s->skel;
	int ret;

	if (!(s->cfg.events & EMBER_EV_LOCK))
		return 0;
	ret = attach_syscall(s, LOCK_LINK_FUTEX_ENTER, k->progs.ember_futex_enter,
			     "sys_enter_futex");
	if (!ret)
		ret = attach_syscall(s, LOCK_LINK_FUTEX_EXIT, k->progs.ember_futex_exit,
				     "sys_exit_futex");
	if (ret)
		return ret;
	/* optional parts: missing ones are said once, not fatal */
	if (s->lock_caps & EMBER_CAP_LOCK_WAITV) {
		/* one exit program for both syscalls: same record layout */
		if (attach_syscall(s, LOCK_LINK_WAITV_ENTER, k->progs.ember_waitv_enter,
				   "sys_enter_futex_waitv") ||
		    attach_syscall(s, LOCK_LINK_WAITV_EXIT, k->progs.ember_futex_exit,
				   "sys_exit_futex_waitv"))
			drop_links(s, LOCK_LINK_WAITV_ENTER, LOCK_LINK_WAITV_EXIT);
	}
	if (s->lock_caps & EMBER_CAP_LOCK_KERNEL) {
		/* the end first: a begin without its end would fill the table */
		ret = attach_one(s, LOCK_LINK_END, bpf_program__attach(s->raw_tp ?
				 k->progs.ember_lock_end_raw : k->progs.ember_lock_end_btf));
		if (!ret)
			ret = attach_one(s, LOCK_LINK_BEGIN, bpf_program__attach(s->raw_tp ?
					 k->progs.ember_lock_begin_raw :
					 k->progs.ember_lock_begin_btf));
		if (ret) {
			fprintf(stderr, "ember: bpf: cannot attach to lock:contention_*: %s\n",
				strerror(-ret));
			drop_links(s, LOCK_LINK_BEGIN, LOCK_LINK_END);
			s->lock_caps &= ~EMBER_CAP_LOCK_KERNEL;
		}
	}
	if (s->cfg.lock_waker) {
		ret = attach_one(s, LOCK_LINK_WAKING, bpf_program__attach(s->raw_tp ?
				 k->progs.ember_waking_raw : k->progs.ember_waking_btf));
		if (ret) {
			fprintf(stderr, "ember: bpf: cannot attach to sched_waking: %s\n",
				strerror(-ret));
			return ret;
		}
	}
	say_missing(s);
	if (getenv("EMBER_BPF_VERBOSE"))
		fprintf(stderr, "ember: bpf: lock: futex%s%s%s, at least %llu ns\n",
			s->lock_caps & EMBER_CAP_LOCK_WAITV ? ", futex_waitv" : "",
			s->lock_caps & EMBER_CAP_LOCK_KERNEL ? ", kernel contention" : "",
			s->cfg.lock_waker ? ", wakers" : "",
			(unsigned long long)s->cfg.lock_min_ns);
	return 0;
}

void bpf_lock_detach(struct ember_source *s)
{
	for (int i = 0; i < LOCK_NR_LINKS; i++) {
		bpf_link__destroy(s->lock_links[i]);
		s->lock_links[i] = NULL;
	}
}
