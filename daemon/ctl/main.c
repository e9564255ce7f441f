// SPDX-License-Identifier: Apache-2.0
/* xsprofctl's entry point: the run is ctl_main's (xsprofctl.c), which the tests call too. */
#include "daemon/ctl/commands.h"

int main(int argc, char **argv)
{
	return ctl_main(argc, argv);
}
