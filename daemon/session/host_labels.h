/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The labels a process carries into the profile stores (the export sinks): where it runs and
 * which job it is part of, as one label set "key=value\x1fkey=value" (output/model/profile.h's
 * PROFILE_LABEL_SET), looked up once per process and kept:
 * - systemd.unit, container.id (12 hex digits), from its cgroup v2 path (group_by.h's rules);
 * - k8s.pod.uid from the kubelet's cgroup layouts (systemd: kubepods[-QOS].slice/
 *   kubepods-QOS-pod<uid>.slice, dashes as underscores; cgroupfs: /kubepods[/QOS]/pod<uid>/),
 *   and k8s.namespace.name, k8s.pod.name from the kubelet's log directory of that pod
 *   (/var/log/pods/NAMESPACE_NAME_UID);
 * - job.id, job.rank, job.local_rank, job.world_size, job.launcher from its environment
 *   (daemon/base/proc_env.h).
 * Cardinality is capped: at most max_sets distinct sets (HOST_LABELS_MAX_SETS by default); a
 * process whose set would be one more gets "xsprof.labels=capped" and is counted. At most
 * HOST_LABELS_MAX_PROCS processes are kept; past that, looked up each time.
 */
#ifndef XSPROF_DAEMON_SESSION_HOST_LABELS_H
#define XSPROF_DAEMON_SESSION_HOST_LABELS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define HOST_LABELS_MAX_SETS  256
#define HOST_LABELS_MAX_PROCS 4096
#define HOST_LABELS_CAPPED    "xsprof.labels=capped"
/* The set of a process with none (a frame cannot be empty; it holds no "key=value"). */
#define HOST_LABELS_NONE "[none]"

struct host_labels;

/* proc: "/proc" (NULL) or a test's; pods: "/var/log/pods" (NULL) or a test's. NULL, errno set. */
struct host_labels *host_labels__new(const char *proc, const char *pods, size_t max_sets);
void host_labels__free(struct host_labels *h);

/* tgid's label set (HOST_LABELS_NONE when it has none); valid while h lives. A fold_root_fn. */
const char *host_labels__of(void *h, uint32_t tgid);
/* Forgets tgid's set: the next lookup reads it again (its exec: a new environment). Whether
 * it had one. */
bool host_labels__forget(struct host_labels *h, uint32_t tgid);
/* Distinct sets so far, and processes given the capped set. */
void host_labels__stats(const struct host_labels *h, size_t *ret_sets, uint64_t *ret_capped);

/* The pod uid a cgroup path names (dashes restored), or "". For tests. */
void host_labels__pod_uid(const char *cgroup, char *buf, size_t size);

#endif
