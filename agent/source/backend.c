// SPDX-License-Identifier: GPL-2.0-only
/*
 * --backend auto|kmod|bpf: which source to use, and one sentence saying
 * why. auto prefers the module (lowest overhead, works on kernels without
 * BPF) when it is loaded or can be loaded, and otherwise falls back to
 * eBPF by itself: a host without module support must just work.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "source/backend.h"

/* The eBPF backend may not be linked in (agent built without bpf/). */
#pragma weak ember_source_bpf

static bool read_int(const char *path, long *v)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fscanf(f, "%ld", v) == 1;
	fclose(f);
	return ok;
}

/* Run argv, capture its first output line in out; returns exit status. */
static int run_capture(char *const argv[], char *out, size_t out_len)
{
	int pfd[2], status = 0;
	ssize_t n = 0;
	pid_t pid;

	out[0] = '\0';
	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execvp(argv[0], argv);
		dprintf(2, "%s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	for (ssize_t r; (size_t)n < out_len - 1 &&
	     (r = read(pfd[0], out + n, out_len - 1 - n)) > 0;)
		n += r;
	out[n] = '\0';
	close(pfd[0]);
	out[strcspn(out, "\n")] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/*
 * Why no module can be loaded on this kernel at all (no module support,
 * kernel.modules_disabled), or 0.
 */
static int kmod_loading_blocked(char *why, size_t why_len)
{
	long disabled = 0;

	if (access("/proc/modules", F_OK)) {
		snprintf(why, why_len, "kernel without loadable module support");
		return -ENOTSUP;
	}
	if (read_int("/proc/sys/kernel/modules_disabled", &disabled) && disabled) {
		snprintf(why, why_len,
			 "module loading disabled (kernel.modules_disabled=1)");
		return -EPERM;
	}
	return 0;
}

/*
 * Try to load ember.ko: $EMBER_MODULE (a path, insmod) or the installed
 * module (modprobe). Returns 0 when the module then answers.
 */
static int kmod_try_load(char *why, size_t why_len)
{
	const char *path = getenv("EMBER_MODULE");
	char *mp[] = { "modprobe", "ember", NULL };
	char *im[] = { "insmod", (char *)path, NULL };
	char out[256], probe_why[160];
	int rc = kmod_loading_blocked(why, why_len);

	if (rc)
		return rc;
	if (geteuid() != 0) {
		snprintf(why, why_len,
			 "the ember module is not loaded and only root can load it");
		return -EPERM;
	}
	rc = run_capture(path && *path ? im : mp, out, sizeof(out));
	if (rc) {
		if (path && *path)
			snprintf(why, why_len, "insmod %s failed: %s", path,
				 out[0] ? out : "unknown error");
		else
			snprintf(why, why_len,
				 "the ember module is not loaded and modprobe ember failed (%s)",
				 out[0] ? out : "unknown error");
		return -ENOENT;
	}
	/* the genl family registers during module init: give it a moment */
	for (int i = 0; i < 20; i++) {
		if (!ember_source_kmod.probe(probe_why, sizeof(probe_why))) {
			snprintf(why, why_len, "loaded the ember module (%s)",
				 path && *path ? "insmod" : "modprobe ember");
			return 0;
		}
		usleep(50000);
	}
	snprintf(why, why_len, "loaded the ember module but it does not answer: %s",
		 probe_why);
	return -EIO;
}

/* Without loading: why the module cannot be loaded, or 0 if it might be. */
static int kmod_loadable(char *why, size_t why_len)
{
	char *mp[] = { "modprobe", "-n", "ember", NULL };
	char out[256];
	int rc = kmod_loading_blocked(why, why_len);

	if (rc)
		return rc;
	if (run_capture(mp, out, sizeof(out))) {
		snprintf(why, why_len,
			 "the ember module is neither loaded nor installed (%s)",
			 out[0] ? out : "modprobe -n ember failed");
		return -ENOENT;
	}
	snprintf(why, why_len,
		 "the ember module is installed but not loaded (modprobe ember)");
	return 0;
}

int backend_kmod_check(char *why, size_t why_len, bool try_load)
{
	char probe_why[256];
	int r = ember_source_kmod.probe(probe_why, sizeof(probe_why));

	if (!r) {
		snprintf(why, why_len, "the ember module is loaded");
		return 0;
	}
	if (r != -ENOENT) {
		snprintf(why, why_len, "%s", probe_why);
		return r;
	}
	if (!try_load) {
		r = kmod_loadable(why, why_len);
		return r ? r : 1;	/* 1: loadable, not loaded */
	}
	return kmod_try_load(why, why_len);
}

int backend_bpf_check(char *why, size_t why_len)
{
	if (!&ember_source_bpf || !ember_source_bpf.probe) {
		snprintf(why, why_len, "this ember was built without the eBPF backend");
		return -ENOTSUP;
	}
	return ember_source_bpf.probe(why, why_len);
}

const struct ember_source_ops *backend_choose(const char *want, char *why,
					      size_t why_len, char *err,
					      size_t err_len)
{
	char kwhy[256] = "", bwhy[256] = "";

	if (!want || !strcmp(want, "auto")) {
		if (!backend_kmod_check(kwhy, sizeof(kwhy), true)) {
			snprintf(why, why_len, "%s: using the module backend", kwhy);
			return &ember_source_kmod;
		}
		if (!backend_bpf_check(bwhy, sizeof(bwhy))) {
			snprintf(why, why_len, "%s: using eBPF", kwhy);
			return &ember_source_bpf;
		}
		snprintf(err, err_len,
			 "no backend can run here.\n"
			 "  module: %s\n  eBPF:   %s\n"
			 "Install and load ember.ko (modprobe ember), or run as root on a kernel\n"
			 "with BPF and BTF (/sys/kernel/btf/vmlinux) for the eBPF backend.",
			 kwhy, bwhy);
		return NULL;
	}
	if (!strcmp(want, "kmod")) {
		if (!backend_kmod_check(kwhy, sizeof(kwhy), true)) {
			snprintf(why, why_len, "%s: using the module backend (--backend kmod)",
				 kwhy);
			return &ember_source_kmod;
		}
		snprintf(err, err_len,
			 "the module backend cannot run: %s.\n"
			 "Load ember.ko (modprobe ember) or use --backend auto.", kwhy);
		return NULL;
	}
	if (!strcmp(want, "bpf")) {
		if (!backend_bpf_check(bwhy, sizeof(bwhy))) {
			snprintf(why, why_len, "using eBPF (--backend bpf)");
			return &ember_source_bpf;
		}
		snprintf(err, err_len, "the eBPF backend cannot run: %s", bwhy);
		return NULL;
	}
	snprintf(err, err_len, "unknown backend '%s': use auto, kmod or bpf", want);
	return NULL;
}
