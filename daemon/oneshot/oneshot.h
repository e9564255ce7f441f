/* SPDX-License-Identifier: Apache-2.0 */
/* One-shot mode: sample for a while, then name the stacks and write the outputs. */
#ifndef XSPROF_DAEMON_ONESHOT_ONESHOT_H
#define XSPROF_DAEMON_ONESHOT_ONESHOT_H

struct xsprofd_opts;

/*
 * Returns the process exit status: 0 done, 1 failed (message logged). In command mode
 * (-- CMD ARGS) it is CMD's status (128 + signal when killed), waited for if the profile
 * ended first; 125 when xsprofd failed, 126 / 127 when CMD could not be run or found.
 */
int oneshot__run(const struct xsprofd_opts *opts);

#endif
