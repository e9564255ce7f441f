// SPDX-License-Identifier: Apache-2.0
/* xsprofd: wires options to the mode that runs. */
#include <malloc.h>
#include <stdio.h>

#include "daemon/log.h"
#include "daemon/oneshot/oneshot.h"
#include "daemon/options.h"
#include "daemon/service/service.h"

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
	ret = opts.foreground ? oneshot__run(&opts) : service__run(&opts, argc, argv);
	xsprofd_opts__free(&opts);
	return ret;
}
