/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU report tests' hand-made profile (test_gpu_report.c, test_gpu_report_merge.c): mixed()
 * has a gap of each cause on device 0, times in us; and the JSON readers the tests share.
 */
#ifndef XSPROF_TESTS_TEST_GPU_REPORT_FIXTURE_H
#define XSPROF_TESTS_TEST_GPU_REPORT_FIXTURE_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <json-c/json.h>

#include "output/output.h"
#include "output/model/profile.h"
#include "tests/lib/test_files.h"

#define US  1000ull
#define PID 100

static const char *const st_train[] = {"main", "train_step"};
static const char *const st_batch[] = {"main", "make_batch"};
static const char *const st_other[] = {"main", "other"};
static const char *const st_queue[] = {"main", "queue_more"};
static const char *const st_sync[] = {"main", "sync_site"};
static const char *const st_main[] = {"main"};

static int stack_of(void *ctx, uint32_t pid, uint32_t id, const char *const **ret, size_t *ret_n)
{
	(void)ctx;
	(void)pid;
	switch (id) {
	case 1:
		*ret = st_train, *ret_n = 2;
		return 0;
	case 2:
		*ret = st_batch, *ret_n = 2;
		return 0;
	case 3:
		*ret = st_other, *ret_n = 2;
		return 0;
	case 4:
		*ret = st_queue, *ret_n = 2;
		return 0;
	case 5:
		*ret = st_sync, *ret_n = 2;
		return 0;
	case 6:
		*ret = st_main, *ret_n = 1;
		return 0;
	}
	return -ENOENT;
}

static struct corr_cpu_rec launches[16];
static struct corr_gpu_rec gpu[16];
static struct profile_join joins[16];
static struct profile_sample samples[8];
static struct profile_wait waits[2];

static void kernel(size_t i, const char *name, uint32_t stream, uint64_t s, uint64_t e)
{
	gpu[i] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
				       .pid = PID,
				       .stream_id = stream,
				       .start_ns = s * US,
				       .end_ns = e * US,
				       .name = name};
}

static void launched(struct profile_data *pd, size_t g, uint64_t t, uint32_t stack)
{
	size_t l = pd->nr_launches++;

	launches[l] = (struct corr_cpu_rec){.kind = CORR_CPU_USDT,
					    .pid = PID,
					    .tid = PID,
					    .time_ns = t * US,
					    .stack_id = stack};
	joins[pd->nr_joins++] = (struct profile_join){.launch = l, .gpu = g};
}

/*
 * Gaps with known causes, on device 0 (times in us):
 *   K0 [10, 1010]; host 4 ms (sampled in make_batch at 2000, 3000, 4000) until K1 [5010, 6010]
 *   launched at 5000; dependency 1 ms until K2 [7010, 8010], launched at 5500; sync 500 us
 *   (cudaStreamSynchronize returned at 8020) until K3 [8510, 9510]; launch 20 us until K4
 *   [9530, 9540]; unknown 60 us until K5 [9600, 9700] (no launch); nccl [9700, 9800] beside
 *   K6 [9750, 9850]; launch 50 us until an 8 MiB pageable async HtoD copy [9900, 10900].
 * Busy 5260 us of 10890 active; idle 4000 host, 1000 dependency, 500 sync, 70 launch, 60
 * unknown.
 */
static void mixed(struct profile_data *pd)
{
	memset(pd, 0, sizeof(*pd));
	memset(launches, 0, sizeof(launches));
	kernel(0, "k_fwd", 7, 10, 1010);
	launched(pd, 0, 0, 1);
	kernel(1, "k_fwd", 7, 5010, 6010);
	launched(pd, 1, 5000, 1);
	kernel(2, "k_bwd", 7, 7010, 8010);
	launched(pd, 2, 5500, 4);
	kernel(3, "k_bwd", 7, 8510, 9510);
	launched(pd, 3, 8500, 1);
	kernel(4, "k_small", 7, 9530, 9540);
	launched(pd, 4, 9520, 1);
	kernel(5, "k_orphan", 7, 9600, 9700);
	kernel(6, "ncclKernel_AllReduce", 9, 9700, 9800);
	launched(pd, 6, 9650, 6);
	kernel(7, "k_small", 7, 9750, 9850);
	launched(pd, 7, 9700, 1);
	gpu[8] = (struct corr_gpu_rec){.kind = CORR_GPU_MEMCPY,
				       .copy_kind = CORR_COPY_HTOD,
				       .host_mem = CORR_HOST_MEM_PAGEABLE,
				       .flags = CORR_GPU_F_ASYNC,
				       .pid = PID,
				       .stream_id = 7,
				       .start_ns = 9900 * US,
				       .end_ns = 10900 * US,
				       .bytes = 8 << 20};
	launched(pd, 8, 9860, 1);
	pd->gpu = gpu;
	pd->nr_gpu = 9;
	pd->launches = launches;
	pd->joins = joins;
	samples[0] =
		(struct profile_sample){.time_ns = 500 * US, .pid = PID, .tid = PID, .stack_id = 3};
	for (int i = 0; i < 3; i++)
		samples[1 + i] = (struct profile_sample){
			.time_ns = (2000 + 1000 * i) * US, .pid = PID, .tid = PID, .stack_id = 2};
	pd->samples = samples;
	pd->nr_samples = 4;
	waits[0] = (struct profile_wait){.start_ns = 7100 * US,
					 .end_ns = 8020 * US,
					 .pid = PID,
					 .tid = PID,
					 .stack_id = 5,
					 .api = "cudaStreamSynchronize"};
	pd->waits = waits;
	pd->nr_waits = 1;
	pd->stack = stack_of;
	pd->start_ns = 0;
	pd->end_ns = 11000 * US;
}

static struct json_object *report_json(const struct profile_data *pd)
{
	return test_written_json(pd, OUTPUT_GPU_REPORT);
}

static struct json_object *get(struct json_object *o, const char *k)
{
	return test_json_get(o, k);
}

static int64_t num(struct json_object *o, const char *k)
{
	return json_object_get_int64(get(o, k));
}

/* The finding of this kind, or NULL. */
static struct json_object *finding(struct json_object *j, const char *kind)
{
	struct json_object *fs = get(j, "findings");

	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		struct json_object *f = json_object_array_get_idx(fs, i);

		if (!strcmp(json_object_get_string(get(f, "kind")), kind))
			return f;
	}
	return NULL;
}

static const char *innermost(struct json_object *o)
{
	struct json_object *st = get(o, "stack");
	size_t n = json_object_array_length(st);

	return n ? json_object_get_string(json_object_array_get_idx(st, n - 1)) : "";
}
#endif
