// SPDX-License-Identifier: Apache-2.0
/*
 * GPU reports kept and merged (the service's window and attachments): a profile cut into
 * slices, each collected with its strings freed after, merged and finished, reads as the
 * report built at once: sums exact, gaps at the cuts unknown, memory live across slices, each
 * device's memory kept apart; one process's report collected alone.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include "output/gpu_report/gpu_report.h"
#include "output/model/profile.h"
#include "tests/lib/test_gpu_report_fixture.h"

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
