// SPDX-License-Identifier: GPL-2.0-only
/*
 * Go binaries without symbol tables (issue 24, item 6): the symbolizer
 * names a stripped Go binary's code from .gopclntab as it names the same
 * binary unstripped (DWARF and .symtab). DIR holds, from
 * selftests/agent/sym/gowork (agent/mk/sym-tests.mk, `make sym-go`):
 *
 *   gowork           go build (DWARF, .symtab)
 *   gowork-strip     strip --strip-all of gowork: the same addresses
 *   gowork-stripped  go build -trimpath -ldflags='-s -w'
 *   gowork-pie       the same, -buildmode=pie
 *   gowork-noshdr    gowork-stripped without section headers
 *   gowork-extpie    -s -w, a PIE linked by the system linker (cgo's
 *                    way): no .gopclntab section
 *   gowork.nm        go tool nm -n gowork
 *   layouts/NAME-L   runs of gowork-stripped's functions laid out as the
 *                    tables of Go 1.2 (L=12), 1.16, 1.18, 1.20
 *                    (selftests/fuzz/gopcln_seed.py)
 *
 *   sym_go DIR       one PASS:/FAIL: line per check
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "lib/safe_file.h"
#include "symbolize/symbolize_internal.h"
#include "sym_check.h"

static const char *dir;

static struct sym_strings *strs;
static struct sym_elf_ctx ctx = { .debug_dirs = "/nonexistent" };

struct gofile {
	struct sym_file file;
	struct sym_elf se;
	char path[4096];
};

static bool open_go(struct gofile *g, const char *name)
{
	struct sym_origin origin = { "", g->path, { geteuid(), SAFE_ANY_OWNER } };

	memset(g, 0, sizeof(*g));
	snprintf(g->path, sizeof(g->path), "%s/%s", dir, name);
	g->file.path = g->path;
	sym_file_open_fd(&g->file, open(g->path, O_RDONLY), &origin, &ctx);
	if (!g->file.elf)
		return false;
	sym_elf_load(&g->se, &g->file, &ctx);
	return true;
}

static void close_go(struct gofile *g)
{
	if (g->file.elf)
		sym_elf_unload(&g->se);
	sym_file_close(&g->file);
}

static int resolve(struct gofile *g, uint64_t a, struct sym_frame *fr, int max)
{
	return sym_elf_resolve(&g->se, &ctx, a, fr, max);
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : p ? p : "";
}

/* "[...]" where s has "[N]": the length of s's bracket, 0 when not that. */
static size_t elided_len(const char *s, const char *e)
{
	size_t i = 1;

	if (s[0] != '[' || strncmp(e, "[...]", 5))
		return 0;
	while (s[i] >= '0' && s[i] <= '9')
		i++;
	return i > 1 && s[i] == ']' ? i + 1 : 0;
}

/*
 * The same function: the ELF symbol table's name may end in an ABI suffix
 * (".abi0"), and Go's table writes an array type's length as "[...]" in
 * generated names (type..eq.[...]T is type..eq.[5]T).
 */
static bool same_func(const char *a, const char *b)
{
	size_t la, lb, k;

	if (!a || !b)
		return false;
	la = strlen(a);
	lb = strlen(b);
	if (la > 5 && !strcmp(a + la - 5, ".abi0"))
		la -= 5;
	if (lb > 5 && !strcmp(b + lb - 5, ".abi0"))
		lb -= 5;
	while (la && lb) {
		if ((k = elided_len(a, b))) {
			a += k, la -= k, b += 5, lb -= 5;
		} else if ((k = elided_len(b, a))) {
			b += k, lb -= k, a += 5, la -= 5;
		} else if (*a == *b) {
			a++, la--, b++, lb--;
		} else {
			return false;
		}
	}
	return !la && !lb;
}

#define MAX_FR 16

/*
 * gowork-strip has gowork's addresses: over every function of the table,
 * at its entry and at points inside it, the stripped file (.gopclntab)
 * and the unstripped one (DWARF) give the same frames.
 */
static void test_same_as_unstripped(void)
{
	struct gofile full, strip;
	uint64_t *pcs = NULL;
	size_t n = 0, addrs = 0, named = 0, outer = 0, chain = 0, lines = 0,
	       inl = 0, inl_same = 0, unnamed_full = 0;

	if (!check("go_open_unstripped", open_go(&full, "gowork"), "%s", full.path) ||
	    !check("go_open_strip", open_go(&strip, "gowork-strip"), "%s", strip.path))
		return;
	/* the reference is DWARF and .symtab alone */
	sym_gopcln_free(full.se.gopcln);
	full.se.gopcln = NULL;
	/* no symbol table: at most the entry's _start (sym_elf.c adds it) */
	check("go_strip_has_table", strip.se.gopcln && (!strip.se.nr_syms ||
	      (strip.se.nr_syms == 1 && !strcmp(strip.se.syms[0].name, "_start"))),
	      "table %p, %zu symbols", (void *)strip.se.gopcln, strip.se.nr_syms);
	/* Debian 12's Go 1.19 makes the 1.18 layout; a newer Go 1.20's */
	check("go_table_layout_with_inline_trees",
	      sym_gopcln_version(strip.se.gopcln) >= 118 &&
	      sym_gopcln_has_inline(strip.se.gopcln),
	      "layout %u, inline trees %s", sym_gopcln_version(strip.se.gopcln),
	      sym_gopcln_has_inline(strip.se.gopcln) ? "found" : "not found");
	pcs = calloc(1 << 16, sizeof(*pcs));
	if (pcs)
		n = sym_gopcln_entries(strip.se.gopcln, pcs, 1 << 16);
	for (size_t i = 0; i + 1 < n; i++) {
		uint64_t len = pcs[i + 1] - pcs[i];

		for (int k = 0; k < 8; k++) {
			struct sym_frame a[MAX_FR], b[MAX_FR];
			uint64_t pc = pcs[i] + len * (uint64_t)k / 8;
			int na, nb;
			bool same = true, same_lines = true;

			if (k && pc == pcs[i] + len * (uint64_t)(k - 1) / 8)
				continue;
			addrs++;
			na = resolve(&full, pc, a, MAX_FR);
			nb = resolve(&strip, pc, b, MAX_FR);
			if (nb > 0 && b[nb - 1].function)
				named++;
			/* runtime.text: padding after an assembly function */
			if (na <= 0 || !a[na - 1].function ||
			    !strcmp(a[na - 1].function, "runtime.text")) {
				unnamed_full++;
				continue;
			}
			if (nb <= 0 || !same_func(a[na - 1].function, b[nb - 1].function)) {
				if (getenv("SYM_GO_VERBOSE"))
					printf("# %#" PRIx64 ": %s vs %s\n", pc,
					       a[na - 1].function,
					       nb > 0 ? b[nb - 1].function : "-");
				continue;
			}
			outer++;
			same = na == nb;
			for (int j = 0; same && j < na; j++) {
				same = same_func(a[j].function, b[j].function);
				if (a[j].line != b[j].line ||
				    strcmp(base_name(a[j].source_file),
					   base_name(b[j].source_file)))
					same_lines = false;
			}
			chain += same;
			lines += same && same_lines;
			if (na > 1) {
				inl++;
				inl_same += same;
			}
			if (getenv("SYM_GO_VERBOSE") && (!same || !same_lines))
				printf("# %#" PRIx64 ": %s:%u (%d frames) vs %s:%u (%d)\n",
				       pc, a[0].function, a[0].line, na,
				       b[0].function, b[0].line, nb);
		}
	}
	printf("# go: %zu functions, %zu addresses: stripped named %zu; "
	       "unstripped unnamed %zu; same function %zu, same inline chain "
	       "%zu (%zu of %zu with inlined frames), same file:line too %zu\n",
	       n, addrs, named, unnamed_full, outer, chain, inl_same, inl, lines);
	check("go_stripped_names_every_function", n > 500 && named == addrs,
	      "%zu of %zu addresses named", named, addrs);
	check("go_stripped_same_function", outer + unnamed_full == addrs,
	      "%zu of %zu the same", outer, addrs - unnamed_full);
	check("go_stripped_same_inline_chain", chain * 100 >= outer * 99 && inl > 10,
	      "%zu of %zu the same (%zu with inlined frames)", chain, outer, inl);
	check("go_stripped_same_file_line", lines * 100 >= chain * 95,
	      "%zu of %zu the same", lines, chain);
	free(pcs);
	close_go(&strip);
	close_go(&full);
}

/* The frames at one address, "a;b;c" innermost first. */
static void chain_str(struct gofile *g, uint64_t pc, char *out, size_t size)
{
	struct sym_frame fr[MAX_FR];
	int n = resolve(g, pc, fr, MAX_FR);
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < n && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, "%s%s:%s:%u",
					 i ? ";" : "", fr[i].function ? fr[i].function : "?",
					 base_name(fr[i].source_file), fr[i].line);
}

/*
 * The -s -w -trimpath build: `go tool nm` of the unstripped build names
 * the same functions at the same addresses (the text is laid out alike),
 * and main.hashLoop shows main.mix inlined into it.
 */
static void test_nm(void)
{
	struct gofile g, pie;
	char path[4096], line[1024], buf[2048];
	size_t total = 0, same = 0, mix = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/gowork.nm", dir);
	f = fopen(path, "re");
	if (!check("go_open_stripped", f && open_go(&g, "gowork-stripped"), "%s", path))
		return;
	while (fgets(line, sizeof(line), f)) {
		struct sym_frame fr[MAX_FR];
		char type[4], name[512];
		uint64_t addr;
		int n, at = 0;

		/* the name is the rest of the line (it may hold spaces) */
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNx64 " %3s %n", &addr, type, &at) != 2 || !at ||
		    snprintf(name, sizeof(name), "%s", line + at) <= 0 ||
		    (strcmp(type, "T") && strcmp(type, "t")) ||
		    !strcmp(name, "runtime.text") || !strcmp(name, "runtime.etext") ||
		    strncmp(name, "go:", 3) == 0)
			continue;
		total++;
		n = resolve(&g, addr, fr, MAX_FR);
		if (n > 0 && same_func(fr[n - 1].function, name))
			same++;
		else if (getenv("SYM_GO_VERBOSE"))
			printf("# nm %#" PRIx64 " %s: %s\n", addr, name,
			       n > 0 && fr[n - 1].function ? fr[n - 1].function : "-");
		if (!strcmp(name, "main.hashLoop")) {
			/* somewhere in its loop, main.mix is inlined */
			for (uint64_t a = addr; a < addr + 64 && !mix; a++) {
				chain_str(&g, a, buf, sizeof(buf));
				if (!strncmp(buf, "main.mix:main.go:", 17) &&
				    strstr(buf, ";main.hashLoop:main.go:"))
					mix = a;
			}
		}
	}
	fclose(f);
	printf("# go nm: %zu of %zu text symbols named alike in the -s -w build\n",
	       same, total);
	check("go_stripped_matches_nm", total > 500 && same == total,
	      "%zu of %zu", same, total);
	chain_str(&g, mix, buf, sizeof(buf));
	check("go_stripped_inline_frame", mix, "no main.mix inlined in main.hashLoop");
	if (mix)
		printf("# go inline at %#zx: %s\n", mix, buf);
	/* PIE: the table is in .data.rel.ro.gopclntab; the same functions */
	if (check("go_open_pie", open_go(&pie, "gowork-pie") && pie.se.gopcln,
		  "no table in %s", pie.path)) {
		uint64_t *a = calloc(1 << 16, sizeof(*a)), *b = calloc(1 << 16, sizeof(*b));
		size_t na = a ? sym_gopcln_entries(g.se.gopcln, a, 1 << 16) : 0;
		size_t nb = b ? sym_gopcln_entries(pie.se.gopcln, b, 1 << 16) : 0;
		size_t alike = 0;

		for (size_t i = 0; i < na && i < nb; i++) {
			struct sym_frame x[MAX_FR], y[MAX_FR];
			int nx = resolve(&g, a[i], x, MAX_FR), ny = resolve(&pie, b[i], y, MAX_FR);

			alike += nx > 0 && ny > 0 && x[nx - 1].function &&
				 x[nx - 1].function == y[ny - 1].function;
		}
		printf("# go pie: %zu functions, %zu named as in the non-PIE build\n",
		       nb, alike);
		check("go_pie_names", nb > 500 && alike * 100 >= na * 95 &&
		      sym_gopcln_has_inline(pie.se.gopcln),
		      "%zu of %zu/%zu, inline trees %s", alike, na, nb,
		      sym_gopcln_has_inline(pie.se.gopcln) ? "found" : "not found");
		free(a);
		free(b);
		close_go(&pie);
	}
	/* no section headers: the table found by its header, the same names */
	if (check("go_open_noshdr", open_go(&pie, "gowork-noshdr") && pie.se.gopcln,
		  "no table in %s", pie.path)) {
		uint64_t *a = calloc(1 << 16, sizeof(*a));
		size_t na = a ? sym_gopcln_entries(g.se.gopcln, a, 1 << 16) : 0, alike = 0;

		for (size_t i = 0; i < na; i++) {
			struct sym_frame x[MAX_FR], y[MAX_FR];
			int nx = resolve(&g, a[i] + 1, x, MAX_FR), ny = resolve(&pie, a[i] + 1, y, MAX_FR);

			alike += nx > 0 && nx == ny && x[0].function == y[0].function &&
				 x[0].line == y[0].line;
		}
		check("go_noshdr_same_frames", na > 500 && alike == na &&
		      sym_gopcln_has_inline(pie.se.gopcln),
		      "%zu of %zu, inline trees %s", alike, na,
		      sym_gopcln_has_inline(pie.se.gopcln) ? "found" : "not found");
		free(a);
		close_go(&pie);
	}
	close_go(&g);
}

/* A PIE linked externally: every function named, main.mix inlined. */
static void test_extpie(void)
{
	struct gofile g;
	uint64_t *pcs = calloc(1 << 16, sizeof(*pcs));
	size_t n = 0, named = 0;
	bool mix = false;
	char buf[2048];

	if (!check("go_open_extpie", pcs && open_go(&g, "gowork-extpie") && g.se.gopcln,
		   "no table in %s", g.path)) {
		free(pcs);
		return;
	}
	n = sym_gopcln_entries(g.se.gopcln, pcs, 1 << 16);
	for (size_t i = 0; i + 1 < n; i++) {
		struct sym_frame fr[MAX_FR];
		int k = resolve(&g, pcs[i], fr, MAX_FR);

		named += k > 0 && fr[k - 1].function && fr[k - 1].source_file;
		if (k > 0 && fr[k - 1].function && !strcmp(fr[k - 1].function, "main.hashLoop"))
			for (uint64_t a = pcs[i]; a < pcs[i + 1] && !mix; a++) {
				chain_str(&g, a, buf, sizeof(buf));
				mix = !strncmp(buf, "main.mix:main.go:", 17);
			}
	}
	printf("# go extpie: %zu functions, %zu named with file:line\n", n, named);
	check("go_extpie_names", n > 500 && named + 1 >= n && mix &&
	      sym_gopcln_has_inline(g.se.gopcln),
	      "%zu of %zu named, main.mix inlined: %s", named, n, mix ? "yes" : "no");
	close_go(&g);
	free(pcs);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Hostile tables: gowork-stripped's .gopclntab with bytes changed (the
 * header, the function table, _func records, pc-value programs), looked up
 * at every function: no crash, bounded time, and what is named is named
 * from the table (never from outside it: ASan builds see that).
 */
static void test_corrupt(void)
{
	struct gofile g;
	unsigned int seed = getenv("SYM_FUZZ_SEED") ? (unsigned)atoi(getenv("SYM_FUZZ_SEED")) : 4242;
	int runs = getenv("SYM_FUZZ_RUNS") ? atoi(getenv("SYM_FUZZ_RUNS")) : 200;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx, lookups = 0, named = 0, n;
	uint64_t *pcs;
	uint8_t *tab = NULL;
	double t0, worst = 0;

	if (!check("go_open_for_corruption", open_go(&g, "gowork-stripped"), "%s", g.path))
		return;
	elf_getshdrstrndx(g.file.elf, &shstrndx);
	while ((scn = elf_nextscn(g.file.elf, scn))) {
		const char *nm;

		if (gelf_getshdr(scn, &sh) && (nm = elf_strptr(g.file.elf, shstrndx, sh.sh_name)) &&
		    !strcmp(nm, ".gopclntab"))
			break;
	}
	pcs = calloc(1 << 16, sizeof(*pcs));
	n = pcs ? sym_gopcln_entries(g.se.gopcln, pcs, 1 << 16) : 0;
	if (scn && n)
		tab = malloc(sh.sh_size);
	if (!check("go_corrupt_setup", tab != NULL, "no .gopclntab section")) {
		free(pcs);
		close_go(&g);
		return;
	}
	for (int r = 0; r < runs; r++) {
		const uint8_t *orig = (const uint8_t *)elf_rawfile(g.file.elf, NULL) + sh.sh_offset;
		uint64_t size = sh.sh_size;
		struct sym_gopcln *c;
		int flips = 1 + rand_r(&seed) % 16;
		double t;

		memcpy(tab, orig, size);
		for (int k = 0; k < flips; k++) {
			/* header, functab and _funcs (start), or anywhere */
			uint64_t at = rand_r(&seed) % 2 ? (uint64_t)rand_r(&seed) % 128 :
				      rand_r(&seed) % 3 ? rand_r(&seed) % size :
				      size - 1 - rand_r(&seed) % (size / 3);

			tab[at] = (uint8_t)rand_r(&seed);
		}
		if (r % 7 == 0)
			size = (uint64_t)rand_r(&seed) % size;
		c = sym_gopcln_new(tab, size, sh.sh_addr, "corrupt");
		if (!c)
			continue;
		t0 = now_s();
		for (size_t i = 0; i < n; i += 1 + i % 3) {
			struct sym_frame fr[MAX_FR];
			int k = sym_gopcln_frames(c, strs, pcs[i] + (i % 5), true, fr, MAX_FR);

			lookups++;
			named += k > 0;
		}
		t = now_s() - t0;
		if (t > worst)
			worst = t;
		sym_gopcln_free(c);
	}
	printf("# go corrupt: %d tables, %zu lookups, %zu named, slowest table %.3f s\n",
	       runs, lookups, named, worst);
	check("go_corrupt_tables_bounded", worst < 2.0, "%.3f s for one table", worst);
	free(tab);
	free(pcs);
	close_go(&g);
}

struct blob {
	uint8_t *buf;
	size_t size;
	struct sym_gopcln *g;
};

/* A gopcln_seed.py file: the table at 0x400000, go:func.* at 0x800000. */
static bool load_layout(struct blob *b, const char *name, int layout)
{
	char path[4096];
	uint32_t len;
	struct stat st;
	int fd;

	memset(b, 0, sizeof(*b));
	snprintf(path, sizeof(path), "%s/layouts/%s-%d", dir, name, layout);
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < 4 ||
	    !(b->buf = malloc((size_t)st.st_size)) ||
	    read(fd, b->buf, (size_t)st.st_size) != st.st_size) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	close(fd);
	b->size = (size_t)st.st_size;
	memcpy(&len, b->buf, 4);
	if (len > b->size - 4)
		return false;
	b->g = sym_gopcln_new(b->buf + 4, len, 0x400000, path);
	sym_gopcln_add_seg(b->g, 0x400000, b->buf + 4, len);
	sym_gopcln_add_seg(b->g, 0x800000, b->buf + 4 + len, b->size - 4 - len);
	sym_gopcln_set_gofunc(b->g, b->buf + 4 + len, b->size - 4 - len);
	return b->g != NULL;
}

/*
 * The layouts this host's Go cannot make: the same functions as Go 1.2,
 * 1.16 and 1.20 tables give the frames the 1.18 one gives (1.2: the
 * function alone, at its innermost file:line: the reader has no inline
 * trees for it).
 */
static void test_layouts(const char *name)
{
	static const int layouts[] = { 12, 116, 120 };
	struct blob ref, b;
	uint64_t pcs[4096];
	size_t n;
	char tn[128];

	snprintf(tn, sizeof(tn), "%s/layouts/none", dir);
	if (!access(tn, F_OK)) {
		printf("SKIP: go_layouts_%s: the host's Go does not make the "
		       "1.18 layout the other layouts are made from\n", name);
		return;
	}
	snprintf(tn, sizeof(tn), "go_layout_%s_118", name);
	if (!check(tn, load_layout(&ref, name, 118), "no table"))
		return;
	n = sym_gopcln_entries(ref.g, pcs, 4096);
	for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
		size_t addrs = 0, same = 0, inl = 0;

		snprintf(tn, sizeof(tn), "go_layout_%s_%d", name, layouts[l]);
		if (!check(tn, load_layout(&b, name, layouts[l]) &&
			   sym_gopcln_version(b.g) == (uint32_t)layouts[l],
			   "no table or layout %u", sym_gopcln_version(b.g))) {
			sym_gopcln_free(b.g);
			free(b.buf);
			continue;
		}
		for (size_t i = 0; i + 1 < n; i++) {
			for (uint64_t pc = pcs[i]; pc < pcs[i + 1]; pc++) {
				struct sym_frame x[MAX_FR], y[MAX_FR];
				int nx = sym_gopcln_frames(ref.g, strs, pc, true, x, MAX_FR);
				int ny = sym_gopcln_frames(b.g, strs, pc, true, y, MAX_FR);
				bool ok = nx > 0;

				addrs++;
				inl += nx > 1;
				if (layouts[l] == 12)
					ok = ok && ny == 1 &&
					     y[0].function == x[nx - 1].function &&
					     y[0].source_file == x[0].source_file &&
					     y[0].line == x[0].line;
				else
					ok = ok && nx == ny;
				for (int j = 0; ok && layouts[l] != 12 && j < nx; j++)
					ok = x[j].function == y[j].function &&
					     x[j].source_file == y[j].source_file &&
					     x[j].line == y[j].line &&
					     x[j].inlined == y[j].inlined;
				same += ok;
			}
		}
		printf("# go layout %d (%s): %zu of %zu addresses as with 1.18 "
		       "(%zu with inlined frames)\n", layouts[l], name, same, addrs, inl);
		snprintf(tn, sizeof(tn), "go_layout_%s_%d_same_frames", name, layouts[l]);
		check(tn, addrs > 1000 && same == addrs && inl > 10,
		      "%zu of %zu, %zu inlined", same, addrs, inl);
		sym_gopcln_free(b.g);
		free(b.buf);
	}
	sym_gopcln_free(ref.g);
	free(ref.buf);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: sym_go DIR\n");
		return 2;
	}
	dir = argv[1];
	elf_version(EV_CURRENT);
	strs = sym_strings_new();
	ctx.strings = strs;
	test_same_as_unstripped();
	test_nm();
	test_extpie();
	test_corrupt();
	test_layouts("main");
	test_layouts("runtime");
	sym_strings_free(strs);
	return failures ? 1 : 0;
}
