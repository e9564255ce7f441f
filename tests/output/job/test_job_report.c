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
#include <time.h>

#include "daemon/base/proc_env.h"
#include "output/job/job_report.h"
#include "output/job/nccl.h"
#include "output/model/profile.h"

#include "tests/lib/job_sim.h"

/* The report of pd as JSON, parsed. */
static json_object *report_json_of(const struct profile_data *pd)
{
	struct job_report *r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_object *o;

	cr_assert_eq(job_report__build(pd, NULL, &r), 0);
	cr_assert_eq(job_report__write_json(r, f), 0);
	cr_assert_eq(job_report__write_text(r, stderr), 0);
	fclose(f);
	job_report__free(r);
	o = json_tokener_parse(buf);
	cr_assert(o, "not JSON: %s", buf);
	free(buf);
	return o;
}

/* The report of the job s plays. */
static json_object *report_json(struct job_sim *s)
{
	return report_json_of(play(s));
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

/* Rank 1's host time before each step's launches (15 ms of GPU wait from step 1 on) is spent,
 * 13 ms of it, waiting for its loader thread (tid 1501), which ran decode_batch meanwhile
 * (--wakers' chains); one step's wait was ended by another thread (1502), which did nothing
 * sampled. The finding follows the heaviest chain to decode_batch. */
Test(job_report, host_straggler_followed_through_its_wait_chain)
{
	static struct profile_woken wk[16];
	static struct profile_hop hp[16];
	struct job_sim *s = sim(4, 8);
	struct profile_data *pd;
	uint64_t t = 10 * MS;
	json_object *o;

	s->host_delay[1] = 20 * MS;
	pd = play(s);
	for (size_t st = 0; st < 8; st++) {
		uint32_t tid = st == 3 ? 1502 : 1501;

		wk[st] = (struct profile_woken){.start_ns = t + 6 * MS,
						.end_ns = t + 19 * MS,
						.pid = 1001,
						.tid = 1001,
						.stack_id = 6,
						.first_hop = (uint32_t)st,
						.nr_hops = 1};
		hp[st] = (struct profile_hop){.wake_ns = t + 19 * MS,
					      .run_ns = t + 5 * MS,
					      .pid = 1001,
					      .tid = tid,
					      .stack_id = 5};
		for (uint64_t at = t + 5 * MS + 500 * US; tid == 1501 && at < t + 19 * MS; at += MS)
			s->samples[s->ns++] = (struct profile_sample){
				.time_ns = at, .pid = 1001, .tid = 1501, .stack_id = 5};
		/* The step's end as play() made it: the last arrival (rank 1's, 20 ms of host and
		 * 4 kernels of 5 ms) and 1 ms of all-reduce, less 5 ms. */
		t = t + 20 * MS + 10 * US + 20 * MS + MS - 5 * MS;
	}
	pd->samples = s->samples;
	pd->nr_samples = s->ns;
	pd->woken = wk;
	pd->nr_woken = 8;
	pd->hops = hp;
	pd->nr_hops = 8;
	o = report_json_of(pd);
	cr_assert_eq(json_object_array_length(at(o, "jobs.0.findings")), 1);
	cr_expect_eq(num(o, "jobs.0.findings.0.rank"), 1);
	cr_expect_str_eq(str(o, "jobs.0.findings.0.cause"), "host");
	/* Steps 1-7: 15 ms each before the launches, 13 of them waiting on a chain. */
	cr_expect_float_eq(json_object_get_double(at(o, "jobs.0.findings.0.figures.chained_share")),
			   13.0 / 15, 1e-6);
	cr_expect_float_eq(json_object_get_double(at(o, "jobs.0.findings.0.chain.share")),
			   6.0 * 13 / (7 * 15), 1e-6);
	cr_expect_eq(num(o, "jobs.0.findings.0.chain.hops.0.tid"), 1501);
	cr_expect_eq(num(o, "jobs.0.findings.0.chain.hops.0.pid"), 1001);
	cr_expect_eq(json_object_array_length(at(o, "jobs.0.findings.0.chain.hops")), 1);
	cr_expect_eq(num(o, "jobs.0.findings.0.chain.waiting.tid"), 1001);
	cr_expect_str_eq(str(o, "jobs.0.findings.0.chain.work.frame"), "decode_batch");
	cr_expect(frames_have(o, "jobs.0.findings.0.stack", "decode_batch"));
	cr_expect_not(frames_have(o, "jobs.0.findings.0.stack", "xs_load_data"));
	cr_expect(strstr(str(o, "jobs.0.findings.0.chain.why"),
			 "waited in pthread_cond_wait (called from wait_batch), woken by pid 1001 "
			 "(thread 1501) through 1 thread, whose time went to decode_batch 100%"),
		  "%s", str(o, "jobs.0.findings.0.chain.why"));
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

/* Issue 53 H5: a world size a fleet host or a profiled process makes up costs nothing. 9e18 is
 * not a world size (past PROC_JOB_MAX_WORLD: not taken); the largest one taken, with 4 ranks
 * present, is answered from the gaps, at once, its count exact. */
Test(job_report, a_made_up_world_size_is_answered_at_once, .timeout = 10)
{
	struct job_sim *s = sim(4, 5);
	struct timespec t0, t1;
	char want[160];
	json_object *o;

	for (int k = 0; k < 4; k++)
		snprintf(s->labels[k], sizeof(s->labels[k]),
			 "job.id=run1\x1fjob.rank=%d\x1fjob.world_size=9000000000000000000", k);
	o = report_json(s);
	cr_expect(!notes_say(o, "jobs.0.notes", "ranks missing"), "9e18 is no world size");
	cr_expect_eq(json_object_array_length(at(o, "jobs")), 1);
	json_object_put(o);

	/* Ranks 0, 2, 5, 9 of the largest world taken: gaps 1; 3-4; 6-8; 10 on. */
	for (int k = 0; k < 4; k++)
		snprintf(s->labels[k], sizeof(s->labels[k]),
			 "job.id=run1\x1fjob.rank=%d\x1fjob.world_size=%d", (int[]){0, 2, 5, 9}[k],
			 PROC_JOB_MAX_WORLD - 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	o = report_json(s);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	snprintf(want, sizeof(want),
		 "ranks missing: %d of the world of %d (1, 3, 4, 6, 7, 8, 10, 11, 12, 13, 14, "
		 "15, 16, 17, 18, 19, ...)",
		 PROC_JOB_MAX_WORLD - 1 - 4, PROC_JOB_MAX_WORLD - 1);
	cr_expect(notes_say(o, "jobs.0.notes", want), "want '%s'", want);
	cr_expect_lt((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, 1.0,
		     "a report of 4 ranks of a 16 M world took over a second");
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
