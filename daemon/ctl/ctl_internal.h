/* SPDX-License-Identifier: Apache-2.0 */
/* xsprofctl's parts below its commands that the tests reach too (tests/daemon/ctl/test_ctl.c). */
#ifndef XSPROF_DAEMON_CTL_CTL_INTERNAL_H
#define XSPROF_DAEMON_CTL_CTL_INTERNAL_H

#include <stddef.h>

#include "output/output.h"

struct json_object;

/* record's arguments, read (cmd_record.c). */
struct record_args {
	struct json_object *req, *pids;
	const char *out;
	enum output_format fmt;
	double duration;
	char **cmd;
};

/* record's options into a (req and pids made by the caller); 0 or the usage error said. */
int ctl_record_parse(int argc, char **argv, struct record_args *a);
/* A GPU report's file: .gpu.json (JSON) or .txt / .gpu.txt (text); NULL for another. */
const char *ctl_report_format(const char *out);
/* The i-th command of the one table of commands (xsprofctl.c); NULL past the last. */
const char *ctl_command_name(size_t i);
/* The status document as `xsprofctl status` prints it (status_print.c). */
void ctl_status_print(struct json_object *j);

#endif
