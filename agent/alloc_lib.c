// SPDX-License-Identifier: GPL-2.0-only
/*
 * Finding libember-alloc.so and its probe points (alloc_lib.h). The
 * library is ember's own file, installed by root: it is opened like any
 * file the operator names, and its symbols are read with libelf.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "alloc_lib.h"

static int try_path(const char *path, char *out, size_t out_len)
{
	char real[PATH_MAX];

	if (!realpath(path, real) || access(real, R_OK))
		return -ENOENT;
	if (strlen(real) >= out_len)
		return -ENAMETOOLONG;
	strcpy(out, real);
	return 0;
}

int alloc_lib_find(const char *given, char *out, size_t out_len, char *err,
		   size_t err_len)
{
	const char *env = getenv("EMBER_ALLOC_LIB");
	char self[PATH_MAX], cand[PATH_MAX + 64];
	ssize_t n;

	if (given || (env && *env)) {
		const char *p = given ? given : env;

		if (!try_path(p, out, out_len))
			return 0;
		snprintf(err, err_len, "%s (%s): %s", p,
			 given ? "--alloc-lib" : "EMBER_ALLOC_LIB",
			 strerror(errno ? errno : ENOENT));
		return -ENOENT;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		dirname(self);
		snprintf(cand, sizeof(cand), "%s/../preload/%s", self,
			 EMBER_ALLOC_LIB_NAME);
		if (!try_path(cand, out, out_len))
			return 0;
		/* installed: PREFIX/bin/ember, PREFIX/lib/ember/ */
		snprintf(cand, sizeof(cand), "%s/../lib/ember/%s", self,
			 EMBER_ALLOC_LIB_NAME);
		if (!try_path(cand, out, out_len))
			return 0;
	}
	snprintf(cand, sizeof(cand), "%s/%s", EMBER_ALLOC_LIB_DIR,
		 EMBER_ALLOC_LIB_NAME);
	if (!try_path(cand, out, out_len))
		return 0;
	snprintf(err, err_len,
		 "cannot find %s (looked next to ember and in %s): install the "
		 "ember package, or name it with --alloc-lib",
		 EMBER_ALLOC_LIB_NAME, EMBER_ALLOC_LIB_DIR);
	return -ENOENT;
}

/* The file offset of vaddr: inside the section that holds it. */
static int file_offset(Elf *elf, GElf_Addr vaddr, uint64_t *off)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    vaddr < sh.sh_addr || vaddr >= sh.sh_addr + sh.sh_size)
			continue;
		if (sh.sh_type == SHT_NOBITS)
			return -EINVAL;	/* .bss: no file backing */
		*off = vaddr - sh.sh_addr + sh.sh_offset;
		return 0;
	}
	return -ENOENT;
}

static int find_symbols(Elf *elf, GElf_Addr addr[3])
{
	static const char *const names[3] = {
		"ember_alloc_probe", "ember_free_probe", "ember_alloc_semaphore",
	};
	Elf_Scn *scn = NULL;
	int found = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || !sym.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			for (int k = 0; name && k < 3; k++)
				if (!addr[k] && !strcmp(name, names[k])) {
					addr[k] = sym.st_value;
					found++;
				}
		}
	}
	return found;
}

int alloc_lib_probes(const char *path, struct ember_alloc_probe probes[2],
		     char *err, size_t err_len)
{
	GElf_Addr addr[3] = { 0 };
	uint64_t off[3];
	Elf *elf = NULL;
	int fd, r = -ENOENT;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return -errno;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		snprintf(err, err_len, "%s: not an ELF file", path);
		goto out;
	}
	if (find_symbols(elf, addr) != 3) {
		snprintf(err, err_len,
			 "%s has no ember_alloc_probe, ember_free_probe or "
			 "ember_alloc_semaphore: not ember's allocation sampler",
			 path);
		goto out;
	}
	for (int k = 0; k < 3; k++) {
		if (file_offset(elf, addr[k], &off[k])) {
			snprintf(err, err_len, "%s: symbol at 0x%llx is not in "
				 "the file (a semaphore in .bss cannot be a "
				 "uprobe counter)", path,
				 (unsigned long long)addr[k]);
			r = -EINVAL;
			goto out;
		}
	}
	probes[0] = (struct ember_alloc_probe){
		.offset = off[0], .ref_ctr_offset = off[2],
		.kind = EMBER_PROBE_SAMPLED_ALLOC,
	};
	probes[1] = (struct ember_alloc_probe){
		.offset = off[1], .ref_ctr_offset = off[2],
		.kind = EMBER_PROBE_SAMPLED_FREE,
	};
	r = 2;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return r;
}
