// SPDX-License-Identifier: GPL-2.0
/* arm64: ptrauth_user_pac_mask(), the PAC bits of a user address */
#include <linux/types.h>
#include <asm/pointer_auth.h>

static u64 __used ember_probe(void)
{
	return ptrauth_user_pac_mask();
}
