// SPDX-License-Identifier: Apache-2.0
/*
 * The GPU report on hand-made profiles whose every gap has a known cause: busy and idle time,
 * the idle split by cause and the stack each is blamed on, communication overlap, copies,
 * launch-to-start delay and the findings; the JSON read back with json-c, the text within
 * 80 columns, and the Chrome trace's counter tracks. Reports kept and merged:
 * test_gpu_report_merge.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "output/gpu_report/gpu_clock.h"
#include "output/gpu_report/gpu_report.h"
#include "output/gpu_report/gpu_report_internal.h"
#include "output/output.h"
#include "output/model/profile.h"
#include "output/model/shelf.h"
#include "tests/lib/test_gpu_report_fixture.h"

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

/*
 * Host gaps followed through wait chains (--wakers): the launching thread waits 24 ms of each
 * 25 ms gap, woken by a relay thread of its process (101) that a worker (pid 200) woke; the
 * worker's samples over the wait are in make_batch. The waited part of each gap goes to the
 * worker's make_batch, the finding names it with the chain; a wait the launching thread was
 * woken from without a chain (a timer's) stays as before.
 */
Test(gpu_report, host_gaps_follow_chains)
{
	static struct corr_cpu_rec l[10];
	static struct corr_gpu_rec g[10];
	static struct profile_join jn[10];
	static struct profile_sample sm[40];
	static struct profile_woken wk[10];
	static struct profile_hop hp[20];
	struct profile_data pd = {.launches = l,
				  .gpu = g,
				  .joins = jn,
				  .samples = sm,
				  .woken = wk,
				  .hops = hp,
				  .stack = stack_of};
	struct json_object *j, *f, *c, *hops, *work;
	uint64_t worker = 0, host = 0;
	struct json_object *causes;

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
		if (i == 9)
			continue;
		/* Stretch i: the last one (i == 8) has no chain (a timer woke it). */
		wk[i] = (struct profile_woken){.start_ns = (t + 1000) * US,
					       .end_ns = (t + 25000) * US,
					       .pid = PID,
					       .tid = PID,
					       .stack_id = 4,
					       .first_hop = (uint32_t)pd.nr_hops,
					       .nr_hops = i == 8 ? 0 : 2};
		if (i < 8) {
			hp[pd.nr_hops++] = (struct profile_hop){.wake_ns = (t + 24990) * US,
								.run_ns = (t + 24980) * US,
								.pid = PID,
								.tid = 101,
								.stack_id = 6};
			hp[pd.nr_hops++] = (struct profile_hop){.wake_ns = (t + 24970) * US,
								.run_ns = (t + 500) * US,
								.pid = 200,
								.tid = 200,
								.stack_id = 3};
		}
		for (size_t k = 0; k < 4; k++)
			sm[pd.nr_samples++] =
				(struct profile_sample){.time_ns = (t + 3000 + 5000 * k) * US,
							.pid = i < 8 ? 200 : PID,
							.tid = i < 8 ? 200 : PID,
							.stack_id = 2};
	}
	pd.nr_woken = 9;
	pd.nr_launches = pd.nr_gpu = pd.nr_joins = 10;
	j = report_json(&pd);
	causes = get(j, "idle_causes");
	for (size_t i = 0; i < json_object_array_length(causes); i++) {
		struct json_object *x = json_object_array_get_idx(causes, i);

		if (strcmp(json_object_get_string(get(x, "cause")), "host"))
			continue;
		host += (uint64_t)num(x, "ns");
		if (num(x, "pid") == 200 && !strcmp(innermost(x), "make_batch"))
			worker += (uint64_t)num(x, "ns");
	}
	/* Gaps [t + 1005, t + 26005], the next launch at t + 26000; stretches 0-7 cover
	 * [t + 1005, t + 25000] of theirs. */
	cr_assert_eq(host, 9 * 25000 * US, "host idle %" PRIu64, host);
	cr_assert_eq(worker, 8 * 23995 * US, "the worker's make_batch: %" PRIu64, worker);
	f = finding(j, "host_bound");
	cr_assert(f);
	cr_assert_eq(num(f, "pid"), 200);
	cr_assert_str_eq(innermost(f), "make_batch");
	c = get(f, "chain");
	cr_assert(c);
	cr_assert_float_eq(json_object_get_double(get(c, "explained_share")),
			   (double)worker / (double)host, 1e-6);
	hops = get(c, "hops");
	cr_assert_eq(json_object_array_length(hops), 2);
	cr_assert_eq(num(json_object_array_get_idx(hops, 0), "tid"), 101);
	cr_assert_eq(num(json_object_array_get_idx(hops, 1), "pid"), 200);
	work = get(c, "work");
	cr_assert_str_eq(json_object_get_string(get(work, "frame")), "make_batch");
	cr_assert_float_eq(json_object_get_double(get(work, "share")), 1.0, 1e-9);
	cr_assert(strstr(json_object_get_string(get(c, "why")), "whose time went to make_batch"),
		  "%s", json_object_get_string(get(c, "why")));
	cr_assert_eq(num(get(c, "waiting"), "tid"), PID);
	json_object_put(j);

	/* Without the chains (no --wakers): no chain, the gaps as before. */
	pd.nr_woken = 0;
	j = report_json(&pd);
	f = finding(j, "host_bound");
	cr_assert(f);
	cr_assert_null(json_object_object_get(f, "chain"));
	cr_assert_neq(num(f, "pid"), 200);
	json_object_put(j);
}

/* The clock's bounds (output/gpu_report/gpu_clock.h): from mixed()'s joins every piece of work
 * starts at least 10 us after its launch, and a device-wide synchronize at 8015 us returns 10 us after
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

/* The slice builds' big arrays (output/model/shelf.h): kept for the next build that fits, the
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

/* Every kind of finding (gpu_report_findings.c's table) is a row of GPU_REPORT.md's table of
 * findings, so a new kind is documented where users read what each means. */
Test(gpu_report, every_finding_kind_is_documented)
{
	FILE *f = fopen(XSPROF_TEST_SOURCE_DIR "/../output/gpu_report/GPU_REPORT.md", "re");
	static char doc[1 << 17];
	size_t n, kinds = 0;

	cr_assert(f, "GPU_REPORT.md not found");
	n = fread(doc, 1, sizeof(doc) - 1, f);
	fclose(f);
	doc[n] = '\0';
	for (const char *k; (k = gr_finding_kind(kinds)); kinds++) {
		char row[64];

		snprintf(row, sizeof(row), "| `%s` |", k);
		cr_expect(strstr(doc, row), "finding %s is not in GPU_REPORT.md's table", k);
	}
	cr_expect_geq(kinds, 11);
}

/* PyTorch's backward: the Python thread (PID) opened NVTX "backward" around its backward()
 * call; the engine's thread (tid 300) launched the kernels. Those launched inside the pass
 * count in "backward"; one the engine thread launched after the pass ended counts in none;
 * one launched by the engine thread inside its own range counts there. */
Test(gpu_report, backward_pass_work_in_callers_range)
{
	static struct corr_cpu_rec l[4];
	static struct corr_gpu_rec g[8];
	static struct profile_join jn[4];
	static struct profile_pass ps[2];
	struct profile_data pd = {
		.launches = l, .gpu = g, .joins = jn, .passes = ps, .stack = stack_of};
	static const uint64_t at[4] = {1000, 2000, 9000, 12000}; /* us */
	static const uint32_t tid[4] = {300, 300, 300, 300};
	struct json_object *j, *ranges;
	uint64_t bwd = 0, own = 0, other = 0;

	for (size_t i = 0; i < 4; i++) {
		l[i] = (struct corr_cpu_rec){
			.pid = PID, .tid = tid[i], .time_ns = at[i] * US, .stack_id = 1};
		g[i] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
					     .pid = PID,
					     .start_ns = (at[i] + 10) * US,
					     .end_ns = (at[i] + 10 + 100 * (i + 1)) * US,
					     .name = "k_bwd"};
		jn[i] = (struct profile_join){i, i};
	}
	g[4] = (struct corr_gpu_rec){.kind = CORR_GPU_NVTX,
				     .pid = PID,
				     .tid = PID,
				     .start_ns = 500 * US,
				     .end_ns = 10000 * US,
				     .name = "backward"};
	/* The engine thread's own range around its third launch. */
	g[5] = (struct corr_gpu_rec){.kind = CORR_GPU_NVTX,
				     .pid = PID,
				     .tid = 300,
				     .start_ns = 8500 * US,
				     .end_ns = 9500 * US,
				     .name = "engine_op"};
	/* Another process's range on a thread of the same number: never the pass's. */
	g[6] = (struct corr_gpu_rec){.kind = CORR_GPU_NVTX,
				     .pid = PID + 1,
				     .tid = PID,
				     .start_ns = 0,
				     .end_ns = 20000 * US,
				     .name = "other"};
	ps[0] = (struct profile_pass){
		.start_ns = 600 * US, .end_ns = 9900 * US, .pid = PID, .tid = PID};
	pd.nr_launches = pd.nr_joins = 4;
	pd.nr_gpu = 7;
	pd.nr_passes = 1;
	j = report_json(&pd);
	ranges = get(j, "ranges");
	for (size_t i = 0; i < json_object_array_length(ranges); i++) {
		struct json_object *x = json_object_array_get_idx(ranges, i);
		const char *name = json_object_get_string(get(x, "name"));

		if (!strcmp(name, "backward"))
			bwd = (uint64_t)num(x, "gpu_ns");
		else if (!strcmp(name, "engine_op"))
			own = (uint64_t)num(x, "gpu_ns");
		else
			other += (uint64_t)num(x, "gpu_ns");
	}
	cr_assert_eq(bwd, 300 * US, "backward: %" PRIu64, bwd);
	cr_assert_eq(own, 300 * US, "engine_op: %" PRIu64, own);
	cr_assert_eq(other, 0);
	json_object_put(j);

	/* Without the pass (no autograd probes): the engine thread's kernels in no range of the
	 * Python thread. */
	pd.nr_passes = 0;
	j = report_json(&pd);
	ranges = get(j, "ranges");
	for (size_t i = 0; i < json_object_array_length(ranges); i++) {
		struct json_object *x = json_object_array_get_idx(ranges, i);

		if (!strcmp(json_object_get_string(get(x, "name")), "backward"))
			cr_assert_eq(num(x, "gpu_ns"), 0);
	}
	json_object_put(j);
}
