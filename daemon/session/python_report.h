/* SPDX-License-Identifier: Apache-2.0 */
/* What the interpreter frames (daemon/python) did in a recording: one-shot log lines and the
 * service's status object. */
#ifndef XSPROF_DAEMON_SESSION_PYTHON_REPORT_H
#define XSPROF_DAEMON_SESSION_PYTHON_REPORT_H

struct recording;
struct json_object;

/* Log it (nothing without interpreter frames). */
void python_report__log(const struct recording *recording);
/* Add it to j as "python" (nothing without interpreter frames). */
void python_report__json(const struct recording *recording, struct json_object *j);

#endif
