/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one-shot run's end-of-run report, in the log: by default what was captured, what was lost
 * (with the flag that helps) and why; with -v the internals (walks, tables, probes, own costs).
 */
#ifndef XSPROF_DAEMON_ONESHOT_ONESHOT_REPORT_H
#define XSPROF_DAEMON_ONESHOT_ONESHOT_REPORT_H

#include <stdbool.h>

struct ceiling_stats;
struct correlate_stats;
struct fold_stats;
struct gpu_waits_stats;
struct job_keep;
struct profile_data;
struct ranges;
struct recording;
struct symbolizer;
struct xsprofd_opts;

/* What a finished recording took, kept, lost and cost (name_cpu_s: naming its stacks). */
void oneshot_report__recording(struct recording *recording, const struct xsprofd_opts *o,
			       double name_cpu_s, const struct fold_stats *fs,
			       struct symbolizer *sym);
/* The CUDA probes' calls, sites and losses; always: even when no CUDA was met. */
void oneshot_report__cuda(struct recording *recording, bool always);
/* --mode offcpu, wall: the time off the CPU and what was lost of it. */
void oneshot_report__offcpu(struct recording *recording);
/* --max-cpu: what sampling cost and what was shed. */
void oneshot_report__ceiling(const struct ceiling_stats *st, unsigned int freq_hz,
			     struct recording *recording);
/* The run's counters from the table (daemon/session/counters.h): its lines with -v, and the
 * --stats file. 0, or -errno when the file could not be written (said in the log). */
int oneshot_report__counters(struct recording *recording, const struct xsprofd_opts *o,
			     struct symbolizer *sym);
/* -v: each BPF program's cost per run, while kernel.bpf_stats_enabled is 1. */
void oneshot_report__bpf_cost(struct recording *recording);
/* The GPU records received, the join's figures and the NVTX ranges. */
void oneshot_report__gpu(const struct xsprofd_opts *o, const struct profile_data *pd,
			 const struct correlate_stats *cs);
/* --correlate-check: the strategies side by side. */
void oneshot_report__join_check(const struct profile_data *pd);
/* --group-by range: the ranges the samples were matched to. */
void oneshot_report__ranges(const struct xsprofd_opts *o, const struct ranges *ranges);
/* The wall and merged views: the time CUDA calls waited for the GPU. */
void oneshot_report__waits(struct recording *recording, const struct gpu_waits_stats *ws);
/* --job, --rank: the processes kept and left out. */
void oneshot_report__keep(const struct xsprofd_opts *o, const struct job_keep *keep);

#endif
