// SPDX-License-Identifier: Apache-2.0
#include "daemon/log.h"
#include "daemon/options.h"
#include "daemon/service.h"

int service__run(struct xsprofd_opts *opts, int argc, char **argv)
{
	log_err("the service mode is being built; run a one-shot profile with --foreground "
		"--output FILE [--duration SECS]");
	return 2;
}
