// SPDX-License-Identifier: Apache-2.0
/*
 * A job across two hosts, from hand-made jobs (tests/lib/job_sim.h): the job parts each host
 * writes (output/job/job_parts.h), read back, put on one clock and merged (output/job/job_merge.h).
 * Host B's clock reads 3.7 ms later than host A's; its round trip says so only to 300 us.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/chrome_trace.h"
#include "output/diff/diff.h"
#include "output/diff_svg.h"
#include "output/job/job_merge.h"
#include "output/job/job_parts.h"
#include "output/job/job_report.h"
#include "output/model/profile.h"
#include "output/output.h"

#include "tests/lib/job_sim.h"

#define SHIFT_NS 3700000ll

struct host_view {
	struct job_sim *s;
	int lo, hi; /* the ranks this host runs */
};

static const char *host_labels(void *ctx, uint32_t pid)
{
	struct host_view *v = ctx;
	int k = (int)pid - 1000;

	return k >= v->lo && k <= v->hi ? v->s->labels[k] : "";
}

/* The parts host (ranks lo..hi) writes, its clock shift_ns late. */
static char *parts_of(struct job_sim *s, int lo, int hi, long long shift_ns, size_t *len)
{
	struct host_view v = {s, lo, hi};
	struct profile_data pd = s->pd;
	char *buf = NULL, env[32];
	FILE *f = open_memstream(&buf, len);

	pd.process_labels = host_labels;
	pd.process_labels_ctx = &v;
	snprintf(env, sizeof(env), "%lld", shift_ns);
	setenv("XSPROF_TEST_CLOCK_SHIFT_NS", env, 1);
	cr_assert_eq(job_parts__write(&pd, f, NULL), 0);
	unsetenv("XSPROF_TEST_CLOCK_SHIFT_NS");
	fclose(f);
	return buf;
}

static json_object *report_of(struct job_merge *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_object *o;

	cr_assert_eq(job_report__write_json(job_merge__report(m), f), 0);
	cr_assert_eq(job_report__write_text(job_merge__report(m), stderr), 0);
	fclose(f);
	o = json_tokener_parse(buf);
	cr_assert(o, "not JSON: %s", buf);
	free(buf);
	return o;
}

static json_object *get(json_object *o, const char *k)
{
	json_object *v = NULL;

	cr_assert(json_object_object_get_ex(o, k, &v), "no %s in %s", k,
		  json_object_to_json_string(o));
	return v;
}

/* Two hosts of the job (A: ranks 0-1, B: 2-3, B's clock late), merged. */
static struct job_merge *two_hosts(struct job_sim *s, const char *job, bool probes)
{
	struct job_merge *m = job_merge__new(job);
	struct job_clock_probe pa = {.offset_ns = 0, .error_ns = 50000},
			       pb = {.offset_ns = -SHIFT_NS + 300000, .error_ns = 400000};
	size_t la, lb;
	char *a, *b, why[160];

	play(s);
	a = parts_of(s, 0, 1, 0, &la);
	b = parts_of(s, 2, 3, SHIFT_NS, &lb);
	cr_assert(m);
	cr_assert_eq(job_merge__add(m, "hostA", a, la, probes ? &pa : NULL, why, sizeof(why)), 0,
		     "%s", why);
	cr_assert_eq(job_merge__add(m, "hostB", b, lb, probes ? &pb : NULL, why, sizeof(why)), 0,
		     "%s", why);
	free(a);
	free(b);
	cr_assert_eq(job_merge__build(m, NULL), 0);
	return m;
}

Test(job_merge, a_compute_straggler_across_hosts_and_the_clock_recovered)
{
	struct job_sim *s = sim(4, 20);
	struct job_merge *m;
	json_object *r, *clocks, *job, *f;

	s->slow[2] = 1.3;
	m = two_hosts(s, NULL, true);
	cr_assert_eq(job_merge__hosts(m), 2);
	cr_assert_eq(job_merge__processes(m), 4);
	r = report_of(m);
	clocks = get(r, "clocks");
	cr_assert_eq(json_object_array_length(clocks), 2);
	cr_assert_str_eq(
		json_object_get_string(get(json_object_array_get_idx(clocks, 0), "method")),
		"reference");
	{
		json_object *b = json_object_array_get_idx(clocks, 1);
		int64_t off = json_object_get_int64(get(b, "offset_ns"));
		int64_t err = json_object_get_int64(get(b, "error_ns"));

		cr_assert_str_eq(json_object_get_string(get(b, "method")), "collectives");
		/* B reads 3.7 ms late: its offset to A is -3.7 ms, within the stated error. */
		cr_assert(llabs(off + SHIFT_NS) <= err, "offset %" PRId64 " error %" PRId64, off,
			  err);
		cr_assert(err <= 100000, "error %" PRId64, err);
		cr_assert_eq(json_object_get_int64(get(b, "collectives")), 20);
	}
	job = json_object_array_get_idx(get(r, "jobs"), 0);
	cr_assert_eq(json_object_array_length(get(job, "ranks")), 4);
	cr_assert_str_eq(json_object_get_string(
				 get(json_object_array_get_idx(get(job, "ranks"), 3), "host")),
			 "hostB");
	/* Pids are each host's own, not the merge's. */
	cr_assert_eq(
		json_object_get_int(get(json_object_array_get_idx(get(job, "ranks"), 3), "pid")),
		1003);
	cr_assert_eq(json_object_array_length(get(job, "findings")), 1);
	f = json_object_array_get_idx(get(job, "findings"), 0);
	cr_assert_eq(json_object_get_int(get(f, "rank")), 2);
	cr_assert_str_eq(json_object_get_string(get(f, "cause")), "compute");
	/* 4 kernels 30% longer: 6 ms late at each collective, once both clocks agree. */
	cr_assert(llabs(json_object_get_int64(get(get(f, "figures"), "lateness_median_ns")) -
			6000000) < 300000);
	json_object_put(r);
	job_merge__free(m);
	free(s);
}

Test(job_merge, without_collectives_aligning_the_clock_is_off_by_the_round_trip)
{
	struct job_sim *s = sim(4, 20);
	struct job_merge *m;
	json_object *r, *b;

	s->no_nccl = true;
	m = two_hosts(s, NULL, true);
	r = report_of(m);
	b = json_object_array_get_idx(get(r, "clocks"), 1);
	cr_assert_str_eq(json_object_get_string(get(b, "method")), "round trip");
	cr_assert_eq(json_object_get_int64(get(b, "offset_ns")), -SHIFT_NS + 300000);
	cr_assert_eq(json_object_get_int64(get(b, "error_ns")), 450000);
	json_object_put(r);
	job_merge__free(m);
	free(s);
}

Test(job_merge, a_host_straggler_its_trace_and_its_flamegraph_against_the_median)
{
	struct job_sim *s = sim(4, 20);
	struct job_merge *m;
	char *buf = NULL, *svg = NULL, *tab = NULL;
	size_t len = 0, slen = 0, tlen = 0;
	FILE *f, *fs, *ft;
	json_object *t, *ev;
	size_t starts = 0, ends = 0, titles = 0;
	struct job_merge_straggler st;

	/* Every rank loads data for 2 ms (samples of the median rank to compare), rank 1 22 ms. */
	for (int k = 0; k < 4; k++)
		s->host_delay[k] = 2 * MS;
	s->host_delay[1] = 22 * MS;
	m = two_hosts(s, NULL, false);
	f = open_memstream(&buf, &len);
	cr_assert_eq(chrome_trace__write_profile(job_merge__profile(m), f, NULL), 0);
	fclose(f);
	t = json_tokener_parse(buf);
	cr_assert(t, "the trace is not JSON");
	ev = get(t, "traceEvents");
	for (size_t i = 0; i < json_object_array_length(ev); i++) {
		json_object *e = json_object_array_get_idx(ev, i), *v;
		const char *ph = json_object_get_string(get(e, "ph"));

		if (json_object_object_get_ex(e, "cat", &v) &&
		    !strcmp(json_object_get_string(v), "collective"))
			starts += !strcmp(ph, "s"), ends += !strcmp(ph, "f");
		if (!strcmp(ph, "M") &&
		    !strcmp(json_object_get_string(get(e, "name")), "process_name") &&
		    strstr(json_object_to_json_string(e), "(rank 3, job run1 on hostB)"))
			titles++;
	}
	/* Each of the 20 all-reduces linked through its 4 ranks. */
	cr_assert_eq(starts, 20);
	cr_assert_eq(ends, 20);
	cr_assert_eq(titles, 1);
	json_object_put(t);
	free(buf);
	/* The structural check every trace passes (tests/lib/check_trace.py), pids per host. */
	{
		char path[64], cmd[256];
		FILE *tf;

		snprintf(path, sizeof(path), "/tmp/xsprof-job-trace-%d.json", (int)getpid());
		tf = fopen(path, "we");
		cr_assert(tf);
		cr_assert_eq(chrome_trace__write_profile(job_merge__profile(m), tf, NULL), 0);
		fclose(tf);
		snprintf(cmd, sizeof(cmd), "python3 %s/lib/check_trace.py %s --merged >&2",
			 XSPROF_TEST_SOURCE_DIR, path);
		cr_assert_eq(system(cmd), 0, "the merged trace failed the structural check");
		unlink(path);
	}
	/* The merge gives the straggler's comparison; the writers draw it. */
	cr_assert_eq(job_merge__straggler(m, &st), 0);
	cr_assert_eq(st.rank, 1);
	fs = open_memstream(&svg, &slen);
	ft = open_memstream(&tab, &tlen);
	cr_assert_eq(diff__write_svg(st.diff, fs, NULL), 0);
	cr_assert_eq(diff__write_table(st.diff, ft, 8), 0);
	fclose(fs);
	fclose(ft);
	job_merge_straggler__release(&st);
	cr_assert(strstr(svg, "<svg"));
	cr_assert(strstr(tab, "xs_load_data"), "%s", tab);
	free(svg);
	free(tab);
	job_merge__free(m);
	free(s);
}

Test(job_merge, bad_parts_are_refused_and_keep_what_was_merged)
{
	struct job_sim *s = sim(4, 5);
	struct job_merge *m = job_merge__new("run1");
	size_t la;
	char *a, why[160];

	play(s);
	a = parts_of(s, 0, 1, 0, &la);
	cr_assert_eq(job_merge__add(m, "hostA", a, la, NULL, why, sizeof(why)), 0);
	cr_assert_eq(job_merge__add(m, "bad", "{\"x\":", 5, NULL, why, sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "not JSON"), "%s", why);
	cr_assert_eq(job_merge__add(m, "gpu", "{\"schema\":\"xsprof.gpu_report\"}", 30, NULL, why,
				    sizeof(why)),
		     -EINVAL);
	cr_assert(strstr(why, "not job parts"), "%s", why);
	cr_assert_eq(job_merge__hosts(m), 1);
	cr_assert_eq(job_merge__build(m, NULL), 0);
	{
		json_object *r = report_of(m), *job = json_object_array_get_idx(get(r, "jobs"), 0);
		char notes[2048];

		cr_assert_eq(json_object_array_length(get(job, "ranks")), 2);
		snprintf(notes, sizeof(notes), "%s", json_object_to_json_string(get(job, "notes")));
		cr_assert(strstr(notes, "missing"), "%s", notes);
		json_object_put(r);
	}
	job_merge__free(m);
	free(a);
	free(s);
}

Test(job_merge, another_job_is_left_out)
{
	struct job_sim *s = sim(4, 5);
	struct job_merge *m = job_merge__new("run2");
	size_t la;
	char *a, why[160];

	play(s);
	a = parts_of(s, 0, 3, 0, &la);
	cr_assert_eq(job_merge__add(m, "hostA", a, la, NULL, why, sizeof(why)), 0);
	cr_assert_eq(job_merge__processes(m), 0);
	cr_assert_eq(job_merge__build(m, NULL), 0);
	free(a);
	job_merge__free(m);
	free(s);
}

/* The parts read without a document tree (output/job/job_parts_read.h, issue 53 H10): fields in
 * any order give the same merge; a float among the integers of a row, or nesting past 64
 * levels, refuse that host alone, at once. */
Test(job_merge, parts_read_in_any_order_and_bad_rows_refused)
{
	struct job_sim *s = sim(4, 5);
	struct job_merge *m = job_merge__new("run1"), *m2 = job_merge__new("run1");
	struct json_object *doc, *rev;
	const char *text, *bad;
	size_t la, deep = 200000;
	char *a, *b, *nest, why[160];
	struct lh_entry *e;

	play(s);
	a = parts_of(s, 0, 1, 0, &la);
	cr_assert_eq(job_merge__add(m, "hostA", a, la, NULL, why, sizeof(why)), 0, "%s", why);
	/* The same fields, last to first (strings before the rows that name them). */
	doc = json_tokener_parse(a);
	cr_assert_not_null(doc);
	rev = json_object_new_object();
	for (e = json_object_get_object(doc)->tail; e; e = e->prev)
		json_object_object_add(rev, (const char *)e->k,
				       json_object_get((struct json_object *)e->v));
	text = json_object_to_json_string_ext(rev, JSON_C_TO_STRING_PLAIN);
	cr_assert_eq(strncmp(text, "{\"strings\"", 10), 0, "%.40s", text);
	cr_assert_eq(job_merge__add(m2, "hostA", text, strlen(text), NULL, why, sizeof(why)), 0,
		     "%s", why);
	cr_assert_eq(job_merge__processes(m2), job_merge__processes(m));
	cr_assert_eq(job_merge__build(m, NULL), 0);
	cr_assert_eq(job_merge__build(m2, NULL), 0);
	cr_assert_eq(job_merge__profile(m2)->nr_gpu, job_merge__profile(m)->nr_gpu);
	cr_assert_eq(job_merge__profile(m2)->nr_joins, job_merge__profile(m)->nr_joins);
	cr_assert_eq(job_merge__profile(m2)->nr_samples, job_merge__profile(m)->nr_samples);
	cr_assert_gt(job_merge__profile(m)->nr_gpu, 0);
	json_object_put(rev);
	json_object_put(doc);

	/* A float where a row's integer goes. */
	b = strdup(a);
	bad = strstr(b, "\"gpu\":[[");
	cr_assert_not_null(bad);
	((char *)bad)[8] = '1', ((char *)bad)[9] = '.';
	cr_assert_eq(job_merge__add(m2, "hostB", b, la, NULL, why, sizeof(why)), -EINVAL);
	cr_assert(strstr(why, "bad records"), "%s", why);
	/* Nested 200,000 deep. */
	nest = malloc(deep + 16);
	memcpy(nest, "{\"gpu\":", 7);
	memset(nest + 7, '[', deep);
	nest[7 + deep] = '\0';
	cr_assert_eq(job_merge__add(m2, "hostC", nest, strlen(nest), NULL, why, sizeof(why)),
		     -EINVAL);
	cr_assert(strstr(why, "nested deeper"), "%s", why);
	cr_assert_eq(job_merge__hosts(m2), 1, "the refused hosts left the merge as it was");
	free(nest);
	free(b);
	free(a);
	job_merge__free(m);
	job_merge__free(m2);
	free(s);
}
