// SPDX-License-Identifier: GPL-2.0-only
/*
 * The kernel-module backend: control over generic netlink (libnl-genl-3),
 * data through one mmap'd ring per CPU of /dev/ember (include/uapi/ember.h).
 *
 * The rings are shared with the kernel, so nothing read from them is
 * trusted: every record is bounds-checked against the ring, copied out
 * (the producer could rewrite it while we look), and validated before the
 * callback sees it. A ring whose consumer/producer counters make no sense
 * is resynchronised to the producer and the skipped bytes counted.
 *
 * One file: it is one backend's private state (struct ember_source: the
 * control socket, the rings, the unwind worker's own socket for table
 * commands), reached only through source.h's ops.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include "lib/wake_fd.h"
#include "source/kmem_budget.h"
#include "source/source.h"
#include "source/source_kmod.h"

#define KMOD_DEV_PATH		"/dev/" EMBER_DEVICE_NAME

struct kmod_ring {
	struct ember_ring_ctrl *ctrl;
	const unsigned char *data;
	uint64_t data_size;
	void *map;
	size_t map_len;
};

struct ember_source {
	struct nl_sock *sk;
	int family;
	int fd;
	int wake_fd;			/* cuts kmod_poll()'s wait short */
	struct ember_source_config cfg;
	uint32_t *pids;
	struct kmod_info info;
	struct kmod_ring *rings;
	uint32_t nr_rings;
	bool running;
	uint64_t corrupt;
	unsigned char *copy;		/* KMOD_MAX_RECORD bytes */
	/* unwind tables go over a socket of their own: the unwind worker
	 * sends while another thread polls (libnl sockets are not shared) */
	pthread_mutex_t uw_lock;
	struct nl_sock *uw_sk;
	int uw_family;
};

/* ---- generic netlink ------------------------------------------------- */

static struct nla_policy stat_policy[EMBER_STAT_MAX + 1] = {
	[EMBER_STAT_CPU] = { .type = NLA_U32 },
	[EMBER_STAT_ONLINE] = { .type = NLA_U8 },
	[EMBER_STAT_SAMPLES] = { .type = NLA_U64 },
	[EMBER_STAT_FILTERED] = { .type = NLA_U64 },
	[EMBER_STAT_RECORDS] = { .type = NLA_U64 },
	[EMBER_STAT_LOST] = { .type = NLA_U64 },
	[EMBER_STAT_HANDLER_NS] = { .type = NLA_U64 },
	[EMBER_STAT_OFFCPU_SWITCHES] = { .type = NLA_U64 },
	[EMBER_STAT_OFFCPU_OVERFLOW] = { .type = NLA_U64 },
	[EMBER_STAT_OFFCPU_NS] = { .type = NLA_U64 },
	[EMBER_STAT_USTACK_CFI] = { .type = NLA_U64 },
	[EMBER_STAT_USTACK_FP] = { .type = NLA_U64 },
	[EMBER_STAT_USTACK_CUT] = { .type = NLA_U64 },
	[EMBER_STAT_UNWIND_MISS] = { .type = NLA_U64 },
	[EMBER_STAT_UNWIND_MISS_LIMITED] = { .type = NLA_U64 },
	[EMBER_STAT_LOCK_WAITS] = { .type = NLA_U64 },
	[EMBER_STAT_LOCK_OVERFLOW] = { .type = NLA_U64 },
	[EMBER_STAT_LOCK_WAKERS] = { .type = NLA_U64 },
};

static struct nla_policy attr_policy[EMBER_A_MAX + 1] = {
	[EMBER_A_VERSION] = { .type = NLA_U32 },
	[EMBER_A_CAPS] = { .type = NLA_U64 },
	[EMBER_A_RUNNING] = { .type = NLA_U8 },
	[EMBER_A_EVENTS] = { .type = NLA_U32 },
	[EMBER_A_CLOCK_EVENT] = { .type = NLA_U32 },
	[EMBER_A_CLOCK_EVENT_USED] = { .type = NLA_U32 },
	[EMBER_A_FREQ] = { .type = NLA_U32 },
	[EMBER_A_KSTACK_MAX] = { .type = NLA_U32 },
	[EMBER_A_USTACK_MAX] = { .type = NLA_U32 },
	[EMBER_A_FLAGS] = { .type = NLA_U32 },
	[EMBER_A_RING_SIZE] = { .type = NLA_U32 },
	[EMBER_A_NR_RINGS] = { .type = NLA_U32 },
	[EMBER_A_WATERMARK] = { .type = NLA_U32 },
	[EMBER_A_FILTER_CGROUP] = { .type = NLA_U64 },
	[EMBER_A_OFFCPU_MIN_NS] = { .type = NLA_U64 },
	[EMBER_A_OFFCPU_SAMPLE_PPM] = { .type = NLA_U32 },
	[EMBER_A_LOCK_MIN_NS] = { .type = NLA_U64 },
	[EMBER_A_STATS] = { .type = NLA_NESTED },
	[EMBER_A_UNWIND_MEM_USED] = { .type = NLA_U64 },
	[EMBER_A_UNWIND_MEM_CAP] = { .type = NLA_U64 },
	[EMBER_A_UNWIND_TABLES] = { .type = NLA_U32 },
	[EMBER_A_UNWIND_BOUND] = { .type = NLA_U32 },
	[EMBER_A_RING_MEM_USED] = { .type = NLA_U64 },
	[EMBER_A_RING_MEM_CAP] = { .type = NLA_U64 },
};

struct req_ctx {
	bool done;
	int err;			/* negative errno from the kernel */
	int (*parse)(struct nlattr **tb, void *arg);
	void *arg;
	char msg[160];			/* extended ack message, if any */
};

static int valid_cb(struct nl_msg *msg, void *arg)
{
	struct req_ctx *ctx = arg;
	struct nlattr *tb[EMBER_A_MAX + 1];

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, EMBER_A_MAX, attr_policy))
		return NL_SKIP;		/* malformed reply: ignore it */
	if (ctx->parse)
		ctx->parse(tb, ctx->arg);
	return NL_OK;
}

static int done_cb(struct nl_msg *msg, void *arg)
{
	(void)msg;
	((struct req_ctx *)arg)->done = true;
	return NL_STOP;
}

/* The module explains its EINVALs in an extended ack: keep the text. */
static void extack_msg(const struct nlmsgerr *e, char *buf, size_t len)
{
	const struct nlmsghdr *nlh = (const void *)((const char *)e - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t payload = sizeof(*e);

	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		payload += e->msg.nlmsg_len - NLMSG_HDRLEN;
	if (nlh->nlmsg_len < NLMSG_HDRLEN + payload)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX,
		      (struct nlattr *)((char *)e + NLMSG_ALIGN(payload)),
		      nlh->nlmsg_len - NLMSG_HDRLEN - NLMSG_ALIGN(payload), NULL))
		return;
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(buf, len, "%.*s", (int)strnlen(nla_data(tb[NLMSGERR_ATTR_MSG]),
							  nla_len(tb[NLMSGERR_ATTR_MSG])),
			 (const char *)nla_data(tb[NLMSGERR_ATTR_MSG]));
}

static int error_cb(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct req_ctx *ctx = arg;

	(void)nla;
	ctx->err = e->error ? e->error : 0;
	if (e->error)
		extack_msg(e, ctx->msg, sizeof(ctx->msg));
	ctx->done = true;
	return NL_STOP;
}

/* libnl reports its own NLE_* codes for transport failures */
static int nlerr_to_errno(int nle)
{
	switch (-nle) {
	case NLE_PERM:
		return -EPERM;
	case NLE_NOACCESS:
		return -EACCES;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	default:
		return -EIO;
	}
}

/*
 * Send msg (consumed) and process replies until the ack, the end of a
 * dump, or an error. Returns 0 or a negative errno.
 */
static int genl_request_err(struct nl_sock *sk, struct nl_msg *msg, bool dump,
			    int (*parse)(struct nlattr **, void *), void *arg,
			    char *errbuf, size_t errlen);

static int genl_request(struct nl_sock *sk, struct nl_msg *msg, bool dump,
			int (*parse)(struct nlattr **, void *), void *arg)
{
	return genl_request_err(sk, msg, dump, parse, arg, NULL, 0);
}

/* errbuf: where the module's message goes; NULL prints it on stderr */
static int genl_request_err(struct nl_sock *sk, struct nl_msg *msg, bool dump,
			    int (*parse)(struct nlattr **, void *), void *arg,
			    char *errbuf, size_t errlen)
{
	struct req_ctx ctx = { .parse = parse, .arg = arg };
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
	int r;

	if (!cb) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid_cb, &ctx);
	nl_cb_set(cb, dump ? NL_CB_FINISH : NL_CB_ACK, NL_CB_CUSTOM, done_cb,
		  &ctx);
	nl_cb_err(cb, NL_CB_CUSTOM, error_cb, &ctx);
	/* a dump ends with NLMSG_DONE, not with an ack */
	if (dump)
		nl_socket_disable_auto_ack(sk);
	r = nl_send_auto(sk, msg);
	if (dump)
		nl_socket_enable_auto_ack(sk);
	nlmsg_free(msg);
	while (r >= 0 && !ctx.done) {
		r = nl_recvmsgs(sk, cb);
		if (r == -NLE_INTR)
			r = 0;
	}
	nl_cb_put(cb);
	/* the kernel's own answer wins over libnl's rendering of it */
	if (ctx.err) {
		if (ctx.msg[0] && errbuf && errlen)
			snprintf(errbuf, errlen, "the ember module says: %s", ctx.msg);
		else if (ctx.msg[0])
			fprintf(stderr, "ember: the ember module says: %s\n", ctx.msg);
		return ctx.err;
	}
	if (r < 0) {
		if (getenv("EMBER_DEBUG"))
			fprintf(stderr, "ember: netlink: %s\n", nl_geterror(r));
		return nlerr_to_errno(r);
	}
	return ctx.err;
}

static struct nl_msg *genl_msg(int family, uint8_t cmd, bool dump)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (msg && !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0,
				dump ? NLM_F_DUMP : 0, cmd, EMBER_GENL_VERSION)) {
		nlmsg_free(msg);
		msg = NULL;
	}
	return msg;
}

static int parse_info(struct nlattr **tb, void *arg)
{
	struct kmod_info *in = arg;

	if (tb[EMBER_A_VERSION])
		in->version = nla_get_u32(tb[EMBER_A_VERSION]);
	if (tb[EMBER_A_CAPS])
		in->caps = nla_get_u64(tb[EMBER_A_CAPS]);
	if (tb[EMBER_A_RUNNING])
		in->running = nla_get_u8(tb[EMBER_A_RUNNING]);
	if (tb[EMBER_A_NR_RINGS])
		in->nr_rings = nla_get_u32(tb[EMBER_A_NR_RINGS]);
	if (tb[EMBER_A_RING_SIZE])
		in->ring_size = nla_get_u32(tb[EMBER_A_RING_SIZE]);
	if (tb[EMBER_A_CLOCK_EVENT_USED])
		in->clock_used = nla_get_u32(tb[EMBER_A_CLOCK_EVENT_USED]);
	if (tb[EMBER_A_FREQ])
		in->freq = nla_get_u32(tb[EMBER_A_FREQ]);
	if (tb[EMBER_A_EVENTS])
		in->events = nla_get_u32(tb[EMBER_A_EVENTS]);
	if (tb[EMBER_A_UNWIND_MEM_USED])
		in->unwind_used = nla_get_u64(tb[EMBER_A_UNWIND_MEM_USED]);
	if (tb[EMBER_A_UNWIND_MEM_CAP])
		in->unwind_cap = nla_get_u64(tb[EMBER_A_UNWIND_MEM_CAP]);
	if (tb[EMBER_A_UNWIND_TABLES])
		in->unwind_tables = nla_get_u32(tb[EMBER_A_UNWIND_TABLES]);
	if (tb[EMBER_A_UNWIND_BOUND])
		in->unwind_bound = nla_get_u32(tb[EMBER_A_UNWIND_BOUND]);
	/* absent from older modules: 0 means unknown */
	if (tb[EMBER_A_RING_MEM_USED])
		in->ring_mem_used = nla_get_u64(tb[EMBER_A_RING_MEM_USED]);
	if (tb[EMBER_A_RING_MEM_CAP])
		in->ring_mem_cap = nla_get_u64(tb[EMBER_A_RING_MEM_CAP]);
	in->valid = true;
	return 0;
}

struct stats_walk {
	void (*fn)(const struct kmod_cpu_stats *st, void *arg);
	void *arg;
};

static uint64_t stat_u64(struct nlattr **tb, int a)
{
	return tb[a] ? nla_get_u64(tb[a]) : 0;
}

static int parse_stats(struct nlattr **tb, void *arg)
{
	struct stats_walk *w = arg;
	struct nlattr *st[EMBER_STAT_MAX + 1];
	struct kmod_cpu_stats s = { 0 };

	if (!tb[EMBER_A_STATS] ||
	    nla_parse_nested(st, EMBER_STAT_MAX, tb[EMBER_A_STATS], stat_policy))
		return 0;
	s.cpu = st[EMBER_STAT_CPU] ? nla_get_u32(st[EMBER_STAT_CPU]) : 0;
	s.online = st[EMBER_STAT_ONLINE] ? nla_get_u8(st[EMBER_STAT_ONLINE]) : 0;
	s.samples = stat_u64(st, EMBER_STAT_SAMPLES);
	s.filtered = stat_u64(st, EMBER_STAT_FILTERED);
	s.records = stat_u64(st, EMBER_STAT_RECORDS);
	s.lost = stat_u64(st, EMBER_STAT_LOST);
	s.handler_ns = stat_u64(st, EMBER_STAT_HANDLER_NS);
	s.offcpu_switches = stat_u64(st, EMBER_STAT_OFFCPU_SWITCHES);
	s.offcpu_overflow = stat_u64(st, EMBER_STAT_OFFCPU_OVERFLOW);
	s.offcpu_ns = stat_u64(st, EMBER_STAT_OFFCPU_NS);
	s.ustack_cfi = stat_u64(st, EMBER_STAT_USTACK_CFI);
	s.ustack_fp = stat_u64(st, EMBER_STAT_USTACK_FP);
	s.ustack_cut = stat_u64(st, EMBER_STAT_USTACK_CUT);
	s.unwind_miss = stat_u64(st, EMBER_STAT_UNWIND_MISS);
	s.unwind_miss_limited = stat_u64(st, EMBER_STAT_UNWIND_MISS_LIMITED);
	s.lock_waits = stat_u64(st, EMBER_STAT_LOCK_WAITS);
	s.lock_overflow = stat_u64(st, EMBER_STAT_LOCK_OVERFLOW);
	s.lock_wakers = stat_u64(st, EMBER_STAT_LOCK_WAKERS);
	w->fn(&s, w->arg);
	return 0;
}

/* Connect and resolve the family: 0, or -ENOENT when no module answers. */
static int kmod_connect(struct nl_sock **out, int *family)
{
	struct nl_sock *sk = nl_socket_alloc();
	int fam;

	if (!sk)
		return -ENOMEM;
	if (genl_connect(sk)) {
		nl_socket_free(sk);
		return -EIO;
	}
	{
		int one = 1;

		/* error messages from the module (best effort) */
		setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK,
			   &one, sizeof(one));
	}
	fam = genl_ctrl_resolve(sk, EMBER_GENL_NAME);
	if (fam < 0) {
		nl_socket_free(sk);
		return -ENOENT;
	}
	*out = sk;
	*family = fam;
	return 0;
}

int kmod_query(struct kmod_info *info,
	       void (*per_cpu)(const struct kmod_cpu_stats *, void *), void *arg)
{
	struct nl_sock *sk;
	struct nl_msg *msg;
	int family, r;

	memset(info, 0, sizeof(*info));
	r = kmod_connect(&sk, &family);
	if (r)
		return r;
	msg = genl_msg(family, EMBER_CMD_GET_INFO, false);
	r = msg ? genl_request(sk, msg, false, parse_info, info) : -ENOMEM;
	if (!r && per_cpu) {
		struct stats_walk w = { per_cpu, arg };

		msg = genl_msg(family, EMBER_CMD_GET_STATS, true);
		r = msg ? genl_request(sk, msg, true, parse_stats, &w) : -ENOMEM;
	}
	nl_socket_free(sk);
	return r;
}

/* ---- ops --------------------------------------------------------------- */

static int kmod_probe(char *why, size_t why_len)
{
	struct kmod_info info;
	int r = kmod_query(&info, NULL, NULL);

	if (r == -ENOENT) {
		snprintf(why, why_len, "the ember module is not loaded");
	} else if (r == -EPERM || r == -EACCES) {
		snprintf(why, why_len,
			 "the ember module needs CAP_PERFMON or CAP_SYS_ADMIN: run as root");
	} else if (r) {
		snprintf(why, why_len, "the ember module does not answer: %s",
			 strerror(-r));
	} else if (info.version != EMBER_ABI_VERSION) {
		snprintf(why, why_len,
			 "the loaded ember module speaks ABI %u, this agent %u: install matching versions",
			 info.version, EMBER_ABI_VERSION);
		r = -EPROTO;
	}
	return r;
}

/* /dev/ember, created from sysfs when no udev made it (minimal systems). */
static int open_device(char *err, size_t err_len)
{
	static const char *const sys[] = {
		"/sys/class/misc/" EMBER_DEVICE_NAME "/dev",
		"/sys/class/" EMBER_DEVICE_NAME "/" EMBER_DEVICE_NAME "/dev",
	};
	unsigned int maj, min;
	int fd = open(KMOD_DEV_PATH, O_RDWR | O_CLOEXEC);

	for (size_t i = 0; fd < 0 && errno == ENOENT && i < 2; i++) {
		FILE *f = fopen(sys[i], "re");

		if (!f)
			continue;
		if (fscanf(f, "%u:%u", &maj, &min) == 2 &&
		    !mknod(KMOD_DEV_PATH, S_IFCHR | 0600, makedev(maj, min)))
			fd = open(KMOD_DEV_PATH, O_RDWR | O_CLOEXEC);
		fclose(f);
	}
	if (fd < 0)
		snprintf(err, err_len, "cannot open %s: %s", KMOD_DEV_PATH,
			 strerror(errno));
	return fd < 0 ? -errno : fd;
}

static void kmod_close(struct ember_source *src);

/*
 * The module's unwind tables are bounded by its unwind_mem_max parameter
 * (256 MiB by default), not by the agent. Under a kernel memory budget
 * smaller than the full one (kmem_budget.h: a small machine, or
 * kernel_mem), half of the budget goes to them: the parameter is lowered
 * (root may write it at run time), never raised, and that is said once.
 */
#define KMOD_UNWIND_MEM_PARAM "/sys/module/ember/parameters/unwind_mem_max"
static void kmod_cap_unwind_mem(const struct ember_source_config *c)
{
	struct kmem_budget kb;
	unsigned long cur = 0, want;
	bool ok;
	FILE *f;

	kmem_budget_get(c->kernel_mem_mb, &kb);
	if (kb.bytes >= EMBER_KMEM_FULL)
		return;
	want = (unsigned long)(kb.bytes >> 21);
	if (!want)
		want = 1;
	f = fopen(KMOD_UNWIND_MEM_PARAM, "re");
	if (!f)
		return;
	if (fscanf(f, "%lu", &cur) != 1)
		cur = 0;
	fclose(f);
	if (cur && cur <= want)
		return;
	f = fopen(KMOD_UNWIND_MEM_PARAM, "we");
	ok = f && fprintf(f, "%lu\n", want) > 0;
	if (f && fclose(f))
		ok = false;
	if (!ok) {
		fprintf(stderr, "ember: could not lower the module's unwind_mem_max to %lu MiB "
			"(kernel memory budget): %s\n", want, strerror(errno));
		return;
	}
	fprintf(stderr, "ember: the module's unwind tables capped at %lu MiB (unwind_mem_max, "
		"was %lu): half of the kernel memory budget\n", want, cur);
}

static int kmod_open(struct ember_source **out,
		     const struct ember_source_config *cfg, char *err,
		     size_t err_len)
{
	struct ember_source *src = calloc(1, sizeof(*src));
	struct nl_msg *msg;
	int r;

	if (!src)
		return -ENOMEM;
	err[0] = '\0';
	src->fd = -1;
	src->wake_fd = wake_fd_open();
	src->cfg = *cfg;
	pthread_mutex_init(&src->uw_lock, NULL);
	src->copy = malloc(KMOD_MAX_RECORD);
	if (cfg->nr_pids) {
		src->pids = malloc(cfg->nr_pids * sizeof(*src->pids));
		if (src->pids)
			memcpy(src->pids, cfg->pids, cfg->nr_pids * sizeof(*src->pids));
	}
	src->cfg.pids = src->pids;
	if (!src->copy || (cfg->nr_pids && !src->pids)) {
		kmod_close(src);
		return -ENOMEM;
	}
	r = kmod_connect(&src->sk, &src->family);
	if (r) {
		snprintf(err, err_len, "the ember module is not loaded");
		kmod_close(src);
		return r;
	}
	msg = genl_msg(src->family, EMBER_CMD_GET_INFO, false);
	r = msg ? genl_request(src->sk, msg, false, parse_info, &src->info) : -ENOMEM;
	if (!r && (cfg->events & EMBER_EV_OFFCPU) &&
	    !(src->info.caps & EMBER_CAP_OFFCPU)) {
		snprintf(err, err_len,
			 "this ember module cannot record off-CPU time: use -e cpu, or --backend bpf");
		r = -EOPNOTSUPP;
	}
	if (!r && (cfg->events & EMBER_EV_FAULTS) &&
	    !(src->info.caps & EMBER_CAP_FAULTS)) {
		snprintf(err, err_len,
			 "this ember module cannot record page faults (older than -e faults, or no perf events): load a newer ember.ko, or use --backend bpf");
		r = -EOPNOTSUPP;
	}
	if (!r && (cfg->events & EMBER_EV_ALLOC) &&
	    !(src->info.caps & EMBER_CAP_ALLOC)) {
		snprintf(err, err_len,
			 "this ember module cannot put allocation probes (older than -e alloc): load a newer ember.ko, or use --backend bpf");
		r = -EOPNOTSUPP;
	}
	if (!r && (cfg->events & EMBER_EV_LOCK) &&
	    !(src->info.caps & EMBER_CAP_LOCK_FUTEX)) {
		snprintf(err, err_len,
			 "this ember module cannot record lock contention (older than -e lock): load a newer ember.ko, or use --backend bpf");
		r = -EOPNOTSUPP;
	}
	if (r) {
		if (!err[0])
			snprintf(err, err_len, "the ember module does not answer GET_INFO: %s",
				 strerror(-r));
		kmod_close(src);
		return r;
	}
	r = open_device(err, err_len);
	if (r < 0) {
		kmod_close(src);
		return r;
	}
	src->fd = r;
	kmod_cap_unwind_mem(cfg);
	*out = src;
	return 0;
}

static int put_filter(struct nl_msg *msg, const uint32_t *pids, size_t nr,
		      uint64_t cgroup_id)
{
	if (nr > EMBER_MAX_FILTER_PIDS)
		return -E2BIG;
	if (nr && nla_put(msg, EMBER_A_FILTER_PIDS, nr * sizeof(*pids), pids))
		return -EMSGSIZE;
	if (cgroup_id && nla_put_u64(msg, EMBER_A_FILTER_CGROUP, cgroup_id))
		return -EMSGSIZE;
	return 0;
}

static int map_rings(struct ember_source *src)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t data = src->info.ring_size;
	size_t len = EMBER_RING_MAP_SIZE(page, data);

	if (!data || (data & (data - 1)) || !src->info.nr_rings ||
	    src->info.nr_rings > 65536)
		return -EPROTO;
	src->rings = calloc(src->info.nr_rings, sizeof(*src->rings));
	if (!src->rings)
		return -ENOMEM;
	src->nr_rings = src->info.nr_rings;
	for (uint32_t i = 0; i < src->nr_rings; i++) {
		struct kmod_ring *r = &src->rings[i];
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       src->fd, (off_t)i * len);

		if (m == MAP_FAILED)
			continue;	/* a CPU that cannot come online */
		r->map = m;
		r->map_len = len;
		r->ctrl = m;
		/* trust the layout only if it fits the mapping */
		if (r->ctrl->data_size != data ||
		    r->ctrl->data_offset < sizeof(*r->ctrl) ||
		    r->ctrl->data_offset + data > len) {
			munmap(m, len);
			memset(r, 0, sizeof(*r));
			continue;
		}
		r->data = (const unsigned char *)m + r->ctrl->data_offset;
		r->data_size = data;
	}
	return 0;
}

/*
 * Per-CPU ring bytes to ask for: --ring-bytes, else the module's default
 * (0) unless the kernel memory budget (kmem_budget.h) is smaller than
 * what the default rings would hold on every possible CPU: then a power
 * of two within a quarter of the budget, at least the module's 16 KiB.
 */
#define KMOD_RING_DEFAULT	(512u << 10)
#define KMOD_RING_MIN		(16u << 10)
static uint32_t kmod_ring_bytes(const struct ember_source_config *c)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	struct kmem_budget kb;
	uint64_t want;
	uint32_t r = KMOD_RING_DEFAULT;

	if (c->ring_bytes)
		return c->ring_bytes;
	kmem_budget_get(c->kernel_mem_mb, &kb);
	if (cpus < 1)
		cpus = 1;
	if ((uint64_t)KMOD_RING_DEFAULT * cpus <= kb.bytes / 4)
		return 0;
	want = kb.bytes / 4 / cpus;
	while (r > KMOD_RING_MIN && r > want)
		r >>= 1;
	return r;
}

static int kmod_start(struct ember_source *src)
{
	const struct ember_source_config *c = &src->cfg;
	struct nl_msg *msg = genl_msg(src->family, EMBER_CMD_START, false);
	uint32_t events = c->events;
	uint32_t ring = kmod_ring_bytes(c);
	int r = 0;

	if (!msg)
		return -ENOMEM;

	/* exec/exit records are hints: fine without them on older modules */
	if (!(src->info.caps & EMBER_CAP_LIFECYCLE))
		events &= ~EMBER_EV_LIFECYCLE;
	if (nla_put_u32(msg, EMBER_A_EVENTS, events) ||
	    nla_put_u32(msg, EMBER_A_FREQ, c->freq_hz ? c->freq_hz : EMBER_DEFAULT_FREQ) ||
	    nla_put_u32(msg, EMBER_A_CLOCK_EVENT,
			c->use_cycles ? EMBER_CLOCK_CYCLES : EMBER_CLOCK_CPU_CLOCK) ||
	    nla_put_u32(msg, EMBER_A_KSTACK_MAX, c->kstack_max) ||
	    nla_put_u32(msg, EMBER_A_USTACK_MAX, c->ustack_max) ||
	    nla_put_u32(msg, EMBER_A_FLAGS,
			(c->include_idle ? EMBER_F_INCLUDE_IDLE : 0) |
			(c->stack_copy ? EMBER_F_STACK_COPY : 0) |
			((c->events & EMBER_EV_LOCK) && c->lock_waker ?
			 EMBER_F_LOCK_WAKER : 0)) ||
	    (ring && nla_put_u32(msg, EMBER_A_RING_SIZE, ring)) ||
	    (c->offcpu_min_ns && nla_put_u64(msg, EMBER_A_OFFCPU_MIN_NS, c->offcpu_min_ns)) ||
	    /* an older module has no replay copies: samples stay as walked */
	    (c->stack_copy_bytes && !c->stack_copy &&
	     (src->info.caps & EMBER_CAP_STACK_COPY) &&
	     nla_put_u32(msg, EMBER_A_STACK_COPY, c->stack_copy_bytes)) ||
	    (c->offcpu_sample_ppm &&
	     nla_put_u32(msg, EMBER_A_OFFCPU_SAMPLE_PPM, c->offcpu_sample_ppm)) ||
	    /* always: 0 asks for every wait (the default is the caller's) */
	    ((c->events & EMBER_EV_LOCK) &&
	     nla_put_u64(msg, EMBER_A_LOCK_MIN_NS, c->lock_min_ns)) ||
	    ((c->events & EMBER_EV_FAULTS) &&
	     nla_put_u32(msg, EMBER_A_FAULT_PERIOD,
			 c->fault_period ? c->fault_period : EMBER_DEFAULT_FAULT_PERIOD)))
		r = -EMSGSIZE;
	if (!r)
		r = put_filter(msg, c->pids, c->nr_pids, c->cgroup_id);
	if (r) {
		nlmsg_free(msg);
		return r;
	}
	r = genl_request(src->sk, msg, false, parse_info, &src->info);
	if (r)
		return r;
	src->running = true;
	if (!src->info.ring_size || !src->info.nr_rings) {
		/* an older module may only report the layout in GET_INFO */
		msg = genl_msg(src->family, EMBER_CMD_GET_INFO, false);
		r = msg ? genl_request(src->sk, msg, false, parse_info, &src->info) : -ENOMEM;
		if (r)
			return r;
	}
	return map_rings(src);
}

/*
 * Consume one ring. Records are copied out before validation: the
 * producer shares these pages and must not be able to change a record
 * between our checks and our use. copy holds KMOD_MAX_RECORD bytes.
 */
int kmod_drain(struct ember_ring_ctrl *ctrl, const unsigned char *data,
	       uint64_t data_size, void *copy, ember_record_fn fn, void *ctx,
	       uint64_t *corrupt)
{
	uint64_t prod = __atomic_load_n(&ctrl->producer, __ATOMIC_ACQUIRE);
	uint64_t cons = __atomic_load_n(&ctrl->consumer, __ATOMIC_RELAXED);
	uint64_t mask = data_size - 1;
	int n = 0;

	if (prod - cons > data_size || cons > prod) {
		/* nonsense counters: skip everything there is */
		(*corrupt)++;
		cons = prod;
	}
	while (cons < prod) {
		uint64_t off = cons & mask, left = prod - cons;
		struct ember_rec_header hdr;
		uint32_t size;

		if (left < sizeof(hdr) || data_size - off < sizeof(hdr)) {
			(*corrupt)++;
			cons = prod;
			break;
		}
		memcpy(&hdr, data + off, sizeof(hdr));
		size = hdr.size;
		if (size < sizeof(hdr) || size % 8 || size > left ||
		    size > data_size - off || size > KMOD_MAX_RECORD) {
			/* cannot find the next record boundary: resync */
			(*corrupt)++;
			cons = prod;
			break;
		}
		if (hdr.type != EMBER_REC_PAD) {
			memcpy(copy, data + off, size);
			/* the size we checked, whatever the ring says now */
			((struct ember_rec_header *)copy)->size = size;
			fn((const struct ember_rec_header *)copy, ctx);
			n++;
		}
		cons += size;
	}
	__atomic_store_n(&ctrl->consumer, cons, __ATOMIC_RELEASE);
	return n;
}

static int kmod_poll(struct ember_source *src, int timeout_ms,
		     ember_record_fn fn, void *ctx)
{
	struct pollfd pfd[2] = {
		{ .fd = src->fd, .events = POLLIN },
		{ .fd = src->wake_fd, .events = POLLIN },	/* -1: ignored */
	};
	int n = 0;

	if (timeout_ms && poll(pfd, 2, timeout_ms) < 0 && errno == EINTR)
		return -EINTR;
	if (pfd[1].revents & POLLIN)
		wake_fd_clear(src->wake_fd);
	for (uint32_t i = 0; i < src->nr_rings; i++)
		if (src->rings[i].data)
			n += kmod_drain(src->rings[i].ctrl, src->rings[i].data,
					src->rings[i].data_size, src->copy, fn,
					ctx, &src->corrupt);
	return n;
}

static void kmod_wake(struct ember_source *src)
{
	wake_fd_signal(src->wake_fd);
}

static int kmod_set_filter(struct ember_source *src, const uint32_t *pids,
			   size_t nr_pids, uint64_t cgroup_id)
{
	struct nl_msg *msg = genl_msg(src->family, EMBER_CMD_SET_FILTER, false);
	int r;

	if (!msg)
		return -ENOMEM;
	r = put_filter(msg, pids, nr_pids, cgroup_id);
	if (r) {
		nlmsg_free(msg);
		return r;
	}
	return genl_request(src->sk, msg, false, NULL, NULL);
}

static void add_cpu_stats(const struct kmod_cpu_stats *c, void *arg)
{
	struct ember_source_stats *st = arg;

	st->samples += c->samples;
	st->records += c->records;
	st->lost += c->lost;
	st->filtered += c->filtered;
	st->handler_ns += c->handler_ns;
	st->offcpu_overflow += c->offcpu_overflow;
	st->lock_waits += c->lock_waits;
	st->lock_overflow += c->lock_overflow;
	st->lock_wakers += c->lock_wakers;
	st->nr_cpus++;
}

static int kmod_stats(struct ember_source *src, struct ember_source_stats *st)
{
	struct stats_walk w = { add_cpu_stats, st };
	struct nl_msg *msg = genl_msg(src->family, EMBER_CMD_GET_STATS, true);
	uint64_t ring_lost = 0;
	int r;

	memset(st, 0, sizeof(*st));
	r = msg ? genl_request(src->sk, msg, true, parse_stats, &w) : -ENOMEM;
	/* the ctrl pages count ring-full drops even if the dump failed */
	for (uint32_t i = 0; i < src->nr_rings; i++)
		if (src->rings[i].ctrl)
			ring_lost += __atomic_load_n(&src->rings[i].ctrl->lost,
						     __ATOMIC_RELAXED);
	if (ring_lost > st->lost)
		st->lost = ring_lost;
	if (!st->nr_cpus)
		st->nr_cpus = src->nr_rings;
	st->corrupt = src->corrupt;
	return r;
}

static int kmod_stop(struct ember_source *src)
{
	struct nl_msg *msg;

	if (!src->running)
		return 0;
	src->running = false;
	msg = genl_msg(src->family, EMBER_CMD_STOP, false);
	return msg ? genl_request(src->sk, msg, false, NULL, NULL) : -ENOMEM;
}

/* ---- unwind tables (the unwind worker's thread) ---------------------- */

/* The unwind socket, connected on first use. uw_lock held. */
static struct nl_sock *kmod_uw_sock(struct ember_source *src)
{
	if (!src->uw_sk) {
		if (kmod_connect(&src->uw_sk, &src->uw_family))
			return NULL;
		/* 60 KB chunks: room for a few in flight */
		nl_socket_set_buffer_size(src->uw_sk, 1 << 20, 1 << 20);
	}
	return src->uw_sk;
}

static int kmod_unwind_send(struct ember_source *src, struct nl_msg *msg,
			    char *err, size_t err_len)
{
	struct nl_sock *sk = kmod_uw_sock(src);

	if (!sk) {
		nlmsg_free(msg);
		if (err)
			snprintf(err, err_len, "cannot open a netlink socket to the module");
		return -EIO;
	}
	return genl_request_err(sk, msg, false, NULL, NULL, err, err_len);
}

static struct nl_msg *kmod_unwind_msg(struct ember_source *src, uint8_t cmd,
				      size_t payload)
{
	struct nl_msg *msg = nlmsg_alloc_size(payload + 1024);

	if (msg && !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ,
				src->uw_family, 0, 0, cmd, EMBER_GENL_VERSION)) {
		nlmsg_free(msg);
		msg = NULL;
	}
	return msg;
}

static int kmod_unwind_load(struct ember_source *src, uint32_t id,
			    const void *table, size_t len, char *err,
			    size_t err_len)
{
	int r = 0;

	if (len > EMBER_UNWIND_MAX_TABLE)
		return -E2BIG;
	pthread_mutex_lock(&src->uw_lock);
	for (size_t off = 0; off < len && !r; off += EMBER_UNWIND_CHUNK_MAX) {
		size_t n = len - off < EMBER_UNWIND_CHUNK_MAX ?
			   len - off : EMBER_UNWIND_CHUNK_MAX;
		struct nl_msg *msg;

		if (!kmod_uw_sock(src)) {
			r = -EIO;
			break;
		}
		msg = kmod_unwind_msg(src, EMBER_CMD_UNWIND_LOAD, n);
		if (!msg || nla_put_u32(msg, EMBER_A_UNWIND_TABLE_ID, id) ||
		    nla_put_u32(msg, EMBER_A_UNWIND_TABLE_SIZE, (uint32_t)len) ||
		    nla_put_u32(msg, EMBER_A_UNWIND_OFFSET, (uint32_t)off) ||
		    nla_put(msg, EMBER_A_UNWIND_DATA, (int)n,
			    (const char *)table + off)) {
			nlmsg_free(msg);
			r = -ENOMEM;
			break;
		}
		r = kmod_unwind_send(src, msg, err, err_len);
	}
	pthread_mutex_unlock(&src->uw_lock);
	return r;
}

static int kmod_unwind_drop(struct ember_source *src, uint32_t id)
{
	struct nl_msg *msg;
	int r = -EIO;

	pthread_mutex_lock(&src->uw_lock);
	if (kmod_uw_sock(src)) {
		msg = kmod_unwind_msg(src, EMBER_CMD_UNWIND_DROP, 0);
		if (msg && !nla_put_u32(msg, EMBER_A_UNWIND_TABLE_ID, id))
			r = kmod_unwind_send(src, msg, NULL, 0);
		else
			nlmsg_free(msg);
	}
	pthread_mutex_unlock(&src->uw_lock);
	return r;
}

static int kmod_unwind_bind(struct ember_source *src, uint32_t pid,
			    const struct ember_unwind_mapping *maps, size_t nr,
			    char *err, size_t err_len)
{
	size_t bytes = nr * sizeof(*maps);
	struct nl_msg *msg;
	int r = -EIO;

	if (nr > EMBER_UNWIND_MAX_MAPPINGS)
		nr = EMBER_UNWIND_MAX_MAPPINGS, bytes = nr * sizeof(*maps);
	pthread_mutex_lock(&src->uw_lock);
	if (kmod_uw_sock(src)) {
		msg = kmod_unwind_msg(src, EMBER_CMD_UNWIND_BIND, bytes);
		if (msg && !nla_put_u32(msg, EMBER_A_UNWIND_PID, pid) &&
		    (!nr || !nla_put(msg, EMBER_A_UNWIND_MAPPINGS, (int)bytes, maps)))
			r = kmod_unwind_send(src, msg, err, err_len);
		else
			nlmsg_free(msg), r = -ENOMEM;
	}
	pthread_mutex_unlock(&src->uw_lock);
	return r;
}

/*
 * EMBER_CMD_PY_BIND (py NULL unbinds). On the unwind socket, like
 * unwind_bind: the module checks every field and says what it refused in
 * the extack message, which lands in err.
 */
static int kmod_py_bind(struct ember_source *src, uint32_t pid,
			const struct ember_py_proc *py, char *err,
			size_t err_len)
{
	struct nl_msg *msg;
	int r = -EIO;

	if (!(src->info.caps & EMBER_CAP_PYTHON)) {
		if (err)
			snprintf(err, err_len,
				 "this ember module does not walk Python frames (older than EMBER_CAP_PYTHON): load a newer ember.ko, or use --backend bpf");
		return -EOPNOTSUPP;
	}
	pthread_mutex_lock(&src->uw_lock);
	if (kmod_uw_sock(src)) {
		msg = kmod_unwind_msg(src, EMBER_CMD_PY_BIND,
				      py ? sizeof(*py) : 0);
		if (msg && !nla_put_u32(msg, EMBER_A_PY_PID, pid) &&
		    (!py || !nla_put(msg, EMBER_A_PY_PROC, (int)sizeof(*py), py)))
			r = kmod_unwind_send(src, msg, err, err_len);
		else
			nlmsg_free(msg), r = -ENOMEM;
	} else if (err) {
		snprintf(err, err_len, "cannot open a netlink socket to the module");
	}
	pthread_mutex_unlock(&src->uw_lock);
	return r;
}

/*
 * A module older than in-use under -p cannot follow blocks to their
 * free: its caller hands it the entry points alone.
 */
static bool kmod_alloc_follows_free(struct ember_source *src)
{
	return src->info.caps & EMBER_CAP_ALLOC_INUSE;
}

/*
 * EMBER_CMD_ALLOC_ATTACH: the module places (or refuses) them all. With a
 * pid (a running process's allocator entry points) the module puts the
 * breakpoints in that process's address space alone and samples by
 * bytes at the session's rate; an older module's entry points alone
 * (kmod_alloc_follows_free()), said on success.
 */
static int kmod_alloc_attach(struct ember_source *src, uint32_t pid,
			     const char *path,
			     const struct ember_alloc_probe *probes, size_t nr,
			     char *err, size_t err_len)
{
	uint64_t rate = src->cfg.alloc_rate ? src->cfg.alloc_rate :
			EMBER_DEFAULT_ALLOC_RATE;
	bool inuse = pid && (src->info.caps & EMBER_CAP_ALLOC_INUSE) &&
		     !src->cfg.alloc_no_inuse;
	struct nl_msg *msg;
	int r;

	if (pid && !(src->info.caps & EMBER_CAP_ALLOC_ENTRY)) {
		snprintf(err, err_len,
			 "this ember module cannot probe a running process's allocator (older than -e alloc -p): load a newer ember.ko, or use --backend bpf");
		return -EOPNOTSUPP;
	}
	if (!nr || nr > EMBER_MAX_ALLOC_PROBES) {
		snprintf(err, err_len, "%zu allocation probes: 1 to %d", nr,
			 EMBER_MAX_ALLOC_PROBES);
		return -E2BIG;
	}
	msg = genl_msg(src->family, EMBER_CMD_ALLOC_ATTACH, false);
	if (!msg || nla_put_string(msg, EMBER_A_ALLOC_PATH, path) ||
	    nla_put(msg, EMBER_A_ALLOC_PROBES, (int)(nr * sizeof(*probes)),
		    probes) ||
	    (pid && (nla_put_u32(msg, EMBER_A_ALLOC_PID, pid) ||
		     nla_put_u64(msg, EMBER_A_ALLOC_RATE, rate))) ||
	    (inuse && nla_put_flag(msg, EMBER_A_ALLOC_INUSE))) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	r = genl_request_err(src->sk, msg, false, NULL, NULL, err, err_len);
	if (!r && pid && !(src->info.caps & EMBER_CAP_ALLOC_INUSE))
		snprintf(err, err_len,
			 "this ember module does not follow sampled blocks to their free (older than in-use under -p): no in-use bytes for this process");
	return r;
}

static void kmod_close(struct ember_source *src)
{
	if (!src)
		return;
	if (src->uw_sk)
		nl_socket_free(src->uw_sk);
	if (src->sk)
		kmod_stop(src);
	for (uint32_t i = 0; i < src->nr_rings; i++)
		if (src->rings[i].map)
			munmap(src->rings[i].map, src->rings[i].map_len);
	free(src->rings);
	if (src->fd >= 0)
		close(src->fd);
	if (src->wake_fd >= 0)
		close(src->wake_fd);
	if (src->sk)
		nl_socket_free(src->sk);
	free(src->pids);
	free(src->copy);
	free(src);
}

/* What -e lock can follow with this module on this kernel (GET_INFO). */
static uint64_t kmod_lock_caps(struct ember_source *src)
{
	return src->info.caps & (EMBER_CAP_LOCK_FUTEX | EMBER_CAP_LOCK_KERNEL |
				 EMBER_CAP_LOCK_WAITV);
}

const struct ember_source_ops ember_source_kmod = {
	.name = "kmod",
	.probe = kmod_probe,
	.open = kmod_open,
	.start = kmod_start,
	.poll = kmod_poll,
	.wake = kmod_wake,
	.set_filter = kmod_set_filter,
	.stats = kmod_stats,
	.stop = kmod_stop,
	.close = kmod_close,
	.unwind_load = kmod_unwind_load,
	.unwind_drop = kmod_unwind_drop,
	.unwind_bind = kmod_unwind_bind,
	.alloc_attach = kmod_alloc_attach,
	.alloc_follows_free = kmod_alloc_follows_free,
	.lock_caps = kmod_lock_caps,
	.py_bind = kmod_py_bind,
};
