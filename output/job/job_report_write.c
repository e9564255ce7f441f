// SPDX-License-Identifier: Apache-2.0
/* The job report written: JSON (output/job/JOB_REPORT.md) and text (80 columns). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/gpu_report/gpu_report.h"
#include "output/job/job_report_internal.h"
#include "output/model/json_string.h"

/* Collectives listed one by one in the JSON at most (all count in the figures). */
#define MAX_LISTED     5000
#define MAX_TEXT_STEPS 20

static void json_str_or_null(FILE *f, const char *s)
{
	if (s && *s)
		json__put_string(f, s);
	else
		fputs("null", f);
}

static void json_frames(FILE *f, const char *const *fr, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		json__put_string(f, fr[i]);
	}
	fputc(']', f);
}

static void json_notes(FILE *f, const char (*notes)[JR_NOTE_LEN], size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		json__put_string(f, notes[i]);
	}
	fputc(']', f);
}

static void json_rank_or_null(FILE *f, const struct jr_job *job, size_t k)
{
	if (k == JR_NOT_THERE)
		fputs("null", f);
	else
		fprintf(f, "%" PRId64, job->ranks[k]->rank);
}

static void json_meet(const struct job_report *r, const struct jr_job *job, const struct jr_meet *m,
		      FILE *f)
{
	const struct jr_coll *any = NULL;

	for (size_t k = 0; k < job->nr_ranks && !any; k++)
		any = jr_coll_at(job, m, k);
	fputs("{\"op\":", f);
	json__put_string(f, m->op);
	fputs(",\"redop\":", f);
	json_str_or_null(f, any->kern.redop);
	fputs(",\"dtype\":", f);
	json_str_or_null(f, any->kern.dtype);
	fputs(",\"algorithm\":", f);
	json_str_or_null(f, any->kern.algo);
	fputs(",\"protocol\":", f);
	json_str_or_null(f, any->kern.proto);
	fputs(",\"kernel\":", f);
	json_str_or_null(f, r->pd->gpu[any->gpu].name);
	fprintf(f, ",\"stream\":%u,\"index\":%u,\"step\":", m->stream_ord, m->index);
	if (m->step < 0)
		fputs("null", f);
	else
		fprintf(f, "%" PRId64, m->step);
	fprintf(f, ",\"ranks\":%zu,\"arrivals\":[", m->nr_in);
	for (size_t k = 0, n = 0; k < job->nr_ranks; k++) {
		const struct jr_coll *c = jr_coll_at(job, m, k);

		if (!c)
			continue;
		fprintf(f,
			"%s{\"rank\":%" PRId64 ",\"arrive_ns\":%" PRIu64 ",\"start_ns\":%" PRIu64
			",\"end_ns\":%" PRIu64 ",\"after_median_ns\":%" PRId64
			",\"since_previous_ns\":%" PRIu64 ",\"busy_ns\":%" PRIu64
			",\"idle_by_cause\":{",
			n++ ? "," : "", job->ranks[k]->rank, c->arrive, c->start, c->end,
			(int64_t)(c->arrive - m->median), c->arrive - c->seg_start, c->busy);
		for (int j = JOB_CAUSE_HOST; j < JOB_CAUSE_NR; j++)
			if (j != JOB_CAUSE_LINK)
				fprintf(f, "%s\"%s_ns\":%" PRIu64, j > JOB_CAUSE_HOST ? "," : "",
					job_report__cause_name((enum job_cause)j), c->idle_by[j]);
		fputs("}}", f);
	}
	fprintf(f,
		"],\"first_ns\":%" PRIu64 ",\"median_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64
		",\"last_rank\":",
		m->first, m->median, m->last);
	json_rank_or_null(f, job, m->last_rank);
	fprintf(f, ",\"median_rank\":");
	json_rank_or_null(f, job, m->median_rank);
	fprintf(f,
		",\"lateness_ns\":%" PRIu64 ",\"late\":%s,\"cause\":%s%s%s"
		",\"after_all_arrived_ns\":%" PRIu64 ",\"link_slow\":%s}",
		m->lateness, m->late ? "true" : "false", m->late ? "\"" : "",
		m->late ? job_report__cause_name(m->cause) : "null", m->late ? "\"" : "", m->own_ns,
		m->link_slow ? "true" : "false");
}

static double share_of(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0;
}

/* The chain a straggler's host gaps were followed through (--wakers). */
static void json_chain(const struct job_report *r, const struct jr_chain *c, FILE *f)
{
	const struct profile_data *pd = r->pd;
	const char *const *fr = NULL;
	size_t n = 0;

	fprintf(f,
		",\"chain\":{\"share\":%.6g,\"ns\":%" PRIu64 ",\"waiting\":{\"pid\":%u,\"tid\":%u"
		",\"stack\":",
		share_of(c->ns, c->gap_ns), c->ns, c->wait_pid & JOB_REPORT_PID_MASK,
		c->wait_tid & JOB_REPORT_PID_MASK);
	if (c->wait_stack == CORR_NO_STACK || !pd->stack ||
	    pd->stack(pd->ctx, c->wait_pid, c->wait_stack, &fr, &n))
		n = 0;
	json_frames(f, fr, n);
	fputs("},\"hops\":[", f);
	for (uint32_t i = 0; i < c->nr_hops; i++) {
		const char *p = pd->name ? pd->name(pd->ctx, c->hop_pid[i], 0) : NULL;

		fprintf(f, "%s{\"pid\":%u,\"tid\":%u,\"process\":", i ? "," : "",
			c->hop_pid[i] & JOB_REPORT_PID_MASK, c->hop_tid[i] & JOB_REPORT_PID_MASK);
		json_str_or_null(f, p);
		fputc('}', f);
	}
	fputs("],\"work\":", f);
	if (c->work_frame) {
		fputs("{\"frame\":", f);
		json__put_string(f, c->work_frame);
		fprintf(f, ",\"share\":%.6g}", c->work_share);
	} else {
		fputs("null", f);
	}
	fputs(",\"why\":", f);
	json__put_string(f, c->why);
	fputc('}', f);
}

static void json_finding(const struct job_report *r, const struct jr_finding *x, FILE *f)
{
	fputs("{\"kind\":", f);
	json__put_string(f, x->kind);
	fputs(",\"severity\":", f);
	json__put_string(f, x->severity);
	fputs(",\"rank\":", f);
	if (x->rank < 0)
		fputs("null,\"pid\":null", f);
	else
		fprintf(f, "%" PRId64 ",\"pid\":%u", x->rank, x->pid & JOB_REPORT_PID_MASK);
	fprintf(f, ",\"cause\":\"%s\",\"summary\":", job_report__cause_name(x->cause));
	json__put_string(f, x->summary);
	fprintf(f,
		",\"figures\":{\"late_collectives\":%" PRIu64 ",\"collectives\":%" PRIu64
		",\"lateness_median_ns\":%" PRIu64 ",\"lateness_max_ns\":%" PRIu64
		",\"lateness_total_ns\":%" PRIu64 ",\"since_previous_median_ns\":%" PRIu64,
		x->late, x->meets, x->lateness_median, x->lateness_max, x->lateness_total,
		x->segment_median);
	for (int j = 0; j < JOB_CAUSE_NR; j++)
		if (j != JOB_CAUSE_LINK)
			fprintf(f, ",\"more_%s_ns\":%" PRId64,
				job_report__cause_name((enum job_cause)j), x->delta[j]);
	if (x->chain)
		fprintf(f, ",\"chained_share\":%.6g",
			share_of(x->chain->chained_ns, x->chain->gap_ns));
	fputs("},\"kernels\":[", f);
	for (size_t i = 0; i < x->nr_kernels; i++) {
		fputs(i ? ",{\"name\":" : "{\"name\":", f);
		json__put_string(f, x->kernels[i].name);
		fprintf(f, ",\"more_ns\":%" PRId64 "}", x->kernels[i].delta_ns);
	}
	fputs("],\"stack\":", f);
	json_frames(f, x->frames, x->nr_frames);
	if (x->chain && x->chain->nr_hops)
		json_chain(r, x->chain, f);
	fputs(",\"advice\":", f);
	json__put_string(f, x->advice);
	fputc('}', f);
}

static void json_job(const struct job_report *r, const struct jr_job *job, FILE *f)
{
	fputs("{\"job_id\":", f);
	json_str_or_null(f, job->id);
	fputs(",\"world_size\":", f);
	if (job->world < 0)
		fputs("null", f);
	else
		fprintf(f, "%" PRId64, job->world);
	fputs(",\"ranks\":[", f);
	for (size_t k = 0; k < job->nr_ranks; k++) {
		uint64_t late = 0, total = 0;

		for (size_t i = 0; i < job->nr_meets; i++)
			if (job->meets[i].late && job->meets[i].last_rank == k)
				late++, total += job->meets[i].lateness;
		fprintf(f, "%s{\"rank\":%" PRId64 ",\"pid\":%u,\"host\":", k ? "," : "",
			job->ranks[k]->rank, job->ranks[k]->pid & JOB_REPORT_PID_MASK);
		json_str_or_null(f, job->ranks[k]->host);
		fprintf(f,
			",\"collectives\":%zu,\"late\":%" PRIu64 ",\"lateness_total_ns\":%" PRIu64
			"}",
			job->ranks[k]->nr_colls, late, total);
	}
	fprintf(f, "],\"steps_from\":\"%s\",\"pattern_period\":",
		job->steps_from_ranges ? "ranges" : "pattern");
	if (job->steps_from_ranges || !job->nr_meets)
		fputs("null", f);
	else
		fprintf(f, "%zu", job->period);
	fprintf(f, ",\"collectives_total\":%zu,\"collectives\":[", job->nr_meets);
	for (size_t i = 0; i < job->nr_meets && i < MAX_LISTED; i++) {
		if (i)
			fputc(',', f);
		json_meet(r, job, &job->meets[i], f);
	}
	fputs("],\"steps\":[", f);
	for (size_t s = 0; s < job->nr_steps; s++) {
		const struct jr_step *st = &job->steps[s];

		fprintf(f,
			"%s{\"step\":%" PRId64 ",\"collectives\":%zu,\"start_ns\":%" PRIu64
			",\"end_ns\":%" PRIu64 ",\"straggler\":",
			s ? "," : "", st->index, st->nr_meets, st->start, st->end);
		json_rank_or_null(f, job, st->straggler);
		fprintf(f, ",\"lateness_ns\":%" PRIu64 ",\"cause\":", st->lateness);
		json_str_or_null(f, st->straggler == JR_NOT_THERE
					    ? NULL
					    : job_report__cause_name(st->cause));
		fputc('}', f);
	}
	fputs("],\"findings\":[", f);
	for (size_t i = 0; i < job->nr_findings; i++) {
		if (i)
			fputc(',', f);
		json_finding(r, &job->findings[i], f);
	}
	fputs("],\"notes\":", f);
	json_notes(f, job->notes, job->nr_notes);
	fputc('}', f);
}

int job_report__write_json(const struct job_report *r, FILE *f)
{
	fprintf(f, "{\"schema\":\"%s\",\"version\":%d,\"step_name\":", JOB_REPORT_SCHEMA,
		JOB_REPORT_VERSION);
	json__put_string(f, r->step_name);
	fprintf(f,
		",\"thresholds\":{\"late_ns\":%llu,\"late_share\":%.2f,\"straggler_share\":%.2f,"
		"\"link_factor\":%.1f,\"link_ns\":%llu,\"launch_gap_ns\":%llu},"
		"\"unranked_processes\":%zu,\"notes\":",
		JOB_REPORT_LATE_NS, JOB_REPORT_LATE_SHARE, JOB_REPORT_STRAGGLER_SHARE,
		JOB_REPORT_LINK_FACTOR, JOB_REPORT_LINK_NS, GPU_REPORT_LAUNCH_GAP_NS, r->unranked);
	json_notes(f, r->notes, r->nr_notes);
	if (r->nr_clocks) {
		fprintf(f, ",\"clock_epoch_realtime_ns\":%" PRId64 ",\"clocks\":[", r->epoch);
		for (size_t i = 0; i < r->nr_clocks; i++) {
			const struct job_report_clock *c = &r->clocks[i];

			fputs(i ? ",{\"host\":" : "{\"host\":", f);
			json__put_string(f, c->host);
			fprintf(f, ",\"offset_ns\":%" PRId64 ",\"error_ns\":", c->offset_ns);
			if (c->error_ns < 0)
				fputs("null", f);
			else
				fprintf(f, "%" PRId64, c->error_ns);
			fputs(",\"method\":", f);
			json__put_string(f, c->method);
			fprintf(f, ",\"collectives\":%zu}", c->collectives);
		}
		fputc(']', f);
	}
	fputs(",\"jobs\":[", f);
	for (size_t j = 0; j < r->nr_jobs; j++) {
		if (j)
			fputc(',', f);
		json_job(r, &r->jobs[j], f);
	}
	fputs("]}\n", f);
	return ferror(f) ? -EIO : 0;
}

/* s wrapped at 80 columns, each line indented by ind. */
static void wrap(FILE *f, int ind, const char *s)
{
	int width = 80 - ind;

	while (*s) {
		int n = (int)strlen(s);

		if (n > width) {
			n = width;
			while (n > 0 && s[n] != ' ')
				n--;
			if (!n)
				n = width;
		}
		fprintf(f, "%*s%.*s\n", ind, "", n, s);
		s += n;
		while (*s == ' ')
			s++;
	}
}

static void text_finding(const struct jr_finding *x, FILE *f)
{
	char line[512];

	snprintf(line, sizeof(line), "[%s] %s: %s", x->severity, x->kind, x->summary);
	wrap(f, 2, line);
	if (x->rank >= 0) {
		snprintf(line, sizeof(line),
			 "before each late collective, against the median rank: GPU busy %+.2f ms, "
			 "waiting for the host %+.2f ms, launches %+.2f ms, blocked %+.2f ms",
			 (double)x->delta[JOB_CAUSE_COMPUTE] / 1e6,
			 (double)x->delta[JOB_CAUSE_HOST] / 1e6,
			 (double)x->delta[JOB_CAUSE_LAUNCH] / 1e6,
			 (double)x->delta[JOB_CAUSE_BLOCKED] / 1e6);
		wrap(f, 4, line);
	}
	for (size_t i = 0; i < x->nr_kernels; i++)
		fprintf(f, "    kernel %+.2f ms: %.60s\n", (double)x->kernels[i].delta_ns / 1e6,
			x->kernels[i].name);
	if (x->chain && x->chain->nr_hops) {
		snprintf(line, sizeof(line),
			 "its launching thread spent %.0f%% of its time before the late launches "
			 "waiting on other threads: %s",
			 100 * share_of(x->chain->chained_ns, x->chain->gap_ns), x->chain->why);
		wrap(f, 4, line);
	}
	if (x->nr_frames) {
		fprintf(f, "    %s (innermost first):\n",
			x->cause == JOB_CAUSE_COMPUTE	   ? "launched from"
			: x->chain && x->chain->work_frame ? "the chain's last thread was in"
							   : "the host was in");
		for (size_t i = x->nr_frames; i-- > 0;)
			fprintf(f, "      %.72s\n", x->frames[i]);
	}
	wrap(f, 4, x->advice);
}

static void text_job(const struct job_report *r, const struct jr_job *job, FILE *f)
{
	size_t shown = 0;

	fprintf(f, "job %.40s", job->id[0] ? job->id : "(no job id)");
	if (job->world >= 0)
		fprintf(f, ", world size %" PRId64, job->world);
	fprintf(f, ": %zu ranks, %zu collectives, %zu steps (%s)\n", job->nr_ranks, job->nr_meets,
		job->nr_steps, job->steps_from_ranges ? "ranges" : "pattern of collectives");
	fprintf(f, "  %6s %8s %12s %6s %14s %s\n", "rank", "pid", "collectives", "last",
		"late total ms", r->nr_clocks ? " host" : "");
	for (size_t k = 0; k < job->nr_ranks; k++) {
		uint64_t late = 0, total = 0;

		for (size_t i = 0; i < job->nr_meets; i++)
			if (job->meets[i].late && job->meets[i].last_rank == k)
				late++, total += job->meets[i].lateness;
		fprintf(f, "  %6" PRId64 " %8u %12zu %6" PRIu64 " %14.2f  %.24s\n",
			job->ranks[k]->rank, job->ranks[k]->pid & JOB_REPORT_PID_MASK,
			job->ranks[k]->nr_colls, late, (double)total / 1e6, job->ranks[k]->host);
	}
	if (job->nr_findings)
		fputs("findings:\n", f);
	else if (job->nr_meets)
		fputs("no straggler: no rank arrived last at most of its collectives\n", f);
	for (size_t i = 0; i < job->nr_findings; i++)
		text_finding(&job->findings[i], f);
	for (size_t s = 0; s < job->nr_steps && shown < MAX_TEXT_STEPS; s++) {
		const struct jr_step *st = &job->steps[s];

		if (st->straggler == JR_NOT_THERE)
			continue;
		if (!shown++)
			fputs("steps held back:\n", f);
		fprintf(f, "  step %-6" PRId64 " rank %-6" PRId64 " %8.2f ms late  %s\n", st->index,
			job->ranks[st->straggler]->rank, (double)st->lateness / 1e6,
			job_report__cause_name(st->cause));
	}
	for (size_t i = 0; i < job->nr_notes; i++)
		wrap(f, 2, job->notes[i]);
}

int job_report__write_text(const struct job_report *r, FILE *f)
{
	fprintf(f, "xsprof job report: %zu job%s, %zu ranks\n", r->nr_jobs,
		r->nr_jobs == 1 ? "" : "s", r->nr_ranks);
	for (size_t i = 0; i < r->nr_notes; i++)
		wrap(f, 0, r->notes[i]);
	for (size_t i = 0; i < r->nr_clocks; i++) {
		const struct job_report_clock *c = &r->clocks[i];

		if (!i)
			fputs("clocks (offset to the reference host's):\n", f);
		fprintf(f, "  %-24.24s %+12.3f ms  ", c->host, (double)c->offset_ns / 1e6);
		if (c->error_ns >= 0)
			fprintf(f, "+/- %.3f ms", (double)c->error_ns / 1e6);
		else
			fputs("error unknown", f);
		fprintf(f, "  %s", c->method);
		if (c->collectives)
			fprintf(f, " (%zu)", c->collectives);
		fputc('\n', f);
	}
	for (size_t j = 0; j < r->nr_jobs; j++)
		text_job(r, &r->jobs[j], f);
	return ferror(f) ? -EIO : 0;
}
