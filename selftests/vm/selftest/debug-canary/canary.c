// SPDX-License-Identifier: GPL-2.0
/*
 * Positive control for the debug-kernel suite (35-kmod-debug-vm): each
 * what= value commits one bug the debug kernel's checkers must report, so
 * "zero reports" from ember.ko's run means the checkers were watching, and
 * the suite's patterns recognise what they print.
 *
 *   insmod ember_debug_canary.ko what=kasan|ubsan|lockdep|atomic|list|kmemleak
 */
#include <linux/delay.h>
#include <linux/init.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>

static char *what = "";
module_param(what, charp, 0444);
MODULE_PARM_DESC(what, "the bug to commit");

static DEFINE_MUTEX(canary_a);
static DEFINE_MUTEX(canary_b);

/* KASAN: a read one byte past a 16-byte allocation */
static noinline void canary_kasan(void)
{
	char *p = kmalloc(16, GFP_KERNEL);

	if (!p)
		return;
	OPTIMIZER_HIDE_VAR(p);
	pr_info("ember_debug_canary: kasan read %d\n", READ_ONCE(p[16]));
	kfree(p);
}

/* UBSAN bounds: index 4 of a 4-element array member, still inside the
 * struct (KASAN has nothing to say about it)
 */
static noinline void canary_ubsan(void)
{
	struct {
		int a[4];
		int b;
	} s = { { 1, 2, 3, 4 }, 5 };
	int i = 4;

	OPTIMIZER_HIDE_VAR(i);
	pr_info("ember_debug_canary: ubsan read %d\n", s.a[i]);
}

/* lockdep: A then B, later B then A (never deadlocks here: one thread) */
static noinline void canary_lockdep(void)
{
	mutex_lock(&canary_a);
	mutex_lock(&canary_b);
	mutex_unlock(&canary_b);
	mutex_unlock(&canary_a);
	mutex_lock(&canary_b);
	mutex_lock(&canary_a);
	mutex_unlock(&canary_a);
	mutex_unlock(&canary_b);
}

/* DEBUG_ATOMIC_SLEEP: a sleeping call with preemption off */
static noinline void canary_atomic(void)
{
	preempt_disable();
	might_sleep();
	preempt_enable();
}

/* DEBUG_LIST: list_add() onto a head whose prev pointer was damaged */
static noinline void canary_list(void)
{
	static struct list_head head, stray, node;

	INIT_LIST_HEAD(&head);
	head.prev = &stray;
	list_add(&node, &head);
}

/* kmemleak: allocations nobody points at any more */
static noinline void canary_kmemleak(void)
{
	int i;

	for (i = 0; i < 8; i++) {
		void *p = kmalloc(256, GFP_KERNEL);

		OPTIMIZER_HIDE_VAR(p);
	}
}

static int __init canary_init(void)
{
	if (!strcmp(what, "kasan"))
		canary_kasan();
	else if (!strcmp(what, "ubsan"))
		canary_ubsan();
	else if (!strcmp(what, "lockdep"))
		canary_lockdep();
	else if (!strcmp(what, "atomic"))
		canary_atomic();
	else if (!strcmp(what, "list"))
		canary_list();
	else if (!strcmp(what, "kmemleak"))
		canary_kmemleak();
	else
		return -EINVAL;
	return 0;
}

static void __exit canary_exit(void)
{
}

module_init(canary_init);
module_exit(canary_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ember debug-kernel suite: checker positive control");
