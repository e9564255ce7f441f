// SPDX-License-Identifier: Apache-2.0
/*
 * xs_cuda_bench: the CPU time one CUDA launch call takes, for bench/cuda_launch.sh.
 *
 * Usage: xs_cuda_bench MODE CALLS [CUDART]
 *   uprobe  cudaLaunchKernel through libcudart (the uprobe path: a probe at its entry)
 *   usdt    xsprof:launch through the fake injection library, as CUPTI's API-enter callback
 *           fires it in libxsprof_cupti.so (the USDT path), on its 5-byte nop site
 *   usdt-int3  the same on sdt.h's 1-byte nop site, which a uprobe can only trap
 *   both    uprobe and usdt, in that order, per call
 * Prints "MODE ns_per_call N": thread CPU time (user + system, which is where uprobe handling is
 * charged) over the loop, divided by CALLS. Without a GPU the launch fails at once, so what it
 * measures is the call itself plus what profiling adds to it.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef void (*enter_fn)(uint32_t, uint32_t);

__attribute__((noinline)) static void kernel(void)
{
}

static double thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *cudart = argc > 3 ? argv[3] : XS_CUDART_PATH;
	bool uprobe = !strcmp(mode, "uprobe") || !strcmp(mode, "both");
	bool int3 = !strcmp(mode, "usdt-int3");
	bool usdt = !strcmp(mode, "usdt") || !strcmp(mode, "both") || int3;
	const char *fake = int3 ? XS_CUPTI_FAKE_INT3_PATH : XS_CUPTI_FAKE_PATH;
	long calls = argc > 2 ? atol(argv[2]) : 0;
	dim3 grid = {1, 1, 1}, block = {32, 1, 1};
	launch_fn launch = NULL;
	enter_fn enter = NULL;
	double t0, t1;

	if ((!uprobe && !usdt) || calls <= 0) {
		fprintf(stderr,
			"usage: xs_cuda_bench uprobe|usdt|usdt-int3|both CALLS [LIBCUDART]\n");
		return 2;
	}
	/* Loaded at run time, so a mode maps only the library it measures. */
	if (uprobe) {
		void *h = dlopen(cudart, RTLD_NOW);

		launch = h ? (launch_fn)dlsym(h, "cudaLaunchKernel") : NULL;
		if (!launch) {
			fprintf(stderr, "xs_cuda_bench: %s: %s\n", cudart, dlerror());
			return 1;
		}
	}
	if (usdt) {
		void *h = dlopen(fake, RTLD_NOW);

		enter = h ? (enter_fn)dlsym(h, "xs_fake_cuda_launch") : NULL;
		if (!enter) {
			fprintf(stderr, "xs_cuda_bench: %s: %s\n", fake, dlerror());
			return 1;
		}
	}
	/* Warm up (first calls initialize the runtime), then measure. */
	for (long i = 0; i < 1000; i++) {
		if (enter)
			enter((uint32_t)i, (2u << 16) | 211);
		if (launch)
			launch((void *)kernel, grid, block, NULL, 0, NULL);
	}
	t0 = thread_cpu_ns();
	for (long i = 0; i < calls; i++) {
		if (enter)
			enter((uint32_t)i, (2u << 16) | 211);
		if (launch)
			launch((void *)kernel, grid, block, NULL, 0, NULL);
	}
	t1 = thread_cpu_ns();
	printf("%s ns_per_call %.1f\n", mode, (t1 - t0) / calls);
	return 0;
}
