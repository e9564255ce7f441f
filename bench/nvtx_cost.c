// SPDX-License-Identifier: Apache-2.0
/*
 * xs_nvtx_cost N [scope]: N nvtxRangePushA/nvtxRangePop pairs on one thread (with "scope": N
 * XSPROF_SCOPE blocks of xsprof/scope.h instead), then prints the ns per pair ("pair_ns X").
 * Run plain (NVTX's own no-op; a scope's nop), with NVTX_INJECTION64_PATH set and no daemon,
 * and under xsprofd (bench/nvtx.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nvtx3/nvToolsExt.h>

#include "xsprof/scope.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static volatile long sink;

static __attribute__((noinline)) void scoped(long i)
{
	XSPROF_SCOPE("xs_bench_scope");
	sink = i;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	double t0;

	if (argc > 2 && !strcmp(argv[2], "scope")) {
		scoped(0);
		t0 = now();
		for (long i = 0; i < n; i++)
			scoped(i);
		printf("pair_ns %.1f\n", (now() - t0) / n);
		return 0;
	}

	/* The first call loads the injection: not part of the figure. */
	nvtxRangePushA("warm");
	nvtxRangePop();
	t0 = now();
	for (long i = 0; i < n; i++) {
		nvtxRangePushA("xs_bench_scope");
		nvtxRangePop();
	}
	printf("pair_ns %.1f\n", (now() - t0) / n);
	return 0;
}
