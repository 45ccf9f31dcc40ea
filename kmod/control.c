// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink family "ember": GET_INFO, START, STOP, GET_STATS (dump),
 * SET_FILTER, UNWIND_*, ALLOC_ATTACH/DETACH, PY_BIND. Every attribute has a policy
 * and every command is strictly validated (unknown attributes, wrong sizes
 * and trailing data are refused); the values the policy cannot express are
 * checked here, all of them before anything changes, so a bad request
 * never leaves a half-applied state. One controller at a time: the socket
 * that started the session owns it, others get -EBUSY.
 */
#include <linux/capability.h>
#include <linux/limits.h>
#include <linux/log2.h>
#include <linux/percpu.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "ember_kmod.h"
#include "alloc.h"
#include "ring.h"

/*
 * Above what NLA_POLICY_RANGE's s16 bounds hold. Not const: before 6.2
 * the policy points at a mutable one.
 */
static struct netlink_range_validation ember_fault_period_range = {
	.min = EMBER_MIN_FAULT_PERIOD,
	.max = EMBER_MAX_FAULT_PERIOD,
};

static const struct nla_policy ember_policy[EMBER_A_MAX + 1] = {
	[EMBER_A_PAD]			= { .type = NLA_REJECT },
	/* replies only */
	[EMBER_A_VERSION]		= { .type = NLA_REJECT },
	[EMBER_A_CAPS]			= { .type = NLA_REJECT },
	[EMBER_A_RUNNING]		= { .type = NLA_REJECT },
	[EMBER_A_CLOCK_EVENT_USED]	= { .type = NLA_REJECT },
	[EMBER_A_NR_RINGS]		= { .type = NLA_REJECT },
	[EMBER_A_STATS]			= { .type = NLA_REJECT },
	[EMBER_A_UNWIND_MEM_USED]	= { .type = NLA_REJECT },
	[EMBER_A_UNWIND_MEM_CAP]	= { .type = NLA_REJECT },
	[EMBER_A_UNWIND_TABLES]		= { .type = NLA_REJECT },
	[EMBER_A_UNWIND_BOUND]		= { .type = NLA_REJECT },
	/* requests */
	[EMBER_A_EVENTS]		= { .type = NLA_U32 },
	[EMBER_A_CLOCK_EVENT]		= NLA_POLICY_MAX(NLA_U32,
							 EMBER_CLOCK_CYCLES),
	[EMBER_A_FREQ]			= NLA_POLICY_RANGE(NLA_U32,
							   EMBER_MIN_FREQ,
							   EMBER_MAX_FREQ),
	[EMBER_A_KSTACK_MAX]		= NLA_POLICY_MAX(NLA_U32,
							 EMBER_MAX_FRAMES),
	[EMBER_A_USTACK_MAX]		= NLA_POLICY_MAX(NLA_U32,
							 EMBER_MAX_FRAMES),
	[EMBER_A_FLAGS]			= { .type = NLA_U32 },
	[EMBER_A_RING_SIZE]		= { .type = NLA_U32 },
	[EMBER_A_WATERMARK]		= { .type = NLA_U32 },
	[EMBER_A_FILTER_PIDS]		= { .type = NLA_BINARY,
					    .len = EMBER_MAX_FILTER_PIDS *
						   sizeof(u32) },
	[EMBER_A_FILTER_CGROUP]		= { .type = NLA_U64 },
	[EMBER_A_OFFCPU_MIN_NS]		= { .type = NLA_U64 },
	[EMBER_A_OFFCPU_SAMPLE_PPM]	= { .type = NLA_U32 },
	[EMBER_A_UNWIND_TABLE_ID]	= NLA_POLICY_MIN(NLA_U32, 1),
	/* bounds checked in ember_unwind_load(): too big for a policy */
	[EMBER_A_UNWIND_TABLE_SIZE]	= { .type = NLA_U32 },
	[EMBER_A_UNWIND_OFFSET]		= { .type = NLA_U32 },
	[EMBER_A_UNWIND_DATA]		= { .type = NLA_BINARY,
					    .len = EMBER_UNWIND_CHUNK_MAX },
	[EMBER_A_UNWIND_PID]		= NLA_POLICY_MIN(NLA_U32, 1),
	[EMBER_A_UNWIND_MAPPINGS]	= { .type = NLA_BINARY,
					    .len = EMBER_UNWIND_MAX_MAPPINGS *
						   sizeof(struct ember_unwind_mapping) },
	[EMBER_A_FAULT_PERIOD]		= NLA_POLICY_FULL_RANGE(NLA_U32,
								&ember_fault_period_range),
	[EMBER_A_RING_MEM_USED]		= { .type = NLA_REJECT },
	[EMBER_A_RING_MEM_CAP]		= { .type = NLA_REJECT },
	/*
	 * No length limits in the policy: ember_cmd_alloc_attach() says
	 * what is wrong with a long path or a wrong number of probes.
	 */
	[EMBER_A_ALLOC_PATH]		= { .type = NLA_NUL_STRING },
	[EMBER_A_ALLOC_PROBES]		= { .type = NLA_BINARY },
	[EMBER_A_ALLOC_PID]		= { .type = NLA_U32 },
	[EMBER_A_ALLOC_RATE]		= { .type = NLA_U64 },
	[EMBER_A_ALLOC_INUSE]		= { .type = NLA_FLAG },
	/* bounds checked in ember_parse_config(): a u64 range */
	[EMBER_A_LOCK_MIN_NS]		= { .type = NLA_U64 },
	[EMBER_A_PY_PID]		= NLA_POLICY_MIN(NLA_U32, 1),
	[EMBER_A_PY_PROC]		= NLA_POLICY_EXACT_LEN(sizeof(struct ember_py_proc)),
	/* the unit checked in ember_parse_config() */
	[EMBER_A_STACK_COPY]		= NLA_POLICY_MAX(NLA_U32,
							 EMBER_STACK_COPY_MAX),
};

static struct genl_family ember_family;

static int ember_check_perm(struct sk_buff *skb,
			    struct netlink_ext_ack *extack)
{
	if (netlink_capable(skb, CAP_PERFMON) ||
	    netlink_capable(skb, CAP_SYS_ADMIN))
		return 0;
	NL_SET_ERR_MSG(extack, "ember needs CAP_PERFMON or CAP_SYS_ADMIN");
	return -EPERM;
}

static u32 ember_get_u32(struct nlattr **tb, int type, u32 def)
{
	return tb[type] ? nla_get_u32(tb[type]) : def;
}

static int ember_put_unwind_info(struct sk_buff *msg)
{
	u32 tables, bound;
	u64 used, cap;

	ember_unwind_usage(&used, &cap, &tables, &bound);
	if (nla_put_u64_64bit(msg, EMBER_A_UNWIND_MEM_USED, used, EMBER_A_PAD) ||
	    nla_put_u64_64bit(msg, EMBER_A_UNWIND_MEM_CAP, cap, EMBER_A_PAD) ||
	    nla_put_u32(msg, EMBER_A_UNWIND_TABLES, tables) ||
	    nla_put_u32(msg, EMBER_A_UNWIND_BOUND, bound))
		return -EMSGSIZE;
	return 0;
}

/* What a ring set of ring_size takes: data and control page per CPU. */
static u64 ember_ring_mem(u32 ring_size)
{
	return ((u64)ring_size + PAGE_SIZE) * num_possible_cpus();
}

static u64 ember_ring_mem_cap(void)
{
	return (u64)READ_ONCE(ember_param_ring_mem_max_mb) << 20;
}

static int ember_put_info(struct sk_buff *msg)
{
	const struct ember_config *c = &ember_cfg;
	u32 ring_size = ember_cur_set ? ember_cur_set->data_size :
			ember_param_ring_size;

	if (nla_put_u32(msg, EMBER_A_VERSION, EMBER_ABI_VERSION) ||
	    nla_put_u64_64bit(msg, EMBER_A_CAPS, ember_caps, EMBER_A_PAD) ||
	    nla_put_u8(msg, EMBER_A_RUNNING, ember_running) ||
	    nla_put_u32(msg, EMBER_A_NR_RINGS, nr_cpu_ids) ||
	    nla_put_u32(msg, EMBER_A_RING_SIZE, ring_size) ||
	    nla_put_u32(msg, EMBER_A_EVENTS, c->events) ||
	    nla_put_u32(msg, EMBER_A_CLOCK_EVENT, c->clock) ||
	    nla_put_u32(msg, EMBER_A_CLOCK_EVENT_USED, c->clock_used) ||
	    nla_put_u32(msg, EMBER_A_FREQ, c->freq) ||
	    nla_put_u32(msg, EMBER_A_KSTACK_MAX, c->kstack_max) ||
	    nla_put_u32(msg, EMBER_A_USTACK_MAX, c->ustack_max) ||
	    nla_put_u32(msg, EMBER_A_FLAGS, c->flags) ||
	    nla_put_u32(msg, EMBER_A_WATERMARK, c->watermark) ||
	    nla_put_u64_64bit(msg, EMBER_A_OFFCPU_MIN_NS, c->offcpu_min_ns,
			      EMBER_A_PAD) ||
	    nla_put_u32(msg, EMBER_A_OFFCPU_SAMPLE_PPM, c->offcpu_ppm) ||
	    nla_put_u32(msg, EMBER_A_STACK_COPY, c->stack_copy) ||
	    nla_put_u64_64bit(msg, EMBER_A_LOCK_MIN_NS, c->lock_min_ns,
			      EMBER_A_PAD) ||
	    nla_put_u64_64bit(msg, EMBER_A_RING_MEM_USED,
			      ember_cur_set ? ember_ring_mem(ring_size) : 0,
			      EMBER_A_PAD) ||
	    nla_put_u64_64bit(msg, EMBER_A_RING_MEM_CAP, ember_ring_mem_cap(),
			      EMBER_A_PAD))
		return -EMSGSIZE;
	return ember_put_unwind_info(msg);
}

/* Replies to info's sender with the module's state. ember_lock held. */
static int ember_reply_info(struct genl_info *info, u8 cmd)
{
	struct sk_buff *msg;
	void *hdr;
	int ret;

	msg = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	hdr = genlmsg_put_reply(msg, info, &ember_family, 0, cmd);
	if (!hdr) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	ret = ember_put_info(msg);
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	genlmsg_end(msg, hdr);
	return genlmsg_reply(msg, info);
}

static int ember_cmd_get_info(struct sk_buff *skb, struct genl_info *info)
{
	int ret = ember_check_perm(skb, info->extack);

	if (ret)
		return ret;
	mutex_lock(&ember_lock);
	ret = ember_reply_info(info, EMBER_CMD_GET_INFO);
	mutex_unlock(&ember_lock);
	return ret;
}

/* Checks the filter attributes; the pids stay in the message. */
static int ember_parse_filter(struct genl_info *info, const u32 **pids,
			      unsigned int *nr, u64 *cgroup)
{
	struct nlattr *a = info->attrs[EMBER_A_FILTER_PIDS];

	*pids = NULL;
	*nr = 0;
	*cgroup = 0;
	if (a) {
		if (nla_len(a) % sizeof(u32)) {
			NL_SET_ERR_MSG_ATTR(info->extack, a,
					    "FILTER_PIDS must be an array of u32");
			return -EINVAL;
		}
		*pids = nla_data(a);
		*nr = nla_len(a) / sizeof(u32);
	}
	if (info->attrs[EMBER_A_FILTER_CGROUP]) {
		if (!(ember_caps & EMBER_CAP_CGROUP_FILTER)) {
			NL_SET_ERR_MSG(info->extack,
				       "kernel built without cgroups");
			return -EOPNOTSUPP;
		}
		*cgroup = nla_get_u64(info->attrs[EMBER_A_FILTER_CGROUP]);
	}
	return 0;
}

static int ember_parse_config(struct genl_info *info, struct ember_config *c)
{
	struct netlink_ext_ack *extack = info->extack;
	struct nlattr **tb = info->attrs;
	u32 ev_caps = 0;

	memset(c, 0, sizeof(*c));
	c->events = ember_get_u32(tb, EMBER_A_EVENTS, EMBER_EV_ONCPU);
	c->clock = ember_get_u32(tb, EMBER_A_CLOCK_EVENT,
				 EMBER_CLOCK_CPU_CLOCK);
	c->freq = ember_get_u32(tb, EMBER_A_FREQ, EMBER_DEFAULT_FREQ);
	c->kstack_max = ember_get_u32(tb, EMBER_A_KSTACK_MAX,
				      EMBER_DEFAULT_FRAMES);
	c->ustack_max = ember_get_u32(tb, EMBER_A_USTACK_MAX,
				      EMBER_DEFAULT_FRAMES);
	c->flags = ember_get_u32(tb, EMBER_A_FLAGS, 0);
	c->ring_size = ember_get_u32(tb, EMBER_A_RING_SIZE,
				     ember_param_ring_size);
	c->watermark = ember_get_u32(tb, EMBER_A_WATERMARK, c->ring_size / 4);
	c->offcpu_ppm = ember_get_u32(tb, EMBER_A_OFFCPU_SAMPLE_PPM, 0);
	if (tb[EMBER_A_OFFCPU_MIN_NS])
		c->offcpu_min_ns = nla_get_u64(tb[EMBER_A_OFFCPU_MIN_NS]);
	c->fault_period = ember_get_u32(tb, EMBER_A_FAULT_PERIOD,
					EMBER_DEFAULT_FAULT_PERIOD);
	c->lock_min_ns = EMBER_DEFAULT_LOCK_MIN_NS;
	if (tb[EMBER_A_LOCK_MIN_NS])
		c->lock_min_ns = nla_get_u64(tb[EMBER_A_LOCK_MIN_NS]);
	c->stack_copy = ember_get_u32(tb, EMBER_A_STACK_COPY, 0);

	if (ember_caps & EMBER_CAP_ONCPU)
		ev_caps |= EMBER_EV_ONCPU;
	if (ember_caps & EMBER_CAP_OFFCPU)
		ev_caps |= EMBER_EV_OFFCPU;
	if (ember_caps & EMBER_CAP_LIFECYCLE)
		ev_caps |= EMBER_EV_LIFECYCLE;
	if (ember_caps & EMBER_CAP_FAULTS)
		ev_caps |= EMBER_EV_FAULTS;
	if (ember_caps & EMBER_CAP_ALLOC)
		ev_caps |= EMBER_EV_ALLOC;
	if (ember_caps & EMBER_CAP_LOCK_FUTEX)
		ev_caps |= EMBER_EV_LOCK;
	if (!c->events || (c->events & ~ev_caps)) {
		NL_SET_ERR_MSG_ATTR(extack, tb[EMBER_A_EVENTS],
				    "EVENTS must be a non-empty set of supported EMBER_EV_* bits");
		return -EINVAL;
	}
	if (c->flags & ~(EMBER_F_INCLUDE_IDLE | EMBER_F_STACK_COPY |
			 EMBER_F_LOCK_WAKER)) {
		NL_SET_ERR_MSG_ATTR(extack, tb[EMBER_A_FLAGS],
				    "unknown FLAGS bits");
		return -EINVAL;
	}
	if (!is_power_of_2(c->ring_size) ||
	    c->ring_size < EMBER_MIN_RING_SIZE ||
	    c->ring_size > EMBER_MAX_RING_SIZE) {
		NL_SET_ERR_MSG_ATTR(extack, tb[EMBER_A_RING_SIZE],
				    "RING_SIZE must be a power of two from 16 KiB to 64 MiB");
		return -EINVAL;
	}
	if (ember_ring_mem(c->ring_size) > ember_ring_mem_cap()) {
		NL_SET_ERR_MSG_ATTR(extack, tb[EMBER_A_RING_SIZE],
				    "RING_SIZE times the possible CPUs is above the ring_mem_max module parameter: lower RING_SIZE or raise ring_mem_max");
		return -E2BIG;
	}
	if (!c->watermark || c->watermark > c->ring_size) {
		NL_SET_ERR_MSG_ATTR(extack, tb[EMBER_A_WATERMARK],
				    "WATERMARK must be 1..RING_SIZE bytes");
		return -EINVAL;
	}
	if (c->lock_min_ns > EMBER_MAX_LOCK_MIN_NS) {
		NL_SET_ERR_MSG_ATTR(extack, tb[EMBER_A_LOCK_MIN_NS],
				    "LOCK_MIN_NS must be at most 60 s (EMBER_MAX_LOCK_MIN_NS)");
		return -ERANGE;
	}
	if (c->stack_copy % EMBER_STACK_COPY_UNIT) {
		NL_SET_ERR_MSG_ATTR(extack, tb[EMBER_A_STACK_COPY],
				    "STACK_COPY must be a multiple of 256 bytes (EMBER_STACK_COPY_UNIT)");
		return -EINVAL;
	}
	if (c->offcpu_ppm > 1000000) {
		NL_SET_ERR_MSG_ATTR(extack, tb[EMBER_A_OFFCPU_SAMPLE_PPM],
				    "OFFCPU_SAMPLE_PPM must be at most 1000000");
		return -EINVAL;
	}
	return 0;
}

/* ember_lock held: the caller must own the running session. */
static int ember_check_owner(struct genl_info *info)
{
	return ember_owner_check(info->snd_portid, genl_info_net(info),
				 info->extack);
}

/* -EBUSY with a reason when a session runs; ember_lock held. */
static int ember_check_not_running(struct genl_info *info)
{
	if (!ember_running)
		return 0;
	/* another controller's session: the check says so */
	if (!ember_check_owner(info))
		NL_SET_ERR_MSG(info->extack,
			       "a session is already running: STOP it first");
	return -EBUSY;
}

static int ember_cmd_start(struct sk_buff *skb, struct genl_info *info)
{
	struct ember_config cfg;
	const u32 *pids;
	unsigned int nr;
	u64 cgroup;
	int ret;

	ret = ember_check_perm(skb, info->extack);
	if (ret)
		return ret;
	ret = ember_parse_config(info, &cfg);
	if (ret)
		return ret;
	ret = ember_parse_filter(info, &pids, &nr, &cgroup);
	if (ret)
		return ret;

	mutex_lock(&ember_lock);
	ret = ember_check_not_running(info);
	if (ret)
		goto out;
	/* the filter is in place before the first event can fire */
	ret = ember_filter_set(pids, nr, cgroup);
	if (ret)
		goto out;
	ret = ember_session_start(&cfg, info->snd_portid, genl_info_net(info),
				  info->extack);
	if (ret) {
		ember_filter_clear();
		goto out;
	}
	ret = ember_reply_info(info, EMBER_CMD_START);
out:
	mutex_unlock(&ember_lock);
	return ret;
}

static int ember_cmd_stop(struct sk_buff *skb, struct genl_info *info)
{
	int ret = ember_check_perm(skb, info->extack);

	if (ret)
		return ret;
	mutex_lock(&ember_lock);
	ret = ember_check_owner(info);
	if (!ret)
		ember_session_stop();
	mutex_unlock(&ember_lock);
	/* the allocation probes go before the reply: semaphores are down */
	ember_alloc_reap();
	return ret;
}

static int ember_cmd_set_filter(struct sk_buff *skb, struct genl_info *info)
{
	const u32 *pids;
	unsigned int nr;
	u64 cgroup;
	int ret;

	ret = ember_check_perm(skb, info->extack);
	if (ret)
		return ret;
	ret = ember_parse_filter(info, &pids, &nr, &cgroup);
	if (ret)
		return ret;
	mutex_lock(&ember_lock);
	ret = ember_check_owner(info);
	if (!ret)
		ret = ember_filter_set(pids, nr, cgroup);
	mutex_unlock(&ember_lock);
	return ret;
}

/*
 * Unwind tables: any privileged socket may send them while a session
 * runs (the agent uses a second socket from its unwind thread); they are
 * the session's and go when it stops.
 */
static int ember_check_unwind(struct sk_buff *skb, struct genl_info *info)
{
	int ret = ember_check_perm(skb, info->extack);

	if (ret)
		return ret;
	if (!ember_running) {
		NL_SET_ERR_MSG(info->extack, "no session is running");
		return -ENOENT;
	}
	return 0;
}

static int ember_cmd_unwind_load(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **tb = info->attrs;
	int ret;

	if (!tb[EMBER_A_UNWIND_TABLE_ID] || !tb[EMBER_A_UNWIND_TABLE_SIZE] ||
	    !tb[EMBER_A_UNWIND_OFFSET] || !tb[EMBER_A_UNWIND_DATA]) {
		NL_SET_ERR_MSG(info->extack,
			       "UNWIND_LOAD needs TABLE_ID, TABLE_SIZE, OFFSET and DATA");
		return -EINVAL;
	}
	mutex_lock(&ember_lock);
	ret = ember_check_unwind(skb, info);
	if (!ret)
		ret = ember_unwind_load(nla_get_u32(tb[EMBER_A_UNWIND_TABLE_ID]),
					nla_get_u32(tb[EMBER_A_UNWIND_TABLE_SIZE]),
					nla_get_u32(tb[EMBER_A_UNWIND_OFFSET]),
					nla_data(tb[EMBER_A_UNWIND_DATA]),
					nla_len(tb[EMBER_A_UNWIND_DATA]),
					info->extack);
	mutex_unlock(&ember_lock);
	return ret;
}

static int ember_cmd_unwind_drop(struct sk_buff *skb, struct genl_info *info)
{
	int ret;

	if (!info->attrs[EMBER_A_UNWIND_TABLE_ID]) {
		NL_SET_ERR_MSG(info->extack, "UNWIND_DROP needs TABLE_ID");
		return -EINVAL;
	}
	mutex_lock(&ember_lock);
	ret = ember_check_unwind(skb, info);
	if (!ret)
		ret = ember_unwind_drop(nla_get_u32(info->attrs[EMBER_A_UNWIND_TABLE_ID]),
					info->extack);
	mutex_unlock(&ember_lock);
	return ret;
}

static int ember_cmd_unwind_bind(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *a = info->attrs[EMBER_A_UNWIND_MAPPINGS];
	const struct ember_unwind_mapping *m = NULL;
	u32 nr = 0;
	int ret;

	if (!info->attrs[EMBER_A_UNWIND_PID]) {
		NL_SET_ERR_MSG(info->extack, "UNWIND_BIND needs PID");
		return -EINVAL;
	}
	if (a) {
		if (nla_len(a) % sizeof(*m)) {
			NL_SET_ERR_MSG_ATTR(info->extack, a,
					    "UNWIND_MAPPINGS must be an array of ember_unwind_mapping");
			return -EINVAL;
		}
		m = nla_data(a);
		nr = nla_len(a) / sizeof(*m);
	}
	mutex_lock(&ember_lock);
	ret = ember_check_unwind(skb, info);
	if (!ret)
		ret = ember_unwind_bind(nla_get_u32(info->attrs[EMBER_A_UNWIND_PID]),
					m, nr, info->extack);
	mutex_unlock(&ember_lock);
	return ret;
}

/*
 * Python frames: like UNWIND_BIND, any privileged socket while a session
 * runs; the binding goes with the session. The policy checked PY_PROC's
 * exact size; ember_py_bind() checks every field.
 */
static int ember_cmd_py_bind(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *a = info->attrs[EMBER_A_PY_PROC];
	struct ember_py_proc p;
	int ret;

	if (!info->attrs[EMBER_A_PY_PID]) {
		NL_SET_ERR_MSG(info->extack, "PY_BIND needs PY_PID");
		return -EINVAL;
	}
	/* a copy: the attribute's data need not be 8-byte aligned */
	if (a)
		memcpy(&p, nla_data(a), sizeof(p));
	mutex_lock(&ember_lock);
	ret = ember_check_unwind(skb, info);
	if (!ret)
		ret = ember_py_bind(nla_get_u32(info->attrs[EMBER_A_PY_PID]),
				    a ? &p : NULL, info->extack);
	mutex_unlock(&ember_lock);
	return ret;
}

/*
 * Allocation probes: the owner only (ember_alloc_attach() checks it under
 * its locks). The request's shape is checked here, the probes there, all
 * before anything is placed.
 */
static int ember_cmd_alloc_attach(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *path = info->attrs[EMBER_A_ALLOC_PATH];
	struct nlattr *probes = info->attrs[EMBER_A_ALLOC_PROBES];
	struct nlattr *rate_attr = info->attrs[EMBER_A_ALLOC_RATE];
	struct netlink_ext_ack *extack = info->extack;
	u64 rate = EMBER_DEFAULT_ALLOC_RATE;
	unsigned int nr;
	u32 pid = 0;
	int ret;

	ret = ember_check_perm(skb, extack);
	if (ret)
		return ret;
	if (info->attrs[EMBER_A_ALLOC_PID])
		pid = nla_get_u32(info->attrs[EMBER_A_ALLOC_PID]);
	if (rate_attr) {
		rate = nla_get_u64(rate_attr);
		if (!rate || rate > EMBER_MAX_ALLOC_RATE) {
			NL_SET_ERR_MSG_ATTR(extack, rate_attr,
					    "ALLOC_RATE must be 1..EMBER_MAX_ALLOC_RATE bytes");
			return -ERANGE;
		}
	}
	if (!path || !probes) {
		NL_SET_ERR_MSG(extack,
			       "ALLOC_ATTACH needs ALLOC_PATH and ALLOC_PROBES");
		return -EINVAL;
	}
	/* NLA_NUL_STRING: the data holds a NUL */
	if (strnlen(nla_data(path), nla_len(path)) >= PATH_MAX) {
		NL_SET_ERR_MSG_ATTR(extack, path,
				    "ALLOC_PATH must be shorter than PATH_MAX");
		return -ENAMETOOLONG;
	}
	if (*(const char *)nla_data(path) != '/') {
		NL_SET_ERR_MSG_ATTR(extack, path,
				    "ALLOC_PATH must be an absolute path");
		return -EINVAL;
	}
	if (nla_len(probes) % sizeof(struct ember_alloc_probe)) {
		NL_SET_ERR_MSG_ATTR(extack, probes,
				    "ALLOC_PROBES must be an array of struct ember_alloc_probe");
		return -EINVAL;
	}
	nr = nla_len(probes) / sizeof(struct ember_alloc_probe);
	if (!nr || nr > EMBER_MAX_ALLOC_PROBES) {
		NL_SET_ERR_MSG_ATTR(extack, probes,
				    "ALLOC_PROBES must hold 1..EMBER_MAX_ALLOC_PROBES probes");
		return -EINVAL;
	}
	return ember_alloc_attach(nla_data(path), nla_data(probes), nr, pid,
				  rate, nla_get_flag(info->attrs[EMBER_A_ALLOC_INUSE]),
				  info->snd_portid, genl_info_net(info), extack);
}

static int ember_cmd_alloc_detach(struct sk_buff *skb, struct genl_info *info)
{
	int ret = ember_check_perm(skb, info->extack);

	if (ret)
		return ret;
	return ember_alloc_detach(info->snd_portid, genl_info_net(info),
				  info->extack);
}

static int ember_put_cpu_stats(struct sk_buff *skb, unsigned int cpu)
{
	struct ember_cpu_stats *st = per_cpu_ptr(ember_stats, cpu);
	struct nlattr *nest;

	nest = nla_nest_start(skb, EMBER_A_STATS);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, EMBER_STAT_CPU, cpu) ||
	    nla_put_u8(skb, EMBER_STAT_ONLINE, READ_ONCE(st->online)) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_SAMPLES,
			      local64_read(&st->samples), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_FILTERED,
			      local64_read(&st->filtered), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_RECORDS,
			      local64_read(&st->records), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_LOST,
			      local64_read(&st->lost), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_HANDLER_NS,
			      local64_read(&st->handler_ns), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_OFFCPU_SWITCHES,
			      local64_read(&st->offcpu_switches),
			      EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_OFFCPU_OVERFLOW,
			      local64_read(&st->offcpu_overflow),
			      EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_OFFCPU_NS,
			      local64_read(&st->offcpu_ns), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_USTACK_CFI,
			      local64_read(&st->ustack_cfi), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_USTACK_FP,
			      local64_read(&st->ustack_fp), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_USTACK_CUT,
			      local64_read(&st->ustack_cut), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_UNWIND_MISS,
			      local64_read(&st->unwind_miss), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_UNWIND_MISS_LIMITED,
			      local64_read(&st->unwind_miss_limited),
			      EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_ALLOC_HITS,
			      local64_read(&st->alloc_hits), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_LOCK_WAITS,
			      local64_read(&st->lock_waits), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_LOCK_OVERFLOW,
			      local64_read(&st->lock_overflow), EMBER_STAT_PAD) ||
	    nla_put_u64_64bit(skb, EMBER_STAT_LOCK_WAKERS,
			      local64_read(&st->lock_wakers), EMBER_STAT_PAD)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/* One message per possible CPU; cb->args[0] is the next CPU to report. */
static int ember_cmd_get_stats(struct sk_buff *skb, struct netlink_callback *cb)
{
	unsigned int cpu;
	void *hdr;
	int ret;

	if (!cb->args[0]) {
		ret = ember_check_perm(cb->skb, cb->extack);
		if (ret)
			return ret;
	}
	for (cpu = cb->args[0]; cpu < nr_cpu_ids; cpu++) {
		if (!cpu_possible(cpu))
			continue;
		hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid,
				  cb->nlh->nlmsg_seq, &ember_family,
				  NLM_F_MULTI, EMBER_CMD_GET_STATS);
		if (!hdr)
			break;
		if (ember_put_cpu_stats(skb, cpu)) {
			genlmsg_cancel(skb, hdr);
			break;
		}
		genlmsg_end(skb, hdr);
	}
	cb->args[0] = cpu;
	return skb->len;
}

static const struct genl_small_ops ember_ops[] = {
	{ .cmd = EMBER_CMD_GET_INFO, .doit = ember_cmd_get_info },
	{ .cmd = EMBER_CMD_START, .doit = ember_cmd_start },
	{ .cmd = EMBER_CMD_STOP, .doit = ember_cmd_stop },
	{ .cmd = EMBER_CMD_GET_STATS, .dumpit = ember_cmd_get_stats },
	{ .cmd = EMBER_CMD_SET_FILTER, .doit = ember_cmd_set_filter },
	{ .cmd = EMBER_CMD_UNWIND_LOAD, .doit = ember_cmd_unwind_load },
	{ .cmd = EMBER_CMD_UNWIND_DROP, .doit = ember_cmd_unwind_drop },
	{ .cmd = EMBER_CMD_UNWIND_BIND, .doit = ember_cmd_unwind_bind },
	{ .cmd = EMBER_CMD_ALLOC_ATTACH, .doit = ember_cmd_alloc_attach },
	{ .cmd = EMBER_CMD_ALLOC_DETACH, .doit = ember_cmd_alloc_detach },
	{ .cmd = EMBER_CMD_PY_BIND, .doit = ember_cmd_py_bind },
};

static struct genl_family ember_family = {
	.name = EMBER_GENL_NAME,
	.version = EMBER_GENL_VERSION,
	.maxattr = EMBER_A_MAX,
	.policy = ember_policy,
	.module = THIS_MODULE,
	.small_ops = ember_ops,
	.n_small_ops = ARRAY_SIZE(ember_ops),
};

int ember_control_init(void)
{
	ember_genl_set_resv_start_op(&ember_family, EMBER_CMD_MAX + 1);
	return genl_register_family(&ember_family);
}

void ember_control_exit(void)
{
	genl_unregister_family(&ember_family);
}
