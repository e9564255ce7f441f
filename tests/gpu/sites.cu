// SPDX-License-Identifier: Apache-2.0
/*
 * xs_gpu_sites: known GPU work from known call sites, for the real-GPU suite (tests/gpu/).
 * Each site is a function of its own (not inlined) that launches one kernel of its own, so
 * every kernel's launching stack must end in exactly one site:
 *
 *   site_runtime   xs_k_runtime  <<<>>> on stream A              (cudaLaunchKernel)
 *   site_ex        xs_k_ex       cudaLaunchKernelEx on stream B  (cudaLaunchKernelExC)
 *   site_driver    xs_k_driver   cuLaunchKernel                  (driver API)
 *   site_driver_ex xs_k_driver_ex cuLaunchKernelEx               (driver API)
 *   site_graph     xs_k_graph    a captured graph of GRAPH_NODES kernels, launched
 *   site_sync      xs_k_sync     one tiny kernel, then cudaDeviceSynchronize: the two clocks'
 *                                agreement is bounded by these (tests/gpu/RESULTS.md)
 *   site_copies    pageable and pinned host-to-device copies, a device-to-host copy, a memset
 *   site_alloc     cudaMalloc of ALLOC_A and ALLOC_B bytes; B is freed, A never is
 *
 * Usage: xs_gpu_sites ROUNDS TRUTH_JSON
 * Writes what it launched (kernels by name, copies, memsets, bytes allocated and left) to
 * TRUTH_JSON for tests/gpu/check.py.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N	    (1 << 16)
#define GRAPH_NODES 5
#define ALLOC_A	    (48ull << 20)
#define ALLOC_B	    (16ull << 20)

#define CHECK(x)                                                                          \
	do {                                                                              \
		cudaError_t e_ = (x);                                                     \
		if (e_ != cudaSuccess) {                                                  \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,         \
				cudaGetErrorString(e_));                                  \
			exit(1);                                                          \
		}                                                                         \
	} while (0)
#define CHECK_CU(x)                                                                       \
	do {                                                                              \
		CUresult r_ = (x);                                                        \
		if (r_ != CUDA_SUCCESS) {                                                 \
			const char *s_ = "?";                                             \
			cuGetErrorString(r_, &s_);                                        \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_);    \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

/* Each kernel loops a little so it lasts a few microseconds and is easy to tell apart. */
#define KERNEL(name, spin)                                                                \
	__global__ void name(float *x, int n)                                             \
	{                                                                                 \
		int i = blockIdx.x * blockDim.x + threadIdx.x;                            \
		if (i < n) {                                                              \
			float v = x[i];                                                   \
			for (int k = 0; k < (spin); k++)                                  \
				v = v * 0.999f + 0.001f;                                  \
			x[i] = v;                                                         \
		}                                                                         \
	}
KERNEL(xs_k_runtime, 64)
KERNEL(xs_k_ex, 96)
KERNEL(xs_k_driver, 128)
KERNEL(xs_k_driver_ex, 160)
KERNEL(xs_k_graph, 32)
KERNEL(xs_k_sync, 1)

static const int block = 256, grid = N / 256;
static int counts[6];
enum { K_RUNTIME, K_EX, K_DRIVER, K_DRIVER_EX, K_GRAPH, K_SYNC };
static int copies, memsets;

__attribute__((noinline)) static void site_runtime(cudaStream_t s, float *x, int n)
{
	for (int i = 0; i < n; i++)
		xs_k_runtime<<<grid, block, 0, s>>>(x, N);
	counts[K_RUNTIME] += n;
}

__attribute__((noinline)) static void site_ex(cudaStream_t s, float *x, int n)
{
	cudaLaunchConfig_t cfg = {};
	int len = N;

	cfg.gridDim = dim3(grid);
	cfg.blockDim = dim3(block);
	cfg.stream = s;
	for (int i = 0; i < n; i++)
		CHECK(cudaLaunchKernelEx(&cfg, xs_k_ex, x, len));
	counts[K_EX] += n;
}

static CUfunction driver_fn(const void *kernel)
{
	cudaFunction_t f;

	CHECK(cudaGetFuncBySymbol(&f, kernel));
	return (CUfunction)f;
}

__attribute__((noinline)) static void site_driver(CUstream s, float *x, int n)
{
	CUfunction f = driver_fn((const void *)xs_k_driver);
	int len = N;
	void *args[] = {&x, &len};

	for (int i = 0; i < n; i++)
		CHECK_CU(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, NULL));
	counts[K_DRIVER] += n;
}

__attribute__((noinline)) static void site_driver_ex(CUstream s, float *x, int n)
{
	CUfunction f = driver_fn((const void *)xs_k_driver_ex);
	CUlaunchConfig cfg = {};
	int len = N;
	void *args[] = {&x, &len};

	cfg.gridDimX = grid;
	cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = block;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = s;
	for (int i = 0; i < n; i++)
		CHECK_CU(cuLaunchKernelEx(&cfg, f, args, NULL));
	counts[K_DRIVER_EX] += n;
}

__attribute__((noinline)) static cudaGraphExec_t make_graph(cudaStream_t s, float *x)
{
	cudaGraph_t g;
	cudaGraphExec_t exec;

	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
	for (int i = 0; i < GRAPH_NODES; i++)
		xs_k_graph<<<grid, block, 0, s>>>(x, N);
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphInstantiate(&exec, g, 0));
	CHECK(cudaGraphDestroy(g));
	return exec;
}

__attribute__((noinline)) static void site_graph(cudaGraphExec_t exec, cudaStream_t s, int n)
{
	for (int i = 0; i < n; i++)
		CHECK(cudaGraphLaunch(exec, s));
	counts[K_GRAPH] += n * GRAPH_NODES;
}

__attribute__((noinline)) static void site_sync(float *x, int n)
{
	for (int i = 0; i < n; i++) {
		xs_k_sync<<<1, 32>>>(x, 32);
		CHECK(cudaDeviceSynchronize());
	}
	counts[K_SYNC] += n;
}

__attribute__((noinline)) static void site_copies(cudaStream_t s, float *dev, float *pageable,
						  float *pinned)
{
	size_t bytes = N * sizeof(float);

	CHECK(cudaMemcpyAsync(dev, pageable, bytes, cudaMemcpyHostToDevice, s));
	CHECK(cudaMemcpyAsync(dev, pinned, bytes, cudaMemcpyHostToDevice, s));
	CHECK(cudaMemcpyAsync(pinned, dev, bytes, cudaMemcpyDeviceToHost, s));
	CHECK(cudaMemsetAsync(dev, 0, bytes, s));
	CHECK(cudaStreamSynchronize(s));
	copies += 3;
	memsets += 1;
}

__attribute__((noinline)) static void site_alloc(void **a, void **b)
{
	CHECK(cudaMalloc(a, ALLOC_A));
	CHECK(cudaMalloc(b, ALLOC_B));
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	const char *truth = argc > 2 ? argv[2] : NULL;
	cudaStream_t sa, sb, sg;
	cudaGraphExec_t exec;
	float *x, *y, *z, *w, *pageable, *pinned;
	void *keep, *gone;
	FILE *f;

	if (rounds <= 0) {
		fprintf(stderr, "usage: xs_gpu_sites ROUNDS [TRUTH_JSON]\n");
		return 2;
	}
	CHECK(cudaSetDevice(0));
	CHECK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&sg, cudaStreamNonBlocking));
	site_alloc(&keep, &gone);
	x = (float *)keep;
	y = x + N;
	z = y + N;
	w = z + N;
	pageable = (float *)calloc(N, sizeof(float));
	CHECK(cudaMallocHost((void **)&pinned, N * sizeof(float)));
	CHECK(cudaMemsetAsync(x, 0, 4 * N * sizeof(float), sa));
	CHECK(cudaStreamSynchronize(sa));
	exec = make_graph(sg, z);
	for (int r = 0; r < rounds; r++) {
		site_runtime(sa, x, 20);
		site_ex(sb, y, 10);
		site_driver((CUstream)sa, x, 5);
		site_driver_ex((CUstream)sb, y, 5);
		site_graph(exec, sg, 4);
		CHECK(cudaDeviceSynchronize());
		site_sync(w, 10);
		site_copies(sa, x, pageable, pinned);
	}
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaFree(gone));
	CHECK(cudaGraphExecDestroy(exec));
	if (truth) {
		f = fopen(truth, "w");
		if (!f) {
			perror(truth);
			return 1;
		}
		fprintf(f,
			"{\"kernels\": {\"xs_k_runtime\": %d, \"xs_k_ex\": %d, \"xs_k_driver\": %d, "
			"\"xs_k_driver_ex\": %d, \"xs_k_graph\": %d, \"xs_k_sync\": %d},\n"
			" \"sites\": {\"xs_k_runtime\": \"site_runtime\", \"xs_k_ex\": \"site_ex\", "
			"\"xs_k_driver\": \"site_driver\", \"xs_k_driver_ex\": \"site_driver_ex\", "
			"\"xs_k_graph\": \"site_graph\", \"xs_k_sync\": \"site_sync\"},\n"
			" \"copies\": %d, \"memsets\": %d, \"graph_nodes\": %d,\n"
			" \"alloc\": {\"site\": \"site_alloc\", \"allocated\": %llu, \"left\": %llu}}\n",
			counts[K_RUNTIME], counts[K_EX], counts[K_DRIVER], counts[K_DRIVER_EX],
			counts[K_GRAPH], counts[K_SYNC], copies, memsets + 1, GRAPH_NODES,
			(unsigned long long)(ALLOC_A + ALLOC_B), (unsigned long long)ALLOC_A);
		fclose(f);
	}
	return 0;
}
