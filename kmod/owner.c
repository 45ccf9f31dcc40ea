// SPDX-License-Identifier: GPL-2.0
/*
 * Who owns the running session: the generic netlink socket that started
 * it. One check, ember_owner_check(), serves every request only the owner
 * may make (STOP, SET_FILTER, ALLOC_ATTACH, ALLOC_DETACH) and START's
 * refusal; session.c sets and clears the owner and asks, from its
 * NETLINK_URELEASE notifier, whether a closing socket is it. Calls
 * nothing but state.c.
 */
#include <linux/netlink.h>
#include <net/net_namespace.h>

#include "ember_kmod.h"

/*
 * The owner, as the netlink notifier sees it without ember_lock: the
 * session's generation in the high half and its socket's portid in the
 * low half of one word, published with a single store. With two words a
 * notifier could pair the new owner with the old generation and the
 * release work would then never stop the new session. ember_owner_net
 * is stored before the word (release) and read after it (acquire).
 */
static u64 ember_owner;			/* gen << 32 | portid; 0: none */
static struct net *ember_owner_net;	/* compared only, never dereferenced */
static u32 ember_gen;			/* sessions started so far (ember_lock) */

static u32 ember_owner_portid(u64 owner)
{
	return lower_32_bits(owner);
}

/* ember_lock held: a new session of (portid, net) starts. */
void ember_owner_set(u32 portid, struct net *net)
{
	ember_gen++;
	WRITE_ONCE(ember_owner_net, net);
	/* pairs with the notifier's acquire: net and gen come with portid */
	smp_store_release(&ember_owner, (u64)ember_gen << 32 | portid);
}

/* ember_lock held: the session stopped. */
void ember_owner_clear(void)
{
	WRITE_ONCE(ember_owner, 0);
	WRITE_ONCE(ember_owner_net, NULL);
}

/* ember_lock held: the generation of the last session started. */
u32 ember_owner_gen(void)
{
	return ember_gen;
}

/*
 * Any context, no lock: whether the socket (portid, net) owns a session;
 * if so *gen is that session's generation.
 */
bool ember_owner_is_socket(u32 portid, struct net *net, u32 *gen)
{
	/* pairs with the release in ember_owner_set(): net is current */
	u64 owner = smp_load_acquire(&ember_owner);

	if (!portid || portid != ember_owner_portid(owner) ||
	    net != READ_ONCE(ember_owner_net))
		return false;
	*gen = upper_32_bits(owner);
	return true;
}

/*
 * ember_lock held: 0 if (portid, net) owns the running session, else
 * -ENOENT (none runs) or -EBUSY (another controller owns it) with the
 * reason in extack.
 */
int ember_owner_check(u32 portid, struct net *net,
		      struct netlink_ext_ack *extack)
{
	if (!ember_running) {
		NL_SET_ERR_MSG(extack, "no session is running");
		return -ENOENT;
	}
	if (ember_owner_portid(ember_owner) != portid ||
	    ember_owner_net != net) {
		NL_SET_ERR_MSG(extack,
			       "another controller owns the running session");
		return -EBUSY;
	}
	return 0;
}
