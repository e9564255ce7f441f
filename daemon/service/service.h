/* SPDX-License-Identifier: Apache-2.0 */
/* The always-on service: rolling profile store, control API, systemd integration. */
#ifndef XSPROF_DAEMON_SERVICE_SERVICE_H
#define XSPROF_DAEMON_SERVICE_SERVICE_H

struct xsprofd_opts;

/* Runs until SIGTERM/SIGINT; argv is kept for reloads. Returns the exit status. */
int service__run(struct xsprofd_opts *opts, int argc, char **argv);

#endif
