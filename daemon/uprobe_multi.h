/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uprobe_multi links (Linux 6.6), which this libbpf and these uapi headers predate: one link
 * for many offsets of one file, detached with one grace period (a perf-event uprobe waits one
 * each, ~0.1 s).
 */
#ifndef XSPROF_DAEMON_UPROBE_MULTI_H
#define XSPROF_DAEMON_UPROBE_MULTI_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

/* The kernel's numbers: BPF_LINK_CREATE, BPF_TRACE_UPROBE_MULTI, BPF_F_UPROBE_MULTI_RETURN. */
#define XS_BPF_LINK_CREATE	  28
#define XS_BPF_TRACE_UPROBE_MULTI 48
#define XS_UPROBE_MULTI_RETURN	  1u

/*
 * A link for prog_fd (loaded with expected attach type XS_BPF_TRACE_UPROBE_MULTI) on the n
 * offsets of the file at path, each with its cookie, for pid (<= 0: every process); return
 * probes when ret. The link's fd, or -errno.
 */
int uprobe_multi__attach(int prog_fd, pid_t pid, const char *path, const unsigned long *offs,
			 const __u64 *cookies, uint32_t n, bool ret);

#endif
