/* SPDX-License-Identifier: Apache-2.0 */
/* xsprofctl ui: xsprofd's read-only web view for a browser on this machine (daemon/CLI.md). */
#ifndef XSPROF_DAEMON_CTL_UI_H
#define XSPROF_DAEMON_CTL_UI_H

#include <stdbool.h>

/*
 * Serves 127.0.0.1 until SIGINT, SIGTERM or SIGHUP, forwarding to the socket at sock_path.
 * check_daemon asks xsprofd for its status once the arguments are read, says why it cannot
 * and returns xsprofctl's exit status (0 when it answered). Returns an exit status: 0 once
 * stopped by a signal, 2 on a usage error, 1 when the port cannot be had, or check_daemon's.
 */
int ctl_ui(int argc, char **argv, const char *sock_path, double timeout_s, bool quiet,
	   int (*check_daemon)(void));

#endif
