// SPDX-License-Identifier: GPL-2.0
/* genl_family.resv_start_op (6.1+): strict validation of new commands */
#include <net/genetlink.h>

static struct genl_family ember_probe_family __used = { .resv_start_op = 1 };
