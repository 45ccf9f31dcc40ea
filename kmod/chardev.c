// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/ember: root-only (0600, plus CAP_PERFMON or CAP_SYS_ADMIN) access
 * to the rings of the current session. Ring N is mapped at offset
 * N * (PAGE_SIZE + data_size) with exactly that length; each mapping holds a
 * reference on its ring set, so it stays valid after the session stops or
 * another one starts. poll() reports readable when a ring holds at least the
 * watermark, or anything once the session has stopped.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/capability.h>
#include <linux/vmalloc.h>

#include "ember_kmod.h"
#include "ring.h"

static int ember_dev_open(struct inode *inode, struct file *file)
{
	if (!capable(CAP_PERFMON) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	return nonseekable_open(inode, file);
}

static void ember_vma_open(struct vm_area_struct *vma)
{
	ember_ringset_get(vma->vm_private_data);
}

static void ember_vma_close(struct vm_area_struct *vma)
{
	ember_ringset_put(vma->vm_private_data);
}

static const struct vm_operations_struct ember_vm_ops = {
	.open = ember_vma_open,
	.close = ember_vma_close,
};

static int ember_dev_mmap(struct file *file, struct vm_area_struct *vma)
{
	unsigned long len = vma->vm_end - vma->vm_start;
	struct ember_ringset *set;
	struct ember_ring *rb;
	u64 stride, off, idx;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;	/* a private copy would never see the kernel */
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;

	/* an offset past 2^64 bytes must not wrap onto a valid ring */
	if (vma->vm_pgoff > (U64_MAX >> PAGE_SHIFT))
		return -EINVAL;

	mutex_lock(&ember_lock);
	set = ember_cur_set;
	ret = -ENODEV;		/* nothing started yet */
	if (!set)
		goto out;
	stride = EMBER_RING_MAP_SIZE(PAGE_SIZE, set->data_size);
	off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	idx = div64_u64(off, stride);
	ret = -EINVAL;
	if (len != stride || off != idx * stride || idx >= set->nr)
		goto out;
	rb = set->rings[idx];
	ret = -ENXIO;
	if (!rb)
		goto out;
	ret = remap_vmalloc_range(vma, rb->ctrl, 0);
	if (ret)
		goto out;
	ember_vm_flags_clear(vma, VM_MAYEXEC);
	vma->vm_ops = &ember_vm_ops;
	vma->vm_private_data = set;
	ember_ringset_get(set);
out:
	mutex_unlock(&ember_lock);
	return ret;
}

static __poll_t ember_dev_poll(struct file *file, poll_table *wait)
{
	struct ember_ringset *set;
	__poll_t mask = 0;
	unsigned long unread;
	unsigned int i;

	poll_wait(file, &ember_wq, wait);
	mutex_lock(&ember_lock);
	set = ember_cur_set;
	for (i = 0; set && i < set->nr && !mask; i++) {
		if (!set->rings[i])
			continue;
		unread = ember_ring_unread(set->rings[i]);
		if (unread && (!ember_running ||
			       unread >= set->rings[i]->watermark))
			mask = EPOLLIN | EPOLLRDNORM;
	}
	mutex_unlock(&ember_lock);
	return mask;
}

static const struct file_operations ember_fops = {
	.owner = THIS_MODULE,
	.open = ember_dev_open,
	.mmap = ember_dev_mmap,
	.poll = ember_dev_poll,
};

static struct miscdevice ember_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = EMBER_DEVICE_NAME,
	.fops = &ember_fops,
	.mode = 0600,
};

int ember_chardev_init(void)
{
	return misc_register(&ember_misc);
}

void ember_chardev_exit(void)
{
	misc_deregister(&ember_misc);
}
