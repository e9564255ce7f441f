/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /proc/PID/stat, the fields the daemon uses: who a process is (its owner and start time: a
 * reused pid is another process) and its parent.
 */
#ifndef XSPROF_DAEMON_BASE_PROC_STAT_H
#define XSPROF_DAEMON_BASE_PROC_STAT_H

#include <stdint.h>
#include <sys/types.h>

struct proc_stat {
	char state; /* 'R', 'S', 'T' (stopped), ... (field 3) */
	pid_t ppid;
	uint64_t start_ticks; /* clock ticks since boot (field 22) */
	uid_t uid; /* the owner of the file: the process's user (root when not dumpable) */
};

/* pid's under proc_root ("/proc" when NULL). 0, -ENOENT or -ESRCH when it is gone, -EIO. */
int proc_stat__read(const char *proc_root, pid_t pid, struct proc_stat *ret);

#endif
