// SPDX-License-Identifier: GPL-2.0
/*
 * ember-test: a small client for ember.ko, for the VM tests and for anyone
 * who wants to see what the module produces. It drives the generic netlink
 * family, maps the rings from /dev/ember, decodes every record and prints
 * it, optionally symbolized (user addresses of a non-PIE test program with
 * its `nm -n` output, kernel addresses with /proc/kallsyms).
 *
 *   ember-test info
 *   ember-test run [options]        start, read, stop, print stats
 *   ember-test hold SECONDS [opts]  start and keep the socket, never read
 *   ember-test stop | stats
 *   ember-test badreq NAME          send one malformed request; exit 0 if
 *                                   the kernel refused it
 *   ember-test alloc PROG           allocation probes on PROG (allocprobe):
 *                                   refusals, records, semaphore, detach
 *   ember-test alloc-hold PROG SECS start an EMBER_EV_ALLOC session, attach
 *                                   PROG's probes, hold them (never read)
 * Options: -f HZ -e EVENTS(mask) -c (cycles) -k KMAX -u UMAX -p PID...
 *   -g CGROUPID -r RING_SIZE -w WATERMARK -i (idle) -d SECONDS
 *   -n SECONDS (do not read for that long first) -q (no record lines)
 *   -F (folded stacks summary) -N NMFILE -K (kallsyms) -m OFFCPU_MIN_NS
 *   -P PPM -B (write absurd consumer positions and never read: the kernel
 *   must treat the rings as full, not write outside them)
 *   -s SECS:PID (replace the filter by that one pid after SECS)
 *   -W MS (poll timeout; "poll ready=N timeout=M" tells how often the
 *   watermark woke the reader)
 *   -L NS (LOCK_MIN_NS) -Z (EMBER_F_LOCK_WAKER): with -e 32, the lock
 *   records print as "lock ..." and "waker ..." lines
 *   -y PID (bind that Debian 12 python3.11 with EMBER_CMD_PY_BIND after
 *   START; Python frames print as py:CODE:CHECK:OFFSET, cuts as pycut:WHY)
 *   -T DIR (with -y: load DIR/NAME.tbl CFI tables for its mappings first)
 *   ember-test pybad                PY_BIND refusals and limits
 *   ember-test pyscribble PID SECS FRAMEOBJ...  rewrite those frames
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "uapi/ember.h"
#include "ember_unwind.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

struct opts {
	uint32_t freq, events, clock, kmax, umax, ring_size, watermark, ppm;
	uint64_t cgroup, offcpu_min, lock_min;
	bool have_lock_min, lock_waker;
	bool have_freq, have_kmax, have_umax, have_ring, have_wm, have_cg;
	bool have_min, have_ppm, idle, quiet, folded, kallsyms, bogus;
	double refilter_at;	/* -s SECS:PID: SET_FILTER to PID at SECS */
	int poll_ms;		/* -W MS: poll timeout (default 50) */
	uint32_t refilter_pid;
	uint32_t py_pid;	/* -y PID: bind that python3.11 (PY_BIND) */
	const char *py_tables;	/* -T DIR: its CFI tables (NAME.tbl) too */
	uint32_t pids[EMBER_MAX_FILTER_PIDS];
	unsigned int nr_pids;
	double duration, nodrain;
	const char *nm;
};

static struct nl_sock *sk;
static int family;
/* `run` ends early, with its summary, on SIGINT/SIGTERM */
static volatile sig_atomic_t stop_signalled;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_signalled = 1;
}
static char last_errmsg[256];
static int last_err;

/* ---------------------------------------------------------------- netlink */

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *err, void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)err - 1;
	size_t off = sizeof(*err);
	struct nlattr *a;
	int rem;

	(void)nla;
	(void)arg;
	last_err = err->error;
	last_errmsg[0] = '\0';
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += err->msg.nlmsg_len - sizeof(struct nlmsghdr);
	if (NLMSG_HDRLEN + off > nlh->nlmsg_len)
		return NL_STOP;
	rem = nlh->nlmsg_len - NLMSG_HDRLEN - off;
	for (a = (struct nlattr *)((char *)err + off); nla_ok(a, rem);
	     a = nla_next(a, &rem))
		if (nla_type(a) == NLMSGERR_ATTR_MSG)
			snprintf(last_errmsg, sizeof(last_errmsg), "%.*s",
				 nla_len(a), (char *)nla_data(a));
	return NL_STOP;
}

/* extack messages also come with successful acks (warnings) */
static int on_ack(struct nl_msg *msg, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);

	(void)arg;
	last_err = 0;
	if (nlh->nlmsg_type == NLMSG_ERROR)
		on_error(NULL, nlmsg_data(nlh), NULL);
	return NL_STOP;
}

static void nl_open(void)
{
	int one = 1;

	sk = nl_socket_alloc();
	if (!sk || genl_connect(sk)) {
		fprintf(stderr, "ember-test: cannot open a generic netlink socket\n");
		exit(2);
	}
	setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one,
		   sizeof(one));
	family = genl_ctrl_resolve(sk, EMBER_GENL_NAME);
	if (family < 0) {
		fprintf(stderr, "ember-test: genl family '%s' not found: is ember.ko loaded?\n",
			EMBER_GENL_NAME);
		exit(2);
	}
	nl_socket_modify_err_cb(sk, NL_CB_CUSTOM, on_error, NULL);
	nl_socket_modify_cb(sk, NL_CB_ACK, NL_CB_CUSTOM, on_ack, NULL);
}

static struct nl_msg *req(uint8_t cmd, int flags)
{
	/* room for the largest attribute the tests send */
	struct nl_msg *m = nlmsg_alloc_size(65536);

	if (!m || !genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags,
			       cmd, EMBER_GENL_VERSION)) {
		fprintf(stderr, "ember-test: out of memory\n");
		exit(2);
	}
	return m;
}

/* Sends m, runs callback cb on replies; returns 0 or -errno. */
static int transact(struct nl_msg *m, nl_recvmsg_msg_cb_t cb, void *arg)
{
	int ret;

	last_err = 1;	/* no ack seen yet */
	last_errmsg[0] = '\0';
	if (cb)
		nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, cb, arg);
	ret = nl_send_auto(sk, m);
	nlmsg_free(m);
	if (ret < 0)
		return -EIO;
	while (last_err == 1) {
		ret = nl_recvmsgs_default(sk);
		if (ret < 0 && last_err == 1)
			return -EIO;
	}
	return last_err;
}

struct info {
	uint32_t version, nr_rings, ring_size, freq, clock_used, events;
	uint64_t caps;
	uint8_t running;
	uint64_t uw_used, uw_cap;
	uint32_t uw_tables, uw_bound;
};

static int parse_info(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[EMBER_A_MAX + 1];
	struct info *in = arg;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, EMBER_A_MAX, NULL))
		return NL_SKIP;
#define U32(a, f) do { if (tb[a]) in->f = nla_get_u32(tb[a]); } while (0)
	U32(EMBER_A_VERSION, version);
	U32(EMBER_A_NR_RINGS, nr_rings);
	U32(EMBER_A_RING_SIZE, ring_size);
	U32(EMBER_A_FREQ, freq);
	U32(EMBER_A_CLOCK_EVENT_USED, clock_used);
	U32(EMBER_A_EVENTS, events);
#undef U32
	if (tb[EMBER_A_CAPS])
		in->caps = nla_get_u64(tb[EMBER_A_CAPS]);
	if (tb[EMBER_A_RUNNING])
		in->running = nla_get_u8(tb[EMBER_A_RUNNING]);
	if (tb[EMBER_A_UNWIND_MEM_USED])
		in->uw_used = nla_get_u64(tb[EMBER_A_UNWIND_MEM_USED]);
	if (tb[EMBER_A_UNWIND_MEM_CAP])
		in->uw_cap = nla_get_u64(tb[EMBER_A_UNWIND_MEM_CAP]);
	if (tb[EMBER_A_UNWIND_TABLES])
		in->uw_tables = nla_get_u32(tb[EMBER_A_UNWIND_TABLES]);
	if (tb[EMBER_A_UNWIND_BOUND])
		in->uw_bound = nla_get_u32(tb[EMBER_A_UNWIND_BOUND]);
	return NL_OK;
}

#define MAX_CPUS 1024
struct cpu_stats {
	bool seen, online;
	uint64_t samples, filtered, records, lost, handler_ns;
	uint64_t switches, overflow, offcpu_ns, alloc_hits, ucfi;
	uint64_t lock_waits, lock_overflow, lock_wakers;
};
static struct cpu_stats stats[MAX_CPUS];
/* online as seen just before STOP, which turns every CPU off */
static bool live_online[MAX_CPUS], have_live;

static int parse_stats(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[EMBER_A_MAX + 1], *st[EMBER_STAT_MAX + 1];
	struct cpu_stats *c;
	uint32_t cpu;

	(void)arg;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, EMBER_A_MAX, NULL) ||
	    !tb[EMBER_A_STATS] ||
	    nla_parse_nested(st, EMBER_STAT_MAX, tb[EMBER_A_STATS], NULL) ||
	    !st[EMBER_STAT_CPU])
		return NL_SKIP;
	cpu = nla_get_u32(st[EMBER_STAT_CPU]);
	if (cpu >= MAX_CPUS)
		return NL_SKIP;
	c = &stats[cpu];
	c->seen = true;
#define U64(a, f) do { if (st[a]) c->f = nla_get_u64(st[a]); } while (0)
	U64(EMBER_STAT_SAMPLES, samples);
	U64(EMBER_STAT_FILTERED, filtered);
	U64(EMBER_STAT_RECORDS, records);
	U64(EMBER_STAT_LOST, lost);
	U64(EMBER_STAT_HANDLER_NS, handler_ns);
	U64(EMBER_STAT_OFFCPU_SWITCHES, switches);
	U64(EMBER_STAT_OFFCPU_OVERFLOW, overflow);
	U64(EMBER_STAT_OFFCPU_NS, offcpu_ns);
	U64(EMBER_STAT_ALLOC_HITS, alloc_hits);
	U64(EMBER_STAT_USTACK_CFI, ucfi);
	U64(EMBER_STAT_LOCK_WAITS, lock_waits);
	U64(EMBER_STAT_LOCK_OVERFLOW, lock_overflow);
	U64(EMBER_STAT_LOCK_WAKERS, lock_wakers);
#undef U64
	if (st[EMBER_STAT_ONLINE])
		c->online = nla_get_u8(st[EMBER_STAT_ONLINE]);
	return NL_OK;
}

static int get_stats(void)
{
	struct nl_msg *m = req(EMBER_CMD_GET_STATS, NLM_F_DUMP);
	int ret;

	memset(stats, 0, sizeof(stats));
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, parse_stats, NULL);
	ret = nl_send_auto(sk, m);
	nlmsg_free(m);
	if (ret < 0)
		return ret;
	last_err = 0;
	ret = nl_recvmsgs_default(sk);
	if (ret < 0)
		return ret;
	return last_err;
}

static void report(const char *what, int ret)
{
	if (ret)
		fprintf(stderr, "ember-test: %s: %s%s%s\n", what, strerror(-ret),
			last_errmsg[0] ? ": " : "", last_errmsg);
	else if (last_errmsg[0])
		fprintf(stderr, "ember-test: %s: warning: %s\n", what,
			last_errmsg);
}

static int do_start(const struct opts *o, struct info *in)
{
	struct nl_msg *m = req(EMBER_CMD_START, NLM_F_ACK);
	uint32_t flags = (o->idle ? EMBER_F_INCLUDE_IDLE : 0) |
			 (o->lock_waker ? EMBER_F_LOCK_WAKER : 0);
	int ret;

	nla_put_u32(m, EMBER_A_EVENTS, o->events);
	nla_put_u32(m, EMBER_A_CLOCK_EVENT, o->clock);
	nla_put_u32(m, EMBER_A_FLAGS, flags);
	if (o->have_freq)
		nla_put_u32(m, EMBER_A_FREQ, o->freq);
	if (o->have_kmax)
		nla_put_u32(m, EMBER_A_KSTACK_MAX, o->kmax);
	if (o->have_umax)
		nla_put_u32(m, EMBER_A_USTACK_MAX, o->umax);
	if (o->have_ring)
		nla_put_u32(m, EMBER_A_RING_SIZE, o->ring_size);
	if (o->have_wm)
		nla_put_u32(m, EMBER_A_WATERMARK, o->watermark);
	if (o->nr_pids)
		nla_put(m, EMBER_A_FILTER_PIDS, o->nr_pids * 4, o->pids);
	if (o->have_cg)
		nla_put_u64(m, EMBER_A_FILTER_CGROUP, o->cgroup);
	if (o->have_min)
		nla_put_u64(m, EMBER_A_OFFCPU_MIN_NS, o->offcpu_min);
	if (o->have_ppm)
		nla_put_u32(m, EMBER_A_OFFCPU_SAMPLE_PPM, o->ppm);
	if (o->have_lock_min)
		nla_put_u64(m, EMBER_A_LOCK_MIN_NS, o->lock_min);
	memset(in, 0, sizeof(*in));
	ret = transact(m, parse_info, in);
	report("start", ret);
	return ret;
}

static int do_simple(uint8_t cmd, const char *what)
{
	int ret = transact(req(cmd, NLM_F_ACK), NULL, NULL);

	report(what, ret);
	return ret;
}

/* ---------------------------------------------------------------- symbols */

struct sym {
	uint64_t addr;
	char *name;
};

struct symtab {
	struct sym *s;
	size_t n, cap;
	uint64_t lo, hi;
};

static struct symtab usyms, ksyms;

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void load_syms(struct symtab *t, const char *path, bool text_only)
{
	char line[512], name[256], type;
	unsigned long long addr;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "ember-test: %s: %s\n", path, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if (text_only && !strchr("TtWw", type))
			continue;
		if (!addr)
			continue;
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 1024;
			t->s = realloc(t->s, t->cap * sizeof(*t->s));
			if (!t->s)
				exit(2);
		}
		t->s[t->n].addr = addr;
		t->s[t->n].name = strdup(name);
		t->n++;
	}
	fclose(f);
	qsort(t->s, t->n, sizeof(*t->s), cmp_sym);
	if (t->n) {
		t->lo = t->s[0].addr;
		/* the last symbol's size is unknown: allow 64 KiB past it */
		t->hi = t->s[t->n - 1].addr + 65536;
	}
}

static const char *lookup(struct symtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->n;

	if (!t->n || addr < t->lo || addr >= t->hi)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (t->s[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return t->s[lo].name;
}

/* frame i of a run: return addresses point after the call */
static void fmt_frame(char *buf, size_t len, struct symtab *t, uint64_t ip,
		      int i)
{
	const char *n = lookup(t, i ? ip - 1 : ip);

	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "0x%" PRIx64, ip);
}

/*
 * User slot i of ips[0..nu): a Python frame (EMBER_IP_PY: "py:CODE:CHECK:OFF",
 * two slots) or cut ("pycut:WHY"), else a native frame. Returns the extra
 * slots consumed (1 for a Python frame, else 0).
 */
static unsigned int fmt_user(char *buf, size_t len, const __u64 *ips,
			     unsigned int nu, unsigned int i)
{
	uint64_t ip = ips[i];

	if (EMBER_IP_TAG(ip) == EMBER_IP_TAG(EMBER_IP_PY)) {
		if (i + 1 >= nu) {
			snprintf(buf, len, "py-half:0x%" PRIx64, (uint64_t)EMBER_IP_VALUE(ip));
			return 0;
		}
		snprintf(buf, len, "py:0x%" PRIx64 ":0x%08x:%u",
			 (uint64_t)EMBER_IP_VALUE(ip), (uint32_t)(ips[i + 1] >> 32),
			 (uint32_t)ips[i + 1]);
		return 1;
	}
	if (EMBER_IP_TAG(ip) == EMBER_IP_TAG(EMBER_IP_PY_CUT)) {
		snprintf(buf, len, "pycut:%" PRIu64, (uint64_t)EMBER_IP_VALUE(ip));
		return 0;
	}
	fmt_frame(buf, len, &usyms, ip, (int)i);
	return 0;
}

/* ------------------------------------------------------------ folded stacks */

#define FOLD_SLOTS 8192
struct fold {
	char *key;
	uint64_t count;
	uint64_t weight;
};
static struct fold folds[FOLD_SLOTS];
static unsigned int nr_folds, fold_dropped;

static void fold_add(const char *key, uint64_t weight)
{
	uint64_t h = 1469598103934665603ULL;
	const char *p;
	unsigned int i;

	for (p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	for (i = 0; i < FOLD_SLOTS; i++) {
		struct fold *f = &folds[(h + i) % FOLD_SLOTS];

		if (!f->key) {
			if (nr_folds >= FOLD_SLOTS / 2) {
				fold_dropped++;
				return;
			}
			f->key = strdup(key);
			nr_folds++;
		}
		if (!strcmp(f->key, key)) {
			f->count++;
			f->weight += weight;
			return;
		}
	}
}

/* ---------------------------------------------------------------- records */

struct ring {
	struct ember_ring_ctrl *ctrl;
	uint8_t *data;
	uint64_t size, cons;
	uint64_t read[__EMBER_REC_MAX + 1], pads, corrupt;
};

static struct ring rings[MAX_CPUS];
static unsigned int nr_rings;

/* per-CPU sample timestamps: the delivered rate, free of START/STOP time */
static uint64_t ts_first[MAX_CPUS], ts_last[MAX_CPUS], ts_n[MAX_CPUS];

static void print_sample(const struct opts *o, const struct ember_sample *s,
			 uint32_t size)
{
	static char line[65536], key[65536];
	unsigned int nk = s->nr_kernel, nu = s->nr_user, i;
	size_t len = 0, klen = 0;
	char fr[300];

	if (sizeof(*s) + (size_t)(nk + nu) * 8 > size) {
		printf("bad-sample size=%u nk=%u nu=%u\n", size, nk, nu);
		return;
	}
	if (!o->quiet) {
		len += snprintf(line + len, sizeof(line) - len,
				"%s cpu=%u pid=%u tid=%u comm=%.16s flags=0x%x state=%u t=%" PRIu64
				" w=%" PRIu64 " cg=%" PRIu64 " nk=%u nu=%u k=",
				s->hdr.type == EMBER_REC_SAMPLE ? "sample" : "offcpu",
				s->cpu, s->pid, s->tid, s->comm, s->flags,
				s->state, (uint64_t)s->time_ns,
				(uint64_t)s->weight_ns, (uint64_t)s->cgroup_id,
				nk, nu);
		for (i = 0; i < nk && len < sizeof(line) - 400; i++) {
			fmt_frame(fr, sizeof(fr), &ksyms, s->ips[i], i);
			len += snprintf(line + len, sizeof(line) - len,
					"%s%s", i ? "," : "", fr);
		}
		len += snprintf(line + len, sizeof(line) - len, " u=");
		for (i = 0; i < nu && len < sizeof(line) - 400; i++) {
			i += fmt_user(fr, sizeof(fr), s->ips + nk, nu, i);
			len += snprintf(line + len, sizeof(line) - len,
					"%s%s", len && line[len - 1] != '=' ? "," : "", fr);
		}
		puts(line);
	}
	if (o->folded) {
		/* root first: comm; user frames; kernel frames */
		klen += snprintf(key, sizeof(key), "%s%.16s",
				 s->hdr.type == EMBER_REC_OFFCPU ? "off:" : "",
				 s->comm);
		for (i = nu; i-- > 0 && klen < sizeof(key) - 400;) {
			/* a Python frame's second slot: both printed from the first */
			if (i && EMBER_IP_TAG(s->ips[nk + i - 1]) ==
				 EMBER_IP_TAG(EMBER_IP_PY))
				continue;
			fmt_user(fr, sizeof(fr), s->ips + nk, nu, i);
			klen += snprintf(key + klen, sizeof(key) - klen, ";%s", fr);
		}
		for (i = nk; i-- > 0 && klen < sizeof(key) - 400;) {
			fmt_frame(fr, sizeof(fr), &ksyms, s->ips[i], i);
			klen += snprintf(key + klen, sizeof(key) - klen,
					 ";%s_[k]", fr);
		}
		fold_add(key, s->weight_ns);
	}
}

/*
 * Allocation records: printed, and kept for `alloc` to check (up to
 * MAX_KEPT of each).
 */
#define MAX_KEPT 4096
struct kept_alloc {
	uint32_t pid, nu, flags;
	uint64_t weight, addr, size, ip0;
	bool caller;		/* a user frame in the test's caller function */
};
static struct kept_alloc kept_allocs[MAX_KEPT];
static struct { uint32_t pid; uint64_t addr; } kept_frees[MAX_KEPT];
static unsigned int nr_kept_allocs, nr_kept_frees, nr_bad_alloc_records;
static uint64_t caller_lo, caller_hi;	/* [lo, hi): the caller to look for */

static void alloc_record(const struct opts *o, const struct ember_sample *s)
{
	unsigned int nk = s->nr_kernel, nu = s->nr_user, i;
	struct kept_alloc *k;

	if (sizeof(*s) + (size_t)(nk + nu + 2) * 8 != s->hdr.size) {
		printf("bad-alloc size=%u nk=%u nu=%u\n", s->hdr.size, nk, nu);
		nr_bad_alloc_records++;
		return;
	}
	if (!o->quiet)
		printf("alloc pid=%u tid=%u comm=%.16s flags=0x%x t=%" PRIu64
		       " w=%" PRIu64 " addr=0x%" PRIx64 " size=%" PRIu64
		       " nk=%u nu=%u\n", s->pid, s->tid, s->comm, s->flags,
		       (uint64_t)s->time_ns, (uint64_t)s->weight_ns,
		       (uint64_t)EMBER_ALLOC_ADDR(s),
		       (uint64_t)EMBER_ALLOC_SIZE(s), nk, nu);
	if (nr_kept_allocs == MAX_KEPT)
		return;
	k = &kept_allocs[nr_kept_allocs++];
	memset(k, 0, sizeof(*k));
	k->pid = s->pid;
	k->nu = nu;
	k->flags = s->flags;
	k->weight = s->weight_ns;
	k->addr = EMBER_ALLOC_ADDR(s);
	k->size = EMBER_ALLOC_SIZE(s);
	k->ip0 = nu ? s->ips[nk] : 0;
	if (nk)
		nr_bad_alloc_records++;	/* never kernel frames */
	for (i = 1; i < nu; i++)
		if (s->ips[nk + i] - 1 >= caller_lo &&
		    s->ips[nk + i] - 1 < caller_hi)
			k->caller = true;
}

static void free_record(const struct opts *o, const struct ember_free *f)
{
	if (f->hdr.size != sizeof(*f)) {
		printf("bad-free size=%u\n", f->hdr.size);
		nr_bad_alloc_records++;
		return;
	}
	if (!o->quiet)
		printf("free pid=%u tid=%u t=%" PRIu64 " addr=0x%" PRIx64 "\n",
		       f->pid, f->tid, (uint64_t)f->time_ns, (uint64_t)f->addr);
	if (nr_kept_frees == MAX_KEPT)
		return;
	kept_frees[nr_kept_frees].pid = f->pid;
	kept_frees[nr_kept_frees++].addr = f->addr;
}

/*
 * EMBER_REC_LOCK / _WAKER as one line each: the trailer's fields, then
 * the frames (symbolized like samples). A size that does not match the
 * frames plus the 24-byte trailer exactly is reported as bad.
 */
static unsigned int nr_bad_lock_records;

static void lock_frames(const struct ember_sample *s)
{
	unsigned int nk = s->nr_kernel, nu = s->nr_user, i;
	char fr[300];

	printf(" k=");
	for (i = 0; i < nk; i++) {
		fmt_frame(fr, sizeof(fr), &ksyms, s->ips[i], i);
		printf("%s%s", i ? "," : "", fr);
	}
	printf(" u=");
	for (i = 0; i < nu; i++) {
		fmt_frame(fr, sizeof(fr), &usyms, s->ips[nk + i], i);
		printf("%s%s", i ? "," : "", fr);
	}
	printf("\n");
}

static void lock_record(const struct opts *o, const struct ember_sample *s)
{
	unsigned int nk = s->nr_kernel, nu = s->nr_user;

	if (nk > EMBER_MAX_FRAMES || nu > EMBER_MAX_FRAMES ||
	    sizeof(*s) + (size_t)(nk + nu + 3) * 8 != s->hdr.size) {
		printf("bad-lock type=%u size=%u nk=%u nu=%u\n", s->hdr.type,
		       s->hdr.size, nk, nu);
		nr_bad_lock_records++;
		return;
	}
	if (o->quiet)
		return;
	if (s->hdr.type == EMBER_REC_LOCK) {
		const struct ember_lock_wait *w = EMBER_LOCK_WAIT(s);

		printf("lock pid=%u tid=%u comm=%.16s t=%" PRIu64 " w=%" PRIu64
		       " kind=%u op=%u lflags=0x%x addr=0x%" PRIx64
		       " start=%" PRIu64 " waker=%u mmap=%d nk=%u nu=%u",
		       s->pid, s->tid, s->comm, (uint64_t)s->time_ns,
		       (uint64_t)s->weight_ns, w->kind, w->futex_op, w->flags,
		       (uint64_t)w->addr, (uint64_t)w->start_ns, w->waker_tid,
		       !!(w->flags & EMBER_LOCK_F_MMAP_LOCK), nk, nu);
	} else {
		const struct ember_lock_waker *w = EMBER_LOCK_WAKER(s);

		printf("waker pid=%u tid=%u comm=%.16s t=%" PRIu64 " w=%" PRIu64
		       " waiter_pid=%u waiter_tid=%u addr=0x%" PRIx64
		       " start=%" PRIu64 " nk=%u nu=%u",
		       s->pid, s->tid, s->comm, (uint64_t)s->time_ns,
		       (uint64_t)s->weight_ns, w->waiter_pid, w->waiter_tid,
		       (uint64_t)w->addr, (uint64_t)w->start_ns, nk, nu);
	}
	lock_frames(s);
}

static void handle(const struct opts *o, const struct ember_rec_header *h)
{
	const struct ember_exec *ex = (const void *)h;
	const struct ember_exit *xt = (const void *)h;

	switch (h->type) {
	case EMBER_REC_SAMPLE:
	case EMBER_REC_OFFCPU:
		if (h->size >= sizeof(struct ember_sample)) {
			const struct ember_sample *s = (const void *)h;

			if (h->type == EMBER_REC_SAMPLE && s->cpu < MAX_CPUS) {
				if (!ts_n[s->cpu]++)
					ts_first[s->cpu] = s->time_ns;
				ts_last[s->cpu] = s->time_ns;
			}
			print_sample(o, s, h->size);
		}
		break;
	case EMBER_REC_ALLOC:
		if (h->size >= sizeof(struct ember_sample))
			alloc_record(o, (const void *)h);
		break;
	case EMBER_REC_FREE:
		if (h->size >= sizeof(struct ember_free))
			free_record(o, (const void *)h);
		break;
	case EMBER_REC_LOCK:
	case EMBER_REC_LOCK_WAKER:
		if (h->size >= sizeof(struct ember_sample))
			lock_record(o, (const void *)h);
		else
			nr_bad_lock_records++;
		break;
	case EMBER_REC_EXEC:
		if (!o->quiet && h->size >= sizeof(*ex) &&
		    ex->filename_len <= h->size - sizeof(*ex))
			printf("exec pid=%u tid=%u comm=%.16s t=%" PRIu64 " file=%.*s\n",
			       ex->pid, ex->tid, ex->comm, (uint64_t)ex->time_ns,
			       (int)ex->filename_len, ex->filename);
		break;
	case EMBER_REC_EXIT:
		if (!o->quiet && h->size >= sizeof(*xt))
			printf("exit pid=%u tid=%u comm=%.16s t=%" PRIu64 " code=%d\n",
			       xt->pid, xt->tid, xt->comm, (uint64_t)xt->time_ns,
			       xt->exit_code);
		break;
	default:
		break;
	}
}

/* Reads everything published in ring r. */
static void drain(const struct opts *o, struct ring *r)
{
	uint64_t prod = __atomic_load_n(&r->ctrl->producer, __ATOMIC_ACQUIRE);
	const struct ember_rec_header *h;
	uint64_t off;

	while (r->cons < prod) {
		off = r->cons & (r->size - 1);
		h = (const void *)(r->data + off);
		if (h->size < 8 || h->size % 8 || h->size > prod - r->cons ||
		    off + h->size > r->size) {
			/* never trust the ring either: resynchronize */
			r->corrupt++;
			r->cons = prod;
			break;
		}
		if (h->type == EMBER_REC_PAD)
			r->pads++;
		else if (h->type < __EMBER_REC_MAX)
			r->read[h->type]++;
		else
			r->read[__EMBER_REC_MAX]++;
		handle(o, h);
		r->cons += h->size;
	}
	__atomic_store_n(&r->ctrl->consumer, r->cons, __ATOMIC_RELEASE);
}

static int map_rings(const struct info *in)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t stride = EMBER_RING_MAP_SIZE(page, in->ring_size);
	unsigned int i;
	void *p;
	int fd;

	fd = open("/dev/" EMBER_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "ember-test: /dev/ember: %s\n", strerror(errno));
		return -1;
	}
	nr_rings = in->nr_rings < MAX_CPUS ? in->nr_rings : MAX_CPUS;
	for (i = 0; i < nr_rings; i++) {
		p = mmap(NULL, stride, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 (off_t)(i * stride));
		if (p == MAP_FAILED)
			continue;	/* impossible CPU */
		rings[i].ctrl = p;
		rings[i].data = (uint8_t *)p + rings[i].ctrl->data_offset;
		rings[i].size = in->ring_size;
		rings[i].cons = rings[i].ctrl->consumer;
	}
	return fd;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void drain_all(const struct opts *o)
{
	unsigned int i;

	for (i = 0; i < nr_rings; i++)
		if (rings[i].ctrl)
			drain(o, &rings[i]);
}

static void print_stats(double secs)
{
	uint64_t samples = 0, filtered = 0, records = 0, lost = 0, hns = 0;
	uint64_t read = 0, ctrl_lost = 0, corrupt = 0, sw = 0, ovf = 0, ah = 0;
	uint64_t lw = 0, lo = 0, lk = 0;
	unsigned int i, t;

	for (i = 0; i < MAX_CPUS; i++) {
		struct cpu_stats *c = &stats[i];
		uint64_t r = 0;

		if (!c->seen)
			continue;
		if (i < nr_rings && rings[i].ctrl) {
			for (t = 1; t <= __EMBER_REC_MAX; t++)
				r += rings[i].read[t];
			ctrl_lost += rings[i].ctrl->lost;
			corrupt += rings[i].corrupt;
		}
		printf("stats cpu=%u online=%d samples=%" PRIu64 " filtered=%" PRIu64
		       " records=%" PRIu64 " lost=%" PRIu64 " read=%" PRIu64
		       " handler_ns=%" PRIu64 " switches=%" PRIu64
		       " overflow=%" PRIu64 " offcpu_ns=%" PRIu64 " rate_hz=%.1f"
		       " ts_rate_hz=%.1f\n",
		       i, have_live ? live_online[i] : c->online, c->samples,
		       c->filtered, c->records, c->lost,
		       r, c->handler_ns, c->switches, c->overflow, c->offcpu_ns,
		       secs > 0 ? c->samples / secs : 0.0,
		       ts_n[i] > 1 && ts_last[i] > ts_first[i] ?
		       (ts_n[i] - 1) * 1e9 / (ts_last[i] - ts_first[i]) : 0.0);
		samples += c->samples;
		filtered += c->filtered;
		records += c->records;
		lost += c->lost;
		hns += c->handler_ns;
		sw += c->switches;
		ovf += c->overflow;
		ah += c->alloc_hits;
		lw += c->lock_waits;
		lo += c->lock_overflow;
		lk += c->lock_wakers;
		read += r;
	}
	printf("summary secs=%.3f samples=%" PRIu64 " filtered=%" PRIu64
	       " records=%" PRIu64 " lost=%" PRIu64 " read=%" PRIu64
	       " ctrl_lost=%" PRIu64 " corrupt=%" PRIu64 " switches=%" PRIu64
	       " overflow=%" PRIu64 " handler_ns_avg=%" PRIu64
	       " alloc_hits=%" PRIu64 " lock_waits=%" PRIu64
	       " lock_overflow=%" PRIu64 " lock_wakers=%" PRIu64
	       " bad_lock=%u\n",
	       secs, samples, filtered, records, lost, read, ctrl_lost, corrupt,
	       sw, ovf, samples ? hns / samples : 0, ah, lw, lo, lk,
	       nr_bad_lock_records);
}

static void print_folded(void)
{
	unsigned int i;

	for (i = 0; i < FOLD_SLOTS; i++)
		if (folds[i].key)
			printf("folded %" PRIu64 " %" PRIu64 " %s\n",
			       folds[i].count, folds[i].weight, folds[i].key);
	if (fold_dropped)
		printf("folded-dropped %u\n", fold_dropped);
}

static uint64_t total_read(void)
{
	uint64_t n = 0;
	unsigned int i, t;

	for (i = 0; i < nr_rings; i++)
		for (t = 1; t <= __EMBER_REC_MAX; t++)
			n += rings[i].read[t];
	return n;
}

static int py_setup(const struct opts *o);

static int cmd_run(const struct opts *o)
{
	unsigned int polls_ready = 0, polls_timeout = 0;
	bool first_drain_done = false;
	uint64_t first_drain = 0;
	double t0, t_end, t_read;
	struct pollfd pfd;
	struct info in;
	int fd, ret;

	ret = do_start(o, &in);
	if (ret)
		return 1;
	if (o->py_pid && py_setup(o)) {
		do_simple(EMBER_CMD_STOP, "stop");
		return 1;
	}
	t0 = now_s();
	/*
	 * Symbols load after START (the rings hold what comes meanwhile):
	 * parsing kallsyms takes seconds in a TCG guest.
	 */
	if (o->nm)
		load_syms(&usyms, o->nm, true);
	if (o->kallsyms)
		load_syms(&ksyms, "/proc/kallsyms", true);
	printf("started ring_size=%u nr_rings=%u freq=%u clock_used=%u caps=0x%" PRIx64 "\n",
	       in.ring_size, in.nr_rings, in.freq, in.clock_used, in.caps);
	fd = map_rings(&in);
	if (fd < 0) {
		do_simple(EMBER_CMD_STOP, "stop");
		return 1;
	}
	if (o->bogus) {
		static const uint64_t bad[] = { 0xdead000000000000ULL, 1,
						~0ULL, 0x7fffffffffffULL };
		unsigned int i;

		for (i = 0; i < nr_rings; i++)
			if (rings[i].ctrl)
				__atomic_store_n(&rings[i].ctrl->consumer,
						 bad[i % 4], __ATOMIC_RELEASE);
		usleep((useconds_t)(o->duration * 1e6));
		do_simple(EMBER_CMD_STOP, "stop");
		get_stats();
		print_stats(now_s() - t0);
		return 0;
	}
	t_end = t0 + o->duration;
	t_read = t0 + o->nodrain;
	pfd.fd = fd;
	pfd.events = POLLIN;
	signal(SIGINT, on_stop_signal);
	signal(SIGTERM, on_stop_signal);
	while (now_s() < t_end && !stop_signalled) {
		if (now_s() < t_read) {
			usleep(20000);
			continue;
		}
		if (poll(&pfd, 1, o->poll_ms ? o->poll_ms : 50) > 0)
			polls_ready++;
		else
			polls_timeout++;
		drain_all(o);
		if (o->refilter_pid && now_s() >= t0 + o->refilter_at) {
			struct nl_msg *m = req(EMBER_CMD_SET_FILTER, NLM_F_ACK);

			nla_put(m, EMBER_A_FILTER_PIDS, 4, &o->refilter_pid);
			report("set-filter", transact(m, NULL, NULL));
			printf("refiltered pid=%u t=%" PRIu64 "\n", o->refilter_pid,
			       (uint64_t)(now_s() * 1e9));
			((struct opts *)o)->refilter_pid = 0;
		}
		if (!first_drain_done) {
			/* what a reader that fell behind finds at once */
			first_drain = total_read();
			first_drain_done = true;
		}
	}
	/* which CPUs sample right now (STOP turns them all off) */
	if (!get_stats()) {
		unsigned int i;

		for (i = 0; i < MAX_CPUS; i++)
			live_online[i] = stats[i].online;
		have_live = true;
	}
	ret = do_simple(EMBER_CMD_STOP, "stop");
	t_end = now_s();
	drain_all(o);
	if (get_stats())
		fprintf(stderr, "ember-test: stats: %s\n", strerror(errno));
	print_stats(t_end - t0);
	printf("drain first=%" PRIu64 " later=%" PRIu64 "\n", first_drain,
	       total_read() - first_drain);
	printf("poll ready=%u timeout=%u\n", polls_ready, polls_timeout);
	if (o->folded)
		print_folded();
	close(fd);
	return ret ? 1 : 0;
}

/* ------------------------------------------------------ malformed requests */

static int send_raw_attr(uint8_t cmd, const void *bytes, size_t len)
{
	struct nl_msg *m = req(cmd, NLM_F_ACK);

	if (nlmsg_append(m, (void *)bytes, len, NLMSG_ALIGNTO) < 0)
		exit(2);
	return transact(m, NULL, NULL);
}

/* ------------------------------------------------------ netlink fuzz */

static uint64_t fz_state;

static uint32_t fz_rand(void)
{
	/* xorshift64*: reproducible from the seed printed on failure */
	fz_state ^= fz_state >> 12;
	fz_state ^= fz_state << 25;
	fz_state ^= fz_state >> 27;
	return (uint32_t)((fz_state * 0x2545F4914F6CDD1DULL) >> 32);
}

/* Values near every bound the policies and parsers check. */
static uint64_t fz_value(void)
{
	static const uint64_t v[] = {
		0, 1, 2, 7, 8, 63, 64, 99, 127, 128, 512, 513, 4096, 16384,
		65536, 1U << 20, 1U << 24, 64U << 20, 0x7fffffff, 0x80000000,
		0xffffffff, 0x100000000ULL, ~0ULL, EMBER_MAX_FREQ,
		EMBER_MAX_FREQ + 1, EMBER_MAX_FRAMES, EMBER_MAX_FRAMES + 1,
		EMBER_UNWIND_MAGIC,
	};

	if (fz_rand() % 4 == 0)
		return ((uint64_t)fz_rand() << 32) | fz_rand();
	return v[fz_rand() % (sizeof(v) / sizeof(v[0]))];
}

/* One random attribute: a known or unknown type, any length. */
static void fz_attr(struct nl_msg *m)
{
	static const unsigned int lens[] = { 0, 1, 2, 3, 4, 5, 8, 12, 16, 24,
					     32, 40, 64, 100, 256, 4096 };
	unsigned char buf[4096];
	unsigned int type = fz_rand() % (EMBER_A_MAX + 4);
	unsigned int len = lens[fz_rand() % (sizeof(lens) / sizeof(lens[0]))];
	unsigned int i;

	if (fz_rand() % 8 == 0)
		type |= NLA_F_NESTED;
	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)fz_rand();
	if (len == 4 || len == 8) {
		uint64_t x = fz_value();

		memcpy(buf, &x, len);
	}
	nla_put(m, (int)type, (int)len, buf);
}

/*
 * nlfuzz N SEED: N random messages (any command number, random attribute
 * sets, truncated attribute headers), each answered by an ack the module
 * must send; every 64 messages GET_INFO must still work. A START or a
 * table that happens to be accepted is stopped/cleared again, so the run
 * also exercises the accounting of half-loaded tables.
 */
static int cmd_nlfuzz(unsigned int n, uint64_t seed)
{
	unsigned int i, acked = 0, accepted = 0, starts = 0, dead = 0;
	struct info in;

	fz_state = seed ? seed : 1;
	for (i = 0; i < n; i++) {
		uint8_t cmd = (uint8_t)(fz_rand() % (EMBER_CMD_MAX + 3));
		struct nl_msg *m = req(cmd, NLM_F_ACK);
		unsigned int k = fz_rand() % 7, j;
		int ret;

		for (j = 0; j < k; j++)
			fz_attr(m);
		if (fz_rand() % 16 == 0) {
			/* a header claiming more than the message holds */
			struct nlattr a = {
				.nla_len = (uint16_t)(8 + fz_rand() % 512),
				.nla_type = (uint16_t)(fz_rand() % (EMBER_A_MAX + 2)),
			};

			nlmsg_append(m, &a, sizeof(a), NLMSG_ALIGNTO);
		}
		ret = transact(m, NULL, NULL);
		if (ret == -EIO) {
			dead++;
			break;
		}
		acked++;
		if (!ret) {
			accepted++;
			if (cmd == EMBER_CMD_START) {
				starts++;
				transact(req(EMBER_CMD_STOP, NLM_F_ACK), NULL, NULL);
			}
		}
		if (i % 64 == 63) {
			memset(&in, 0, sizeof(in));
			if (transact(req(EMBER_CMD_GET_INFO, NLM_F_ACK),
				     parse_info, &in)) {
				dead++;
				break;
			}
		}
	}
	transact(req(EMBER_CMD_STOP, NLM_F_ACK), NULL, NULL);
	memset(&in, 0, sizeof(in));
	if (transact(req(EMBER_CMD_GET_INFO, NLM_F_ACK), parse_info, &in))
		dead++;
	printf("nlfuzz seed=%" PRIu64 " sent=%u acked=%u accepted=%u starts=%u unwind_bytes_after=%" PRIu64 " running=%u dead=%u\n",
	       seed, i, acked, accepted, starts, in.uw_used, in.running, dead);
	return dead || in.uw_used || in.running ? 1 : 0;
}

static int cmd_badreq(const char *name)
{
	struct nl_msg *m = req(EMBER_CMD_START, NLM_F_ACK);
	uint16_t u16 = 1;
	uint32_t u32 = 7;
	int ret;

	/* each case would start a session if the kernel accepted it */
	if (!strcmp(name, "freq0")) {
		nla_put_u32(m, EMBER_A_FREQ, 0);
	} else if (!strcmp(name, "freq-high")) {
		nla_put_u32(m, EMBER_A_FREQ, EMBER_MAX_FREQ + 1);
	} else if (!strcmp(name, "freq-short")) {
		nla_put(m, EMBER_A_FREQ, sizeof(u16), &u16);
	} else if (!strcmp(name, "freq-long")) {
		uint64_t v = 99;

		nla_put(m, EMBER_A_FREQ, sizeof(v), &v);
	} else if (!strcmp(name, "unknown-attr")) {
		nla_put_u32(m, EMBER_A_MAX + 5, 1);
	} else if (!strcmp(name, "readonly-attr")) {
		nla_put_u32(m, EMBER_A_VERSION, 1);
	} else if (!strcmp(name, "ring-not-pow2")) {
		nla_put_u32(m, EMBER_A_RING_SIZE, 100000);
	} else if (!strcmp(name, "ring-huge")) {
		nla_put_u32(m, EMBER_A_RING_SIZE, 1U << 31);
	} else if (!strcmp(name, "kstack-high")) {
		nla_put_u32(m, EMBER_A_KSTACK_MAX, EMBER_MAX_FRAMES + 1);
	} else if (!strcmp(name, "events-zero")) {
		nla_put_u32(m, EMBER_A_EVENTS, 0);
	} else if (!strcmp(name, "events-unknown")) {
		nla_put_u32(m, EMBER_A_EVENTS, 1U << 30);
	} else if (!strcmp(name, "flags-unknown")) {
		nla_put_u32(m, EMBER_A_FLAGS, 1U << 20);
	} else if (!strcmp(name, "clock-unknown")) {
		nla_put_u32(m, EMBER_A_CLOCK_EVENT, 9);
	} else if (!strcmp(name, "pids-odd")) {
		char b[5] = { 1, 0, 0, 0, 2 };

		nla_put(m, EMBER_A_FILTER_PIDS, sizeof(b), b);
	} else if (!strcmp(name, "pids-too-many")) {
		static uint32_t p[EMBER_MAX_FILTER_PIDS + 1];

		nla_put(m, EMBER_A_FILTER_PIDS, sizeof(p), p);
	} else if (!strcmp(name, "watermark-zero")) {
		nla_put_u32(m, EMBER_A_WATERMARK, 0);
	} else if (!strcmp(name, "fault-period0")) {
		nla_put_u32(m, EMBER_A_EVENTS, EMBER_EV_FAULTS);
		nla_put_u32(m, EMBER_A_FAULT_PERIOD, 0);
	} else if (!strcmp(name, "fault-period-high")) {
		nla_put_u32(m, EMBER_A_EVENTS, EMBER_EV_FAULTS);
		nla_put_u32(m, EMBER_A_FAULT_PERIOD, 1000001);
	} else if (!strcmp(name, "lock-min-high")) {
		nla_put_u32(m, EMBER_A_EVENTS, EMBER_EV_LOCK);
		nla_put_u64(m, EMBER_A_LOCK_MIN_NS, EMBER_MAX_LOCK_MIN_NS + 1);
	} else if (!strcmp(name, "lock-min-short")) {
		nla_put_u32(m, EMBER_A_EVENTS, EMBER_EV_LOCK);
		nla_put_u32(m, EMBER_A_LOCK_MIN_NS, 1000);
	} else if (!strcmp(name, "ppm-high")) {
		nla_put_u32(m, EMBER_A_OFFCPU_SAMPLE_PPM, 1000001);
	} else if (!strcmp(name, "truncated-attr")) {
		/* an attribute header claiming more bytes than there are */
		struct nlattr a = { .nla_len = 64, .nla_type = EMBER_A_FREQ };

		nlmsg_free(m);
		return send_raw_attr(EMBER_CMD_START, &a, sizeof(a)) ? 0 : 1;
	} else if (!strcmp(name, "garbage")) {
		unsigned char g[24];
		unsigned int i;

		for (i = 0; i < sizeof(g); i++)
			g[i] = (unsigned char)(i * 37 + 11);
		nlmsg_free(m);
		return send_raw_attr(EMBER_CMD_START, g, sizeof(g)) ? 0 : 1;
	} else if (!strcmp(name, "filter-unknown")) {
		nlmsg_free(m);
		m = req(EMBER_CMD_SET_FILTER, NLM_F_ACK);
		nla_put(m, EMBER_A_MAX + 1, sizeof(u32), &u32);
	} else {
		fprintf(stderr, "ember-test: unknown badreq '%s'\n", name);
		nlmsg_free(m);
		return 2;
	}
	ret = transact(m, NULL, NULL);
	if (ret) {
		printf("refused %s: %s%s%s\n", name, strerror(-ret),
		       last_errmsg[0] ? ": " : "", last_errmsg);
		return 0;
	}
	printf("ACCEPTED %s\n", name);
	do_simple(EMBER_CMD_STOP, "stop");
	return 1;
}

/* ------------------------------------------------- unwind tables (CFI) */

/*
 * A small valid table: one page at base 0x10000, rows at 0 (rule 1: CFA
 * = rsp + 8), 0x100 (rule 2: CFA = rsp + 16, rbp at CFA - 16) and 0x200
 * (rule 0: none); three rules.
 */
struct small_table {
	struct ember_unwind_table h;
	uint32_t page_row[2];
	struct ember_unwind_row rows[3];
	struct ember_unwind_rule rules[3];
};

/* the table's bytes (sizeof(struct small_table) has tail padding) */
#define TSZ ((uint32_t)EMBER_UNWIND_TABLE_SIZE(1, 3, 3))

static void small_table(struct small_table *t)
{
	memset(t, 0, sizeof(*t));
	t->h.magic = EMBER_UNWIND_MAGIC;
	t->h.version = EMBER_UNWIND_VERSION;
	t->h.base = 0x10000;
	t->h.nr_pages = 1;
	t->h.nr_rows = 3;
	t->h.nr_rules = 3;
	t->h.size = TSZ;
	t->page_row[1] = 3;
	t->rows[0] = (struct ember_unwind_row){ 0, 1 };
	t->rows[1] = (struct ember_unwind_row){ 0x100, 2 };
	t->rows[2] = (struct ember_unwind_row){ 0x200, 0 };
	t->rules[1] = (struct ember_unwind_rule){ EMBER_CFA_SP, EMBER_FP_SAME, 0, 8 };
	t->rules[2] = (struct ember_unwind_rule){ EMBER_CFA_SP, EMBER_FP_AT_CFA,
						  -16, 16 };
}

static int uw_load(uint32_t id, uint32_t size, uint32_t off, const void *d,
		   uint32_t len)
{
	struct nl_msg *m = req(EMBER_CMD_UNWIND_LOAD, NLM_F_ACK);

	nla_put_u32(m, EMBER_A_UNWIND_TABLE_ID, id);
	nla_put_u32(m, EMBER_A_UNWIND_TABLE_SIZE, size);
	nla_put_u32(m, EMBER_A_UNWIND_OFFSET, off);
	nla_put(m, EMBER_A_UNWIND_DATA, len, d);
	return transact(m, NULL, NULL);
}

static int uw_bind(uint32_t pid, const struct ember_unwind_mapping *mp, size_t n)
{
	struct nl_msg *m = req(EMBER_CMD_UNWIND_BIND, NLM_F_ACK);

	nla_put_u32(m, EMBER_A_UNWIND_PID, pid);
	if (n)
		nla_put(m, EMBER_A_UNWIND_MAPPINGS, n * sizeof(*mp), mp);
	return transact(m, NULL, NULL);
}

static int uw_drop(uint32_t id)
{
	struct nl_msg *m = req(EMBER_CMD_UNWIND_DROP, NLM_F_ACK);

	nla_put_u32(m, EMBER_A_UNWIND_TABLE_ID, id);
	return transact(m, NULL, NULL);
}

static struct info uw_info(void)
{
	struct info in;

	memset(&in, 0, sizeof(in));
	transact(req(EMBER_CMD_GET_INFO, NLM_F_ACK), parse_info, &in);
	return in;
}

static int uw_failures;

static void uw_expect(const char *what, int ret, bool ok)
{
	if ((ret == 0) == ok) {
		printf("unwind ok: %s%s%s\n", what, ret ? ": refused: " : "",
		       ret ? last_errmsg : "");
		return;
	}
	printf("UNWIND-FAIL: %s: %s (%s)\n", what, ok ? "refused" : "ACCEPTED",
	       ret ? last_errmsg : "");
	uw_failures++;
}

/* A damaged copy of the small table, loaded whole: must be refused. */
static void uw_bad_table(const char *what, void (*damage)(struct small_table *))
{
	struct small_table t;

	small_table(&t);
	damage(&t);
	uw_expect(what, uw_load(100, TSZ, 0, &t, TSZ), false);
}

static void d_magic(struct small_table *t) { t->h.magic ^= 1; }
static void d_version(struct small_table *t) { t->h.version = 9; }
static void d_size(struct small_table *t) { t->h.size += 4; }
static void d_rows(struct small_table *t) { t->h.nr_rows = 4; }
static void d_order(struct small_table *t) { t->rows[2].pc_low = 0x80; }
static void d_first(struct small_table *t) { t->rows[0].pc_low = 8; }
static void d_rule_idx(struct small_table *t) { t->rows[1].rule = 3; }
static void d_cfa(struct small_table *t) { t->rules[1].cfa_type = 200; }
static void d_fp(struct small_table *t) { t->rules[1].fp_type = 9; }
static void d_off(struct small_table *t) { t->rules[2].cfa_off = 1 << 30; }
static void d_fpoff(struct small_table *t) { t->rules[2].fp_off = -13; }
static void d_pages(struct small_table *t) { t->page_row[1] = 2; }
static void d_base(struct small_table *t) { t->h.base = 0x10008; }

/*
 * Tables and bindings over netlink, in a session of our own: a valid
 * table loads, binds and drops with exact memory accounting; every kind
 * of damage is refused with a message and changes nothing; the session's
 * stop frees what is left; the memory cap refuses. Prints one line per
 * check; exit status 0 when every one held.
 */
static int cmd_unwind(void)
{
	struct ember_unwind_mapping mp[3];
	struct opts o = { .events = EMBER_EV_ONCPU };
	struct small_table t;
	struct info in, before;
	uint32_t pid = (uint32_t)getpid();
	static char big[61000];
	FILE *f;

	if (do_start(&o, &in))
		return 1;
	before = uw_info();
	small_table(&t);
	/* damage of every kind */
	uw_bad_table("bad magic", d_magic);
	uw_bad_table("bad version", d_version);
	uw_bad_table("size field off", d_size);
	uw_bad_table("row count off", d_rows);
	uw_bad_table("rows out of order", d_order);
	uw_bad_table("page without a row at 0", d_first);
	uw_bad_table("rule index out of range", d_rule_idx);
	uw_bad_table("unknown CFA type", d_cfa);
	uw_bad_table("unknown rbp rule", d_fp);
	uw_bad_table("CFA offset too big", d_off);
	uw_bad_table("rbp offset not a multiple of 8", d_fpoff);
	uw_bad_table("page index past the rows", d_pages);
	uw_bad_table("base not page aligned", d_base);
	uw_expect("id 0", uw_load(0, TSZ, 0, &t, TSZ), false);
	uw_expect("size beyond the maximum",
		  uw_load(101, EMBER_UNWIND_MAX_TABLE + 1, 0, &t, TSZ), false);
	uw_expect("size below a header", uw_load(101, 8, 0, &t, 8), false);
	uw_expect("chunk beyond the size",
		  uw_load(102, TSZ - 8, 0, &t, TSZ), false);
	uw_expect("first chunk", uw_load(103, TSZ, 0, &t, 16), true);
	uw_expect("chunk out of order",
		  uw_load(103, TSZ, 32, (char *)&t + 32, 16), false);
	uw_expect("chunk of a dropped pending table",
		  uw_load(103, TSZ, 16, (char *)&t + 16, 16), false);
	uw_expect("data attribute too long",
		  uw_load(104, sizeof(big), 0, big, sizeof(big)), false);
	in = uw_info();
	uw_expect("nothing kept from the refusals",
		  in.uw_tables == before.uw_tables && in.uw_used == before.uw_used ?
		  0 : -1, true);

	/* a valid table, in two chunks, then bindings */
	uw_expect("valid table, chunk 1", uw_load(7, TSZ, 0, &t, 40), true);
	uw_expect("valid table, chunk 2",
		  uw_load(7, TSZ, 40, (char *)&t + 40, TSZ - 40), true);
	uw_expect("same id again", uw_load(7, TSZ, 0, &t, TSZ), false);
	in = uw_info();
	uw_expect("accounted", in.uw_tables == before.uw_tables + 1 &&
		  in.uw_used >= before.uw_used + TSZ ? 0 : -1, true);
	memset(mp, 0, sizeof(mp));
	mp[0] = (struct ember_unwind_mapping){ 0x400000, 0x401000, 0x3f0000, 7, 0 };
	mp[1] = (struct ember_unwind_mapping){ 0x500000, 0x502000, 0, 0,
					       EMBER_UMF_ANON };
	uw_expect("bind", uw_bind(pid, mp, 2), true);
	uw_expect("bound", uw_info().uw_bound == before.uw_bound + 1 ? 0 : -1, true);
	mp[2] = mp[0];
	uw_expect("bind unsorted", uw_bind(pid, mp + 1, 2), false);
	mp[2] = (struct ember_unwind_mapping){ 0x400800, 0x402000, 0, 0, 0 };
	uw_expect("bind overlapping", uw_bind(pid, mp + 1, 2), false);
	mp[2] = (struct ember_unwind_mapping){ 0x600100, 0x602000, 0, 0, 0 };
	uw_expect("bind unaligned", uw_bind(pid, mp + 1, 2), false);
	mp[2] = (struct ember_unwind_mapping){ 0x600000, 0x602000, 0, 99, 0 };
	uw_expect("bind unknown table", uw_bind(pid, mp + 1, 2), false);
	mp[2] = (struct ember_unwind_mapping){ 0x600000, 0x602000, 0, 0, 1U << 9 };
	uw_expect("bind unknown flags", uw_bind(pid, mp + 1, 2), false);
	mp[2] = (struct ember_unwind_mapping){ 0x600000, 0xffff800000000000ULL,
					       0, 0, 0 };
	uw_expect("bind kernel range", uw_bind(pid, mp + 1, 2), false);
	{
		struct nl_msg *m = req(EMBER_CMD_UNWIND_BIND, NLM_F_ACK);

		nla_put_u32(m, EMBER_A_UNWIND_PID, pid);
		nla_put(m, EMBER_A_UNWIND_MAPPINGS, 7, mp);
		uw_expect("bind odd size", transact(m, NULL, NULL), false);
	}
	/* a dropped table stays while a binding holds it */
	uw_expect("drop", uw_drop(7), true);
	uw_expect("drop again", uw_drop(7), false);
	uw_expect("unbind", uw_bind(pid, NULL, 0), true);
	in = uw_info();
	uw_expect("all memory back", in.uw_tables == before.uw_tables &&
		  in.uw_bound == before.uw_bound && in.uw_used == before.uw_used ?
		  0 : -1, true);

	/* the memory cap */
	f = fopen("/sys/module/ember/parameters/unwind_mem_max", "w");
	if (f) {
		fputs("0", f);
		fclose(f);
		uw_expect("over the memory cap", uw_load(8, TSZ, 0, &t,
							 TSZ), false);
		f = fopen("/sys/module/ember/parameters/unwind_mem_max", "w");
		if (f) {
			fputs("256", f);
			fclose(f);
		}
	}
	/* stop frees what is loaded */
	uw_expect("load for stop", uw_load(9, TSZ, 0, &t, TSZ), true);
	mp[0].table_id = 9;
	uw_expect("bind for stop", uw_bind(pid, mp, 1), true);
	do_simple(EMBER_CMD_STOP, "stop");
	in = uw_info();
	uw_expect("stop freed everything", !in.uw_tables && !in.uw_bound &&
		  !in.uw_used ? 0 : -1, true);
	uw_expect("no load without a session", uw_load(10, TSZ, 0, &t,
						       TSZ), false);
	printf("unwind: %d failures\n", uw_failures);
	return uw_failures ? 1 : 0;
}

/* ------------------------------------------------- allocation probes */

/* What allocprobe.c passes in call i. */
#define ALLOCPROBE_PTR(i)	(0x7e5700000000ULL + (uint64_t)(i) * 0x40)
#define ALLOCPROBE_SIZE(i)	(16 + (uint64_t)(i))
#define ALLOCPROBE_WEIGHT(i)	(100000 + (uint64_t)(i) * 7)

struct elf_sym {
	const char *name;
	uint64_t vaddr, size, off;	/* off: file offset (0: not in the file) */
};

/*
 * The symbols' addresses in a non-PIE ELF file and their file offsets
 * (through the PT_LOAD that holds them in its file part), as the agent
 * computes uprobe offsets. Returns the file size, or -1.
 */
static long elf_syms(const char *path, struct elf_sym *want, unsigned int n)
{
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const Elf64_Phdr *ph;
	unsigned int i, j, k;
	struct stat st;
	uint8_t *f;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || st.st_size < (off_t)sizeof(*eh))
		return -1;
	f = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f == MAP_FAILED)
		return -1;
	eh = (const void *)f;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh) > (uint64_t)st.st_size ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(*ph) > (uint64_t)st.st_size)
		return -1;
	sh = (const void *)(f + eh->e_shoff);
	ph = (const void *)(f + eh->e_phoff);
	for (i = 0; i < eh->e_shnum; i++) {
		const Elf64_Sym *sym;
		const char *str;

		/* .dynsym too: stripped programs (python3.11) keep that one */
		if ((sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM) ||
		    sh[i].sh_link >= eh->e_shnum)
			continue;
		sym = (const void *)(f + sh[i].sh_offset);
		str = (const char *)f + sh[sh[i].sh_link].sh_offset;
		for (j = 0; j < sh[i].sh_size / sizeof(*sym); j++) {
			for (k = 0; k < n; k++) {
				if (strcmp(str + sym[j].st_name, want[k].name))
					continue;
				want[k].vaddr = sym[j].st_value;
				want[k].size = sym[j].st_size;
			}
		}
	}
	for (k = 0; k < n; k++) {
		want[k].off = 0;
		for (i = 0; i < eh->e_phnum; i++) {
			if (ph[i].p_type != PT_LOAD ||
			    want[k].vaddr < ph[i].p_vaddr ||
			    want[k].vaddr + 2 > ph[i].p_vaddr + ph[i].p_filesz)
				continue;
			want[k].off = want[k].vaddr - ph[i].p_vaddr + ph[i].p_offset;
		}
	}
	munmap(f, st.st_size);
	return (long)st.st_size;
}

enum { S_ALLOC, S_FREE, S_SEM, S_CALLER, S_FCALLER, S_BAD, NR_S };

static struct elf_sym asyms[NR_S] = {
	[S_ALLOC] = { .name = "ember_alloc_probe" },
	[S_FREE] = { .name = "ember_free_probe" },
	[S_SEM] = { .name = "ember_alloc_semaphore" },
	[S_CALLER] = { .name = "do_allocs" },
	[S_FCALLER] = { .name = "do_frees" },
	[S_BAD] = { .name = "allocprobe_bad_insn" },
};
static long prog_size;

static int load_allocprobe(const char *prog)
{
	unsigned int k;

	prog_size = elf_syms(prog, asyms, NR_S);
	if (prog_size < 0) {
		fprintf(stderr, "ember-test: %s: not a readable ELF64 file\n", prog);
		return -1;
	}
	for (k = 0; k < NR_S; k++) {
		if (!asyms[k].off) {
			fprintf(stderr, "ember-test: %s: no %s in the file part of a PT_LOAD\n",
				prog, asyms[k].name);
			return -1;
		}
	}
	caller_lo = asyms[S_CALLER].vaddr;
	caller_hi = caller_lo + asyms[S_CALLER].size;
	return 0;
}

static int alloc_attach(const char *path, const struct ember_alloc_probe *p,
			size_t n, size_t bytes)
{
	struct nl_msg *m = req(EMBER_CMD_ALLOC_ATTACH, NLM_F_ACK);

	if (path)
		nla_put_string(m, EMBER_A_ALLOC_PATH, path);
	if (p)
		nla_put(m, EMBER_A_ALLOC_PROBES, bytes ? (int)bytes :
			(int)(n * sizeof(*p)), p);
	return transact(m, NULL, NULL);
}

/* ALLOC_ATTACH with ALLOC_PID (0: none) and ALLOC_RATE (0: none, ~0: 0) */
static int alloc_attach_pid(const char *path, const struct ember_alloc_probe *p,
			    size_t n, uint32_t pid, uint64_t rate)
{
	struct nl_msg *m = req(EMBER_CMD_ALLOC_ATTACH, NLM_F_ACK);

	nla_put_string(m, EMBER_A_ALLOC_PATH, path);
	nla_put(m, EMBER_A_ALLOC_PROBES, (int)(n * sizeof(*p)), p);
	if (pid)
		nla_put_u32(m, EMBER_A_ALLOC_PID, pid);
	if (rate)
		nla_put_u64(m, EMBER_A_ALLOC_RATE, rate == ~0ULL ? 0 : rate);
	return transact(m, NULL, NULL);
}

/* The two probes of allocprobe, with the semaphore. */
static void good_probes(struct ember_alloc_probe *p)
{
	memset(p, 0, 2 * sizeof(*p));
	p[0].offset = asyms[S_ALLOC].off;
	p[0].ref_ctr_offset = asyms[S_SEM].off;
	p[0].kind = EMBER_PROBE_SAMPLED_ALLOC;
	p[1].offset = asyms[S_FREE].off;
	p[1].ref_ctr_offset = asyms[S_SEM].off;
	p[1].kind = EMBER_PROBE_SAMPLED_FREE;
}

struct child {
	pid_t pid;
	FILE *in, *out;
};

static int child_start(struct child *c, const char *prog)
{
	int to[2], from[2];

	if (pipe(to) || pipe(from))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (!c->pid) {
		/* the session belongs to our socket alone */
		close(nl_socket_get_fd(sk));
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		execl(prog, prog, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = fdopen(to[1], "w");
	c->out = fdopen(from[0], "r");
	return c->in && c->out ? 0 : -1;
}

/* One command, one answer line; returns the value of key=, or -1. */
static long child_cmd(struct child *c, const char *cmd, const char *key)
{
	char line[256], *v;

	fprintf(c->in, "%s\n", cmd);
	fflush(c->in);
	if (!fgets(line, sizeof(line), c->out))
		return -1;
	v = strstr(line, key);
	return v ? strtol(v + strlen(key), NULL, 10) : -1;
}

static void child_stop(struct child *c)
{
	fprintf(c->in, "quit\n");
	fclose(c->in);
	fclose(c->out);
	waitpid(c->pid, NULL, 0);
}

static int al_failures, al_checks;

static void al_check(const char *what, bool ok, const char *detail)
{
	al_checks++;
	if (ok) {
		printf("alloc ok: %s%s%s\n", what, detail[0] ? ": " : "", detail);
		return;
	}
	printf("ALLOC-FAIL: %s%s%s\n", what, detail[0] ? ": " : "", detail);
	al_failures++;
}

/* A request that must be refused, with an extack message holding msg. */
static void al_refused(const char *what, int ret, const char *msg)
{
	char d[400];

	snprintf(d, sizeof(d), "%s (%s)", ret ? "refused" : "ACCEPTED",
		 last_errmsg);
	al_check(what, ret && strstr(last_errmsg, msg), d);
}

static void al_sem(const char *what, struct child *c, bool up)
{
	long v = child_cmd(c, "sem", "sem=");
	char d[64];

	snprintf(d, sizeof(d), "semaphore %ld", v);
	al_check(what, up ? v > 0 : v == 0, d);
}

static void drain_records(void)
{
	struct opts q = { .quiet = true };

	nr_kept_allocs = 0;
	nr_kept_frees = 0;
	nr_bad_alloc_records = 0;
	drain_all(&q);
}

/*
 * The records of one `go n m` of pid: exactly one ALLOC per call with
 * its weight, address and size, the probe's address first and the caller
 * in the user stack, no kernel frames; exactly the M frees.
 */
static void al_check_records(const char *what, uint32_t pid, int n, int m)
{
	static unsigned char seen[MAX_KEPT];
	unsigned int i, mine = 0, good = 0, caller = 0, frees = 0, fgood = 0;
	char d[400];

	memset(seen, 0, sizeof(seen));
	for (i = 0; i < nr_kept_allocs; i++) {
		const struct kept_alloc *k = &kept_allocs[i];
		uint64_t idx = (k->addr - ALLOCPROBE_PTR(0)) / 0x40;

		if (k->pid != pid)
			continue;
		mine++;
		if (k->addr < ALLOCPROBE_PTR(0) || idx >= (uint64_t)n ||
		    k->addr != ALLOCPROBE_PTR(idx) || seen[idx]++ ||
		    k->size != ALLOCPROBE_SIZE(idx) ||
		    k->weight != ALLOCPROBE_WEIGHT(idx) ||
		    k->ip0 != asyms[S_ALLOC].vaddr)
			continue;
		good++;
		caller += k->caller;
	}
	for (i = 0; i < nr_kept_frees; i++) {
		uint64_t idx = (kept_frees[i].addr - ALLOCPROBE_PTR(0)) / 0x40;

		if (kept_frees[i].pid != pid)
			continue;
		frees++;
		if (kept_frees[i].addr >= ALLOCPROBE_PTR(0) &&
		    idx < (uint64_t)m && kept_frees[i].addr == ALLOCPROBE_PTR(idx))
			fgood++;
	}
	snprintf(d, sizeof(d),
		 "%u ALLOC records of pid %u for %d calls, %u with the right weight/addr/size and ip, %u with %s in the user stack; %u FREE records for %d calls, %u right; %u malformed",
		 mine, pid, n, good, caller, asyms[S_CALLER].name, frees, m,
		 fgood, nr_bad_alloc_records);
	al_check(what, mine == (unsigned int)n && good == mine &&
		 caller == mine && frees == (unsigned int)m && fgood == frees &&
		 !nr_bad_alloc_records, d);
}

static unsigned int al_count_pid(uint32_t pid)
{
	unsigned int i, n = 0;

	for (i = 0; i < nr_kept_allocs; i++)
		n += kept_allocs[i].pid == pid;
	for (i = 0; i < nr_kept_frees; i++)
		n += kept_frees[i].pid == pid;
	return n;
}

static uint64_t stat_sum(size_t field)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < MAX_CPUS; i++)
		if (stats[i].seen)
			n += *(uint64_t *)((char *)&stats[i] + field);
	return n;
}

/* Binds pid's executable mappings of prog, with no table. */
static int bind_prog_text(uint32_t pid, const char *prog)
{
	struct ember_unwind_mapping mp[16];
	char path[64], line[512], perm[8], file[256];
	unsigned long lo, hi;
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && n < 16) {
		file[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perm,
			   file) < 3 || perm[2] != 'x' || strcmp(file, prog))
			continue;
		memset(&mp[n], 0, sizeof(mp[n]));
		mp[n].start = lo;
		mp[n].end = hi;
		n++;
	}
	fclose(f);
	return n ? uw_bind(pid, mp, n) : -ENOENT;
}

/*
 * Allocation probes on allocprobe (PROG), with two instances A and B:
 * every refusal, then records for A only (pid filter), the semaphore's
 * life, DETACH, STOP. One line per check; exit 0 when all held.
 */
static int cmd_alloc(const char *prog)
{
	struct ember_alloc_probe p[EMBER_MAX_ALLOC_PROBES + 1];
	struct opts o = { .events = EMBER_EV_ONCPU };
	static char longpath[PATH_MAX + 64];
	struct child a, b;
	struct info in;
	struct nl_sock *mine;
	const int n = 40, m = 25;
	char d[200];
	long calls;
	int ret, fd, fd2;

	memset(&in, 0, sizeof(in));
	if (transact(req(EMBER_CMD_GET_INFO, NLM_F_ACK), parse_info, &in))
		return 1;
	if (!(in.caps & EMBER_CAP_ALLOC)) {
		printf("alloc skip: no EMBER_CAP_ALLOC (caps 0x%" PRIx64 ")\n",
		       in.caps);
		return 3;
	}
	if (load_allocprobe(prog))
		return 1;
	printf("alloc: %s alloc_probe@0x%" PRIx64 " free_probe@0x%" PRIx64
	       " semaphore@0x%" PRIx64 " size %ld\n", prog,
	       (uint64_t)asyms[S_ALLOC].off, (uint64_t)asyms[S_FREE].off,
	       (uint64_t)asyms[S_SEM].off, prog_size);
	if (child_start(&a, prog) || child_start(&b, prog)) {
		fprintf(stderr, "ember-test: cannot start %s\n", prog);
		return 1;
	}
	al_sem("semaphore 0 before any attach", &a, false);
	good_probes(p);

	/* refusals without a session, and in one without EMBER_EV_ALLOC */
	al_refused("no session", alloc_attach(prog, p, 2, 0), "no session");
	if (do_start(&o, &in))
		return 1;
	al_refused("session without EMBER_EV_ALLOC",
		   alloc_attach(prog, p, 2, 0), "EMBER_EV_ALLOC");
	do_simple(EMBER_CMD_STOP, "stop");

	o.events = EMBER_EV_ALLOC;
	o.pids[0] = (uint32_t)a.pid;
	o.nr_pids = 1;
	if (do_start(&o, &in))
		return 1;
	fd = map_rings(&in);
	if (fd < 0)
		return 1;

	al_refused("no ALLOC_PROBES", alloc_attach(prog, NULL, 0, 0), "needs");
	al_refused("relative path", alloc_attach("bin/allocprobe", p, 2, 0),
		   "absolute");
	al_refused("directory", alloc_attach("/tmp", p, 2, 0),
		   "not a regular file");
	al_refused("missing file", alloc_attach("/nonexistent/allocprobe", p,
						2, 0), "cannot be resolved");
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	al_refused("path of PATH_MAX bytes", alloc_attach(longpath, p, 2, 0),
		   "PATH_MAX");
	p[1].offset = (uint64_t)prog_size;
	al_refused("offset at the end of the file", alloc_attach(prog, p, 2, 0),
		   "past the end");
	good_probes(p);
	/* even: the parity check would come first */
	p[1].ref_ctr_offset = ((uint64_t)prog_size + 1) & ~1ULL;
	al_refused("ref_ctr_offset at the end of the file",
		   alloc_attach(prog, p, 2, 0), "past the end");
	good_probes(p);
	p[1].ref_ctr_offset++;
	al_refused("odd ref_ctr_offset", alloc_attach(prog, p, 2, 0), "even");
	good_probes(p);
	/* past the last kind, and 0, which was never one */
	p[1].kind = EMBER_PROBE_ENTRY_REALLOC + 1;
	al_refused("unknown kind", alloc_attach(prog, p, 2, 0),
		   "unknown probe kind");
	p[1].kind = 0;
	al_refused("kind 0", alloc_attach(prog, p, 2, 0),
		   "unknown probe kind");
	good_probes(p);
	p[0].__reserved = 1;
	al_refused("__reserved nonzero", alloc_attach(prog, p, 2, 0),
		   "__reserved");
	good_probes(p);
	/* allocator entry points: only with a process, at a sane rate */
	p[0].kind = EMBER_PROBE_ENTRY_SIZE_RDI;
	al_refused("entry probe without ALLOC_PID",
		   alloc_attach_pid(prog, p, 2, 0, 0), "need ALLOC_PID");
	al_refused("ALLOC_PID of no process",
		   alloc_attach_pid(prog, p, 2, 999999999, 0),
		   "no such process");
	al_refused("ALLOC_RATE 0",
		   alloc_attach_pid(prog, p, 2, (uint32_t)a.pid, ~0ULL),
		   "ALLOC_RATE");
	al_refused("ALLOC_RATE above EMBER_MAX_ALLOC_RATE",
		   alloc_attach_pid(prog, p, 2, (uint32_t)a.pid,
				    EMBER_MAX_ALLOC_RATE + 1), "ALLOC_RATE");
	good_probes(p);
	al_refused("0 probes", alloc_attach(prog, p, 0, 0), "1..");
	for (ret = 2; ret <= EMBER_MAX_ALLOC_PROBES; ret++) {
		p[ret] = p[0];
		p[ret].offset = asyms[S_CALLER].off + (uint64_t)ret;
	}
	al_refused("EMBER_MAX_ALLOC_PROBES + 1 probes",
		   alloc_attach(prog, p, EMBER_MAX_ALLOC_PROBES + 1, 0), "1..");
	al_refused("ALLOC_PROBES not a whole array",
		   alloc_attach(prog, p, 0, sizeof(*p) + 4), "array");
	p[1].offset = p[0].offset;
	al_refused("two probes at one offset", alloc_attach(prog, p, 2, 0),
		   "one offset");
	good_probes(p);
	/* another socket: not the owner */
	mine = sk;
	sk = NULL;
	nl_open();
	al_refused("not the owner", alloc_attach(prog, p, 2, 0),
		   "another controller");
	nl_socket_free(sk);
	sk = mine;
	al_refused("DETACH with nothing attached",
		   transact(req(EMBER_CMD_ALLOC_DETACH, NLM_F_ACK), NULL, NULL),
		   "no allocation probes");
	/* all or none: the second probe cannot be placed (hlt) */
	p[1].offset = asyms[S_BAD].off;
	p[1].ref_ctr_offset = 0;
	ret = alloc_attach(prog, p, 2, 0);
	al_refused("second probe cannot be placed", ret, "cannot place");
	al_sem("semaphore 0 after a refused ATTACH (first probe removed)", &a,
	       false);
	calls = child_cmd(&a, "go 5 5", "alloc=");
	drain_records();
	snprintf(d, sizeof(d), "%ld calls, %u records", calls, al_count_pid(a.pid));
	al_check("nothing recorded after a refused ATTACH",
		 calls == 0 && !al_count_pid(a.pid), d);
	al_sem("semaphore still 0 after every refusal", &a, false);

	/* the real thing */
	good_probes(p);
	ret = alloc_attach(prog, p, 2, 0);
	al_check("ATTACH", !ret, last_errmsg);
	al_sem("semaphore up while attached (A)", &a, true);
	al_sem("semaphore up while attached (B, filtered out)", &b, true);
	al_refused("second ATTACH", alloc_attach(prog, p, 2, 0),
		   "already attached");
	get_stats();
	calls = child_cmd(&a, "go 40 25", "alloc=");
	snprintf(d, sizeof(d), "%ld", calls);
	al_check("A made its calls", calls == n, d);
	calls = child_cmd(&b, "go 40 25", "alloc=");
	snprintf(d, sizeof(d), "%ld", calls);
	al_check("B made its calls", calls == n, d);
	drain_records();
	al_check_records("records of A", (uint32_t)a.pid, n, m);
	snprintf(d, sizeof(d), "%u records of B", al_count_pid(b.pid));
	al_check("the pid filter excludes B", !al_count_pid(b.pid), d);
	get_stats();
	snprintf(d, sizeof(d), "alloc_hits=%" PRIu64 " filtered=%" PRIu64
		 " lost=%" PRIu64,
		 stat_sum(offsetof(struct cpu_stats, alloc_hits)),
		 stat_sum(offsetof(struct cpu_stats, filtered)),
		 stat_sum(offsetof(struct cpu_stats, lost)));
	al_check("stats: hits = A's calls, B's filtered, none lost",
		 stat_sum(offsetof(struct cpu_stats, alloc_hits)) ==
		 (uint64_t)(n + m) &&
		 stat_sum(offsetof(struct cpu_stats, filtered)) >=
		 (uint64_t)(n + m) &&
		 !stat_sum(offsetof(struct cpu_stats, lost)), d);

	/*
	 * The CFI walk: A bound with its code mappings and no table (FP
	 * steps only): the entry step must find the caller there too.
	 */
	ret = bind_prog_text((uint32_t)a.pid, prog);
	al_check("UNWIND_BIND of A's code (no table)", !ret, last_errmsg);
	calls = child_cmd(&a, "go 6 2", "alloc=");
	drain_records();
	al_check_records("records of A through the CFI walk", (uint32_t)a.pid,
			 6, 2);
	for (ret = 0, fd2 = 0; ret < (int)nr_kept_allocs; ret++)
		fd2 += !!(kept_allocs[ret].flags & EMBER_SF_USER_CFI);
	snprintf(d, sizeof(d), "%d of %u", fd2, nr_kept_allocs);
	al_check("those were CFI walks", fd2 == 6 && nr_kept_allocs == 6, d);
	uw_bind((uint32_t)a.pid, NULL, 0);

	/* DETACH: semaphores down, nothing more recorded */
	ret = transact(req(EMBER_CMD_ALLOC_DETACH, NLM_F_ACK), NULL, NULL);
	al_check("DETACH", !ret, last_errmsg);
	al_sem("semaphore 0 after DETACH (A)", &a, false);
	al_sem("semaphore 0 after DETACH (B)", &b, false);
	calls = child_cmd(&a, "go 5 5", "alloc=");
	drain_records();
	snprintf(d, sizeof(d), "%ld calls, %u records", calls, al_count_pid(a.pid));
	al_check("no calls, no records after DETACH",
		 calls == 0 && !al_count_pid(a.pid), d);

	/* attach again, then STOP removes them */
	ret = alloc_attach(prog, p, 2, 0);
	al_check("ATTACH after DETACH", !ret, last_errmsg);
	calls = child_cmd(&a, "go 7 3", "alloc=");
	drain_records();
	al_check_records("records after re-ATTACH", (uint32_t)a.pid, 7, 3);
	do_simple(EMBER_CMD_STOP, "stop");
	al_sem("semaphore 0 after STOP (A)", &a, false);
	al_sem("semaphore 0 after STOP (B)", &b, false);
	al_refused("ATTACH after STOP", alloc_attach(prog, p, 2, 0),
		   "no session");
	close(fd);
	child_stop(&a);
	child_stop(&b);
	printf("alloc: %d checks, %d failures\n", al_checks, al_failures);
	return al_failures ? 1 : 0;
}

/* Starts an EMBER_EV_ALLOC session, attaches, holds it for secs. */
static int cmd_alloc_hold(const char *prog, double secs)
{
	struct opts o = { .events = EMBER_EV_ALLOC };
	struct ember_alloc_probe p[2];
	struct info in;
	int ret;

	if (load_allocprobe(prog) || do_start(&o, &in))
		return 1;
	good_probes(p);
	ret = alloc_attach(prog, p, 2, 0);
	report("alloc-attach", ret);
	if (ret)
		return 1;
	printf("attached\n");
	usleep((useconds_t)(secs * 1e6));
	return 0;
}

/* ------------------------------------------------- unwind table fuzz */

/*
 * A valid table shaped like a real libc's: TF_PAGES 64 KiB pages from
 * vaddr 0, a few hundred rows in most pages (some pages empty), a few
 * hundred rules of every kind. Mutations start from it so that they reach
 * the checks behind the header: page index, row order, rule indices and
 * rule contents.
 */
#define TF_PAGES	24
#define TF_RULES	400
#define TF_MAX_ROWS	(TF_PAGES * 1200)
#define TF_EXTRA	8192	/* room to extend the payload */
#define TF_BUF		(EMBER_UNWIND_TABLE_SIZE(TF_PAGES, TF_MAX_ROWS, \
							 TF_RULES) + TF_EXTRA)

static unsigned char tf_base[TF_BUF] __attribute__((aligned(8)));
static unsigned char tf_buf[TF_BUF] __attribute__((aligned(8)));
static uint32_t tf_base_len;

static struct ember_unwind_table *tf_hdr(void)
{
	return (struct ember_unwind_table *)tf_buf;
}

/* Rows of the pristine layout, whatever the header now claims. */
static struct ember_unwind_row *tf_rows(void)
{
	return (struct ember_unwind_row *)(tf_buf +
		sizeof(struct ember_unwind_table) + (TF_PAGES + 1) * 4);
}

static uint32_t tf_nr_rows(void)
{
	return ((const struct ember_unwind_table *)tf_base)->nr_rows;
}

static struct ember_unwind_rule *tf_rules(void)
{
	return (struct ember_unwind_rule *)(tf_rows() + tf_nr_rows());
}

static struct ember_unwind_rule tf_sane_rule(void)
{
	static const uint8_t cfa[] = {
		EMBER_CFA_SP, EMBER_CFA_SP, EMBER_CFA_SP, EMBER_CFA_SP,
		EMBER_CFA_FP, EMBER_CFA_PLT1, EMBER_CFA_PLT2,
		EMBER_CFA_DEREF_FP, EMBER_CFA_DEREF_SP, EMBER_CFA_SIGNAL,
		EMBER_CFA_END, EMBER_CFA_NONE,
	};
	struct ember_unwind_rule r = { 0 };

	r.cfa_type = cfa[fz_rand() % sizeof(cfa)];
	r.fp_type = (uint8_t)(fz_rand() % __EMBER_FP_MAX);
	r.cfa_off = (int32_t)(8 * (1 + fz_rand() % 64));
	r.fp_off = r.fp_type == EMBER_FP_AT_CFA ? -16 : 8 * (int)(fz_rand() % 4);
	if (r.cfa_type == EMBER_CFA_DEREF_FP)
		r.cfa_off = -8;
	return r;
}

static void tf_build_base(void)
{
	struct ember_unwind_table *t = (void *)tf_base;
	uint32_t *page_row = (uint32_t *)(t + 1);
	struct ember_unwind_row *rows = (void *)(page_row + TF_PAGES + 1);
	struct ember_unwind_rule *rules;
	uint32_t p, j, n = 0;

	memset(tf_base, 0, sizeof(tf_base));
	for (p = 0; p < TF_PAGES; p++) {
		uint32_t k = fz_rand() % 5 ? 1 + fz_rand() % 1200 : 0;
		uint32_t step = 65535 / (k ? k : 1), pc = 0;

		page_row[p] = n;
		for (j = 0; j < k; j++) {
			rows[n].pc_low = (uint16_t)pc;
			rows[n].rule = (uint16_t)(fz_rand() % TF_RULES);
			pc += 1 + fz_rand() % step;
			n++;
		}
	}
	page_row[TF_PAGES] = n;
	rules = (void *)(rows + n);
	for (j = 0; j < TF_RULES; j++)
		rules[j] = tf_sane_rule();
	t->magic = EMBER_UNWIND_MAGIC;
	t->version = EMBER_UNWIND_VERSION;
	t->nr_pages = TF_PAGES;
	t->nr_rows = n;
	t->nr_rules = TF_RULES;
	t->size = (uint32_t)EMBER_UNWIND_TABLE_SIZE(TF_PAGES, n, TF_RULES);
	tf_base_len = t->size;
}

/* A count near a bound: just inside, at, or far beyond it. */
static uint32_t tf_count(uint32_t now, uint32_t max)
{
	const uint32_t v[] = { 0, 1, now - 1, now + 1, max, max + 1,
			       0x7fffffff, 0xffffffff };

	return v[fz_rand() % (sizeof(v) / sizeof(v[0]))];
}

static int32_t tf_cfa_off(void)
{
	const int32_t v[] = { 0, 8, -8, 7, EMBER_UNWIND_MAX_CFA_OFF,
			      -EMBER_UNWIND_MAX_CFA_OFF,
			      EMBER_UNWIND_MAX_CFA_OFF + 1,
			      -EMBER_UNWIND_MAX_CFA_OFF - 1, INT32_MAX,
			      INT32_MIN, 4096 };

	return fz_rand() % 4 ? v[fz_rand() % (sizeof(v) / sizeof(v[0]))] :
			       (int32_t)fz_rand();
}

/*
 * One mutation of tf_buf, whose payload is *len bytes. Most are on the
 * header, the page index, rows or rules; a few resize the payload. Values
 * are at and beyond every bound ember_unwind_table_check() knows, and
 * some are valid but odd (offsets at the limit, any rule type), so that
 * accepted tables make the unwinder read unusual places.
 */
static void tf_mutate(uint32_t *len)
{
	struct ember_unwind_table *t = tf_hdr();
	uint32_t *page_row = (uint32_t *)(t + 1);
	uint32_t nrows = tf_nr_rows(), i = fz_rand();
	struct ember_unwind_row *row = &tf_rows()[i % nrows];
	struct ember_unwind_rule *rule = &tf_rules()[i % TF_RULES];

	switch (fz_rand() % 26) {
	case 0: t->magic ^= 1U << (fz_rand() % 32); break;
	case 1: t->version = (uint16_t)fz_value(); break;
	case 2: t->flags = (uint16_t)(1U << (fz_rand() % 16)); break;
	case 3: t->nr_pages = tf_count(t->nr_pages, EMBER_UNWIND_MAX_PAGES); break;
	case 4: t->nr_rows = tf_count(t->nr_rows, EMBER_UNWIND_MAX_ROWS); break;
	case 5: t->nr_rules = tf_count(t->nr_rules, EMBER_UNWIND_MAX_RULES); break;
	case 6: t->size = fz_rand() % 2 ? t->size + 8 - fz_rand() % 17 :
				   (uint32_t)fz_value(); break;
	case 7:
		t->base = fz_rand() % 2 ? -(1ULL << EMBER_UNWIND_PAGE_SHIFT) :
					  (fz_value() & ~7ULL);
		break;
	case 8:
		page_row[i % (TF_PAGES + 1)] = fz_rand() % 2 ?
			tf_count(page_row[i % (TF_PAGES + 1)], nrows) :
			page_row[i % (TF_PAGES + 1)] + 1;
		break;
	case 9:
		if (i % nrows + 1 < nrows) {
			struct ember_unwind_row x = row[0];

			row[0] = row[1];
			row[1] = x;
		}
		break;
	case 10: row->pc_low = (uint16_t)(fz_rand() % 2 ? 0 : 0xffff); break;
	case 11:
		row->rule = (uint16_t)(fz_rand() % 2 ? TF_RULES - 1 + fz_rand() % 2 :
						       0xffff);
		break;
	case 12: rule->cfa_type = (uint8_t)(fz_rand() % (__EMBER_CFA_MAX + 2)); break;
	case 13: rule->fp_type = (uint8_t)(fz_rand() % (__EMBER_FP_MAX + 2)); break;
	case 14: case 15: rule->cfa_off = tf_cfa_off(); break;
	case 16:
		rule->fp_off = (int16_t)(fz_rand() % 4 ? (fz_rand() % 2 ? -32768 : 32760) -
					 8 * (int)(fz_rand() % 8) : (int)fz_rand());
		break;
	case 17:	/* truncated */
		*len = *len ? fz_rand() % *len : 0;
		break;
	case 18:	/* extended with junk */
		{
			uint32_t add = 1 + fz_rand() % TF_EXTRA, k;

			for (k = 0; k < add && *len < TF_BUF; k++)
				tf_buf[(*len)++] = (unsigned char)fz_rand();
		}
		break;
	case 19:	/* fewer rules, consistently: rows may point past them */
		{
			uint32_t d = 1 + fz_rand() % 16;

			if (*len < d * sizeof(struct ember_unwind_rule))
				break;
			t->nr_rules -= d;
			t->size -= d * sizeof(struct ember_unwind_rule);
			*len -= d * sizeof(struct ember_unwind_rule);
		}
		break;
	default:	/* valid, at the bounds: the unwinder reads odd places */
		rule->cfa_type = (uint8_t)(fz_rand() % __EMBER_CFA_MAX);
		rule->fp_type = (uint8_t)(fz_rand() % __EMBER_FP_MAX);
		rule->cfa_off = fz_rand() % 2 ?
			(int32_t)(fz_rand() % (2 * EMBER_UNWIND_MAX_CFA_OFF + 1)) -
			EMBER_UNWIND_MAX_CFA_OFF :
			(fz_rand() % 2 ? 1 : -1) * EMBER_UNWIND_MAX_CFA_OFF;
		rule->fp_off = (int16_t)(8 * ((int)(fz_rand() % 8192) - 4096));
		break;
	}
}

struct tf_count {
	unsigned int sent, accepted, refused, pending, mismatch;
	unsigned int binds, bind_refused, dead;
};

/*
 * Sends *len bytes of tf_buf as table id in random chunks. claimed is the
 * TABLE_SIZE to announce (more than len: the table never completes).
 * Returns the last answer.
 */
static int tf_send(uint32_t id, uint32_t claimed, uint32_t len)
{
	uint32_t off = 0, n;
	int ret = 0;

	do {
		n = len - off;
		if (n > EMBER_UNWIND_CHUNK_MAX)
			n = EMBER_UNWIND_CHUNK_MAX;
		if (fz_rand() % 3 == 0 && n > 1)
			n = 1 + fz_rand() % n;
		ret = uw_load(id, claimed, off, tf_buf + off, n);
		off += n;
	} while (!ret && off < len);
	return ret;
}

/* The executable mapping of pid's own binary: [lo, hi) at file offset. */
static int tf_text(pid_t pid, uint64_t *lo, uint64_t *hi, uint64_t *off)
{
	char path[64], line[512], perm[8], file[256], self[256];
	unsigned long a, b, o;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int found = -1;
	FILE *f;

	if (n <= 0)
		return -1;
	self[n] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (found && fgets(line, sizeof(line), f)) {
		file[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %255s", &a, &b, perm,
			   &o, file) == 5 && perm[2] == 'x' && !strcmp(file, self)) {
			*lo = a;
			*hi = b;
			*off = o;
			found = 0;
		}
	}
	fclose(f);
	return found;
}

/*
 * Binds the accepted table id to the sampled child: mostly its own text
 * (the bias makes pc - bias the ELF vaddr, inside the table), sometimes a
 * random mapping set the module may refuse.
 */
static void tf_bind(struct tf_count *c, pid_t pid, uint32_t id, uint64_t lo,
		    uint64_t hi, uint64_t off)
{
	struct ember_unwind_mapping mp[4];
	size_t n = 1, k;

	memset(mp, 0, sizeof(mp));
	mp[0] = (struct ember_unwind_mapping){ lo, hi, lo - off, id, 0 };
	if (fz_rand() % 4 == 0) {
		n = 1 + fz_rand() % 4;
		for (k = 0; k < n; k++) {
			uint64_t s = (lo & ~0xfffULL) + ((uint64_t)(fz_rand() % 64) << 12) -
				     (32ULL << 12);

			mp[k].start = s + (fz_rand() % 8 ? 0 : fz_rand() % 4096);
			mp[k].end = s + ((uint64_t)(1 + fz_rand() % 64) << 12);
			mp[k].bias = fz_rand() % 2 ? lo - off : fz_value();
			mp[k].table_id = fz_rand() % 4 ? id : fz_rand() % 3;
			mp[k].flags = fz_rand() % 4 ? 0 : fz_rand() % 5;
		}
	}
	c->binds++;
	if (uw_bind((uint32_t)pid, mp, n))
		c->bind_refused++;
}

/* A child that spins in this (frame-pointer-less -O2) binary. */
static __attribute__((noinline)) unsigned long tf_spin(unsigned long x)
{
	unsigned int i;

	for (i = 0; i < 100000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static pid_t tf_child(void)
{
	pid_t pid = fork();
	volatile unsigned long sink = 1;

	if (pid)
		return pid;
	close(nl_socket_get_fd(sk));
	for (;;) {
		sink = tf_spin(sink);
		if (getppid() == 1)
			_exit(0);
	}
}

/* One iteration: mutate, load, compare with the shared checker, walk. */
static void tf_one(struct tf_count *c, uint32_t id, pid_t pid, uint64_t lo,
		   uint64_t hi, uint64_t off)
{
	uint32_t len = tf_base_len, claimed, k = 1 + fz_rand() % 3;
	const char *why = "";
	bool want, loaded;
	int ret;

	memcpy(tf_buf, tf_base, tf_base_len);
	while (k--)
		tf_mutate(&len);
	claimed = len;
	if (fz_rand() % 16 == 0)
		claimed = fz_rand() % 2 ? len + 1 + fz_rand() % 4096 :
					  EMBER_UNWIND_MAX_TABLE;
	want = claimed == len && !ember_unwind_table_check(tf_buf, len, &why);
	c->sent++;
	ret = len ? tf_send(id, claimed, len) : uw_load(id, claimed, 0, tf_buf, 0);
	if (ret == -EIO) {
		c->dead++;
		return;
	}
	loaded = uw_info().uw_tables == 1;
	if (loaded) {
		c->accepted++;
	} else if (ret) {
		c->refused++;
	} else {
		/*
		 * Claimed more than it sent: the module holds it as its one
		 * pending table until another load starts. Start one of size
		 * 0 (refused), which must free it: otherwise the last
		 * iteration's pending table would count as memory left.
		 */
		c->pending++;
		uw_load(id, 0, 0, tf_buf, 0);
	}
	if (loaded != want) {
		c->mismatch++;
		printf("TABLEFUZZ-MISMATCH: module %s, checker %s (%s): len=%u claimed=%u\n",
		       loaded ? "accepted" : "refused",
		       want ? "accepts" : "refuses", why, len, claimed);
	}
	if (!loaded)
		return;
	tf_bind(c, pid, id, lo, hi, off);
	usleep(fz_rand() % 20000);
	drain_records();
	if (fz_rand() % 2) {
		uw_drop(id);
		uw_bind((uint32_t)pid, NULL, 0);
	} else {
		uw_bind((uint32_t)pid, NULL, 0);
		uw_drop(id);
	}
}

/*
 * tablefuzz N SEED: N mutated copies of a valid multi-page table (1-3
 * mutations each) sent over netlink while a frame-pointer-less child is
 * sampled at 1 kHz. The module must accept exactly the tables the shared
 * checker (include/ember_unwind.h) accepts; accepted ones are bound to
 * the child so the unwinder walks with them, then dropped. At the end the
 * unwind memory is back to 0 and GET_INFO answers.
 */
static int cmd_tablefuzz(unsigned int n, uint64_t seed)
{
	struct opts o = { .events = EMBER_EV_ONCPU, .freq = 1000,
			  .have_freq = true };
	struct tf_count c = { 0 };
	uint64_t lo, hi, off, cfi, left;
	struct info in;
	unsigned int i;
	pid_t pid;
	int fd;

	fz_state = seed ? seed : 1;
	tf_build_base();
	pid = tf_child();
	if (pid < 0)
		return 1;
	if (do_start(&o, &in)) {
		kill(pid, SIGKILL);
		return 1;
	}
	fd = map_rings(&in);
	usleep(20000);
	if (fd < 0 || tf_text(pid, &lo, &hi, &off)) {
		fprintf(stderr, "ember-test: tablefuzz: no text mapping of the child\n");
		kill(pid, SIGKILL);
		return 1;
	}
	for (i = 0; i < n && !c.dead; i++)
		tf_one(&c, 1 + i % 1000, pid, lo, hi, off);
	get_stats();
	cfi = 0;
	for (i = 0; i < MAX_CPUS; i++)
		cfi += stats[i].ucfi;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* what our drops and unbinds left, before STOP frees the rest */
	in = uw_info();
	left = in.uw_used + in.uw_tables + in.uw_bound;
	transact(req(EMBER_CMD_STOP, NLM_F_ACK), NULL, NULL);
	memset(&in, 0, sizeof(in));
	if (transact(req(EMBER_CMD_GET_INFO, NLM_F_ACK), parse_info, &in))
		c.dead++;
	printf("tablefuzz seed=%" PRIu64 " rows=%u sent=%u accepted=%u refused=%u pending=%u mismatch=%u binds=%u bind_refused=%u cfi_walks=%" PRIu64 " unwind_left=%" PRIu64 " unwind_bytes_after_stop=%" PRIu64 " dead=%u\n",
	       seed, tf_nr_rows(), c.sent, c.accepted, c.refused, c.pending,
	       c.mismatch, c.binds, c.bind_refused, cfi, left, in.uw_used,
	       c.dead);
	return c.dead || c.mismatch || left || in.uw_used || in.uw_tables ||
	       in.running || !c.accepted || !cfi ? 1 : 0;
}

/* ---------------------------------------------------------------- main */

/* ------------------------------------------------------- Python frames */

/*
 * Debian 12's python3.11 (3.11.2) and glibc 2.36, by hand, for the module's
 * test alone (the agent finds all of this itself). Sourced:
 *  - _PyInterpreterFrame (Include/internal/pycore_frame.h, v3.11.2):
 *    f_code 32, previous 48, prev_instr 56, is_entry 68 (1 on the frame an
 *    activation of _PyEval_EvalFrameDefault starts with);
 *  - PyThreadState.cframe 56, _PyCFrame.current_frame 8;
 *  - PyCodeObject co_flags 48, co_argcount 56, co_firstlineno 72 (checked
 *    with ctypes against code objects of the running binary);
 *  - autoTSSkey._key: _PyRuntime + 0x254 (x86-64) / + 0x264 (arm64), read
 *    off PyGILState_GetThisThreadState's code in each binary;
 *  - pthread_getspecific(key < 32) reads tp + 0x310 + 16 * key + 8 on
 *    x86-64 and tp - 0x630 + 16 * key + 8 on arm64 (its code in each
 *    libc.so.6): tstate_off 0x318 / -0x628.
 * _PyRuntime, _PyEval_EvalFrameDefault and Py_Version come from the
 * program's .dynsym (python3.11 is not PIE in Debian 12: no bias).
 */
#if defined(__x86_64__)
#define PY311_KEY_OFF	0x254
#define PY311_TSD_OFF	0x318
#elif defined(__aarch64__)
#define PY311_KEY_OFF	0x264
#define PY311_TSD_OFF	(-0x628)
#endif

static int py_fill_311(uint32_t pid, struct ember_py_proc *p)
{
	struct elf_sym w[3] = { { .name = "_PyRuntime" },
				{ .name = "_PyEval_EvalFrameDefault" },
				{ .name = "Py_Version" } };
	char exe[64];
	uint32_t ver = 0;
	int fd;

	snprintf(exe, sizeof(exe), "/proc/%u/exe", pid);
	if (elf_syms(exe, w, 3) < 0 || !w[0].vaddr || !w[1].vaddr) {
		fprintf(stderr, "ember-test: %s: no _PyRuntime/_PyEval_EvalFrameDefault\n", exe);
		return -1;
	}
	snprintf(exe, sizeof(exe), "/proc/%u/mem", pid);
	fd = open(exe, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !w[2].vaddr ||
	    pread(fd, &ver, sizeof(ver), (off_t)w[2].vaddr) != sizeof(ver))
		ver = 0x030b0000;
	if (fd >= 0)
		close(fd);
	memset(p, 0, sizeof(*p));
	p->version = ver;
	p->tstate_kind = EMBER_PY_TS_TSD;
	p->entry_kind = EMBER_PY_ENTRY_FLAG;
	p->entry_value = 1;
	p->ts_frame_nr = 2;
	p->ts_frame[0] = 56;
	p->ts_frame[1] = 8;
	p->tstate_off = PY311_TSD_OFF;
	p->key_addr = w[0].vaddr + PY311_KEY_OFF;
	p->eval_start[0] = w[1].vaddr;
	p->eval_end[0] = w[1].vaddr + w[1].size;
	p->fr_previous = 48;
	p->fr_code = 32;
	p->fr_instr = 56;
	p->fr_owner = 68;
	p->co_firstlineno = 72;
	p->co_argcount = 56;
	p->co_flags = 48;
	printf("py-proc pid=%u version=0x%08x key_addr=0x%" PRIx64 " eval=0x%" PRIx64 "-0x%" PRIx64 "\n",
	       pid, ver, (uint64_t)p->key_addr, (uint64_t)p->eval_start[0],
	       (uint64_t)p->eval_end[0]);
	return 0;
}

static int py_bind(uint32_t pid, const struct ember_py_proc *p, size_t len)
{
	struct nl_msg *m = req(EMBER_CMD_PY_BIND, NLM_F_ACK);

	nla_put_u32(m, EMBER_A_PY_PID, pid);
	if (p)
		nla_put(m, EMBER_A_PY_PROC, (int)len, p);
	return transact(m, NULL, NULL);
}

/* A file's ELF vaddr delta (p_vaddr - p_offset) at file offset off. */
static int elf_delta(const char *path, uint64_t off, int64_t *delta)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = -1;
	unsigned int i;

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG))
		goto out;
	for (i = 0; i < eh.e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph))
			goto out;
		if (ph.p_type != PT_LOAD)
			continue;
		if (off >= (ph.p_offset & ~0xfffULL) &&
		    off < ph.p_offset + ph.p_filesz) {
			*delta = (int64_t)(ph.p_vaddr - ph.p_offset);
			ret = 0;
			break;
		}
	}
out:
	close(fd);
	return ret;
}

/*
 * -T DIR: the CFI tables of pid's executable mappings whose file has
 * DIR/BASENAME.tbl (`ember unwind-table -o`, made on the host), loaded and
 * bound the way the agent does, so the module's CFI walk reaches the eval
 * loop in code built without frame pointers. Other executable mappings
 * are bound without a table ([vdso] flagged).
 */
static int py_tables(uint32_t pid, const char *dir)
{
	struct ember_unwind_mapping mp[64];
	char path[512], line[768], tbl[600];
	unsigned int n = 0, id = 1000;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (n < 64 && fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perm[8], file[512] = "";
		const char *base;
		int64_t delta = 0;
		struct stat st;

		/*
		 * user space only: a kernel built with vsyscall=xonly lists
		 * [vsyscall] as executable, and the module refuses a mapping
		 * above TASK_SIZE (the agent leaves it out too)
		 */
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %511s", &lo, &hi,
			   perm, &off, file) < 4 || perm[2] != 'x' ||
		    hi > (1ULL << 48) || !strcmp(file, "[vsyscall]"))
			continue;
		memset(&mp[n], 0, sizeof(mp[n]));
		mp[n].start = lo;
		mp[n].end = hi;
		if (!strcmp(file, "[vdso]"))
			mp[n].flags = EMBER_UMF_VDSO;
		base = strrchr(file, '/');
		snprintf(tbl, sizeof(tbl), "%s/%s.tbl", dir, base ? base + 1 : file);
		if (file[0] == '/' && !stat(tbl, &st) && st.st_size > 0 &&
		    !elf_delta(file, off, &delta)) {
			uint8_t *t = malloc((size_t)st.st_size);
			FILE *tf = fopen(tbl, "r");
			uint32_t o2;
			int r = 0;

			if (!t || !tf || fread(t, 1, (size_t)st.st_size, tf) !=
			    (size_t)st.st_size) {
				fprintf(stderr, "ember-test: cannot read %s\n", tbl);
				r = -1;
			}
			for (o2 = 0; !r && o2 < (uint32_t)st.st_size; o2 += EMBER_UNWIND_CHUNK_MAX) {
				uint32_t len = (uint32_t)st.st_size - o2;

				if (len > EMBER_UNWIND_CHUNK_MAX)
					len = EMBER_UNWIND_CHUNK_MAX;
				r = uw_load(id, (uint32_t)st.st_size, o2, t + o2, len);
			}
			if (tf)
				fclose(tf);
			free(t);
			report("py: unwind load", r);
			if (!r) {
				mp[n].table_id = id++;
				/* pc - bias = the file's vaddr */
				mp[n].bias = lo - off - (uint64_t)delta;
				printf("py-table %s id=%u bias=0x%" PRIx64 "\n",
				       tbl, mp[n].table_id, (uint64_t)mp[n].bias);
			}
		}
		n++;
	}
	fclose(f);
	report("py: unwind bind", uw_bind(pid, mp, n));
	return 0;
}

static int py_setup(const struct opts *o)
{
	struct ember_py_proc p;
	int ret;

	if (o->py_tables)
		py_tables(o->py_pid, o->py_tables);
	if (py_fill_311(o->py_pid, &p))
		return -1;
	ret = py_bind(o->py_pid, &p, sizeof(p));
	report("py-bind", ret);
	printf("py-bind pid=%u ret=%d\n", o->py_pid, ret);
	return ret;
}

/*
 * pybad: every field of struct ember_py_proc refused when wrong, with a
 * message, and nothing kept; the binding's life (session only, unbind,
 * EMBER_MAX_PY_PROCS with live processes, room made by dead ones).
 */
static int py_failures;

static void py_expect(const char *what, int ret, bool ok)
{
	if ((ret == 0) == ok) {
		printf("py ok: %s%s%s\n", what, ret ? ": refused: " : "",
		       ret ? last_errmsg : "");
		if (!ok && !last_errmsg[0]) {
			printf("PY-FAIL: %s: refused without a message\n", what);
			py_failures++;
		}
		return;
	}
	printf("PY-FAIL: %s: %s (%d %s)\n", what, ok ? "refused" : "ACCEPTED",
	       ret, ret ? last_errmsg : "");
	py_failures++;
}

static void py_good(struct ember_py_proc *p)
{
	memset(p, 0, sizeof(*p));
	p->version = 0x030b02f0;
	p->tstate_kind = EMBER_PY_TS_TSD;
	p->entry_kind = EMBER_PY_ENTRY_FLAG;
	p->entry_value = 1;
	p->ts_frame_nr = 2;
	p->ts_frame[0] = 56;
	p->ts_frame[1] = 8;
	p->tstate_off = 0x318;
	p->key_addr = 0xa5b994;
	p->eval_start[0] = 0x52b0f0;
	p->eval_end[0] = 0x538a4c;
	p->fr_previous = 48;
	p->fr_code = 32;
	p->fr_instr = 56;
	p->fr_owner = 68;
	p->co_firstlineno = 72;
	p->co_argcount = 56;
	p->co_flags = 48;
}

#define PY_BAD(what, stmt) do {						\
	py_good(&p);							\
	stmt;								\
	py_expect(what, py_bind(me, &p, sizeof(p)), false);		\
} while (0)

static int cmd_pybad(void)
{
	struct opts o = { .events = EMBER_EV_ONCPU };
	uint32_t me = (uint32_t)getpid();
	static pid_t kids[EMBER_MAX_PY_PROCS];
	struct ember_py_proc p;
	struct info in;
	unsigned int i, nk = 0;
	uint8_t big[sizeof(p) + 8];

	py_good(&p);
	py_expect("no session", py_bind(me, &p, sizeof(p)), false);
	if (do_start(&o, &in))
		return 1;
	if (!(in.caps & EMBER_CAP_PYTHON))
		py_expect("EMBER_CAP_PYTHON advertised", -1, true);
	py_good(&p);
	py_expect("good", py_bind(me, &p, sizeof(p)), true);
	py_expect("good again (replaces)", py_bind(me, &p, sizeof(p)), true);
	PY_BAD("version 3.10", p.version = 0x030a0000);
	PY_BAD("tstate_kind 0", p.tstate_kind = 0);
	PY_BAD("tstate_kind 3", p.tstate_kind = 3);
	PY_BAD("entry_kind 0", p.entry_kind = 0);
	PY_BAD("entry_kind 3", p.entry_kind = 3);
	PY_BAD("ts_frame_nr 0", p.ts_frame_nr = 0);
	PY_BAD("ts_frame_nr 3", p.ts_frame_nr = 3);
	PY_BAD("ts_frame[1] set with nr 1", p.ts_frame_nr = 1);
	PY_BAD("TSD without key_addr", p.key_addr = 0);
	PY_BAD("key_addr unaligned", p.key_addr = 0xa5b995);
	PY_BAD("key_addr in the kernel", p.key_addr = 0xffff888000000000ULL);
	PY_BAD("TLS with key_addr", p.tstate_kind = EMBER_PY_TS_TLS);
	PY_BAD("ts_frame[0] 4096", p.ts_frame[0] = EMBER_PY_MAX_OFFSET);
	PY_BAD("ts_frame[1] 4096", p.ts_frame[1] = EMBER_PY_MAX_OFFSET);
	PY_BAD("fr_previous 4096", p.fr_previous = EMBER_PY_MAX_OFFSET);
	PY_BAD("fr_code 65535", p.fr_code = 65535);
	PY_BAD("fr_instr 4096", p.fr_instr = EMBER_PY_MAX_OFFSET);
	PY_BAD("fr_owner 4096", p.fr_owner = EMBER_PY_MAX_OFFSET);
	PY_BAD("co_firstlineno 4096", p.co_firstlineno = EMBER_PY_MAX_OFFSET);
	PY_BAD("co_argcount 4096", p.co_argcount = EMBER_PY_MAX_OFFSET);
	PY_BAD("co_flags 4096", p.co_flags = EMBER_PY_MAX_OFFSET);
	PY_BAD("eval empty", p.eval_end[0] = p.eval_start[0]);
	PY_BAD("eval reversed", p.eval_end[0] = p.eval_start[0] - 1);
	PY_BAD("eval in the kernel", p.eval_end[0] = 0xffff800000001000ULL);
	PY_BAD("eval 0 unused, 1 used",
	       (p.eval_start[1] = p.eval_start[0], p.eval_end[1] = p.eval_end[0],
		p.eval_start[0] = 0, p.eval_end[0] = 0));
	PY_BAD("eval ranges overlap",
	       (p.eval_start[1] = p.eval_start[0] + 16,
		p.eval_end[1] = p.eval_end[0] + 16));
	PY_BAD("eval 1 half set", p.eval_end[1] = 0x400000);
	PY_BAD("code_tag_mask 8", p.code_tag_mask = 8);
	for (i = 0; i < 7; i++) {
		char what[32];

		snprintf(what, sizeof(what), "__reserved[%u]", i);
		PY_BAD(what, p.__reserved[i] = 1);
	}
	py_good(&p);
	p.eval_start[1] = 0x420000;
	p.eval_end[1] = 0x421000;
	p.code_tag_mask = 1;
	py_expect("good with a .cold range and a tag mask",
		  py_bind(me, &p, sizeof(p)), true);
	py_good(&p);
	memcpy(big, &p, sizeof(p));
	py_expect("PY_PROC short", py_bind(me, (void *)big, sizeof(p) - 8), false);
	py_expect("PY_PROC long", py_bind(me, (void *)big, sizeof(big)), false);
	py_expect("PY_PID 0", py_bind(0, &p, sizeof(p)), false);
	{
		struct nl_msg *m = req(EMBER_CMD_PY_BIND, NLM_F_ACK);

		nla_put(m, EMBER_A_PY_PROC, sizeof(p), &p);
		py_expect("no PY_PID", transact(m, NULL, NULL), false);
	}
	py_expect("no such process", py_bind(4194303, &p, sizeof(p)), false);
	py_expect("kernel thread", py_bind(2, &p, sizeof(p)), false);
	py_expect("unbind", py_bind(me, NULL, 0), true);
	py_expect("unbind again", py_bind(me, NULL, 0), true);

	/* the cap, with live processes: pause()d children */
	for (nk = 0; nk < EMBER_MAX_PY_PROCS; nk++) {
		kids[nk] = fork();
		if (kids[nk] < 0)
			break;
		if (!kids[nk]) {
			pause();
			_exit(0);
		}
	}
	for (i = 0; i < nk; i++)
		if (py_bind((uint32_t)kids[i], &p, sizeof(p)))
			break;
	if (nk < EMBER_MAX_PY_PROCS) {
		/* a small guest (a KASAN kernel's) may not hold 4096 processes */
		printf("py-cap-not-run: only %u children could be forked (%u bound)\n",
		       nk, i);
		py_expect("children below the cap all bound", i == nk ? 0 : -1, true);
	} else {
		py_expect("EMBER_MAX_PY_PROCS bound", i == nk ? 0 : -1, true);
		if (i != nk)
			printf("bound %u of %u children: %s\n", i, nk, last_errmsg);
		py_expect("one more: ENOSPC",
			  py_bind(me, &p, sizeof(p)) == -ENOSPC ? -ENOSPC : 0, false);
		py_expect("rebinding a bound one at the cap",
			  py_bind((uint32_t)kids[0], &p, sizeof(p)), true);
	}
	for (i = 0; i < nk; i++)
		kill(kids[i], SIGKILL);
	for (i = 0; i < nk; i++)
		waitpid(kids[i], NULL, 0);
	py_expect("room again once they exited", py_bind(me, &p, sizeof(p)), true);
	do_simple(EMBER_CMD_STOP, "stop");
	py_expect("no bind after stop", py_bind(me, &p, sizeof(p)), false);
	printf("pybad: %d failures\n", py_failures);
	return py_failures ? 1 : 0;
}

/*
 * pyscribble PID SECS FRAMEOBJ...: rewrite the 3.11 interpreter frames of
 * the given frame objects (PyFrameObject.f_frame at +24) through
 * /proc/PID/mem while the module walks them: previous, f_code, prev_instr
 * and is_entry get garbage (0, unmapped, kernel, unaligned, self, a
 * neighbour: a loop), now and then the true values back.
 */
static int cmd_pyscribble(uint32_t pid, double secs, char **objs,
			  unsigned int n)
{
	static const uint16_t field[] = { 48, 32, 56, 68 };
	uint64_t fr[16], orig[16][4], v, seed = 0x9e3779b97f4a7c15ULL;
	unsigned long writes = 0, restores = 0;
	unsigned int i, k;
	char path[64];
	double end;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/mem", pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 || n > 16) {
		perror(path);
		return 1;
	}
	for (i = 0; i < n; i++) {
		uint64_t obj = strtoull(objs[i], NULL, 0);

		if (pread(fd, &fr[i], 8, (off_t)(obj + 24)) != 8) {
			perror("pyscribble: f_frame");
			return 1;
		}
		for (k = 0; k < 4; k++)
			if (pread(fd, &orig[i][k], 8, (off_t)(fr[i] + field[k])) != 8)
				return 1;
		printf("pyscribble frame %u at 0x%" PRIx64 "\n", i, fr[i]);
	}
	end = now_s() + secs;
	while (now_s() < end) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		i = (unsigned int)(seed % n);
		k = (unsigned int)((seed >> 8) % 4);
		switch ((seed >> 16) % 9) {
		case 0: v = 0; break;
		case 1: v = 0x10; break;
		case 2: v = 0xffff888000000000ULL; break;
		case 3: v = fr[i] + 3; break;
		case 4: v = fr[i]; break;
		case 5: v = fr[(i + 1) % n]; break;
		case 6: v = 0x7ffffffff000ULL; break;
		case 7: v = seed; break;
		default:
			/* the truth back, for walks through good frames too */
			for (k = 0; k < 4; k++)
				if (pwrite(fd, &orig[i][k], k == 3 ? 1 : 8,
					   (off_t)(fr[i] + field[k])) > 0)
					restores++;
			usleep(2000);
			continue;
		}
		if (pwrite(fd, &v, k == 3 ? 1 : 8, (off_t)(fr[i] + field[k])) > 0) {
			writes++;
			/* what a walk may read back (whole, or torn by the
			 * race with this write): the test's allowed set */
			if (k != 3)
				printf("pyscribble wrote 0x%" PRIx64 "\n", v);
		}
		usleep(500);
	}
	close(fd);
	printf("pyscribble writes=%lu restores=%lu\n", writes, restores);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ember-test info|stop|stats|run [opts]|hold SECONDS [opts]|badreq NAME|unwind|alloc PROG|alloc-hold PROG SECONDS|nlfuzz N SEED|tablefuzz N SEED|pybad|pyscribble PID SECS FRAMEOBJ...\n");
	exit(2);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->events = EMBER_EV_ONCPU;
	o->duration = 2;
	while ((c = getopt(argc, argv, "f:e:ck:u:p:g:r:w:id:n:qFN:Km:P:Bs:W:L:Zy:T:")) != -1) {
		switch (c) {
		case 'f': o->freq = strtoul(optarg, NULL, 0); o->have_freq = true; break;
		case 'e': o->events = strtoul(optarg, NULL, 0); break;
		case 'c': o->clock = EMBER_CLOCK_CYCLES; break;
		case 'k': o->kmax = strtoul(optarg, NULL, 0); o->have_kmax = true; break;
		case 'u': o->umax = strtoul(optarg, NULL, 0); o->have_umax = true; break;
		case 'p':
			if (o->nr_pids < EMBER_MAX_FILTER_PIDS)
				o->pids[o->nr_pids++] = strtoul(optarg, NULL, 0);
			break;
		case 'g': o->cgroup = strtoull(optarg, NULL, 0); o->have_cg = true; break;
		case 'r': o->ring_size = strtoul(optarg, NULL, 0); o->have_ring = true; break;
		case 'w': o->watermark = strtoul(optarg, NULL, 0); o->have_wm = true; break;
		case 'i': o->idle = true; break;
		case 'd': o->duration = atof(optarg); break;
		case 'n': o->nodrain = atof(optarg); break;
		case 'q': o->quiet = true; break;
		case 'F': o->folded = true; break;
		case 'N': o->nm = optarg; break;
		case 'K': o->kallsyms = true; break;
		case 'm': o->offcpu_min = strtoull(optarg, NULL, 0); o->have_min = true; break;
		case 'P': o->ppm = strtoul(optarg, NULL, 0); o->have_ppm = true; break;
		case 'B': o->bogus = true; break;
		case 'L': o->lock_min = strtoull(optarg, NULL, 0); o->have_lock_min = true; break;
		case 'Z': o->lock_waker = true; break;
		case 'W': o->poll_ms = atoi(optarg); break;
		case 'y': o->py_pid = strtoul(optarg, NULL, 0); break;
		case 'T': o->py_tables = optarg; break;
		case 's':
			if (sscanf(optarg, "%lf:%u", &o->refilter_at,
				   &o->refilter_pid) != 2)
				usage();
			break;
		default: usage();
		}
	}
	return optind;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct info in;
	int ret;

	if (argc < 2)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	nl_open();
	if (!strcmp(argv[1], "info")) {
		memset(&in, 0, sizeof(in));
		ret = transact(req(EMBER_CMD_GET_INFO, NLM_F_ACK), parse_info, &in);
		report("info", ret);
		if (ret)
			return 1;
		printf("version=%u caps=0x%" PRIx64 " running=%u nr_rings=%u ring_size=%u"
		       " uw_tables=%u uw_bound=%u uw_used=%" PRIu64 "\n",
		       in.version, in.caps, in.running, in.nr_rings, in.ring_size,
		       in.uw_tables, in.uw_bound, in.uw_used);
		return 0;
	}
	if (!strcmp(argv[1], "stop"))
		return do_simple(EMBER_CMD_STOP, "stop") ? 1 : 0;
	if (!strcmp(argv[1], "stats")) {
		ret = get_stats();
		report("stats", ret);
		if (ret)
			return 1;
		print_stats(0);
		return 0;
	}
	if (!strcmp(argv[1], "badreq") && argc == 3)
		return cmd_badreq(argv[2]);
	if (!strcmp(argv[1], "unwind"))
		return cmd_unwind();
	if (!strcmp(argv[1], "alloc") && argc == 3)
		return cmd_alloc(argv[2]);
	if (!strcmp(argv[1], "alloc-hold") && argc == 4)
		return cmd_alloc_hold(argv[2], atof(argv[3]));
	if (!strcmp(argv[1], "nlfuzz") && argc == 4)
		return cmd_nlfuzz((unsigned int)strtoul(argv[2], NULL, 0),
				  strtoull(argv[3], NULL, 0));
	if (!strcmp(argv[1], "tablefuzz") && argc == 4)
		return cmd_tablefuzz((unsigned int)strtoul(argv[2], NULL, 0),
				     strtoull(argv[3], NULL, 0));
	if (!strcmp(argv[1], "pybad"))
		return cmd_pybad();
	if (!strcmp(argv[1], "pyscribble") && argc >= 5)
		return cmd_pyscribble((uint32_t)strtoul(argv[2], NULL, 0),
				      atof(argv[3]), argv + 4,
				      (unsigned int)(argc - 4));
	if (!strcmp(argv[1], "run")) {
		parse_opts(argc - 1, argv + 1, &o);
		return cmd_run(&o);
	}
	if (!strcmp(argv[1], "hold") && argc >= 3) {
		double secs = atof(argv[2]);

		parse_opts(argc - 2, argv + 2, &o);
		if (do_start(&o, &in))
			return 1;
		if (o.py_pid && py_setup(&o))
			return 1;
		printf("holding\n");
		usleep((useconds_t)(secs * 1e6));
		return 0;
	}
	usage();
	return 2;
}
