// SPDX-License-Identifier: Apache-2.0
/*
 * The job report's analysis: each rank's arrival at each collective and what its GPU did
 * before it, the meetings' last ranks, causes against the median rank, steps and findings.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/gpu_report/gpu_report.h"
#include "output/job/job_report_internal.h"

/* A gap [a, b) of the rank's GPU that the work launched by l ended: its time by cause. */
static void explain_gap(const struct job_report *r, const struct corr_cpu_rec *l, uint64_t a,
			uint64_t b, uint64_t *idle_by)
{
	uint64_t host_end;

	if (b <= a)
		return;
	if (!l || l->time_ns <= a) {
		/* Launched before the GPU went idle: launch latency when short, else it waited
		 * for something the report does not see (an event, another stream). */
		idle_by[l && b - a < GPU_REPORT_LAUNCH_GAP_NS ? JOB_CAUSE_LAUNCH
							      : JOB_CAUSE_UNKNOWN] += b - a;
		return;
	}
	host_end = l->time_ns < b ? l->time_ns : b;
	idle_by[JOB_CAUSE_LAUNCH] += b - host_end;
	if (host_end - a < GPU_REPORT_LAUNCH_GAP_NS) {
		idle_by[JOB_CAUSE_LAUNCH] += host_end - a;
	} else {
		/* A thread sampled far less than its time would give was off the CPU. */
		uint64_t period = r->pd->sample_period_ns;
		double expect = period && r->samples ? (double)(host_end - a) / (double)period : 0;
		bool blocked =
			expect >= 4 && (double)jr_samples_in(r, l->tid, a, host_end) < expect / 4;

		idle_by[blocked ? JOB_CAUSE_BLOCKED : JOB_CAUSE_HOST] += host_end - a;
	}
}

struct figures_ctx {
	const struct job_report *r;
	struct jr_coll *c;
};

static void add_figures(void *ctx, size_t gpu, bool is_coll, uint64_t gap_s, uint64_t gap_e,
			uint64_t s, uint64_t e)
{
	struct figures_ctx *fc = ctx;
	const struct corr_cpu_rec *l = jr_launch_of(fc->r, gpu);

	explain_gap(fc->r, l, gap_s, gap_e, fc->c->idle_by);
	if (!is_coll)
		fc->c->busy += e - s;
}

/* Each collective's arrival, segment and what the GPU did in it. */
static void arrivals(const struct job_report *r, struct jr_rank *rk)
{
	uint64_t max_end = 0;
	size_t p = 0, prev_pos = 0;

	for (size_t i = 0; i < rk->nr_colls; i++) {
		struct jr_coll *c = &rk->colls[i];
		struct figures_ctx fc = {r, c};
		uint64_t cand;

		for (; p < c->pos; p++)
			if (r->pd->gpu[rk->work[p]].end_ns > max_end)
				max_end = r->pd->gpu[rk->work[p]].end_ns;
		c->arrive = c->start;
		cand = c->launch > max_end ? c->launch : max_end;
		/* Not joined: its start is all that is known. */
		if (c->launch && cand < c->start)
			c->arrive = cand;
		c->seg_start = i ? rk->colls[i - 1].end : r->pd->gpu[rk->work[0]].start_ns;
		if (c->seg_start > c->arrive)
			c->seg_start = c->arrive;
		jr_walk_segment(r, rk, c, i ? prev_pos + 1 : 0, add_figures, &fc);
		prev_pos = c->pos;
	}
}

static int64_t delta_of(const struct jr_coll *a, const struct jr_coll *b, enum job_cause c)
{
	if (c == JOB_CAUSE_COMPUTE)
		return (int64_t)a->busy - (int64_t)b->busy;
	return (int64_t)a->idle_by[c] - (int64_t)b->idle_by[c];
}

/* A meeting's arrivals: first, median (the lower middle), last; lateness and cause. */
static int judge_meet(struct jr_job *job, struct jr_meet *m, uint64_t *scratch)
{
	const struct jr_coll *late, *ref;
	uint64_t ends[256];
	size_t n = 0, ne = 0;
	int64_t best = 0;

	for (size_t k = 0; k < job->nr_ranks; k++) {
		const struct jr_coll *c = jr_coll_at(job, m, k);

		if (!c)
			continue;
		scratch[n++] = c->arrive;
		if (ne < 256)
			ends[ne++] = c->end;
		if (n == 1 || c->arrive > m->last)
			m->last = c->arrive, m->last_rank = k;
	}
	qsort(scratch, n, sizeof(*scratch), jr_cmp_u64);
	qsort(ends, ne, sizeof(*ends), jr_cmp_u64);
	m->first = scratch[0];
	m->median = scratch[(n - 1) / 2];
	for (size_t k = 0; k < job->nr_ranks; k++) {
		const struct jr_coll *c = jr_coll_at(job, m, k);

		if (c && c->arrive == m->median) {
			m->median_rank = k;
			break;
		}
	}
	m->lateness = m->last - m->median;
	m->own_ns = ends[(ne - 1) / 2] > m->last ? ends[(ne - 1) / 2] - m->last : 0;
	late = jr_coll_at(job, m, m->last_rank);
	ref = jr_coll_at(job, m, m->median_rank);
	m->late = n >= 2 && m->lateness >= JOB_REPORT_LATE_NS &&
		  (double)m->lateness >=
			  JOB_REPORT_LATE_SHARE * (double)(ref->arrive - ref->seg_start);
	m->cause = JOB_CAUSE_UNKNOWN;
	for (enum job_cause c = 0; c < JOB_CAUSE_NR && m->late; c++) {
		int64_t d = c == JOB_CAUSE_LINK ? 0 : delta_of(late, ref, c);

		if (c != JOB_CAUSE_UNKNOWN && d > best)
			best = d, m->cause = c;
	}
	return 0;
}

static int cmp_meet(const void *a, const void *b)
{
	const struct jr_meet *x = a, *y = b;

	return x->median < y->median ? -1 : x->median > y->median;
}

/* Collectives that took JOB_REPORT_LINK_FACTOR times their kind's median after all arrived. */
static int link_times(struct jr_job *job, uint64_t *scratch)
{
	for (size_t i = 0; i < job->nr_meets; i++) {
		struct jr_meet *m = &job->meets[i];
		size_t n = 0;
		uint64_t med;

		if (m->nr_in != job->nr_ranks)
			continue;
		for (size_t j = 0; j < job->nr_meets; j++)
			if (job->meets[j].nr_in == job->nr_ranks &&
			    !strcmp(job->meets[j].op, m->op))
				scratch[n++] = job->meets[j].own_ns;
		qsort(scratch, n, sizeof(*scratch), jr_cmp_u64);
		med = scratch[(n - 1) / 2];
		m->link_slow = n >= 3 &&
			       (double)m->own_ns >= JOB_REPORT_LINK_FACTOR * (double)med &&
			       m->own_ns - med >= JOB_REPORT_LINK_NS;
	}
	return 0;
}

/* The step a rank's collective was in: the step range its launch (else its arrival) fell in. */
static int64_t step_of(const struct jr_rank *rk, const struct jr_coll *c)
{
	uint64_t t = c->launch ? c->launch : c->arrive;
	size_t lo = 0, hi = rk->nr_steps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rk->steps[mid].s <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && t <= rk->steps[lo - 1].e ? (int64_t)(lo - 1) : -1;
}

static bool same_kind(const struct jr_meet *a, const struct jr_meet *b)
{
	return a->stream_ord == b->stream_ord && !strcmp(a->op, b->op);
}

/* Steps: the ranges named so, else the shortest repeating pattern of collectives. */
static int find_steps(const struct job_report *r, struct jr_job *job)
{
	for (size_t k = 0; k < job->nr_ranks; k++)
		job->steps_from_ranges |= job->ranks[k]->nr_steps > 0;
	if (job->steps_from_ranges) {
		for (size_t i = 0; i < job->nr_meets; i++)
			for (size_t k = 0; k < job->nr_ranks && job->meets[i].step < 0; k++) {
				const struct jr_coll *c = jr_coll_at(job, &job->meets[i], k);

				if (c && job->ranks[k]->nr_steps)
					job->meets[i].step = step_of(job->ranks[k], c);
			}
		return 0;
	}
	(void)r;
	for (job->period = 1; job->period < job->nr_meets; job->period++) {
		size_t i = job->period;

		while (i < job->nr_meets && same_kind(&job->meets[i], &job->meets[i - job->period]))
			i++;
		if (i == job->nr_meets)
			break;
	}
	for (size_t i = 0; i < job->nr_meets; i++)
		job->meets[i].step = (int64_t)(i / (job->period ? job->period : 1));
	return 0;
}

/* Per step: the rank whose lateness summed over the step's late collectives is largest. */
static int sum_steps(struct jr_job *job)
{
	int64_t max = -1;
	uint64_t *late;

	for (size_t i = 0; i < job->nr_meets; i++)
		if (job->meets[i].step > max)
			max = job->meets[i].step;
	if (max < 0)
		return 0;
	if (!(job->steps = calloc((size_t)max + 1, sizeof(*job->steps))) ||
	    !(late = calloc(((size_t)max + 1) * job->nr_ranks, sizeof(*late))))
		return -ENOMEM;
	job->nr_steps = (size_t)max + 1;
	for (size_t s = 0; s < job->nr_steps; s++)
		job->steps[s] = (struct jr_step){
			.index = (int64_t)s, .straggler = JR_NOT_THERE, .cause = JOB_CAUSE_UNKNOWN};
	for (size_t i = 0; i < job->nr_meets; i++) {
		const struct jr_meet *m = &job->meets[i];
		struct jr_step *st;

		if (m->step < 0)
			continue;
		st = &job->steps[m->step];
		if (!st->nr_meets++ || m->first < st->start)
			st->start = m->first;
		for (size_t k = 0; k < job->nr_ranks; k++) {
			const struct jr_coll *c = jr_coll_at(job, m, k);

			if (c && c->end > st->end)
				st->end = c->end;
		}
		if (m->late)
			late[(size_t)m->step * job->nr_ranks + m->last_rank] += m->lateness;
	}
	for (size_t s = 0; s < job->nr_steps; s++) {
		struct jr_step *st = &job->steps[s];
		uint64_t worst = 0;

		for (size_t k = 0; k < job->nr_ranks; k++)
			if (late[s * job->nr_ranks + k] > st->lateness)
				st->lateness = late[s * job->nr_ranks + k], st->straggler = k;
		for (size_t i = 0; i < job->nr_meets && st->straggler != JR_NOT_THERE; i++) {
			const struct jr_meet *m = &job->meets[i];

			if (m->step == (int64_t)s && m->late && m->last_rank == st->straggler &&
			    m->lateness > worst)
				worst = m->lateness, st->cause = m->cause;
		}
	}
	free(late);
	return 0;
}

static int judge(struct job_report *r, struct jr_job *job)
{
	uint64_t *scratch;
	int err = 0;

	if (!job->nr_meets)
		return 0;
	if (!(scratch = malloc((job->nr_ranks > job->nr_meets ? job->nr_ranks : job->nr_meets) *
			       sizeof(*scratch))))
		return -ENOMEM;
	for (size_t i = 0; i < job->nr_meets; i++)
		judge_meet(job, &job->meets[i], scratch);
	qsort(job->meets, job->nr_meets, sizeof(*job->meets), cmp_meet);
	link_times(job, scratch);
	free(scratch);
	err = find_steps(r, job);
	if (!err)
		err = sum_steps(job);
	return err;
}

/*
 * The ranks of the world the job did not show, from the gaps between the ranks present (sorted
 * by rank), never by counting to the world size: how many, the first 16 of them written into
 * buf. Linear in the ranks present, whatever the world says.
 */
static size_t missing_ranks(const struct jr_job *job, char *buf, size_t size)
{
	size_t nr = 0, listed = 0, at = 0;
	int64_t next = 0;

	buf[0] = '\0';
	if (job->world <= 0)
		return 0;
	for (size_t k = 0; k <= job->nr_ranks; k++) {
		int64_t r = k < job->nr_ranks ? job->ranks[k]->rank : job->world;

		if (r > job->world)
			r = job->world;
		/* [next, r) is a gap: all of it counted, its first ones listed (16 in all). */
		if (r > next) {
			for (int64_t want = next; want < r && listed < 16; want++, listed++)
				if (at < size)
					at += (size_t)snprintf(buf + at, size - at, "%s%" PRId64,
							       listed ? ", " : "", want);
			nr += (size_t)(r - next);
		}
		if (r + 1 > next)
			next = r + 1;
	}
	return nr;
}

/* The plain answers: what could not be compared, and why. */
static void notes(struct job_report *r)
{
	if (!r->nr_ranks) {
		jr_note(r, NULL,
			"no process with GPU work said its rank in its environment (RANK, "
			"SLURM_PROCID, OMPI_COMM_WORLD_RANK or PMI_RANK): no job to compare");
		return;
	}
	if (r->unranked)
		jr_note(r, NULL, "%zu processes with GPU work said no rank: left out", r->unranked);
	if (r->nr_jobs > 1)
		jr_note(r, NULL, "%zu jobs on this host: each is compared alone", r->nr_jobs);
	for (size_t j = 0; j < r->nr_jobs; j++) {
		struct jr_job *job = &r->jobs[j];
		size_t lo = SIZE_MAX, hi = 0, partial = 0;
		char missing[120] = "";
		size_t nr_missing;

		nr_missing = missing_ranks(job, missing, sizeof(missing));
		if (nr_missing)
			jr_note(r, job,
				"ranks missing: %zu of the world of %" PRId64 " (%s%s) were not "
				"profiled; the others are compared",
				nr_missing, job->world, missing, nr_missing > 16 ? ", ..." : "");
		if (job->nr_ranks == 1)
			jr_note(r, job, "one rank (%" PRId64 "): nothing to compare it with",
				job->ranks[0]->rank);
		for (size_t k = 0; k < job->nr_ranks; k++) {
			lo = job->ranks[k]->nr_colls < lo ? job->ranks[k]->nr_colls : lo;
			hi = job->ranks[k]->nr_colls > hi ? job->ranks[k]->nr_colls : hi;
		}
		if (!hi) {
			jr_note(r, job,
				"no collectives: no NCCL kernel (ncclKernel_*, ncclDevKernel_*) "
				"among the job's GPU work: nothing to compare");
			continue;
		}
		for (size_t i = 0; i < job->nr_meets; i++)
			partial += job->meets[i].nr_in < job->nr_ranks;
		if (lo != hi)
			jr_note(r, job,
				"the ranks ran different numbers of collectives (%zu to %zu): the "
				"%zu that not every rank ran are compared among the ranks that ran "
				"them",
				lo, hi, partial);
	}
}

int job_report__build(const struct profile_data *pd, const char *step, struct job_report **ret)
{
	struct job_report *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	r->pd = pd;
	r->step_name = step && *step ? step : JOB_REPORT_STEP_NAME;
	err = jr_collect(r);
	if (!err)
		err = jr_index_samples(r);
	if (!err)
		err = jr_index_woken(r);
	for (size_t i = 0; i < r->nr_ranks && !err; i++)
		if (r->ranks[i].nr_colls)
			arrivals(r, &r->ranks[i]);
	for (size_t j = 0; j < r->nr_jobs && !err; j++) {
		err = judge(r, &r->jobs[j]);
		if (!err)
			err = jr_findings(r, &r->jobs[j]);
	}
	if (err) {
		job_report__free(r);
		return err;
	}
	notes(r);
	*ret = r;
	return 0;
}

void job_report__set_clocks(struct job_report *r, const struct job_report_clock *clocks, size_t n,
			    int64_t epoch_realtime_ns)
{
	r->clocks = clocks;
	r->nr_clocks = n;
	r->epoch = epoch_realtime_ns;
}

void job_report__free(struct job_report *r)
{
	if (!r)
		return;
	for (size_t j = 0; j < r->nr_jobs; j++) {
		struct jr_job *job = &r->jobs[j];

		for (size_t i = 0; i < job->nr_meets; i++)
			free(job->meets[i].at);
		for (size_t i = 0; i < job->nr_findings; i++) {
			free(job->findings[i].frames);
			free(job->findings[i].chain);
		}
		free(job->meets);
		free(job->steps);
		free(job->ranks);
	}
	for (size_t i = 0; i < r->nr_ranks; i++) {
		free(r->ranks[i].work);
		free(r->ranks[i].colls);
		free(r->ranks[i].steps);
	}
	free(r->jobs);
	free(r->ranks);
	free(r->launch_of);
	free(r->samples);
	free(r->woken);
	free(r);
}
