// SPDX-License-Identifier: Apache-2.0
/*
 * xs_itt_cost N: N __itt_task_begin/__itt_task_end pairs on one thread through ITT's static
 * part protocol (tests/workloads/itt_stub.h), then the ns per pair ("pair_ns X"). Run without
 * a collector, with INTEL_LIBITTNOTIFY64 set and no daemon, and under xsprofd (bench/nvtx.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tests/workloads/itt_stub.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct xs_itt_domain *d;
	struct xs_itt_string_handle *name;
	double t0;

	/* The first call loads the collector: not part of the figure. */
	xs_itt_load();
	d = xs_itt.domain_create ? xs_itt.domain_create("xs_bench") : NULL;
	name = xs_itt.string_handle_create ? xs_itt.string_handle_create("xs_bench_task") : NULL;
	t0 = now();
	for (long i = 0; i < n; i++) {
		xs_itt_task_begin(d, name);
		xs_itt_task_end(d);
	}
	printf("pair_ns %.1f\n", (now() - t0) / n);
	return 0;
}
