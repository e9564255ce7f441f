/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --group-by: a root level above the process in flamegraphs, the process's systemd unit or
 * container (both read from its cgroup v2 path) or its name. Names are looked up once per
 * process and kept (at most GROUP_BY_MAX_PROCS; past that, looked up each time).
 */
#ifndef XSPROF_DAEMON_SESSION_GROUP_BY_H
#define XSPROF_DAEMON_SESSION_GROUP_BY_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/session/session_mode.h"

#define GROUP_BY_MAX_PROCS 4096

struct group_by;

/* what: not SESSION_GROUP_NONE nor a range. NULL with errno set. */
struct group_by *group_by__new(enum session_group what);
void group_by__free(struct group_by *g);

/* Look tgid's group up now, while it runs (a recording's on_new_process). */
void group_by__note(void *g, uint32_t tgid);

/* The root frame for process tgid: "nginx.service", "container 3f2a9c1b7d0e", "[no unit]",
 * "[host]" ... Valid while g lives. Matches the fold_root_fn and gpu_waits root signature. */
const char *group_by__root(void *g, uint32_t tgid);
/* pprof's label keys for the outermost frames of a grouped stack: {"unit", "process"} etc. */
const char *const *group_by__labels(const struct group_by *g, size_t *ret_n);

/* The unit and the container named in one /proc/PID/cgroup line ("0::/system.slice/x.service"):
 * written to buf, or an empty string when it names none. For tests. */
void group_by__unit_of(const char *cgroup_path, char *buf, size_t size);
void group_by__container_of(const char *cgroup_path, char *buf, size_t size);
/* The cgroup v2 path of process pid under proc ("/proc" when NULL), as
 * "/system.slice/x.service"; "" when gone or on cgroup v1 only. */
void group_by__cgroup_of(const char *proc, uint32_t pid, char *buf, size_t size);
/* The unit of process pid now, from its cgroup ("" when gone or in none). */
void group_by__unit_of_pid(uint32_t pid, char *buf, size_t size);

#endif
