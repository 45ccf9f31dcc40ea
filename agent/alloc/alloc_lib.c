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
#include "alloc/alloc_lib.h"
#include "lib/safe_file.h"

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
int alloc_elf_file_offset(Elf *elf, GElf_Addr vaddr, uint64_t *off)
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

int alloc_elf_symbols(Elf *elf, bool symtab, const char *const *names,
		      size_t n, GElf_Addr *addr)
{
	Elf_Scn *scn = NULL;
	int found = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t nsyms;

		if (!gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
		    (sh.sh_type != SHT_DYNSYM &&
		     !(symtab && sh.sh_type == SHT_SYMTAB)) ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		/* the section's own size, not a header's claim, bounds it */
		nsyms = d->d_size / sh.sh_entsize;
		if (nsyms > ALLOC_MAX_SYMBOLS)
			nsyms = ALLOC_MAX_SYMBOLS;
		for (size_t i = 0; i < nsyms; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || !sym.st_value ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			for (size_t k = 0; name && k < n; k++)
				if (!addr[k] && !strcmp(name, names[k])) {
					addr[k] = sym.st_value;
					found++;
				}
		}
	}
	return found;
}

static int find_symbols(Elf *elf, GElf_Addr addr[3])
{
	static const char *const names[3] = {
		"ember_alloc_probe", "ember_free_probe", "ember_alloc_semaphore",
	};

	return alloc_elf_symbols(elf, false, names, 3, addr);
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
		if (alloc_elf_file_offset(elf, addr[k], &off[k])) {
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

/* ---- a running process's own allocator --------------------------------- */

#define MAPS_MAX_LINES	65536	/* /proc/PID/maps lines read at most */
#define ALLOC_FILE_MAX	(2ull << 30)	/* ELF files examined, at most */

/*
 * Most used first: a file with more than EMBER_MAX_ALLOC_PROBES of them
 * loses the last (valloc, pvalloc). C++'s operator new and new[] (and
 * delete, plain and sized) only in a malloc library (jemalloc, tcmalloc
 * define them apart from malloc); elsewhere (libstdc++, a static
 * executable) they call malloc and free, and a probe on both would count
 * each block twice. free and delete follow sampled blocks to their end
 * (in-use); realloc frees its old block.
 */
static const struct {
	const char *name;
	uint32_t kind;
	bool malloc_lib_only;
} entry_points[] = {
	{ "malloc", EMBER_PROBE_ENTRY_SIZE_RDI, false },
	{ "calloc", EMBER_PROBE_ENTRY_NMEMB_SIZE, false },
	{ "realloc", EMBER_PROBE_ENTRY_REALLOC, false },
	{ "free", EMBER_PROBE_ENTRY_FREE, false },
	{ "_Znwm", EMBER_PROBE_ENTRY_SIZE_RDI, true },	/* new(size_t) */
	{ "_Znam", EMBER_PROBE_ENTRY_SIZE_RDI, true },	/* new[](size_t) */
	{ "_ZdlPv", EMBER_PROBE_ENTRY_FREE, true },	/* delete(void *) */
	{ "_ZdaPv", EMBER_PROBE_ENTRY_FREE, true },	/* delete[](void *) */
	{ "_ZdlPvm", EMBER_PROBE_ENTRY_FREE, true },	/* delete(void *, size_t) */
	{ "_ZdaPvm", EMBER_PROBE_ENTRY_FREE, true },	/* delete[](void *, size_t) */
	{ "posix_memalign", EMBER_PROBE_ENTRY_SIZE_RDX, false },
	{ "aligned_alloc", EMBER_PROBE_ENTRY_SIZE_RSI, false },
	{ "memalign", EMBER_PROBE_ENTRY_SIZE_RSI, false },
	{ "valloc", EMBER_PROBE_ENTRY_SIZE_RDI, false },
	{ "pvalloc", EMBER_PROBE_ENTRY_SIZE_RDI, false },
};
#define NR_ENTRY_POINTS (sizeof(entry_points) / sizeof(entry_points[0]))

/* How much a mapped file is preferred as the allocator (0: not one). */
static int allocator_rank(const char *path, const char *exe)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "libjemalloc", 11) || !strncmp(base, "libtcmalloc", 11) ||
	    !strncmp(base, "libmimalloc", 11))
		return 3;
	if (exe && !strcmp(path, exe))
		return 2;
	if (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5))
		return 1;
	return 0;
}

/*
 * Where the function at vaddr (file offset off) jumps first, if it
 * begins with a direct jmp (after an endbr64): jemalloc's new[] is
 * "jmp new", so its calls reach new's probe too. 0 otherwise.
 */
static GElf_Addr thunk_target(int fd, uint64_t off, GElf_Addr vaddr)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	unsigned char b[9];
	size_t at = 0;
	int32_t rel;

	if (pread(fd, b, sizeof(b), (off_t)off) != (ssize_t)sizeof(b))
		return 0;
	if (!memcmp(b, endbr64, sizeof(endbr64)))
		at = sizeof(endbr64);
	if (b[at] == 0xeb)
		return vaddr + at + 2 + (int8_t)b[at + 1];
	if (b[at] != 0xe9)
		return 0;
	memcpy(&rel, b + at + 1, sizeof(rel));
	return vaddr + at + 5 + (int64_t)rel;
}

/*
 * Whether probing the entry at off (vaddr) would count calls that an
 * earlier probe already counts: an alias at the same offset (glibc's
 * aligned_alloc is memalign; the module refuses two probes at one
 * offset), or a thunk that jumps to a probed entry.
 */
static bool counted_already(Elf *elf, int fd, uint64_t off, GElf_Addr vaddr,
			    const struct ember_alloc_probe *probes, size_t n)
{
	GElf_Addr to = thunk_target(fd, off, vaddr);
	uint64_t to_off = UINT64_MAX;

	if (to && alloc_elf_file_offset(elf, to, &to_off))
		to_off = UINT64_MAX;
	for (size_t j = 0; j < n; j++)
		if (probes[j].offset == off || probes[j].offset == to_off)
			return true;
	return false;
}

/*
 * Where to probe a free at off: past a leading "test %rdi,%rdi; je" (glibc's
 * free: free(NULL) is nothing to follow), whose test is not an instruction
 * uprobes emulate: each hit would be single-stepped out of line, a second
 * trap (~10 us a free on a paravirtualised host, bench section 4). The
 * push that follows is emulated, and rdi is still the pointer there.
 */
static uint64_t free_probe_offset(int fd, uint64_t off)
{
	static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	static const unsigned char test_rdi[3] = { 0x48, 0x85, 0xff };
	unsigned char b[13];
	size_t at = 0;

	if (pread(fd, b, sizeof(b), (off_t)off) != (ssize_t)sizeof(b))
		return off;
	if (!memcmp(b, endbr64, sizeof(endbr64)))
		at = sizeof(endbr64);
	if (memcmp(b + at, test_rdi, sizeof(test_rdi)))
		return off;
	at += sizeof(test_rdi);
	if (b[at] == 0x74)			/* je rel8 */
		return off + at + 2;
	if (b[at] == 0x0f && b[at + 1] == 0x84)	/* je rel32 */
		return off + at + 6;
	return off;
}

/*
 * The malloc-family entry points of the ELF file at path (map_files), of
 * allocator_rank() rank: an executable's symbol table is read too.
 */
static int entry_points_of(const char *path, int rank,
			   struct ember_alloc_probe *probes, size_t max)
{
	const struct safe_rules rules = {
		.max_bytes = ALLOC_FILE_MAX,
		.owners = { SAFE_ANY_OWNER, SAFE_ANY_OWNER },
		/* the exact file the process mapped: no owner to check */
		.flags = SAFE_FOLLOW | SAFE_ANYONE,
	};
	const char *names[NR_ENTRY_POINTS], *why;
	GElf_Addr addr[NR_ENTRY_POINTS] = { 0 };
	size_t n = 0;
	Elf *elf;
	int fd;

	/* not only after alloc_lib_probes(): libelf refuses work before */
	elf_version(EV_CURRENT);
	fd = safe_open_at(NULL, path, &rules, NULL, &why);
	if (fd < 0)
		return -EACCES;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_kind(elf) == ELF_K_ELF) {
		for (size_t k = 0; k < NR_ENTRY_POINTS; k++)
			names[k] = entry_points[k].name;
		alloc_elf_symbols(elf, rank == 2, names, NR_ENTRY_POINTS, addr);
		/* malloc itself or nothing: a file with calloc alone is not
		 * an allocator */
		for (size_t k = 0; addr[0] && k < NR_ENTRY_POINTS && n < max; k++) {
			uint64_t off;

			/* aliases and thunks share their arguments (kinds)
			 * with the entry they lead to */
			if (!addr[k] || (entry_points[k].malloc_lib_only && rank != 3) ||
			    alloc_elf_file_offset(elf, addr[k], &off) ||
			    counted_already(elf, fd, off, addr[k], probes, n))
				continue;
			if (entry_points[k].kind == EMBER_PROBE_ENTRY_FREE)
				off = free_probe_offset(fd, off);
			probes[n++] = (struct ember_alloc_probe){
				.offset = off,
				.kind = entry_points[k].kind,
			};
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return (int)n;
}

/* Why nothing was probed: the files read (a stripped static binary is
 * the common case), or that none of the kinds looked for is mapped. */
static void no_allocator(uint32_t pid, char file[4][PATH_MAX], char *err,
			 size_t err_len)
{
	char read[1024] = "";
	size_t at = 0;

	for (int rank = 3; rank > 0; rank--)
		if (file[rank][0] && at < sizeof(read))
			at += (size_t)snprintf(read + at, sizeof(read) - at,
					       "%s%s", at ? ", " : "", file[rank]);
	snprintf(err, err_len, "process %u maps no allocator that exports malloc (looked for jemalloc, tcmalloc, mimalloc, its executable, libc; %s%s); nothing probed",
		 pid, at ? "no malloc symbol in " : "none is mapped", read);
}

int alloc_entry_probes(uint32_t pid, char *path, size_t path_len,
		       char *what, size_t what_len,
		       struct ember_alloc_probe *probes, size_t max,
		       char *err, size_t err_len)
{
	/* the first mapping of each rank: [1] libc, [2] the executable,
	 * [3] a malloc library */
	char range[4][64] = { "" }, file[4][PATH_MAX] = { "" };
	char maps[64], exe[PATH_MAX], line[PATH_MAX + 256];
	int lines = 0, n = 0;
	ssize_t len;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%u/exe", pid);
	len = readlink(maps, exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = '\0';
	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	f = fopen(maps, "re");
	if (!f) {
		snprintf(err, err_len, "process %u: %s", pid, strerror(errno));
		return -errno;
	}
	/* kernel-made text, but a name can be long: bounded lines and count */
	while (lines++ < MAPS_MAX_LINES && fgets(line, sizeof(line), f)) {
		char r[64], perms[8], name[PATH_MAX];
		int rank;

		if (sscanf(line, "%63s %7s %*s %*s %*s %4095[^\n]", r, perms,
			   name) != 3 || perms[2] != 'x' || name[0] != '/')
			continue;
		rank = allocator_rank(name, exe);
		if (rank && !range[rank][0]) {
			unsigned long lo, hi;

			/* map_files/ names have no leading zeros; maps does */
			if (sscanf(r, "%lx-%lx", &lo, &hi) != 2)
				continue;
			snprintf(range[rank], sizeof(range[rank]), "%lx-%lx", lo, hi);
			snprintf(file[rank], sizeof(file[rank]), "%s", name);
		}
	}
	fclose(f);
	for (int rank = 3; rank > 0 && n <= 0; rank--) {
		if (!range[rank][0])
			continue;
		snprintf(path, path_len, "/proc/%u/map_files/%s", pid, range[rank]);
		snprintf(what, what_len, "%s", file[rank]);
		n = entry_points_of(path, rank, probes, max);
	}
	if (n <= 0) {
		no_allocator(pid, file, err, err_len);
		return -ENOENT;
	}
	return n;
}

size_t alloc_probes_without_inuse(struct ember_alloc_probe *probes, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n && kept < ALLOC_PROBES_WITHOUT_INUSE; i++) {
		if (probes[i].kind == EMBER_PROBE_ENTRY_FREE)
			continue;
		probes[kept] = probes[i];
		if (probes[kept].kind == EMBER_PROBE_ENTRY_REALLOC)
			probes[kept].kind = EMBER_PROBE_ENTRY_SIZE_RSI;
		kept++;
	}
	return kept;
}
