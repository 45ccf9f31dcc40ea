// SPDX-License-Identifier: GPL-2.0-only
/*
 * Naming the code objects of EMBER_IP_PY slots: read through
 * /proc/PID/mem, each read bounded, each value checked (the object's type
 * is PyCode_Type, its check value is the sample's, strings are compact
 * unicode of bounded length, the line table a bounded bytes object).
 * A process's code objects are cached by (address, check), LRU, bounded
 * in entries and bytes, and freed with the process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python/python.h"

#define PY_CACHE_BYTES		(8u << 20)
#define PY_BUCKETS		1024

int py_mem_read(int mem_fd, uint64_t addr, void *buf, size_t len)
{
	ssize_t n;

	if (!addr || addr >= (1ULL << 56) || addr + len < addr)
		return -EFAULT;
	n = pread(mem_fd, buf, len, (off_t)addr);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* ---- the 3.11+ location table (Objects/locations.md) ---- */

struct lt_reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint32_t lt_varint(struct lt_reader *r)
{
	uint32_t v = 0, shift = 0;
	uint8_t b;

	do {
		if (r->p == r->end || shift > 28) {
			r->bad = true;
			return 0;
		}
		b = *r->p++;
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

static int32_t lt_svarint(struct lt_reader *r)
{
	uint32_t u = lt_varint(r);

	return (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

static void lt_skip(struct lt_reader *r, size_t n)
{
	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		r->p = r->end;
	} else {
		r->p += n;
	}
}

/*
 * Entries: a first byte 1CCCCLLL (code C, LLL + 1 code units), then the
 * code's data: 15 no location; 14 long form (line delta svarint, end line,
 * column, end column varints); 13 no column (line delta svarint); 10-12
 * one line (delta C - 10, two column bytes); 0-9 short form (delta 0,
 * one byte). A "no location" entry leaves the running line unchanged.
 */
int py_line_of(const uint8_t *table, size_t len, int firstlineno, int64_t idx)
{
	struct lt_reader r = { table, table + len, false };
	int64_t addr = 0, line = firstlineno;

	if (idx < 0)
		return -1;
	while (r.p < r.end) {
		uint8_t b = *r.p++;
		uint32_t code = (b >> 3) & 15, units = (b & 7) + 1;
		int64_t delta = 0;
		bool none = false;

		if (!(b & 0x80))
			return -1;	/* not an entry's first byte */
		switch (code) {
		case 15:
			none = true;
			break;
		case 14:
			delta = lt_svarint(&r);
			lt_varint(&r);
			lt_varint(&r);
			lt_varint(&r);
			break;
		case 13:
			delta = lt_svarint(&r);
			break;
		case 10: case 11: case 12:
			delta = code - 10;
			lt_skip(&r, 2);
			break;
		default:
			lt_skip(&r, 1);
			break;
		}
		if (r.bad)
			return -1;
		line += delta;
		if (line < 0 || line > INT32_MAX)
			return -1;
		if (idx >= addr && idx < addr + units)
			return none ? -1 : (int)line;
		addr += units;
	}
	return -1;
}

/* ---- strings and bytes in the process ---- */

static void put_utf8(char *out, size_t *o, uint32_t c)
{
	if (c < 0x80) {
		out[(*o)++] = (char)c;
	} else if (c < 0x800) {
		out[(*o)++] = (char)(0xc0 | c >> 6);
		out[(*o)++] = (char)(0x80 | (c & 63));
	} else if (c < 0x10000) {
		if (c >= 0xd800 && c < 0xe000)
			c = 0xfffd;	/* a lone surrogate: not UTF-8 */
		out[(*o)++] = (char)(0xe0 | c >> 12);
		out[(*o)++] = (char)(0x80 | ((c >> 6) & 63));
		out[(*o)++] = (char)(0x80 | (c & 63));
	} else {
		if (c > 0x10ffff)
			c = 0xfffd;
		if (c == 0xfffd) {
			put_utf8(out, o, c);
			return;
		}
		out[(*o)++] = (char)(0xf0 | c >> 18);
		out[(*o)++] = (char)(0x80 | ((c >> 12) & 63));
		out[(*o)++] = (char)(0x80 | ((c >> 6) & 63));
		out[(*o)++] = (char)(0x80 | (c & 63));
	}
}

/*
 * A str object (compact: the characters follow the header) as a
 * malloc'd UTF-8 string of at most max characters; NULL when it cannot
 * be read, is not compact, or is longer (refused, never cut: a cut name
 * could name another function).
 */
static char *read_unicode(int fd, const struct py_layout *l, uint64_t addr,
			  size_t max)
{
	uint8_t hdr[256], *raw;
	int64_t len;
	uint32_t state, kind;
	size_t o = 0, data;
	char *out;

	if (l->uni_compact_size > sizeof(hdr) ||
	    py_mem_read(fd, addr, hdr, l->uni_ascii_size))
		return NULL;
	memcpy(&len, hdr + l->uni_length, 8);
	memcpy(&state, hdr + l->uni_state, 4);
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || len < 0 || (uint64_t)len > max ||
	    (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	data = (state & (1u << 6)) ? l->uni_ascii_size : l->uni_compact_size;
	raw = malloc((size_t)len * kind + 1);
	out = malloc((size_t)len * 4 + 1);
	if (!raw || !out || py_mem_read(fd, addr + data, raw, (size_t)len * kind)) {
		free(raw);
		free(out);
		return NULL;
	}
	for (int64_t i = 0; i < len; i++) {
		uint32_t c = kind == 1 ? raw[i] :
			     kind == 2 ? (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8 :
			     (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 |
			     (uint32_t)raw[4 * i + 2] << 16 | (uint32_t)raw[4 * i + 3] << 24;

		if ((state & (1u << 6)) && c >= 0x80) {
			o = 0;		/* "ASCII" that is not */
			break;
		}
		if (c == 0)
			c = 0xfffd;	/* C strings end at NUL */
		put_utf8(out, &o, c);
	}
	free(raw);
	if (!o) {
		free(out);
		return NULL;
	}
	out[o] = 0;
	return out;
}

static uint8_t *read_bytes(int fd, const struct py_layout *l, uint64_t addr,
			   size_t max, uint32_t *len_out)
{
	int64_t len;
	uint8_t *b;

	if (py_mem_read(fd, addr + l->bytes_size, &len, 8) || len < 0 ||
	    (uint64_t)len > max)
		return NULL;
	b = malloc(len ? (size_t)len : 1);
	if (!b || (len && py_mem_read(fd, addr + l->bytes_sval, b, (size_t)len))) {
		free(b);
		return NULL;
	}
	*len_out = (uint32_t)len;
	return b;
}

/* ---- the cache ---- */

struct py_entry {
	uint64_t code;
	uint32_t check;
	bool ok;
	int32_t firstlineno;
	char *name, *file;
	uint8_t *lt;
	uint32_t lt_len;
	size_t bytes;
	struct py_entry *hnext, *prev, *next;	/* bucket; LRU (next: older) */
};

struct py_names {
	uint32_t pid;
	int mem_fd;		/* -1: not opened yet, -2: cannot be */
	struct py_layout lay;
	struct py_entry *buckets[PY_BUCKETS];
	struct py_entry *newest, *oldest;
	uint32_t nr;
	size_t bytes;
};

struct py_names *py_names_new(uint32_t pid, const struct py_layout *lay)
{
	struct py_names *pn = calloc(1, sizeof(*pn));

	if (!pn)
		return NULL;
	pn->pid = pid;
	pn->mem_fd = -1;
	pn->lay = *lay;
	return pn;
}

static void entry_free(struct py_entry *e)
{
	free(e->name);
	free(e->file);
	free(e->lt);
	free(e);
}

void py_names_free(struct py_names *pn)
{
	struct py_entry *e, *next;

	if (!pn)
		return;
	for (e = pn->newest; e; e = next) {
		next = e->next;
		entry_free(e);
	}
	if (pn->mem_fd >= 0)
		close(pn->mem_fd);
	free(pn);
}

static uint32_t bucket_of(uint64_t code, uint32_t check)
{
	uint64_t h = (code ^ ((uint64_t)check << 7)) * 0x9e3779b97f4a7c15ULL;

	return (uint32_t)(h >> 54) & (PY_BUCKETS - 1);
}

static void lru_unlink(struct py_names *pn, struct py_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		pn->newest = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		pn->oldest = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct py_names *pn, struct py_entry *e)
{
	e->next = pn->newest;
	e->prev = NULL;
	if (pn->newest)
		pn->newest->prev = e;
	pn->newest = e;
	if (!pn->oldest)
		pn->oldest = e;
}

static void evict_oldest(struct py_names *pn)
{
	struct py_entry *e = pn->oldest, **pp;

	lru_unlink(pn, e);
	for (pp = &pn->buckets[bucket_of(e->code, e->check)]; *pp; pp = &(*pp)->hnext)
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	pn->nr--;
	pn->bytes -= e->bytes;
	entry_free(e);
}

/* Read the code object at code whose check must be check. */
static void entry_fill(struct py_names *pn, struct py_entry *e)
{
	const struct py_layout *l = &pn->lay;
	uint8_t co[EMBER_PY_MAX_OFFSET];
	uint64_t type, qual, name, file, lt;
	int32_t first, argc, flags;

	if (pn->mem_fd == -1) {
		char path[48];

		snprintf(path, sizeof(path), "/proc/%u/mem", pn->pid);
		pn->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (pn->mem_fd < 0)
			pn->mem_fd = -2;
	}
	if (pn->mem_fd < 0 || l->co_code > sizeof(co) ||
	    py_mem_read(pn->mem_fd, e->code, co, l->co_code))
		return;
	memcpy(&type, co + l->ob_type, 8);
	memcpy(&first, co + l->co_firstlineno, 4);
	memcpy(&argc, co + l->co_argcount, 4);
	memcpy(&flags, co + l->co_flags, 4);
	if (type != l->code_type ||
	    EMBER_PY_CHECK(first, argc, flags) != e->check)
		return;
	memcpy(&qual, co + l->co_qualname, 8);
	memcpy(&name, co + l->co_name, 8);
	memcpy(&file, co + l->co_filename, 8);
	memcpy(&lt, co + l->co_linetable, 8);
	e->name = read_unicode(pn->mem_fd, l, qual, PY_MAX_NAME);
	if (!e->name)
		e->name = read_unicode(pn->mem_fd, l, name, PY_MAX_NAME);
	e->file = read_unicode(pn->mem_fd, l, file, PY_MAX_FILE);
	e->lt = read_bytes(pn->mem_fd, l, lt, PY_MAX_LINETABLE, &e->lt_len);
	e->firstlineno = first;
	e->ok = e->name != NULL;
	e->bytes += (e->name ? strlen(e->name) : 0) +
		    (e->file ? strlen(e->file) : 0) + e->lt_len;
}

bool py_names_resolve(struct py_names *pn, uint64_t code, uint64_t word,
		      struct py_frame *out)
{
	uint32_t check = (uint32_t)(word >> 32), off = (uint32_t)word;
	uint32_t b = bucket_of(code, check);
	struct py_entry *e;

	memset(out, 0, sizeof(*out));
	for (e = pn->buckets[b]; e; e = e->hnext)
		if (e->code == code && e->check == check)
			break;
	if (e) {
		lru_unlink(pn, e);
	} else {
		e = calloc(1, sizeof(*e));
		if (!e)
			return false;
		e->code = code;
		e->check = check;
		e->bytes = sizeof(*e);
		entry_fill(pn, e);
		while (pn->oldest && (pn->nr >= PY_CACHE_ENTRIES ||
				      pn->bytes + e->bytes > PY_CACHE_BYTES))
			evict_oldest(pn);
		e->hnext = pn->buckets[b];
		pn->buckets[b] = e;
		pn->nr++;
		pn->bytes += e->bytes;
	}
	lru_push(pn, e);
	if (!e->ok)
		return false;
	out->name = e->name;
	out->file = e->file;
	if (off != EMBER_PY_NO_OFFSET && e->lt) {
		/* the instruction's code unit: 2 bytes each after the header.
		 * 3.11/3.12's prev_instr and 3.13's instr_ptr both point at the
		 * instruction that runs (a call's, while it calls); before the
		 * first one prev_instr is one unit before the code (index -1),
		 * which is the function's first line. */
		int64_t idx = ((int64_t)off - pn->lay.co_code) / 2;
		int line = py_line_of(e->lt, e->lt_len, e->firstlineno,
				      idx < 0 ? 0 : idx);

		out->line = line > 0 ? line : 0;
	}
	return true;
}
