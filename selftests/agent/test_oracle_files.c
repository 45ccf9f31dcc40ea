// SPDX-License-Identifier: GPL-2.0-only
/*
 * The --check-unwind oracle opens the files of the processes it unwinds.
 * libdwfl's standard debuginfo search follows the module's .gnu_debuglink
 * next to the module, in a directory its owner controls, with a plain
 * open(): a FIFO there blocked the agent forever as soon as a PC had no
 * .eh_frame entry (libdwfl then looks for .debug_frame). Here a child runs
 * a copy of sleep with a FIFO named like its debug link beside it, and a
 * sample whose PC is in its ELF header must still finish unwinding.
 */
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <elfutils/libdwelf.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unwind/oracle.h"
#include "test_util.h"

/* The start of pid's first executable mapping of path, 0 if none yet. */
static uint64_t exec_mapping(pid_t pid, const char *path)
{
	char maps[64], line[1024], perms[8], file[600];
	unsigned long long start = 0, end;
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%llx-%llx %7s %*s %*s %*s %599s", &start, &end,
			       perms, file) == 4 && perms[2] == 'x' && !strcmp(file, path);
	if (f)
		fclose(f);
	return found ? start : 0;
}

/* path's .gnu_debuglink name into out; false when it has none */
static bool debuglink_of(const char *path, char *out, size_t len)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	const char *link = NULL;
	GElf_Word crc;

	elf_version(EV_CURRENT);
	elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
	if (elf)
		link = dwelf_elf_gnu_debuglink(elf, &crc);
	if (link)
		snprintf(out, len, "%s", link);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return link != NULL;
}

int main(void)
{
	char dir[] = "/tmp/ember-oracle.XXXXXX", prog[600], fifo[900], cmd[1400];
	char link[256];
	uint64_t addr = 0;
	pid_t child, checker;
	int st;

	if (geteuid() != 0) {
		printf("SKIP: oracle_debuglink_fifo_no_hang: needs root\n");
		return 0;
	}
	if (!mkdtemp(dir)) {
		T_CHECK("oracle_files_setup", false, "no temporary directory");
		T_EXIT();
	}
	if (!debuglink_of("/bin/sleep", link, sizeof(link))) {
		printf("SKIP: oracle_debuglink_fifo_no_hang: /bin/sleep has no "
		       ".gnu_debuglink\n");
		return 0;
	}
	snprintf(prog, sizeof(prog), "%s/sleep", dir);
	snprintf(fifo, sizeof(fifo), "%s/%s", dir, link);
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s", prog);
	if (system(cmd) || mkfifo(fifo, 0600)) {
		T_CHECK("oracle_files_setup", false, "%s", cmd);
		T_EXIT();
	}
	child = fork();
	if (child == 0) {
		execl(prog, "sleep", "60", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; child > 0 && !addr && i < 500; i++) {
		addr = exec_mapping(child, prog);
		if (!addr)
			usleep(10000);
	}
	if (!addr) {
		T_CHECK("oracle_files_setup", false, "%s did not start", prog);
		T_EXIT();
	}
	checker = fork();
	if (checker == 0) {
		static uint8_t stack[256];
		struct oracle_stack s = {
			.pid = (uint32_t)child, .tid = (uint32_t)child,
			.stack = stack, .stack_len = sizeof(stack),
		};
		struct oracle *o = oracle_new(0);
		uint64_t ips[8];
		int complete;

		alarm(10);
		s.regs[ORACLE_REG_SP] = 0x7ff000000000ull;
		/* the ELF header: no .eh_frame entry, so .debug_frame is sought */
		s.regs[ORACLE_REG_PC] = addr + 0x10;
		oracle_unwind(o, &s, ips, 8, &complete);
		oracle_free(o);
		_exit(0);
	}
	waitpid(checker, &st, 0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	T_CHECK("oracle_debuglink_fifo_no_hang", WIFEXITED(st) && WEXITSTATUS(st) == 0,
		"%s", WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ?
		"blocked for 10 s (opened the FIFO)" : "crashed");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	T_EXIT();
}
