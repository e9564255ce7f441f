// SPDX-License-Identifier: Apache-2.0
/* A training job across hosts: hosts' job parts (read by job_merge_read.c) aligned and merged
 * (output/job/job_merge.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "correlate/correlate.h"
#include "daemon/base/job_filter.h"
#include "daemon/base/keymap.h"
#include "daemon/base/sort.h"
#include "output/diff/diff.h"
#include "output/job/job_merge.h"
#include "output/job/job_merge_internal.h"
#include "output/job/job_parts.h"
#include "output/job/job_report_internal.h"
#include "output/job/nccl.h"
#include "output/model/calltree.h"
#include "output/model/profile.h"

static struct jm_host *host_of(const struct job_merge *m, uint32_t pid)
{
	size_t h = pid >> JOB_REPORT_PID_BITS;

	return h < m->nr_hosts ? &m->hosts[h] : NULL;
}

/* ---- the profile's callbacks ---- */

static int merged_stack(void *ctx, uint32_t pid, uint32_t id, const char *const **ret, size_t *n)
{
	const struct job_merge *m = ctx;
	struct jm_host *h = host_of(m, pid);
	uint64_t k = (uint64_t)(pid & JOB_REPORT_PID_MASK) << 32 | id;
	uintptr_t v = h ? (uintptr_t)keymap__get(h->stacks, &k, sizeof(k)) : 0;

	if (!v)
		return -ENOENT;
	*ret = h->stack[v - 1].frames;
	*n = h->stack[v - 1].n;
	return 0;
}

static const char *merged_name(void *ctx, uint32_t pid, uint32_t tid)
{
	const struct job_merge *m = ctx;
	struct jm_host *h = host_of(m, pid);
	uint64_t k = (uint64_t)(pid & JOB_REPORT_PID_MASK) << 32 | (tid & JOB_REPORT_PID_MASK);
	uintptr_t v = h ? (uintptr_t)keymap__get(h->threads, &k, sizeof(k)) : 0;

	return v ? h->tnames[v - 1] : NULL;
}

static const char *merged_labels(void *ctx, uint32_t pid)
{
	const struct job_merge *m = ctx;
	struct jm_host *h = host_of(m, pid);
	uint32_t p = pid & JOB_REPORT_PID_MASK;

	return h ? keymap__get(h->labels, &p, sizeof(p)) : NULL;
}

static const char *merged_device(void *ctx, uint32_t device, char *buf, size_t size)
{
	const struct job_merge *m = ctx;
	size_t h = device >> 8;

	snprintf(buf, size, "GPU %u of %s", device & 0xff,
		 h < m->nr_hosts ? m->hosts[h].name : "?");
	return buf;
}

struct job_merge *job_merge__new(const char *job)
{
	struct job_merge *m = calloc(1, sizeof(*m));

	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	if (job && job_filter__set_job(&m->job, job)) {
		free(m);
		errno = EINVAL;
		return NULL;
	}
	m->span_lo = INT64_MIN, m->span_hi = INT64_MAX;
	return m;
}

void job_merge__free(struct job_merge *m)
{
	if (!m)
		return;
	job_report__free(m->report);
	for (size_t i = 0; i < m->nr_hosts; i++)
		jm_host__free(&m->hosts[i]);
	free(m->hosts);
	free(m->gpu);
	free(m->launches);
	free(m->joins);
	free(m->samples);
	free(m->clocks);
	free(m->flow_gpu);
	free(m->flows);
	free(m);
}

/* ---- the clocks ---- */

static void shift_host(struct job_merge *m, size_t hi, int64_t d)
{
	for (size_t i = 0; i < m->nr_gpu; i++)
		if (m->gpu[i].pid >> JOB_REPORT_PID_BITS == hi) {
			m->gpu[i].start_ns = (uint64_t)((int64_t)m->gpu[i].start_ns + d);
			m->gpu[i].end_ns = (uint64_t)((int64_t)m->gpu[i].end_ns + d);
		}
	for (size_t i = 0; i < m->nr_launches; i++)
		if (m->launches[i].pid >> JOB_REPORT_PID_BITS == hi)
			m->launches[i].time_ns = (uint64_t)((int64_t)m->launches[i].time_ns + d);
	for (size_t i = 0; i < m->nr_samples; i++)
		if (m->samples[i].pid >> JOB_REPORT_PID_BITS == hi)
			m->samples[i].time_ns = (uint64_t)((int64_t)m->samples[i].time_ns + d);
	m->hosts[hi].offset += d;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median end of the collective m of host hi's ranks in job (0: none ran it there). */
static int64_t host_end(const struct jr_job *job, const struct jr_meet *mt, size_t hi)
{
	int64_t ends[64];
	size_t n = 0;

	for (size_t k = 0; k < job->nr_ranks && n < 64; k++) {
		const struct jr_coll *c = jr_coll_at(job, mt, k);

		if (c && job->ranks[k]->pid >> JOB_REPORT_PID_BITS == hi)
			ends[n++] = (int64_t)c->end;
	}
	if (!n)
		return 0;
	qsort(ends, n, sizeof(*ends), cmp_i64);
	return ends[(n - 1) / 2];
}

/* The job with the most ranks: the one whose collectives align the clocks. */
static const struct jr_job *main_job(const struct job_report *r)
{
	const struct jr_job *best = NULL;

	for (size_t j = 0; j < r->nr_jobs; j++)
		if (r->jobs[j].nr_ranks && (!best || r->jobs[j].nr_ranks > best->nr_ranks))
			best = &r->jobs[j];
	return best;
}

/*
 * Host hi's offset from the reference host ref by the collectives of job both ran: shifted
 * onto it, its clock's figures set. False when too few collectives are in common.
 */
static bool align_host(struct job_merge *m, const struct jr_job *job, size_t ref, size_t hi,
		       int64_t *d, int64_t *res)
{
	struct jm_host *h = &m->hosts[hi];
	size_t n = 0;
	int64_t est;

	for (size_t i = 0; i < job->nr_meets; i++) {
		int64_t a = host_end(job, &job->meets[i], ref), b;

		if (a && (b = host_end(job, &job->meets[i], hi)))
			d[n++] = a - b;
	}
	if (n < JOB_MERGE_MIN_COLLECTIVES)
		return false;
	qsort(d, n, sizeof(*d), cmp_i64);
	est = d[(n - 1) / 2];
	for (size_t i = 0; i < n; i++)
		res[i] = d[i] > est ? d[i] - est : est - d[i];
	qsort(res, n, sizeof(*res), cmp_i64);
	shift_host(m, hi, est);
	h->clock.error_ns = res[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1];
	if (h->clock.error_ns < JOB_MERGE_EXIT_SKEW_NS)
		h->clock.error_ns = JOB_MERGE_EXIT_SKEW_NS;
	h->clock.method = "collectives";
	h->clock.collectives = n;
	return true;
}

/* Every host's clock: first estimates, then the collectives of the report's main job. */
static int align(struct job_merge *m, const struct job_report *r, bool *moved)
{
	const struct jr_job *job = main_job(r);
	size_t ref = 0, n = job ? job->nr_meets : 0;
	int64_t *d = calloc(n + 1, sizeof(*d)), *res = calloc(n + 1, sizeof(*res));

	if (!d || !res) {
		free(d);
		free(res);
		return -ENOMEM;
	}
	if (job)
		ref = job->ranks[0]->pid >> JOB_REPORT_PID_BITS;
	*moved = false;
	for (size_t hi = 0; hi < m->nr_hosts; hi++) {
		struct jm_host *h = &m->hosts[hi];

		h->clock = (struct job_report_clock){
			.host = h->name,
			.error_ns = -1,
			.method = h->probed ? "round trip" : "wall clock",
		};
		if (hi == ref && job) {
			h->clock.method = "reference";
			h->clock.error_ns = 0;
		} else if (job && align_host(m, job, ref, hi, d, res)) {
			*moved = true;
		} else if (h->probed && m->hosts[ref].probed) {
			h->clock.error_ns =
				(int64_t)(h->probe.error_ns + m->hosts[ref].probe.error_ns);
		}
	}
	for (size_t hi = 0; hi < m->nr_hosts; hi++)
		m->hosts[hi].clock.offset_ns = m->hosts[hi].offset - m->hosts[ref].offset;
	free(d);
	free(res);
	return 0;
}

/* ---- the hosts' common time ---- */

static bool is_collective(const struct corr_gpu_rec *g)
{
	struct nccl_kernel k;

	return g->kind == CORR_GPU_KERNEL && g->name && nccl__parse(g->name, &k);
}

/* Only the work inside [lo, hi] of the job's clock (a collective: its end), its launches,
 * and the samples inside. */
static int keep_span(struct job_merge *m, int64_t lo, int64_t hi)
{
	size_t *gto = calloc(m->nr_gpu + 1, sizeof(*gto));
	bool *lkeep = calloc(m->nr_launches + 1, sizeof(*lkeep));
	size_t *lto = calloc(m->nr_launches + 1, sizeof(*lto));
	size_t n = 0;

	if (!gto || !lkeep || !lto) {
		free(gto), free(lkeep), free(lto);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &m->gpu[i];

		gto[i] = SIZE_MAX;
		/* A collective by its end, which its ranks share (their starts differ by their
		 * lateness); other work by overlap. */
		if ((int64_t)g->end_ns < lo || (int64_t)g->start_ns > hi ||
		    (is_collective(g) && (int64_t)g->end_ns > hi))
			continue;
		gto[i] = n;
		m->gpu[n++] = *g;
	}
	m->nr_gpu = n;
	for (size_t i = 0; i < m->nr_launches; i++)
		lkeep[i] = (int64_t)m->launches[i].time_ns >= lo &&
			   (int64_t)m->launches[i].time_ns <= hi;
	for (size_t i = 0; i < m->nr_joins; i++)
		lkeep[m->joins[i].launch] = gto[m->joins[i].gpu] != SIZE_MAX;
	n = 0;
	for (size_t i = 0; i < m->nr_launches; i++) {
		lto[i] = lkeep[i] ? n : SIZE_MAX;
		if (lkeep[i])
			m->launches[n++] = m->launches[i];
	}
	m->nr_launches = n;
	n = 0;
	for (size_t i = 0; i < m->nr_joins; i++) {
		struct profile_join j = m->joins[i];

		if (gto[j.gpu] != SIZE_MAX && lto[j.launch] != SIZE_MAX)
			m->joins[n++] =
				(struct profile_join){.launch = lto[j.launch], .gpu = gto[j.gpu]};
	}
	m->nr_joins = n;
	n = 0;
	for (size_t i = 0; i < m->nr_samples; i++)
		if ((int64_t)m->samples[i].time_ns >= lo && (int64_t)m->samples[i].time_ns <= hi)
			m->samples[n++] = m->samples[i];
	m->nr_samples = n;
	m->span_lo = lo, m->span_hi = hi;
	free(gto), free(lkeep), free(lto);
	return 0;
}

/*
 * The reference host's collectives' ends on the job's clock (first estimates), one per moment
 * (ranks' ends of one collective within 100 us are one); the latest first and the earliest
 * last collective of any rank (a recording may take one rank's record of a collective and
 * miss another's, delivered after it stopped).
 */
static int64_t *collective_ends(const struct job_merge *m, size_t ref, size_t *ret_n,
				int64_t *ret_from, int64_t *ret_to)
{
	int64_t *e = calloc(m->nr_gpu + 1, sizeof(*e)), *first, *last;
	struct keymap *slot = keymap__new();
	size_t n = 0, u = 0, nr = 0;

	first = calloc(m->nr_gpu + 1, sizeof(*first));
	last = calloc(m->nr_gpu + 1, sizeof(*last));
	if (!e || !slot || !first || !last)
		goto fail;
	for (size_t i = 0; i < m->nr_gpu; i++) {
		uint32_t pid = m->gpu[i].pid;
		int64_t end = (int64_t)m->gpu[i].end_ns;
		uintptr_t k;

		if (!is_collective(&m->gpu[i]))
			continue;
		if (!(k = (uintptr_t)keymap__get(slot, &pid, sizeof(pid)))) {
			if (keymap__put(slot, &pid, sizeof(pid), (void *)(uintptr_t)(nr + 1), NULL))
				goto fail;
			k = ++nr;
			first[k - 1] = last[k - 1] = end;
		}
		first[k - 1] = end < first[k - 1] ? end : first[k - 1];
		last[k - 1] = end > last[k - 1] ? end : last[k - 1];
		if (pid >> JOB_REPORT_PID_BITS == ref)
			e[n++] = end;
	}
	*ret_from = INT64_MIN, *ret_to = INT64_MAX;
	for (size_t k = 0; k < nr; k++) {
		*ret_from = first[k] > *ret_from ? first[k] : *ret_from;
		*ret_to = last[k] < *ret_to ? last[k] : *ret_to;
	}
	qsort(e, n, sizeof(*e), cmp_i64);
	for (size_t i = 0; i < n; i++)
		if (!u || e[i] - e[u - 1] > 100000)
			e[u++] = e[i];
	*ret_n = u;
	keymap__free(slot);
	free(first);
	free(last);
	return e;
fail:
	keymap__free(slot);
	free(first);
	free(last);
	free(e);
	return NULL;
}

/*
 * The span every host recorded: hosts' recordings start and stop at different moments, and
 * the k-th collective of one must meet the k-th of another. The cuts fall mid-way between two
 * of the reference host's collectives, just inside the latest first and the earliest last
 * collective of any rank, so a clock's first estimate off by less than half the spacing of
 * collectives puts each collective on the same side on every host. Work ending before the
 * start cut or starting after the end cut is left out, with the launches joined to it.
 */
static int common_span(struct job_merge *m, size_t ref)
{
	int64_t *e, lo = INT64_MIN, hi = INT64_MAX, from, to, gap;
	size_t n = 0, k;
	int err;

	if (!(e = collective_ends(m, ref, &n, &from, &to)))
		return -ENOMEM;
	if (n < 2) {
		free(e);
		return 0;
	}
	/* The spacing of collectives: the median gap between the reference host's. */
	{
		int64_t *d = calloc(n, sizeof(*d));

		if (!d) {
			free(e);
			return -ENOMEM;
		}
		for (k = 0; k + 1 < n; k++)
			d[k] = e[k + 1] - e[k];
		qsort(d, n - 1, sizeof(*d), cmp_i64);
		gap = d[(n - 2) / 2];
		free(d);
	}
	for (k = 0; k < n && e[k] < from - gap / 2; k++)
		;
	if (k < n)
		lo = k ? e[k - 1] + (e[k] - e[k - 1]) / 2 : e[k] - gap / 2;
	for (k = n; k > 0 && e[k - 1] > to + gap / 2; k--)
		;
	if (k > 0)
		hi = k < n ? e[k - 1] + (e[k] - e[k - 1]) / 2 : e[k - 1] + gap / 2;
	free(e);
	err = keep_span(m, lo, hi);
	return err;
}

/* ---- the merged profile and its report ---- */

static void fill_profile(struct job_merge *m)
{
	struct profile_data *pd = &m->pd;

	*pd = (struct profile_data){
		.sample_period_ns = 1000000000ull / 99,
		.samples = m->samples,
		.nr_samples = m->nr_samples,
		.launches = m->launches,
		.nr_launches = m->nr_launches,
		.gpu = m->gpu,
		.nr_gpu = m->nr_gpu,
		.joins = m->joins,
		.nr_joins = m->nr_joins,
		.stack = merged_stack,
		.name = merged_name,
		.ctx = m,
		.process_labels = merged_labels,
		.process_labels_ctx = m,
		.device_name = merged_device,
		.mode = GPU_MODE_MERGED,
		.unit = WEIGHT_SAMPLES,
		.realtime_offset_ns = m->epoch,
	};
	for (size_t hi = 0; hi < m->nr_hosts; hi++) {
		const struct jm_host *h = &m->hosts[hi];
		uint64_t s = (uint64_t)(h->start + h->offset), e = (uint64_t)(h->end + h->offset);

		if (!pd->start_ns || s < pd->start_ns)
			pd->start_ns = s;
		if (e > pd->end_ns)
			pd->end_ns = e;
	}
}

/* Each collective's GPU work across its ranks, in rank order: the trace's links. */
static int make_flows(struct job_merge *m)
{
	const struct job_report *r = m->report;
	size_t total = 0, used = 0;

	for (size_t j = 0; j < r->nr_jobs; j++)
		total += r->jobs[j].nr_meets * r->jobs[j].nr_ranks;
	m->flow_gpu = calloc(total + 1, sizeof(*m->flow_gpu));
	m->flows = calloc(total + 1, sizeof(*m->flows));
	if (!m->flow_gpu || !m->flows)
		return -ENOMEM;
	for (size_t j = 0; j < r->nr_jobs; j++) {
		const struct jr_job *job = &r->jobs[j];

		for (size_t i = 0; i < job->nr_meets; i++) {
			struct profile_flow *fl = &m->flows[m->nr_flows];

			fl->gpu = &m->flow_gpu[used];
			fl->name = job->meets[i].op;
			for (size_t k = 0; k < job->nr_ranks; k++) {
				const struct jr_coll *c = jr_coll_at(job, &job->meets[i], k);

				if (c)
					m->flow_gpu[used + fl->n++] = c->gpu;
			}
			used += fl->n;
			if (fl->n > 1)
				m->nr_flows++;
		}
	}
	return 0;
}

/* The host of the lowest rank (labels only: before a report). */
static size_t reference_host(const struct job_merge *m)
{
	long long best = LLONG_MAX;
	size_t ref = 0, len;

	for (size_t i = 0; i < m->nr_gpu; i++) {
		const char *set = merged_labels((void *)m, m->gpu[i].pid);
		const char *r = job_filter__label(set, "job.rank", &len);

		if (r && strtoll(r, NULL, 10) < best) {
			best = strtoll(r, NULL, 10);
			ref = m->gpu[i].pid >> JOB_REPORT_PID_BITS;
		}
	}
	return ref;
}

/* Times from the earliest host's start, whole seconds before it: the trace's microseconds
 * stay exact in a double, as wall-clock nanoseconds would not. */
static void rebase(struct job_merge *m)
{
	int64_t first = INT64_MAX;

	for (size_t hi = 0; hi < m->nr_hosts; hi++)
		if (m->hosts[hi].start + m->hosts[hi].offset < first)
			first = m->hosts[hi].start + m->hosts[hi].offset;
	if (first == INT64_MAX)
		return;
	m->epoch = first - first % 1000000000ll - 1000000000ll;
	for (size_t hi = 0; hi < m->nr_hosts; hi++)
		shift_host(m, hi, -m->epoch);
}

int job_merge__build(struct job_merge *m, const char *step)
{
	bool moved = false;
	int err;

	rebase(m);
	err = m->nr_hosts > 1 ? common_span(m, reference_host(m)) : 0;

	if (err)
		return err;
	fill_profile(m);
	err = job_report__build(&m->pd, step, &m->report);
	if (!err)
		err = align(m, m->report, &moved);
	if (!err && moved) {
		job_report__free(m->report);
		m->report = NULL;
		fill_profile(m);
		err = job_report__build(&m->pd, step, &m->report);
	}
	if (!err)
		err = make_flows(m);
	if (err)
		return err;
	m->clocks = calloc(m->nr_hosts + 1, sizeof(*m->clocks));
	if (!m->clocks)
		return -ENOMEM;
	for (size_t hi = 0; hi < m->nr_hosts; hi++)
		m->clocks[hi] = m->hosts[hi].clock;
	job_report__set_clocks(m->report, m->clocks, m->nr_hosts, m->epoch);
	if (m->span_lo != INT64_MIN || m->span_hi != INT64_MAX)
		jr_note(m->report, NULL,
			"hosts compared over the %.3f s every host recorded (their recordings started "
			"and stopped at different moments)",
			(double)(m->span_hi - m->span_lo) / 1e9);
	m->pd.flows = m->flows;
	m->pd.nr_flows = m->nr_flows;
	return 0;
}

const struct profile_data *job_merge__profile(const struct job_merge *m)
{
	return &m->pd;
}

struct job_report *job_merge__report(const struct job_merge *m)
{
	return m->report;
}

size_t job_merge__hosts(const struct job_merge *m)
{
	return m->nr_hosts;
}

size_t job_merge__processes(const struct job_merge *m)
{
	return m->processes;
}

/* ---- the straggler against the median rank ---- */

/* The samples of pid in a call tree (no process frame: the two ranks' trees compare). */
static struct calltree *tree_of(const struct job_merge *m, uint32_t pid, size_t *ret_n)
{
	struct calltree *t = calltree__new();

	*ret_n = 0;
	for (size_t i = 0; t && i < m->nr_samples; i++) {
		const char *const *fr;
		size_t n;

		if (m->samples[i].pid != pid ||
		    merged_stack((void *)m, pid, m->samples[i].stack_id, &fr, &n) || !n)
			continue;
		if (calltree__add(t, fr, n, 1)) {
			calltree__free(t);
			return NULL;
		}
		(*ret_n)++;
	}
	return t;
}

/* The first straggler finding's rank index and the rank most often median where it was late. */
static bool straggler_and_median(const struct jr_job *job, size_t *ret_s, size_t *ret_med)
{
	size_t counts[256] = {0}, best = 0;

	for (size_t i = 0; i < job->nr_findings; i++) {
		if (strcmp(job->findings[i].kind, "straggler"))
			continue;
		for (size_t k = 0; k < job->nr_ranks; k++)
			if (job->ranks[k]->rank == job->findings[i].rank)
				*ret_s = k;
		for (size_t x = 0; x < job->nr_meets; x++) {
			const struct jr_meet *mt = &job->meets[x];

			if (mt->late && mt->last_rank == *ret_s && mt->median_rank < 256)
				counts[mt->median_rank]++;
		}
		for (size_t k = 0; k < job->nr_ranks && k < 256; k++)
			if (counts[k] > counts[best])
				best = k;
		*ret_med = best;
		return counts[best] > 0;
	}
	return false;
}

int job_merge__straggler(const struct job_merge *m, struct job_merge_straggler *ret)
{
	const struct jr_job *job = m->report ? main_job(m->report) : NULL;
	struct calltree *a = NULL, *b = NULL;
	struct diff *d = NULL;
	size_t s = 0, med = 0, na = 0, nb = 0;
	int err = -ENOENT;

	if (!job || !straggler_and_median(job, &s, &med))
		return -ENOENT;
	a = tree_of(m, job->ranks[med]->pid, &na);
	b = tree_of(m, job->ranks[s]->pid, &nb);
	if (!a || !b)
		err = -ENOMEM;
	else if (na && nb && !(d = diff__new(a, b)))
		err = -errno;
	else if (d)
		err = 0;
	if (err) {
		calltree__free(a);
		calltree__free(b);
		return err;
	}
	*ret = (struct job_merge_straggler){
		.diff = d,
		.rank = job->ranks[s]->rank,
		.median_rank = job->ranks[med]->rank,
		.samples = nb,
		.median_samples = na,
		.trees = {a, b},
	};
	return 0;
}

void job_merge_straggler__release(struct job_merge_straggler *st)
{
	if (!st)
		return;
	diff__free(st->diff);
	calltree__free(st->trees[0]);
	calltree__free(st->trees[1]);
	memset(st, 0, sizeof(*st));
}
