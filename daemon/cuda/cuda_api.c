// SPDX-License-Identifier: Apache-2.0
/* The CUDA APIs xsprof probes, where their stream argument is, and CUPTI's ids for them. */
#include <string.h>

#include "bpf/xsprof_events.h"
#include "daemon/cuda/cuda_api.h"

/* Where a stream argument is at entry (x86-64 SysV): see enum xsprof_cuda_stream_loc. */
#define NONE	    XSPROF_CUDA_STREAM_NONE, 0, 0
#define REG(i)	    XSPROF_CUDA_STREAM_REG, i, 0
#define STK(i)	    XSPROF_CUDA_STREAM_STACK, i, 0
#define PTR(i, off) XSPROF_CUDA_STREAM_PTR, i, off
#define WRAPPER	    true
#define API(n, ...)                              \
	{                                        \
		XSPROF_CUDA_##n, #n, __VA_ARGS__ \
	}
/* dim3 is 12 bytes of integers: two registers each. cudaLaunchConfig_t.stream and
 * CUlaunchConfig.hStream are at offset 32. */
#define LAUNCH_STREAM STK(2) /* (func, dim3 grid, dim3 block, args, shmem, stream) */
#define CU_STREAM     STK(3) /* (f, gx, gy, gz, bx, by | bz, shmem, hStream, ...) */

const struct cuda_api cuda_apis[] = {
	API(cudaLaunchKernel, LAUNCH_STREAM),
	API(cudaLaunchKernel_ptsz, LAUNCH_STREAM),
	API(cudaLaunchKernelExC, PTR(0, 32)),
	API(cudaLaunchKernelExC_ptsz, PTR(0, 32)),
	API(__cudaLaunchKernel, LAUNCH_STREAM, WRAPPER),
	API(__cudaLaunchKernel_ptsz, LAUNCH_STREAM, WRAPPER),
	API(cudaLaunchCooperativeKernel, LAUNCH_STREAM),
	API(cudaLaunchCooperativeKernel_ptsz, LAUNCH_STREAM),
	API(cudaLaunchHostFunc, REG(0)),
	API(cudaLaunchHostFunc_ptsz, REG(0)),
	API(cudaGraphLaunch, REG(1)),
	API(cudaGraphLaunch_ptsz, REG(1)),
	API(cudaMemcpyAsync, REG(4)),
	API(cudaMemcpyAsync_ptsz, REG(4)),
	API(cudaMemcpy2DAsync, STK(2)),
	API(cudaMemcpy2DAsync_ptsz, STK(2)),
	API(cudaMemcpy3DAsync, REG(1)),
	API(cudaMemcpy3DAsync_ptsz, REG(1)),
	API(cudaMemcpyPeerAsync, REG(5)),
	API(cudaMemcpy3DPeerAsync, REG(1)),
	API(cudaMemcpy3DPeerAsync_ptsz, REG(1)),
	API(cudaMemcpyToSymbolAsync, REG(5)),
	API(cudaMemcpyToSymbolAsync_ptsz, REG(5)),
	API(cudaMemcpyFromSymbolAsync, REG(5)),
	API(cudaMemcpyFromSymbolAsync_ptsz, REG(5)),
	API(cudaMemcpyToArrayAsync, STK(1)),
	API(cudaMemcpyToArrayAsync_ptsz, STK(1)),
	API(cudaMemcpyFromArrayAsync, STK(1)),
	API(cudaMemcpyFromArrayAsync_ptsz, STK(1)),
	API(cudaMemcpy2DToArrayAsync, STK(3)),
	API(cudaMemcpy2DToArrayAsync_ptsz, STK(3)),
	API(cudaMemcpy2DFromArrayAsync, STK(3)),
	API(cudaMemcpy2DFromArrayAsync_ptsz, STK(3)),
	API(cudaMemcpyBatchAsync, STK(2)),
	API(cudaMemcpyBatchAsync_ptsz, STK(2)),
	API(cudaMemcpy3DBatchAsync, REG(3)),
	API(cudaMemcpy3DBatchAsync_ptsz, REG(3)),
	API(cudaMemsetAsync, REG(3)),
	API(cudaMemsetAsync_ptsz, REG(3)),
	API(cudaMemset2DAsync, REG(5)),
	API(cudaMemset2DAsync_ptsz, REG(5)),
	/* The two structs (32 and 24 bytes) go on the stack: value and stream take rdi, rsi. */
	API(cudaMemset3DAsync, REG(1)),
	API(cudaMemset3DAsync_ptsz, REG(1)),
	API(cudaStreamSynchronize, REG(0)),
	API(cudaStreamSynchronize_ptsz, REG(0)),
	API(cudaEventSynchronize, NONE),
	API(cudaDeviceSynchronize, NONE),
	/* Blocking copies: the legacy stream, or the thread's own (_ptds). */
	API(cudaMemcpy, NONE),
	API(cudaMemcpy_ptds, NONE),
	API(cudaMemcpy2D, NONE),
	API(cudaMemcpy2D_ptds, NONE),
	API(cudaMemcpy3D, NONE),
	API(cudaMemcpy3D_ptds, NONE),
	API(cudaMemcpyPeer, NONE),
	API(cudaMemcpy3DPeer, NONE),
	API(cudaMemcpy3DPeer_ptds, NONE),
	API(cudaMemcpyToSymbol, NONE),
	API(cudaMemcpyToSymbol_ptds, NONE),
	API(cudaMemcpyFromSymbol, NONE),
	API(cudaMemcpyFromSymbol_ptds, NONE),
	API(cudaMemcpy2DToArray, NONE),
	API(cudaMemcpy2DFromArray, NONE),
	API(cudaMemcpyToArray, NONE),

	API(cuLaunchKernel, CU_STREAM),
	API(cuLaunchKernel_ptsz, CU_STREAM),
	API(cuLaunchKernelEx, PTR(0, 32)),
	API(cuLaunchKernelEx_ptsz, PTR(0, 32)),
	API(cuLaunchCooperativeKernel, CU_STREAM),
	API(cuLaunchCooperativeKernel_ptsz, CU_STREAM),
	API(cuLaunchHostFunc, REG(0)),
	API(cuLaunchHostFunc_ptsz, REG(0)),
	API(cuGraphLaunch, REG(1)),
	API(cuGraphLaunch_ptsz, REG(1)),
	API(cuMemcpyAsync, REG(3)),
	API(cuMemcpyAsync_ptsz, REG(3)),
	API(cuMemcpyHtoDAsync_v2, REG(3)),
	API(cuMemcpyHtoDAsync_v2_ptsz, REG(3)),
	API(cuMemcpyDtoHAsync_v2, REG(3)),
	API(cuMemcpyDtoHAsync_v2_ptsz, REG(3)),
	API(cuMemcpyDtoDAsync_v2, REG(3)),
	API(cuMemcpyDtoDAsync_v2_ptsz, REG(3)),
	API(cuMemsetD8Async, REG(3)),
	API(cuMemsetD8Async_ptsz, REG(3)),
	API(cuMemsetD32Async, REG(3)),
	API(cuMemsetD32Async_ptsz, REG(3)),
	API(cuStreamSynchronize, REG(0)),
	API(cuStreamSynchronize_ptsz, REG(0)),
	API(cuEventSynchronize, NONE),
	API(cuCtxSynchronize, NONE),
	API(cuMemcpy, NONE),
	API(cuMemcpy_ptds, NONE),
	API(cuMemcpyHtoD_v2, NONE),
	API(cuMemcpyHtoD_v2_ptds, NONE),
	API(cuMemcpyDtoH_v2, NONE),
	API(cuMemcpyDtoH_v2_ptds, NONE),
	API(cuMemcpyDtoD_v2, NONE),
	API(cuMemcpyDtoD_v2_ptds, NONE),
	API(cuMemcpyPeer, NONE),
	API(cuMemcpy2D_v2, NONE),
	API(cuMemcpy3D_v2, NONE),

	/* GPU memory: the "stream" read at entry is an allocation's size (its second argument)
	 * or a free's address or handle (its first). */
	API(cudaMalloc, REG(1)),
	API(cudaMallocAsync, REG(1)),
	API(cudaMallocAsync_ptsz, REG(1)),
	API(cudaMallocManaged, REG(1)),
	API(cudaMallocFromPoolAsync, REG(1)),
	API(cudaMallocFromPoolAsync_ptsz, REG(1)),
	API(cudaFree, REG(0)),
	API(cudaFreeAsync, REG(0)),
	API(cudaFreeAsync_ptsz, REG(0)),
	API(cuMemAlloc_v2, REG(1)),
	API(cuMemAllocAsync, REG(1)),
	API(cuMemAllocAsync_ptsz, REG(1)),
	API(cuMemAllocManaged, REG(1)),
	API(cuMemAllocFromPoolAsync, REG(1)),
	API(cuMemAllocFromPoolAsync_ptsz, REG(1)),
	API(cuMemFree_v2, REG(0)),
	API(cuMemFreeAsync, REG(0)),
	API(cuMemFreeAsync_ptsz, REG(0)),
	API(cuMemCreate, REG(1)),
	API(cuMemRelease, REG(0)),
	/* The thread's current device, for the allocations after it (no record of its own). */
	API(cudaSetDevice, NONE),
};

bool cuda_api__allocates(unsigned int api)
{
	switch (api) {
	case XSPROF_CUDA_cudaMalloc:
	case XSPROF_CUDA_cudaMallocAsync:
	case XSPROF_CUDA_cudaMallocAsync_ptsz:
	case XSPROF_CUDA_cudaMallocManaged:
	case XSPROF_CUDA_cudaMallocFromPoolAsync:
	case XSPROF_CUDA_cudaMallocFromPoolAsync_ptsz:
	case XSPROF_CUDA_cuMemAlloc_v2:
	case XSPROF_CUDA_cuMemAllocAsync:
	case XSPROF_CUDA_cuMemAllocAsync_ptsz:
	case XSPROF_CUDA_cuMemAllocManaged:
	case XSPROF_CUDA_cuMemAllocFromPoolAsync:
	case XSPROF_CUDA_cuMemAllocFromPoolAsync_ptsz:
	case XSPROF_CUDA_cuMemCreate:
		return true;
	default:
		return false;
	}
}

bool cuda_api__frees(unsigned int api)
{
	switch (api) {
	case XSPROF_CUDA_cudaFree:
	case XSPROF_CUDA_cudaFreeAsync:
	case XSPROF_CUDA_cudaFreeAsync_ptsz:
	case XSPROF_CUDA_cuMemFree_v2:
	case XSPROF_CUDA_cuMemFreeAsync:
	case XSPROF_CUDA_cuMemFreeAsync_ptsz:
	case XSPROF_CUDA_cuMemRelease:
		return true;
	default:
		return false;
	}
}

const size_t cuda_nr_apis = sizeof(cuda_apis) / sizeof(cuda_apis[0]);

/* The launch APIs libxsprof_cupti fires xsprof:launch for (cupti_runtime_cbid.h and
 * cupti_driver_cbid.h of CUDA 13; the numbers are stable across releases). */
const struct cupti_api cupti_apis[] = {
	{2, 211, "cudaLaunchKernel"},
	{2, 214, "cudaLaunchKernel_ptsz"},
	{2, 430, "cudaLaunchKernelExC"},
	{2, 431, "cudaLaunchKernelExC_ptsz"},
	{2, 505, "__cudaLaunchKernel"},
	{2, 506, "__cudaLaunchKernel_ptsz"},
	{2, 269, "cudaLaunchCooperativeKernel"},
	{2, 270, "cudaLaunchCooperativeKernel_ptsz"},
	{2, 311, "cudaGraphLaunch"},
	{2, 312, "cudaGraphLaunch_ptsz"},
	{2, 41, "cudaMemcpyAsync"},
	{2, 225, "cudaMemcpyAsync_ptsz"},
	{2, 42, "cudaMemcpyToArrayAsync"},
	{2, 226, "cudaMemcpyToArrayAsync_ptsz"},
	{2, 43, "cudaMemcpyFromArrayAsync"},
	{2, 227, "cudaMemcpyFromArrayAsync_ptsz"},
	{2, 44, "cudaMemcpy2DAsync"},
	{2, 228, "cudaMemcpy2DAsync_ptsz"},
	{2, 45, "cudaMemcpy2DToArrayAsync"},
	{2, 229, "cudaMemcpy2DToArrayAsync_ptsz"},
	{2, 46, "cudaMemcpy2DFromArrayAsync"},
	{2, 230, "cudaMemcpy2DFromArrayAsync_ptsz"},
	{2, 47, "cudaMemcpyToSymbolAsync"},
	{2, 231, "cudaMemcpyToSymbolAsync_ptsz"},
	{2, 48, "cudaMemcpyFromSymbolAsync"},
	{2, 232, "cudaMemcpyFromSymbolAsync_ptsz"},
	{2, 145, "cudaMemcpy3DAsync"},
	{2, 246, "cudaMemcpy3DAsync_ptsz"},
	{2, 161, "cudaMemcpyPeerAsync"},
	{2, 163, "cudaMemcpy3DPeerAsync"},
	{2, 250, "cudaMemcpy3DPeerAsync_ptsz"},
	{2, 509, "cudaMemcpyBatchAsync"},
	{2, 510, "cudaMemcpyBatchAsync_ptsz"},
	{2, 511, "cudaMemcpy3DBatchAsync"},
	{2, 512, "cudaMemcpy3DBatchAsync_ptsz"},
	{2, 51, "cudaMemsetAsync"},
	{2, 235, "cudaMemsetAsync_ptsz"},
	{2, 52, "cudaMemset2DAsync"},
	{2, 236, "cudaMemset2DAsync_ptsz"},
	{2, 143, "cudaMemset3DAsync"},
	{2, 244, "cudaMemset3DAsync_ptsz"},
	{1, 307, "cuLaunchKernel"},
	{1, 442, "cuLaunchKernel_ptsz"},
	{1, 652, "cuLaunchKernelEx"},
	{1, 653, "cuLaunchKernelEx_ptsz"},
	{1, 477, "cuLaunchCooperativeKernel"},
	{1, 478, "cuLaunchCooperativeKernel_ptsz"},
	{1, 514, "cuGraphLaunch"},
	{1, 515, "cuGraphLaunch_ptsz"},
	{1, 306, "cuMemcpyAsync"},
	{1, 418, "cuMemcpyAsync_ptsz"},
	{1, 277, "cuMemcpyHtoDAsync_v2"},
	{1, 421, "cuMemcpyHtoDAsync_v2_ptsz"},
	{1, 279, "cuMemcpyDtoHAsync_v2"},
	{1, 422, "cuMemcpyDtoHAsync_v2_ptsz"},
	{1, 281, "cuMemcpyDtoDAsync_v2"},
	{1, 423, "cuMemcpyDtoDAsync_v2_ptsz"},
	{1, 293, "cuMemcpyHtoAAsync_v2"},
	{1, 419, "cuMemcpyHtoAAsync_v2_ptsz"},
	{1, 283, "cuMemcpyAtoHAsync_v2"},
	{1, 420, "cuMemcpyAtoHAsync_v2_ptsz"},
	{1, 289, "cuMemcpy2DAsync_v2"},
	{1, 424, "cuMemcpy2DAsync_v2_ptsz"},
	{1, 291, "cuMemcpy3DAsync_v2"},
	{1, 425, "cuMemcpy3DAsync_v2_ptsz"},
	{1, 319, "cuMemcpyPeerAsync"},
	{1, 426, "cuMemcpyPeerAsync_ptsz"},
	{1, 321, "cuMemcpy3DPeerAsync"},
	{1, 427, "cuMemcpy3DPeerAsync_ptsz"},
	{1, 796, "cuMemcpyBatchAsync_v2"},
	{1, 797, "cuMemcpyBatchAsync_v2_ptsz"},
	{1, 798, "cuMemcpy3DBatchAsync_v2"},
	{1, 799, "cuMemcpy3DBatchAsync_v2_ptsz"},
	{1, 216, "cuMemsetD8Async"},
	{1, 428, "cuMemsetD8Async_ptsz"},
	{1, 218, "cuMemsetD16Async"},
	{1, 429, "cuMemsetD16Async_ptsz"},
	{1, 220, "cuMemsetD32Async"},
	{1, 430, "cuMemsetD32Async_ptsz"},
	{1, 222, "cuMemsetD2D8Async"},
	{1, 431, "cuMemsetD2D8Async_ptsz"},
	{1, 224, "cuMemsetD2D16Async"},
	{1, 432, "cuMemsetD2D16Async_ptsz"},
	{1, 226, "cuMemsetD2D32Async"},
	{1, 433, "cuMemsetD2D32Async_ptsz"},
};

const char *cuda_api__name(unsigned int api)
{
	for (size_t i = 0; i < cuda_nr_apis; i++)
		if (cuda_apis[i].id == api)
			return cuda_apis[i].name;
	return NULL;
}

const size_t cupti_nr_apis = sizeof(cupti_apis) / sizeof(cupti_apis[0]);

const char *cupti_api__name(uint32_t api)
{
	for (size_t i = 0; i < cupti_nr_apis; i++)
		if (cupti_apis[i].domain == api >> 16 && cupti_apis[i].cbid == (api & 0xffff))
			return cupti_apis[i].name;
	return NULL;
}

bool cuda_api__usdt_covers(unsigned int api)
{
	const char *name = cuda_api__name(api);

	if (!name)
		return false;
	for (size_t i = 0; i < cupti_nr_apis; i++)
		if (!strcmp(cupti_apis[i].name, name))
			return true;
	return false;
}

const struct cuda_api *cuda_api__by_name(const char *name)
{
	/* Every name starts "cu" or "__cu": skip the rest of a big symbol table early. */
	if (name[0] != 'c' && (name[0] != '_' || name[1] != '_' || name[2] != 'c'))
		return NULL;
	for (size_t i = 0; i < cuda_nr_apis; i++)
		if (!strcmp(cuda_apis[i].name, name))
			return &cuda_apis[i];
	return NULL;
}
