// SPDX-License-Identifier: Apache-2.0
/*
 * The service's GPU metrics alone (daemon/service/gpu_metrics.c): slices' figures summed by
 * device, process and unit; the label-set cap folding the rest into [other]; GPU memory in use
 * and its peak from allocations and frees, a user's half of the followed allocations, frees of
 * unknown addresses; processes gone letting their memory go; the text Prometheus reads.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/base/utf8.h"
#include "daemon/service/gpu_metrics.h"
#include "daemon/session/slice.h"

static struct gpu_metrics *m;

static void setup(void)
{
	m = gpu_metrics__new();
	cr_assert_not_null(m);
}

static void teardown(void)
{
	gpu_metrics__free(m);
}

TestSuite(gpu_metrics, .init = setup, .fini = teardown);

/* The metrics' text, and the value of the first line that starts with prefix (-1: none). */
static double value_of(const char *prefix)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	double v = -1;

	gpu_metrics__write(m, f);
	fclose(f);
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		if (!strncmp(line, prefix, strlen(prefix))) {
			v = strtod(strrchr(line, ' ') + 1, NULL);
			break;
		}
	free(buf);
	return v;
}

static uint64_t status_u64(const char *key)
{
	struct json_object *o = gpu_metrics__status(m), *v;
	uint64_t n = json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : UINT64_MAX;

	json_object_put(o);
	return n;
}

/* A slice with one process's figures on one device. */
static void add_figure(uint32_t pid, const char *comm, uint32_t device, uint64_t busy,
		       uint64_t host_idle, uint64_t kernels)
{
	struct slice_proc p = {.pid = pid};
	struct slice_gpu_figure fg = {
		.pid = pid,
		.f = {.device = device, .busy_ns = busy, .idle_ns = host_idle, .kernels = kernels}};
	struct slice_out out = {.procs = &p, .nr_procs = 1, .figures = &fg, .nr_figures = 1};

	snprintf(p.comm, sizeof(p.comm), "%s", comm);
	fg.f.idle_by[GPU_IDLE_HOST] = host_idle;
	gpu_metrics__add_slice(m, &out);
}

Test(gpu_metrics, slices_add_up_by_device_and_process)
{
	add_figure(1, "train", 0, 2000000000, 500000000, 10);
	add_figure(1, "train", 0, 1000000000, 250000000, 5);
	add_figure(1, "train", 1, 3000000000, 0, 7);
	cr_expect_float_eq(value_of("xsprof_gpu_busy_seconds_total{device=\"0\",process=\"train\""),
			   3.0, 1e-9);
	cr_expect_float_eq(value_of("xsprof_gpu_busy_seconds_total{device=\"1\",process=\"train\""),
			   3.0, 1e-9);
	cr_expect_float_eq(value_of("xsprof_gpu_kernels_total{device=\"0\",process=\"train\""), 15,
			   1e-9);
	cr_expect_float_eq(value_of("xsprof_gpu_idle_seconds_total{device=\"0\",process=\"train\","
				    "unit=\"[no unit]\",job_id=\"\",rank=\"\",cause=\"host\"}"),
			   0.75, 1e-9);
	cr_expect_float_eq(value_of("xsprof_gpu_idle_seconds_total{device=\"0\",process=\"train\","
				    "unit=\"[no unit]\",job_id=\"\",rank=\"\",cause=\"sync\"}"),
			   0, 1e-9);
	cr_expect_eq(status_u64("series"), 2);
}

Test(gpu_metrics, label_sets_past_the_cap_count_under_other)
{
	char comm[16];

	for (int i = 0; i < GPU_METRICS_MAX_SERIES + 10; i++) {
		snprintf(comm, sizeof(comm), "p%d", i);
		add_figure((uint32_t)(1000 + i), comm, 0, 1000000000, 0, 1);
	}
	cr_expect_eq(status_u64("series"), GPU_METRICS_MAX_SERIES + 1, "the cap and [other]");
	cr_expect_eq(status_u64("series_overflow"), 10);
	cr_expect_float_eq(
		value_of("xsprof_gpu_busy_seconds_total{device=\"0\",process=\"[other]\""), 10,
		1e-9);
	cr_expect_float_eq(value_of("xsprof_gpu_metric_series_overflow_total "), 10, 1e-9);
}

Test(gpu_metrics, process_names_are_escaped_as_label_values)
{
	add_figure(7, "a\"b\\c", 0, 1000000000, 0, 1);
	cr_expect_float_eq(
		value_of("xsprof_gpu_busy_seconds_total{device=\"0\",process=\"a\\\"b\\\\c\""), 1,
		1e-9);
}

/* A name that is not UTF-8 (a process's comm is any bytes) made Prometheus refuse the whole
 * scrape, every user's series with it: each bad byte is written '?'. */
Test(gpu_metrics, label_values_are_valid_utf8)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	add_figure(8, "bad\xff\xfe\xc3name\xc3\xa9", 0, 1000000000, 0, 1);
	cr_expect_float_eq(
		value_of(
			"xsprof_gpu_busy_seconds_total{device=\"0\",process=\"bad???name\xc3\xa9\""),
		1, 1e-9);
	f = open_memstream(&buf, &len);
	gpu_metrics__write(m, f);
	fclose(f);
	cr_assert(utf8_valid(buf), "the exposition is not UTF-8");
	free(buf);
}

/* A slice of memory calls by pid (uid) on device: bytes > 0 allocate addr, 0 frees it. */
static void mem(uint32_t pid, uint32_t uid, int16_t device, uint64_t addr, uint64_t bytes,
		uint64_t t)
{
	struct slice_proc p = {.pid = pid, .uid = uid, .comm = "m"};
	struct profile_mem c = {.time_ns = t,
				.addr = addr,
				.bytes = bytes,
				.pid = pid,
				.is_free = bytes == 0,
				.device = device};
	struct slice_out out = {.procs = &p, .nr_procs = 1, .mem = &c, .nr_mem = 1};

	gpu_metrics__add_slice(m, &out);
}

static int none_alive(uint32_t pid)
{
	(void)pid;
	return 0;
}

static int all_alive(uint32_t pid)
{
	(void)pid;
	return 1;
}

Test(gpu_metrics, memory_in_use_and_its_peak_follow_allocations_and_frees)
{
	mem(5, 0, 1, 0x1000, 100, 1);
	mem(5, 0, 1, 0x2000, 50, 2);
	mem(5, 0, 1, 0x1000, 0, 3); /* 100 freed: 50 in use, peak 150 */
	mem(5, 0, 1, 0x9999, 0, 4); /* never seen allocated */
	mem(5, 0, 0, 0x3000, 7, 5); /* another device */
	cr_expect_float_eq(value_of("xsprof_gpu_memory_bytes{device=\"1\""), 50, 1e-9);
	cr_expect_float_eq(value_of("xsprof_gpu_memory_peak_bytes{device=\"1\""), 150, 1e-9);
	cr_expect_float_eq(value_of("xsprof_gpu_memory_bytes{device=\"0\""), 7, 1e-9);
	cr_expect_eq(status_u64("frees_unknown"), 1);
	cr_expect_eq(status_u64("allocations"), 2);
	gpu_metrics__reap(m, all_alive);
	cr_expect_eq(status_u64("allocations"), 2, "alive: kept");
	gpu_metrics__reap(m, none_alive);
	cr_expect_eq(status_u64("allocations"), 0, "gone: let go");
	cr_expect_float_eq(value_of("xsprof_gpu_memory_bytes{"), -1, 1e-9, "no series left");
	/* Its free after that is unknown, not a negative figure. */
	mem(5, 0, 1, 0x2000, 0, 6);
	cr_expect_eq(status_u64("frees_unknown"), 2);
}

Test(gpu_metrics, a_user_follows_at_most_half_of_the_allocations)
{
	for (uint64_t i = 0; i < GPU_METRICS_MAX_ALLOCS / 2 + 5; i++)
		mem(9, 1000, 0, 0x10000 + i * 16, 16, i);
	cr_expect_eq(status_u64("allocations"), GPU_METRICS_MAX_ALLOCS / 2);
	cr_expect_eq(status_u64("allocations_untracked"), 5);
	/* Another user still has room. */
	mem(10, 1001, 0, 0x10, 32, 1);
	cr_expect_eq(status_u64("allocations"), GPU_METRICS_MAX_ALLOCS / 2 + 1);
	cr_expect_float_eq(value_of("xsprof_gpu_memory_bytes{device=\"0\",process=\"m\","
				    "unit=\"[no unit]\",job_id=\"\",rank=\"\",pid=\"10\"}"),
			   32, 1e-9);
}
