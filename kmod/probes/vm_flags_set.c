// SPDX-License-Identifier: GPL-2.0
/* vm_flags_set()/vm_flags_clear() (6.3+): vma->vm_flags became read-only */
#include <linux/mm.h>

static void __used ember_probe(struct vm_area_struct *vma)
{
	vm_flags_clear(vma, VM_MAYEXEC);
}
