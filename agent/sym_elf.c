// SPDX-License-Identifier: GPL-2.0-only
/*
 * ELF and DWARF reading with elfutils: libelf for headers, PT_LOAD segments,
 * build-id, .gnu_debuglink and the symbol tables; libdw for line numbers
 * and inline frames. Files are mapped (ELF_C_READ_MMAP) and their fd closed
 * at once: the mapping pins the inode, so a library that is deleted or
 * replaced, or whose process (or container) is gone, still resolves, and
 * no fd is held per cached file.
 *
 * Every value read from a file is checked by libelf/libdw or here: a
 * truncated or corrupt file yields fewer symbols, never a crash.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/debuginfod.h>
#include <zlib.h>
#include "sym_internal.h"

/* ---------------------------------------------------------------- files */

/* Largest memfd read into memory (bigger ones stay unresolved). */
#define COPY_IN_MAX (64u << 20)
/* Largest file mapped (address space only; pages are read on demand). */
#define MAP_MAX (16ull << 30)

#if __BYTE_ORDER == __LITTLE_ENDIAN
#define NATIVE_ELFDATA ELFDATA2LSB
#else
#define NATIVE_ELFDATA ELFDATA2MSB
#endif

static void unmap_elf(Elf *elf);

/* snprintf that reports truncation: a cut path must not be opened. */
__attribute__((format(printf, 3, 4)))
static bool fmt_path(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size;
}

/*
 * Map fd's whole file ourselves and hand the bytes to libelf: we then know
 * the mapping, can drop its pages from our RSS once read (they are
 * re-read from the page cache when needed) and unmap it at the end.
 * MAP_PRIVATE with PROT_WRITE: libelf may convert data in place for this
 * kind of image; such writes stay private. Only native-endian ELF is
 * accepted (it is all a process of this machine can run), which keeps
 * libelf from converting anything in place in the first place.
 */
static Elf *map_elf(int fd)
{
	unsigned char *map;
	struct stat st;
	Elf *elf;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(Elf32_Ehdr) || (uint64_t)st.st_size > MAP_MAX)
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
		unmap_elf(elf);
		return NULL;
	}
	return elf;
}

/* elf_end() and unmap an Elf from map_elf(). */
static void unmap_elf(Elf *elf)
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

/* Our RSS need not keep file pages we are done with for now. */
static void release_pages(Elf *elf)
{
	size_t size = 0;
	char *raw = elf ? elf_rawfile(elf, &size) : NULL;

	if (raw && size)
		madvise(raw, size, MADV_DONTNEED);
}

static ssize_t build_id_of(Elf *elf, const unsigned char **id)
{
	const void *p = NULL;
	ssize_t len = dwelf_elf_gnu_build_id(elf, &p);

	if (len <= 0 || len > 64 || !p)
		return 0;
	*id = p;
	return len;
}

static void hex(char *out, const unsigned char *id, size_t len)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * len] = '\0';
}

static bool read_loads(struct sym_file *f)
{
	GElf_Ehdr eh;
	size_t phnum;

	if (!gelf_getehdr(f->elf, &eh) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    elf_getphdrnum(f->elf, &phnum) != 0 || phnum > 4096)
		return false;
	f->loads = calloc(phnum ? phnum : 1, sizeof(*f->loads));
	if (!f->loads)
		return false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->loads[f->nr_loads++] = (struct sym_load){
			ph.p_offset, ph.p_filesz, ph.p_vaddr };
	}
	return f->nr_loads > 0;
}

bool sym_file_vaddr(const struct sym_file *f, uint64_t off, uint64_t *vaddr)
{
	/* The segment holding off; the page-aligned start also belongs to it. */
	for (size_t i = 0; i < f->nr_loads; i++) {
		const struct sym_load *l = &f->loads[i];

		if (off >= l->offset && off - l->offset < l->filesz) {
			*vaddr = off - l->offset + l->vaddr;
			return true;
		}
	}
	for (size_t i = 0; i < f->nr_loads; i++) {
		const struct sym_load *l = &f->loads[i];
		uint64_t start = l->offset & ~4095ull;

		if (off >= start && off - start < l->filesz + (l->offset - start)) {
			*vaddr = off - l->offset + l->vaddr;
			return true;
		}
	}
	return false;
}

static Elf *open_debug_candidate(const char *path, const struct sym_file *f,
				 const unsigned char *id, ssize_t id_len,
				 uint32_t crc, bool check_crc)
{
	const unsigned char *did;
	struct stat st;
	ssize_t dlen;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	/* The main file itself (a debuglink naming its own file). */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    ((uint64_t)st.st_ino == f->ino && (uint64_t)st.st_size == f->size)) {
		close(fd);
		return NULL;
	}
	elf = map_elf(fd);
	close(fd);
	if (!elf)
		return NULL;
	dlen = build_id_of(elf, &did);
	if (id_len) {
		/* A debug file for another build of this file is worse than none. */
		if (dlen != id_len || memcmp(did, id, (size_t)id_len) != 0)
			goto reject;
	} else if (check_crc) {
		size_t size;
		char *raw = elf_rawfile(elf, &size);
		uLong c = crc32(0L, Z_NULL, 0);

		for (size_t done = 0; raw && done < size;) {
			uInt n = size - done > (1u << 30) ? 1u << 30 : (uInt)(size - done);

			c = crc32(c, (const Bytef *)raw + done, n);
			done += n;
		}
		if (!raw || (uint32_t)c != crc)
			goto reject;
	}
	return elf;
reject:
	unmap_elf(elf);
	return NULL;
}

/* Calls fn for each ':'-separated root; stops when fn returns non-NULL. */
static Elf *each_root(const char *roots, Elf *(*fn)(const char *root, size_t len,
						    void *arg), void *arg)
{
	const char *p = roots;

	while (*p) {
		size_t len = strcspn(p, ":");
		Elf *e = len ? fn(p, len, arg) : NULL;

		if (e)
			return e;
		p += len;
		if (*p == ':')
			p++;
	}
	return NULL;
}

struct debug_search {
	const struct sym_file *f;
	const unsigned char *id;
	ssize_t id_len;
	const char *prefix;	/* "/proc/PID/root" or "" */
	const char *dir;	/* directory of the file as the process sees it */
	const char *link;	/* .gnu_debuglink name */
	uint32_t crc;
};

static Elf *try_build_id(const char *root, size_t len, void *arg)
{
	struct debug_search *d = arg;
	char idhex[129], path[4096];

	if (d->id_len < 2)
		return NULL;
	hex(idhex, d->id, (size_t)d->id_len);
	if (!fmt_path(path, sizeof(path), "%.*s/.build-id/%.2s/%s.debug",
		      (int)len, root, idhex, idhex + 2))
		return NULL;
	return open_debug_candidate(path, d->f, d->id, d->id_len, 0, false);
}

static Elf *try_root_link(const char *root, size_t len, void *arg)
{
	struct debug_search *d = arg;
	char path[4096];
	Elf *e;

	/* The process's own debug root first (containers ship their own). */
	if (d->prefix[0]) {
		e = NULL;
		if (fmt_path(path, sizeof(path), "%s%.*s%s/%s", d->prefix,
			     (int)len, root, d->dir, d->link))
			e = open_debug_candidate(path, d->f, d->id, d->id_len,
						 d->crc, true);
		if (e)
			return e;
	}
	if (!fmt_path(path, sizeof(path), "%.*s%s/%s", (int)len, root, d->dir,
		      d->link))
		return NULL;
	return open_debug_candidate(path, d->f, d->id, d->id_len, d->crc, true);
}

static Elf *find_debug_file(const struct sym_file *f, const char *prefix,
			    const char *path, const struct sym_elf_ctx *ctx)
{
	struct debug_search d = { .f = f, .prefix = prefix ? prefix : "" };
	char dir[4096], cand[8192];
	GElf_Word crc = 0;
	const char *slash;
	Elf *e;

	d.id_len = build_id_of(f->elf, &d.id);
	e = each_root(ctx->debug_dirs, try_build_id, &d);
	if (e || !path)
		return e;
	d.link = dwelf_elf_gnu_debuglink(f->elf, &crc);
	if (!d.link || !d.link[0] || strchr(d.link, '/'))
		return NULL;
	d.crc = crc;
	slash = strrchr(path, '/');
	if (!slash)
		return NULL;
	if (!fmt_path(dir, sizeof(dir), "%.*s", (int)(slash - path), path))
		return NULL;
	d.dir = dir;
	/*
	 * maps shows paths from the reader's root: inside the process's root
	 * for a container in its own mount namespace, from ours for a chroot.
	 * Try both views.
	 */
	for (int view = 0; view < 2; view++) {
		const char *pre = view ? "" : d.prefix;

		if (view && !d.prefix[0])
			break;
		if (fmt_path(cand, sizeof(cand), "%s%s/%s", pre, dir, d.link) &&
		    (e = open_debug_candidate(cand, f, d.id, d.id_len, d.crc, true)))
			return e;
		if (fmt_path(cand, sizeof(cand), "%s%s/.debug/%s", pre, dir, d.link) &&
		    (e = open_debug_candidate(cand, f, d.id, d.id_len, d.crc, true)))
			return e;
	}
	return each_root(ctx->debug_dirs, try_root_link, &d);
}

static void file_identify(struct sym_file *f, const struct sym_elf_ctx *ctx)
{
	const unsigned char *id;
	ssize_t len;
	char buf[129];

	if (!read_loads(f)) {
		if (f->mem)
			elf_end(f->elf);
		else
			unmap_elf(f->elf);
		f->elf = NULL;
		return;
	}
	len = build_id_of(f->elf, &id);
	if (len > 0) {
		hex(buf, id, (size_t)len);
		f->build_id = sym_intern(ctx->strings, buf);
	}
}

void sym_file_open_fd(struct sym_file *f, int fd, const char *root,
		      const char *path, const struct sym_elf_ctx *ctx)
{
	struct stat st;

	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(Elf32_Ehdr)) {
		close(fd);
		return;
	}
	f->size = (uint64_t)st.st_size;
	f->mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec;
	if (!f->dev && !f->ino) {
		f->dev = st.st_dev;
		f->ino = st.st_ino;
	}
	if (f->copy_in) {
		void *mem = f->size <= COPY_IN_MAX ? malloc(f->size) : NULL;
		size_t done = 0;
		ssize_t n;

		while (mem && done < f->size &&
		       (n = pread(fd, (char *)mem + done, f->size - done, (off_t)done)) > 0)
			done += (size_t)n;
		close(fd);
		if (mem && done == f->size)
			sym_file_open_mem(f, mem, f->size, ctx);
		else
			free(mem);
		return;
	}
	f->elf = map_elf(fd);
	close(fd);
	if (!f->elf)
		return;
	file_identify(f, ctx);
	if (f->elf)
		f->debug_elf = find_debug_file(f, root, path, ctx);
	/* Read again only if a lookup needs this file. */
	release_pages(f->elf);
	release_pages(f->debug_elf);
}

void sym_file_open_mem(struct sym_file *f, void *mem, size_t size,
		       const struct sym_elf_ctx *ctx)
{
	f->mem = mem;
	f->size = size;
	f->elf = elf_memory(mem, size);
	if (!f->elf)
		return;
	if (elf_kind(f->elf) != ELF_K_ELF) {
		elf_end(f->elf);
		f->elf = NULL;
		return;
	}
	file_identify(f, ctx);
}

void sym_file_close(struct sym_file *f)
{
	unmap_elf(f->debug_elf);
	if (f->elf && f->mem)
		elf_end(f->elf);
	else
		unmap_elf(f->elf);
	free(f->loads);
	free(f->mem);
	f->elf = f->debug_elf = NULL;
	f->loads = NULL;
	f->mem = NULL;
}

/* -------------------------------------------------------------- symbols */

static int cmp_sym(const void *a, const void *b)
{
	const struct sym_symbol *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address, the sized symbol first: it is the one kept. */
	return (x->size < y->size) - (x->size > y->size);
}

/*
 * An unsized symbol (assembly, _init) covers at most the rest of its
 * section: without this, PLT stubs would all be named after _init.
 */
static uint64_t section_rest(Elf *elf, size_t shndx, uint64_t value)
{
	Elf_Scn *scn = elf_getscn(elf, shndx);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
	    value < sh.sh_addr || value - sh.sh_addr >= sh.sh_size)
		return 0;
	return sh.sh_addr + sh.sh_size - value;
}

/* Symbols of one SYMTAB/DYNSYM section; returns false on ENOMEM. */
static bool read_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh,
			struct sym_symbol **syms, size_t *nr, size_t *cap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t count, shnum;

	if (!data || !sh->sh_entsize || elf_getshdrnum(elf, &shnum) != 0)
		return true;
	count = sh->sh_size / sh->sh_entsize;
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		const char *name;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= shnum ||
		    !sym.st_value)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			GElf_Shdr ss;
			Elf_Scn *s;

			/* Untyped labels in code (assembly) count too. */
			if (type != STT_NOTYPE || GELF_ST_BIND(sym.st_info) == STB_LOCAL)
				continue;
			s = elf_getscn(elf, sym.st_shndx);
			if (!s || !gelf_getshdr(s, &ss) || !(ss.sh_flags & SHF_EXECINSTR))
				continue;
		}
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !name[0] || name[0] == '$')
			continue;
		if (*nr == *cap) {
			size_t ncap = *cap ? *cap * 2 : 1024;
			struct sym_symbol *n = realloc(*syms, ncap * sizeof(*n));

			if (!n)
				return false;
			*syms = n;
			*cap = ncap;
		}
		if (!sym.st_size)
			sym.st_size = section_rest(elf, sym.st_shndx, sym.st_value);
		(*syms)[(*nr)++] = (struct sym_symbol){ sym.st_value, sym.st_size, name };
	}
	return true;
}

/* All symbols of the first table of type `type` in elf. */
static bool read_symbols(Elf *elf, Elf64_Word type, struct sym_symbol **syms,
			 size_t *nr, size_t *cap, bool *found)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type)
			continue;
		*found = true;
		return read_symtab(elf, scn, &sh, syms, nr, cap);
	}
	return true;
}

static bool push_sym(struct sym_symbol **syms, size_t *nr, size_t *cap,
		     uint64_t addr, uint64_t size, const char *name)
{
	if (*nr == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		struct sym_symbol *n = realloc(*syms, ncap * sizeof(*n));

		if (!n)
			return false;
		*syms = n;
		*cap = ncap;
	}
	(*syms)[(*nr)++] = (struct sym_symbol){ addr, size, name };
	return true;
}

static Elf_Scn *find_section(Elf *elf, const char *want, GElf_Shdr *sh)
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

/*
 * Name PLT stubs "fn@plt" as perf does, from .rela.plt: stub i is at
 * .plt.sec + 16 i (IBT layout) or .plt + 16 (i + 1) (after PLT0). x86-64
 * only. Returns the malloc'd block holding the names (NULL if none).
 */
static char *plt_symbols(Elf *elf, struct sym_symbol **syms, size_t *nr,
			 size_t *cap, size_t *bytes)
{
	GElf_Shdr rsh, psh, dsh;
	Elf_Scn *rela, *dyn;
	Elf_Data *rd, *dd;
	GElf_Ehdr eh;
	uint64_t base, end;
	size_t n, total = 0, used = 0;
	char *names;

	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    !(rela = find_section(elf, ".rela.plt", &rsh)) ||
	    rsh.sh_type != SHT_RELA || !rsh.sh_entsize)
		return NULL;
	if (find_section(elf, ".plt.sec", &psh)) {
		base = psh.sh_addr;
	} else if (find_section(elf, ".plt", &psh)) {
		base = psh.sh_addr + 16;
	} else {
		return NULL;
	}
	end = psh.sh_addr + psh.sh_size;
	if (!(dyn = elf_getscn(elf, rsh.sh_link)) || !gelf_getshdr(dyn, &dsh) ||
	    !(rd = elf_getdata(rela, NULL)) || !(dd = elf_getdata(dyn, NULL)))
		return NULL;
	n = rsh.sh_size / rsh.sh_entsize;
	if (n > 65536)
		n = 65536;
	for (int pass = 0; pass < 2; pass++) {
		names = pass ? malloc(total ? total : 1) : NULL;
		if (pass && !names)
			return NULL;
		for (size_t i = 0; i < n && base + 16 * (i + 1) <= end; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *name;
			size_t len;

			if (!gelf_getrela(rd, (int)i, &r) || !GELF_R_SYM(r.r_info) ||
			    !gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym) ||
			    !(name = elf_strptr(elf, dsh.sh_link, sym.st_name)) || !*name)
				continue;
			len = strlen(name) + sizeof("@plt");
			if (!pass) {
				total += len;
				continue;
			}
			if (used + len > total)
				break;
			snprintf(names + used, len, "%s@plt", name);
			if (!push_sym(syms, nr, cap, base + 16 * i, 16, names + used))
				break;
			used += len;
		}
	}
	*bytes = total;
	return names;
}

void sym_elf_load(struct sym_elf *se, struct sym_file *f,
		  const struct sym_elf_ctx *ctx)
{
	size_t plt_bytes = 0;
	struct sym_symbol *syms = NULL;
	size_t nr = 0, cap = 0, out = 0;
	bool found = false;

	(void)ctx;
	se->loaded = true;
	se->loaded_from = f;
	/* .symtab has everything; a stripped file keeps it in its debug file. */
	read_symbols(f->elf, SHT_SYMTAB, &syms, &nr, &cap, &found);
	if (!found && f->debug_elf)
		read_symbols(f->debug_elf, SHT_SYMTAB, &syms, &nr, &cap, &found);
	if (!found)
		read_symbols(f->elf, SHT_DYNSYM, &syms, &nr, &cap, &found);
	se->plt_names = plt_symbols(f->elf, &syms, &nr, &cap, &plt_bytes);
	if (nr) {
		qsort(syms, nr, sizeof(*syms), cmp_sym);
		for (size_t i = 0; i < nr; i++) {	/* one per address */
			if (out && syms[out - 1].addr == syms[i].addr)
				continue;
			syms[out++] = syms[i];
		}
	}
	se->syms = syms;
	se->nr_syms = out;
	se->cost = sizeof(*se) + cap * sizeof(*syms) + plt_bytes;
}

void sym_elf_unload(struct sym_elf *se)
{
	if (se->dwarf)
		dwarf_end(se->dwarf);
	unmap_elf(se->dbgd_elf);
	if (se->loaded_from && !se->loaded_from->mem) {
		release_pages(se->loaded_from->elf);
		release_pages(se->loaded_from->debug_elf);
	}
	free(se->syms);
	free(se->plt_names);
	se->plt_names = NULL;
	free(se->funcs);
	free(se->cu_seen);
	se->funcs = NULL;
	se->cu_seen = NULL;
	se->nr_funcs = se->nr_cus = 0;
	se->syms = NULL;
	se->nr_syms = 0;
	se->dwarf = NULL;
	se->dbgd_elf = NULL;
	se->dwarf_tried = false;
	se->loaded = false;
	se->loaded_from = NULL;
	se->cost = 0;
}

static const struct sym_symbol *find_symbol(const struct sym_elf *se,
					    uint64_t vaddr)
{
	size_t lo = 0, hi = se->nr_syms;
	const struct sym_symbol *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (se->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &se->syms[lo - 1];
	if (s->size && vaddr - s->addr >= s->size) {
		/* Maybe inside a bigger symbol that starts earlier (rare). */
		for (size_t i = lo - 1, n = 0; i-- > 0 && n < 8; n++) {
			if (vaddr - se->syms[i].addr < se->syms[i].size)
				return &se->syms[i];
		}
		return NULL;
	}
	/* Unsized and outside any section: trust it up to the next symbol. */
	return s;
}

/* ---------------------------------------------------------------- DWARF */

/*
 * debuginfod: a query is abandoned after DINFOD_QUERY_S seconds (the
 * library's default would wait 90 s per server and file), and after
 * DINFOD_MAX_ERRORS failures other than "not found" the servers are
 * considered unreachable for the rest of the run.
 */
#define DINFOD_QUERY_S 20
#define DINFOD_MAX_ERRORS 3

struct dinfod_state {
	struct timespec start;
	int errors;
	bool disabled;
};

static int dinfod_progress(debuginfod_client *c, long a, long b)
{
	struct dinfod_state *st = debuginfod_get_user_data(c);
	struct timespec now;

	(void)a;
	(void)b;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return st && now.tv_sec - st->start.tv_sec > DINFOD_QUERY_S;
}

void *sym_debuginfod_begin(void)
{
	struct dinfod_state *st = calloc(1, sizeof(*st));
	debuginfod_client *c = st ? debuginfod_begin() : NULL;

	if (!c) {
		free(st);
		return NULL;
	}
	debuginfod_set_user_data(c, st);
	debuginfod_set_progressfn(c, dinfod_progress);
	return c;
}

void sym_debuginfod_end(void *client)
{
	if (!client)
		return;
	free(debuginfod_get_user_data(client));
	debuginfod_end(client);
}

static Elf *fetch_debuginfod(struct sym_elf *se, const struct sym_elf_ctx *ctx)
{
	struct dinfod_state *st;
	const unsigned char *id;
	ssize_t len = build_id_of(se->loaded_from->elf, &id);
	Elf *elf;
	int fd;

	if (!ctx->debuginfod || len <= 0)
		return NULL;
	st = debuginfod_get_user_data(ctx->debuginfod);
	if (st->disabled)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &st->start);
	fd = debuginfod_find_debuginfo(ctx->debuginfod, id, (int)len, NULL);
	if (fd < 0) {
		if (fd != -ENOENT && ++st->errors >= DINFOD_MAX_ERRORS) {
			st->disabled = true;
			fprintf(stderr, "ember: debuginfod failed %d times (last: %s); "
				"not asking it again in this run (check DEBUGINFOD_URLS)\n",
				st->errors, strerror(-fd));
		}
		return NULL;
	}
	elf = map_elf(fd);
	close(fd);
	return elf;
}

static Dwarf *open_dwarf(struct sym_elf *se, const struct sym_elf_ctx *ctx)
{
	struct sym_file *f = se->loaded_from;
	Dwarf *dw = NULL;

	if (f->debug_elf)
		dw = dwarf_begin_elf(f->debug_elf, DWARF_C_READ, NULL);
	if (!dw)
		dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	if (!dw && !se->dbgd_elf) {
		se->dbgd_elf = fetch_debuginfod(se, ctx);
		if (se->dbgd_elf)
			dw = dwarf_begin_elf(se->dbgd_elf, DWARF_C_READ, NULL);
	}
	return dw;
}

static const char *die_name(Dwarf_Die *die, char **demangled)
{
	Dwarf_Attribute attr;
	const char *name;

	*demangled = NULL;
	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die,
					DW_AT_MIPS_linkage_name, &attr));
	if (name) {
		*demangled = sym_demangle(name);
		return *demangled ? *demangled : name;
	}
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

static void set_name(struct sym_frame *fr, const struct sym_elf_ctx *ctx,
		     const char *name)
{
	char *d = sym_demangle(name);

	fr->function = sym_intern(ctx->strings, d ? d : name);
	free(d);
}

#define MAX_INLINE_DEPTH 64

static bool is_function(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/*
 * Frames for a chain of function DIEs, outermost (the real function) first:
 * emitted innermost inlined function first, each with the source position
 * inside it (from the line table for the innermost, from the
 * DW_AT_call_file/line of the inlined call it contains for the others).
 */
static int emit_chain(Dwarf_Die *chain, int n, Dwarf_Die *cudie, uint64_t vaddr,
		      const struct sym_elf_ctx *ctx, struct sym_frame *out, int max)
{
	Dwarf_Files *files = NULL;
	const char *file = NULL;
	size_t nfiles = 0;
	int line = 0, nr = 0;
	Dwarf_Line *dl = dwarf_getsrc_die(cudie, vaddr);

	if (dl) {
		file = dwarf_linesrc(dl, NULL, NULL);
		dwarf_lineno(dl, &line);
	}
	if (n > 1 && dwarf_getsrcfiles(cudie, &files, &nfiles) != 0)
		files = NULL;
	for (int k = n - 1; k >= 0 && nr < max; k--) {
		struct sym_frame *fr = &out[nr++];
		Dwarf_Attribute a;
		Dwarf_Word cf = 0, cl = 0;
		const char *name;
		char *dm;

		memset(fr, 0, sizeof(*fr));
		name = die_name(&chain[k], &dm);
		fr->function = name ? sym_intern(ctx->strings, name) : NULL;
		free(dm);
		fr->source_file = file ? sym_intern(ctx->strings, file) : NULL;
		fr->line = line > 0 ? (uint32_t)line : 0;
		fr->inlined = dwarf_tag(&chain[k]) == DW_TAG_inlined_subroutine;
		/* The caller's position is where this inline call was made. */
		file = NULL;
		line = 0;
		if (dwarf_formudata(dwarf_attr(&chain[k], DW_AT_call_file, &a), &cf) == 0 &&
		    files && cf < nfiles)
			file = dwarf_filesrc(files, cf, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&chain[k], DW_AT_call_line, &a), &cl) == 0)
			line = (int)cl;
	}
	return nr;
}

/* ---- the function index ---- */

struct index_build {
	struct sym_dwfunc *v;
	size_t n, cap;
	bool oom;
};

static void index_add(struct index_build *b, Dwarf_Die *die, uint32_t cu)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	int guard = 0;

	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0 && guard++ < 4096) {
		if (hi <= lo)
			continue;
		if (b->n == b->cap) {
			size_t cap = b->cap ? b->cap * 2 : 1024;
			struct sym_dwfunc *v = realloc(b->v, cap * sizeof(*v));

			if (!v) {
				b->oom = true;
				return;
			}
			b->v = v;
			b->cap = cap;
		}
		b->v[b->n++] = (struct sym_dwfunc){ lo, hi, dwarf_dieoffset(die), cu };
	}
}

/* Concrete functions sit at the top of a unit or inside namespaces/types. */
static void index_children(struct index_build *b, Dwarf_Die *parent,
			   uint32_t cu, int depth)
{
	Dwarf_Die child;

	if (dwarf_child(parent, &child) != 0)
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			index_add(b, &child, cu);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (depth < 16 && dwarf_haschildren(&child) > 0)
				index_children(b, &child, cu, depth + 1);
			break;
		default:
			break;
		}
	} while (!b->oom && dwarf_siblingof(&child, &child) == 0);
}

static int cmp_dwfunc(const void *a, const void *b)
{
	const struct sym_dwfunc *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* Smaller range first at one start: the more specific function. */
	return (x->hi > y->hi) - (x->hi < y->hi);
}

static void build_index(struct sym_elf *se)
{
	struct index_build b = { 0 };
	Dwarf_CU *cu = NULL, *next;
	uint32_t nr_cus = 0;

	while (dwarf_get_units(se->dwarf, cu, &next, NULL, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie;
		uint8_t type;

		cu = next;
		if (dwarf_cu_info(cu, NULL, &type, &cudie, NULL, NULL, NULL, NULL) == 0 &&
		    (type == DW_UT_compile || type == DW_UT_partial))
			index_children(&b, &cudie, nr_cus, 0);
		nr_cus++;
		if (b.oom)
			break;
	}
	if (b.n)
		qsort(b.v, b.n, sizeof(*b.v), cmp_dwfunc);
	se->funcs = b.v;
	se->nr_funcs = b.n;
	se->cu_seen = calloc(nr_cus ? nr_cus : 1, 1);
	se->nr_cus = se->cu_seen ? nr_cus : 0;
}

static const struct sym_dwfunc *index_find(const struct sym_elf *se, uint64_t pc)
{
	size_t lo = 0, hi = se->nr_funcs;

	while (lo < hi) {	/* first entry starting after pc */
		size_t mid = lo + (hi - lo) / 2;

		if (se->funcs[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges rarely overlap; look back a few for one that covers pc. */
	for (size_t i = lo, n = 0; i-- > 0 && n < 16; n++)
		if (pc < se->funcs[i].hi)
			return &se->funcs[i];
	return NULL;
}

/* From the function's DIE down through the inlined calls covering pc. */
static int inline_chain(Dwarf_Die *fn, uint64_t pc, Dwarf_Die *chain)
{
	Dwarf_Die cur = *fn, child;
	int n = 0;

	chain[n++] = cur;
	while (n < MAX_INLINE_DEPTH && dwarf_child(&cur, &child) == 0) {
		bool found = false;

		do {
			int tag = dwarf_tag(&child);

			if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block)
				continue;
			if (dwarf_haspc(&child, pc) <= 0)
				continue;
			if (tag == DW_TAG_inlined_subroutine)
				chain[n++] = child;
			cur = child;
			found = true;
			break;
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
	}
	return n;
}

/* Without an index hit: the CU's scopes the slow way (odd producers). */
static int scopes_chain(Dwarf_Die *cudie, uint64_t pc, Dwarf_Die *chain)
{
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes(cudie, pc, &scopes), k = 0;

	/*
	 * dwarf_getscopes() continues into the abstract origin of an inlined
	 * call; the physical nesting is what dwarf_getscopes_die() gives from
	 * the innermost concrete function-like DIE.
	 */
	for (int i = 0; i < n; i++) {
		if (is_function(dwarf_tag(&scopes[i]))) {
			Dwarf_Die inner = scopes[i];

			free(scopes);
			scopes = NULL;
			n = dwarf_getscopes_die(&inner, &scopes);
			break;
		}
		if (i == n - 1)
			n = 0;
	}
	/* scopes is innermost first: keep functions up to the real one. */
	for (int i = 0; i < n && k < MAX_INLINE_DEPTH; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (!is_function(tag))
			continue;
		chain[k++] = scopes[i];
		if (tag == DW_TAG_subprogram)
			break;
	}
	free(scopes);
	for (int i = 0; i < k / 2; i++) {	/* outermost first */
		Dwarf_Die t = chain[i];

		chain[i] = chain[k - 1 - i];
		chain[k - 1 - i] = t;
	}
	return k;
}

static int dwarf_frames(struct sym_elf *se, const struct sym_elf_ctx *ctx,
			uint64_t vaddr, struct sym_frame *out, int max)
{
	Dwarf_Die chain[MAX_INLINE_DEPTH], fn, cudie;
	const struct sym_dwfunc *f = index_find(se, vaddr);
	size_t before = 0;
	bool measure;
	int n, nr;

	if (f) {
		if (!dwarf_offdie(se->dwarf, f->die, &fn) ||
		    !dwarf_diecu(&fn, &cudie, NULL, NULL))
			return 0;
		n = inline_chain(&fn, vaddr, chain);
	} else {
		if (!dwarf_addrdie(se->dwarf, vaddr, &cudie))
			return 0;
		n = scopes_chain(&cudie, vaddr, chain);
	}
	if (n <= 0)
		return 0;
	/* libdw keeps each unit's line table once read: count its memory. */
	measure = !f || (f->cu < se->nr_cus && !se->cu_seen[f->cu]);
	if (measure)
		before = sym_heap_bytes();
	nr = emit_chain(chain, n, &cudie, vaddr, ctx, out, max);
	if (measure) {
		size_t after = sym_heap_bytes();

		if (after > before)
			se->cost += after - before;
		if (f)
			se->cu_seen[f->cu] = 1;
	}
	return nr;
}

int sym_elf_resolve(struct sym_elf *se, const struct sym_elf_ctx *ctx,
		    uint64_t vaddr, struct sym_frame *out, int max)
{
	const struct sym_symbol *sym = find_symbol(se, vaddr);
	int nr = 0;

	if (max <= 0)
		return 0;
	if (!ctx->no_dwarf && !se->dwarf_tried) {
		size_t before = sym_heap_bytes(), after;

		se->dwarf_tried = true;
		se->dwarf = open_dwarf(se, ctx);
		if (se->dwarf)
			build_index(se);
		after = sym_heap_bytes();
		if (after > before)
			se->cost += after - before;
	}
	if (se->dwarf)
		nr = dwarf_frames(se, ctx, vaddr, out, max);
	if (nr > 0 && sym && !out[nr - 1].function) {
		/* DWARF found the function but not its name: use the symbol. */
		set_name(&out[nr - 1], ctx, sym->name);
	} else if (nr == 0 && sym) {
		memset(out, 0, sizeof(*out));
		set_name(out, ctx, sym->name);
		nr = 1;
	}
	return nr;
}
