/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup v2 directory a --cgroup or --unit filter names: a path (absolute, or relative to
 * the cgroup2 mount), or a systemd unit looked up under the mount (system.slice/NAME,
 * user.slice/..., wherever systemd put it).
 */
#ifndef XSPROF_DAEMON_PROBES_CGROUP_PATH_H
#define XSPROF_DAEMON_PROBES_CGROUP_PATH_H

#include <stddef.h>

/* Where cgroup2 is mounted (/sys/fs/cgroup, or .../unified on hybrid systems). 0 or -ENOENT. */
int cgroup_path__mount(char *buf, size_t size);
/*
 * Open the directory of a cgroup (path) or of a unit (unit, e.g. "nginx.service"); exactly one
 * of them. Returns an O_RDONLY fd, or -ENOENT (no such cgroup or unit), -ENOTDIR, -EMEDIUMTYPE
 * (not on cgroup2), -errno; the directory found goes into ret_path.
 */
int cgroup_path__open(const char *path, const char *unit, char *ret_path, size_t size);

#endif
