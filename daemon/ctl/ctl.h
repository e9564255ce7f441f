/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What xsprofctl's subcommand files share with xsprofctl.c: its exit statuses, its one way to
 * ask xsprofd, and the readers of the arguments several subcommands take.
 */
#ifndef XSPROF_DAEMON_CTL_CTL_H
#define XSPROF_DAEMON_CTL_CTL_H

#include <stdbool.h>

struct json_object;
struct progress;
struct reply_buf;

enum {
	EXIT_OK = 0,
	EXIT_DAEMON_ERROR = 1,
	EXIT_USAGE = 2,
	EXIT_UNREACHABLE = 3,
	EXIT_DENIED = 4,
};

/* "xsprofctl: " fmt (with arg), and where the help is, on stderr; returns EXIT_USAGE. */
int ctl_usage_error(const char *fmt, const char *arg);
/*
 * One request. Returns an exit status; on HTTP success (2xx) *reply holds the body. Errors
 * from the daemon are printed with their hint. prog may be NULL.
 */
int ctl_request(const char *method, const char *path, const char *body, struct reply_buf *reply,
		struct progress *prog);
/* One process id (1..INT_MAX) into *ret; false on anything else. */
bool ctl_parse_pid(const char *s, long *ret);
/* "90", "90s", "5m", "1h" in seconds; 0 on junk. */
unsigned long ctl_parse_duration(const char *s);
/*
 * --gpu-mode (c 'M'), --weight ('W') or --correlate ('C') into req; 1 if c was one of them
 * (*ret_st: 0, or the usage error), 0 if not.
 */
int ctl_profile_opt(int c, const char *arg, struct json_object *req, int *ret_st);

/* xsprofctl dumps, dump [get], triggers (dumps.c): the flight recorder. */
int ctl_dumps(int argc, char **argv, bool json_out);
int ctl_dump(int argc, char **argv, bool json_out, double timeout_s);
int ctl_triggers(int argc, char **argv, bool json_out);
/* xsprofctl top (top.c): the hottest functions of the window or of an attachment. */
int ctl_top(int argc, char **argv);

#endif
