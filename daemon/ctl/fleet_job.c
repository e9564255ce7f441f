// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl fleet --report straggler: every host's ranks of a training job (its job parts,
 * output/job/job_parts.h) put on one clock and compared (output/job/job_merge.h). Each host's clock is
 * first taken by a round trip (GET /v1/clock, the fastest of a few), then the collectives
 * refine it. The report goes to stdout, and with -o FILE.job.json to that file, with the
 * merged trace (FILE.trace.json) and the straggler's flamegraph against the median rank's
 * (FILE.diff.svg) beside it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "daemon/base/atomic_file.h"
#include "daemon/ctl/fleet_internal.h"
#include "output/chrome_trace.h"
#include "output/diff/diff.h"
#include "output/diff_svg.h"
#include "output/job/job_merge.h"
#include "output/job/job_report.h"
#include "output/output.h"

#define PROBES		 3    /* round trips to each host's clock; the fastest counts */
#define PROBE_TIMEOUT_MS 3000 /* each */
#define JOB_EXT		 ".job.json"

int fleet_job__checks(struct fleet *f)
{
	size_t n = f->out ? strlen(f->out) : 0;

	if (f->out && (n <= strlen(JOB_EXT) || strcmp(f->out + n - strlen(JOB_EXT), JOB_EXT)))
		return fleet_usage_error(
			"--report straggler writes the job report to FILE.job.json "
			"(FILE.trace.json and FILE.diff.svg beside it)",
			f->out);
	if (f->since > 0)
		return fleet_usage_error(
			"--report straggler needs each host's recording of the "
			"job (--duration): the windows (--since) keep no job parts",
			NULL);
	if (f->group_by || f->gpu_mode || f->range_domain)
		return fleet_usage_error("--report straggler takes no --group-by, --gpu-mode or "
					 "--range-domain",
					 NULL);
	return 0;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	return reply_buf__append(ctx, p, size * n, 4096);
}

/* One round trip to h's clock: its CLOCK_MONOTONIC against ours (realtime) mid-way. */
static bool probe_once(const struct fleet *f, struct fleet_host *h, struct curl_slist *hdrs,
		       struct job_clock_probe *ret)
{
	CURL *c = curl_easy_init();
	struct reply_buf b = {0};
	struct json_object *j = NULL, *v;
	char url[1024];
	int64_t t0, t1;
	long status = 0;
	bool ok = false;

	if (!c)
		return false;
	snprintf(url, sizeof(url), "%s%s/v1/clock", fleet__scheme(f, h), h->addr);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	fleet__curl_common(f, c, hdrs, PROBE_TIMEOUT_MS);
	t0 = realtime_ns();
	if (curl_easy_perform(c) == CURLE_OK) {
		t1 = realtime_ns();
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
		if (status == 200 && b.data && (j = json_tokener_parse(b.data)) &&
		    json_object_object_get_ex(j, "monotonic_ns", &v)) {
			ret->offset_ns = t0 + (t1 - t0) / 2 - json_object_get_int64(v);
			ret->error_ns = (uint64_t)(t1 - t0) / 2;
			ok = true;
		}
	}
	json_object_put(j);
	free(b.data);
	curl_easy_cleanup(c);
	return ok;
}

void fleet_job__probe_clocks(struct fleet *f)
{
	struct curl_slist *hdrs = f->auth ? curl_slist_append(NULL, f->auth) : NULL;

	for (size_t i = 0; i < f->nr; i++) {
		struct fleet_host *h = &f->hosts[i];

		for (int k = 0; k < PROBES; k++) {
			struct job_clock_probe p;

			if (!probe_once(f, h, hdrs, &p))
				break;
			if (!h->probed || p.error_ns < h->probe.error_ns)
				h->probe = p;
			h->probed = true;
		}
	}
	curl_slist_free_all(hdrs);
}

static int write_report(FILE *f, void *ctx)
{
	return job_report__write_json(job_merge__report(ctx), f);
}

static int write_trace(FILE *f, void *ctx)
{
	return chrome_trace__write_profile(job_merge__profile(ctx), f, NULL);
}

static int write_diff(FILE *f, void *ctx)
{
	struct output_meta meta = {.title = "xsprof: the straggler rank against the median rank "
					    "(red: a larger share)"};
	struct job_merge_straggler st = {0};
	int err = job_merge__straggler(ctx, &st);

	if (!err)
		err = diff__write_svg(st.diff, f, &meta);
	job_merge_straggler__release(&st);
	return err;
}

/* The straggler's functions against the median rank's, by share: the top rows. */
static int straggler_table(const struct job_merge *m, FILE *f)
{
	struct job_merge_straggler st;
	int err = job_merge__straggler(m, &st);

	if (err)
		return err;
	fprintf(f,
		"rank %" PRId64 " (%zu samples) against the median rank %" PRId64
		" (%zu samples), by share:\n",
		st.rank, st.samples, st.median_rank, st.median_samples);
	err = diff__write_table(st.diff, f, 8);
	job_merge_straggler__release(&st);
	return err;
}

/* FILE.job.json's neighbour FILE<ext>. */
static char *beside(const char *out, const char *ext)
{
	size_t n = strlen(out) - strlen(JOB_EXT);
	char *p = malloc(n + strlen(ext) + 1);

	if (p) {
		memcpy(p, out, n);
		strcpy(p + n, ext);
	}
	return p;
}

/* -o: the report, the trace and, with a straggler, the diff; each said on stderr. */
static int write_files(const struct fleet *f, struct job_merge *m)
{
	char *trace = beside(f->out, ".trace.json"), *diff = beside(f->out, ".diff.svg");
	int err = !trace || !diff ? -ENOMEM : atomic_file__write(f->out, write_report, m);

	if (!err)
		fprintf(stderr, "xsprof fleet: wrote %s (the job report)\n", f->out);
	if (!err && !(err = atomic_file__write(trace, write_trace, m)))
		fprintf(stderr, "xsprof fleet: wrote %s (the job's trace, for Perfetto)\n", trace);
	if (!err) {
		err = atomic_file__write(diff, write_diff, m);
		if (!err)
			fprintf(stderr,
				"xsprof fleet: wrote %s (the straggler against the median rank)\n",
				diff);
		else if (err == -ENOENT)
			err = 0; /* no straggler, or no samples of it: nothing to compare */
	}
	free(trace);
	free(diff);
	return err;
}

int fleet_job__begin(struct fleet *f)
{
	f->merge = job_merge__new(f->job);
	return f->merge ? 0 : -errno;
}

void fleet_job__take(struct fleet *f, struct fleet_host *h)
{
	char why[200];
	int err;

	if (!f->merge || h->merged || f->merge_err)
		return;
	err = job_merge__add(f->merge, fleet__host_name(h), h->reply.data ? h->reply.data : "",
			     h->reply.len, h->probed ? &h->probe : NULL, why, sizeof(why));
	if (err == -ENOMEM)
		f->merge_err = err;
	else if (err)
		fprintf(stderr, "xsprofctl fleet: %s: its job parts are left out: %s\n", h->addr,
			why);
	else
		h->merged = true;
	/* Read: the text is not needed any more. */
	free(h->reply.data);
	h->reply.data = NULL;
}

int fleet_job__report(struct fleet *f, size_t ok)
{
	struct job_merge *m = f->merge;
	size_t parts = 0;
	int err;

	if (!m)
		return -ENOMEM;
	if (f->merge_err)
		return f->merge_err;
	for (size_t i = 0; i < f->nr; i++)
		parts += f->hosts[i].merged;
	fprintf(stderr,
		"xsprof fleet: job parts of %zu of %zu hosts (%zu answered), %zu ranked "
		"processes%s%s\n",
		parts, f->nr, ok, job_merge__processes(m), f->job ? " of job " : "",
		f->job ? f->job : "");
	if (job_merge__rows_dropped(m))
		fprintf(stderr,
			"xsprof fleet: %" PRIu64 " rows of the job parts left out at the budgets "
			"(%u a host, %u records in all)\n",
			job_merge__rows_dropped(m), JOB_MERGE_MAX_HOST_ROWS, JOB_MERGE_MAX_RECORDS);
	err = job_merge__build(m, NULL);
	if (!err)
		err = job_report__write_text(job_merge__report(m), stdout);
	if (!err && straggler_table(m, stdout) == 0)
		fputs("(the flamegraph of that: -o FILE.job.json writes FILE.diff.svg)\n", stdout);
	if (!err && f->out)
		err = write_files(f, m);
	return err;
}
