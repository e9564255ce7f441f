/* SPDX-License-Identifier: Apache-2.0 */
/* One-shot mode: sample for a while, then name the stacks and write the outputs. */
#ifndef XSPROF_DAEMON_ONESHOT_ONESHOT_H
#define XSPROF_DAEMON_ONESHOT_ONESHOT_H

#include <stdarg.h>
#include <bpf/libbpf.h>

struct xsprofd_opts;
struct recording;
struct fold_stats;
struct symbolizer;

/*
 * Returns the process exit status: 0 done, 1 failed (message logged). In command mode
 * (-- CMD ARGS) it is CMD's status (128 + signal when killed), waited for if the profile
 * ended first; 125 when xsprofd failed, 126 / 127 when CMD could not be run or found.
 */
int oneshot__run(const struct xsprofd_opts *opts);

/* Log what a finished recording took, kept, lost and cost. */
void recording_report(struct recording *recording, const struct xsprofd_opts *o, double name_cpu_s,
		      const struct fold_stats *fs, struct symbolizer *sym);

#endif
