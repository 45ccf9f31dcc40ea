// SPDX-License-Identifier: GPL-2.0
/* exec/exit records: not implemented yet (issue 3). */
#include "ember_kmod.h"

int ember_lifecycle_start(struct netlink_ext_ack *extack)
{
	NL_SET_ERR_MSG(extack, "lifecycle records are not implemented yet");
	return -EOPNOTSUPP;
}

void ember_lifecycle_stop(void)
{
}
