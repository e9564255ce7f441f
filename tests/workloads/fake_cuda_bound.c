// SPDX-License-Identifier: Apache-2.0
/*
 * libcuda_xsbound.so: a driver whose cuStreamSynchronize returns when the "GPU" is done: at
 * the time the workload said its last kernel ends (xs_bound_gpu_until), as a real
 * synchronize does (the GPU report's sync-bound workload, workloads/gpu_bound.c); and GPU
 * memory for its memory workload on two 4 GiB "devices" (CUDA_ERROR_OUT_OF_MEMORY past one's
 * size), as CUDA places it: the runtime's cudaSetDevice sets the thread's device (0 until it
 * does) and makes that device's context current, cudaMalloc and the driver's cuMemAlloc_v2
 * take from the thread's device, cudaFree and cuMemFree_v2 give back.
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
#define NR_DEVICES   2
#define ERROR_OOM    2	 /* CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation */
#define ERROR_DEVICE 101 /* cudaErrorInvalidDevice */

/* One address space (unified addressing): each device's addresses in a range of their own. */
static CUdeviceptr next_addr[NR_DEVICES] = {0x7f0000000000ull, 0x7f8000000000ull};
static uint64_t in_use[NR_DEVICES];
static __thread int current_device;

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemFree_v2(CUdeviceptr dptr);
int cudaSetDevice(int device);
int cudaMalloc(void **devPtr, size_t size);
int cudaFree(void *devPtr);

static int take(CUdeviceptr *dptr, size_t bytesize)
{
	int d = current_device;

	if (!bytesize || in_use[d] + bytesize > DEVICE_BYTES)
		return ERROR_OOM;
	*dptr = next_addr[d];
	next_addr[d] += (bytesize + 0xfffff) & ~0xfffffull;
	in_use[d] += bytesize;
	return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	return take(dptr, bytesize);
}

int cudaSetDevice(int device)
{
	if (device < 0 || device >= NR_DEVICES)
		return ERROR_DEVICE;
	current_device = device;
	return 0;
}

int cudaMalloc(void **devPtr, size_t size)
{
	CUdeviceptr p = 0;
	int err = take(&p, size);

	if (!err)
		*devPtr = (void *)(uintptr_t)p;
	return err;
}

int cudaFree(void *devPtr)
{
	(void)devPtr;
	return 0;
}

/* The caller says the size back (xs_gpu_bound keeps it): this driver keeps no table. */
CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	(void)dptr;
	return 0;
}
