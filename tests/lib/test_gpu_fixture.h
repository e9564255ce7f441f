/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One synthetic GPU profile for the writer tests: two processes reusing correlation ids, two
 * GPUs and several streams, a graph launch with three kernels, a copy, a sync, GPU work nothing
 * was joined to, NVTX ranges, and names that JSON and XML must escape. Sampling period 100 us,
 * so GPU times of hundreds of microseconds are whole samples.
 */
#ifndef XSPROF_TESTS_TEST_GPU_FIXTURE_H
#define XSPROF_TESTS_TEST_GPU_FIXTURE_H

#include <errno.h>
#include <string.h>

#include "correlate/correlate.h"
#include "output/model/profile.h"

#define FX_US	  1000ull
#define FX_MS	  (1000 * FX_US)
#define FX_PERIOD (100 * FX_US)

static const char *const fx_stack1[] = {"main", "train_step", "forward", "cudaLaunchKernel"};
static const char *const fx_stack2[] = {"main", "train_step", "backward", "cudaLaunchKernel"};
static const char *const fx_stack3[] = {"main", "load", "cudaMemcpyAsync"};
static const char *const fx_stack4[] = {"main", "train_step", "cudaGraphLaunch"};
static const char *const fx_stack5[] = {"main", "sync", "cudaStreamSynchronize"};
static const char *const fx_stack10[] = {"main", "train_step", "forward", "matmul_cpu"};
static const char *const fx_stack11[] = {"main", "load", "decode"};
static const char *const fx_stack20[] = {"main", "infer", "cudaLaunchKernel"};

static int fx_stack(void *ctx, uint32_t pid, uint32_t id, const char *const **ret, size_t *ret_n)
{
#define FX_CASE(n)                                                     \
	case n:                                                        \
		*ret = fx_stack##n;                                    \
		*ret_n = sizeof(fx_stack##n) / sizeof(fx_stack##n[0]); \
		return 0
	switch (id) {
		FX_CASE(1);
		FX_CASE(2);
		FX_CASE(3);
		FX_CASE(4);
		FX_CASE(5);
		FX_CASE(10);
		FX_CASE(11);
		FX_CASE(20);
	}
	return -ENOENT;
#undef FX_CASE
}

static const char *fx_name(void *ctx, uint32_t pid, uint32_t tid)
{
	if (!tid)
		return pid == 100 ? "trainer" : pid == 200 ? "other" : NULL;
	return tid == 101 ? "main" : tid == 102 ? "loader\t\"q\"" : NULL;
}

static const struct profile_sample fx_samples[] = {
	{.time_ns = 0, .pid = 100, .tid = 101, .stack_id = 10},
	{.time_ns = 100 * FX_US, .pid = 100, .tid = 101, .stack_id = 10},
	{.time_ns = 200 * FX_US, .pid = 100, .tid = 101, .stack_id = 1},
	{.time_ns = 50 * FX_US, .pid = 100, .tid = 102, .stack_id = 11},
	{.time_ns = 900 * FX_US, .pid = 100, .tid = 101, .stack_id = 999}, /* unknown stack */
};

#define FX_LAUNCH(k, p, t, at, corr, sid, api, name)                                            \
	{                                                                                       \
		.kind = k, .api_kind = api, .pid = p, .tid = t, .time_ns = at, .corr_id = corr, \
		.stack_id = sid, .api_name = name, .stream = 0x7f00001000                       \
	}

static const struct corr_cpu_rec fx_launches[] = {
	FX_LAUNCH(CORR_CPU_USDT, 100, 101, 1 * FX_MS, 1, 1, CORR_API_KERNEL, "cudaLaunchKernel"),
	FX_LAUNCH(CORR_CPU_USDT, 100, 101, 2 * FX_MS, 2, 2, CORR_API_KERNEL, "cudaLaunchKernel"),
	FX_LAUNCH(CORR_CPU_UPROBE, 100, 102, 3 * FX_MS, 0, 3, CORR_API_MEMCPY, "cudaMemcpyAsync"),
	FX_LAUNCH(CORR_CPU_USDT, 100, 101, 4 * FX_MS, 4, 4, CORR_API_GRAPH, "cudaGraphLaunch"),
	FX_LAUNCH(CORR_CPU_USDT, 200, 200, 1500 * FX_US, 1, 20, CORR_API_KERNEL,
		  "cudaLaunchKernel"),
	FX_LAUNCH(CORR_CPU_USDT, 100, 101, 6 * FX_MS, 6, 5, CORR_API_SYNC, "cudaStreamSynchronize"),
	/* No API record covers this one, and nothing ran for it. */
	FX_LAUNCH(CORR_CPU_UPROBE, 100, 101, 7 * FX_MS, 0, 1, CORR_API_KERNEL, "cudaLaunchKernel"),
};

#define FX_GPU(k, p, t, dev, st, corr, s, e, nm)                                                \
	{                                                                                       \
		.kind = k, .pid = p, .tid = t, .device = dev, .stream_id = st, .corr_id = corr, \
		.start_ns = s, .end_ns = e, .name = nm                                          \
	}

enum {
	FX_API0,
	FX_API0_DRV,
	FX_API1,
	FX_API2,
	FX_API3,
	FX_API5,
	FX_K0,
	FX_K1,
	FX_M2,
	FX_G1,
	FX_G2,
	FX_G3,
	FX_K4,
	FX_S5,
	FX_ORPHAN,
	FX_NVTX,
	FX_NVTX2,
	FX_NGPU
};

static struct corr_gpu_rec fx_gpu[FX_NGPU] = {
	[FX_API0] = FX_GPU(CORR_GPU_RUNTIME_API, 100, 101, 0, 0, 1, 1 * FX_MS + 1 * FX_US,
			   1 * FX_MS + 20 * FX_US, "cudaLaunchKernel"),
	[FX_API0_DRV] = FX_GPU(CORR_GPU_DRIVER_API, 100, 101, 0, 0, 1, 1 * FX_MS + 5 * FX_US,
			       1 * FX_MS + 15 * FX_US, "cuLaunchKernel"),
	[FX_API1] = FX_GPU(CORR_GPU_RUNTIME_API, 100, 101, 0, 0, 2, 2 * FX_MS - 1 * FX_US,
			   2 * FX_MS + 10 * FX_US, "cudaLaunchKernel"),
	[FX_API2] = FX_GPU(CORR_GPU_RUNTIME_API, 100, 102, 0, 0, 3, 3 * FX_MS + 2 * FX_US,
			   3 * FX_MS + 30 * FX_US, "cudaMemcpyAsync"),
	[FX_API3] = FX_GPU(CORR_GPU_RUNTIME_API, 100, 101, 0, 0, 4, 4 * FX_MS + 1 * FX_US,
			   4 * FX_MS + 9 * FX_US, "cudaGraphLaunch"),
	[FX_API5] = FX_GPU(CORR_GPU_RUNTIME_API, 100, 101, 0, 0, 6, 6 * FX_MS + 1 * FX_US,
			   6 * FX_MS + 500 * FX_US, "cudaStreamSynchronize"),
	[FX_K0] =
		FX_GPU(CORR_GPU_KERNEL, 100, 0, 0, 7, 1, 1100 * FX_US, 1600 * FX_US, "gemm<float>"),
	[FX_K1] = FX_GPU(CORR_GPU_KERNEL, 100, 0, 0, 7, 2, 2100 * FX_US, 2900 * FX_US, "relu"),
	[FX_M2] = FX_GPU(CORR_GPU_MEMCPY, 100, 0, 0, 8, 3, 3100 * FX_US, 3400 * FX_US, NULL),
	[FX_G1] = FX_GPU(CORR_GPU_KERNEL, 100, 0, 1, 9, 4, 4100 * FX_US, 4200 * FX_US, "g1"),
	[FX_G2] = FX_GPU(CORR_GPU_KERNEL, 100, 0, 1, 9, 4, 4200 * FX_US, 4300 * FX_US, "g2"),
	[FX_G3] = FX_GPU(CORR_GPU_KERNEL, 100, 0, 1, 9, 4, 4300 * FX_US, 4500 * FX_US, "g3"),
	[FX_K4] = FX_GPU(CORR_GPU_KERNEL, 200, 0, 0, 7, 1, 1600 * FX_US, 1900 * FX_US, "conv"),
	[FX_S5] = FX_GPU(CORR_GPU_SYNC, 100, 101, 0, 7, 6, 6 * FX_MS + 10 * FX_US,
			 6 * FX_MS + 410 * FX_US, NULL),
	[FX_ORPHAN] = FX_GPU(CORR_GPU_KERNEL, 100, 0, 0, 7, 99, 7 * FX_MS, 7200 * FX_US,
			     "orphan\x01\xff<&>"),
	[FX_NVTX] = FX_GPU(CORR_GPU_NVTX, 100, 101, 0, 0, 0, 500 * FX_US, 8 * FX_MS, "epoch 1"),
	[FX_NVTX2] = FX_GPU(CORR_GPU_NVTX, 100, 101, 0, 0, 0, 900 * FX_US, 9 * FX_MS,
			    "bad \"name\"\n\xc3\x28"),
};

static const struct profile_join fx_joins[] = {
	{0, FX_K0}, {1, FX_K1}, {2, FX_M2}, {3, FX_G1},
	{3, FX_G2}, {3, FX_G3}, {4, FX_K4}, {5, FX_S5},
};

static void fx_profile(struct profile_data *pd, enum gpu_mode mode, enum weight_unit unit)
{
	fx_gpu[FX_M2].copy_kind = CORR_COPY_HTOD;
	fx_gpu[FX_M2].bytes = 1 << 20;
	fx_gpu[FX_G1].graph_id = fx_gpu[FX_G2].graph_id = fx_gpu[FX_G3].graph_id = 5;
	memset(pd, 0, sizeof(*pd));
	pd->sample_period_ns = FX_PERIOD;
	pd->samples = fx_samples;
	pd->nr_samples = sizeof(fx_samples) / sizeof(fx_samples[0]);
	pd->launches = fx_launches;
	pd->nr_launches = sizeof(fx_launches) / sizeof(fx_launches[0]);
	pd->gpu = fx_gpu;
	pd->nr_gpu = FX_NGPU;
	pd->joins = fx_joins;
	pd->nr_joins = sizeof(fx_joins) / sizeof(fx_joins[0]);
	pd->stack = fx_stack;
	pd->name = fx_name;
	pd->mode = mode;
	pd->unit = unit;
	pd->start_ns = 0;
	pd->end_ns = 10 * FX_MS;
	pd->realtime_offset_ns = 1700000000ll * 1000000000ll;
}

#endif
