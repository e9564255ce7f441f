// SPDX-License-Identifier: Apache-2.0
/*
 * What the job report's stages share, below them all: the causes' names, a rank's samples by
 * thread and time, the launch of a piece of GPU work, the walk over a collective's segment, a
 * meeting's collectives.
 */
#include <errno.h>
#include <stdlib.h>

#include "output/job/job_report_internal.h"

static const char *const cause_names[JOB_CAUSE_NR] = {"compute", "host", "launch",
						      "blocked", "link", "unknown"};

const char *job_report__cause_name(enum job_cause c)
{
	return c < JOB_CAUSE_NR ? cause_names[c] : "unknown";
}

static int cmp_sample(const void *a, const void *b, void *ctx)
{
	const struct profile_data *pd = ctx;
	const struct profile_sample *x = &pd->samples[*(const size_t *)a];
	const struct profile_sample *y = &pd->samples[*(const size_t *)b];

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

int jr_index_samples(struct job_report *r)
{
	const struct profile_data *pd = r->pd;

	if (!pd->nr_samples)
		return 0;
	if (!(r->samples = malloc(pd->nr_samples * sizeof(size_t))))
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_samples; i++)
		r->samples[i] = i;
	qsort_r(r->samples, pd->nr_samples, sizeof(size_t), cmp_sample, (void *)pd);
	return 0;
}

/* The first of r->samples of tid at or after t. */
size_t jr_first_sample(const struct job_report *r, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = r->pd->nr_samples;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct profile_sample *s = &r->pd->samples[r->samples[mid]];

		if (s->tid < tid || (s->tid == tid && s->time_ns < t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t jr_samples_in(const struct job_report *r, uint32_t tid, uint64_t a, uint64_t b)
{
	size_t n = 0;

	if (!r->samples)
		return 0;
	for (size_t i = jr_first_sample(r, tid, a); i < r->pd->nr_samples; i++, n++) {
		const struct profile_sample *s = &r->pd->samples[r->samples[i]];

		if (s->tid != tid || s->time_ns > b)
			break;
	}
	return n;
}

const struct corr_cpu_rec *jr_launch_of(const struct job_report *r, size_t gpu)
{
	return r->launch_of && r->launch_of[gpu] ? &r->pd->launches[r->launch_of[gpu] - 1] : NULL;
}

const struct corr_cpu_rec *jr_host_part(const struct job_report *r, size_t gpu, uint64_t gap_s,
					uint64_t gap_e, uint64_t *ret_end)
{
	const struct corr_cpu_rec *l = jr_launch_of(r, gpu);

	if (!l || l->time_ns <= gap_s || gap_e <= gap_s)
		return NULL;
	*ret_end = l->time_ns < gap_e ? l->time_ns : gap_e;
	return l;
}

void jr_walk_segment(const struct job_report *r, const struct jr_rank *rk, const struct jr_coll *c,
		     size_t from_pos, jr_seg_fn fn, void *ctx)
{
	uint64_t cursor = c->seg_start;

	for (size_t p = from_pos; p <= c->pos; p++) {
		const struct corr_gpu_rec *g = &r->pd->gpu[rk->work[p]];
		bool last = p == c->pos;
		uint64_t s = last ? c->arrive : g->start_ns, e = last ? c->arrive : g->end_ns;

		if (s > c->arrive)
			s = c->arrive;
		if (e > c->arrive)
			e = c->arrive;
		if (s < cursor)
			s = cursor;
		if (e < s)
			e = s;
		fn(ctx, rk->work[p], last, cursor, s, s, e);
		if (e > cursor)
			cursor = e;
	}
}

int jr_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

const struct jr_coll *jr_coll_at(const struct jr_job *job, const struct jr_meet *m, size_t k)
{
	return m->at[k] == JR_NOT_THERE ? NULL : &job->ranks[k]->colls[m->at[k]];
}

void jr_tally_add(struct jr_tally *t, uint32_t id)
{
	size_t i;

	for (i = 0; i < t->n && t->s[i].id != id; i++)
		;
	if (i == t->n) {
		if (t->n == JR_MAX_STACKS)
			return;
		t->s[t->n].id = id;
		t->s[t->n++].n = 0;
	}
	t->s[i].n++;
}
