/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A run's counters when it ends, for the one-shot and the service alike: the --stats FILE
 * (the status document's counter objects, from the table of daemon/session/counters.h) and,
 * with -v, the table's lines in the log. Both read one document, so they say the same numbers
 * as the status, /metrics and `xsprofctl status` of the same run.
 */
#ifndef XSPROF_DAEMON_SESSION_COUNTERS_REPORT_H
#define XSPROF_DAEMON_SESSION_COUNTERS_REPORT_H

#include <stdbool.h>

struct counters_snapshot;

/* Writes stats_path (when not NULL) and logs the lines at debug level (when verbose).
 * 0, or a negative errno (the file could not be written: said in the log). */
int counters_report__end(const struct counters_snapshot *c, const char *stats_path, bool verbose);

#endif
