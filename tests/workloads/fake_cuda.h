/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The driver API entry points of libcuda that xsprof probes, with cuda.h's signatures, as the
 * fake driver (libcuda_xsfake.so) defines them: there is no driver (libcuda) on machines
 * without a GPU, and the real one cannot be loaded next to this one.
 */
#ifndef XSPROF_TESTS_WORKLOADS_FAKE_CUDA_H
#define XSPROF_TESTS_WORKLOADS_FAKE_CUDA_H

#include <stddef.h>

typedef int CUresult;
typedef void *CUfunction, *CUstream, *CUgraphExec, *CUevent;
typedef unsigned long long CUdeviceptr;
typedef void (*CUhostFn)(void *userData);

/* cuda.h's CUlaunchConfig: hStream at offset 32. */
typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

#define XS_FAKE_CUDA_ERROR 999 /* CUDA_ERROR_UNKNOWN */

#define XS_LAUNCH_ARGS                                                                    \
	CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
		unsigned int by, unsigned int bz, unsigned int shmem, CUstream hStream
CUresult cuLaunchKernel(XS_LAUNCH_ARGS, void **params, void **extra);
CUresult cuLaunchKernel_ptsz(XS_LAUNCH_ARGS, void **params, void **extra);
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra);
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params,
			       void **extra);
CUresult cuLaunchCooperativeKernel(XS_LAUNCH_ARGS, void **params);
CUresult cuLaunchCooperativeKernel_ptsz(XS_LAUNCH_ARGS, void **params);
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData);
/* The fake one synchronizes the stream through cuStreamSynchronize, as a driver call made
 * inside another would: it must count once, as cuGraphLaunch. */
CUresult cuGraphLaunch(CUgraphExec exec, CUstream hStream);
CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream hStream);
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream hStream);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream hStream);
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream hStream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream hStream);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hStream);
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream hStream);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char uc, size_t n, CUstream hStream);
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n, CUstream hStream);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dst, unsigned int ui, size_t n, CUstream hStream);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuEventSynchronize(CUevent hEvent);
CUresult cuCtxSynchronize(void);
/* A blocking copy (the wait tests' fake driver defines it). */
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n);

#endif
