// SPDX-License-Identifier: GPL-2.0
/* runas UID GID CMD...: drop every privilege, then exec CMD */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	uid_t uid;
	gid_t gid;

	if (argc < 4) {
		fprintf(stderr, "usage: runas UID GID CMD...\n");
		return 2;
	}
	uid = (uid_t)strtoul(argv[1], NULL, 0);
	gid = (gid_t)strtoul(argv[2], NULL, 0);
	if (setgroups(0, NULL) || setgid(gid) || setuid(uid)) {
		perror("runas");
		return 2;
	}
	execvp(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}
