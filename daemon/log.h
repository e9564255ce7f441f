/* SPDX-License-Identifier: Apache-2.0 */
/* Daemon logging: stderr, with a "<N>" syslog priority prefix under systemd (JOURNAL_STREAM) so
 * the journal keeps each line's level. */
#ifndef XSPROF_DAEMON_LOG_H
#define XSPROF_DAEMON_LOG_H

#include <syslog.h>

extern int log_max_level; /* LOG_INFO by default; -v raises it to LOG_DEBUG */

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)   log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
