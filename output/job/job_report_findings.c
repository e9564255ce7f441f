// SPDX-License-Identifier: Apache-2.0
/*
 * The job report's findings: a rank late at most of the collectives it ran is a straggler,
 * with its cause against the median rank, the kernels that took longer or the CPU stack its
 * launching thread was in while the GPU waited; collectives slow after every rank arrived are
 * the link's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/job/job_report_internal.h"

#define MAX_NAMES 64

struct names {
	struct jr_kernel k[MAX_NAMES];
	size_t n;
	const struct job_report *r;
	int sign;
};

static void add_kernel(void *ctx, size_t gpu, bool is_coll, uint64_t gap_s, uint64_t gap_e,
		       uint64_t s, uint64_t e)
{
	struct names *nm = ctx;
	const struct corr_gpu_rec *g = &nm->r->pd->gpu[gpu];
	const struct corr_cpu_rec *l;
	size_t i;

	(void)gap_s, (void)gap_e;
	if (is_coll || g->kind != CORR_GPU_KERNEL || !g->name || e <= s)
		return;
	for (i = 0; i < nm->n && strcmp(nm->k[i].name, g->name); i++)
		;
	if (i == nm->n) {
		if (nm->n == MAX_NAMES)
			return;
		nm->k[nm->n++] = (struct jr_kernel){.name = g->name, .stack_id = CORR_NO_STACK};
	}
	nm->k[i].delta_ns += nm->sign * (int64_t)(e - s);
	if (nm->sign > 0 && nm->k[i].stack_id == CORR_NO_STACK && (l = jr_launch_of(nm->r, gpu)))
		nm->k[i].stack_id = l->stack_id;
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct jr_kernel *x = a, *y = b;

	return x->delta_ns > y->delta_ns ? -1 : x->delta_ns < y->delta_ns;
}

struct stacks {
	const struct job_report *r;
	struct jr_tally t;
	uint32_t fallback; /* the launch after the longest host gap */
	uint64_t longest;
};

/* The launching thread's samples while the GPU waited for it to launch. */
static void add_stacks(void *ctx, size_t gpu, bool is_coll, uint64_t gap_s, uint64_t gap_e,
		       uint64_t s, uint64_t e)
{
	struct stacks *st = ctx;
	const struct job_report *r = st->r;
	uint64_t host_end;
	const struct corr_cpu_rec *l = jr_host_part(r, gpu, gap_s, gap_e, &host_end);

	(void)is_coll, (void)s, (void)e;
	if (!l)
		return;
	if (host_end - gap_s > st->longest)
		st->longest = host_end - gap_s, st->fallback = l->stack_id;
	if (!r->samples)
		return;
	for (size_t i = jr_first_sample(r, l->tid, gap_s); i < r->pd->nr_samples; i++) {
		const struct profile_sample *sm = &r->pd->samples[r->samples[i]];

		if (sm->tid != l->tid || sm->time_ns > host_end)
			break;
		jr_tally_add(&st->t, sm->stack_id);
	}
}

/* A copy of the frames of pid's stack id (outermost first). 0, or -ENOMEM. */
static int frames_of(const struct job_report *r, uint32_t pid, uint32_t id, const char ***ret,
		     size_t *ret_n)
{
	const char *const *fr;
	size_t n;

	*ret = NULL;
	*ret_n = 0;
	if (id == CORR_NO_STACK || !r->pd->stack || r->pd->stack(r->pd->ctx, pid, id, &fr, &n) ||
	    !n)
		return 0;
	if (n > JR_MAX_FRAMES)
		n = JR_MAX_FRAMES;
	if (!(*ret = malloc(n * sizeof(**ret))))
		return -ENOMEM;
	memcpy(*ret, fr, n * sizeof(**ret));
	*ret_n = n;
	return 0;
}

/*
 * The path most of the samples of pid in t run through: from the outermost frame, each next
 * frame the one 80% or more of them were under, as the GPU report's findings point (it stops
 * where the time splits, at the user's function rather than one sample's leaf). Into f's
 * frames (replaced); the share of the samples under its last frame into *ret_share.
 */
static int dominant_path(const struct job_report *r, uint32_t pid, const struct jr_tally *t,
			 struct jr_finding *f, double *ret_share)
{
	const char **fr[JR_MAX_STACKS] = {0};
	size_t nf[JR_MAX_STACKS] = {0}, depth = 0;
	bool on[JR_MAX_STACKS];
	uint64_t total = 0, last = 0;
	int err = 0;

	free(f->frames);
	f->frames = NULL;
	f->nr_frames = 0;
	for (size_t i = 0; i < t->n && !err; i++) {
		err = frames_of(r, pid, t->s[i].id, &fr[i], &nf[i]);
		on[i] = nf[i] > 0;
		total += on[i] ? t->s[i].n : 0;
	}
	if (!err && total && !(f->frames = malloc(JR_MAX_FRAMES * sizeof(*f->frames))))
		err = -ENOMEM;
	while (!err && total && depth < JR_MAX_FRAMES) {
		const char *cand = NULL;
		uint64_t w = 0;

		for (size_t i = 0; i < t->n && !cand; i++)
			if (on[i] && nf[i] > depth)
				cand = fr[i][depth];
		for (size_t i = 0; cand && i < t->n; i++)
			if (on[i] && nf[i] > depth && !strcmp(fr[i][depth], cand))
				w += t->s[i].n;
		if (!cand || (double)w < 0.8 * (double)total)
			break;
		f->frames[depth++] = cand;
		last = w;
		for (size_t i = 0; i < t->n; i++)
			on[i] = on[i] && nf[i] > depth - 1 && !strcmp(fr[i][depth - 1], cand);
	}
	f->nr_frames = depth;
	if (ret_share)
		*ret_share = total ? (double)last / (double)total : 0;
	for (size_t i = 0; i < t->n; i++)
		free(fr[i]);
	return err;
}

static const char *severity_of(double share)
{
	return share >= 0.2 ? "high" : share >= 0.05 ? "medium" : "low";
}

static const char *const advice[JOB_CAUSE_NR] = {
	"its GPU computes more before the collective than the other ranks': look for uneven "
	"work (sequence lengths, a layer placed on it) or a slower GPU (clocks, temperature)",
	"its GPU waits for its host before the collective: move the host work named here "
	"(data loading, preprocessing) off the launching thread or overlap it with the GPU",
	"its GPU idles between short launches: fuse kernels or capture them in a CUDA graph",
	"its launching thread was off the CPU while its GPU waited: look at the I/O or lock "
	"it blocked in (--mode wall shows the off-CPU stacks)",
	"every rank arrived and the collective took longer: check the links (NVLink, PCIe, "
	"network) and NCCL's algorithm",
	"the cause is not known from what was profiled",
};

static uint64_t median_of(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), jr_cmp_u64);
	return n ? v[(n - 1) / 2] : 0;
}

/* The kernels the late rank ran longer than the median rank, over its late collectives. */
static int compute_stack(const struct job_report *r, const struct jr_job *job, size_t k,
			 struct jr_finding *f)
{
	struct names *nm = calloc(1, sizeof(*nm));

	if (!nm)
		return -ENOMEM;
	nm->r = r;
	for (size_t i = 0; i < job->nr_meets; i++) {
		const struct jr_meet *m = &job->meets[i];
		const struct jr_coll *c = jr_coll_at(job, m, k), *ref;
		const struct jr_rank *rr = job->ranks[m->median_rank];

		if (!m->late || m->last_rank != k)
			continue;
		ref = jr_coll_at(job, m, m->median_rank);
		nm->sign = 1;
		jr_walk_segment(r, job->ranks[k], c,
				c == job->ranks[k]->colls ? 0 : (c - 1)->pos + 1, add_kernel, nm);
		nm->sign = -1;
		jr_walk_segment(r, rr, ref, ref == rr->colls ? 0 : (ref - 1)->pos + 1, add_kernel,
				nm);
	}
	qsort(nm->k, nm->n, sizeof(nm->k[0]), cmp_kernel);
	for (size_t i = 0; i < nm->n && f->nr_kernels < JR_MAX_KERNELS; i++)
		if (nm->k[i].delta_ns > 0)
			f->kernels[f->nr_kernels++] = nm->k[i];
	free(nm);
	return f->nr_kernels
		       ? frames_of(r, f->pid, f->kernels[0].stack_id, &f->frames, &f->nr_frames)
		       : 0;
}

/*
 * With wait chains (--wakers): when the launching thread spent half its late gaps or more
 * waiting, woken through chains, the finding points at the work the heaviest chain's last
 * thread did (its stack the finding's, the chain's words in the summary's wake).
 */
static int chain_finding(const struct job_report *r, const struct jr_job *job, size_t k,
			 struct jr_finding *f)
{
	struct jr_chain *c;
	int err = jr_chains(r, job, k, &c);

	if (err || !c)
		return err;
	f->chain = c;
	if (c->nr_hops && 2 * c->chained_ns >= c->gap_ns && c->work.n) {
		struct jr_finding w = {0};

		err = dominant_path(r, c->hop_pid[c->nr_hops - 1], &c->work, &w, &c->work_share);
		if (!err && w.nr_frames) {
			free(f->frames);
			f->frames = w.frames;
			f->nr_frames = w.nr_frames;
			c->work_frame = f->frames[f->nr_frames - 1];
		} else {
			free(w.frames);
		}
	}
	if (!err && c->nr_hops)
		jr_chain_why(r, c);
	return err;
}

/* What the late rank's launching thread was doing while its GPU waited. */
static int host_stack(const struct job_report *r, const struct jr_job *job, size_t k,
		      struct jr_finding *f)
{
	struct stacks *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	st->r = r;
	st->fallback = CORR_NO_STACK;
	for (size_t i = 0; i < job->nr_meets; i++) {
		const struct jr_meet *m = &job->meets[i];
		const struct jr_coll *c = jr_coll_at(job, m, k);

		if (m->late && m->last_rank == k)
			jr_walk_segment(r, job->ranks[k], c,
					c == job->ranks[k]->colls ? 0 : (c - 1)->pos + 1,
					add_stacks, st);
	}
	err = st->t.n ? dominant_path(r, f->pid, &st->t, f, NULL)
		      : frames_of(r, f->pid, st->fallback, &f->frames, &f->nr_frames);
	free(st);
	if (!err)
		err = chain_finding(r, job, k, f);
	return err;
}

static int straggler(struct job_report *r, struct jr_job *job, size_t k)
{
	uint64_t by_cause[JOB_CAUSE_NR] = {0}, *lat, *seg;
	size_t late = 0, in = 0;
	struct jr_finding *f;
	int err = 0;

	for (size_t i = 0; i < job->nr_meets; i++) {
		in += job->meets[i].at[k] != JR_NOT_THERE;
		late += job->meets[i].late && job->meets[i].last_rank == k;
	}
	if (late < 2 || (double)late < JOB_REPORT_STRAGGLER_SHARE * (double)in ||
	    job->nr_findings == JR_MAX_FINDINGS)
		return 0;
	if (!(lat = calloc(late, sizeof(*lat))) || !(seg = calloc(late, sizeof(*seg)))) {
		free(lat);
		return -ENOMEM;
	}
	f = &job->findings[job->nr_findings++];
	*f = (struct jr_finding){.kind = "straggler",
				 .rank = job->ranks[k]->rank,
				 .pid = job->ranks[k]->pid,
				 .late = late,
				 .meets = in};
	late = 0;
	for (size_t i = 0; i < job->nr_meets; i++) {
		const struct jr_meet *m = &job->meets[i];
		const struct jr_coll *c = jr_coll_at(job, m, k), *ref;

		if (!m->late || m->last_rank != k)
			continue;
		ref = jr_coll_at(job, m, m->median_rank);
		lat[late] = m->lateness;
		seg[late++] = ref->arrive - ref->seg_start;
		f->lateness_total += m->lateness;
		if (m->lateness > f->lateness_max)
			f->lateness_max = m->lateness;
		by_cause[m->cause] += m->lateness;
		f->delta[JOB_CAUSE_COMPUTE] += (int64_t)c->busy - (int64_t)ref->busy;
		for (int j = JOB_CAUSE_HOST; j < JOB_CAUSE_NR; j++)
			f->delta[j] += (int64_t)c->idle_by[j] - (int64_t)ref->idle_by[j];
	}
	for (int j = 0; j < JOB_CAUSE_NR; j++)
		f->delta[j] /= (int64_t)late;
	f->lateness_median = median_of(lat, late);
	f->segment_median = median_of(seg, late);
	free(lat);
	free(seg);
	f->cause = JOB_CAUSE_UNKNOWN;
	for (int j = 0; j < JOB_CAUSE_NR; j++)
		if (by_cause[j] > by_cause[f->cause])
			f->cause = (enum job_cause)j;
	f->severity = severity_of(
		f->segment_median ? (double)f->lateness_median / (double)f->segment_median : 1);
	f->advice = advice[f->cause];
	snprintf(f->summary, sizeof(f->summary),
		 "rank %" PRId64 " arrived last at %zu of %zu collectives, a median %.2f ms after "
		 "the median rank; cause: %s",
		 f->rank, late, in, (double)f->lateness_median / 1e6,
		 job_report__cause_name(f->cause));
	if (f->cause == JOB_CAUSE_COMPUTE)
		err = compute_stack(r, job, k, f);
	else
		err = host_stack(r, job, k, f);
	return err;
}

static void link_finding(struct jr_job *job)
{
	uint64_t n = 0, total = 0, max = 0;
	struct jr_finding *f;

	for (size_t i = 0; i < job->nr_meets; i++)
		if (job->meets[i].link_slow) {
			n++;
			total += job->meets[i].own_ns;
			if (job->meets[i].own_ns > max)
				max = job->meets[i].own_ns;
		}
	if (!n || job->nr_findings == JR_MAX_FINDINGS)
		return;
	f = &job->findings[job->nr_findings++];
	*f = (struct jr_finding){.kind = "link_slow",
				 .rank = -1,
				 .cause = JOB_CAUSE_LINK,
				 .late = n,
				 .meets = job->nr_meets,
				 .lateness_max = max,
				 .lateness_total = total};
	f->severity = severity_of((double)n / (double)job->nr_meets);
	f->advice = advice[JOB_CAUSE_LINK];
	snprintf(f->summary, sizeof(f->summary),
		 "%" PRIu64 " of %zu collectives took %.1fx their kind's median time or more "
		 "after every rank arrived (the longest %.2f ms)",
		 n, job->nr_meets, JOB_REPORT_LINK_FACTOR, (double)max / 1e6);
}

int jr_findings(struct job_report *r, struct jr_job *job)
{
	int err = 0;

	for (size_t k = 0; k < job->nr_ranks && !err; k++)
		err = straggler(r, job, k);
	if (!err)
		link_finding(job);
	return err;
}
