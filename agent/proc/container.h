/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * container.id from a cgroup path, the way OTel resource detectors and
 * profilers read it. Recognized, innermost component first:
 *   docker      /docker/<id>, /system.slice/docker-<id>.scope
 *   containerd  /kubepods/.../pod<uid>/<id>, cri-containerd-<id>.scope
 *   cri-o       crio-<id>.scope, /crio-<id>
 *   podman      /machine.slice/libpod-<id>.scope[/container]
 * <id> is 64 lowercase hex digits. Conmon scopes (libpod-conmon-<id>,
 * crio-conmon-<id>) are the runtime monitor, not the container: skipped.
 */
#ifndef EMBER_CONTAINER_H
#define EMBER_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CONTAINER_ID_LEN 64

/* true and out = the id (out needs CONTAINER_ID_LEN + 1 bytes). */
bool container_id_from_cgroup(const char *cgroup_path, char *out, size_t len);
/* Same, from the text of a /proc/PID/cgroup file (v2 line, else any v1). */
bool container_id_from_proc_cgroup(const char *text, char *out, size_t len);
/* Same, from /proc/PID/cgroup (the cgroup v2 line, else any v1 line). */
bool container_id_for_pid(pid_t pid, char *out, size_t len);

#endif /* EMBER_CONTAINER_H */
