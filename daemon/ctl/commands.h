/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xsprofctl's commands, as its command table (xsprofctl.c) runs them: argv[0] is the command's
 * name, its arguments follow. Each returns xsprofctl's exit status (ctl.h).
 */
#ifndef XSPROF_DAEMON_CTL_COMMANDS_H
#define XSPROF_DAEMON_CTL_COMMANDS_H

/* xsprofctl's whole run: the global options, then the command named (main calls it). */
int ctl_main(int argc, char **argv);

int ctl_status(int argc, char **argv);	   /* cmd_status.c */
int ctl_attach(int argc, char **argv);	   /* cmd_profile.c */
int ctl_detach(int argc, char **argv);	   /* cmd_profile.c */
int ctl_flamegraph(int argc, char **argv); /* cmd_profile.c */
int ctl_report(int argc, char **argv);	   /* cmd_profile.c */
int ctl_record(int argc, char **argv);	   /* cmd_record.c */
/* The hottest functions of the window or of an attachment (top.c). */
int ctl_top(int argc, char **argv);
/*
 * One profile of many xsprofd hosts (fleet.c). Exit status: 0 every host answered, 5 some did
 * (partial profile written), 3 none, 2 usage.
 */
int ctl_fleet(int argc, char **argv);
/* The flight recorder (dumps.c): dump [get], dumps, triggers. */
int ctl_dump(int argc, char **argv);
int ctl_dumps(int argc, char **argv);
int ctl_triggers(int argc, char **argv);
/*
 * xsprofd's read-only web view for a browser on this machine (ui.c): serves 127.0.0.1 until
 * SIGINT, SIGTERM or SIGHUP, once xsprofd has answered. Exit status: 0 once stopped by a
 * signal, 2 on a usage error, 1 when the port cannot be had, or ctl_check_daemon's.
 */
int ctl_ui(int argc, char **argv);

#endif
