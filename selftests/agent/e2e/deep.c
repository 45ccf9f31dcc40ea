// SPDX-License-Identifier: GPL-2.0-only
/*
 * deep: 150 nested calls, then a second of spinning at the bottom: a
 * flame graph far taller than a browser window (selftests/suites/
 * 41-agent-host.sh checks it opens at its root).
 */
volatile unsigned long sink;

__attribute__((noinline)) void descend(int depth)
{
	if (depth) {
		descend(depth - 1);
		sink++;		/* not a tail call */
		return;
	}
	for (unsigned long i = 0; i < 400000000UL; i++)
		sink += i;
}

int main(void)
{
	descend(150);
	return 0;
}
