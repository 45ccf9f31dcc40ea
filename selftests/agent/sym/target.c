// SPDX-License-Identifier: GPL-2.0-only
/*
 * Test target for the symbolizer, built in many variants (PIE, non-PIE,
 * -O0/-O2, with and without -g, stripped, with separate debug files).
 * It prints addresses of known code and what they must resolve to, one
 * per line, then "READY", and waits for its stdin to close:
 *   ADDR <name> <hex address> <is_return 0|1> <function> <line> <fileoff>
 *   MAPPED <hex address>       (with --map FILE: FILE mapped executable)
 *   JIT <hex address> <name>   (with --jit: code described in perf map)
 * With --exec PROG, an "exec" line on stdin makes it exec PROG (same pid).
 * With --memfd LIB, LIB is copied into a memfd and dlopen()ed from there
 * (maps show "/memfd:symtest (deleted)"): ADDR memfd_func ... symlib_func.
 * <fileoff> is the file offset of the address computed from the dynamic
 * loader's program headers, independently of /proc/PID/maps.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef VARIANT
#define VARIANT "default"
#endif
const char variant[] = VARIANT;	/* makes each variant's build-id differ */

extern void *symlib_ret;
extern int symlib_line;
int symlib_func(int x);

/* noipa: no clones (static_func.constprop.0) or IPA changes at -O2. */
#define NOIPA __attribute__((noinline, noipa))

static void *ret_addr, *global_ret;
static int call_line, inline_line;

NOIPA static void capture(void)
{
	ret_addr = __builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

static const int static_func_line = __LINE__ + 1;
NOIPA static int static_func(int x) { __asm__ volatile(""); return x * 3 + 1; }

NOIPA int global_func(int x)
{
	capture(); call_line = __LINE__;
	global_ret = ret_addr;
	return static_func(x) + 1;
}

static inline __attribute__((always_inline)) void inl_mid(void)
{
	capture(); inline_line = __LINE__;
}

static void *inline_ret;
static int inline_call_line;
NOIPA void inl_outer(void)
{
	inl_mid(); inline_call_line = __LINE__;
	inline_ret = ret_addr;
}

struct phdr_query {
	uintptr_t addr;
	long off;
};

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct phdr_query *q = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && q->addr >= start &&
		    q->addr < start + ph->p_memsz) {
			q->off = (long)(q->addr - start + ph->p_offset);
			return 1;
		}
	}
	return 0;
}

static long file_offset(const void *addr)
{
	struct phdr_query q = { (uintptr_t)addr, -1 };

	dl_iterate_phdr(phdr_cb, &q);
	return q.off;
}

static void print(const char *name, const void *addr, int is_return,
		  const char *fn, int line)
{
	printf("ADDR %s %lx %d %s %d %lx\n", name, (unsigned long)addr, is_return,
	       fn, line, file_offset(addr));
}

int main(int argc, char **argv)
{
	char buf[256];

	global_func(1);
	inl_outer();
	symlib_func(1);
	/* Inside the function (past its first byte), not a return address. */
	print("static_func", (const char *)static_func + 1, 0, "static_func",
	      static_func_line);
	print("global_ret", global_ret, 1, "global_func", call_line);
	print("inline_ret", inline_ret, 1, "inl_mid", inline_line);
	printf("INLINE_CALLER inl_outer %d\n", inline_call_line);
	print("symlib_ret", symlib_ret, 1, "symlib_func", symlib_line);
	/* Non-PIE: an external function's address is its PLT stub here. */
	printf("PLT %lx\n", (unsigned long)(void *)symlib_func);
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--map") == 0) {
			int fd = open(argv[++i], O_RDONLY);
			void *p = fd < 0 ? MAP_FAILED :
				mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

			if (p == MAP_FAILED)
				return 2;
			printf("MAPPED %lx\n", (unsigned long)p + 0x40);
		} else if (strcmp(argv[i], "--memfd") == 0) {
			int in = open(argv[++i], O_RDONLY), fd = memfd_create("symtest", 0);
			char path[64];
			void *h, *fn;
			ssize_t n;

			while (in >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
				if (write(fd, buf, (size_t)n) != n)
					return 2;
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
			fn = h ? dlsym(h, "symlib_func") : NULL;
			if (!fn)
				return 2;
			print("memfd_func", (const char *)fn + 1, 0, "symlib_func", 0);
		} else if (strcmp(argv[i], "--jit") == 0) {
			const char *name = argv[++i];
			unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
						MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			char path[64];
			FILE *f;

			if (p == MAP_FAILED)
				return 2;
			memset(p, 0xc3, 4096);	/* ret */
			snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
			f = fopen(path, "w");
			if (!f)
				return 2;
			fprintf(f, "%lx 80 other_jit\n%lx 100 %s\n",
				(unsigned long)p + 0x800, (unsigned long)p + 0x100, name);
			fclose(f);
			printf("JIT %lx %s\n", (unsigned long)p + 0x123, name);
		}
	}
	printf("READY\n");
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin)) {
		/* --exec PROG: on an "exec" line, become PROG (same pid). */
		for (int i = 1; i + 1 < argc; i++)
			if (!strcmp(argv[i], "--exec") && !strncmp(buf, "exec", 4))
				execl(argv[i + 1], argv[i + 1], (char *)NULL);
	}
	return 0;
}
