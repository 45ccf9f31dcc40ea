// SPDX-License-Identifier: GPL-2.0
/*
 * Scheduler tracepoints are not exported to modules by symbol; they are
 * looked up by name among the kernel's tracepoints.
 *
 * Without static calls (arm64; x86-64 too while a tracepoint has more than
 * one probe) a tracepoint calls its probes through its iterator,
 * __traceiter_NAME, whose frame would then lead every kernel stack taken
 * from a probe's own frame. The iterators of the tracepoints looked up
 * here are remembered (their extent from kallsyms) so that record.c can
 * drop that frame; an iterator the compiler inlined into the traced
 * function leaves no frame and nothing is dropped.
 */
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/tracepoint.h>

#include "ember_kmod.h"

#define EMBER_TP_ITERS	16

struct ember_tp_iter {
	unsigned long start;
	unsigned long size;
};

/* appended under ember_tp_iter_lock, read by probes without a lock */
static DEFINE_MUTEX(ember_tp_iter_lock);
static struct ember_tp_iter ember_tp_iters[EMBER_TP_ITERS];
static unsigned int ember_nr_tp_iters;

static void ember_tp_note_iterator_locked(unsigned long start)
{
	unsigned int i, n = ember_nr_tp_iters;
	char buf[KSYM_SYMBOL_LEN], *p;
	unsigned long size;

	if (!start || n == EMBER_TP_ITERS)
		return;
	for (i = 0; i < n; i++)
		if (ember_tp_iters[i].start == start)
			return;
	/* "__traceiter_NAME+0x0/0xSIZE" */
	sprint_symbol(buf, start);
	if (strncmp(buf, "__traceiter_", 12))
		return;
	p = strchr(buf, ' ');
	if (p)
		*p = '\0';
	p = strrchr(buf, '/');
	if (!p || kstrtoul(p + 1, 16, &size) || !size)
		return;
	ember_tp_iters[n].start = start;
	ember_tp_iters[n].size = size;
	/* the entry is whole before a reader counts it */
	smp_store_release(&ember_nr_tp_iters, n + 1);
}

static void ember_tp_note_iterator(struct tracepoint *tp)
{
	mutex_lock(&ember_tp_iter_lock);
	ember_tp_note_iterator_locked((unsigned long)tp->iterator);
	mutex_unlock(&ember_tp_iter_lock);
}

/* Whether a kernel return address lies in a remembered iterator. */
bool ember_tp_in_iterator(unsigned long addr)
{
	/* pairs with the release in ember_tp_note_iterator_locked() */
	unsigned int i, n = smp_load_acquire(&ember_nr_tp_iters);

	for (i = 0; i < n; i++)
		if (addr - ember_tp_iters[i].start < ember_tp_iters[i].size)
			return true;
	return false;
}

struct ember_tp_lookup {
	const char *name;
	struct tracepoint *tp;
};

static void ember_tp_match(struct tracepoint *tp, void *priv)
{
	struct ember_tp_lookup *l = priv;

	if (!l->tp && !strcmp(tp->name, l->name))
		l->tp = tp;
}

/* Process context (it may sleep). */
void *ember_find_tracepoint(const char *name)
{
	struct ember_tp_lookup l = { .name = name };

	for_each_kernel_tracepoint(ember_tp_match, &l);
	if (l.tp)
		ember_tp_note_iterator(l.tp);
	return l.tp;
}
