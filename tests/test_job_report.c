// SPDX-License-Identifier: Apache-2.0
/*
 * The job report on hand-made jobs: four ranks, each step four compute kernels and an
 * all-reduce that starts at the rank's arrival and ends at the last arrival plus its time, as
 * NCCL's kernels wait for their peers. A compute straggler, a host straggler, none, and the
 * inputs that cannot be compared whole.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/job_report.h"
#include "output/nccl.h"
#include "output/profile.h"

#define US	1000ull
#define MS	(1000 * US)
#define MAXR	8
#define MAX_REC 4096

static const char *const st_launch[] = {"main", "train", "forward", "cudaLaunchKernel"};
static const char *const st_nccl[] = {"main", "train", "all_reduce", "cudaLaunchKernel"};
static const char *const st_load1[] = {"main", "train", "xs_load_data", "read"};
static const char *const st_load2[] = {"main", "train", "xs_load_data", "decode"};

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

/* The report as JSON, parsed. */
static json_object *report_json(struct job_sim *s)
{
	struct job_report *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_object *o;

	cr_assert_eq(job_report__build(play(s), NULL, &r), 0);
	cr_assert_eq(job_report__write_json(r, f), 0);
	cr_assert_eq(job_report__write_text(r, stderr), 0);
	fclose(f);
	job_report__free(r);
	o = json_tokener_parse(buf);
	cr_assert(o, "not JSON: %s", buf);
	free(buf);
	return o;
}

static json_object *at(json_object *o, const char *path)
{
	char key[64];

	while (o && *path) {
		size_t n = strcspn(path, ".");

		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(key));
		else if (!json_object_object_get_ex(o, key, &o))
			o = NULL;
		path += n + (path[n] == '.');
	}
	return o;
}

static int64_t num(json_object *o, const char *path)
{
	json_object *v = at(o, path);

	cr_assert(v, "no %s", path);
	return json_object_get_int64(v);
}

static const char *str(json_object *o, const char *path)
{
	json_object *v = at(o, path);

	return v ? json_object_get_string(v) : NULL;
}

static bool frames_have(json_object *o, const char *path, const char *frame)
{
	json_object *a = at(o, path);

	for (size_t i = 0; a && i < json_object_array_length(a); i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(a, i)), frame))
			return true;
	return false;
}

Test(job_report, compute_straggler_named_with_its_kernel_and_exact_lateness)
{
	struct job_sim *s = sim(4, 10);
	json_object *o;

	s->slow[2] = 1.3;
	o = report_json(s);
	cr_expect_str_eq(str(o, "schema"), "xsprof.job_report");
	cr_expect_eq(num(o, "jobs.0.collectives_total"), 10);
	cr_expect_str_eq(str(o, "jobs.0.steps_from"), "ranges");
	cr_assert_eq(json_object_array_length(at(o, "jobs.0.findings")), 1);
	cr_expect_str_eq(str(o, "jobs.0.findings.0.kind"), "straggler");
	cr_expect_eq(num(o, "jobs.0.findings.0.rank"), 2);
	cr_expect_str_eq(str(o, "jobs.0.findings.0.cause"), "compute");
	/* 4 kernels of 5 ms, 30% longer: 6 ms, exactly (the first step's too: all start free). */
	cr_expect_eq(num(o, "jobs.0.findings.0.figures.lateness_median_ns"), 6 * MS);
	cr_expect_eq(num(o, "jobs.0.findings.0.figures.late_collectives"), 10);
	cr_expect_str_eq(str(o, "jobs.0.findings.0.kernels.0.name"), "xs_k_forward");
	cr_expect_eq(num(o, "jobs.0.findings.0.kernels.0.more_ns"), 60 * MS);
	cr_expect(frames_have(o, "jobs.0.findings.0.stack", "forward"));
	cr_expect_str_eq(str(o, "jobs.0.findings.0.severity"), "high");
	cr_expect_eq(num(o, "jobs.0.steps.3.straggler"), 2);
	cr_expect_str_eq(str(o, "jobs.0.collectives.0.op"), "AllReduce");
	cr_expect_str_eq(str(o, "jobs.0.collectives.0.dtype"), "f32");
	cr_expect_eq(num(o, "jobs.0.collectives.4.index"), 4);
	json_object_put(o);
	free(s);
}

Test(job_report, host_straggler_named_with_the_host_stack)
{
	struct job_sim *s = sim(4, 8);
	json_object *o;

	s->host_delay[1] = 20 * MS;
	o = report_json(s);
	cr_assert_eq(json_object_array_length(at(o, "jobs.0.findings")), 1);
	cr_expect_eq(num(o, "jobs.0.findings.0.rank"), 1);
	cr_expect_str_eq(str(o, "jobs.0.findings.0.cause"), "host");
	/* The host was 20 ms late with 5 ms of work queued: 15 ms, 10 us of launch aside. */
	cr_expect_eq(num(o, "jobs.0.findings.0.figures.lateness_median_ns"), 15 * MS + 10 * US);
	cr_expect(frames_have(o, "jobs.0.findings.0.stack", "xs_load_data"));
	cr_expect_not(frames_have(o, "jobs.0.findings.0.stack", "read"),
		      "the path stops where the samples split");
	json_object_put(o);
	free(s);
}

Test(job_report, no_straggler_no_finding)
{
	struct job_sim *s = sim(4, 6);
	json_object *o = report_json(s);

	cr_expect_eq(json_object_array_length(at(o, "jobs.0.findings")), 0);
	cr_expect_eq(num(o, "jobs.0.collectives_total"), 6);
	cr_expect_eq(json_object_array_length(at(o, "jobs.0.notes")), 0);
	json_object_put(o);
	free(s);
}

Test(job_report, steps_from_the_pattern_without_ranges)
{
	struct job_sim *s = sim(2, 4);
	struct job_report *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_object *o;
	struct profile_data *pd = play(s);
	size_t n = 0;

	for (size_t i = 0; i < pd->nr_gpu; i++)
		if (pd->gpu[i].kind != CORR_GPU_NVTX)
			s->gpu[n++] = pd->gpu[i];
	pd->nr_gpu = n; /* joins point at the kernels, which kept their places */
	cr_assert_eq(job_report__build(pd, NULL, &r), 0);
	job_report__write_json(r, f);
	fclose(f);
	job_report__free(r);
	o = json_tokener_parse(buf);
	cr_expect_str_eq(str(o, "jobs.0.steps_from"), "pattern");
	cr_expect_eq(num(o, "jobs.0.pattern_period"), 1);
	cr_expect_eq(json_object_array_length(at(o, "jobs.0.steps")), 4);
	json_object_put(o);
	free(buf);
	free(s);
}

static bool notes_say(json_object *o, const char *path, const char *what)
{
	json_object *a = at(o, path);

	for (size_t i = 0; a && i < json_object_array_length(a); i++)
		if (strstr(json_object_get_string(json_object_array_get_idx(a, i)), what))
			return true;
	return false;
}

Test(job_report, partial_and_bad_input_get_a_plain_answer)
{
	struct job_sim *s = sim(4, 5);
	json_object *o;

	/* A rank missing: the world is 5. */
	for (int k = 0; k < 4; k++)
		snprintf(s->labels[k], sizeof(s->labels[k]),
			 "job.id=run1\x1fjob.rank=%d\x1fjob.world_size=5", k);
	s->skip_last_coll_of = 3;
	o = report_json(s);
	cr_expect(notes_say(o, "jobs.0.notes", "ranks missing: 1 of the world of 5 (4)"));
	cr_expect(notes_say(o, "jobs.0.notes", "different numbers of collectives (4 to 5)"));
	cr_expect_eq(num(o, "jobs.0.collectives.4.ranks"), 3);
	json_object_put(o);
	free(s);

	/* No collectives. */
	s = sim(2, 3);
	s->no_nccl = true;
	o = report_json(s);
	cr_expect(notes_say(o, "jobs.0.notes", "no collectives"));
	json_object_put(o);
	free(s);

	/* Two jobs, and a process with no rank. */
	s = sim(4, 3);
	for (int k = 0; k < 4; k++)
		snprintf(s->labels[k], sizeof(s->labels[k]), "job.id=%s\x1fjob.rank=%d",
			 k < 2 ? "a" : "b", k % 2);
	s->no_label[3] = true;
	o = report_json(s);
	cr_expect_eq(json_object_array_length(at(o, "jobs")), 2);
	cr_expect(notes_say(o, "notes", "2 jobs on this host"));
	cr_expect(notes_say(o, "notes", "1 processes with GPU work said no rank"));
	cr_expect(notes_say(o, "jobs.1.notes", "one rank (0)"));
	json_object_put(o);
	free(s);

	/* No ranks at all. */
	s = sim(2, 2);
	s->no_label[0] = s->no_label[1] = true;
	o = report_json(s);
	cr_expect(notes_say(o, "notes", "no process with GPU work said its rank"));
	cr_expect_eq(json_object_array_length(at(o, "jobs")), 0);
	json_object_put(o);
	free(s);
}

Test(job_report, older_nccl_names_meet_too)
{
	struct job_sim *s = sim(2, 3);
	json_object *o;

	s->kernel = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)";
	s->slow[1] = 1.5;
	o = report_json(s);
	cr_expect_eq(num(o, "jobs.0.collectives_total"), 3);
	cr_expect_str_eq(str(o, "jobs.0.collectives.0.algorithm"), "RING");
	cr_expect_eq(num(o, "jobs.0.findings.0.rank"), 1);
	json_object_put(o);
	free(s);
}
