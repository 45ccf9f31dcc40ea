// SPDX-License-Identifier: GPL-2.0-only
/*
 * The unwind-table builder and the shared unwinder code, checked against
 * independent references on real binaries:
 *  - every rule the table gives for libc, libpython-like large files and
 *    this program agrees with what libdw computes from the CFI directly;
 *  - a live stack of this program, crossing Debian's libc (no frame
 *    pointers) through qsort's callback, unwound with the tables and
 *    include/ember_unwind.h gives exactly the return addresses glibc's
 *    backtrace() (libgcc's DWARF unwinder) gives;
 *  - damaged tables are refused by the validator, and whatever passes it
 *    can be searched without going out of bounds.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <execinfo.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "ember_unwind.h"
#include "unwind/cfi_compile.h"
#include "unwind/oracle.h"
#include <sys/uio.h>
#include "test_util.h"

/* ---- tables of this process's files ---- */

struct map_table {
	uint64_t start, end, bias;
	struct ember_unwind_table *t;
	char path[256];
};

static struct map_table maps[64];
static int nr_maps;

static void *build_file(const char *path, size_t *len)
{
	struct cfi_stats st;
	char err[256];
	void *tab = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	if (fd < 0)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && cfi_compile(elf, &tab, len, &st, err, sizeof(err)))
		tab = NULL;
	if (elf)
		elf_end(elf);
	close(fd);
	return tab;
}

static bool exec_bias(const char *path, uint64_t start, uint64_t pgoff,
		      uint64_t *bias)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n;
	bool ok = false;

	if (elf && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n && !ok; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X))
				continue;
			if (pgoff >= (ph.p_offset & ~0xfffULL) &&
			    pgoff < ph.p_offset + ph.p_filesz) {
				*bias = start - ph.p_vaddr + ph.p_offset - pgoff;
				ok = true;
			}
		}
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return ok;
}

static void load_self_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];

	while (f && fgets(line, sizeof(line), f) && nr_maps < 64) {
		unsigned long long s, e, off;
		char perms[8], path[256] = "";
		size_t len;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &s, &e, perms,
			   &off, path) < 4 || perms[2] != 'x' || path[0] != '/')
			continue;
		maps[nr_maps].start = s;
		maps[nr_maps].end = e;
		snprintf(maps[nr_maps].path, sizeof(maps[0].path), "%s", path);
		if (!exec_bias(path, s, off, &maps[nr_maps].bias))
			continue;
		maps[nr_maps].t = build_file(path, &len);
		if (maps[nr_maps].t)
			nr_maps++;
	}
	if (f)
		fclose(f);
}

static const struct ember_unwind_rule *rule_for(uint64_t pc)
{
	for (int i = 0; i < nr_maps; i++)
		if (pc >= maps[i].start && pc < maps[i].end)
			return ember_unwind_find(maps[i].t, pc - maps[i].bias);
	return NULL;
}

static int read_self(void *ctx, __u64 addr, __u64 *val)
{
	(void)ctx;
	if (!addr || addr & 7)
		return -1;
	memcpy(val, (const void *)(uintptr_t)addr, 8);
	return 0;
}

/* ---- live stack: captured inside qsort's comparator ---- */

#define MAX_FR 64
static void *bt[MAX_FR];
static int bt_n;
static uint64_t ours[MAX_FR];
static int ours_n, ours_end;
static struct oracle_stack copy;
static uint8_t copy_buf[16384];

static __attribute__((noinline)) void capture(void)
{
	struct ember_uregs r = { 0 };
	uint64_t here;

	/* registers of this very frame, then libgcc's view of the same stack */
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(here), "=r"(r.sp), "=r"(r.fp));
	r.pc = here;
	r.exact = 1;
	r.fp_ok = 1;
	/* the oracle's input: registers and a bounded copy of the stack, as
	 * a backend's stack-copy record holds them */
	{
		struct iovec local = { copy_buf, sizeof(copy_buf) };
		struct iovec remote = { (void *)(uintptr_t)r.sp, sizeof(copy_buf) };
		ssize_t n;

		memset(&copy, 0, sizeof(copy));
		copy.pid = copy.tid = (uint32_t)getpid();
		copy.regs[6] = r.fp;
		copy.regs[7] = r.sp;
		copy.regs[16] = r.pc;
		/* the copy may end at the top of the stack mapping */
		while ((n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0)) < 0 &&
		       local.iov_len > 4096)
			local.iov_len = remote.iov_len -= 4096;
		copy.stack = copy_buf;
		copy.stack_len = n > 0 ? (size_t)n : 0;
	}
	bt_n = backtrace(bt, MAX_FR);
	ours_n = 0;
	ours_end = -1;
	while (ours_n < MAX_FR) {
		const struct ember_unwind_rule *rule =
			rule_for(ember_unwind_lookup_pc(&r));
		int s;

		if (!rule) {
			ours_end = 2;
			break;
		}
		s = ember_unwind_step(rule, &r, read_self, NULL);
		if (s != EMBER_STEP_NEXT) {
			ours_end = s;
			break;
		}
		ours[ours_n++] = r.pc;
	}
}

static volatile int depth_sink;

static __attribute__((noinline)) int cmp(const void *a, const void *b)
{
	static int done;

	if (!done) {
		done = 1;
		capture();
	}
	depth_sink++;
	return *(const int *)a - *(const int *)b;
}

static __attribute__((noinline)) void level3(void)
{
	int v[8] = { 5, 3, 7, 1, 9, 2, 8, 4 };

	qsort(v, 8, sizeof(v[0]), cmp);
	depth_sink += v[0];
}

static __attribute__((noinline)) void level2(void)
{
	level3();
	depth_sink++;
}

static __attribute__((noinline)) void level1(void)
{
	level2();
	depth_sink++;
}

static void test_live_stack(void)
{
	int i, j, match = 0;
	bool in_libc = false;

	level1();
	/*
	 * backtrace()'s first entry is capture() itself (the call of
	 * backtrace); ours start at capture()'s caller. Align on that.
	 */
	for (i = 0; i < bt_n && (uint64_t)(uintptr_t)bt[i] != ours[0]; i++)
		;
	for (j = 0; i < bt_n && j < ours_n; i++, j++)
		match += (uint64_t)(uintptr_t)bt[i] == ours[j];
	T_CHECK("unwind_live_stack_matches_libgcc",
		ours_n >= 6 && match == ours_n && i == bt_n,
		"%d of our %d frames match backtrace()'s %d", match, ours_n, bt_n);
	/* the walk must end at _start's "RA undefined", not be cut */
	T_CHECK("unwind_live_stack_complete", ours_end == EMBER_STEP_END,
		"walk ended with %d", ours_end);
	for (i = 0; i < ours_n; i++)
		for (j = 0; j < nr_maps; j++)
			in_libc |= strstr(maps[j].path, "/libc.so") &&
				       ours[i] >= maps[j].start &&
				       ours[i] < maps[j].end;
	T_CHECK("unwind_live_stack_crosses_libc", ours_n >= 6 && in_libc,
		"%d frames", ours_n);

	/* the libdwfl oracle on the copy agrees with both */
	{
		struct oracle *o = oracle_new(0);
		uint64_t ips[MAX_FR];
		int complete = 0, n = o ? oracle_unwind(o, &copy, ips, MAX_FR,
							 &complete) : -1;

		/* ips[0] is capture()'s own PC, then the same return addresses */
		match = 0;
		for (i = 1; i < n && i - 1 < ours_n; i++)
			match += ips[i] == ours[i - 1];
		T_CHECK("unwind_oracle_agrees", n >= 7 && match == ours_n &&
			n - 1 == ours_n,
			"oracle %d frames (complete %d), %d of our %d agree",
			n, complete, match, ours_n);
		oracle_free(o);
	}
}

/* A function's entry in our own vDSO (a 64-bit process's is this one). */
static uint64_t vdso_entry(const char *name)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), found = 0;
	const GElf_Ehdr *eh = (const GElf_Ehdr *)(uintptr_t)base;
	Elf *elf;
	Elf_Scn *scn = NULL;

	if (!base)
		return 0;
	elf = elf_memory((char *)(uintptr_t)base,
			 eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Sym sym;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; gelf_getsym(d, (int)i, &sym); i++) {
			const char *n = elf_strptr(elf, sh.sh_link, sym.st_name);

			if (n && !strcmp(n, name) && sym.st_value)
				found = base + sym.st_value;
		}
	}
	if (elf)
		elf_end(elf);
	return found;
}

/*
 * A sample at the first instruction of a vDSO function, called from
 * capture(): the oracle must unwind the vDSO by its CFI (CFA = rsp + 8),
 * not by a frame pointer that isn't set up there yet.
 */
static void test_oracle_vdso(void)
{
	static uint8_t buf[sizeof(copy_buf) + 8];
	uint64_t entry = vdso_entry("__vdso_clock_gettime");
	struct oracle_stack at = copy;
	struct oracle *o = oracle_new(0);
	uint64_t ips[MAX_FR];
	int complete = 0, n = -1, match = 0;

	if (entry && o && copy.stack_len) {
		memcpy(buf, &copy.regs[16], 8);
		memcpy(buf + 8, copy.stack, copy.stack_len);
		at.stack = buf;
		at.stack_len = copy.stack_len + 8;
		at.regs[7] = copy.regs[7] - 8;
		at.regs[6] = 0x10;	/* no frame pointer to follow */
		at.regs[16] = entry;
		n = oracle_unwind(o, &at, ips, MAX_FR, &complete);
	}
	for (int i = 2; i < n && i - 2 < ours_n; i++)
		match += ips[i] == ours[i - 2];
	T_CHECK("unwind_oracle_vdso_entry", n == ours_n + 2 &&
		ips[1] == copy.regs[16] && match == ours_n,
		"vdso entry %#" PRIx64 ": oracle %d frames, want %d; %d agree",
		entry, n, ours_n + 2, match);
	oracle_free(o);
}

/* ---- every rule against libdw ---- */

static bool libdw_rule(Dwarf_CFI *cfi, uint64_t addr, int *type, int64_t *off)
{
	Dwarf_Frame *f = NULL;
	Dwarf_Op *ops;
	size_t n;

	Dwarf_Op mem[3], *ra;
	size_t nra;

	if (dwarf_cfi_addrframe(cfi, addr, &f))
		return false;
	*type = -1;
	*off = 0;
	{
		Dwarf_Addr lo, hi;
		bool sig = false;

		if (dwarf_frame_info(f, &lo, &hi, &sig) >= 0 && sig) {
			*type = EMBER_CFA_SIGNAL;
			free(f);
			return true;
		}
	}
	/* the return address decides first: undefined ends the stack, and
	 * anywhere but CFA - 8 (a register: longjmp, vfork) is not ours */
	if (dwarf_frame_register(f, 16, mem, &ra, &nra) == 0) {
		if (nra == 0 && ra) {
			*type = EMBER_CFA_END;
			free(f);
			return true;
		}
		if (nra == 0 || ra[0].atom != DW_OP_call_frame_cfa) {
			*type = EMBER_CFA_NONE;
			free(f);
			return true;
		}
	}
	if (!dwarf_frame_cfa(f, &ops, &n) && n == 1 &&
	    (ops[0].atom == DW_OP_bregx || ops[0].atom == DW_OP_breg7 ||
	     ops[0].atom == DW_OP_breg6)) {
		unsigned int reg = ops[0].atom == DW_OP_bregx ?
				   (unsigned int)ops[0].number :
				   (unsigned int)(ops[0].atom - DW_OP_breg0);

		*off = (int64_t)(ops[0].atom == DW_OP_bregx ? ops[0].number2 :
				 ops[0].number);
		*type = reg == 7 ? EMBER_CFA_SP : reg == 6 ? EMBER_CFA_FP : -1;
	}
	free(f);
	return true;
}

static void check_file_against_libdw(const char *path, const char *name)
{
	size_t len = 0;
	struct ember_unwind_table *t = build_file(path, &len);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Dwarf_CFI *cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
	uint64_t checked = 0, bad = 0, first_bad = 0;
	const char *why = "";
	char tn[128];

	snprintf(tn, sizeof(tn), "unwind_table_valid_%s", name);
	T_CHECK(tn, t && !ember_unwind_table_check(t, len, &why),
		"%s: %s", path, t ? why : "not built");
	if (!t || !cfi)
		goto out;
	for (uint64_t a = t->base;
	     a < t->base + ((uint64_t)t->nr_pages << 16); a += 1) {
		int type;
		int64_t off;
		const struct ember_unwind_rule *r = ember_unwind_find(t, a);

		if (!libdw_rule(cfi, a, &type, &off))
			continue;	/* no CFI here: padding or not code */
		if (type < 0)
			continue;	/* expressions: checked by the live test */
		checked++;
		if (!r || r->cfa_type != type ||
		    (type != EMBER_CFA_END && type != EMBER_CFA_NONE &&
		     type != EMBER_CFA_SIGNAL &&
		     r->cfa_off != off)) {
			if (!bad++)
				first_bad = a;
		}
	}
	snprintf(tn, sizeof(tn), "unwind_table_agrees_with_libdw_%s", name);
	T_CHECK(tn, checked > 1000 && bad == 0,
		"%" PRIu64 " of %" PRIu64 " addresses disagree (first 0x%" PRIx64 ")",
		bad, checked, first_bad);
out:
	if (cfi)
		dwarf_cfi_end(cfi);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	free(t);
}

/* ---- damaged tables ---- */

static void test_validator(void)
{
	size_t len = 0;
	struct ember_unwind_table *good = build_file("/proc/self/exe", &len);
	struct ember_unwind_table *t;
	struct ember_unwind_row *rows;
	struct ember_unwind_rule *rules;
	const char *why;
	int refused = 0, cases = 0, fuzz_passed = 0;

	if (!good) {
		T_CHECK("unwind_validator", 0, "no table for /proc/self/exe");
		return;
	}
	t = malloc(len);
#define CASE(mutation) do {						\
	memcpy(t, good, len);						\
	rows = (void *)ember_unwind_rows(t);				\
	rules = (void *)ember_unwind_rules(t);				\
	mutation;							\
	cases++;							\
	refused += ember_unwind_table_check(t, len, &why) != 0;		\
} while (0)
	CASE(t->magic ^= 1);
	CASE(t->version = 2);
	CASE(t->flags = 1);
	CASE(t->size -= 4);
	CASE(t->nr_rows += 1);
	CASE(t->nr_pages = 0);
	CASE(t->base |= 1);
	CASE(rows[1].rule = (uint16_t)t->nr_rules);
	CASE(rows[2].pc_low = rows[1].pc_low);
	CASE(rows[0].pc_low = 5);
	CASE(rules[1].cfa_type = __EMBER_CFA_MAX);
	CASE(rules[1].fp_type = __EMBER_FP_MAX);
	CASE(rules[1].cfa_off = EMBER_UNWIND_MAX_CFA_OFF + 1);
	CASE(rules[1].fp_off = 3);
	CASE(((uint32_t *)(t + 1))[1] = t->nr_rows + 1);
	CASE(((uint32_t *)(t + 1))[t->nr_pages] = 0);
	T_CHECK("unwind_validator_refuses_damage", refused == cases,
		"%d of %d damaged tables refused", refused, cases);
	T_CHECK("unwind_validator_accepts_good",
		!ember_unwind_table_check(good, len, &why), "%s", why);
	T_CHECK("unwind_validator_refuses_short",
		ember_unwind_table_check(good, len - 1, &why) &&
		ember_unwind_table_check(good, 8, &why), "truncated accepted");
	/* random damage: never a crash; what passes is searchable */
	srand(1);
	for (int i = 0; i < 20000; i++) {
		memcpy(t, good, len);
		for (int k = 0; k < 1 + rand() % 4; k++)
			((uint8_t *)t)[rand() % len] ^= (uint8_t)(1u << (rand() % 8));
		if (ember_unwind_table_check(t, len, &why))
			continue;
		fuzz_passed++;
		for (int k = 0; k < 64; k++)
			(void)ember_unwind_find(t, t->base + (uint64_t)rand() * 7);
	}
	T_CHECK("unwind_validator_fuzz_no_crash", 1, "%d passed", fuzz_passed);
	free(t);
	free(good);
}

/* ---- *(rsp + N) + M: OpenSSL's perlasm saved stack pointer ---- */

static uint64_t fake_stack[64];

static int read_fake(void *ctx, __u64 addr, __u64 *val)
{
	uint64_t base = (uint64_t)(uintptr_t)fake_stack;

	(void)ctx;
	if (addr < base || addr + 8 > base + sizeof(fake_stack) || addr % 8)
		return -1;
	*val = fake_stack[(addr - base) / 8];
	return 0;
}

static void test_deref_add(void)
{
	static const int pairs[][2] = {
		{ -8, 8 }, { 40, 8 }, { 536, 56 }, { 0, 64 },
		{ -32768, 255 }, { 32767, 0 }, { 152, -1 },
	};
	uint64_t base = (uint64_t)(uintptr_t)fake_stack;
	struct ember_unwind_rule rule = { EMBER_CFA_DEREF_SP_ADD,
					  EMBER_FP_AT_CFA, -16, 0 };
	struct ember_uregs r;
	size_t len = 0, i, bad = 0, found = 0;
	struct ember_unwind_table *t;
	const char *why = "";
	int s;

	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		__s32 v = EMBER_CFA_DEREF_PACK(pairs[i][0], pairs[i][1]);

		bad += EMBER_CFA_DEREF_OFF(v) != pairs[i][0] ||
		       EMBER_CFA_DEREF_ADD(v) != pairs[i][1];
	}
	T_CHECK("unwind_deref_add_packs_both_offsets", bad == 0,
		"%zu of the pairs did not survive packing", bad);

	/* rsp + 40 holds the saved rsp S; CFA = S + 8; ra at S, rbp at S - 8 */
	memset(fake_stack, 0, sizeof(fake_stack));
	fake_stack[5] = base + 32 * 8;
	fake_stack[32] = 0x401234;
	fake_stack[31] = base + 48 * 8;
	rule.cfa_off = EMBER_CFA_DEREF_PACK(40, 8);
	memset(&r, 0, sizeof(r));
	r.sp = base;
	r.pc = 0x500000;
	s = ember_unwind_step(&rule, &r, read_fake, NULL);
	T_CHECK("unwind_deref_add_step", s == EMBER_STEP_NEXT &&
		r.pc == 0x401234 && r.sp == base + 33 * 8 &&
		r.fp == base + 48 * 8,
		"step %d pc 0x%llx sp +%lld fp +%lld", s,
		(unsigned long long)r.pc, (long long)(r.sp - base),
		(long long)(r.fp - base));
	T_CHECK("unwind_deref_add_rule_valid",
		ember_unwind_rule_check(&rule) == 0, "refused");

	/* Debian's libcrypto: its sha256/aes-gcm code uses the form */
	if (access("/usr/lib/x86_64-linux-gnu/libcrypto.so.3", R_OK))
		return;
	t = build_file("/usr/lib/x86_64-linux-gnu/libcrypto.so.3", &len);
	if (t && !ember_unwind_table_check(t, len, &why)) {
		const struct ember_unwind_rule *rules = ember_unwind_rules(t);

		for (i = 0; i < t->nr_rules; i++)
			found += rules[i].cfa_type == EMBER_CFA_DEREF_SP_ADD;
	}
	T_CHECK("unwind_deref_add_in_libcrypto", found >= 10,
		"%zu rules of the form (%s)", found, t ? why : "not built");
	free(t);
}

/*
 * The steps the module and the agent's copy walk share: at a function's
 * entry (return address at sp, or in the link register), by frame
 * record (x86's exact caller sp, a PAC-signed arm64 return address, the
 * chain's end), and which rules need an exact sp.
 */
static void test_shared_steps(void)
{
	uint64_t base = (uint64_t)(uintptr_t)fake_stack;
	struct ember_uregs r;
	struct ember_unwind_rule on_fp = { EMBER_CFA_FP, EMBER_FP_AT_CFA, 16, -16 };
	struct ember_unwind_rule on_sp = { EMBER_CFA_SP, EMBER_FP_SAME, 8, 0 };
	int s1, s2, s3;

	memset(fake_stack, 0, sizeof(fake_stack));
	fake_stack[0] = 0x401000;
	memset(&r, 0, sizeof(r));
	r.sp = base;
	r.pc = 0x500000;
	r.exact = 1;
	s1 = ember_unwind_entry_step(&r, 0, read_fake, NULL);
	T_CHECK("unwind_entry_step_at_sp", s1 == EMBER_STEP_NEXT &&
		r.pc == 0x401000 && r.sp == base + 8 && !r.exact,
		"step %d pc 0x%llx", s1, (unsigned long long)r.pc);
	memset(&r, 0, sizeof(r));
	r.lr = 0x402000;
	r.lr_ok = 1;
	s1 = ember_unwind_entry_step(&r, 1, read_fake, NULL);
	s2 = ember_unwind_entry_step(&r, 1, read_fake, NULL);
	T_CHECK("unwind_entry_step_lr_once", s1 == EMBER_STEP_NEXT &&
		r.pc == 0x402000 && s2 == EMBER_STEP_CUT,
		"steps %d %d", s1, s2);

	/* frame records at +8 -> +16 -> 0: pc, then the chain's end */
	fake_stack[8] = base + 16 * 8;
	fake_stack[9] = 0xffff800000403000ull;	/* PAC bits set */
	fake_stack[16] = 0;
	fake_stack[17] = 0x404000;
	memset(&r, 0, sizeof(r));
	r.sp = base;
	r.fp = base + 8 * 8;
	r.fp_ok = 1;
	r.pac_mask = 0xffff800000000000ull;
	s1 = ember_unwind_fp_step(&r, read_fake, NULL);
	T_CHECK("unwind_fp_step_record", s1 == EMBER_STEP_NEXT &&
		r.pc == 0x403000 && r.sp == base + 10 * 8 &&
		r.fp == base + 16 * 8 && r.fp_ok,
		"step %d pc 0x%llx sp +%lld", s1, (unsigned long long)r.pc,
		(long long)(r.sp - base));
	s2 = ember_unwind_fp_step(&r, read_fake, NULL);
	s3 = ember_unwind_fp_step(&r, read_fake, NULL);
	T_CHECK("unwind_fp_step_chain_end", s2 == EMBER_STEP_NEXT &&
		r.pc == 0x404000 && s3 == EMBER_STEP_FP_END,
		"steps %d %d", s2, s3);
	memset(&r, 0, sizeof(r));
	r.sp = base + 16;
	r.fp = base;	/* below sp: not a frame of this stack */
	r.fp_ok = 1;
	T_CHECK("unwind_fp_step_below_sp_cut",
		ember_unwind_fp_step(&r, read_fake, NULL) == EMBER_STEP_CUT,
		"followed a frame pointer below sp");
	T_CHECK("unwind_rule_on_sp", ember_unwind_rule_on_sp(&on_sp) &&
		!ember_unwind_rule_on_sp(&on_fp), "rule kinds mixed up");
}

/*
 * Where frame pointers are walked (no table: JIT code), the instruction
 * at an interrupted PC tells whether rbp is its frame yet: read from the
 * code gcc and a JIT emit.
 */
static void test_leaf_fp(void)
{
	static const struct {
		unsigned char code[4];
		int want;
	} cases[] = {
		{ { 0x55, 0x48, 0x89, 0xe5 }, EMBER_LEAF_AT_RA },	/* push %rbp */
		{ { 0xc3, 0xcc, 0xcc, 0xcc }, EMBER_LEAF_AT_RA },	/* ret */
		{ { 0xf3, 0x0f, 0x1e, 0xfa }, EMBER_LEAF_AT_RA },	/* endbr64 */
		{ { 0x48, 0x89, 0xe5, 0x48 }, EMBER_LEAF_PUSHED },	/* mov %rsp,%rbp */
		{ { 0x48, 0x89, 0xe0, 0x90 }, EMBER_LEAF_FRAME },	/* mov %rsp,%rax */
		{ { 0x5d, 0xc3, 0x90, 0x90 }, EMBER_LEAF_FRAME },	/* pop %rbp: rbp still ours */
		{ { 0xc9, 0xc3, 0x90, 0x90 }, EMBER_LEAF_FRAME },	/* leave */
		{ { 0xf3, 0x0f, 0x1e, 0xfb }, EMBER_LEAF_FRAME },	/* endbr32 */
		{ { 0x48, 0x83, 0xc0, 0x01 }, EMBER_LEAF_FRAME },	/* add $1,%rax */
	};
	int bad = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u32 insn;

		memcpy(&insn, cases[i].code, sizeof(insn));
		bad += ember_unwind_leaf_fp(insn) != cases[i].want;
	}
	T_CHECK("unwind_leaf_fp_prologue_and_ret", bad == 0,
		"%d of %zu instructions misread", bad,
		sizeof(cases) / sizeof(cases[0]));
}

int main(void)
{
	elf_version(EV_CURRENT);
	test_leaf_fp();
	load_self_maps();
	test_validator();
	check_file_against_libdw("/proc/self/exe", "self");
	check_file_against_libdw("/lib/x86_64-linux-gnu/libc.so.6", "libc");
	if (access("/usr/lib/x86_64-linux-gnu/liblzma.so.5", R_OK) == 0)
		check_file_against_libdw("/usr/lib/x86_64-linux-gnu/liblzma.so.5",
					 "liblzma");
	test_live_stack();
	test_oracle_vdso();
	test_deref_add();
	test_shared_steps();
	T_EXIT();
}
