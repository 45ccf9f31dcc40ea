// SPDX-License-Identifier: GPL-2.0-only
/*
 * Snapshots of new processes' executable mappings (exec_snap.h): one
 * thread, a queue of pids to read (filled by the ring reader's thread,
 * which does no I/O itself) and a few slots of packed mappings.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include "lib/clock.h"
#include "proc/exec_snap.h"

/* One mapping in a slot's buffer, its path (NUL-terminated) after it. */
struct packed_map {
	uint64_t start, end, pgoff, dev, ino;
	uint32_t path_len;
	uint8_t type, deleted;
	uint16_t __pad;
};

#define PACKED_ALIGN(n)	(((n) + 7) & ~(size_t)7)

struct snap {
	uint32_t pid;		/* 0: empty */
	uint64_t seq;		/* when it was last replaced: the oldest goes */
	int root_fd;
	size_t len;
	unsigned char *buf;
};

struct pending {
	uint32_t pid;
	bool again;		/* the take after the libraries are mapped */
	uint64_t due_ns;
};

struct exec_snaps {
	char root[256];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* under lock */
	bool stopping;
	struct pending q[EXEC_SNAP_QUEUE];
	size_t nq;
	struct snap slot[EXEC_SNAP_SLOTS];
	uint64_t seq;
	struct exec_snap_stats st;
};

struct take {
	unsigned char *buf;
	size_t len;
};

static bool take_one(void *ctx, struct sym_map_line *m)
{
	struct take *t = ctx;
	size_t need = PACKED_ALIGN(sizeof(struct packed_map) + m->path_len + 1);
	struct packed_map *pm;

	if (t->len + need > EXEC_SNAP_BYTES)
		return false;	/* what fits: the executable comes first */
	pm = (struct packed_map *)(t->buf + t->len);
	memset(pm, 0, need);
	pm->start = m->start;
	pm->end = m->end;
	pm->pgoff = m->pgoff;
	pm->dev = m->dev;
	pm->ino = m->ino;
	pm->path_len = (uint32_t)m->path_len;
	pm->type = (uint8_t)m->type;
	pm->deleted = m->deleted;
	memcpy(pm + 1, m->path, m->path_len);
	t->len += need;
	return true;
}

/* The slot of pid, or the oldest (emptied) one. Under lock. */
static struct snap *slot_for(struct exec_snaps *es, uint32_t pid)
{
	struct snap *old = &es->slot[0];

	for (size_t i = 0; i < EXEC_SNAP_SLOTS; i++) {
		if (es->slot[i].pid == pid)
			return &es->slot[i];
		if (es->slot[i].seq < old->seq)
			old = &es->slot[i];
	}
	return old;
}

static void slot_clear(struct snap *sn)
{
	if (sn->root_fd >= 0)
		close(sn->root_fd);
	free(sn->buf);
	memset(sn, 0, sizeof(*sn));
	sn->root_fd = -1;
}

static void queue_locked(struct exec_snaps *es, uint32_t pid, bool again,
			 uint64_t due_ns)
{
	if (es->nq == EXEC_SNAP_QUEUE) {
		es->st.dropped++;
		return;
	}
	es->q[es->nq++] = (struct pending){ pid, again, due_ns };
	pthread_cond_signal(&es->wake);
}

/*
 * Read pid's maps and take a handle on its root, outside the lock. A
 * process already gone (or a zombie: no maps) leaves an older snapshot
 * of it in place.
 */
static void take(struct exec_snaps *es, const struct pending *pd)
{
	struct take t = { .buf = malloc(EXEC_SNAP_BYTES) };
	char path[300];
	struct snap *sn;
	int fd;

	if (!t.buf)
		return;
	if (proc_maps_read(es->root[0] ? es->root : NULL, pd->pid, take_one,
			   &t, NULL) || !t.len) {
		free(t.buf);
		pthread_mutex_lock(&es->lock);
		es->st.gone++;
		pthread_mutex_unlock(&es->lock);
		return;
	}
	snprintf(path, sizeof(path), "%s/%u/root",
		 es->root[0] ? es->root : "/proc", pd->pid);
	/* the magic link leads to the root itself: it outlives the process */
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	pthread_mutex_lock(&es->lock);
	sn = slot_for(es, pd->pid);
	slot_clear(sn);
	sn->pid = pd->pid;
	sn->seq = ++es->seq;
	sn->root_fd = fd;
	sn->buf = t.buf;
	sn->len = t.len;
	es->st.taken++;
	if (!pd->again)
		queue_locked(es, pd->pid, true, mono_ns() + EXEC_SNAP_AGAIN_NS);
	pthread_mutex_unlock(&es->lock);
}

/* Take the due entries out of the queue; the ns to wait for the next. */
static size_t due_locked(struct exec_snaps *es, struct pending *out,
			 size_t max, uint64_t *wait_ns)
{
	uint64_t now = mono_ns();
	size_t n = 0, i = 0;

	*wait_ns = UINT64_MAX;
	while (i < es->nq) {
		if (es->q[i].due_ns <= now && n < max) {
			out[n++] = es->q[i];
			es->q[i] = es->q[--es->nq];
			continue;
		}
		if (es->q[i].due_ns > now && es->q[i].due_ns - now < *wait_ns)
			*wait_ns = es->q[i].due_ns - now;
		else if (es->q[i].due_ns <= now)
			*wait_ns = 0;
		i++;
	}
	return n;
}

static void wait_locked(struct exec_snaps *es, uint64_t wait_ns)
{
	struct timespec ts;
	uint64_t at;

	if (wait_ns == UINT64_MAX) {
		pthread_cond_wait(&es->wake, &es->lock);
		return;
	}
	at = mono_ns() + wait_ns;
	ts.tv_sec = (time_t)(at / 1000000000u);
	ts.tv_nsec = (long)(at % 1000000000u);
	pthread_cond_timedwait(&es->wake, &es->lock, &ts);
}

static void *snap_thread(void *arg)
{
	struct exec_snaps *es = arg;
	struct pending due[16];

	pthread_setname_np(pthread_self(), "ember-snap");
	pthread_mutex_lock(&es->lock);
	while (!es->stopping) {
		uint64_t wait_ns;
		size_t n = due_locked(es, due, 16, &wait_ns);

		if (!n) {
			wait_locked(es, wait_ns);
			continue;
		}
		pthread_mutex_unlock(&es->lock);
		for (size_t i = 0; i < n; i++)
			take(es, &due[i]);
		pthread_mutex_lock(&es->lock);
	}
	pthread_mutex_unlock(&es->lock);
	return NULL;
}

struct exec_snaps *exec_snaps_start(const char *root)
{
	struct exec_snaps *es = calloc(1, sizeof(*es));
	pthread_condattr_t ca;
	sigset_t all, old;

	if (!es)
		return NULL;
	if (root)
		snprintf(es->root, sizeof(es->root), "%s", root);
	for (size_t i = 0; i < EXEC_SNAP_SLOTS; i++)
		es->slot[i].root_fd = -1;
	pthread_mutex_init(&es->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&es->wake, &ca);
	pthread_condattr_destroy(&ca);
	/* signals stay with the threads that handle them */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	errno = pthread_create(&es->thread, NULL, snap_thread, es);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (errno) {
		pthread_cond_destroy(&es->wake);
		pthread_mutex_destroy(&es->lock);
		free(es);
		return NULL;
	}
	return es;
}

void exec_snaps_stop(struct exec_snaps *es)
{
	if (!es)
		return;
	pthread_mutex_lock(&es->lock);
	es->stopping = true;
	pthread_cond_signal(&es->wake);
	pthread_mutex_unlock(&es->lock);
	pthread_join(es->thread, NULL);
	for (size_t i = 0; i < EXEC_SNAP_SLOTS; i++)
		slot_clear(&es->slot[i]);
	pthread_cond_destroy(&es->wake);
	pthread_mutex_destroy(&es->lock);
	free(es);
}

void exec_snaps_note(struct exec_snaps *es, uint32_t pid)
{
	if (!es || !pid)
		return;
	pthread_mutex_lock(&es->lock);
	queue_locked(es, pid, false, 0);
	pthread_mutex_unlock(&es->lock);
}

/* Copy pid's snapshot out under the lock: fn may open files, slowly. */
static unsigned char *copy_snapshot(struct exec_snaps *es, uint32_t pid,
				    size_t *len)
{
	unsigned char *buf = NULL;

	pthread_mutex_lock(&es->lock);
	for (size_t i = 0; i < EXEC_SNAP_SLOTS; i++) {
		struct snap *sn = &es->slot[i];

		if (sn->pid != pid || !sn->buf)
			continue;
		buf = malloc(sn->len);
		if (buf) {
			memcpy(buf, sn->buf, sn->len);
			*len = sn->len;
			es->st.used++;
		}
		break;
	}
	pthread_mutex_unlock(&es->lock);
	return buf;
}

int exec_snaps_read(struct exec_snaps *es, uint32_t pid, proc_maps_fn fn,
		    void *ctx)
{
	unsigned char *buf;
	size_t len = 0, off = 0;

	if (!es || !(buf = copy_snapshot(es, pid, &len)))
		return -ENOENT;
	while (off + sizeof(struct packed_map) <= len) {
		struct packed_map *pm = (struct packed_map *)(buf + off);
		struct sym_map_line m = {
			.start = pm->start, .end = pm->end, .pgoff = pm->pgoff,
			.dev = pm->dev, .ino = pm->ino, .exec = true,
			.deleted = pm->deleted,
			.type = (enum sym_map_type)pm->type,
			.path = (const char *)(pm + 1), .path_len = pm->path_len,
		};

		off += PACKED_ALIGN(sizeof(*pm) + pm->path_len + 1);
		if (!fn(ctx, &m))
			break;
	}
	free(buf);
	return 0;
}

int exec_snaps_root(struct exec_snaps *es, uint32_t pid)
{
	int fd = -1;

	if (!es)
		return -1;
	pthread_mutex_lock(&es->lock);
	for (size_t i = 0; i < EXEC_SNAP_SLOTS; i++) {
		if (es->slot[i].pid == pid && es->slot[i].root_fd >= 0) {
			fd = fcntl(es->slot[i].root_fd, F_DUPFD_CLOEXEC, 0);
			break;
		}
	}
	pthread_mutex_unlock(&es->lock);
	return fd;
}

void exec_snaps_get_stats(struct exec_snaps *es, struct exec_snap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!es)
		return;
	pthread_mutex_lock(&es->lock);
	*st = es->st;
	pthread_mutex_unlock(&es->lock);
}
