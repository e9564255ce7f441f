// SPDX-License-Identifier: Apache-2.0
/* xsprofd: wires options to the mode that runs. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/oneshot/oneshot.h"
#include "daemon/options.h"
#include "daemon/probes/stop_ledger.h"
#include "daemon/service/service.h"

/* --continue-stopped: what a service killed with its watchdog left stopped goes on. */
static int continue_stopped(const struct xsprofd_opts *o)
{
	char pin[96];
	int n = stop_ledger__continue_pinned(
		stop_ledger__pin_path(o->socket_path, pin, sizeof(pin)));

	if (n < 0) {
		log_err("reading the stop ledger %s: %s", pin, strerror(-n));
		return 1;
	}
	log_info("continued %d process%s the service of %s had stopped for its probes", n,
		 n == 1 ? "" : "es", o->socket_path);
	return 0;
}

int main(int argc, char **argv)
{
	static struct xsprofd_opts opts;
	int ret;

	/*
	 * Buffers of 128 KiB and more come from their own mapping and go back at free. glibc
	 * would otherwise raise that bound to the largest such buffer freed (libbpf's 5.5 MiB
	 * copies of the kernel's BTF at load), and every table build, held sample and naming
	 * after it would grow the heap, which rarely shrinks: 10 MiB more peak RSS profiling
	 * PyTorch.
	 */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	ret = xsprofd_opts__parse(&opts, argc, argv);

	if (ret)
		return ret == 1 ? 0 : ret;
	if (opts.verbose)
		log_max_level = LOG_DEBUG;
	if (opts.continue_stopped)
		ret = continue_stopped(&opts);
	else
		ret = opts.foreground ? oneshot__run(&opts) : service__run(&opts, argc, argv);
	xsprofd_opts__free(&opts);
	return ret;
}
