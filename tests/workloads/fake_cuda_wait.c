// SPDX-License-Identifier: Apache-2.0
/*
 * libcuda_xswait.so: driver calls that wait a known time, as a synchronize or a blocking copy
 * does while the GPU works: cuStreamSynchronize 30 ms, cuCtxSynchronize 20 ms,
 * cuMemcpyDtoH_v2 10 ms (the GPU-wait tests, workloads/gpu_wait.c).
 */
#include <time.h>

#include "tests/workloads/fake_cuda.h"

static void wait_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000};

	while (nanosleep(&ts, &ts))
		;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	wait_ms(30);
	return 0;
}

CUresult cuCtxSynchronize(void)
{
	wait_ms(20);
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	wait_ms(10);
	return 0;
}
