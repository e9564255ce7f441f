// SPDX-License-Identifier: Apache-2.0
/*
 * xs_cuda_bench: the CPU time one CUDA launch call takes, for bench/cuda_launch.sh.
 *
 * Usage: xs_cuda_bench MODE CALLS [CUDART [RATE]]
 *   uprobe  cudaLaunchKernel through libcudart (the uprobe path: a probe at its entry)
 *   usdt    xsprof:launch through the fake injection library, as CUPTI's API-enter callback
 *           fires it in libxsprof_cupti.so (the USDT path), on its 5-byte nop site
 *   usdt-int3  the same on sdt.h's 1-byte nop site, which a uprobe can only trap
 *   both    uprobe and usdt, in that order, per call
 *   MODE-deep  (usdt-deep, both-deep, uprobe-deep) the same, each call made under ~66 frames
 *           without frame pointers, a new chain each call (bench/cuda_launch_deep.c: what a
 *           PyTorch launch looks like to the probe, which cannot reuse its last walk);
 *           XS_DEEP_FRAMES sets the levels (8..200, default 32: two frames each)
 * Prints "MODE ns_per_call N": thread CPU time (user + system, which is where uprobe handling is
 * charged) over the loop, divided by CALLS. Without a GPU the launch fails at once, so what it
 * measures is the call itself plus what profiling adds to it.
 * RATE: at most RATE calls a second, in batches each millisecond (bench/scale.sh: the service's
 * cost per launch at a given rate); it also prints "rate R" (the calls a second it made).
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef void (*enter_fn)(uint32_t, uint32_t);

void xs_deep_call(int depth, long i, void (*leaf)(long, void *), void *arg);

struct call {
	launch_fn launch;
	enter_fn enter;
};

/* One launch call as the application makes it: the injection's API-enter callback (usdt),
 * then the runtime's entry (uprobe). */
static void one_call(long i, void *arg)
{
	const struct call *c = arg;
	dim3 grid = {1, 1, 1}, block = {32, 1, 1};

	if (c->enter)
		c->enter((uint32_t)i, (2u << 16) | 211);
	if (c->launch)
		c->launch((void *)(uintptr_t)one_call, grid, block, NULL, 0, NULL);
}

static double thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	char mode[32];
	const char *cudart = argc > 3 ? argv[3] : XS_CUDART_PATH,
		   *deep_env = getenv("XS_DEEP_FRAMES");
	size_t ml = strlen(argc > 1 ? argv[1] : "");
	bool deep = ml > 5 && ml < sizeof(mode) && !strcmp(argv[1] + ml - 5, "-deep");
	int depth = deep_env ? atoi(deep_env) : 32;

	snprintf(mode, sizeof(mode), "%.*s", deep ? (int)ml - 5 : (int)ml, argc > 1 ? argv[1] : "");
	bool uprobe = !strcmp(mode, "uprobe") || !strcmp(mode, "both");
	bool int3 = !strcmp(mode, "usdt-int3");
	bool usdt = !strcmp(mode, "usdt") || !strcmp(mode, "both") || int3;
	const char *fake = int3 ? XS_CUPTI_FAKE_INT3_PATH : XS_CUPTI_FAKE_PATH;
	long calls = argc > 2 ? atol(argv[2]) : 0;
	launch_fn launch = NULL;
	enter_fn enter = NULL;
	struct call c;
	double rate = argc > 4 ? atof(argv[4]) : 0, t0, t1, w0;

	if ((!uprobe && !usdt) || calls <= 0 || depth < 8 || depth > 200) {
		fprintf(stderr, "usage: xs_cuda_bench uprobe|usdt|usdt-int3|both[-deep] CALLS "
				"[LIBCUDART [RATE]]\n");
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
	c.launch = launch;
	c.enter = enter;
	/* Warm up (first calls initialize the runtime), then measure. */
	for (long i = 0; i < 1000; i++) {
		if (deep)
			xs_deep_call(depth, i, one_call, &c);
		else
			one_call(i, &c);
	}
	t0 = thread_cpu_ns();
	w0 = mono_ns();
	for (long i = 0; i < calls; i++) {
		if (deep)
			xs_deep_call(depth, i, one_call, &c);
		else
			one_call(i, &c);
		/* Ahead of the rate: wait out the rest of this millisecond. */
		if (rate > 0 && (i + 1) % ((long)(rate / 1000) + 1) == 0) {
			double ahead = w0 + (i + 1) / rate * 1e9 - mono_ns();

			if (ahead > 0)
				usleep((useconds_t)(ahead / 1e3));
		}
	}
	t1 = thread_cpu_ns();
	printf("%s%s ns_per_call %.1f\n", mode, deep ? "-deep" : "", (t1 - t0) / calls);
	if (rate > 0)
		printf("rate %.0f\n", calls / ((mono_ns() - w0) / 1e9));
	return 0;
}
