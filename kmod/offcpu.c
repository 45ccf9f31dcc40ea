// SPDX-License-Identifier: GPL-2.0
/* Off-CPU intervals from sched_switch: not implemented yet (issue 3). */
#include "ember_kmod.h"

int ember_offcpu_start(const struct ember_config *cfg,
		       struct netlink_ext_ack *extack)
{
	NL_SET_ERR_MSG(extack, "off-CPU profiling is not implemented yet");
	return -EOPNOTSUPP;
}

void ember_offcpu_stop(void)
{
}
