// SPDX-License-Identifier: Apache-2.0
/*
 * The job report's first half: which processes are ranks of which job (their labels), their
 * GPU work and NCCL kernels, each kernel numbered per stream and kind, and the meetings of the
 * ranks' index-th collective of a kind.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/proc_env.h"
#include "daemon/base/vec.h"
#include "output/job/job_report_internal.h"

void jr_note(struct job_report *r, struct jr_job *job, const char *fmt, ...)
{
	size_t *n = job ? &job->nr_notes : &r->nr_notes;
	char *dst;
	va_list ap;

	if (*n >= JR_MAX_NOTES)
		return;
	dst = job ? job->notes[(*n)++] : r->notes[(*n)++];
	va_start(ap, fmt);
	vsnprintf(dst, JR_NOTE_LEN, fmt, ap);
	va_end(ap);
}

static bool is_work(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_KERNEL || g->kind == CORR_GPU_MEMCPY ||
	       g->kind == CORR_GPU_MEMSET;
}

struct label_read {
	struct jr_rank *rk;
	bool has_rank;
};

static int64_t number_of(const char *v, size_t n)
{
	char buf[24];
	char *end;
	long long x;

	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, v, n);
	buf[n] = '\0';
	x = strtoll(buf, &end, 10);
	return *end || x < 0 || x >= PROC_JOB_MAX_WORLD ? -1 : (int64_t)x;
}

static void on_label(void *ctx, const char *key, size_t klen, const char *val, size_t vlen)
{
	struct label_read *lr = ctx;

#define KEY_IS(s) (klen == sizeof(s) - 1 && !memcmp(key, s, klen))
	if (KEY_IS("job.rank")) {
		lr->rk->rank = number_of(val, vlen);
		lr->has_rank = lr->rk->rank >= 0;
	} else if (KEY_IS("job.world_size")) {
		lr->rk->world = number_of(val, vlen);
	} else if (KEY_IS("job.id") && vlen < sizeof(lr->rk->job)) {
		memcpy(lr->rk->job, val, vlen);
		lr->rk->job[vlen] = '\0';
	} else if (KEY_IS("host.name") && vlen < sizeof(lr->rk->host)) {
		memcpy(lr->rk->host, val, vlen);
		lr->rk->host[vlen] = '\0';
	}
#undef KEY_IS
}

/* pid's rank, found or added; NULL when it said none (counted once) or out of memory. */
static struct jr_rank *rank_of(struct job_report *r, uint32_t pid, uint32_t *unranked,
			       size_t nr_unranked_max, int *err)
{
	const struct profile_data *pd = r->pd;
	struct label_read lr;
	struct jr_rank *rk;

	for (size_t i = 0; i < r->nr_ranks; i++)
		if (r->ranks[i].pid == pid)
			return &r->ranks[i];
	for (size_t i = 0; i < r->unranked && i < nr_unranked_max; i++)
		if (unranked[i] == pid)
			return NULL;
	if (vec_reserve(&r->ranks, &r->cap_ranks, r->nr_ranks + 1)) {
		*err = -ENOMEM;
		return NULL;
	}
	rk = &r->ranks[r->nr_ranks];
	*rk = (struct jr_rank){.pid = pid, .rank = -1, .world = -1};
	lr = (struct label_read){.rk = rk};
	if (pd->process_labels)
		profile__label_set_each(pd->process_labels(pd->process_labels_ctx, pid), on_label,
					&lr);
	if (!lr.has_rank) {
		if (r->unranked < nr_unranked_max)
			unranked[r->unranked] = pid;
		r->unranked++;
		return NULL;
	}
	r->nr_ranks++;
	return rk;
}

static int cmp_work(const void *a, const void *b, void *ctx)
{
	const struct profile_data *pd = ctx;
	const struct corr_gpu_rec *x = &pd->gpu[*(const size_t *)a];
	const struct corr_gpu_rec *y = &pd->gpu[*(const size_t *)b];

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

static int cmp_range(const void *a, const void *b)
{
	const struct jr_range *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* Every ranked process's GPU work and step ranges. */
static int gather(struct job_report *r)
{
	const struct profile_data *pd = r->pd;
	uint32_t unranked[256];
	int err = 0;

	for (size_t i = 0; i < pd->nr_gpu && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		bool step = g->kind == CORR_GPU_NVTX && g->name && g->end_ns > g->start_ns &&
			    !strcmp(g->name, r->step_name);
		struct jr_rank *rk;

		if (!is_work(g) && !step)
			continue;
		if (!(rk = rank_of(r, g->pid, unranked, 256, &err)))
			continue;
		if (step) {
			if (vec_reserve(&rk->steps, &rk->cap_steps, rk->nr_steps + 1))
				return -ENOMEM;
			rk->steps[rk->nr_steps++] = (struct jr_range){g->start_ns, g->end_ns};
		} else {
			if (vec_reserve(&rk->work, &rk->cap_work, rk->nr_work + 1))
				return -ENOMEM;
			rk->work[rk->nr_work++] = i;
		}
	}
	for (size_t i = 0; i < r->nr_ranks; i++) {
		if (r->ranks[i].nr_work)
			qsort_r(r->ranks[i].work, r->ranks[i].nr_work, sizeof(size_t), cmp_work,
				(void *)pd);
		if (r->ranks[i].nr_steps)
			qsort(r->ranks[i].steps, r->ranks[i].nr_steps, sizeof(struct jr_range),
			      cmp_range);
	}
	return err;
}

static int index_launches(struct job_report *r)
{
	const struct profile_data *pd = r->pd;

	if (!pd->nr_gpu)
		return 0;
	if (!(r->launch_of = calloc(pd->nr_gpu, sizeof(size_t))))
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_joins; i++)
		if (pd->joins[i].gpu < pd->nr_gpu && pd->joins[i].launch < pd->nr_launches)
			r->launch_of[pd->joins[i].gpu] = pd->joins[i].launch + 1;
	return 0;
}

/* The rank's NCCL kernels, numbered per stream (in the order the rank first used them) and
 * kind. */
static int number(struct job_report *r, struct jr_rank *rk)
{
	struct {
		uint32_t stream_ord;
		char op[16];
		uint32_t n;
	} kinds[64];
	size_t nr_kinds = 0;

	for (size_t p = 0; p < rk->nr_work; p++) {
		const struct corr_gpu_rec *g = &r->pd->gpu[rk->work[p]];
		struct jr_coll c = {.gpu = rk->work[p], .pos = p, .step = -1};
		size_t s, k;

		if (g->kind != CORR_GPU_KERNEL || !nccl__parse(g->name, &c.kern))
			continue;
		for (s = 0; s < rk->nr_streams && rk->streams[s] != g->stream_id; s++)
			;
		if (s == rk->nr_streams && s < JR_MAX_STREAMS)
			rk->streams[rk->nr_streams++] = g->stream_id;
		c.stream_ord = (uint32_t)(s < JR_MAX_STREAMS ? s : JR_MAX_STREAMS - 1);
		for (k = 0; k < nr_kinds; k++)
			if (kinds[k].stream_ord == c.stream_ord && !strcmp(kinds[k].op, c.kern.op))
				break;
		if (k == nr_kinds && nr_kinds < 64) {
			kinds[k].stream_ord = c.stream_ord;
			memcpy(kinds[k].op, c.kern.op, sizeof(kinds[k].op));
			kinds[nr_kinds++].n = 0;
		}
		if (k < 64)
			c.index = kinds[k].n++;
		c.start = g->start_ns;
		c.end = g->end_ns;
		if (r->launch_of && r->launch_of[c.gpu])
			c.launch = r->pd->launches[r->launch_of[c.gpu] - 1].time_ns;
		if (vec_reserve(&rk->colls, &rk->cap_colls, rk->nr_colls + 1))
			return -ENOMEM;
		rk->colls[rk->nr_colls++] = c;
	}
	return 0;
}

static int cmp_rank_ptr(const void *a, const void *b)
{
	const struct jr_rank *x = *(struct jr_rank *const *)a, *y = *(struct jr_rank *const *)b;

	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Ranks grouped by job id, each job's ranks by rank (a rank said twice: the first kept). */
static int group_jobs(struct job_report *r)
{
	if (!r->nr_ranks)
		return 0;
	if (!(r->jobs = calloc(r->nr_ranks, sizeof(*r->jobs))))
		return -ENOMEM;
	for (size_t i = 0; i < r->nr_ranks; i++) {
		struct jr_rank *rk = &r->ranks[i];
		struct jr_job *job = NULL;

		for (size_t j = 0; j < r->nr_jobs && !job; j++)
			if (!strcmp(r->jobs[j].id, rk->job))
				job = &r->jobs[j];
		if (!job) {
			job = &r->jobs[r->nr_jobs++];
			snprintf(job->id, sizeof(job->id), "%s", rk->job);
			job->world = -1;
			if (!(job->ranks = calloc(r->nr_ranks, sizeof(*job->ranks))))
				return -ENOMEM;
		}
		if (rk->world > job->world)
			job->world = rk->world;
		job->ranks[job->nr_ranks++] = rk;
	}
	for (size_t j = 0; j < r->nr_jobs; j++) {
		struct jr_job *job = &r->jobs[j];
		size_t kept = 0;

		qsort(job->ranks, job->nr_ranks, sizeof(*job->ranks), cmp_rank_ptr);
		for (size_t i = 0; i < job->nr_ranks; i++) {
			if (kept && job->ranks[kept - 1]->rank == job->ranks[i]->rank) {
				jr_note(r, job,
					"rank %" PRId64 " said by two processes (pid %u and %u): "
					"only the first is compared",
					job->ranks[i]->rank, job->ranks[kept - 1]->pid,
					job->ranks[i]->pid);
				continue;
			}
			job->ranks[kept++] = job->ranks[i];
		}
		job->nr_ranks = kept;
	}
	return 0;
}

struct meet_key {
	uint32_t stream_ord, index;
	const char *op;
	size_t job_rank, coll;
};

static int cmp_key(const void *a, const void *b)
{
	const struct meet_key *x = a, *y = b;
	int c;

	if (x->stream_ord != y->stream_ord)
		return x->stream_ord < y->stream_ord ? -1 : 1;
	if ((c = strcmp(x->op, y->op)))
		return c;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return x->job_rank < y->job_rank ? -1 : x->job_rank > y->job_rank;
}

/* The job's meetings: its ranks' collectives of the same stream, kind and index. */
static int meet(struct jr_job *job)
{
	struct meet_key *keys;
	size_t n = 0, i = 0;
	int err = 0;

	for (size_t k = 0; k < job->nr_ranks; k++)
		n += job->ranks[k]->nr_colls;
	if (!n)
		return 0;
	if (!(keys = calloc(n, sizeof(*keys))))
		return -ENOMEM;
	n = 0;
	for (size_t k = 0; k < job->nr_ranks; k++)
		for (size_t c = 0; c < job->ranks[k]->nr_colls; c++) {
			const struct jr_coll *co = &job->ranks[k]->colls[c];

			keys[n++] = (struct meet_key){co->stream_ord, co->index, co->kern.op, k, c};
		}
	qsort(keys, n, sizeof(*keys), cmp_key);
	while (i < n && !err) {
		struct jr_meet *m;
		size_t j = i;

		if (vec_reserve(&job->meets, &job->cap_meets, job->nr_meets + 1)) {
			err = -ENOMEM;
			break;
		}
		m = &job->meets[job->nr_meets];
		*m = (struct jr_meet){.op = keys[i].op,
				      .stream_ord = keys[i].stream_ord,
				      .index = keys[i].index,
				      .step = -1};
		if (!(m->at = malloc(job->nr_ranks * sizeof(size_t)))) {
			err = -ENOMEM;
			break;
		}
		job->nr_meets++;
		for (size_t k = 0; k < job->nr_ranks; k++)
			m->at[k] = JR_NOT_THERE;
		for (; j < n && !cmp_key(&(struct meet_key){keys[i].stream_ord, keys[i].index,
							    keys[i].op, 0, 0},
					 &(struct meet_key){keys[j].stream_ord, keys[j].index,
							    keys[j].op, 0, 0});
		     j++) {
			m->at[keys[j].job_rank] = keys[j].coll;
			m->nr_in++;
		}
		i = j;
	}
	free(keys);
	return err;
}

int jr_collect(struct job_report *r)
{
	int err = index_launches(r);

	if (!err)
		err = gather(r);
	for (size_t i = 0; i < r->nr_ranks && !err; i++)
		err = number(r, &r->ranks[i]);
	if (!err)
		err = group_jobs(r);
	for (size_t j = 0; j < r->nr_jobs && !err; j++)
		err = meet(&r->jobs[j]);
	return err;
}
