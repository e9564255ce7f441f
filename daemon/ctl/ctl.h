/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What xsprofctl's command files share (args.c): its exit statuses, its usage error, and the
 * readers of the arguments several commands take.
 */
#ifndef XSPROF_DAEMON_CTL_CTL_H
#define XSPROF_DAEMON_CTL_CTL_H

#include <stdbool.h>

#include "output/output.h"

struct json_object;

enum {
	EXIT_OK = 0,
	EXIT_DAEMON_ERROR = 1,
	EXIT_USAGE = 2,
	EXIT_UNREACHABLE = 3,
	EXIT_DENIED = 4,
};

#define CTL_MAX_DURATION_S (7 * 24 * 3600.0) /* the daemon's own limit is lower */

/* "xsprofctl: " fmt (with arg), and where the help is, on stderr; returns EXIT_USAGE. */
int ctl_usage_error(const char *fmt, const char *arg);
/* One process id (1..INT_MAX) into *ret; false on anything else. */
bool ctl_parse_pid(const char *s, long *ret);
/* Samples per second, 1..10000; 0 on anything else. */
long ctl_parse_freq(const char *arg);
/* "90", "90s", "5m", "1h" in seconds; 0 on junk. */
unsigned long ctl_parse_duration(const char *s);
/* -o FILE's directory can be written (0), or the usage error said (EXIT_USAGE). */
int ctl_check_writable(const char *out);
/*
 * -o FILE of a command whose answer comes from where (enum output_where): its format into
 * *ret, or the usage error said.
 */
int ctl_check_output(const char *out, unsigned int where, enum output_format *ret);
/*
 * --gpu-mode (c 'M'), --weight ('W') or --correlate ('C') into req; 1 if c was one of them
 * (*ret_st: 0, or the usage error), 0 if not.
 */
int ctl_profile_opt(int c, const char *arg, struct json_object *req, int *ret_st);

/* The long options ctl_profile_opt reads, and --no-children ('N'). */
#define PROFILE_LONG_OPTS                                                                     \
	{"gpu-mode", required_argument, NULL, 'M'}, {"weight", required_argument, NULL, 'W'}, \
		{"correlate", required_argument, NULL, 'C'},                                  \
	{                                                                                     \
		"no-children", no_argument, NULL, 'N'                                         \
	}

#endif
