// SPDX-License-Identifier: Apache-2.0
/*
 * libcuda_xsbound.so: a driver whose cuStreamSynchronize returns when the "GPU" is done: at
 * the time the workload said its last kernel ends (xs_bound_gpu_until), as a real
 * synchronize does (the GPU report's sync-bound workload, workloads/gpu_bound.c).
 */
#include <stdint.h>
#include <time.h>

#include "tests/workloads/fake_cuda.h"

static uint64_t busy_until;

void xs_bound_gpu_until(uint64_t mono_ns);

void xs_bound_gpu_until(uint64_t mono_ns)
{
	busy_until = mono_ns;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	struct timespec ts = {(time_t)(busy_until / 1000000000ull),
			      (long)(busy_until % 1000000000ull)};

	(void)hStream;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
	return 0;
}
