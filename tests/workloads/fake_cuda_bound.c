// SPDX-License-Identifier: Apache-2.0
/*
 * libcuda_xsbound.so: a driver whose cuStreamSynchronize returns when the "GPU" is done: at
 * the time the workload said its last kernel ends (xs_bound_gpu_until), as a real
 * synchronize does (the GPU report's sync-bound workload, workloads/gpu_bound.c); and whose
 * cuMemAlloc_v2 hands out addresses from a 4 GiB "device" (CUDA_ERROR_OUT_OF_MEMORY past it)
 * and cuMemFree_v2 takes them back (its memory workload).
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

#define DEVICE_BYTES (4ull << 30)
#define ERROR_OOM    2 /* CUDA_ERROR_OUT_OF_MEMORY */

static CUdeviceptr next_addr = 0x7f0000000000ull;
static uint64_t in_use;

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	if (!bytesize || in_use + bytesize > DEVICE_BYTES)
		return ERROR_OOM;
	*dptr = next_addr;
	next_addr += (bytesize + 0xfffff) & ~0xfffffull;
	in_use += bytesize;
	return 0;
}

/* The caller says the size back (xs_gpu_bound keeps it): this driver keeps no table. */
CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	(void)dptr;
	return 0;
}
