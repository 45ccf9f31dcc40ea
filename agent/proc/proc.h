/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The process model: one table of the processes a recording has seen,
 * owned by proc/ and shared by its users (the aggregation today; see
 * agent/proc/README.md for who calls what).
 *
 * A process is a pid plus a start: the time of its first record (exec or
 * sample) and, when /proc was read, its start time in clock ticks since
 * boot (/proc/PID/stat field 22). A pid whose entry saw an exit record and
 * then a record later than that exit is a new process (the pid was
 * reused): it gets a new entry, and the old one stays for its last samples.
 *
 * Exit and release: an exit record only marks a process. It stays, with
 * its comm, exe, cgroup and container id, until every sample that names it
 * was written: samples mark it with the table's generation (the interval
 * being aggregated); proc_table_release(gen) frees the exited processes
 * last sampled in generation gen or before, once that interval's profile
 * is written. One that never took a sample has nothing to write: it goes
 * a second (of record time) after its exit, at a later exit record.
 *
 * Bounded: at most max_procs entries. A new process past the cap evicts
 * the least recently used live process whose samples are all written;
 * exited processes waiting for theirs and processes sampled in a
 * generation not released yet are never evicted. When nothing can
 * be evicted, the new process is refused (counted) and its samples carry
 * no process details.
 *
 * Threads: every function takes the table's mutex; any thread may call
 * them. proc_table_visit()'s callback runs under it and must not call back
 * into the table.
 */
#ifndef EMBER_PROC_H
#define EMBER_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proc_table;

struct proc_table_options {
	const char *root;	/* where /proc is: NULL = "/proc" (tests: a fake tree) */
	uint32_t max_procs;	/* 0 = PROC_DEFAULT_MAX */
};

#define PROC_DEFAULT_MAX	32768

/* What a user may copy out of an entry (proc_table_visit()). */
struct proc_info {
	uint32_t pid;
	uint64_t start_ns;	/* time of its first record (CLOCK_MONOTONIC) */
	uint64_t start_ticks;	/* /proc/PID/stat starttime, 0: not read */
	uint64_t cgroup_id;	/* from its first sample, 0: unknown */
	const char *comm;	/* never NULL */
	const char *exe_path;	/* NULL: unknown */
	const char *cgroup_path;	/* cgroup v2 path, NULL: unknown */
	const char *container_id;	/* NULL: none found */
	bool exited;
	uint64_t exit_ns;
	uint32_t last_gen;	/* generation of its last sample */
};

struct proc_table_stats {
	uint32_t procs;		/* entries now */
	uint32_t exited;	/* of which exited, waiting for release */
	uint64_t created;	/* entries made */
	uint64_t reused;	/* of which for a pid reused after an exit */
	uint64_t released;	/* exited entries freed after their samples */
	uint64_t evicted;	/* live entries dropped at the cap */
	uint64_t refused;	/* new processes not kept: nothing to evict */
	size_t bytes;		/* entries and their strings */
};

/*
 * Whether this kernel keeps the hypervisor's steal out of tasks' CPU
 * time: a guest with a steal clock, whose /proc/stat has counted steal
 * since boot. A late sampling timer's missed periods are then partly
 * stolen time, not CPU time; elsewhere (bare metal, emulation, a guest
 * without a steal clock) the task's CPU clock counted them.
 */
bool proc_steal_accounted(void);

struct proc_table *proc_table_new(const struct proc_table_options *opt);
void proc_table_free(struct proc_table *t);

/*
 * A sample of pid at time_ns (CLOCK_MONOTONIC, 0: unknown) by a thread
 * whose comm is comm (NULL: unknown), leader: the thread is the process's
 * main thread (its comm names the process). The process is read from /proc
 * at first sight, marked sampled in the current generation, and its
 * cgroup id taken (its cgroup path read again if that id changed).
 * Returns 1 for the process's first sample of the generation, 0 for a
 * later one, -1 when it is not in the table (refused at the cap, or out
 * of memory).
 */
int proc_table_sample(struct proc_table *t, uint32_t pid, uint64_t time_ns,
		      const char *comm, bool leader, uint64_t cgroup_id);
/*
 * pid exec'd filename at time_ns: the record names comm and the file, so
 * /proc is read for the cgroup only (an exec-heavy host pays one open).
 * comm or filename NULL: unknown, left as they were.
 */
void proc_table_exec(struct proc_table *t, uint32_t pid, uint64_t time_ns,
		     const char *comm, const char *filename);
/*
 * The last thread of pid exited at time_ns. A process not in the table is
 * added only when create is set (a user still holds state for it).
 */
void proc_table_exit(struct proc_table *t, uint32_t pid, uint64_t time_ns,
		     const char *comm, bool create);
/* Whether the newest process of pid exited (false: unknown pid). */
bool proc_table_exited(struct proc_table *t, uint32_t pid);
/*
 * Keep the newest process of pid in the current generation, as a sample
 * would (in-use memory that outlives an interval); read it if unknown.
 */
void proc_table_keep(struct proc_table *t, uint32_t pid);

/* The generation samples are marked with now. */
uint32_t proc_table_generation(struct proc_table *t);
/*
 * An interval ends: samples are marked with the next generation from now
 * on. Returns the generation that ended, to release once it is written.
 */
uint32_t proc_table_advance(struct proc_table *t);
/*
 * The samples of generation gen and before are written: free the exited
 * processes last sampled then (or never).
 */
void proc_table_release(struct proc_table *t, uint32_t gen);

/*
 * Call fn for each process sampled in generation gen, newest process of
 * a pid first; stops at the first nonzero return, which it returns.
 */
int proc_table_visit(struct proc_table *t, uint32_t gen,
		     int (*fn)(const struct proc_info *p, void *ctx), void *ctx);

void proc_table_get_stats(struct proc_table *t, struct proc_table_stats *st);

/*
 * Users' data on a process (the symbolizer's opened mappings): one slot
 * per user, which goes with its process (release, eviction, free) through
 * the user's free function, called under the table's lock (it must not
 * call back into the table). A slot and its data belong to the thread
 * that releases the table (the main thread): the pointers returned stay
 * valid until that thread releases, creates an entry or frees the table.
 */
enum proc_slot {
	PROC_SLOT_SYM,		/* symbolize.c: struct sym_proc */
	PROC_SLOT_UNWIND,	/* unwind_bind.h: struct unwind_proc */
	PROC_SLOTS
};

void proc_table_slot_owner(struct proc_table *t, enum proc_slot slot,
			   void (*free_fn)(void *data, void *ctx), void *ctx);
/*
 * The slot of the newest process of pid; with create, a process not in
 * the table is added (nothing read: its first sample reads /proc). NULL:
 * unknown pid, or refused at the cap.
 */
void **proc_table_slot(struct proc_table *t, uint32_t pid,
		       enum proc_slot slot, bool create);
/*
 * The data in the slot of the next older process of pid than the one
 * holding data (a pid reused: the samples of the old process may still
 * be resolved), NULL when none.
 */
void *proc_table_slot_older(struct proc_table *t, uint32_t pid,
			    enum proc_slot slot, const void *data);
/* fn on every data of slot; stops at the first nonzero return. */
int proc_table_slot_visit(struct proc_table *t, enum proc_slot slot,
			  int (*fn)(void *data, void *ctx), void *ctx);

/*
 * A process's records, one at a time: the session hands each exec, exit
 * and unwind miss here once, the aggregation each sample it keeps
 * (proc_table_event()); the table updates the process, and each slot
 * owner that listens (proc_table_slot_events()) reacts on its own slot
 * of that process, so nothing below the table asks it again for the
 * same record.
 */
enum proc_event_type {
	PROC_EV_EXEC,		/* a new image: proc_table_exec(), then the owners */
	PROC_EV_EXIT,		/* the owners, then proc_table_exit() */
	PROC_EV_MISS,		/* code mapped since the maps were read */
	PROC_EV_SAMPLE,		/* proc_table_sample(), then the owners */
};

struct proc_event {
	enum proc_event_type type;
	uint32_t pid;
	uint64_t time_ns;	/* CLOCK_MONOTONIC of the record, 0: unknown */
	const char *comm;	/* exec, exit: NULL unknown */
	const char *filename;	/* exec: NULL unknown */
	bool create;		/* exit: proc_table_exit()'s create */
	/* exec: cgroup_id, when known (proc/kmaps.h), lets a process of a
	 * cgroup seen before cost no /proc/PID/cgroup read.
	 * sample: comm is the thread's, and proc_table_sample()'s leader
	 * and cgroup_id; ips: the user addresses of a stack the aggregation
	 * had not seen yet (code maybe mapped late), NULL: a known stack */
	bool leader;
	uint64_t cgroup_id;
	const uint64_t *ips;
	size_t nr_ips;
};

/*
 * An owner's reaction to an event: data is its slot of the process the
 * record names (*data NULL: nothing there yet; it may store there). Runs
 * on the thread that called proc_table_event(), without the table's
 * lock: for slots whose data is that thread's (PROC_SLOT_SYM, the main
 * thread's). It must not call proc_table_event().
 */
typedef void proc_slot_event_fn(void **data, const struct proc_event *ev,
				void *ctx);

/* The owner of slot (proc_table_slot_owner(), same ctx) listens to events. */
void proc_table_slot_events(struct proc_table *t, enum proc_slot slot,
			    proc_slot_event_fn *event_fn);
/*
 * An exec, exit, miss or sample of a process: see struct proc_event.
 * Returns proc_table_sample()'s result for a sample, else 0.
 */
int proc_table_event(struct proc_table *t, const struct proc_event *ev);

/* Free every data of slot and forget its owner (the user goes away). */
void proc_table_slot_drop(struct proc_table *t, enum proc_slot slot);

/*
 * A slot of another thread (the unwind worker's): its data belongs to that
 * thread alone and is never freed by the table. When its process goes
 * (released, evicted, the table freed) the free function runs on the
 * thread that made it go and must hand the data back to its owner, who
 * frees it on its own thread. The owner reaches its data only through
 * the three calls below, each atomic under the table's lock, and keeps the
 * pointer returned: it stays valid until the owner frees it.
 */

/*
 * The data in slot of the process a record of pid at time_ns (0: the
 * newest process of pid) belongs to, as for a sample; when the slot is
 * empty, fresh is put there first. A process not in the table is added
 * with nothing read (fresh NULL: only looked up), but never by evicting
 * another (the evicting thread would free the main thread's slots): NULL
 * at the cap.
 */
void *proc_table_slot_attach(struct proc_table *t, uint32_t pid,
			     uint64_t time_ns, enum proc_slot slot,
			     void *fresh);
/*
 * Take data off the process of pid that holds it: true when it was
 * there (the owner may free it now), false when that process went and
 * the free function has it.
 */
bool proc_table_slot_detach(struct proc_table *t, uint32_t pid,
			    enum proc_slot slot, const void *data);
/*
 * Data handed back by the free function: put it on the newest process of
 * pid if that one is live and its slot empty (true: a binding made
 * before the table knew of a reused pid belongs there). false: not put,
 * *held says what that process holds (NULL: nothing, or no process).
 */
bool proc_table_slot_adopt(struct proc_table *t, uint32_t pid,
			   enum proc_slot slot, void *data, void **held);

#endif /* EMBER_PROC_H */
