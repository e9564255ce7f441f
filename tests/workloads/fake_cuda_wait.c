// SPDX-License-Identifier: Apache-2.0
/*
 * libcuda_xswait.so: driver calls that wait a known time, as a synchronize or a blocking copy
 * does while the GPU works: cuStreamSynchronize 30 ms, cuCtxSynchronize 20 ms,
 * cuMemcpyDtoH_v2 10 ms (the GPU-wait tests, workloads/gpu_wait.c); and cudaStreamSynchronize,
 * which calls cuStreamSynchronize inside as libcudart does: both are probed at entry and return,
 * so the inner call runs while the outer one's return address is swapped for the uretprobe
 * trampoline.
 */
#include <time.h>

#include "tests/workloads/fake_cuda.h"

static void wait_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000};

	while (nanosleep(&ts, &ts))
		;
}

__attribute__((noinline)) CUresult cuStreamSynchronize(CUstream hStream)
{
	wait_ms(30);
	return 0;
}

int cudaStreamSynchronize(void *stream)
{
	/* Not a tail call: the runtime does more after the driver returns. */
	int err = cuStreamSynchronize(stream);

	__asm__ volatile("" ::: "memory");
	return err ? 1 : 0;
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
