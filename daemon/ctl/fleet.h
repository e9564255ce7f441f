/* SPDX-License-Identifier: Apache-2.0 */
/* xsprofctl fleet: one profile of many xsprofd hosts (daemon/CLI.md). */
#ifndef XSPROF_DAEMON_CTL_FLEET_H
#define XSPROF_DAEMON_CTL_FLEET_H

/* Exit status: 0 every host answered, 5 some did (partial profile written), 3 none, 2 usage. */
int cmd_fleet(int argc, char **argv);

extern const char fleet_usage[];

#endif
