// SPDX-License-Identifier: GPL-2.0-only
/*
 * Finding a file's separate debug info, the way gdb and elfutils do: by
 * GNU build-id under each debug root (ROOT/.build-id/xx/yyyy.debug), then
 * by .gnu_debuglink next to the file, in its .debug/ subdirectory and
 * under each debug root. A candidate must carry the same build-id (or, for
 * files without one, match the debuglink CRC): a debug file of another
 * build is worse than none.
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
#include "sym_internal.h"

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
	elf = sym_map_elf(fd);
	close(fd);
	if (!elf)
		return NULL;
	dlen = sym_build_id(elf, &did);
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
	sym_hex(idhex, d->id, (size_t)d->id_len);
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

Elf *sym_find_debug_file(const struct sym_file *f, const char *prefix,
			 const char *path, const struct sym_elf_ctx *ctx)
{
	struct debug_search d = { .f = f, .prefix = prefix ? prefix : "" };
	char dir[4096], cand[8192];
	GElf_Word crc = 0;
	const char *slash;
	Elf *e;

	d.id_len = sym_build_id(f->elf, &d.id);
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
