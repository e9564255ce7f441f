// SPDX-License-Identifier: Apache-2.0
/* The known call tree of cuda_calls.h. Built with frame pointers and no inlining or tail calls,
 * so each call's stack is exactly the chain of functions below. */
#include <cuda_runtime_api.h>

#include "bpf/xsprof_events.h"
#include "tests/workloads/cuda_calls.h"
#include "tests/workloads/fake_cuda.h"

#define NOINLINE __attribute__((noinline))
#define S(api)	 ((cudaStream_t)XS_STREAM(XSPROF_CUDA_##api))
#define D(api)	 ((CUstream)XS_STREAM(XSPROF_CUDA_##api))

/*
 * Runtime entry points this translation unit cannot see in the headers: the _ptsz ones are
 * what CUDA_API_PER_THREAD_DEFAULT_STREAM renames calls to, and __cudaLaunchKernel(_ptsz) is
 * what nvcc turns <<<>>> into since CUDA 13.
 */
#define LAUNCH_ARGS const void *f, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s
extern cudaError_t __cudaLaunchKernel(LAUNCH_ARGS);
extern cudaError_t __cudaLaunchKernel_ptsz(LAUNCH_ARGS);
extern cudaError_t cudaLaunchKernel_ptsz(LAUNCH_ARGS);
extern cudaError_t cudaLaunchCooperativeKernel_ptsz(LAUNCH_ARGS);
extern cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *c, const void *f,
					    void **args);
extern cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void *data);
extern cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t e, cudaStream_t s);
extern cudaError_t cudaMemcpyAsync_ptsz(void *d, const void *src, size_t n, enum cudaMemcpyKind k,
					cudaStream_t s);
extern cudaError_t cudaMemcpy2DAsync_ptsz(void *d, size_t dp, const void *src, size_t sp, size_t w,
					  size_t h, enum cudaMemcpyKind k, cudaStream_t s);
extern cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t s);
extern cudaError_t cudaMemcpy3DPeerAsync_ptsz(const struct cudaMemcpy3DPeerParms *p,
					      cudaStream_t s);
extern cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *sym, const void *src, size_t n,
						size_t off, enum cudaMemcpyKind k, cudaStream_t s);
extern cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *d, const void *sym, size_t n, size_t off,
						  enum cudaMemcpyKind k, cudaStream_t s);
extern cudaError_t cudaMemcpyToArrayAsync_ptsz(cudaArray_t d, size_t wo, size_t ho, const void *src,
					       size_t n, enum cudaMemcpyKind k, cudaStream_t s);
extern cudaError_t cudaMemcpyFromArrayAsync_ptsz(void *d, cudaArray_const_t src, size_t wo,
						 size_t ho, size_t n, enum cudaMemcpyKind k,
						 cudaStream_t s);
extern cudaError_t cudaMemcpy2DToArrayAsync_ptsz(cudaArray_t d, size_t wo, size_t ho,
						 const void *src, size_t sp, size_t w, size_t h,
						 enum cudaMemcpyKind k, cudaStream_t s);
extern cudaError_t cudaMemcpy2DFromArrayAsync_ptsz(void *d, size_t dp, cudaArray_const_t src,
						   size_t wo, size_t ho, size_t w, size_t h,
						   enum cudaMemcpyKind k, cudaStream_t s);
extern cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *d, const void *const *src,
					     const size_t *n, size_t count,
					     struct cudaMemcpyAttributes *attrs, size_t *idx,
					     size_t nattrs, cudaStream_t s);
extern cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t n, struct cudaMemcpy3DBatchOp *ops,
					       unsigned long long flags, cudaStream_t s);
extern cudaError_t cudaMemsetAsync_ptsz(void *d, int v, size_t n, cudaStream_t s);
extern cudaError_t cudaMemset2DAsync_ptsz(void *d, size_t p, int v, size_t w, size_t h,
					  cudaStream_t s);
extern cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr p, int v, struct cudaExtent e,
					  cudaStream_t s);
extern cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s);

static const dim3 grid = {1, 1, 1}, block = {32, 1, 1};

NOINLINE static void kernel(void)
{
}

NOINLINE void xs_setup(void)
{
	cudaDeviceSynchronize();
}

NOINLINE void xs_launch_plain(void)
{
	for (int i = 0; i < 2; i++)
		cudaLaunchKernel((void *)kernel, grid, block, NULL, 0, S(cudaLaunchKernel));
}

/* What nvcc emits for kernel<<<grid, block, 0, stream>>>() since CUDA 13. */
NOINLINE void xs_launch_chevron(void)
{
	__cudaLaunchKernel((void *)kernel, grid, block, NULL, 0, S(__cudaLaunchKernel));
}

NOINLINE void xs_forward(void)
{
	xs_launch_plain();
	xs_launch_chevron();
}

NOINLINE void xs_backward(void)
{
	cudaLaunchConfig_t cfg = {.gridDim = grid, .blockDim = block};

	cfg.stream = S(cudaLaunchKernelExC);
	cudaLaunchKernelExC(&cfg, (void *)kernel, NULL);
	cudaLaunchKernelExC(&cfg, (void *)kernel, NULL);
	cudaLaunchKernel_ptsz((void *)kernel, grid, block, NULL, 0, S(cudaLaunchKernel_ptsz));
	__cudaLaunchKernel_ptsz((void *)kernel, grid, block, NULL, 0, S(__cudaLaunchKernel_ptsz));
	cfg.stream = S(cudaLaunchKernelExC_ptsz);
	cudaLaunchKernelExC_ptsz(&cfg, (void *)kernel, NULL);
}

NOINLINE void xs_graph_step(void)
{
	cudaGraphLaunch(NULL, S(cudaGraphLaunch));
	cudaGraphLaunch_ptsz(NULL, S(cudaGraphLaunch_ptsz));
}

NOINLINE void xs_train_step(void)
{
	xs_forward();
	xs_backward();
	xs_graph_step();
}

NOINLINE void xs_copies(void)
{
	for (int i = 0; i < 4; i++)
		cudaMemcpyAsync(NULL, NULL, 0, cudaMemcpyHostToDevice, S(cudaMemcpyAsync));
	cudaMemcpyAsync_ptsz(NULL, NULL, 0, cudaMemcpyHostToDevice, S(cudaMemcpyAsync_ptsz));
	for (int i = 0; i < 2; i++)
		cudaMemsetAsync(NULL, 0, 0, S(cudaMemsetAsync));
	cudaMemsetAsync_ptsz(NULL, 0, 0, S(cudaMemsetAsync_ptsz));
}

static void host_fn(void *data)
{
}

/* Every other runtime entry point once, each with its own stream. */
NOINLINE void xs_misc(void)
{
	struct cudaMemcpy3DParms p3 = {0};
	struct cudaMemcpy3DPeerParms pp3 = {0};
	struct cudaPitchedPtr pitched = {0};
	struct cudaExtent extent = {0};
	size_t sizes[1] = {0}, idx[1] = {0};
	void *dsts[1] = {NULL};
	const void *srcs[1] = {NULL};
	static int symbol;

	cudaLaunchCooperativeKernel((void *)kernel, grid, block, NULL, 0,
				    S(cudaLaunchCooperativeKernel));
	cudaLaunchCooperativeKernel_ptsz((void *)kernel, grid, block, NULL, 0,
					 S(cudaLaunchCooperativeKernel_ptsz));
	cudaLaunchHostFunc(S(cudaLaunchHostFunc), host_fn, NULL);
	cudaLaunchHostFunc_ptsz(S(cudaLaunchHostFunc_ptsz), host_fn, NULL);
	cudaMemcpy2DAsync(NULL, 0, NULL, 0, 0, 0, cudaMemcpyDefault, S(cudaMemcpy2DAsync));
	cudaMemcpy2DAsync_ptsz(NULL, 0, NULL, 0, 0, 0, cudaMemcpyDefault,
			       S(cudaMemcpy2DAsync_ptsz));
	cudaMemcpy3DAsync(&p3, S(cudaMemcpy3DAsync));
	cudaMemcpy3DAsync_ptsz(&p3, S(cudaMemcpy3DAsync_ptsz));
	cudaMemcpyPeerAsync(NULL, 0, NULL, 1, 0, S(cudaMemcpyPeerAsync));
	cudaMemcpy3DPeerAsync(&pp3, S(cudaMemcpy3DPeerAsync));
	cudaMemcpy3DPeerAsync_ptsz(&pp3, S(cudaMemcpy3DPeerAsync_ptsz));
	cudaMemcpyToSymbolAsync(&symbol, NULL, 0, 0, cudaMemcpyHostToDevice,
				S(cudaMemcpyToSymbolAsync));
	cudaMemcpyToSymbolAsync_ptsz(&symbol, NULL, 0, 0, cudaMemcpyHostToDevice,
				     S(cudaMemcpyToSymbolAsync_ptsz));
	cudaMemcpyFromSymbolAsync(NULL, &symbol, 0, 0, cudaMemcpyDeviceToHost,
				  S(cudaMemcpyFromSymbolAsync));
	cudaMemcpyFromSymbolAsync_ptsz(NULL, &symbol, 0, 0, cudaMemcpyDeviceToHost,
				       S(cudaMemcpyFromSymbolAsync_ptsz));
	cudaMemcpyToArrayAsync(NULL, 0, 0, NULL, 0, cudaMemcpyHostToDevice,
			       S(cudaMemcpyToArrayAsync));
	cudaMemcpyToArrayAsync_ptsz(NULL, 0, 0, NULL, 0, cudaMemcpyHostToDevice,
				    S(cudaMemcpyToArrayAsync_ptsz));
	cudaMemcpyFromArrayAsync(NULL, NULL, 0, 0, 0, cudaMemcpyDeviceToHost,
				 S(cudaMemcpyFromArrayAsync));
	cudaMemcpyFromArrayAsync_ptsz(NULL, NULL, 0, 0, 0, cudaMemcpyDeviceToHost,
				      S(cudaMemcpyFromArrayAsync_ptsz));
	cudaMemcpy2DToArrayAsync(NULL, 0, 0, NULL, 0, 0, 0, cudaMemcpyHostToDevice,
				 S(cudaMemcpy2DToArrayAsync));
	cudaMemcpy2DToArrayAsync_ptsz(NULL, 0, 0, NULL, 0, 0, 0, cudaMemcpyHostToDevice,
				      S(cudaMemcpy2DToArrayAsync_ptsz));
	cudaMemcpy2DFromArrayAsync(NULL, 0, NULL, 0, 0, 0, 0, cudaMemcpyDeviceToHost,
				   S(cudaMemcpy2DFromArrayAsync));
	cudaMemcpy2DFromArrayAsync_ptsz(NULL, 0, NULL, 0, 0, 0, 0, cudaMemcpyDeviceToHost,
					S(cudaMemcpy2DFromArrayAsync_ptsz));
	cudaMemcpyBatchAsync(dsts, srcs, sizes, 1, NULL, idx, 0, S(cudaMemcpyBatchAsync));
	cudaMemcpyBatchAsync_ptsz(dsts, srcs, sizes, 1, NULL, idx, 0, S(cudaMemcpyBatchAsync_ptsz));
	cudaMemcpy3DBatchAsync(0, NULL, 0, S(cudaMemcpy3DBatchAsync));
	cudaMemcpy3DBatchAsync_ptsz(0, NULL, 0, S(cudaMemcpy3DBatchAsync_ptsz));
	cudaMemset2DAsync(NULL, 0, 0, 0, 0, S(cudaMemset2DAsync));
	cudaMemset2DAsync_ptsz(NULL, 0, 0, 0, 0, S(cudaMemset2DAsync_ptsz));
	cudaMemset3DAsync(pitched, 0, extent, S(cudaMemset3DAsync));
	cudaMemset3DAsync_ptsz(pitched, 0, extent, S(cudaMemset3DAsync_ptsz));
}

NOINLINE void xs_sync(void)
{
	for (int i = 0; i < 5; i++)
		cudaStreamSynchronize(S(cudaStreamSynchronize));
	cudaStreamSynchronize_ptsz(S(cudaStreamSynchronize_ptsz));
	for (int i = 0; i < 2; i++)
		cudaEventSynchronize(NULL);
	for (int i = 0; i < 3; i++)
		cudaDeviceSynchronize();
}

/* The driver API, called directly; a runtime call right before each launch, so a driver call
 * made lower in the same frame is not taken for one nested in it. */
NOINLINE void xs_driver(void)
{
	CUlaunchConfig cfg = {.gridDimX = 1,
			      .gridDimY = 1,
			      .gridDimZ = 1,
			      .blockDimX = 32,
			      .blockDimY = 1,
			      .blockDimZ = 1};

	for (int i = 0; i < 3; i++) {
		cudaStreamSynchronize(S(cudaStreamSynchronize));
		cuLaunchKernel(NULL, 1, 1, 1, 32, 1, 1, 0, D(cuLaunchKernel), NULL, NULL);
	}
	cuLaunchKernel_ptsz(NULL, 1, 1, 1, 32, 1, 1, 0, D(cuLaunchKernel_ptsz), NULL, NULL);
	cfg.hStream = D(cuLaunchKernelEx);
	cuLaunchKernelEx(&cfg, NULL, NULL, NULL);
	cuLaunchKernelEx(&cfg, NULL, NULL, NULL);
	cfg.hStream = D(cuLaunchKernelEx_ptsz);
	cuLaunchKernelEx_ptsz(&cfg, NULL, NULL, NULL);
	cuLaunchCooperativeKernel(NULL, 1, 1, 1, 32, 1, 1, 0, D(cuLaunchCooperativeKernel), NULL);
	cuLaunchCooperativeKernel_ptsz(NULL, 1, 1, 1, 32, 1, 1, 0,
				       D(cuLaunchCooperativeKernel_ptsz), NULL);
	cuLaunchHostFunc(D(cuLaunchHostFunc), host_fn, NULL);
	cuLaunchHostFunc_ptsz(D(cuLaunchHostFunc_ptsz), host_fn, NULL);
	cuGraphLaunch(NULL, D(cuGraphLaunch)); /* calls cuStreamSynchronize inside */
	cuGraphLaunch_ptsz(NULL, D(cuGraphLaunch_ptsz));
	cuMemcpyAsync(0, 0, 0, D(cuMemcpyAsync));
	cuMemcpyAsync_ptsz(0, 0, 0, D(cuMemcpyAsync_ptsz));
	cuMemcpyHtoDAsync_v2(0, NULL, 0, D(cuMemcpyHtoDAsync_v2));
	cuMemcpyHtoDAsync_v2_ptsz(0, NULL, 0, D(cuMemcpyHtoDAsync_v2_ptsz));
	cuMemcpyDtoHAsync_v2(NULL, 0, 0, D(cuMemcpyDtoHAsync_v2));
	cuMemcpyDtoHAsync_v2_ptsz(NULL, 0, 0, D(cuMemcpyDtoHAsync_v2_ptsz));
	cuMemcpyDtoDAsync_v2(0, 0, 0, D(cuMemcpyDtoDAsync_v2));
	cuMemcpyDtoDAsync_v2_ptsz(0, 0, 0, D(cuMemcpyDtoDAsync_v2_ptsz));
	cuMemsetD8Async(0, 0, 0, D(cuMemsetD8Async));
	cuMemsetD8Async_ptsz(0, 0, 0, D(cuMemsetD8Async_ptsz));
	cuMemsetD32Async(0, 0, 0, D(cuMemsetD32Async));
	cuMemsetD32Async_ptsz(0, 0, 0, D(cuMemsetD32Async_ptsz));
	for (int i = 0; i < 2; i++)
		cuStreamSynchronize(D(cuStreamSynchronize));
	cuStreamSynchronize_ptsz(D(cuStreamSynchronize_ptsz));
	cuEventSynchronize(NULL);
	cuCtxSynchronize();
}

void xs_cuda_main_calls(void)
{
	xs_setup();
	for (int i = 0; i < 3; i++)
		xs_train_step();
	xs_copies();
	xs_misc();
	xs_sync();
	xs_driver();
}

NOINLINE void xs_worker_launch(void)
{
	for (int i = 0; i < 10; i++)
		cudaLaunchKernel((void *)kernel, grid, block, NULL, 0, S(cudaLaunchKernel));
}

void xs_cuda_worker_calls(void)
{
	xs_worker_launch();
}

NOINLINE void xs_forked_launch(void)
{
	for (int i = 0; i < 4; i++)
		cudaLaunchKernel((void *)kernel, grid, block, NULL, 0, S(cudaLaunchKernel));
}

void xs_cuda_forked_calls(void)
{
	xs_forked_launch();
}

NOINLINE void xs_exec_copy(void)
{
	for (int i = 0; i < 2; i++)
		cudaMemcpyAsync(NULL, NULL, 0, cudaMemcpyHostToDevice, S(cudaMemcpyAsync));
}

void xs_cuda_exec_calls(void)
{
	xs_exec_copy();
}
