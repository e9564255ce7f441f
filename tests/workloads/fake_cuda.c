// SPDX-License-Identifier: Apache-2.0
/* libcuda_xsfake.so: the driver entry points xsprof probes, doing nothing (see fake_cuda.h). */
#include "tests/workloads/fake_cuda.h"

#define FAIL return XS_FAKE_CUDA_ERROR

CUresult cuLaunchKernel(XS_LAUNCH_ARGS, void **params, void **extra)
{
	FAIL;
}
CUresult cuLaunchKernel_ptsz(XS_LAUNCH_ARGS, void **params, void **extra)
{
	FAIL;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra)
{
	FAIL;
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params,
			       void **extra)
{
	FAIL;
}
CUresult cuLaunchCooperativeKernel(XS_LAUNCH_ARGS, void **params)
{
	FAIL;
}
CUresult cuLaunchCooperativeKernel_ptsz(XS_LAUNCH_ARGS, void **params)
{
	FAIL;
}
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	FAIL;
}
CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
	FAIL;
}
/* Through the exported (interposable) entry, as a driver calling itself would. */
CUresult cuGraphLaunch(CUgraphExec exec, CUstream hStream)
{
	return cuStreamSynchronize(hStream);
}
CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream hStream)
{
	FAIL;
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char uc, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int ui, size_t n, CUstream hStream)
{
	FAIL;
}
CUresult cuStreamSynchronize(CUstream hStream)
{
	FAIL;
}
CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	FAIL;
}
CUresult cuEventSynchronize(CUevent hEvent)
{
	FAIL;
}
CUresult cuCtxSynchronize(void)
{
	FAIL;
}
