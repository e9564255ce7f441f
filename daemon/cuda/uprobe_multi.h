/* SPDX-License-Identifier: Apache-2.0 */
/*
 * uprobe_multi links: one link (one fd) holds many uprobes and detaches with one grace period,
 * where perf-event uprobes wait one each.
 */
#ifndef XSPROF_DAEMON_CUDA_UPROBE_MULTI_H
#define XSPROF_DAEMON_CUDA_UPROBE_MULTI_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct xsprof_bpf;

/*
 * A link for prog_fd (loaded with the uprobe_multi attach type) on cnt offsets of the file at
 * path, each with its cookie, for pid (<= 0: every process); return probes when ret. Its fd,
 * or -errno.
 */
int uprobe_multi__attach(int prog_fd, pid_t pid, const char *path, const unsigned long *offsets,
			 const __u64 *cookies, uint32_t cnt, bool ret);

/*
 * A second instance of the skeleton sharing every map of main's, in which only xsprof_cuda_call
 * and xsprof_cuda_ret are loaded, as uprobe_multi programs; NULL when the kernel refuses it (before Linux 6.6).
 */
struct xsprof_bpf *uprobe_multi__open_skel(struct xsprof_bpf *main);

#endif
