// SPDX-License-Identifier: GPL-2.0-only
/*
 * An ELF file as an image in memory (symbolize_internal.h): mapped by us and
 * handed to libelf, its pages given back once read, started afresh to free
 * what libelf allocated, and its GNU build-id. The bottom layer of the
 * symbolizer's files: sym_elf.c (symbols), sym_dwarf.c (DWARF) and
 * sym_debugfile.c (separate debug files) build on it and it calls none of
 * them.
 */
#include <endian.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elfutils/libdwelf.h>
#include "symbolize/symbolize_internal.h"

#if __BYTE_ORDER == __LITTLE_ENDIAN
#define NATIVE_ELFDATA ELFDATA2LSB
#else
#define NATIVE_ELFDATA ELFDATA2MSB
#endif


/*
 * Map fd's whole file ourselves and hand the bytes to libelf: we then know
 * the mapping, can drop its pages from our RSS once read (they are
 * re-read from the page cache when needed) and unmap it at the end.
 * MAP_PRIVATE with PROT_WRITE: libelf may convert data in place for this
 * kind of image; such writes stay private. Only native-endian ELF is
 * accepted (it is all a process of this machine can run), which keeps
 * libelf from converting anything in place in the first place.
 */
Elf *sym_map_elf(int fd)
{
	unsigned char *map;
	struct stat st;
	Elf *elf;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(Elf32_Ehdr) || (uint64_t)st.st_size > SYM_ELF_MAX_BYTES)
		return NULL;
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return NULL;
	if (memcmp(map, ELFMAG, SELFMAG) != 0 ||
	    (map[EI_CLASS] != ELFCLASS32 && map[EI_CLASS] != ELFCLASS64) ||
	    map[EI_DATA] != NATIVE_ELFDATA ||
	    !(elf = elf_memory((char *)map, (size_t)st.st_size))) {
		munmap(map, (size_t)st.st_size);
		return NULL;
	}
	if (elf_kind(elf) != ELF_K_ELF) {
		sym_unmap_elf(elf);
		return NULL;
	}
	return elf;
}

/* elf_end(), then unmap what sym_map_elf() mapped. */
void sym_unmap_elf(Elf *elf)
{
	size_t size = 0;
	char *raw;

	if (!elf)
		return;
	raw = elf_rawfile(elf, &size);
	elf_end(elf);
	if (raw && size)
		munmap(raw, size);
}

/*
 * Our RSS need not keep file pages we are done with for now. One part
 * must stay: libelf edits the section header table of an in-place image
 * when it decompresses a section (sh_size, SHF_COMPRESSED cleared), and
 * dropping those private pages while the Elf lives would revert the
 * headers to the file's under libelf's feet. The rest is read-only file
 * data that faults back in on access.
 */
void sym_release_pages(Elf *elf)
{
	size_t size = 0;

	if (elf && elf_rawfile(elf, &size))
		sym_release_range(elf, 0, size);
}

void sym_release_range(Elf *elf, size_t off, size_t len)
{
	uintptr_t start, end, lo, hi, pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	size_t size = 0, shnum = 0;
	char *raw = elf ? elf_rawfile(elf, &size) : NULL;
	GElf_Ehdr eh;

	if (!raw || !size || off >= size)
		return;
	if (len > size - off)
		len = size - off;
	start = (uintptr_t)raw;
	end = start + size;
	lo = hi = end;
	if (gelf_getehdr(elf, &eh) && elf_getshdrnum(elf, &shnum) == 0 &&
	    eh.e_shoff < size) {
		lo = start + eh.e_shoff;
		hi = shnum * eh.e_shentsize < end - lo ? lo + shnum * eh.e_shentsize : end;
		lo &= ~(pg - 1);
		hi = (hi + pg - 1) & ~(pg - 1);
	}
	/* [off, off + len), page-aligned inwards, minus [lo, hi) */
	end = start + off + len;
	start = (start + off + pg - 1) & ~(pg - 1);
	if (end != (uintptr_t)raw + size)
		end &= ~(pg - 1);
	if (start >= end)
		return;
	if (lo > start)
		madvise((void *)start, (lo < end ? lo : end) - start, MADV_DONTNEED);
	if (hi < end) {
		if (hi < start)
			hi = start;
		madvise((void *)hi, end - hi, MADV_DONTNEED);
	}
}

/*
 * Start an in-place image afresh: elf_end() frees what libelf allocated
 * for it (decompressed debug sections are most of the DWARF's memory),
 * dropping the pages undoes its edits, and a new Elf reads the same bytes
 * at the same address (symbol names pointing there stay valid). false when
 * no new Elf could be had: *elfp is NULL and the bytes are unmapped.
 */
bool sym_reset_elf(Elf **elfp)
{
	size_t size = 0;
	char *raw;
	Elf *elf;

	if (!*elfp)
		return true;
	raw = elf_rawfile(*elfp, &size);
	elf_end(*elfp);
	*elfp = NULL;
	if (!raw || !size)
		return false;
	madvise(raw, size, MADV_DONTNEED);
	elf = elf_memory(raw, size);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		munmap(raw, size);
		return false;
	}
	*elfp = elf;
	return true;
}

Elf_Scn *sym_find_section(Elf *elf, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh->sh_name);
		if (name && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

ssize_t sym_build_id(Elf *elf, const unsigned char **id)
{
	const void *p = NULL;
	ssize_t len = dwelf_elf_gnu_build_id(elf, &p);

	if (len <= 0 || len > 64 || !p)
		return 0;
	*id = p;
	return len;
}

void sym_hex(char *out, const unsigned char *id, size_t len)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * len] = '\0';
}
