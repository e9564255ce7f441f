// SPDX-License-Identifier: Apache-2.0
/* The web view's GPU timeline (format "timeline"), written from the shared GPU fixture and read
 * back with json-c: what is in it, in which order, and the stacks behind each activity. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "output/output.h"
#include "tests/lib/test_files.h"
#include "tests/lib/test_gpu_fixture.h"

static struct json_object *written(const struct profile_data *pd)
{
	return test_written_json(pd, OUTPUT_TIMELINE);
}

static struct json_object *get(struct json_object *o, const char *k)
{
	return test_json_get(o, k);
}

static int64_t cell(struct json_object *row, size_t i)
{
	return json_object_get_int64(json_object_array_get_idx(row, i));
}

static const char *str_at(struct json_object *arr, int64_t i)
{
	cr_assert(i >= 0 && (size_t)i < json_object_array_length(arr), "index %lld", (long long)i);
	return json_object_get_string(json_object_array_get_idx(arr, (size_t)i));
}

/* The row of the activity that starts at start_us on device dev. */
static struct json_object *row_at(struct json_object *work, int64_t dev, int64_t start_us)
{
	for (size_t i = 0; i < json_object_array_length(work); i++) {
		struct json_object *r = json_object_array_get_idx(work, i);

		if (cell(r, 0) == dev && cell(r, 4) == start_us)
			return r;
	}
	cr_assert_fail("no activity at %lld us on GPU %lld", (long long)start_us, (long long)dev);
	return NULL;
}

Test(gpu_timeline, activities_with_their_launching_stacks)
{
	struct profile_data pd;
	struct json_object *j, *work, *names, *stacks, *r;

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	j = written(&pd);
	cr_expect_eq(json_object_get_int(get(j, "xsprof_timeline")), 1);
	cr_expect_eq(json_object_get_int64(get(j, "span_us")), 10000);
	work = get(j, "work");
	names = get(j, "names");
	stacks = get(j, "stacks");
	/* Kernels, the copy, the graph's kernels and the sync; no API or NVTX records. */
	cr_expect_eq(json_object_array_length(work), 9);

	r = row_at(work, 0, 1100);
	cr_expect_eq(cell(r, 1), 7);
	cr_expect_eq(cell(r, 2), 100);
	cr_expect_eq(cell(r, 3), CORR_GPU_KERNEL);
	cr_expect_eq(cell(r, 5), 500);
	cr_expect_str_eq(str_at(names, cell(r, 6)), "gemm<float>");
	cr_expect_str_eq(str_at(stacks, cell(r, 7)),
			 "trainer;main;train_step;forward;cudaLaunchKernel");

	r = row_at(work, 0, 3100);
	cr_expect_eq(cell(r, 3), CORR_GPU_MEMCPY);
	cr_expect_str_eq(str_at(names, cell(r, 6)), "memcpy HtoD");
	cr_expect_str_eq(str_at(stacks, cell(r, 7)), "trainer;main;load;cudaMemcpyAsync");

	/* Another process's kernel on the same stream: its own stack, under its own name. */
	r = row_at(work, 0, 1600);
	cr_expect_eq(cell(r, 2), 200);
	cr_expect_str_eq(str_at(stacks, cell(r, 7)), "other;main;infer;cudaLaunchKernel");

	/* A graph's three kernels share the one launch's stack, said once. */
	cr_expect_eq(cell(row_at(work, 1, 4100), 7), cell(row_at(work, 1, 4300), 7));
	cr_expect_eq(json_object_array_length(stacks), 6);

	/* The host's wait on the stream, with the call that waited. */
	r = row_at(work, 0, 6010);
	cr_expect_eq(cell(r, 3), CORR_GPU_SYNC);
	cr_expect_str_eq(str_at(names, cell(r, 6)), "sync");
	cr_expect_str_eq(str_at(stacks, cell(r, 7)), "trainer;main;sync;cudaStreamSynchronize");

	/* Nothing was joined to the orphan; its name (control bytes, bad UTF-8) stays JSON. */
	r = row_at(work, 0, 7000);
	cr_expect_eq(cell(r, 7), -1);
	cr_expect(strncmp(str_at(names, cell(r, 6)), "orphan", 6) == 0);
	json_object_put(j);
}

/* The fixture's two NVTX ranges on their thread, with their names (escaped where they must). */
Test(gpu_timeline, nvtx_ranges_on_their_threads)
{
	struct profile_data pd;
	struct json_object *j, *ranges, *names, *r;

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	j = written(&pd);
	ranges = get(j, "ranges");
	names = get(j, "names");
	cr_assert_eq(json_object_array_length(ranges), 2);
	r = json_object_array_get_idx(ranges, 0);
	cr_expect_eq(cell(r, 0), 100);
	cr_expect_eq(cell(r, 1), 101);
	cr_expect_eq(cell(r, 2), 500);
	cr_expect_eq(cell(r, 3), 7500);
	cr_expect_str_eq(str_at(names, cell(r, 4)), "epoch 1");
	json_object_put(j);
}

Test(gpu_timeline, sorted_by_device_stream_process_and_time)
{
	struct profile_data pd;
	struct json_object *j, *work;

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	j = written(&pd);
	work = get(j, "work");
	for (size_t i = 1; i < json_object_array_length(work); i++) {
		struct json_object *a = json_object_array_get_idx(work, i - 1);
		struct json_object *b = json_object_array_get_idx(work, i);
		int64_t ka[] = {cell(a, 0), cell(a, 1), cell(a, 2), cell(a, 4)};
		int64_t kb[] = {cell(b, 0), cell(b, 1), cell(b, 2), cell(b, 4)};

		cr_expect(memcmp(ka, kb, sizeof(ka)) != 0);
		for (size_t k = 0; k < 4; k++) {
			if (ka[k] == kb[k])
				continue;
			cr_expect(ka[k] < kb[k], "row %zu out of order at field %zu", i, k);
			break;
		}
	}
	json_object_put(j);
}

Test(gpu_timeline, cpu_samples_binned)
{
	struct profile_data pd;
	struct json_object *j, *cpu, *bins;
	int64_t sum = 0;

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	j = written(&pd);
	cpu = get(j, "cpu");
	cr_expect_eq(json_object_get_int64(get(cpu, "bin_us")), 10000);
	bins = get(cpu, "samples");
	for (size_t i = 0; i < json_object_array_length(bins); i++)
		sum += json_object_get_int64(json_object_array_get_idx(bins, i));
	/* Every sample of the fixture is in the first 10 ms. */
	cr_expect_eq(sum, (int64_t)pd.nr_samples);
	cr_expect_eq(json_object_get_int64(json_object_array_get_idx(bins, 0)),
		     (int64_t)pd.nr_samples);
	json_object_put(j);
}

Test(gpu_timeline, no_gpu_work_is_an_empty_timeline)
{
	struct profile_data pd = {.start_ns = 0, .end_ns = 2000000};
	struct json_object *j = written(&pd);

	cr_expect_eq(json_object_array_length(get(j, "work")), 0);
	cr_expect_eq(json_object_array_length(get(j, "stacks")), 0);
	cr_expect_eq(json_object_array_length(get(get(j, "cpu"), "samples")), 0);
	json_object_put(j);
}

Test(gpu_timeline, chosen_by_name_and_extension)
{
	enum output_format f;

	cr_expect_eq(output__format_from_name("timeline", &f), 0);
	cr_expect_eq(f, OUTPUT_TIMELINE);
	cr_expect_eq(output__format_from_path("run.timeline.json", &f), 0);
	cr_expect_eq(f, OUTPUT_TIMELINE);
	cr_expect_eq(output__format_from_path("run.json", &f), 0);
	cr_expect_eq(f, OUTPUT_CHROME_JSON);
	cr_expect(output__format_needs_timeline(OUTPUT_TIMELINE));
}
