// SPDX-License-Identifier: GPL-2.0-only
/*
 * ELF files with libelf: PT_LOAD segments, the symbol tables (.symtab,
 * .dynsym, PLT stubs), and resolving an address with them and with DWARF
 * (sym_dwarf.c) when there is some. Files are mapped (sym_elf_image.c) and
 * their fd closed at once: the mapping pins the inode, so a library that
 * is deleted or replaced, or whose process (or container) is gone, still
 * resolves, and no fd is held per cached file. Separate debug files are
 * found by sym_debugfile.c.
 *
 * Every value read from a file is checked by libelf/libdw or here: a
 * truncated or corrupt file yields fewer symbols, never a crash.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elfutils/libdwelf.h>
#include "lib/safe_file.h"
#include "symbolize/symbolize_internal.h"

/* ---------------------------------------------------------------- files */

/* Largest memfd read into memory (bigger ones stay unresolved). */
#define COPY_IN_MAX (64u << 20)

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

static void file_identify(struct sym_file *f, const struct sym_elf_ctx *ctx)
{
	const unsigned char *id;
	ssize_t len;
	char buf[129];

	if (!read_loads(f)) {
		if (f->mem)
			elf_end(f->elf);
		else
			sym_unmap_elf(f->elf);
		f->elf = NULL;
		return;
	}
	len = sym_build_id(f->elf, &id);
	if (len > 0) {
		sym_hex(buf, id, (size_t)len);
		f->build_id = sym_intern(ctx->strings, buf);
	}
}

void sym_file_open_fd(struct sym_file *f, int fd, const struct sym_origin *o,
		      const struct sym_elf_ctx *ctx)
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
	f->elf = sym_map_elf(fd);
	close(fd);
	if (!f->elf)
		return;
	file_identify(f, ctx);
	if (f->elf)
		f->debug_elf = sym_find_debug_file(f, o, ctx);
	/* Read again only if a lookup needs this file. */
	sym_release_pages(f->elf);
	sym_release_pages(f->debug_elf);
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
	sym_unmap_elf(f->debug_elf);
	if (f->elf && f->mem)
		elf_end(f->elf);
	else
		sym_unmap_elf(f->elf);
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

/*
 * All symbols of the first table of type `type` in elf (name's). A table
 * over SYM_SYMTAB_MAX_BYTES is skipped with a warning: not found.
 */
static bool read_symbols(Elf *elf, const char *name, Elf64_Word type,
			 struct sym_symbol **syms, size_t *nr, size_t *cap,
			 bool *found)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type)
			continue;
		if (sh.sh_size > SYM_SYMTAB_MAX_BYTES) {
			safe_warn(type == SHT_SYMTAB ? "the .symtab of" :
				  "the .dynsym of", NULL, name ? name : "?",
				  "is larger than ember reads");
			return true;
		}
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

/*
 * Where PLT stub i is: base + stride * i. x86-64: .plt.sec + 16 i (IBT
 * layout) or .plt + 16 (i + 1) (after PLT0). aarch64: .plt + 32 + stride
 * i after its 32-byte PLT0, the stride 16 (24 for the BTI and PAC
 * layouts): the one that fills the section exactly with n stubs.
 */
static bool plt_layout(Elf *elf, size_t n, uint64_t *base, uint64_t *stride,
		       GElf_Shdr *psh)
{
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf, &eh))
		return false;
	*stride = 16;
	if (eh.e_machine == EM_X86_64) {
		if (sym_find_section(elf, ".plt.sec", psh)) {
			*base = psh->sh_addr;
			return true;
		}
		if (!sym_find_section(elf, ".plt", psh))
			return false;
		*base = psh->sh_addr + 16;
		return true;
	}
	if (eh.e_machine != EM_AARCH64 || !n ||
	    !sym_find_section(elf, ".plt", psh) || psh->sh_size < 32)
		return false;
	*base = psh->sh_addr + 32;
	if (psh->sh_size - 32 == 24 * (uint64_t)n)
		*stride = 24;
	return psh->sh_size - 32 == *stride * (uint64_t)n;
}

/*
 * Name PLT stubs "fn@plt" as perf does, from .rela.plt (plt_layout()
 * says where each is). Returns the malloc'd block holding the names (NULL
 * if none).
 */
static char *plt_symbols(Elf *elf, struct sym_symbol **syms, size_t *nr,
			 size_t *cap, size_t *bytes)
{
	GElf_Shdr rsh, psh, dsh;
	Elf_Scn *rela, *dyn;
	Elf_Data *rd, *dd;
	uint64_t base, end, stride;
	size_t n, total = 0, used = 0;
	char *names;

	if (!(rela = sym_find_section(elf, ".rela.plt", &rsh)) ||
	    rsh.sh_type != SHT_RELA || !rsh.sh_entsize)
		return NULL;
	n = rsh.sh_size / rsh.sh_entsize;
	if (!plt_layout(elf, n, &base, &stride, &psh))
		return NULL;
	end = psh.sh_addr + psh.sh_size;
	if (!(dyn = elf_getscn(elf, rsh.sh_link)) || !gelf_getshdr(dyn, &dsh) ||
	    !(rd = elf_getdata(rela, NULL)) || !(dd = elf_getdata(dyn, NULL)))
		return NULL;
	if (n > 65536)
		n = 65536;
	for (int pass = 0; pass < 2; pass++) {
		names = pass ? malloc(total ? total : 1) : NULL;
		if (pass && !names)
			return NULL;
		for (size_t i = 0; i < n && base + stride * (i + 1) <= end; i++) {
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
			if (!push_sym(syms, nr, cap, base + stride * i, stride,
				      names + used))
				break;
			used += len;
		}
	}
	*bytes = total;
	return names;
}

/*
 * The ELF entry point is _start by definition, but a stripped file (the
 * dynamic loader, most executables) names it nowhere, and a stack whose
 * root is the entry function then looks cut. A symbol for it, sized up to
 * the next symbol and at most ENTRY_SPAN bytes (glibc's x86-64 _start is
 * 0x27 bytes padded to 0x30; the loader's falls into _dl_start_user right
 * after its call), where none covers the entry. aarch64: glibc's _start
 * is 0x34 bytes, the loader's with _dl_start_user 0x48 (Debian 12).
 */
#define ENTRY_SPAN	0x30
#define ENTRY_SPAN_A64	0x48

static void add_entry_symbol(Elf *elf, struct sym_symbol **syms, size_t *nr,
			     size_t *cap)
{
	uint64_t size = ENTRY_SPAN;
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf, &eh) || !eh.e_entry)
		return;
	if (eh.e_machine == EM_AARCH64)
		size = ENTRY_SPAN_A64;
	for (size_t i = 0; i < *nr; i++) {
		const struct sym_symbol *o = &(*syms)[i];

		if (o->addr <= eh.e_entry &&
		    (eh.e_entry - o->addr < o->size || o->addr == eh.e_entry))
			return;		/* named already */
		if (o->addr > eh.e_entry && o->addr - eh.e_entry < size)
			size = o->addr - eh.e_entry;
	}
	push_sym(syms, nr, cap, eh.e_entry, size, "_start");
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
	read_symbols(f->elf, f->path, SHT_SYMTAB, &syms, &nr, &cap, &found);
	if (!found && f->debug_elf)
		read_symbols(f->debug_elf, f->path, SHT_SYMTAB, &syms, &nr, &cap,
			     &found);
	if (!found)
		read_symbols(f->elf, f->path, SHT_DYNSYM, &syms, &nr, &cap, &found);
	se->plt_names = plt_symbols(f->elf, &syms, &nr, &cap, &plt_bytes);
	add_entry_symbol(f->elf, &syms, &nr, &cap);
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
	se->dwarf_cost = 0;
	/* Go code is named by Go's own table when there is no DWARF for it. */
	se->gopcln = sym_gopcln_open(f->elf, f->path);
	se->cost += sym_gopcln_bytes(se->gopcln);
	/*
	 * Reading the tables touched every page of .symtab/.strtab; a lookup
	 * needs one name, so let the rest leave our RSS.
	 */
	if (!f->mem)
		sym_release_pages(f->elf);
	sym_release_pages(f->debug_elf);
}

void sym_elf_unload(struct sym_elf *se)
{
	sym_dwarf_close(se);
	sym_dwarf_free_index(se);
	if (se->loaded_from && !se->loaded_from->mem) {
		sym_release_pages(se->loaded_from->elf);
		sym_release_pages(se->loaded_from->debug_elf);
	}
	sym_gopcln_free(se->gopcln);
	se->gopcln = NULL;
	free(se->resolved);
	se->resolved = NULL;
	free(se->syms);
	free(se->plt_names);
	se->plt_names = NULL;
	se->syms = NULL;
	se->nr_syms = 0;
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

static void set_name(struct sym_frame *fr, const struct sym_elf_ctx *ctx,
		     const char *name)
{
	char *d = sym_demangle(name);

	fr->function = sym_intern(ctx->strings, d ? d : name);
	free(d);
}

int sym_elf_resolve(struct sym_elf *se, const struct sym_elf_ctx *ctx,
		    uint64_t vaddr, struct sym_frame *out, int max)
{
	const struct sym_symbol *sym = find_symbol(se, vaddr);
	int nr = 0;

	if (max <= 0)
		return 0;
	if (!ctx->no_dwarf && !se->dwarf_tried)
		sym_dwarf_open(se, ctx);
	if (se->dwarf)
		nr = sym_dwarf_frames(se, ctx, vaddr, out, max);
	/*
	 * Go code without DWARF for it (-ldflags=-w or -s, assembly): Go's
	 * table has what a stripped binary lost, and lines and inlined calls
	 * a symbol cannot give.
	 */
	if (nr == 0 && se->gopcln)
		nr = sym_gopcln_frames(se->gopcln, ctx->strings, vaddr,
				       !ctx->no_dwarf, out, max);
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
