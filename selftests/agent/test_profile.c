// SPDX-License-Identifier: GPL-2.0-only
/*
 * Aggregation: identical stacks merge, distinct ones do not, the table's
 * bounds hold (overflow counted in dropped_stacks), filters, idle, lost
 * records, reset, timestamps.
 */
#include <string.h>
#include "aggregate/aggregate.h"
#include "source/source.h"
#include "test_util.h"

static uint64_t buf[1024];

static const struct ember_rec_header *sample(uint32_t type, uint32_t pid,
					     uint32_t tid, const char *comm,
					     uint16_t nk, uint16_t nu,
					     uint64_t base, uint64_t weight)
{
	struct ember_sample *s = (void *)buf;

	memset(buf, 0, sizeof(buf));
	s->hdr.type = type;
	s->hdr.size = sizeof(*s) + 8 * (nk + nu);
	s->pid = pid;
	s->tid = tid;
	s->nr_kernel = nk;
	s->nr_user = nu;
	/* a whole stack, as a CFI walk that reached _start reports it */
	s->flags = nu ? EMBER_SF_USER_COMPLETE : 0;
	s->weight_ns = weight;
	s->time_ns = 1000 + base;
	strcpy(s->comm, comm);
	for (int i = 0; i < nk + nu; i++)
		s->ips[i] = base + i;
	return &s->hdr;
}

static const struct prof_sample *find(const struct profile *p, uint32_t tid,
				      uint64_t first_ip)
{
	for (size_t i = 0; i < p->nr_samples; i++)
		if (p->samples[i].tid == tid && p->samples[i].nr_frames &&
		    p->samples[i].event == PROF_EV_CPU &&
		    p->samples[i].frames[0]->address == first_ip)
			return &p->samples[i];
	return NULL;
}

/* An EMBER_REC_ALLOC: a user stack at base, the block's address and size. */
static const struct ember_rec_header *alloc_rec(uint32_t pid, uint64_t base,
						uint64_t addr, uint64_t size,
						uint64_t weight)
{
	struct ember_sample *s = (void *)sample(EMBER_REC_ALLOC, pid, pid,
						"allocs", 0, 3, base, weight);

	EMBER_ALLOC_ADDR(s) = addr;
	EMBER_ALLOC_SIZE(s) = size;
	s->hdr.size += 16;
	return &s->hdr;
}

static const struct ember_rec_header *free_rec(uint32_t pid, uint64_t addr)
{
	static struct ember_free f;

	memset(&f, 0, sizeof(f));
	f.hdr.type = EMBER_REC_FREE;
	f.hdr.size = sizeof(f);
	f.pid = pid;
	f.tid = pid;
	f.addr = addr;
	return &f.hdr;
}

static void sum_event(const struct profile *p, enum prof_event ev,
		      uint64_t *bytes, uint64_t *objects)
{
	*bytes = *objects = 0;
	for (size_t i = 0; p && i < p->nr_samples; i++)
		if (p->samples[i].event == ev) {
			*bytes += p->samples[i].weight_ns;
			*objects += p->samples[i].count;
		}
}

/*
 * -e alloc: allocated bytes and objects per stack, in use until freed,
 * carried across intervals, dropped when the process has exited.
 */
static void test_alloc(void)
{
	const uint32_t A = 4000000011u;
	/* the process model the session shares: exits go there */
	struct proc_table *procs = proc_table_new(NULL);
	struct pb_options po = { .procs = procs };
	struct profile_builder *pb = pb_new(&po, NULL);
	uint64_t b, o;
	struct profile *p;

	/* 3 samples of 64-byte blocks, each standing for 6400 bytes */
	for (int i = 0; i < 3; i++)
		pb_add_record(pb, alloc_rec(A, 0x500, 0x1000 + 16 * i, 64, 6400));
	pb_add_record(pb, alloc_rec(A, 0x600, 0x9000, 1 << 20, 1 << 20));
	pb_add_record(pb, free_rec(A, 0x1000));
	pb_add_record(pb, free_rec(A, 0xdead0));	/* never sampled */
	p = pb_finish(pb, NULL);
	sum_event(p, PROF_EV_ALLOC, &b, &o);
	T_CHECK("alloc_bytes_and_objects", b == 3 * 6400 + (1 << 20) &&
		o == 3 * 100 + 1, "%llu bytes %llu objects",
		(unsigned long long)b, (unsigned long long)o);
	sum_event(p, PROF_EV_INUSE, &b, &o);
	T_CHECK("alloc_inuse_after_free", b == 2 * 6400 + (1 << 20) &&
		o == 2 * 100 + 1, "%llu bytes %llu objects",
		(unsigned long long)b, (unsigned long long)o);
	T_CHECK("alloc_samples_counted_once", p &&
		p->meta.samples[PROF_EV_ALLOC] == 4 &&
		p->meta.samples[PROF_EV_INUSE] == 0, "alloc %llu inuse %llu",
		p ? (unsigned long long)p->meta.samples[PROF_EV_ALLOC] : 0ull,
		p ? (unsigned long long)p->meta.samples[PROF_EV_INUSE] : 0ull);
	profile_free(p);

	/* a backend's table was full: allocated, not in use, said */
	pb_reset(pb);
	{
		struct ember_sample *s = (void *)alloc_rec(A, 0x700, 0, 64, 6400);

		s->flags |= EMBER_SF_ALLOC_UNTRACKED;
		pb_add_record(pb, &s->hdr);
	}
	pb_add_record(pb, alloc_rec(A, 0x700, 0, 64, 6400));	/* not followed */
	p = pb_finish(pb, NULL);
	sum_event(p, PROF_EV_ALLOC, &b, &o);
	T_CHECK("alloc_untracked_still_allocated", b == 2 * 6400, "%llu bytes",
		(unsigned long long)b);
	T_CHECK("alloc_untracked_counted", p && p->meta.inuse_untracked == 1,
		"%llu untracked",
		p ? (unsigned long long)p->meta.inuse_untracked : 0ull);
	profile_free(p);

	/* the next interval: nothing allocated, the blocks still in use */
	pb_reset(pb);
	pb_add_record(pb, free_rec(A, 0x1010));
	p = pb_finish(pb, NULL);
	sum_event(p, PROF_EV_ALLOC, &b, &o);
	T_CHECK("alloc_interval_resets_allocated", b == 0, "%llu bytes",
		(unsigned long long)b);
	sum_event(p, PROF_EV_INUSE, &b, &o);
	T_CHECK("alloc_inuse_carried_over", b == 6400 + (1 << 20) && o == 101,
		"%llu bytes %llu objects", (unsigned long long)b,
		(unsigned long long)o);
	profile_free(p);

	/* the process exits: in use at its exit, then gone */
	pb_reset(pb);
	/* as the session hands it on: to the process model */
	proc_table_event(procs, &(struct proc_event){
		.type = PROC_EV_EXIT, .pid = A,
		.create = pb_keeps_pid(pb, A) && pb_holds_blocks(pb) });
	p = pb_finish(pb, NULL);
	sum_event(p, PROF_EV_INUSE, &b, &o);
	T_CHECK("alloc_inuse_at_exit", b == 6400 + (1 << 20), "%llu bytes",
		(unsigned long long)b);
	profile_free(p);
	pb_reset(pb);
	p = pb_finish(pb, NULL);
	sum_event(p, PROF_EV_INUSE, &b, &o);
	T_CHECK("alloc_inuse_gone_after_exit", b == 0 && p && p->nr_samples == 0,
		"%llu bytes, %zu samples", (unsigned long long)b,
		p ? p->nr_samples : 0);
	profile_free(p);
	pb_free(pb);
	proc_table_free(procs);
}

/* Off-CPU intervals of one stack stay apart by how the thread waited. */
static void test_offcpu_state(void)
{
	const uint32_t S = 4000000021u;
	struct profile_builder *pb = pb_new(NULL, NULL);
	struct ember_sample *s;
	struct profile *p;
	int sleeping = 0, disk = 0;

	s = (void *)sample(EMBER_REC_OFFCPU, S, S, "waiter", 1, 2, 0x700, 1000);
	s->state = EMBER_STATE_SLEEPING;
	pb_add_record(pb, &s->hdr);
	pb_add_record(pb, &s->hdr);
	s->state = EMBER_STATE_UNINTERRUPTIBLE;
	pb_add_record(pb, &s->hdr);
	p = pb_finish(pb, NULL);
	for (size_t i = 0; p && i < p->nr_samples; i++) {
		const char *n = prof_offcpu_state_name(p->samples[i].offcpu_state);

		if (n && !strcmp(n, "sleeping"))
			sleeping += (int)p->samples[i].count;
		else if (n && !strcmp(n, "disk"))
			disk += (int)p->samples[i].count;
	}
	T_CHECK("offcpu_state_kept_apart", p && p->nr_samples == 2 &&
		sleeping == 2 && disk == 1, "%zu samples, %d sleeping, %d disk",
		p ? p->nr_samples : 0, sleeping, disk);
	T_CHECK("offcpu_state_names", !prof_offcpu_state_name(EMBER_STATE_NONE) &&
		!strcmp(prof_offcpu_state_name(EMBER_STATE_RUNNABLE), "preempted"),
		"state names changed");
	profile_free(p);
	pb_free(pb);
}

/*
 * A late timer's sample (ember_sample.periods > 1) is counted as late.
 * Where the task's CPU clock counted the missed periods
 * (late_periods_are_cpu) it counts and weighs them; on a guest that keeps
 * steal out of CPU time it stays one sample of one period. Off-CPU
 * records ignore the field.
 */
static void test_late_periods_case(bool are_cpu)
{
	const uint32_t L = 4000000031u;
	struct pb_options o = { .late_periods_are_cpu = are_cpu };
	struct profile_builder *pb = pb_new(&o, NULL);
	uint64_t want_count = are_cpu ? 5 : 3, want_weight = are_cpu ? 5000 : 3000;
	struct ember_sample *s;
	struct profile *p;
	const struct prof_sample *ps;

	s = (void *)sample(EMBER_REC_SAMPLE, L, L, "late", 0, 2, 0x900, 3000);
	s->periods = 3;
	pb_add_record(pb, &s->hdr);
	s = (void *)sample(EMBER_REC_SAMPLE, L, L, "late", 0, 2, 0x900, 1000);
	pb_add_record(pb, &s->hdr);	/* periods 0: one */
	s->periods = 1;
	pb_add_record(pb, &s->hdr);
	s = (void *)sample(EMBER_REC_OFFCPU, L, L, "late", 0, 2, 0x900, 5000);
	s->periods = 9;			/* not a clock's: ignored */
	pb_add_record(pb, &s->hdr);
	p = pb_finish(pb, NULL);
	ps = p ? find(p, L, 0x900) : NULL;
	T_CHECK(are_cpu ? "late_periods_applied" : "late_periods_counted",
		ps && ps->count == want_count && ps->weight_ns == want_weight &&
		p->meta.late_applied == are_cpu, "count %llu weight %llu",
		ps ? (unsigned long long)ps->count : 0ull,
		ps ? (unsigned long long)ps->weight_ns : 0ull);
	T_CHECK(are_cpu ? "late_periods_applied_meta" : "late_periods_meta", p && p->meta.samples[PROF_EV_CPU] == 3 &&
		p->meta.late_samples == 1 && p->meta.late_periods == 2,
		"samples %llu late %llu +%llu",
		p ? (unsigned long long)p->meta.samples[PROF_EV_CPU] : 0ull,
		p ? (unsigned long long)p->meta.late_samples : 0ull,
		p ? (unsigned long long)p->meta.late_periods : 0ull);
	for (size_t i = 0; p && i < p->nr_samples; i++)
		if (p->samples[i].event == PROF_EV_OFFCPU)
			T_CHECK(are_cpu ? "late_periods_applied_not_offcpu" :
					  "late_periods_not_offcpu",
				p->samples[i].count == 1, "off-CPU count %llu",
				(unsigned long long)p->samples[i].count);
	profile_free(p);
	pb_free(pb);
}

static void test_late_periods(void)
{
	test_late_periods_case(false);
	test_late_periods_case(true);
}

int main(void)
{
	/* pids far above pid_max: /proc lookups find nothing, as in tests */
	const uint32_t P = 4000000001u, Q = 4000000002u;
	struct profile_builder *pb = pb_new(NULL, NULL);
	struct pb_counters c;
	struct profile *p;
	const struct prof_sample *ps;

	for (int i = 0; i < 5; i++)
		pb_add_record(pb, sample(EMBER_REC_SAMPLE, P, P, "prog", 2, 3, 0x100, 1000));
	pb_add_record(pb, sample(EMBER_REC_SAMPLE, P, P + 1, "worker", 2, 3, 0x100, 1000));
	pb_add_record(pb, sample(EMBER_REC_SAMPLE, P, P, "prog", 2, 3, 0x200, 1000));
	pb_add_record(pb, sample(EMBER_REC_OFFCPU, P, P, "prog", 2, 3, 0x100, 777));
	pb_add_record(pb, sample(EMBER_REC_SAMPLE, Q, Q, "other", 0, 1, 0x300, 1000));
	pb_get_counters(pb, &c);
	T_CHECK("agg_unique_stacks", c.unique_stacks == 5, "%zu unique", c.unique_stacks);
	T_CHECK("agg_samples_counted", c.samples[PROF_EV_CPU] == 8 &&
		c.samples[PROF_EV_OFFCPU] == 1, "cpu %llu off %llu",
		(unsigned long long)c.samples[PROF_EV_CPU],
		(unsigned long long)c.samples[PROF_EV_OFFCPU]);
	T_CHECK("agg_processes", c.processes == 2, "%u processes", c.processes);

	p = pb_finish(pb, NULL);
	T_CHECK("finish_ok", p != NULL, "NULL profile");
	if (!p)
		return 1;
	ps = find(p, P, 0x100);
	T_CHECK("agg_merge_identical", ps && ps->count == 5 + 0 && ps->event == PROF_EV_CPU,
		"count %llu", ps ? (unsigned long long)ps->count : 0ull);
	T_CHECK("agg_weight_summed", ps && ps->weight_ns == 5000, "weight %llu",
		ps ? (unsigned long long)ps->weight_ns : 0ull);
	T_CHECK("agg_frames_kernel_first", ps && ps->nr_frames == 5 &&
		ps->frames[0]->kind == PROF_FRAME_KERNEL &&
		ps->frames[1]->kind == PROF_FRAME_KERNEL &&
		ps->frames[2]->kind != PROF_FRAME_KERNEL &&
		ps->frames[4]->address == 0x104, "frame layout wrong");
	T_CHECK("agg_process_linked", ps && ps->process && ps->process->pid == P &&
		!strcmp(ps->process->comm, "prog"), "process missing or misnamed");
	ps = find(p, P + 1, 0x100);
	T_CHECK("agg_threads_apart", ps && ps->count == 1 &&
		!strcmp(ps->thread_name, "worker"), "thread sample missing");
	T_CHECK("agg_process_count", p->nr_processes == 2, "%zu processes", p->nr_processes);
	T_CHECK("agg_meta_samples", p->meta.samples[PROF_EV_CPU] == 8, "meta samples %llu",
		(unsigned long long)p->meta.samples[PROF_EV_CPU]);
	{
		size_t off = 0;

		for (size_t i = 0; i < p->nr_samples; i++)
			if (p->samples[i].event == PROF_EV_OFFCPU)
				off += p->samples[i].weight_ns == 777;
		T_CHECK("agg_event_apart", off == 1, "off-CPU sample merged with on-CPU");
	}
	profile_free(p);

	/* reset: an interval starts empty */
	pb_reset(pb);
	pb_get_counters(pb, &c);
	T_CHECK("reset_empties", c.unique_stacks == 0 && c.samples[PROF_EV_CPU] == 0,
		"%zu stacks after reset", c.unique_stacks);
	p = pb_finish(pb, NULL);
	T_CHECK("reset_profile_empty", p && p->nr_samples == 0, "samples after reset");
	profile_free(p);
	pb_free(pb);

	/* bounds: a full table keeps aggregating known stacks, counts the rest */
	{
		struct pb_options o = { .max_stacks = 3 };

		pb = pb_new(&o, NULL);
		for (int i = 0; i < 10; i++)
			pb_add_record(pb, sample(EMBER_REC_SAMPLE, P, P, "prog", 1, 1,
						 0x1000 * (i + 1), 1));
		pb_add_record(pb, sample(EMBER_REC_SAMPLE, P, P, "prog", 1, 1, 0x1000, 1));
		pb_get_counters(pb, &c);
		T_CHECK("bound_max_stacks", c.unique_stacks == 3 && c.dropped_stacks == 7,
			"%zu stacks, %llu dropped", c.unique_stacks,
			(unsigned long long)c.dropped_stacks);
		T_CHECK("bound_known_still_counted", c.samples[PROF_EV_CPU] == 4,
			"%llu samples", (unsigned long long)c.samples[PROF_EV_CPU]);
		p = pb_finish(pb, NULL);
		T_CHECK("bound_dropped_in_meta", p && p->meta.dropped_stacks == 7,
			"meta.dropped_stacks wrong");
		profile_free(p);
		pb_free(pb);
	}
	{
		struct pb_options o = { .max_bytes = 64 * 1024 };

		pb = pb_new(&o, NULL);
		for (int i = 0; i < 20000; i++)
			pb_add_record(pb, sample(EMBER_REC_SAMPLE, P, P, "prog", 60, 60,
						 0x10000ull * (i + 1), 1));
		pb_get_counters(pb, &c);
		T_CHECK("bound_max_bytes", c.bytes <= 64 * 1024 && c.dropped_stacks > 0 &&
			c.unique_stacks + c.dropped_stacks == 20000,
			"%zu bytes, %zu stacks, %llu dropped", c.bytes, c.unique_stacks,
			(unsigned long long)c.dropped_stacks);
		pb_free(pb);
	}

	/* filters, idle, lost */
	{
		uint32_t keep = Q;
		struct pb_options o = { .pids = &keep, .nr_pids = 1, .max_timestamps = 4 };
		struct ember_lost l = { .hdr = { EMBER_REC_LOST, 0, sizeof(l) }, .lost = 42 };
		struct ember_sample *s;

		pb = pb_new(&o, NULL);
		pb_add_record(pb, sample(EMBER_REC_SAMPLE, P, P, "prog", 1, 1, 0x10, 1));
		for (int i = 0; i < 6; i++)
			pb_add_record(pb, sample(EMBER_REC_SAMPLE, Q, Q, "other", 1, 1, 0x10, 1));
		sample(EMBER_REC_SAMPLE, Q, Q, "other", 1, 1, 0x20, 1);
		s = (void *)buf;
		s->flags = EMBER_SF_IDLE;
		pb_add_record(pb, &s->hdr);
		pb_add_record(pb, &l.hdr);
		pb_get_counters(pb, &c);
		T_CHECK("filter_pids", c.samples[PROF_EV_CPU] == 6 && c.filtered == 2,
			"%llu kept, %llu filtered", (unsigned long long)c.samples[PROF_EV_CPU],
			(unsigned long long)c.filtered);
		p = pb_finish(pb, NULL);
		T_CHECK("lost_in_meta", p && p->meta.lost == 42, "lost %llu",
			p ? (unsigned long long)p->meta.lost : 0ull);
		T_CHECK("timestamps_bounded", p && p->nr_samples == 1 &&
			p->samples[0].nr_timestamps == 4 &&
			p->samples[0].timestamps_ns[0] > 1000000000ull,
			"timestamps not bounded to 4 or not converted to realtime");
		profile_free(p);
		pb_free(pb);
	}
	{
		/*
		 * User stacks from frame-pointer walks through code without
		 * frame pointers: ASCII read as a return address, a kernel-half
		 * pointer. Cut there (not later frames), counted; the highest
		 * 5-level-paging user address and a stack without garbage stay.
		 */
		static const uint64_t bad[] = {
			0x2e2f67756265642full, 0xffff88803d2326b8ull,
			0x8000000000000000ull, 0x0100000000000000ull,
		};
		struct profile_builder *pb = pb_new(NULL, NULL);
		struct ember_sample *s;
		const struct prof_sample *cut;
		bool ok = true;

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			sample(EMBER_REC_SAMPLE, P, P, "fp", 1, 5, 0x1000 * (i + 1), 0);
			s = (void *)buf;
			s->ips[1 + 2] = bad[i];	/* user frames 0, 1 kept */
			pb_add_record(pb, &s->hdr);
		}
		sample(EMBER_REC_SAMPLE, P, P, "fp", 1, 3, 0x9000, 0);
		s = (void *)buf;
		s->ips[1] = 0x7fffffff0000ull;
		s->ips[2] = 0x00ffffffffffffffull;	/* 56-bit user space: legal */
		s->ips[3] = 0x401000;
		pb_add_record(pb, &s->hdr);
		sample(EMBER_REC_SAMPLE, P, P, "fp", 1, 2, 0xa000, 0);
		s = (void *)buf;
		s->ips[1] = 0xffffffff81000000ull;	/* user leaf itself bad */
		pb_add_record(pb, &s->hdr);
		/* a return address of 0: the stack's end, not cut, not a frame */
		sample(EMBER_REC_SAMPLE, P, P, "fp", 1, 3, 0xb000, 0);
		s = (void *)buf;
		s->ips[2] = 0;
		s->ips[3] = 0x1234;		/* after the end: dropped */
		pb_add_record(pb, &s->hdr);
		/* a leaf of 0 (a call through a null pointer) is a real frame */
		sample(EMBER_REC_SAMPLE, P, P, "fp", 1, 1, 0xc000, 0);
		s = (void *)buf;
		s->ips[1] = 0;
		pb_add_record(pb, &s->hdr);
		pb_get_counters(pb, &c);
		T_CHECK("user_cut_counted", c.cut_user_stacks == 5,
			"%llu cut, want 5", (unsigned long long)c.cut_user_stacks);
		p = pb_finish(pb, NULL);
		T_CHECK("user_cut_in_meta", p && p->meta.cut_user_stacks == 5,
			"meta %llu", p ? (unsigned long long)p->meta.cut_user_stacks : 0ull);
		for (size_t i = 0; p && i < sizeof(bad) / sizeof(bad[0]); i++) {
			cut = find(p, P, 0x1000 * (i + 1));
			ok = ok && cut && cut->nr_frames == 4 &&
			     cut->frames[2]->address == 0x1000 * (i + 1) + 2 &&
			     cut->frames[3] == &prof_cut_frame;
		}
		T_CHECK("user_cut_at_first_bad", p && ok,
			"a stack was not cut right before its bad frame");
		cut = p ? find(p, P, 0x9000) : NULL;
		T_CHECK("user_legit_kept", cut && cut->nr_frames == 4 &&
			cut->frames[2]->address == 0x00ffffffffffffffull,
			"a stack of valid user addresses lost frames");
		cut = p ? find(p, P, 0xa000) : NULL;
		T_CHECK("user_bad_leaf_cut", cut && cut->nr_frames == 2 &&
			cut->frames[1] == &prof_cut_frame,
			"a bad user leaf was kept, or the cut not marked");
		cut = p ? find(p, P, 0xb000) : NULL;
		T_CHECK("user_zero_return_ends_stack", cut && cut->nr_frames == 2 &&
			cut->frames[1]->address == 0xb001,
			"%u frames", cut ? cut->nr_frames : 0);
		cut = p ? find(p, P, 0xc000) : NULL;
		T_CHECK("user_zero_leaf_kept", cut && cut->nr_frames == 2 &&
			cut->frames[1]->address == 0,
			"%u frames", cut ? cut->nr_frames : 0);
		profile_free(p);
		pb_free(pb);
		/*
		 * Not proven whole: no EMBER_SF_USER_COMPLETE and a root that is
		 * no outermost function (nothing resolves here). A user task
		 * without any user frame is cut too; a kernel thread is not.
		 */
		pb = pb_new(NULL, NULL);
		sample(EMBER_REC_SAMPLE, P, P, "fp", 1, 3, 0xd000, 0);
		s = (void *)buf;
		s->flags = EMBER_SF_USER_FP;
		pb_add_record(pb, &s->hdr);
		sample(EMBER_REC_OFFCPU, P, P, "fp", 2, 0, 0xe000, 0);
		pb_add_record(pb, &s->hdr);
		sample(EMBER_REC_SAMPLE, P, P, "kworker", 2, 0, 0xf000, 0);
		s->flags = EMBER_SF_KTHREAD;
		pb_add_record(pb, &s->hdr);
		p = pb_finish(pb, NULL);
		cut = p ? find(p, P, 0xd000) : NULL;
		T_CHECK("user_unproven_cut", cut && cut->nr_frames == 5 &&
			cut->frames[4] == &prof_cut_frame,
			"an unproven stack shown whole (%u frames)",
			cut ? cut->nr_frames : 0);
		ok = false;
		for (size_t i = 0; p && i < p->nr_samples; i++)
			if (p->samples[i].event == PROF_EV_OFFCPU)
				ok = p->samples[i].nr_frames == 3 &&
				     p->samples[i].frames[2] == &prof_cut_frame;
		T_CHECK("user_missing_stack_cut", ok,
			"a user task without user frames shown whole");
		cut = p ? find(p, P, 0xf000) : NULL;
		T_CHECK("kthread_not_cut", cut && cut->nr_frames == 2,
			"a kernel thread got a [cut]");
		T_CHECK("user_unproven_counted", p &&
			p->meta.unproven_user_stacks == 2 &&
			p->meta.cut_user_stacks == 2, "unproven %llu cut %llu",
			p ? (unsigned long long)p->meta.unproven_user_stacks : 0ull,
			p ? (unsigned long long)p->meta.cut_user_stacks : 0ull);
		T_CHECK("user_limit_fn", pb_user_frames_valid(NULL, 0) == 0 &&
			PB_USER_ADDR_LIMIT == 0x0100000000000000ull, "limit changed");
		profile_free(p);
		pb_free(pb);
	}
	test_alloc();
	test_offcpu_state();
	test_late_periods();
	T_EXIT();
}
