// SPDX-License-Identifier: Apache-2.0
/*
 * The GPU report on hand-made profiles whose every gap has a known cause: busy and idle time,
 * the idle split by cause and the stack each is blamed on, communication overlap, copies,
 * launch-to-start delay and the findings; the JSON read back with json-c, the text within
 * 80 columns, and the Chrome trace's counter tracks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "output/gpu_clock.h"
#include "output/gpu_report.h"
#include "output/output.h"
#include "output/profile.h"
#include "output/shelf.h"
#include "test_files.h"

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

Test(gpu_report, every_gap_explained)
{
	struct profile_data pd;
	struct json_object *j, *d, *idle, *causes;

	mixed(&pd);
	j = report_json(&pd);
	cr_assert_str_eq(json_object_get_string(get(j, "schema")), GPU_REPORT_SCHEMA);
	cr_assert_eq(num(j, "version"), GPU_REPORT_VERSION);
	cr_assert_eq(json_object_array_length(get(j, "devices")), 1);
	d = json_object_array_get_idx(get(j, "devices"), 0);
	cr_assert_eq(num(d, "busy_ns"), 5260 * US);
	cr_assert_eq(num(d, "active_ns"), 10890 * US);
	cr_assert_eq(num(d, "idle_ns"), 5630 * US);
	idle = get(d, "idle_by_cause");
	cr_assert_eq(num(idle, "host_ns"), 4000 * US);
	cr_assert_eq(num(idle, "dependency_ns"), 1000 * US);
	cr_assert_eq(num(idle, "sync_ns"), 500 * US);
	cr_assert_eq(num(idle, "launch_ns"), 70 * US);
	cr_assert_eq(num(idle, "unknown_ns"), 60 * US);
	cr_assert_eq(num(get(d, "gaps"), "count"), 6);
	cr_assert_eq(num(get(d, "gaps"), "longest_ns"), 4000 * US);
	cr_assert_eq(num(get(d, "communication"), "busy_ns"), 100 * US);
	cr_assert_eq(num(get(d, "communication"), "overlap_ns"), 50 * US);
	cr_assert_eq(num(d, "kernels"), 8);
	cr_assert_eq(num(d, "copies"), 1);

	/* The heaviest cause first: the host, in make_batch (its samples in the gap, not the
	 * one before it); the sync blamed on the call and its caller. */
	causes = get(j, "idle_causes");
	cr_assert_str_eq(json_object_get_string(get(json_object_array_get_idx(causes, 0), "cause")),
			 "host");
	cr_assert_eq(num(json_object_array_get_idx(causes, 0), "ns"), 4000 * US);
	cr_assert_str_eq(innermost(json_object_array_get_idx(causes, 0)), "make_batch");
	for (size_t i = 0; i < json_object_array_length(causes); i++) {
		struct json_object *c = json_object_array_get_idx(causes, i);
		const char *cause = json_object_get_string(get(c, "cause"));

		cr_assert_str_neq(innermost(c), "other", "a sample outside every gap was blamed");
		if (!strcmp(cause, "sync")) {
			cr_assert_str_eq(innermost(c), "sync_site");
			cr_assert_str_eq(json_object_get_string(get(c, "api")),
					 "cudaStreamSynchronize");
		}
		if (!strcmp(cause, "dependency"))
			cr_assert_str_eq(innermost(c), "queue_more");
	}

	cr_assert(finding(j, "host_bound"));
	cr_assert_str_eq(innermost(finding(j, "host_bound")), "make_batch");
	cr_assert_str_eq(json_object_get_string(get(finding(j, "host_bound"), "severity")),
			 "medium");
	cr_assert(finding(j, "low_utilisation"));
	cr_assert(finding(j, "pageable_copy"));
	cr_assert_eq(num(get(finding(j, "pageable_copy"), "figures"), "bytes"), 8 << 20);
	cr_assert_null(finding(j, "sync_bound"), "4.6%% of idle after a sync is under 10%%");
	cr_assert_null(finding(j, "launch_bound"), "8 kernels are too few to judge");
	json_object_put(j);
}

Test(gpu_report, kernels_streams_and_copies)
{
	struct profile_data pd;
	struct json_object *j, *k0, *st, *cp;

	mixed(&pd);
	j = report_json(&pd);
	/* By total time: k_fwd and k_bwd (2 ms each, names tie-broken), then the rest. */
	k0 = json_object_array_get_idx(get(j, "kernels"), 0);
	cr_assert_str_eq(json_object_get_string(get(k0, "name")), "k_bwd");
	cr_assert_eq(num(k0, "count"), 2);
	cr_assert_eq(num(k0, "total_ns"), 2000 * US);
	/* k_bwd: 1 ms from queue_more, 1 ms from train_step: the first one met with the most. */
	cr_assert_eq(json_object_array_length(get(j, "kernels")), 5);
	st = json_object_array_get_idx(
		get(json_object_array_get_idx(get(j, "devices"), 0), "streams"), 0);
	cr_assert_eq(num(st, "stream"), 7);
	cr_assert_eq(num(st, "work"), 8);   /* 7 kernels and the copy */
	cr_assert_eq(num(st, "joined"), 7); /* k_orphan has no launch */
	cr_assert_eq(num(get(st, "launch_to_start"), "max_ns"), 1510 * US);
	cr_assert_eq(num(get(st, "launch_to_start"), "p50_ns"), 10 * US);
	cp = json_object_array_get_idx(get(j, "copies"), 0);
	cr_assert_str_eq(json_object_get_string(get(cp, "direction")), "HtoD");
	cr_assert_str_eq(json_object_get_string(get(cp, "host_memory")), "pageable");
	cr_assert(json_object_get_boolean(get(cp, "async")));
	cr_assert_eq(num(cp, "bytes"), 8 << 20);
	json_object_put(j);
}

/* 500 kernels of 5 us launched every 25 us from one stack: launch-bound, blamed on it. */
Test(gpu_report, launch_bound)
{
	static struct corr_cpu_rec l[500];
	static struct corr_gpu_rec g[500];
	static struct profile_join jn[500];
	struct profile_data pd = {.launches = l, .gpu = g, .joins = jn, .stack = stack_of};
	struct json_object *j, *f, *d;

	for (size_t i = 0; i < 500; i++) {
		l[i] = (struct corr_cpu_rec){
			.pid = PID, .tid = PID, .time_ns = i * 25 * US, .stack_id = 1};
		g[i] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
					     .pid = PID,
					     .stream_id = 7,
					     .start_ns = (i * 25 + 2) * US,
					     .end_ns = (i * 25 + 7) * US,
					     .name = "k_tiny"};
		jn[i] = (struct profile_join){i, i};
	}
	pd.nr_launches = pd.nr_gpu = pd.nr_joins = 500;
	j = report_json(&pd);
	f = finding(j, "launch_bound");
	cr_assert(f);
	cr_assert_str_eq(innermost(f), "train_step");
	cr_assert_eq(num(get(f, "figures"), "median_kernel_ns"), 5 * US);
	cr_assert_eq(num(get(f, "figures"), "median_launch_interval_ns"), 25 * US);
	d = json_object_array_get_idx(get(j, "devices"), 0);
	cr_assert_eq(num(get(d, "idle_by_cause"), "launch_ns"), 499 * 20 * US);
	cr_assert_null(finding(j, "host_bound"), "short gaps are launch overhead, not the host");
	json_object_put(j);
}

Test(gpu_report, text_fits_80_columns)
{
	struct profile_data pd;
	struct gpu_report *r;
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0, lines = 0;
	FILE *f = open_memstream(&buf, &len);

	mixed(&pd);
	cr_assert_eq(gpu_report__build(&pd, &r), 0);
	cr_assert_eq(gpu_report__nr_devices(r), 1);
	cr_assert_eq(gpu_report__write_text(r, f), 0);
	gpu_report__free(r);
	cr_assert_eq(fclose(f), 0);
	cr_assert(strstr(buf, "host_bound"), "%s", buf);
	cr_assert(strstr(buf, "make_batch"), "%s", buf);
	cr_assert(strstr(buf, "fix: "), "%s", buf);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save), lines++)
		cr_assert_leq(strlen(line), 80, "over 80 columns: %s", line);
	cr_assert_gt(lines, 20);
	free(buf);
}

Test(gpu_report, no_gpu_work)
{
	struct profile_data pd = {.stack = stack_of};
	struct json_object *j = report_json(&pd);

	cr_assert_eq(json_object_array_length(get(j, "devices")), 0);
	cr_assert_eq(json_object_array_length(get(j, "findings")), 0);
	json_object_put(j);
}

/* The Chrome trace carries each GPU's busy share and queue depth as counters. */
Test(gpu_report, trace_counters)
{
	struct profile_data pd;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json_object *j, *ev;
	size_t busy = 0, depth = 0;
	int64_t max_depth = 0;

	mixed(&pd);
	cr_assert_eq(output__write_profile(&pd, OUTPUT_CHROME_JSON, f, NULL), 0);
	cr_assert_eq(fclose(f), 0);
	j = json_tokener_parse(buf);
	cr_assert(j);
	ev = get(j, "traceEvents");
	for (size_t i = 0; i < json_object_array_length(ev); i++) {
		struct json_object *e = json_object_array_get_idx(ev, i), *ph, *name;

		if (!json_object_object_get_ex(e, "ph", &ph) ||
		    strcmp(json_object_get_string(ph), "C") ||
		    !json_object_object_get_ex(e, "name", &name))
			continue;
		if (!strcmp(json_object_get_string(name), "busy %"))
			busy++;
		if (!strcmp(json_object_get_string(name), "queue depth")) {
			int64_t v = num(get(e, "args"), "work");

			depth++;
			max_depth = v > max_depth ? v : max_depth;
		}
	}
	cr_assert_eq(busy, 3, "two 10 ms bins and the end: %zu", busy);
	cr_assert_gt(depth, 8);
	cr_assert_eq(max_depth, 2, "K1 and K2 were queued together");
	json_object_put(j);
	free(buf);
}

/*
 * GPU memory (MiB): train_step allocates 100 then 50, make_batch 200 (freed) and later 100;
 * the peak is 350 (train_step 150, make_batch 200), 250 is left (train_step 150, make_batch
 * 100); a free of memory allocated before the profile and a failed allocation in queue_more.
 */
Test(gpu_report, memory_by_stack)
{
	static const uint64_t mib = 1 << 20;
	static const struct profile_mem mem[] = {
		{.time_ns = 1,
		 .addr = 0x1000,
		 .bytes = 100 * mib,
		 .pid = PID,
		 .stack_id = 1,
		 .api = "cudaMalloc"},
		{.time_ns = 2,
		 .addr = 0x2000,
		 .bytes = 200 * mib,
		 .pid = PID,
		 .stack_id = 2,
		 .api = "cudaMalloc"},
		{.time_ns = 3,
		 .addr = 0x3000,
		 .bytes = 50 * mib,
		 .pid = PID,
		 .stack_id = 1,
		 .api = "cudaMalloc"},
		{.time_ns = 4,
		 .addr = 0x2000,
		 .pid = PID,
		 .stack_id = 3,
		 .is_free = 1,
		 .api = "cudaFree"},
		{.time_ns = 5,
		 .addr = 0x9999,
		 .pid = PID,
		 .stack_id = 3,
		 .is_free = 1,
		 .api = "cudaFree"},
		{.time_ns = 6,
		 .bytes = 900 * mib,
		 .pid = PID,
		 .stack_id = 4,
		 .failed = 1,
		 .api = "cudaMalloc"},
		{.time_ns = 7,
		 .addr = 0x4000,
		 .bytes = 100 * mib,
		 .pid = PID,
		 .stack_id = 2,
		 .api = "cudaMalloc"},
	};
	struct profile_data pd = {.mem = mem, .nr_mem = 7, .stack = stack_of};
	struct json_object *j = report_json(&pd), *m, *peak, *end, *f;

	cr_assert_eq(json_object_array_length(get(j, "memory")), 1);
	m = json_object_array_get_idx(get(j, "memory"), 0);
	cr_assert_eq(num(m, "pid"), PID);
	cr_assert_eq(num(m, "allocations"), 4);
	cr_assert_eq(num(m, "frees"), 2);
	cr_assert_eq(num(m, "unknown_frees"), 1);
	cr_assert_eq(num(m, "failed"), 1);
	cr_assert_eq(num(m, "allocated_bytes"), 450 * mib);
	cr_assert_eq(num(m, "peak_bytes"), 350 * mib);
	cr_assert_eq(num(m, "peak_ns"), 3);
	cr_assert_eq(num(m, "end_bytes"), 250 * mib);
	cr_assert_eq(num(m, "end_allocations"), 3);
	peak = get(m, "at_peak");
	cr_assert_eq(json_object_array_length(peak), 2);
	cr_assert_str_eq(innermost(json_object_array_get_idx(peak, 0)), "make_batch");
	cr_assert_eq(num(json_object_array_get_idx(peak, 0), "bytes"), 200 * mib);
	cr_assert_str_eq(innermost(json_object_array_get_idx(peak, 1)), "train_step");
	cr_assert_eq(num(json_object_array_get_idx(peak, 1), "bytes"), 150 * mib);
	end = get(m, "at_end");
	cr_assert_str_eq(innermost(json_object_array_get_idx(end, 0)), "train_step");
	cr_assert_eq(num(json_object_array_get_idx(end, 0), "bytes"), 150 * mib);
	cr_assert_eq(num(json_object_array_get_idx(end, 1), "bytes"), 100 * mib);
	cr_assert_str_eq(innermost(json_object_array_get_idx(get(m, "failed_at"), 0)),
			 "queue_more");
	f = finding(j, "memory_unfreed");
	cr_assert(f);
	cr_assert_str_eq(innermost(f), "train_step");
	cr_assert_eq(num(get(f, "figures"), "bytes"), 250 * mib);
	f = finding(j, "allocation_failed");
	cr_assert(f);
	cr_assert_str_eq(innermost(f), "queue_more");
	json_object_put(j);
}

/* NVTX ranges on the launching thread: the host gap began inside "data", the kernels K0, K1
 * and K2 were launched inside the two "step" ranges (one statistic for both). */
Test(gpu_report, by_range)
{
	struct profile_data pd;
	struct json_object *j, *ranges, *data = NULL, *step = NULL;

	mixed(&pd);
	gpu[9] = (struct corr_gpu_rec){.kind = CORR_GPU_NVTX,
				       .pid = PID,
				       .tid = PID,
				       .start_ns = 0,
				       .end_ns = 1000 * US,
				       .name = "step"};
	gpu[10] = (struct corr_gpu_rec){.kind = CORR_GPU_NVTX,
					.pid = PID,
					.tid = PID,
					.start_ns = 1000 * US,
					.end_ns = 4999 * US,
					.name = "data"};
	gpu[11] = (struct corr_gpu_rec){.kind = CORR_GPU_NVTX,
					.pid = PID,
					.tid = PID,
					.start_ns = 5000 * US,
					.end_ns = 6000 * US,
					.name = "step"};
	pd.nr_gpu = 12;
	j = report_json(&pd);
	ranges = get(j, "ranges");
	cr_assert_eq(json_object_array_length(ranges), 2);
	for (size_t i = 0; i < 2; i++) {
		struct json_object *x = json_object_array_get_idx(ranges, i);
		const char *name = json_object_get_string(get(x, "name"));

		if (!strcmp(name, "data"))
			data = x;
		else if (!strcmp(name, "step"))
			step = x;
	}
	cr_assert(data && step);
	cr_assert_eq(num(get(data, "idle_by_cause"), "host_ns"), 4000 * US);
	cr_assert_eq(num(data, "idle_ns"), 4000 * US);
	cr_assert_eq(num(data, "gpu_ns"), 0);
	cr_assert_eq(num(step, "gpu_ns"), 3000 * US);
	cr_assert_eq(num(step, "idle_ns"), 0);
	json_object_put(j);
}

/* ---- reports kept and merged (the service's window and attachments) ---- */

/* Strings a kept report must have copied: freed (and so poisoned under ASan) once collected. */
static char *heap[64];
static size_t nr_heap;

static const char *heap_str(const char *s)
{
	cr_assert_lt(nr_heap, sizeof(heap) / sizeof(heap[0]));
	heap[nr_heap] = strdup(s);
	cr_assert(heap[nr_heap]);
	return heap[nr_heap++];
}

static void heap_free(void)
{
	for (size_t i = 0; i < nr_heap; i++) {
		memset(heap[i], 'X', strlen(heap[i]));
		free(heap[i]);
	}
	nr_heap = 0;
}

/* stack_of's frames as strings of the heap, made at each call. */
static int heap_stack(void *ctx, uint32_t pid, uint32_t id, const char *const **ret, size_t *ret_n)
{
	static const char *v[4];
	const char *const *frames;
	int err = stack_of(ctx, pid, id, &frames, ret_n);

	if (err)
		return err;
	for (size_t i = 0; i < *ret_n; i++)
		v[i] = heap_str(frames[i]);
	*ret = v;
	return 0;
}

/* What a window slice [from, to) (us) holds of pd: as its join, the GPU work that arrived in
 * it (work is sent once it ends: that ended in it), with the launches joined to it; the
 * samples, waits and memory calls of that time. */
struct part {
	struct profile_data pd;
	struct corr_cpu_rec launches[16];
	struct corr_gpu_rec gpu[16];
	struct profile_join joins[16];
	struct profile_sample samples[8];
	struct profile_wait waits[2];
	struct profile_mem mem[8];
};

static bool in(uint64_t t, uint64_t from, uint64_t to)
{
	return t >= from * US && t < to * US;
}

static void part_of(const struct profile_data *pd, uint64_t from, uint64_t to, struct part *p)
{
	memset(p, 0, sizeof(*p));
	p->pd = (struct profile_data){.launches = p->launches,
				      .gpu = p->gpu,
				      .joins = p->joins,
				      .samples = p->samples,
				      .waits = p->waits,
				      .mem = p->mem,
				      .stack = heap_stack,
				      .start_ns = from * US,
				      .end_ns = to * US};
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		if (!in(pd->gpu[i].end_ns, from, to))
			continue;
		p->gpu[p->pd.nr_gpu] = pd->gpu[i];
		if (pd->gpu[i].name)
			p->gpu[p->pd.nr_gpu].name = heap_str(pd->gpu[i].name);
		for (size_t k = 0; k < pd->nr_joins; k++)
			if (pd->joins[k].gpu == i) {
				p->launches[p->pd.nr_launches] = pd->launches[pd->joins[k].launch];
				p->joins[p->pd.nr_joins++] =
					(struct profile_join){p->pd.nr_launches++, p->pd.nr_gpu};
			}
		p->pd.nr_gpu++;
	}
	for (size_t i = 0; i < pd->nr_samples; i++)
		if (in(pd->samples[i].time_ns, from, to))
			p->samples[p->pd.nr_samples++] = pd->samples[i];
	for (size_t i = 0; i < pd->nr_waits; i++)
		if (in(pd->waits[i].end_ns, from, to)) {
			p->waits[p->pd.nr_waits] = pd->waits[i];
			p->waits[p->pd.nr_waits++].api = heap_str(pd->waits[i].api);
		}
	for (size_t i = 0; i < pd->nr_mem; i++)
		if (in(pd->mem[i].time_ns, from, to)) {
			p->mem[p->pd.nr_mem] = pd->mem[i];
			p->mem[p->pd.nr_mem++].api = heap_str(pd->mem[i].api);
		}
}

/* The parts [0, cut) and [cut, end) of pd collected, their strings freed, merged, finished. */
static struct json_object *merged_json(const struct profile_data *pd, const uint64_t *cuts,
				       size_t nr_cuts)
{
	struct gpu_report *r = gpu_report__new(), *kept[4];
	static struct part p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	struct json_object *j;

	cr_assert(r);
	cr_assert_leq(nr_cuts, 3);
	for (size_t i = 0; i <= nr_cuts; i++) {
		part_of(pd, i ? cuts[i - 1] : 0, i < nr_cuts ? cuts[i] : pd->end_ns / US, &p);
		cr_assert_eq(gpu_report__collect(&p.pd, NULL, NULL, &kept[i]), 0);
		heap_free(); /* a kept report names none of its profile's strings */
	}
	for (size_t i = 0; i <= nr_cuts; i++) {
		cr_assert_eq(gpu_report__merge(r, kept[i]), 0);
		gpu_report__free(kept[i]);
	}
	cr_assert_eq(gpu_report__finish(r), 0);
	cr_assert_eq(gpu_report__merge(r, r), -EINVAL, "merged into after its findings");
	f = open_memstream(&buf, &len);
	cr_assert(f);
	cr_assert_eq(gpu_report__write_json(r, f), 0);
	cr_assert_eq(fclose(f), 0);
	gpu_report__free(r);
	j = json_tokener_parse(buf);
	cr_assert(j, "not JSON: %.300s", buf);
	free(buf);
	return j;
}

/* One report kept and merged alone reads as the report built at once, to the nanosecond. */
Test(gpu_report, kept_alone_is_exact)
{
	struct profile_data pd;
	struct json_object *whole, *kept;

	mixed(&pd);
	whole = report_json(&pd);
	kept = merged_json(&pd, NULL, 0);
	cr_assert_str_eq(json_object_to_json_string(kept), json_object_to_json_string(whole));
	json_object_put(whole);
	json_object_put(kept);
}

/*
 * mixed() in four slices cut at 6500, 8000 (K2 runs over it: the next slice's) and 9560 us:
 * sums stay exact; the gaps the cuts fall in (K1 -> K2, a 1 ms dependency; K4 -> K5, 60 us
 * unknown) are idle of cause unknown; the host gap and its stack, kernels, copies and
 * findings read as in the whole.
 */
Test(gpu_report, merged_slices)
{
	static const uint64_t cuts[] = {6500, 8000, 9560};
	struct profile_data pd;
	struct json_object *j, *d, *idle, *k0, *st;

	mixed(&pd);
	j = merged_json(&pd, cuts, 3);
	d = json_object_array_get_idx(get(j, "devices"), 0);
	cr_assert_eq(num(d, "busy_ns"), 5260 * US);
	cr_assert_eq(num(d, "active_ns"), 10890 * US);
	cr_assert_eq(num(d, "idle_ns"), 5630 * US);
	cr_assert_eq(num(d, "kernels"), 8);
	cr_assert_eq(num(get(d, "gaps"), "count"), 6);
	idle = get(d, "idle_by_cause");
	cr_assert_eq(num(idle, "host_ns"), 4000 * US);
	cr_assert_eq(num(idle, "dependency_ns"), 0);
	cr_assert_eq(num(idle, "sync_ns"), 500 * US);
	cr_assert_eq(num(idle, "launch_ns"), 70 * US);
	cr_assert_eq(num(idle, "unknown_ns"), 1060 * US);
	cr_assert_eq(num(get(d, "communication"), "overlap_ns"), 50 * US);
	/* The busy series: 10.89 s in one bin of 1 s (all of it), split over no cut. */
	cr_assert_eq(json_object_array_length(get(get(d, "utilisation_series"), "busy")), 1);
	cr_assert_str_eq(innermost(finding(j, "host_bound")), "make_batch");
	cr_assert(finding(j, "pageable_copy"));
	cr_assert_eq(num(get(j, "window"), "start_ns"), 0);
	k0 = json_object_array_get_idx(get(j, "kernels"), 0);
	cr_assert_str_eq(json_object_get_string(get(k0, "name")), "k_bwd");
	cr_assert_eq(num(k0, "count"), 2);
	cr_assert_eq(num(k0, "total_ns"), 2000 * US);
	cr_assert_eq(json_object_array_length(get(j, "kernels")), 5);
	/* Delays merged: counts and max exact, p50 from the histogram (10 us within 1/16). */
	st = json_object_array_get_idx(get(d, "streams"), 0);
	cr_assert_eq(num(st, "work"), 8);
	cr_assert_eq(num(st, "joined"), 7);
	cr_assert_eq(num(get(st, "launch_to_start"), "max_ns"), 1510 * US);
	cr_assert_geq(num(get(st, "launch_to_start"), "p50_ns"), 10 * US * 15 / 16);
	cr_assert_leq(num(get(st, "launch_to_start"), "p50_ns"), 10 * US * 17 / 16);
	json_object_put(j);
}

/* 3 s of 1 ms kernels every 2 ms, in slices of 1 s: the per-second series holds 50%. */
Test(gpu_report, merged_series)
{
	static struct corr_cpu_rec l[1500];
	static struct corr_gpu_rec g[1500];
	static struct profile_join jn[1500];
	struct profile_data pd = {.launches = l, .gpu = g, .joins = jn, .stack = stack_of};
	struct gpu_report *r = gpu_report__new(), *part;
	struct json_object *j, *series, *lf;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert(r);
	for (size_t i = 0; i < 1500; i++) {
		l[i] = (struct corr_cpu_rec){
			.pid = PID, .tid = PID, .time_ns = i * 2000 * US, .stack_id = 1};
		g[i] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
					     .pid = PID,
					     .start_ns = (i * 2000 + 5) * US,
					     .end_ns = (i * 2000 + 1005) * US,
					     .name = "k_ms"};
		jn[i] = (struct profile_join){i, i};
	}
	for (size_t s = 0; s < 3; s++) {
		struct profile_data p = pd;

		p.launches = l + s * 500;
		p.gpu = g + s * 500;
		p.nr_launches = p.nr_gpu = p.nr_joins = 500;
		p.start_ns = s * 1000000 * US;
		p.end_ns = (s + 1) * 1000000 * US;
		cr_assert_eq(gpu_report__collect(&p, NULL, NULL, &part), 0);
		cr_assert(!gpu_report__empty(part));
		cr_assert_gt(gpu_report__bytes(part), sizeof(uint64_t) * 3);
		cr_assert_eq(gpu_report__merge(r, part), 0);
		gpu_report__free(part);
	}
	cr_assert_eq(gpu_report__finish(r), 0);
	f = open_memstream(&buf, &len);
	cr_assert_eq(gpu_report__write_json(r, f), 0);
	cr_assert_eq(fclose(f), 0);
	gpu_report__free(r);
	j = json_tokener_parse(buf);
	free(buf);
	series = get(get(json_object_array_get_idx(get(j, "devices"), 0), "utilisation_series"),
		     "busy");
	cr_assert_eq(json_object_array_length(series), 3);
	for (size_t i = 0; i < 3; i++) {
		double v = json_object_get_double(json_object_array_get_idx(series, i));

		cr_assert(v > 0.49 && v < 0.51, "second %zu busy %.4f", i, v);
	}
	lf = get(j, "launches");
	cr_assert_eq(num(lf, "kernels"), 1500);
	cr_assert_eq(num(lf, "intervals"), 1497, "no interval across a cut");
	cr_assert_geq(num(lf, "median_kernel_ns"), 1000 * US * 15 / 16);
	cr_assert_leq(num(lf, "median_kernel_ns"), 1000 * US * 17 / 16);
	cr_assert_geq(num(lf, "median_interval_ns"), 2000 * US * 15 / 16);
	cr_assert_leq(num(lf, "median_interval_ns"), 2000 * US * 17 / 16);
	cr_assert(json_object_get_double(get(lf, "per_s")) > 499 &&
		  json_object_get_double(get(lf, "per_s")) < 501);
	json_object_put(j);
}

/* Memory allocated in one slice and freed in the next: live across them, freed at the end. */
Test(gpu_report, merged_memory)
{
	static const uint64_t mib = 1 << 20;
	static const uint64_t cuts[] = {5};
	static const struct profile_mem mem[] = {
		{.time_ns = 1 * US,
		 .addr = 0x1000,
		 .bytes = 100 * mib,
		 .pid = PID,
		 .stack_id = 1,
		 .api = "cudaMalloc"},
		{.time_ns = 2 * US,
		 .addr = 0x2000,
		 .bytes = 200 * mib,
		 .pid = PID,
		 .stack_id = 2,
		 .api = "cudaMalloc"},
		{.time_ns = 7 * US,
		 .addr = 0x2000,
		 .pid = PID,
		 .stack_id = 3,
		 .is_free = 1,
		 .api = "cudaFree"},
		{.time_ns = 8 * US,
		 .addr = 0x3000,
		 .bytes = 50 * mib,
		 .pid = PID,
		 .stack_id = 2,
		 .api = "cudaMalloc"},
	};
	struct profile_data pd = {.mem = mem, .nr_mem = 4, .stack = stack_of, .end_ns = 10 * US};
	struct json_object *j = merged_json(&pd, cuts, 1), *m;

	m = json_object_array_get_idx(get(j, "memory"), 0);
	cr_assert_eq(num(m, "allocations"), 3);
	cr_assert_eq(num(m, "frees"), 1);
	cr_assert_eq(num(m, "unknown_frees"), 0, "the free found its allocation a slice before");
	cr_assert_eq(num(m, "peak_bytes"), 300 * mib);
	cr_assert_eq(num(m, "end_bytes"), 150 * mib);
	cr_assert_str_eq(innermost(json_object_array_get_idx(get(m, "at_peak"), 0)), "make_batch");
	cr_assert_str_eq(innermost(json_object_array_get_idx(get(m, "at_end"), 0)), "train_step");
	json_object_put(j);
}

static bool only_pid(void *ctx, uint32_t pid)
{
	return pid == *(const uint32_t *)ctx;
}

/* Collected for one process: another's GPU work, launches and samples are left out. */
Test(gpu_report, collect_one_process)
{
	struct profile_data pd;
	struct gpu_report *r;
	uint32_t other = PID + 1;

	mixed(&pd);
	cr_assert_eq(gpu_report__collect(&pd, only_pid, &other, &r), 0);
	cr_assert(gpu_report__empty(r));
	gpu_report__free(r);
	other = PID;
	cr_assert_eq(gpu_report__collect(&pd, only_pid, &other, &r), 0);
	cr_assert(!gpu_report__empty(r));
	cr_assert_eq(gpu_report__finish(r), 0);
	cr_assert_eq(gpu_report__nr_devices(r), 1);
	gpu_report__free(r);
}

/* The figures of a collected report are those gpu_report__figures makes on its own (the
 * service's slice takes them from the report when one process is all of its user's). */
Test(gpu_report, collected_figures_are_the_figures)
{
	struct profile_data pd;
	struct gpu_report *r;
	struct gpu_device_figures a[4], b[4];
	size_t na = 0, nb = 0;
	uint32_t pid = PID;

	mixed(&pd);
	cr_assert_eq(gpu_report__collect(&pd, only_pid, &pid, &r), 0);
	gpu_report__device_figures(r, a, 4, &na);
	cr_assert_eq(gpu_report__figures(&pd, only_pid, &pid, b, 4, &nb), 0);
	cr_assert_eq(na, nb);
	cr_assert_gt(na, 0);
	for (size_t i = 0; i < na; i++) {
		cr_assert_gt(a[i].busy_ns + a[i].idle_ns, 0);
		cr_assert_gt(a[i].kernels, 0);
		cr_assert_eq(a[i].device, b[i].device);
		cr_assert_eq(a[i].busy_ns, b[i].busy_ns);
		cr_assert_eq(a[i].idle_ns, b[i].idle_ns);
		cr_assert_eq(memcmp(a[i].idle_by, b[i].idle_by, sizeof(a[i].idle_by)), 0);
		cr_assert_eq(a[i].kernels, b[i].kernels);
		cr_assert_eq(a[i].copies, b[i].copies);
		cr_assert_eq(a[i].memsets, b[i].memsets);
	}
	gpu_report__free(r);
}

/* A slice merged into the kept report of the one before (a slice cut short by a query). */
Test(gpu_report, merged_into_kept)
{
	static struct part p;
	struct profile_data pd;
	struct gpu_report *a, *b;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	struct json_object *j, *d;

	mixed(&pd);
	part_of(&pd, 0, 6500, &p);
	cr_assert_eq(gpu_report__collect(&p.pd, NULL, NULL, &a), 0);
	heap_free();
	part_of(&pd, 6500, 11000, &p);
	cr_assert_eq(gpu_report__collect(&p.pd, NULL, NULL, &b), 0);
	heap_free();
	cr_assert_eq(gpu_report__merge(a, b), 0);
	gpu_report__free(b);
	cr_assert_eq(gpu_report__finish(a), 0);
	f = open_memstream(&buf, &len);
	cr_assert_eq(gpu_report__write_json(a, f), 0);
	cr_assert_eq(fclose(f), 0);
	gpu_report__free(a);
	j = json_tokener_parse(buf);
	free(buf);
	cr_assert_eq(num(get(j, "window"), "start_ns"), 0);
	cr_assert_eq(num(get(j, "window"), "end_ns"), 11000 * US);
	d = json_object_array_get_idx(get(j, "devices"), 0);
	cr_assert_eq(num(d, "busy_ns"), 5260 * US);
	cr_assert_eq(num(d, "idle_ns"), 5630 * US);
	cr_assert_str_eq(innermost(finding(j, "host_bound")), "make_batch");
	json_object_put(j);
}

/*
 * GPU memory per process and device (profile_mem.device; a free is -1, as the daemon gives it:
 * it frees on its allocation's device). train_step allocates 100 MiB on device 0 and 200 on
 * device 1 (the same stack, two places), make_batch 50 on device 1; the 200 is freed; a free
 * of memory allocated before the profile counts on the process's first device; a failed
 * allocation on device 1; another process only frees memory of before the profile: its
 * device is not known.
 */
static const struct profile_mem by_device_mem[] = {
	{.time_ns = 1 * US,
	 .addr = 0x1000,
	 .bytes = 100 << 20,
	 .pid = PID,
	 .stack_id = 1,
	 .api = "cudaMalloc"},
	{.time_ns = 2 * US,
	 .addr = 0x2000,
	 .bytes = 200 << 20,
	 .pid = PID,
	 .stack_id = 1,
	 .device = 1,
	 .api = "cudaMalloc"},
	{.time_ns = 3 * US,
	 .addr = 0x3000,
	 .bytes = 50 << 20,
	 .pid = PID,
	 .stack_id = 2,
	 .device = 1,
	 .api = "cuMemAlloc_v2"},
	{.time_ns = 4 * US,
	 .addr = 0x2000,
	 .pid = PID,
	 .stack_id = 3,
	 .is_free = 1,
	 .device = -1,
	 .api = "cudaFree"},
	{.time_ns = 5 * US,
	 .addr = 0x9999,
	 .pid = PID,
	 .stack_id = 3,
	 .is_free = 1,
	 .device = -1,
	 .api = "cudaFree"},
	{.time_ns = 6 * US,
	 .bytes = 900u << 20,
	 .pid = PID,
	 .stack_id = 4,
	 .failed = 1,
	 .device = 1,
	 .api = "cudaMalloc"},
	{.time_ns = 7 * US,
	 .addr = 0x7777,
	 .pid = PID + 1,
	 .stack_id = 3,
	 .is_free = 1,
	 .device = -1,
	 .api = "cudaFree"},
};

static void check_by_device(struct json_object *j)
{
	static const uint64_t mib = 1 << 20;
	struct json_object *mem = get(j, "memory"), *d0, *d1, *other, *peak, *fs;
	bool unfreed[2] = {false, false};

	cr_assert_eq(json_object_array_length(mem), 3, "%s", json_object_to_json_string(mem));
	d0 = json_object_array_get_idx(mem, 0);
	d1 = json_object_array_get_idx(mem, 1);
	other = json_object_array_get_idx(mem, 2);
	cr_assert_eq(num(d0, "pid"), PID);
	cr_assert_eq(num(d0, "device"), 0);
	cr_assert_eq(num(d0, "allocations"), 1);
	cr_assert_eq(num(d0, "peak_bytes"), 100 * mib);
	cr_assert_eq(num(d0, "peak_ns"), 1 * US);
	cr_assert_eq(num(d0, "end_bytes"), 100 * mib);
	cr_assert_eq(num(d0, "frees"), 1, "the unknown free, on the first device");
	cr_assert_eq(num(d0, "unknown_frees"), 1);
	cr_assert_eq(num(d0, "failed"), 0);
	cr_assert_eq(json_object_array_length(get(d0, "at_peak")), 1);
	cr_assert_str_eq(innermost(json_object_array_get_idx(get(d0, "at_peak"), 0)), "train_step");

	cr_assert_eq(num(d1, "pid"), PID);
	cr_assert_eq(num(d1, "device"), 1);
	cr_assert_eq(num(d1, "allocations"), 2);
	cr_assert_eq(num(d1, "allocated_bytes"), 250 * mib);
	cr_assert_eq(num(d1, "peak_bytes"), 250 * mib);
	cr_assert_eq(num(d1, "peak_ns"), 3 * US);
	cr_assert_eq(num(d1, "end_bytes"), 50 * mib);
	cr_assert_eq(num(d1, "end_allocations"), 1);
	cr_assert_eq(num(d1, "frees"), 1);
	cr_assert_eq(num(d1, "unknown_frees"), 0);
	cr_assert_eq(num(d1, "failed"), 1);
	peak = get(d1, "at_peak");
	cr_assert_eq(json_object_array_length(peak), 2);
	cr_assert_str_eq(innermost(json_object_array_get_idx(peak, 0)), "train_step");
	cr_assert_eq(num(json_object_array_get_idx(peak, 0), "bytes"), 200 * mib);
	cr_assert_str_eq(innermost(json_object_array_get_idx(peak, 1)), "make_batch");
	cr_assert_str_eq(innermost(json_object_array_get_idx(get(d1, "at_end"), 0)), "make_batch");
	cr_assert_str_eq(innermost(json_object_array_get_idx(get(d1, "failed_at"), 0)),
			 "queue_more");

	cr_assert_eq(num(other, "pid"), PID + 1);
	cr_assert(json_object_is_type(get(other, "device"), json_type_null));
	cr_assert_eq(num(other, "unknown_frees"), 1);
	cr_assert_eq(num(other, "allocations"), 0);

	cr_assert_eq(num(finding(j, "allocation_failed"), "device"), 1);
	fs = get(j, "findings");
	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		struct json_object *f = json_object_array_get_idx(fs, i);

		if (!strcmp(json_object_get_string(get(f, "kind")), "memory_unfreed") &&
		    num(f, "device") < 2)
			unfreed[num(f, "device")] = true;
	}
	cr_assert(unfreed[0] && unfreed[1], "memory_unfreed on each device");
}

Test(gpu_report, memory_by_device)
{
	struct profile_data pd = {.mem = by_device_mem,
				  .nr_mem = sizeof(by_device_mem) / sizeof(by_device_mem[0]),
				  .stack = stack_of,
				  .end_ns = 10 * US};
	struct json_object *j = report_json(&pd);
	struct gpu_report *r;
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	check_by_device(j);
	json_object_put(j);
	/* Kept in two slices and merged: the devices stay. */
	j = merged_json(&pd, (const uint64_t[]){4}, 1);
	check_by_device(j);
	json_object_put(j);

	cr_assert(f);
	cr_assert_eq(gpu_report__build(&pd, &r), 0);
	cr_assert_eq(gpu_report__write_text(r, f), 0);
	gpu_report__free(r);
	cr_assert_eq(fclose(f), 0);
	cr_assert(strstr(buf, "GPU memory of process 100 on device 0:"), "%s", buf);
	cr_assert(strstr(buf, "GPU memory of process 100 on device 1:"), "%s", buf);
	cr_assert(strstr(buf, "GPU memory of process 101 on an unknown device:"), "%s", buf);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		cr_assert_leq(strlen(line), 80, "over 80 columns: %s", line);
	free(buf);
}

/*
 * 10 steps of a 1 ms kernel then 25 ms of host work in make_batch, sampled in every other gap
 * only (a low frequency): the unsampled gaps' time goes where the sampled ones' went, not to
 * the launch that ended them (train_step).
 */
Test(gpu_report, unsampled_gaps_spread)
{
	static struct corr_cpu_rec l[10];
	static struct corr_gpu_rec g[10];
	static struct profile_join jn[10];
	static struct profile_sample sm[5];
	struct profile_data pd = {.launches = l,
				  .gpu = g,
				  .joins = jn,
				  .samples = sm,
				  .nr_samples = 5,
				  .stack = stack_of};
	struct json_object *j, *causes, *f;
	uint64_t host = 0, batch = 0;

	for (size_t i = 0; i < 10; i++) {
		uint64_t t = i * 26000;

		l[i] = (struct corr_cpu_rec){
			.pid = PID, .tid = PID, .time_ns = t * US, .stack_id = 1};
		g[i] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
					     .pid = PID,
					     .start_ns = (t + 5) * US,
					     .end_ns = (t + 1005) * US,
					     .name = "k_step"};
		jn[i] = (struct profile_join){i, i};
		if (i % 2 == 0 && i < 9)
			sm[i / 2] = (struct profile_sample){
				.time_ns = (t + 13000) * US, .pid = PID, .tid = PID, .stack_id = 2};
	}
	pd.nr_launches = pd.nr_gpu = pd.nr_joins = 10;
	j = report_json(&pd);
	causes = get(j, "idle_causes");
	for (size_t i = 0; i < json_object_array_length(causes); i++) {
		struct json_object *c = json_object_array_get_idx(causes, i);

		if (strcmp(json_object_get_string(get(c, "cause")), "host"))
			continue;
		host += (uint64_t)num(c, "ns");
		if (!strcmp(innermost(c), "make_batch"))
			batch += (uint64_t)num(c, "ns");
	}
	cr_assert_eq(host, 9 * 25000 * US, "host idle %" PRIu64, host);
	cr_assert_eq(batch, host, "all host idle in make_batch: %" PRIu64 " of %" PRIu64, batch,
		     host);
	f = finding(j, "host_bound");
	cr_assert(f);
	cr_assert_str_eq(innermost(f), "make_batch");
	json_object_put(j);
}

/* The clock's bounds (output/gpu_clock.h): from mixed()'s joins every piece of work starts at
 * least 10 us after its launch, and a device-wide synchronize at 8015 us returns 10 us after
 * the last work its thread launched before it (K2, ending at 8010) ended: the GPU times lie
 * within -10..+10 us. Shifted 30 us either way, one bound breaks and clock_skew says which. */
static struct json_object *clock_report(struct profile_data *pd, int64_t shift_us)
{
	mixed(pd);
	waits[0].api = "cudaDeviceSynchronize";
	waits[0].start_ns = 8015 * US;
	/* GPU times early: the CPU's later instead (the first kernel starts at 10 us). */
	for (size_t i = 0; shift_us < 0 && i < pd->nr_launches; i++)
		launches[i].time_ns += (uint64_t)-shift_us * US;
	waits[0].start_ns += shift_us < 0 ? (uint64_t)-shift_us * US : 0;
	waits[0].end_ns += shift_us < 0 ? (uint64_t)-shift_us * US : 0;
	for (size_t i = 0; shift_us > 0 && i < pd->nr_gpu; i++) {
		gpu[i].start_ns += (uint64_t)shift_us * US;
		gpu[i].end_ns += (uint64_t)shift_us * US;
	}
	return report_json(pd);
}

Test(gpu_report, clock_bounds)
{
	struct profile_data pd;
	struct json_object *j = clock_report(&pd, 0), *c, *b, *f;

	c = get(json_object_array_get_idx(get(j, "devices"), 0), "clock");
	cr_assert_eq(num(c, "launch_to_start_min_ns"), 10 * US);
	cr_assert_eq(num(c, "launches"), 8);
	cr_assert_eq(num(c, "sync_return_after_end_min_ns"), 10 * US);
	cr_assert_eq(num(c, "syncs"), 1);
	b = get(c, "offset_bound_ns");
	cr_assert_eq(json_object_get_int64(json_object_array_get_idx(b, 0)), -10 * (int64_t)US);
	cr_assert_eq(json_object_get_int64(json_object_array_get_idx(b, 1)), 10 * (int64_t)US);
	cr_assert_null(finding(j, "clock_skew"));
	json_object_put(j);

	j = clock_report(&pd, -30);
	c = get(json_object_array_get_idx(get(j, "devices"), 0), "clock");
	cr_assert_eq(num(c, "launch_to_start_min_ns"), -20 * (int64_t)US);
	f = finding(j, "clock_skew");
	cr_assert(f, "work that starts before its launch is a clock off by 20 us");
	cr_assert(strstr(json_object_get_string(get(f, "summary")), "early"));
	json_object_put(j);

	j = clock_report(&pd, 30);
	c = get(json_object_array_get_idx(get(j, "devices"), 0), "clock");
	cr_assert_eq(num(c, "sync_return_after_end_min_ns"), -20 * (int64_t)US);
	f = finding(j, "clock_skew");
	cr_assert(f, "a sync that returns before its work ended is a clock off by 20 us");
	cr_assert(strstr(json_object_get_string(get(f, "summary")), "late"));
	json_object_put(j);

	/* A second device's work, launched before the thread's last launch (K2, device 0) and
	 * running past the device synchronize: that synchronize waited for device 0 only, and
	 * bounds nothing of device 1's clock. */
	json_object_put(clock_report(&pd, 0));
	kernel(9, "k_other_device", 3, 5300, 9000);
	gpu[9].device = 1;
	launched(&pd, 9, 5200, 1);
	pd.nr_gpu = 10;
	j = report_json(&pd);
	cr_assert_null(finding(j, "clock_skew"), "a synchronize of device 0 bounds device 1");
	c = get(json_object_array_get_idx(get(j, "devices"), 1), "clock");
	cr_assert_eq(num(c, "syncs"), 0);
	cr_assert_eq(num(get(json_object_array_get_idx(get(j, "devices"), 0), "clock"), "syncs"),
		     1);
	json_object_put(j);

	/* A stream's synchronize bounds nothing: another stream's work may outlast it. */
	mixed(&pd);
	j = report_json(&pd);
	c = get(json_object_array_get_idx(get(j, "devices"), 0), "clock");
	cr_assert_eq(num(c, "syncs"), 0);
	cr_assert(json_object_is_type(get(c, "offset_bound_ns"), json_type_null));
	json_object_put(j);
}

Test(gpu_report, clock_merge)
{
	struct gpu_clock a, b;
	int64_t lo, hi;

	gpu_clock__init(&a);
	gpu_clock__init(&b);
	cr_assert_not(gpu_clock__bound(&a, &lo, &hi), "nothing measured bounds nothing");
	b.lead_min_ns = 5000;
	b.leads = 2;
	a.drain_min_ns = 3000;
	a.drains = 1;
	cr_assert_not(gpu_clock__bound(&a, &lo, &hi), "one side alone is no bound");
	gpu_clock__merge(&a, &b);
	cr_assert_eq(a.leads, 2);
	cr_assert_eq(a.drains, 1);
	cr_assert(gpu_clock__bound(&a, &lo, &hi));
	cr_assert_eq(lo, -3000);
	cr_assert_eq(hi, 5000);
}

/* The slice builds' big arrays (output/shelf.h): kept for the next build that fits, the
 * smallest that fits first, within SHELF_SLOTS and SHELF_MAX_BYTES, until cleared. */
Test(shelf, keeps_big_buffers_for_the_next_build)
{
	size_t a_bytes, b_bytes, c_bytes, bytes;
	char *a, *b, *c, *small;

	small = shelf__take(1000, &bytes);
	cr_assert(small && bytes == 1000, "a small buffer is as asked (%zu)", bytes);
	shelf__put(small, bytes);
	cr_assert_eq(shelf__bytes(), 0, "a small buffer is freed, not shelved");

	a = shelf__take(300 << 10, &a_bytes);
	cr_assert(a && a_bytes == 512 << 10, "a new big one is a power of two (%zu)", a_bytes);
	memset(a, 1, a_bytes); /* it is all there */
	b = shelf__take(600 << 10, &b_bytes);
	cr_assert(b && b_bytes == 1 << 20, "%zu", b_bytes);
	shelf__put(b, b_bytes);
	shelf__put(a, a_bytes);
	cr_assert_eq(shelf__bytes(), (512 << 10) + (1 << 20));

	c = shelf__take(400 << 10, &c_bytes);
	cr_assert(c == a && c_bytes == a_bytes, "the smallest that fits comes back");
	cr_assert_eq(shelf__bytes(), 1 << 20);
	shelf__put(c, c_bytes);
	c = shelf__take(2 << 20, &c_bytes);
	cr_assert(c != a && c != b && c_bytes == 2 << 20, "none fits: a new one");
	shelf__put(c, c_bytes);
	shelf__clear();
	cr_assert_eq(shelf__bytes(), 0, "cleared");
}

Test(shelf, holds_at_most_its_slots_and_bytes)
{
	for (int i = 0; i < 2 * SHELF_SLOTS; i++) {
		size_t bytes;
		void *p = shelf__take(SHELF_MIN_BYTES, &bytes);

		cr_assert(p);
		shelf__put(p, bytes);
	}
	/* Each put found its own taken back first: one shelved. */
	cr_assert_eq(shelf__bytes(), SHELF_MIN_BYTES);
	{
		void *held[2 * SHELF_SLOTS];
		size_t bytes[2 * SHELF_SLOTS];

		for (int i = 0; i < 2 * SHELF_SLOTS; i++)
			cr_assert(held[i] = shelf__take(SHELF_MAX_BYTES / 4, &bytes[i]));
		for (int i = 0; i < 2 * SHELF_SLOTS; i++)
			shelf__put(held[i], bytes[i]);
	}
	cr_assert_leq(shelf__bytes(), SHELF_MAX_BYTES, "%zu", shelf__bytes());
	cr_assert_geq(shelf__bytes(), SHELF_MAX_BYTES - SHELF_MAX_BYTES / 4);
	shelf__put(malloc(SHELF_MAX_BYTES + 1), SHELF_MAX_BYTES + 1);
	cr_assert_leq(shelf__bytes(), SHELF_MAX_BYTES, "one beyond the cap is freed");
	shelf__clear();
}
