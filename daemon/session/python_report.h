/* SPDX-License-Identifier: Apache-2.0 */
/* What the interpreter frames (daemon/python) did in a recording: the one-shot's log lines (its
 * counters are rows of daemon/session/counters.c). */
#ifndef XSPROF_DAEMON_SESSION_PYTHON_REPORT_H
#define XSPROF_DAEMON_SESSION_PYTHON_REPORT_H

struct recording;

/* Log it (nothing without interpreter frames). */
void python_report__log(const struct recording *recording);

#endif
