// SPDX-License-Identifier: GPL-2.0-only
/*
 * bpf-dump: run ember's eBPF backend (agent/source/source_bpf.c) and print
 * every record it delivers, one line each, then a STATS line. Used by
 * selftests/suites/20-bpf.sh and by anyone who wants to see the records.
 *
 *   bpf-dump [-d secs] [-F hz] [-e on,off,life,lock] [-p pid[,pid..]] [-c cgroup-dir]
 *            [-i] [-C] [-k frames] [-u frames] [-m offcpu-min-ns] [-s ppm]
 *            [-r ring-bytes] [-S stall-ms] [-P pid[,pid..]] [-q]
 *            [-L lock-min-ns] [-W] [-- command args...]
 *
 * -W: with -e lock, the wakers' records too (EMBER_F_LOCK_WAKER).
 *
 * -P switches the pid filter to these pids (set_filter) half-way through,
 * printing "FILTER begin=<ns> time=<ns>" (CLOCK_MONOTONIC, before and
 * after the call: records stamped in between may carry either pid).
 *
 * With a command, bpf-dump forks it, filters on its pid, starts the
 * backend, then lets it exec, and stops after it exits (and -d seconds at
 * most); its exit status is printed as "CHILD pid=N status=S".
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "proc/pac_mask.h"
#include "source/source.h"

static bool quiet;
static pid_t maps_pid;		/* print this process's maps once it exec'd */
static uint64_t nrec[__EMBER_REC_MAX], lost_sum;
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void print_ips(const char *tag, const __u64 *ips, unsigned int n)
{
	printf(" %s=", tag);
	for (unsigned int i = 0; i < n; i++)
		printf("%s%llx", i ? "," : "", (unsigned long long)ips[i]);
}

/* What an agent reads on EXEC: lets the tests symbolize user frames. */
static void print_maps(pid_t pid)
{
	char path[64], line[1024];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("MAPS pid=%d %s", pid, line);
	fclose(f);
}

static void on_record(const struct ember_rec_header *h, void *ctx)
{
	(void)ctx;
	if (h->type < __EMBER_REC_MAX)
		nrec[h->type]++;
	if (h->type == EMBER_REC_LOST)
		lost_sum += ((const struct ember_lost *)h)->lost;
	if (quiet)
		return;
	switch (h->type) {
	case EMBER_REC_SAMPLE:
	case EMBER_REC_OFFCPU: {
		const struct ember_sample *s = (const void *)h;

		printf("%s time=%llu weight=%llu cg=%llu"
		       " pid=%u tid=%u cpu=%u flags=0x%x state=%u periods=%u nk=%u nu=%u comm=%s",
		       h->type == EMBER_REC_SAMPLE ? "SAMPLE" : "OFFCPU",
		       (unsigned long long)s->time_ns, (unsigned long long)s->weight_ns,
		       (unsigned long long)s->cgroup_id, s->pid, s->tid,
		       s->cpu, s->flags, s->state, s->periods, s->nr_kernel,
		       s->nr_user, s->comm);
		print_ips("k", s->ips, s->nr_kernel);
		print_ips("u", s->ips + s->nr_kernel, s->nr_user);
		printf("\n");
		break;
	}
	case EMBER_REC_LOCK:
	case EMBER_REC_LOCK_WAKER: {
		const struct ember_sample *s = (const void *)h;

		printf("%s time=%llu weight=%llu pid=%u tid=%u cpu=%u flags=0x%x nk=%u nu=%u comm=%s",
		       h->type == EMBER_REC_LOCK ? "LOCK" : "WAKER",
		       (unsigned long long)s->time_ns, (unsigned long long)s->weight_ns,
		       s->pid, s->tid, s->cpu, s->flags, s->nr_kernel, s->nr_user, s->comm);
		if (h->type == EMBER_REC_LOCK) {
			const struct ember_lock_wait *w = EMBER_LOCK_WAIT(s);

			printf(" addr=0x%llx start=%llu waker=%u lkind=%u op=%u lflags=0x%x",
			       (unsigned long long)w->addr, (unsigned long long)w->start_ns,
			       w->waker_tid, w->kind, w->futex_op, w->flags);
		} else {
			const struct ember_lock_waker *w = EMBER_LOCK_WAKER(s);

			printf(" addr=0x%llx start=%llu wpid=%u wtid=%u",
			       (unsigned long long)w->addr, (unsigned long long)w->start_ns,
			       w->waiter_pid, w->waiter_tid);
		}
		print_ips("k", s->ips, s->nr_kernel);
		print_ips("u", s->ips + s->nr_kernel, s->nr_user);
		printf("\n");
		break;
	}
	case EMBER_REC_EXEC: {
		const struct ember_exec *e = (const void *)h;

		printf("EXEC time=%llu pid=%u tid=%u comm=%s file=%s\n",
		       (unsigned long long)e->time_ns, e->pid, e->tid, e->comm, e->filename);
		if (maps_pid && e->pid == (uint32_t)maps_pid) {
			print_maps(maps_pid);
			maps_pid = 0;
		}
		break;
	}
	case EMBER_REC_MMAP: {
		const struct ember_mmap *m = (const void *)h;

		printf("MMAP time=%llu pid=%u tid=%u start=%llx len=%llx pgoff=%llx dev=%u:%u ino=%llu prot=%x flags=%x gen=%08x path=%s\n",
		       (unsigned long long)m->time_ns, m->pid, m->tid,
		       (unsigned long long)m->start, (unsigned long long)m->len,
		       (unsigned long long)m->pgoff, m->dev_major, m->dev_minor,
		       (unsigned long long)m->ino, m->prot, m->flags, m->mm_gen,
		       m->path);
		break;
	}
	case EMBER_REC_EXIT: {
		const struct ember_exit *e = (const void *)h;

		printf("EXIT time=%llu pid=%u tid=%u comm=%s code=%d\n",
		       (unsigned long long)e->time_ns, e->pid, e->tid, e->comm, e->exit_code);
		break;
	}
	case EMBER_REC_LOST: {
		const struct ember_lost *l = (const void *)h;

		printf("LOST cpu=%u lost=%llu\n", l->cpu, (unsigned long long)l->lost);
		break;
	}
	case EMBER_REC_UNWIND_MISS: {
		const struct ember_unwind_miss *m = (const void *)h;

		printf("MISS time=%llu pid=%u tid=%u pc=0x%llx\n",
		       (unsigned long long)m->time_ns, m->pid, m->tid,
		       (unsigned long long)m->pc);
		break;
	}
	default:
		printf("TYPE%u size=%u\n", h->type, h->size);
	}
}

static uint32_t *parse_pids(char *arg, size_t *nr)
{
	uint32_t *pids = calloc(EMBER_MAX_FILTER_PIDS, sizeof(*pids));
	char *tok, *save = NULL;

	*nr = 0;
	for (tok = strtok_r(arg, ",", &save); tok && pids && *nr < EMBER_MAX_FILTER_PIDS;
	     tok = strtok_r(NULL, ",", &save))
		pids[(*nr)++] = strtoul(tok, NULL, 10);
	return pids;
}

static uint32_t parse_events(const char *arg)
{
	uint32_t ev = 0;

	if (strstr(arg, "on"))
		ev |= EMBER_EV_ONCPU;
	if (strstr(arg, "off"))
		ev |= EMBER_EV_OFFCPU;
	if (strstr(arg, "life"))
		ev |= EMBER_EV_LIFECYCLE;
	if (strstr(arg, "lock"))
		ev |= EMBER_EV_LOCK;
	return ev;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct ember_source_config cfg = {
		.events = EMBER_EV_ONCPU,
		.freq_hz = EMBER_DEFAULT_FREQ,
		.kstack_max = EMBER_DEFAULT_FRAMES,
		.ustack_max = EMBER_DEFAULT_FRAMES,
	};
	const struct ember_source_ops *ops = &ember_source_bpf;
	struct ember_source_stats st;
	struct ember_source *src;
	double secs = 3, end;
	unsigned int stall_ms = 0;
	uint32_t *pids = NULL, *new_pids = NULL, child_pid;
	size_t nr_new = 0;
	double half = 0;
	pid_t child = 0;
	int go[2], status;
	char err[512];
	struct stat sb;
	int opt, ret;

	while ((opt = getopt(argc, argv, "+d:F:e:p:c:iCk:u:m:s:r:S:P:qL:W")) != -1) {
		switch (opt) {
		case 'd': secs = atof(optarg); break;
		case 'F': cfg.freq_hz = strtoul(optarg, NULL, 10); break;
		case 'e': cfg.events = parse_events(optarg); break;
		case 'p':
			pids = parse_pids(optarg, &cfg.nr_pids);
			cfg.pids = pids;
			break;
		case 'c':
			if (stat(optarg, &sb)) {
				perror(optarg);
				return 2;
			}
			cfg.cgroup_id = sb.st_ino;
			break;
		case 'i': cfg.include_idle = true; break;
		case 'C': cfg.use_cycles = true; break;
		case 'k': cfg.kstack_max = strtoul(optarg, NULL, 10); break;
		case 'u': cfg.ustack_max = strtoul(optarg, NULL, 10); break;
		case 'm': cfg.offcpu_min_ns = strtoull(optarg, NULL, 10); break;
		case 's': cfg.offcpu_sample_ppm = strtoul(optarg, NULL, 10); break;
		case 'r': cfg.ring_bytes = strtoul(optarg, NULL, 10); break;
		case 'S': stall_ms = strtoul(optarg, NULL, 10); break;
		case 'q': quiet = true; break;
		case 'P': new_pids = parse_pids(optarg, &nr_new); break;
		case 'L': cfg.lock_min_ns = strtoull(optarg, NULL, 10); break;
		case 'W': cfg.lock_waker = true; break;
		default:
			fprintf(stderr, "usage: see the comment at the top of selftests/bpf/bpf-dump.c\n");
			return 2;
		}
	}
	if (optind < argc) {
		if (pipe(go)) {
			perror("pipe");
			return 2;
		}
		child = fork();
		if (child < 0) {
			perror("fork");
			return 2;
		}
		if (child == 0) {
			char c;

			close(go[1]);
			dup2(2, 1);	/* stdout is for records */
			if (read(go[0], &c, 1) != 1)
				_exit(126);
			execvp(argv[optind], argv + optind);
			perror(argv[optind]);
			_exit(127);
		}
		close(go[0]);
		child_pid = child;
		maps_pid = child;
		cfg.pids = &child_pid;
		cfg.nr_pids = 1;
	}
	setenv("EMBER_BPF_VERBOSE", "1", 0);	/* which flavours loaded */
	ret = ops->probe(err, sizeof(err));
	if (ret) {
		fprintf(stderr, "bpf-dump: eBPF backend unavailable: %s\n", err);
		return 1;
	}
	/* aarch64: the kernel's PAC mask, as the agent's session passes it */
	ret = proc_pac_insn_mask(&cfg.pac_mask);
	if (ret)
		fprintf(stderr, "bpf-dump: PAC mask: %s (stripping nothing)\n",
			strerror(-ret));
	ret = ops->open(&src, &cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "bpf-dump: open: %s\n", err);
		return 1;
	}
	ret = ops->start(src);
	if (ret) {
		fprintf(stderr, "bpf-dump: start: %s\n", strerror(-ret));
		ops->close(src);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("START time=%.0f\n", now_s() * 1e9);
	fflush(stdout);
	if (child > 0 && write(go[1], "g", 1) != 1)
		perror("write");
	if (stall_ms)
		usleep(stall_ms * 1000);
	end = now_s() + secs;
	half = now_s() + secs / 2;
	while (!stop && now_s() < end) {
		if (new_pids && now_s() >= half) {
			double begin = now_s();

			ret = ops->set_filter(src, new_pids, nr_new, 0);
			if (ret)
				fprintf(stderr, "bpf-dump: set_filter: %s\n", strerror(-ret));
			printf("FILTER begin=%.0f time=%.0f\n", begin * 1e9,
			       now_s() * 1e9);
			free(new_pids);
			new_pids = NULL;
		}
		if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
			printf("CHILD pid=%d status=%d\n", child, status);
			child = 0;
			/* its exit record may still be on its way */
			end = now_s() + 0.3;
		}
		ret = ops->poll(src, 100, on_record, NULL);
		if (ret < 0 && ret != -EINTR) {
			fprintf(stderr, "bpf-dump: poll: %s\n", strerror(-ret));
			break;
		}
	}
	ops->stop(src);
	while (ops->poll(src, 0, on_record, NULL) > 0)
		;
	ops->stats(src, &st);
	printf("STATS samples=%" PRIu64 " records=%" PRIu64 " lost=%" PRIu64
	       " filtered=%" PRIu64 " handler_ns=%" PRIu64 " overflow=%" PRIu64
	       " corrupt=%" PRIu64 " cpus=%u got_sample=%" PRIu64 " got_offcpu=%" PRIu64
	       " got_exec=%" PRIu64 " got_exit=%" PRIu64 " got_lost=%" PRIu64
	       " extra=%" PRIu64 " got_miss=%" PRIu64 " lock_waits=%" PRIu64
	       " lock_overflow=%" PRIu64 " lock_wakers=%" PRIu64 " got_lock=%" PRIu64
	       " got_waker=%" PRIu64 "\n",
	       st.samples, st.records, st.lost, st.filtered, st.handler_ns,
	       st.offcpu_overflow, st.corrupt, st.nr_cpus,
	       nrec[EMBER_REC_SAMPLE], nrec[EMBER_REC_OFFCPU], nrec[EMBER_REC_EXEC],
	       nrec[EMBER_REC_EXIT], lost_sum, st.extra_records,
	       nrec[EMBER_REC_UNWIND_MISS], st.lock_waits, st.lock_overflow,
	       st.lock_wakers, nrec[EMBER_REC_LOCK], nrec[EMBER_REC_LOCK_WAKER]);
	ops->close(src);
	if (child > 0) {
		kill(child, SIGTERM);
		waitpid(child, NULL, 0);
	}
	free(pids);
	return 0;
}
