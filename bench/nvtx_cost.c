// SPDX-License-Identifier: Apache-2.0
/*
 * xs_nvtx_cost N: N nvtxRangePushA/nvtxRangePop pairs on one thread, then prints the ns per
 * pair ("pair_ns X"). Run plain (NVTX's own no-op), with NVTX_INJECTION64_PATH set and no
 * daemon, and under xsprofd (bench/nvtx.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <nvtx3/nvToolsExt.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	double t0;

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
