// SPDX-License-Identifier: Apache-2.0
/*
 * --correlate-check (daemon/session/join_check.c) on a hand-made run where every launch is
 * seen twice, by its entry uprobe and by xsprof:launch inside the call: id, timestamp and
 * stream join the same kernels to the same calls; a call whose xsprof:launch was lost is
 * joined by timestamp and stream only, and counted apart; a strategy that picks the wrong
 * call is counted as differing.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "correlate/correlate.h"
#include "daemon/session/join_check.h"
#include "output/model/profile.h"

#define US  1000ull
#define PID 100

static struct corr_cpu_rec launches[32];
static struct corr_gpu_rec gpu[32];
static size_t nl, ng;

/* One cudaLaunchKernel call of thread tid at t us on stream handle h, its kernel on CUPTI
 * stream sid: the uprobe at t, xsprof:launch at t + 2 (unless lost), the runtime API record
 * [t + 1, t + 5], the kernel [t + 10, t + 20]. */
static void call(uint32_t tid, uint64_t t, uint64_t h, uint32_t sid, uint32_t corr, bool usdt)
{
	launches[nl++] = (struct corr_cpu_rec){.kind = CORR_CPU_UPROBE,
					       .api_kind = CORR_API_KERNEL,
					       .pid = PID,
					       .tid = tid,
					       .time_ns = t * US,
					       .stream = h,
					       .stack_id = 1,
					       .api_name = "cudaLaunchKernel"};
	if (usdt)
		launches[nl++] = (struct corr_cpu_rec){.kind = CORR_CPU_USDT,
						       .api_kind = CORR_API_KERNEL,
						       .pid = PID,
						       .tid = tid,
						       .time_ns = (t + 2) * US,
						       .corr_id = corr,
						       .stack_id = 2,
						       .api_name = "cudaLaunchKernel"};
	gpu[ng++] = (struct corr_gpu_rec){.kind = CORR_GPU_RUNTIME_API,
					  .pid = PID,
					  .tid = tid,
					  .corr_id = corr,
					  .cbid = 211,
					  .start_ns = (t + 1) * US,
					  .end_ns = (t + 5) * US};
	gpu[ng++] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
					  .pid = PID,
					  .stream_id = sid,
					  .corr_id = corr,
					  .start_ns = (t + 10) * US,
					  .end_ns = (t + 20) * US,
					  .name = "k"};
}

static int by_time_cpu(const void *a, const void *b)
{
	const struct corr_cpu_rec *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

static int by_time_gpu(const void *a, const void *b)
{
	const struct corr_gpu_rec *x = a, *y = b;

	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* As gpu_join__run leaves a profile: both sides sorted, each record's user its index. */
static void profile(struct profile_data *pd)
{
	qsort(launches, nl, sizeof(launches[0]), by_time_cpu);
	qsort(gpu, ng, sizeof(gpu[0]), by_time_gpu);
	for (size_t i = 0; i < nl; i++)
		launches[i].user = i;
	for (size_t i = 0; i < ng; i++)
		gpu[i].user = i;
	*pd = (struct profile_data){
		.launches = launches, .nr_launches = nl, .gpu = gpu, .nr_gpu = ng};
}

Test(join_check, strategies_agree_on_each_call)
{
	struct profile_data pd;
	struct join_check jc;

	nl = ng = 0;
	/* Two threads, two streams, calls 100 us apart; thread 102's third xsprof:launch lost. */
	for (int i = 0; i < 3; i++) {
		call(101, 1000 + 100 * i, 0x1000, 7, 10 + i, true);
		call(102, 1050 + 100 * i, 0x2000, 9, 20 + i, i != 2);
	}
	profile(&pd);
	cr_assert_eq(join_check__run(&pd, &jc), 0);
	cr_assert_eq(jc.work, 6);
	cr_assert_eq(jc.usdt, 5);
	cr_assert_eq(jc.uprobes, 6);
	cr_assert_eq(jc.paired, 5);
	cr_assert_eq(jc.id.joined, 5, "the kernel whose xsprof:launch was lost has no id join");
	cr_assert_eq(jc.timestamp.joined, 6);
	cr_assert_eq(jc.timestamp.agree, 5);
	cr_assert_eq(jc.timestamp.differ, 1, "joined where id joined nothing");
	cr_assert_eq(jc.stream.joined, 6);
	cr_assert_eq(jc.stream.agree, 5);
	cr_assert_eq(jc.stream.differ, 1);
}

Test(join_check, a_wrong_pick_differs)
{
	struct profile_data pd;
	struct join_check jc;

	nl = ng = 0;
	/* Stream order breaks: thread 101's second kernel runs (on stream 7) before its first,
	 * so stream joins each to the other's call; id and timestamp go by correlation id. */
	call(101, 1000, 0x1000, 7, 10, true);
	call(101, 1100, 0x1000, 7, 11, true);
	gpu[1].start_ns = 1150 * US;
	gpu[1].end_ns = 1160 * US;
	gpu[3].start_ns = 1120 * US;
	gpu[3].end_ns = 1130 * US;
	profile(&pd);
	cr_assert_eq(join_check__run(&pd, &jc), 0);
	cr_assert_eq(jc.id.joined, 2);
	cr_assert_eq(jc.timestamp.agree, 2);
	cr_assert_eq(jc.stream.joined, 2);
	cr_assert_eq(jc.stream.differ, 2);
	cr_assert_eq(jc.stream.agree, 0);
	cr_assert_str_eq(jc.stream.miss[0].api, "cudaLaunchKernel");
	cr_assert_eq(jc.stream.miss[0].n, 2);
	cr_assert_null(jc.timestamp.miss[0].api, "timestamp missed nothing");
}

Test(join_check, no_gpu_work)
{
	struct profile_data pd = {0};
	struct join_check jc;

	cr_assert_eq(join_check__run(&pd, &jc), 0);
	cr_assert_eq(jc.work, 0);
	cr_assert_eq(jc.id.joined + jc.timestamp.joined + jc.stream.joined, 0);
}

/* A library's own CUDA runtime (cuBLASLt): xsprof:launch fires at the runtime call, and the only
 * uprobe is on the driver call inside it, after. They are one call; timestamp joins the
 * kernel through the runtime record around the uprobe, stream by the order on its stream. */
Test(join_check, a_driver_uprobe_inside_a_static_runtime_call)
{
	struct profile_data pd;
	struct join_check jc;

	nl = ng = 0;
	for (int i = 0; i < 3; i++) {
		uint64_t t = 1000 + 100 * i;

		launches[nl++] = (struct corr_cpu_rec){.kind = CORR_CPU_USDT,
						       .api_kind = CORR_API_KERNEL,
						       .pid = PID,
						       .tid = 101,
						       .time_ns = t * US,
						       .corr_id = 30 + i,
						       .stack_id = 2,
						       .api_name = "cudaLaunchKernelExC"};
		launches[nl++] = (struct corr_cpu_rec){.kind = CORR_CPU_UPROBE,
						       .api_kind = CORR_API_KERNEL,
						       .pid = PID,
						       .tid = 101,
						       .time_ns = (t + 3) * US,
						       .stream = 0x3000,
						       .stack_id = 1,
						       .api_name = "cuLaunchKernelEx"};
		gpu[ng++] = (struct corr_gpu_rec){.kind = CORR_GPU_RUNTIME_API,
						  .pid = PID,
						  .tid = 101,
						  .corr_id = 30 + i,
						  .start_ns = (t - 1) * US,
						  .end_ns = (t + 8) * US,
						  .name = "cudaLaunchKernelExC"};
		gpu[ng++] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
						  .pid = PID,
						  .stream_id = 11,
						  .corr_id = 30 + i,
						  .start_ns = (t + 20) * US,
						  .end_ns = (t + 30) * US,
						  .name = "gemm"};
	}
	profile(&pd);
	cr_assert_eq(join_check__run(&pd, &jc), 0);
	cr_assert_eq(jc.paired, 3);
	cr_assert_eq(jc.id.joined, 3);
	cr_assert_eq(jc.timestamp.agree, 3, "timestamp: %llu",
		     (unsigned long long)jc.timestamp.joined);
	cr_assert_eq(jc.stream.agree, 3);
}
