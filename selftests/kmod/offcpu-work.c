// SPDX-License-Identifier: GPL-2.0
/* offcpu-work: blocks in known places for known times (issue 3). */
#include <stdio.h>

int main(void)
{
	return 0;
}
