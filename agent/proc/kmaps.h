/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * New processes' executable mappings as the kernel told them
 * (EMBER_REC_MMAP, kmaps.c), so that a process that exec'd while ember
 * runs costs no /proc/PID/maps read: the symbolizer and the unwind
 * worker ask here first (kmaps_read()) and read /proc only when this
 * says it does not know.
 *
 * A pid's mappings are known ("complete") once its exec was seen together
 * with the mappings of its new address space: every record carries mm_gen
 * (a keyed hash of the address space), and a pid's first record with
 * another mm_gen starts its mappings again. The exec's own mappings (the
 * executable, the loader) come before the EXEC record from the mmap
 * hooks, after it from the tracepoint hooks: both orders complete it.
 * Never complete: processes that were running before the session (no
 * exec seen), a pid whose mappings hit the per-process bound or a cut path
 * (EMBER_MMAP_F_CUT), and every process known when a record was lost
 * (kmaps_lost()): /proc is read for those, as before, until a whole read
 * begun after the loss shows nothing kmaps lacks. A miss on code no
 * mapping holds makes reads say "read /proc" until a mapping covers it,
 * except once the process exited (nothing is left to read there).
 *
 * A new mapping replaces what it overlaps (trimmed or split, the kernel's
 * own rule); munmap is not told, so a stale range stays until something
 * is mapped over it, harmless for symbolization (a PC is only looked up
 * in a live process's current code, and its code is in the newest
 * mappings).
 *
 * Bounded: KMAPS_MAX_PROCS processes and KMAPS_MAX_BYTES in all (an exited
 * process goes KMAPS_KEEP_NS of record time after its exit, on the
 * consumer's clock once kmaps_consumed() was called, or earlier
 * when the bounds need room: exited first, then the least recently
 * changed), KMAPS_MAX_MAPS mappings per process (more: not complete).
 * Counted in struct kmaps_stats.
 *
 * Threads: one mutex; the reader thread feeds records, the main thread
 * and the unwind worker read.
 */
#ifndef EMBER_PROC_KMAPS_H
#define EMBER_PROC_KMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "proc/proc_maps.h"

#define KMAPS_MAX_PROCS		8192
#define KMAPS_MAX_MAPS		1024
#define KMAPS_MAX_BYTES		(16u << 20)
#define KMAPS_KEEP_NS		(5ull * 1000000000)

struct kmaps;
struct ember_rec_header;

struct kmaps_stats {
	uint64_t records;	/* MMAP records taken */
	uint64_t bad;		/* MMAP records refused (malformed, pid 0) */
	uint64_t complete;	/* processes whose mappings became known */
	uint64_t reads;		/* kmaps_read() answered */
	uint64_t misses;	/* kmaps_read() said "read /proc" */
	uint64_t over_maps;	/* processes past KMAPS_MAX_MAPS */
	uint64_t evicted;	/* processes dropped for room */
	uint64_t lost;		/* kmaps_lost() calls */
	uint64_t untold;	/* processes read from /proc after a miss
				 * in code no record told (mprotect) */
	uint64_t no_code;	/* misses /proc showed were in no code */
	uint64_t mended;	/* times a process kmaps_lost() broke was
				 * mended by a whole /proc read */
	uint32_t procs;		/* processes held now */
	size_t bytes;
};

/* max_procs, max_bytes: 0 = the defaults above (tests pass small ones). */
struct kmaps *kmaps_new(uint32_t max_procs, size_t max_bytes);
void kmaps_free(struct kmaps *k);

/*
 * The size of the vDSO (this process's own: the kernel maps the same one
 * in every 64-bit process): a record's vdso address becomes a mapping of
 * that size. 0: no vDSO mapping is made up.
 */
void kmaps_set_vdso_len(struct kmaps *k, uint64_t len);

/*
 * A record from a ring: EMBER_REC_MMAP, EXEC and EXIT are taken, others
 * ignored. The record must have passed ember_record_valid(); anything in
 * it is still checked (hostile sizes, unterminated paths).
 */
void kmaps_record(struct kmaps *k, const struct ember_rec_header *rec);
/* Records were lost: no process known now is complete any more. */
void kmaps_lost(struct kmaps *k);
/*
 * The record time the consuming thread (the one that symbolizes) has
 * reached: once told, an exited process is kept KMAPS_KEEP_NS past its
 * exit on this clock, not on the reader's, which may be seconds ahead.
 */
void kmaps_consumed(struct kmaps *k, uint64_t time_ns);
/* Whether any MMAP record was seen: the backend sends them. */
bool kmaps_active(struct kmaps *k);

/*
 * fn for each executable mapping of pid, as proc_maps_read() would
 * (paths end in " (deleted)" never: m->deleted says it), in address
 * order, under kmaps' lock (fn must not call kmaps); *hash (when not
 * NULL): of the mappings, to tell whether they changed. 0, or -ENOENT
 * when pid's mappings are not known: read /proc.
 */
int kmaps_read(struct kmaps *k, uint32_t pid, proc_maps_fn fn, void *ctx,
	       uint64_t *hash);
/* The cgroup v2 id pid's last mapping was made in, 0: unknown. */
uint64_t kmaps_cgroup(struct kmaps *k, uint32_t pid);

void kmaps_get_stats(struct kmaps *k, struct kmaps_stats *st);
/* Whether kmaps_read() would answer for pid now (its exec was told). */
bool kmaps_knows(struct kmaps *k, uint32_t pid);
/*
 * pid's executable mappings, v[0..n), were read from /proc at read_ns
 * (CLOCK_MONOTONIC, the records' clock) because kmaps_read() said
 * -ENOENT. The misses it held pending from before then are settled: one
 * the lines explain stays pending (its record may not be read yet, or
 * no record told that code: mprotect, mremap); one they do not explain
 * was in no code at all (a return address the walker took from a bad
 * frame) and is dropped, so kmaps answers for the process again instead
 * of sending every later binding to /proc. A process kmaps_lost() broke
 * answers again when the read began after the loss, shows a file, and
 * each of its lines is one kmaps holds (same start, device, inode and
 * offset; what kmaps holds more is stale, harmless as always). Records
 * keep coming in while it is lost, so a mapping made after the read is
 * not missed. No line at all (a zombie) settles nothing. The caller
 * settles only from a read it knows whole.
 */
void kmaps_settle_from_proc(struct kmaps *k, uint32_t pid, uint64_t read_ns,
			    const struct sym_map_line *v, uint32_t n);
/* Its exit record was taken (its mappings are kept a while for names). */
bool kmaps_exited(struct kmaps *k, uint32_t pid);

#endif
