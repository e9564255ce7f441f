/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uprobe_multi links: one link (one fd) holds many uprobes and detaches with one grace period,
 * where perf-event uprobes wait one each.
 */
#ifndef XSPROF_DAEMON_CUDA_UPROBE_MULTI_H
#define XSPROF_DAEMON_CUDA_UPROBE_MULTI_H

#include <linux/types.h>
#include <sys/types.h>

struct xsprof_bpf;

/* A link of prog_fd on cnt offsets of path, for pid (<= 0: every process): its fd, or -errno. */
int uprobe_multi__link(int prog_fd, const char *path, const unsigned long *offsets,
		       const __u64 *cookies, unsigned int cnt, pid_t pid);

/*
 * A second instance of the skeleton sharing every map of main's, in which only xsprof_cuda_call
 * is loaded, as a uprobe_multi program; NULL when the kernel refuses it (before Linux 6.6).
 */
struct xsprof_bpf *uprobe_multi__open_skel(struct xsprof_bpf *main);

#endif
