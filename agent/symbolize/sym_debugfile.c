// SPDX-License-Identifier: GPL-2.0-only
/*
 * Finding a file's separate debug info, the way gdb and elfutils do: by
 * GNU build-id under each debug root (ROOT/.build-id/xx/yyyy.debug), then
 * by .gnu_debuglink next to the file, in its .debug/ subdirectory and
 * under each debug root. A candidate must carry the same build-id (or, for
 * files without one, match the debuglink CRC): a debug file of another
 * build is worse than none.
 *
 * Every candidate is opened with safe_open_at() under one of two rules:
 *
 *  - the host's debug roots (/usr/lib/debug, --debug-dir): trees root
 *    owns, so links there are root's to make (Fedora's .build-id entries
 *    are links) and are followed; the file must be root's or ours.
 *  - anything named after the process: next to its file, in its root's
 *    debug directory, or on our side by the path it shows. Its owner or
 *    its container's root may have put anything there: no symbolic link
 *    is followed (inside the process's root: RESOLVE_IN_ROOT), and the
 *    file must be root's, the process's user's or the container root's.
 *
 * Either way a FIFO, a device, a sparse file or one over the size caps is
 * refused before it is opened, with one warning naming it. The
 * .gnu_debuglink name comes from the untrusted file itself: a name with a
 * '/', "." or "..", or longer than a file name, is refused whole.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elfutils/libdwelf.h>
#include <zlib.h>
#include "lib/safe_file.h"
#include "symbolize/symbolize_internal.h"

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

struct debug_search {
	const struct sym_file *f;
	const unsigned char *id;
	ssize_t id_len;
	const char *prefix;	/* "/proc/PID/root" or "" */
	const char *dir;	/* directory of the file as the process sees it */
	const char *link;	/* .gnu_debuglink name */
	uint32_t crc;
	uid_t owners[2];	/* who may own what is found by the process's names */
};

/* CRC32 of the whole image, its pages let go as it is read. */
static bool crc_matches(Elf *elf, uint32_t want)
{
	const size_t piece = 64u << 20;
	uLong c = crc32(0L, Z_NULL, 0);
	size_t size = 0;
	char *raw = elf_rawfile(elf, &size);

	if (!raw)
		return false;
	for (size_t done = 0, n; done < size; done += n) {
		n = size - done < piece ? size - done : piece;
		c = crc32(c, (const Bytef *)raw + done, (uInt)n);
		/* a big candidate costs one piece of memory, not its size */
		sym_release_range(elf, done, n);
	}
	return (uint32_t)c == want;
}

/*
 * root NULL: path is on our side, otherwise resolved inside root (the
 * process's). host_tree: path is in one of the host's debug roots, whose
 * rules differ (see above).
 */
static Elf *open_debug_candidate(const char *root, const char *path,
				 bool host_tree, const struct debug_search *d,
				 bool check_crc)
{
	const struct sym_file *f = d->f;
	struct safe_rules rules = {
		.max_bytes = !d->id_len && check_crc ? SYM_CRC_MAX_BYTES :
			     SYM_ELF_MAX_BYTES,
		.owners = { d->owners[0], d->owners[1] },
		.flags = 0,
	};
	const unsigned char *did;
	const char *why;
	struct stat st;
	ssize_t dlen;
	Elf *elf;
	int fd;

	if (host_tree) {
		rules.owners[0] = geteuid();
		rules.owners[1] = SAFE_ANY_OWNER;
		rules.flags = SAFE_FOLLOW;
	}
	fd = safe_open_at(root, path, &rules, &st, &why);
	if (fd < 0) {
		safe_warn("debug file", root, path, why);
		return NULL;
	}
	/* The main file itself (a debuglink naming its own file). */
	if ((uint64_t)st.st_ino == f->ino && (uint64_t)st.st_size == f->size) {
		close(fd);
		return NULL;
	}
	elf = sym_map_elf(fd);
	close(fd);
	if (!elf)
		return NULL;
	dlen = sym_build_id(elf, &did);
	if (d->id_len) {
		/* A debug file for another build of this file is worse than none. */
		if (dlen != d->id_len || memcmp(did, d->id, (size_t)d->id_len) != 0)
			goto reject;
	} else if (check_crc && !crc_matches(elf, d->crc)) {
		goto reject;
	}
	return elf;
reject:
	sym_unmap_elf(elf);
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

static Elf *try_build_id(const char *root, size_t len, void *arg)
{
	struct debug_search *d = arg;
	char idhex[129], path[4096];

	if (d->id_len < 2)
		return NULL;
	sym_hex(idhex, d->id, (size_t)d->id_len);
	if (!fmt_path(path, sizeof(path), "%.*s/.build-id/%.2s/%s.debug",
		      (int)len, root, idhex, idhex + 2))
		return NULL;
	return open_debug_candidate(NULL, path, true, d, false);
}

static Elf *try_root_link(const char *root, size_t len, void *arg)
{
	struct debug_search *d = arg;
	char path[4096];
	Elf *e;

	if (!fmt_path(path, sizeof(path), "%.*s%s/%s", (int)len, root, d->dir,
		      d->link))
		return NULL;
	/* The process's own debug root first (containers ship their own). */
	if (d->prefix[0] &&
	    (e = open_debug_candidate(d->prefix, path, false, d, true)))
		return e;
	return open_debug_candidate(NULL, path, true, d, true);
}

/* Why a .gnu_debuglink name is not followed, or NULL. */
static const char *bad_link(const char *link)
{
	size_t n = strnlen(link, SYM_DEBUGLINK_MAX + 1);

	if (n > SYM_DEBUGLINK_MAX)
		return "is longer than a file name";
	if (memchr(link, '/', n))
		return "names another directory";
	if (!strcmp(link, ".") || !strcmp(link, ".."))
		return "names a directory";
	return NULL;
}

Elf *sym_find_debug_file(const struct sym_file *f, const struct sym_origin *o,
			 const struct sym_elf_ctx *ctx)
{
	struct debug_search d = {
		.f = f,
		.prefix = o && o->root ? o->root : "",
		.owners = { o ? o->owners[0] : SAFE_ANY_OWNER,
			    o ? o->owners[1] : SAFE_ANY_OWNER },
	};
	const char *slash, *path = o ? o->path : NULL, *why;
	char dir[4096], cand[4200];
	GElf_Word crc = 0;
	Elf *e;

	d.id_len = sym_build_id(f->elf, &d.id);
	e = each_root(ctx->debug_dirs, try_build_id, &d);
	if (e || !path)
		return e;
	d.link = dwelf_elf_gnu_debuglink(f->elf, &crc);
	if (!d.link || !d.link[0])
		return NULL;
	if ((why = bad_link(d.link))) {
		char desc[4096 + 80];

		snprintf(desc, sizeof(desc), "%s (\"%.*s\")", path,
			 SYM_DEBUGLINK_MAX, d.link);
		safe_warn("the .gnu_debuglink of", NULL, desc, why);
		return NULL;
	}
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
	 * Try both views, never following a link in either.
	 */
	for (int view = 0; view < 2; view++) {
		const char *root = view ? NULL : d.prefix;

		if (view == 0 && !d.prefix[0])
			continue;
		if (fmt_path(cand, sizeof(cand), "%s/%s", dir, d.link) &&
		    (e = open_debug_candidate(root, cand, false, &d, true)))
			return e;
		if (fmt_path(cand, sizeof(cand), "%s/.debug/%s", dir, d.link) &&
		    (e = open_debug_candidate(root, cand, false, &d, true)))
			return e;
	}
	return each_root(ctx->debug_dirs, try_root_link, &d);
}
