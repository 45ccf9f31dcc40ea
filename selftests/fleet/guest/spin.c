// SPDX-License-Identifier: GPL-2.0-only
/*
 * Another user's busy program for the fleet test's sandbox check: built
 * in the VM, stripped, its symbols only in a separate debug file private
 * to that user. ember.service naming fleet_alice_spin in its profiles
 * proves it read /proc/PID/maps, the binary and the debug file.
 */
volatile unsigned long fleet_sink;

__attribute__((noinline)) void fleet_alice_spin(void)
{
	for (;;)
		for (unsigned long i = 0; i < 1000000; i++)
			fleet_sink += i;
}

int main(void)
{
	fleet_alice_spin();
	return 0;
}
