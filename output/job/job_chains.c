// SPDX-License-Identifier: Apache-2.0
/*
 * A late rank's host gaps followed through wait chains (profile_data.woken, recorded with
 * --wakers): of the time its launching thread took before launching while its GPU waited,
 * the stretches it spent off the CPU and the chains of threads that woke it; the heaviest
 * chain by that time, and its last thread's samples from when it began running to when it
 * woke the next one, which are where the wait's time went.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/gpu_report/gpu_report.h"
#include "output/job/job_report_internal.h"
#include "output/model/frame_names.h"

#define MAX_CHAINS 32 /* distinct chains told apart per rank; more count as chained only */

static int cmp_woken(const void *a, const void *b, void *ctx)
{
	const struct profile_data *pd = ctx;
	const struct profile_woken *x = &pd->woken[*(const size_t *)a];
	const struct profile_woken *y = &pd->woken[*(const size_t *)b];

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

int jr_index_woken(struct job_report *r)
{
	const struct profile_data *pd = r->pd;

	if (!pd->nr_woken || !pd->hops)
		return 0;
	if (!(r->woken = malloc(pd->nr_woken * sizeof(size_t))))
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_woken; i++)
		r->woken[i] = i;
	qsort_r(r->woken, pd->nr_woken, sizeof(size_t), cmp_woken, (void *)pd);
	return 0;
}

/* The first of r->woken of tid that ends after t (a thread's stretches do not overlap). */
static size_t first_woken(const struct job_report *r, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = r->pd->nr_woken;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct profile_woken *w = &r->pd->woken[r->woken[mid]];

		if (w->tid < tid || (w->tid == tid && w->end_ns <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct acc {
	const struct job_report *r;
	uint32_t pid;
	struct jr_chain c[MAX_CHAINS];
	size_t n;
	uint64_t gap_ns, chained_ns;
	struct jr_chain *want; /* the second walk: its last hop's samples */
	size_t counted;	       /* 1 + the r->woken index whose work was counted last */
};

static bool same_chain(const struct profile_data *pd, const struct profile_woken *w,
		       const struct jr_chain *c)
{
	uint32_t n = w->nr_hops < JR_MAX_HOPS ? w->nr_hops : JR_MAX_HOPS;

	if (n != c->nr_hops)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_hop *h = &pd->hops[w->first_hop + i];

		if (h->pid != c->hop_pid[i] || h->tid != c->hop_tid[i])
			return false;
	}
	return true;
}

static struct jr_chain *chain_of(struct acc *a, const struct profile_woken *w)
{
	const struct profile_data *pd = a->r->pd;
	struct jr_chain *c;

	for (size_t i = 0; i < a->n; i++)
		if (same_chain(pd, w, &a->c[i]))
			return &a->c[i];
	if (a->n == MAX_CHAINS)
		return NULL;
	c = &a->c[a->n++];
	c->nr_hops = w->nr_hops < JR_MAX_HOPS ? w->nr_hops : JR_MAX_HOPS;
	for (uint32_t i = 0; i < c->nr_hops; i++) {
		c->hop_pid[i] = pd->hops[w->first_hop + i].pid;
		c->hop_tid[i] = pd->hops[w->first_hop + i].tid;
	}
	c->wait_stack = CORR_NO_STACK;
	return c;
}

/* The last hop's samples from when it began running (else the wait's start) to when it woke
 * the next thread. */
static void count_work(struct acc *a, const struct profile_woken *w)
{
	const struct job_report *r = a->r;
	const struct profile_hop *h = &r->pd->hops[w->first_hop + w->nr_hops - 1];
	uint64_t from = h->run_ns ? h->run_ns : w->start_ns;

	if (!r->samples)
		return;
	for (size_t i = jr_first_sample(r, h->tid, from); i < r->pd->nr_samples; i++) {
		const struct profile_sample *sm = &r->pd->samples[r->samples[i]];

		if (sm->tid != h->tid || sm->time_ns > h->wake_ns)
			break;
		if (sm->pid == h->pid)
			jr_tally_add(&a->want->work, sm->stack_id);
	}
}

/* A piece of the late rank's work: the host part of the gap before it, as the report's causes
 * take it (explain_gap), and the chained waits of its launching thread inside. */
static void add_gap(void *ctx, size_t gpu, bool is_coll, uint64_t gap_s, uint64_t gap_e, uint64_t s,
		    uint64_t e)
{
	struct acc *a = ctx;
	const struct job_report *r = a->r;
	uint64_t host_end;
	const struct corr_cpu_rec *l = jr_host_part(r, gpu, gap_s, gap_e, &host_end);

	(void)is_coll, (void)s, (void)e;
	if (!l || host_end - gap_s < GPU_REPORT_LAUNCH_GAP_NS)
		return;
	if (!a->want)
		a->gap_ns += host_end - gap_s;
	for (size_t i = first_woken(r, l->tid, gap_s); i < r->pd->nr_woken; i++) {
		const struct profile_woken *w = &r->pd->woken[r->woken[i]];
		uint64_t lo = w->start_ns > gap_s ? w->start_ns : gap_s;
		uint64_t hi = w->end_ns < host_end ? w->end_ns : host_end;
		struct jr_chain *c;

		if (w->tid != l->tid || w->start_ns >= host_end)
			break;
		if (w->pid != l->pid || !w->nr_hops || hi <= lo)
			continue;
		if (a->want) {
			/* A wait over two gaps is counted once. */
			if (same_chain(r->pd, w, a->want) && a->counted != i + 1)
				count_work(a, w);
			a->counted = i + 1;
			continue;
		}
		a->chained_ns += hi - lo;
		if (!(c = chain_of(a, w)))
			continue;
		c->ns += hi - lo;
		if (hi - lo > c->wait_longest) {
			c->wait_longest = hi - lo;
			c->wait_stack = w->stack_id;
			c->wait_pid = w->pid;
			c->wait_tid = w->tid;
		}
	}
}

/* Each late collective of rank k's segment walked with a. */
static void walk_late(const struct job_report *r, const struct jr_job *job, size_t k, struct acc *a)
{
	for (size_t i = 0; i < job->nr_meets; i++) {
		const struct jr_meet *m = &job->meets[i];
		const struct jr_coll *c = jr_coll_at(job, m, k);

		if (m->late && m->last_rank == k)
			jr_walk_segment(r, job->ranks[k], c,
					c == job->ranks[k]->colls ? 0 : (c - 1)->pos + 1, add_gap,
					a);
	}
}

int jr_chains(const struct job_report *r, const struct jr_job *job, size_t k, struct jr_chain **ret)
{
	struct acc *a;
	size_t best = 0;

	*ret = NULL;
	if (!r->woken)
		return 0;
	if (!(a = calloc(1, sizeof(*a))))
		return -ENOMEM;
	a->r = r;
	walk_late(r, job, k, a);
	if (!a->chained_ns) {
		free(a);
		return 0;
	}
	for (size_t i = 1; i < a->n; i++)
		if (a->c[i].ns > a->c[best].ns)
			best = i;
	if (a->n) {
		a->want = &a->c[best];
		walk_late(r, job, k, a);
	}
	if (!(*ret = malloc(sizeof(**ret)))) {
		free(a);
		return -ENOMEM;
	}
	**ret = a->n ? a->c[best] : (struct jr_chain){.wait_stack = CORR_NO_STACK};
	(*ret)->gap_ns = a->gap_ns;
	(*ret)->chained_ns = a->chained_ns;
	free(a);
	return 0;
}

void jr_chain_why(const struct job_report *r, struct jr_chain *c)
{
	const struct profile_data *pd = r->pd;
	const char *const *fr = NULL;
	const char *pname = NULL;
	uint32_t last = c->nr_hops - 1;
	char wait[512] = "a wait";
	size_t n = 0;
	int len;

	if (c->wait_stack != CORR_NO_STACK && pd->stack &&
	    !pd->stack(pd->ctx, c->wait_pid, c->wait_stack, &fr, &n) && n)
		frame__wait_site(fr, n, wait, sizeof(wait));
	if (pd->name)
		pname = pd->name(pd->ctx, c->hop_pid[last], 0);
	len = snprintf(c->why, sizeof(c->why),
		       "the launching thread waited in %s, woken by %s %u (thread %u) through %u "
		       "thread%s",
		       wait, pname ? pname : "pid", c->hop_pid[last] & JOB_REPORT_PID_MASK,
		       c->hop_tid[last] & JOB_REPORT_PID_MASK, c->nr_hops,
		       c->nr_hops == 1 ? "" : "s");
	if (len > 0 && (size_t)len < sizeof(c->why) && c->work_frame)
		snprintf(c->why + len, sizeof(c->why) - (size_t)len,
			 ", whose time went to %s %.0f%%", c->work_frame, 100 * c->work_share);
}
