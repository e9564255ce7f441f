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
 * An instance of the skeleton sharing every map of main's, in which only the CUDA programs of
 * want (SAMPLER_PROG_BITs of CUDA_CALL, CUDA_RET and USDT_LAUNCH) are loaded; with multi the
 * first two as uprobe_multi programs (Linux 6.6), else for perf-event uprobes. NULL when the
 * kernel refuses one of them.
 */
struct xsprof_bpf *cuda_progs__open(struct xsprof_bpf *main, uint32_t want, bool multi);

#endif
