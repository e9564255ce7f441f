// SPDX-License-Identifier: Apache-2.0
/*
 * A small CUDA program in plain C (no nvcc: the kernel is PTX the driver compiles at load).
 * Without a GPU its CUDA calls fail and it exits 0 all the same, which is what the tests check
 * with libxsprof_cupti.so injected. With a GPU it launches kernels, copies, a memset, a graph
 * and NVTX ranges, so `xsprof-cupti-dump` beside it shows every record type:
 *
 *   xsprof-cupti-dump -s /tmp/c.sock &
 *   CUDA_INJECTION64_PATH=libxsprof_cupti.so XSPROF_CUPTI_SOCKET=/tmp/c.sock \
 *   NVTX_INJECTION64_PATH=/usr/local/cuda/lib64/libcupti.so xs_cudart_smoke 100
 */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>

/* y = a * x + y; hand-kept PTX so any driver new enough for this runtime can JIT it. */
static const char axpy_ptx[] = ".version 7.0\n"
			       ".target sm_70\n"
			       ".address_size 64\n"
			       ".visible .entry xs_axpy(.param .f32 pa, .param .u64 px,\n"
			       "                        .param .u64 py, .param .u32 pn)\n"
			       "{\n"
			       "  .reg .pred %p<2>; .reg .f32 %f<5>; .reg .b32 %r<6>;\n"
			       "  .reg .b64 %rd<8>;\n"
			       "  ld.param.f32 %f1, [pa];\n"
			       "  ld.param.u64 %rd1, [px];\n"
			       "  ld.param.u64 %rd2, [py];\n"
			       "  ld.param.u32 %r2, [pn];\n"
			       "  mov.u32 %r3, %ctaid.x;\n"
			       "  mov.u32 %r4, %ntid.x;\n"
			       "  mov.u32 %r5, %tid.x;\n"
			       "  mad.lo.s32 %r1, %r3, %r4, %r5;\n"
			       "  setp.ge.s32 %p1, %r1, %r2;\n"
			       "  @%p1 bra DONE;\n"
			       "  cvta.to.global.u64 %rd3, %rd2;\n"
			       "  cvta.to.global.u64 %rd4, %rd1;\n"
			       "  mul.wide.s32 %rd5, %r1, 4;\n"
			       "  add.s64 %rd6, %rd4, %rd5;\n"
			       "  ld.global.f32 %f2, [%rd6];\n"
			       "  add.s64 %rd7, %rd3, %rd5;\n"
			       "  ld.global.f32 %f3, [%rd7];\n"
			       "  fma.rn.f32 %f4, %f2, %f1, %f3;\n"
			       "  st.global.f32 [%rd7], %f4;\n"
			       "DONE:\n"
			       "  ret;\n"
			       "}\n";

#define N 4096

static int check(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	printf("%s: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
	return -1;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 100, devices = 0, bad = 0;
	static float host_x[N], host_y[N];
	float a = 2.0f, *x = NULL, *y = NULL;
	cudaLibrary_t lib;
	cudaKernel_t kernel;
	cudaStream_t stream;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	int n = N;
	void *args[] = {&a, &x, &y, &n};
	dim3 grid = {N / 256, 1, 1}, block = {256, 1, 1};
	cudaError_t e;

	e = cudaGetDeviceCount(&devices);
	if (e != cudaSuccess || devices == 0) {
		printf("no CUDA device (%s); trying a few calls anyway\n", cudaGetErrorName(e));
		printf("cudaMalloc: %s\n", cudaGetErrorName(cudaMalloc((void **)&x, 4096)));
		printf("cudaDeviceSynchronize: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
		return 0;
	}
	for (int i = 0; i < N; i++) {
		host_x[i] = 1.0f;
		host_y[i] = 0.0f;
	}
	if (check(cudaLibraryLoadData(&lib, axpy_ptx, NULL, NULL, 0, NULL, NULL, 0), "load PTX") ||
	    check(cudaLibraryGetKernel(&kernel, lib, "xs_axpy"), "get kernel") ||
	    check(cudaStreamCreate(&stream), "stream") ||
	    check(cudaMalloc((void **)&x, sizeof(host_x)), "malloc x") ||
	    check(cudaMalloc((void **)&y, sizeof(host_y)), "malloc y"))
		return 1;

	nvtxRangePushA("xs_cudart_smoke");
	cudaMemsetAsync(y, 0, sizeof(host_y), stream);
	cudaMemcpyAsync(x, host_x, sizeof(host_x), cudaMemcpyHostToDevice, stream);
	for (int i = 0; i < iters; i++) {
		nvtxRangePushA("launch");
		/* A cudaKernel_t stands in for the __global__ symbol nvcc would have given us. */
		bad |= check(cudaLaunchKernel((const void *)kernel, grid, block, args, 0, stream),
			     "launch");
		nvtxRangePop();
	}
	/* The same launch three more times, as a graph. */
	cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
	cudaLaunchKernel((const void *)kernel, grid, block, args, 0, stream);
	if (!check(cudaStreamEndCapture(stream, &graph), "capture") &&
	    !check(cudaGraphInstantiate(&exec, graph, 0), "instantiate")) {
		for (int i = 0; i < 3; i++)
			bad |= check(cudaGraphLaunch(exec, stream), "graph launch");
	}
	cudaMemcpyAsync(host_y, y, sizeof(host_y), cudaMemcpyDeviceToHost, stream);
	bad |= check(cudaStreamSynchronize(stream), "sync");
	nvtxRangePop();
	if (host_y[N - 1] != a * (float)(iters + 3)) {
		printf("wrong result: %f, want %f\n", host_y[N - 1], a * (float)(iters + 3));
		bad = 1;
	}
	cudaFree(x);
	cudaFree(y);
	printf("%s: %d launches + 3 graph launches on %d device(s)\n", bad ? "FAILED" : "ok", iters,
	       devices);
	return bad ? 1 : 0;
}
