/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hand-made training jobs for the job report's tests (test_job_report, test_job_merge): ranks
 * each step running four compute kernels and an all-reduce that starts at the rank's arrival
 * and ends at the last arrival plus its time, as NCCL's kernels wait for their peers.
 */
#ifndef XSPROF_TESTS_JOB_SIM_H
#define XSPROF_TESTS_JOB_SIM_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "correlate/correlate.h"
#include "output/model/profile.h"

#define US	1000ull
#define MS	(1000 * US)
#define MAXR	8
#define MAX_REC 4096

static const char *const st_launch[] = {"main", "train", "forward", "cudaLaunchKernel"};
static const char *const st_nccl[] = {"main", "train", "all_reduce", "cudaLaunchKernel"};
static const char *const st_load1[] = {"main", "train", "xs_load_data", "read"};
static const char *const st_load2[] = {"main", "train", "xs_load_data", "decode"};
/* A loader thread's work, and the launching thread waiting for it (wait chains). */
static const char *const st_loader[] = {"start_thread", "loader", "decode_batch"};
static const char *const st_wait[] = {
	"main",	       "train", "wait_batch", "pthread_cond_wait", "__futex_abstimed_wait_common",
	"schedule_[k]"};

static int stack_fn(void *ctx, uint32_t pid, uint32_t id, const char *const **ret, size_t *n)
{
	(void)ctx, (void)pid;
#define CASE(i, a)                             \
	case i:                                \
		*ret = a;                      \
		*n = sizeof(a) / sizeof(a[0]); \
		return 0
	switch (id) {
		CASE(1, st_launch);
		CASE(2, st_nccl);
		CASE(3, st_load1);
		CASE(4, st_load2);
		CASE(5, st_loader);
		CASE(6, st_wait);
	}
	return -ENOENT;
#undef CASE
}

struct job_sim {
	int ranks, steps;
	double slow[MAXR];	   /* compute time factor per rank */
	uint64_t host_delay[MAXR]; /* host time before the step's launches */
	char labels[MAXR][128];
	bool no_label[MAXR];
	int skip_last_coll_of; /* a rank that does not run the last all-reduce (-1) */
	bool no_nccl;
	const char *kernel; /* the collective's name */
	struct corr_cpu_rec launches[MAX_REC];
	struct corr_gpu_rec gpu[MAX_REC];
	struct profile_join joins[MAX_REC];
	struct profile_sample samples[MAX_REC];
	size_t nl, ng, nj, ns;
	struct profile_data pd;
};

static const char *labels_of(void *ctx, uint32_t pid)
{
	struct job_sim *s = ctx;
	int k = (int)pid - 1000;

	return k >= 0 && k < s->ranks && !s->no_label[k] ? s->labels[k] : "";
}

static void launch(struct job_sim *s, int k, uint64_t at, const char *name, uint64_t start,
		   uint64_t end, uint32_t stack, uint32_t stream)
{
	uint32_t pid = 1000 + (uint32_t)k, corr = (uint32_t)s->ng + 1;

	s->launches[s->nl] = (struct corr_cpu_rec){.kind = CORR_CPU_USDT,
						   .api_kind = CORR_API_KERNEL,
						   .pid = pid,
						   .tid = pid,
						   .time_ns = at,
						   .corr_id = corr,
						   .stack_id = stack,
						   .api_name = "cudaLaunchKernel"};
	s->gpu[s->ng] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
					      .pid = pid,
					      .stream_id = stream,
					      .corr_id = corr,
					      .start_ns = start,
					      .end_ns = end,
					      .name = name};
	s->joins[s->nj++] = (struct profile_join){.launch = s->nl++, .gpu = s->ng++};
}

/* Plays the job: each step starts on the hosts 5 ms before the GPUs are done with the last. */
static struct profile_data *play(struct job_sim *s)
{
	uint64_t t = 10 * MS, gpu_free[MAXR], arrive[MAXR];

	for (int k = 0; k < s->ranks; k++) {
		gpu_free[k] = 0;
		if (!s->labels[k][0])
			snprintf(s->labels[k], sizeof(s->labels[k]),
				 "job.id=run1\x1fjob.rank=%d\x1fjob.world_size=%d", k, s->ranks);
	}
	for (int st = 0; st < s->steps; st++) {
		uint64_t last = 0, end;

		for (int k = 0; k < s->ranks; k++) {
			uint64_t l = t + s->host_delay[k];
			double f = s->slow[k] ? s->slow[k] : 1;

			/* The launching thread's samples while it loads data: every 1 ms. */
			for (uint64_t at = t + 500 * US; at < l && s->ns < MAX_REC; at += MS)
				s->samples[s->ns++] =
					(struct profile_sample){.time_ns = at,
								.pid = 1000 + (uint32_t)k,
								.tid = 1000 + (uint32_t)k,
								.stack_id = s->ns % 2 ? 3 : 4};
			for (int i = 0; i < 4; i++) {
				uint64_t b = l + 10 * US > gpu_free[k] ? l + 10 * US : gpu_free[k];

				gpu_free[k] = b + (uint64_t)(5 * MS * f);
				launch(s, k, l + (uint64_t)i * US, "xs_k_forward", b, gpu_free[k],
				       1, 7);
			}
			arrive[k] = gpu_free[k];
			last = arrive[k] > last ? arrive[k] : last;
		}
		end = last + MS;
		for (int k = 0; k < s->ranks && !s->no_nccl; k++) {
			uint64_t l = t + s->host_delay[k] + 10 * US;

			if (st == s->steps - 1 && k == s->skip_last_coll_of)
				continue;
			launch(s, k, l,
			       s->kernel
				       ? s->kernel
				       : "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
			       arrive[k], end, 2, 9);
			gpu_free[k] = end;
		}
		for (int k = 0; k < s->ranks; k++) {
			s->gpu[s->ng++] = (struct corr_gpu_rec){.kind = CORR_GPU_NVTX,
								.pid = 1000 + (uint32_t)k,
								.tid = 1000 + (uint32_t)k,
								.start_ns = t,
								.end_ns = end,
								.name = "step"};
		}
		t = end - 5 * MS;
	}
	s->pd = (struct profile_data){.samples = s->samples,
				      .nr_samples = s->ns,
				      .launches = s->launches,
				      .nr_launches = s->nl,
				      .gpu = s->gpu,
				      .nr_gpu = s->ng,
				      .joins = s->joins,
				      .nr_joins = s->nj,
				      .stack = stack_fn,
				      .sample_period_ns = MS,
				      .process_labels = labels_of,
				      .process_labels_ctx = s,
				      .start_ns = 0,
				      .end_ns = t + 100 * MS};
	return &s->pd;
}

static struct job_sim *sim(int ranks, int steps)
{
	struct job_sim *s = calloc(1, sizeof(*s));

	cr_assert(s);
	s->ranks = ranks;
	s->steps = steps;
	s->skip_last_coll_of = -1;
	return s;
}

#endif
