// SPDX-License-Identifier: GPL-2.0-only
/*
 * The persistent unwind-table cache (agent/unwind/table_store.c):
 *  - the directory is made 0700 (parents too); a table stored comes back
 *    byte for byte, also after the store is closed and opened again;
 *  - a directory that is a symbolic link (or lies under one), is owned by
 *    another user, is open to others or lies in a directory others may
 *    write to (without the sticky bit) is refused with one warning, and
 *    so is one that cannot be made (a read-only file system);
 *  - through the table cache with a fake backend: a second run builds
 *    nothing; a truncated entry, one with a bad checksum and a hostile one
 *    (correct checksum, a rule index out of range) are warned about,
 *    removed and rebuilt, and the backend never sees a bad table;
 *  - an entry that is a FIFO or a symbolic link to /dev/zero is refused
 *    without blocking;
 *  - a full disk (a 64 KiB tmpfs, as root) costs one warning and leaves
 *    no temporary file behind;
 *  - the size cap holds, and evicts the least recently used entry.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ember_unwind.h"
#include "unwind/cfi_compile.h"
#include "unwind/table_cache.h"
#include "unwind/table_store.h"
#include "test_util.h"

static char base[64];

/* ---- stderr capture ----------------------------------------------------- */

static int saved_err = -1;
static char err_path[128];

static void capture_start(void)
{
	int fd;

	fflush(stderr);
	snprintf(err_path, sizeof(err_path), "%s/stderr", base);
	fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	saved_err = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* Lines written since capture_start() that contain what; also echoed. */
static int capture_end(const char *what)
{
	char line[1024];
	int n = 0;
	FILE *f;

	fflush(stderr);
	dup2(saved_err, 2);
	close(saved_err);
	f = fopen(err_path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		fprintf(stderr, "  | %s", line);
		n += strstr(line, what) != NULL;
	}
	if (f)
		fclose(f);
	return n;
}

/* ---- a fake backend that checks what it is given -------------------------- */

static int loads, bad_tables, drops;

static int f_load(struct ember_source *src, uint32_t id, const void *t,
		  size_t len, char *err, size_t err_len)
{
	const char *why;

	(void)src; (void)id; (void)err; (void)err_len;
	loads++;
	if (ember_unwind_table_check(t, len, &why)) {
		bad_tables++;
		return -EINVAL;
	}
	return 0;
}

static int f_drop(struct ember_source *src, uint32_t id)
{
	(void)src; (void)id;
	drops++;
	return 0;
}

static const struct ember_source_ops fake_ops = {
	.name = "fake",
	.unwind_load = f_load,
	.unwind_drop = f_drop,
};

/* ---- helpers ---------------------------------------------------------------- */

/* The table of this test program, compiled from its CFI. */
static void *own_table(size_t *len)
{
	char err[256];
	struct cfi_stats st;
	void *tab = NULL;
	int fd = open("/proc/self/exe", O_RDONLY);
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || cfi_compile(elf, &tab, len, &st, err, sizeof(err)))
		tab = NULL;
	elf_end(elf);
	close(fd);
	return tab;
}

static uint64_t dir_bytes(const char *dir, int *tmp_files, int *entries)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t sum = 0;

	*tmp_files = *entries = 0;
	while (d && (de = readdir(d))) {
		char p[512];
		struct stat st;

		if (de->d_name[0] == '.' && (!de->d_name[1] ||
		    !strcmp(de->d_name, "..")))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (lstat(p, &st))
			continue;
		sum += (uint64_t)st.st_size;
		*tmp_files += !strncmp(de->d_name, ".tmp-", 5);
		*entries += strstr(de->d_name, ".tab") != NULL;
	}
	if (d)
		closedir(d);
	return sum;
}

/*
 * One run of the table cache over this program: a fresh cache (as in a
 * new agent) with the store at dir. Returns the cache's counters.
 */
struct run_result {
	uint64_t built, loaded;
	struct table_store_stats st;
	char build_id[41];
	bool has_table;
};

static struct run_result run_once(const char *dir)
{
	struct table_store *ts = table_store_open(dir, 0);
	struct run_result rr = { 0 };
	struct table_cache c;
	struct table_file *f;
	struct stat st;
	int fd = open("/proc/self/exe", O_RDONLY);

	fstat(fd, &st);
	table_cache_init(&c, &fake_ops, NULL, ts, false);
	f = table_cache_get(&c, fd, &st, "test_table_store");
	rr.built = c.built;
	rr.loaded = c.loaded;
	rr.has_table = f && f->table_id;
	if (f)
		snprintf(rr.build_id, sizeof(rr.build_id), "%s", f->build_id);
	table_store_get_stats(ts, &rr.st);
	table_cache_free(&c, true);
	table_store_close(ts);
	close(fd);
	return rr;
}

static char entry_path[512];

static const char *entry_of(const char *dir, const char *id)
{
	snprintf(entry_path, sizeof(entry_path), "%s/%s.tab", dir, id);
	return entry_path;
}

/* Read the entry, let edit change it, write it back. */
static void edit_entry(const char *path, void (*edit)(char *buf, size_t *len))
{
	struct stat st;
	char *buf;
	size_t len;
	int fd = open(path, O_RDWR);

	if (fd < 0 || fstat(fd, &st))
		return;
	len = (size_t)st.st_size;
	buf = malloc(len);
	if (buf && read(fd, buf, len) == (ssize_t)len) {
		edit(buf, &len);
		if (ftruncate(fd, 0) == 0 && pwrite(fd, buf, len, 0) != (ssize_t)len)
			fprintf(stderr, "short write\n");
	}
	free(buf);
	close(fd);
}

static void truncate_it(char *buf, size_t *len)
{
	(void)buf;
	*len = sizeof(struct table_store_hdr) + (*len - sizeof(struct table_store_hdr)) / 2;
}

static void flip_a_byte(char *buf, size_t *len)
{
	buf[*len - 3] ^= 0x40;
}

/* A row pointing past the rules, with the checksum made right again. */
static void hostile(char *buf, size_t *len)
{
	struct table_store_hdr *h = (struct table_store_hdr *)buf;
	struct ember_unwind_table *t = (struct ember_unwind_table *)(h + 1);
	struct ember_unwind_row *rows = (struct ember_unwind_row *)
		ember_unwind_rows(t);

	(void)len;
	rows[t->nr_rows / 2].rule = (__u16)t->nr_rules + 7;
	h->checksum = table_store_checksum(t, h->blob_len);
}

static void check_bad_entry(const char *dir, const char *name,
			    void (*edit)(char *buf, size_t *len), const char *id)
{
	struct run_result rr;
	char what[128];
	int warned;

	edit_entry(entry_of(dir, id), edit);
	bad_tables = 0;
	capture_start();
	rr = run_once(dir);
	warned = capture_end("removed the cached unwind table");
	snprintf(what, sizeof(what), "table_store_%s_rejected_rebuilt", name);
	T_CHECK(what, warned == 1 && rr.st.rejected == 1 && rr.built == 1 &&
		rr.has_table && bad_tables == 0 && rr.st.stores == 1,
		"warned %d, rejected %lu, built %lu, stored %lu, backend saw %d bad",
		warned, (unsigned long)rr.st.rejected, (unsigned long)rr.built,
		(unsigned long)rr.st.stores, bad_tables);
	/* and the entry written again is good: the next run loads it */
	rr = run_once(dir);
	snprintf(what, sizeof(what), "table_store_%s_replaced_by_good", name);
	T_CHECK(what, rr.built == 0 && rr.st.hits == 1, "built %lu, hits %lu",
		(unsigned long)rr.built, (unsigned long)rr.st.hits);
}

/* ---- the tests ------------------------------------------------------------- */

static void test_open_and_round_trip(void)
{
	char dir[128];
	struct table_store *ts;
	struct table_store_stats st;
	struct stat sb;
	void *tab, *back = NULL;
	size_t len = 0, blen = 0;
	const char *id = "0123456789abcdef0123456789abcdef01234567";

	snprintf(dir, sizeof(dir), "%s/a/b/tables", base);
	ts = table_store_open(dir, 0);
	T_CHECK("table_store_creates_dir_0700", ts && !stat(dir, &sb) &&
		(sb.st_mode & 07777) == 0700, "mode %o", (unsigned)sb.st_mode);
	tab = own_table(&len);
	T_CHECK("table_store_own_table_built", tab != NULL, "no table");
	if (!ts || !tab)
		return;
	table_store_save(ts, id, tab, len);
	T_CHECK("table_store_round_trip", !table_store_load(ts, id, "x", &back,
		&blen) && blen == len && !memcmp(back, tab, len),
		"len %zu vs %zu", blen, len);
	free(back);
	back = NULL;
	table_store_close(ts);
	ts = table_store_open(dir, 0);
	table_store_get_stats(ts, &st);
	T_CHECK("table_store_reopen_knows_entries", ts && st.entries == 1 &&
		st.bytes == len + sizeof(struct table_store_hdr),
		"%u entries, %lu bytes", st.entries, (unsigned long)st.bytes);
	T_CHECK("table_store_round_trip_after_reopen",
		ts && !table_store_load(ts, id, "x", &back, &blen) &&
		blen == len && !memcmp(back, tab, len), "differs");
	T_CHECK("table_store_miss", ts && table_store_load(ts,
		"ffff", "x", &back, &blen) == -ENOENT, "not a miss");
	free(back);
	free(tab);
	table_store_close(ts);
}

static void refused(const char *name, const char *dir, const char *want)
{
	struct table_store *ts;
	int warned;

	capture_start();
	ts = table_store_open(dir, 0);
	warned = capture_end(want);
	T_CHECK(name, !ts && warned == 1, "store %p, %d warnings with '%s'",
		(void *)ts, warned, want);
	table_store_close(ts);
}

static void test_bad_dirs(void)
{
	char real[128], link[128], sub[160];

	snprintf(real, sizeof(real), "%s/real", base);
	snprintf(link, sizeof(link), "%s/link", base);
	mkdir(real, 0700);
	if (symlink(real, link))
		perror("symlink");
	refused("table_store_symlink_dir_refused", link, "is a symbolic link");
	snprintf(sub, sizeof(sub), "%s/below", link);
	refused("table_store_dir_under_symlink_refused", sub,
		"is a symbolic link");
	chmod(real, 0777);
	refused("table_store_mode_0777_refused", real, "mode is 0777");
	chmod(real, 0750);
	refused("table_store_mode_0750_refused", real, "mode is 0750");
	chmod(real, 0700);
	if (geteuid() == 0) {
		if (chown(real, 65534, 65534))
			perror("chown");
		refused("table_store_other_owner_refused", real,
			"owned by uid 65534");
		if (chown(real, 0, 0))
			perror("chown");
	} else {
		printf("SKIP: table_store_other_owner_refused: not root\n");
	}
	/* a parent others may write to (no sticky bit): they could swap it */
	snprintf(sub, sizeof(sub), "%s/open", base);
	mkdir(sub, 0700);
	chmod(sub, 0777);
	strcat(sub, "/tables");
	refused("table_store_parent_writable_refused", sub,
		"is writable by other users");
	/* a read-only file system (a read-only root): one warning */
	snprintf(sub, sizeof(sub), "%s/ro", base);
	mkdir(sub, 0700);
	if (geteuid() == 0 && !mount("tmpfs", sub, "tmpfs", MS_RDONLY, "mode=0755")) {
		strcat(sub, "/cache/tables");
		refused("table_store_read_only_fs_refused", sub,
			"Read-only file system");
		sub[strlen(sub) - strlen("/cache/tables")] = '\0';
		umount2(sub, MNT_DETACH);
	} else {
		printf("SKIP: table_store_read_only_fs_refused: no read-only tmpfs\n");
	}
	snprintf(sub, sizeof(sub), "%s/stderr/x", base);
	refused("table_store_file_in_path_refused", sub, "not a directory");
}

static void test_through_cache(void)
{
	char dir[128];
	struct run_result rr;

	snprintf(dir, sizeof(dir), "%s/cache", base);
	rr = run_once(dir);
	T_CHECK("table_store_first_run_builds_and_stores", rr.built == 1 &&
		rr.has_table && rr.st.stores == 1 && rr.st.misses == 1 &&
		rr.build_id[0], "built %lu, stored %lu, build id '%s'",
		(unsigned long)rr.built, (unsigned long)rr.st.stores,
		rr.build_id);
	if (!rr.build_id[0])
		return;
	rr = run_once(dir);
	T_CHECK("table_store_second_run_builds_nothing", rr.built == 0 &&
		rr.loaded == 1 && rr.st.hits == 1 && rr.st.stores == 0 &&
		bad_tables == 0, "built %lu, hits %lu", (unsigned long)rr.built,
		(unsigned long)rr.st.hits);
	check_bad_entry(dir, "truncated", truncate_it, rr.build_id);
	check_bad_entry(dir, "bad_checksum", flip_a_byte, rr.build_id);
	check_bad_entry(dir, "hostile", hostile, rr.build_id);
}

static void test_not_regular(void)
{
	char dir[128], p[512], id[] = "aabbccdd";
	struct table_store *ts;
	void *blob = NULL;
	size_t len;
	int r1, r2, warned;

	snprintf(dir, sizeof(dir), "%s/special", base);
	ts = table_store_open(dir, 0);
	if (!ts)
		return;
	snprintf(p, sizeof(p), "%s/%s.tab", dir, id);
	mkfifo(p, 0600);
	alarm(10);	/* a blocking open or read fails the test by SIGALRM */
	capture_start();
	r1 = table_store_load(ts, id, "fifo", &blob, &len);
	if (symlink("/dev/zero", p))
		perror("symlink");
	r2 = table_store_load(ts, id, "zero", &blob, &len);
	warned = capture_end("removed the cached unwind table");
	alarm(0);
	T_CHECK("table_store_fifo_refused", r1 == -EBADMSG, "r %d", r1);
	T_CHECK("table_store_symlink_to_dev_zero_refused", r2 == -EBADMSG &&
		warned == 2 && access(p, F_OK) != 0, "r %d, warned %d", r2,
		warned);
	table_store_close(ts);
}

static void test_full_disk(void)
{
	char dir[128], id[16];
	struct table_store *ts;
	struct table_store_stats st;
	size_t len = 20000;
	char *blob = calloc(1, len);
	int warned, tmp, ents;

	snprintf(dir, sizeof(dir), "%s/tiny", base);
	mkdir(dir, 0700);
	if (geteuid() != 0 || mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700")) {
		printf("SKIP: table_store_full_disk: cannot mount a tmpfs (%s)\n",
		       geteuid() ? "not root" : strerror(errno));
		free(blob);
		return;
	}
	ts = table_store_open(dir, 0);
	capture_start();
	for (int i = 0; ts && i < 10; i++) {
		snprintf(id, sizeof(id), "%02x", i);
		blob[0] = (char)i;
		table_store_save(ts, id, blob, len);
	}
	warned = capture_end("cannot write to the unwind-table cache");
	table_store_get_stats(ts, &st);
	dir_bytes(dir, &tmp, &ents);
	T_CHECK("table_store_full_disk_one_warning", ts && warned == 1 &&
		st.write_failures >= 5 && st.stores >= 1 && st.stores < 5,
		"warned %d, failures %lu, stores %lu", warned,
		(unsigned long)st.write_failures, (unsigned long)st.stores);
	T_CHECK("table_store_full_disk_nothing_left", tmp == 0 &&
		ents == (int)st.stores, "%d temp files, %d entries", tmp, ents);
	table_store_close(ts);
	umount2(dir, MNT_DETACH);
	free(blob);
}

static void test_cap(void)
{
	char dir[128], id[16];
	struct table_store *ts;
	size_t len = 300 << 10;
	char *blob = calloc(1, len), p[512];
	bool under = true;
	int tmp, ents;
	uint64_t bytes;

	snprintf(dir, sizeof(dir), "%s/capped", base);
	ts = table_store_open(dir, 1 << 20);
	for (int i = 0; ts && i < 12; i++) {
		snprintf(id, sizeof(id), "%02x", i);
		blob[0] = (char)i;
		table_store_save(ts, id, blob, len);
		if (dir_bytes(dir, &tmp, &ents) > (1 << 20))
			under = false;
	}
	bytes = dir_bytes(dir, &tmp, &ents);
	snprintf(p, sizeof(p), "%s/00.tab", dir);
	T_CHECK("table_store_cap_holds", ts && under && bytes <= (1 << 20) &&
		ents == 3, "%lu bytes in %d entries", (unsigned long)bytes, ents);
	/* the least recently stored went, the newest three stay */
	snprintf(p, sizeof(p), "%s/0b.tab", dir);
	T_CHECK("table_store_cap_keeps_newest", access(p, F_OK) == 0,
		"0b.tab evicted");
	table_store_close(ts);
	free(blob);
}

/* LRU with real tables: the one loaded stays, the one not used goes. */
static void test_lru(void)
{
	char dir[128], p[512];
	struct table_store *ts;
	size_t len = 0, blen;
	void *tab = own_table(&len), *back = NULL;
	uint64_t cap;

	if (!tab)
		return;
	snprintf(dir, sizeof(dir), "%s/lru", base);
	cap = 3 * (len + sizeof(struct table_store_hdr));
	ts = table_store_open(dir, cap);
	table_store_save(ts, "aa", tab, len);
	table_store_save(ts, "bb", tab, len);
	table_store_save(ts, "cc", tab, len);
	if (!table_store_load(ts, "aa", "x", &back, &blen))
		free(back);
	table_store_save(ts, "dd", tab, len);
	snprintf(p, sizeof(p), "%s/aa.tab", dir);
	T_CHECK("table_store_lru_keeps_used", ts && access(p, F_OK) == 0,
		"aa evicted");
	snprintf(p, sizeof(p), "%s/bb.tab", dir);
	T_CHECK("table_store_lru_evicts_oldest", access(p, F_OK) != 0,
		"bb still there");
	table_store_close(ts);
	/* opened again with a smaller cap: down to it at once */
	ts = table_store_open(dir, len + sizeof(struct table_store_hdr));
	{
		int tmp, ents;

		dir_bytes(dir, &tmp, &ents);
		T_CHECK("table_store_reopen_smaller_cap", ents == 1,
			"%d entries", ents);
	}
	table_store_close(ts);
	free(tab);
}

int main(void)
{
	char cmd[128];

	snprintf(base, sizeof(base), "/tmp/ember-ts-XXXXXX");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	test_open_and_round_trip();
	test_bad_dirs();
	test_through_cache();
	test_not_regular();
	test_full_disk();
	test_cap();
	test_lru();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", base);
	T_EXIT();
}
