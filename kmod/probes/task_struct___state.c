// SPDX-License-Identifier: GPL-2.0
/* task_struct.state was renamed __state in 5.14 */
#include <linux/sched.h>

static unsigned int __used ember_probe(struct task_struct *t)
{
	return READ_ONCE(t->__state);
}
