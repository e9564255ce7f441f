// SPDX-License-Identifier: Apache-2.0
/* xsprofd: wires options to the mode that runs. */
#include <stdio.h>

#include "daemon/log.h"
#include "daemon/oneshot/oneshot.h"
#include "daemon/options.h"
#include "daemon/service/service.h"

int main(int argc, char **argv)
{
	static struct xsprofd_opts opts;
	int ret = xsprofd_opts__parse(&opts, argc, argv);

	if (ret)
		return ret == 1 ? 0 : ret;
	if (opts.verbose)
		log_max_level = LOG_DEBUG;
	ret = opts.foreground ? oneshot__run(&opts) : service__run(&opts, argc, argv);
	xsprofd_opts__free(&opts);
	return ret;
}
