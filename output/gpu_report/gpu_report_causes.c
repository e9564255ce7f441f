// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/base/keymap.h"
#include "daemon/base/sort.h"
#include "daemon/base/strset.h"
#include "daemon/base/vec.h"
#include "output/gpu_report/gpu_memory.h"
#include "output/gpu_report/gpu_report.h"
#include "output/gpu_report/gpu_report_internal.h"
#include "output/model/json_string.h"
#include "output/model/profile.h"

/* Why the GPU idled: each gap explained by a cause and blamed on the CPU stack behind it; NVTX
 * ranges' share of busy and idle time. */

int gr_blame(struct gpu_report *r, enum gpu_idle_cause cause, uint32_t device, uint32_t pid,
	     uint32_t tid, uint32_t stack_id, const char *api, uint64_t ns, bool new_gap)
{
	struct blame_key key = {cause, device, pid, stack_id, api};
	void *v = r->last_blame && !memcmp(&key, &r->last_blame_key, sizeof(key))
			  ? (void *)r->last_blame
			  : keymap__get(r->blame_ix, &key, sizeof(key));
	struct blame *b;

	if (!v) {
		if (vec_reserve(&r->blames, &r->cap_blames, r->nr_blames + 1) ||
		    keymap__put(r->blame_ix, &key, sizeof(key), (void *)(r->nr_blames + 1), NULL))
			return -ENOMEM;
		r->blames[r->nr_blames] = (struct blame){.cause = cause,
							 .device = device,
							 .pid = pid,
							 .stack_id = stack_id,
							 .api = api,
							 .tid = tid};
		v = (void *)(++r->nr_blames);
	}
	r->last_blame_key = key;
	r->last_blame = (size_t)v;
	b = &r->blames[(size_t)v - 1];
	b->ns += ns;
	b->gaps += new_gap;
	return 0;
}

/* Samples of tid in [from, to], through the (tid, time) index: the first one's position. */
size_t gr_first_sample(const struct gpu_report *r, uint32_t tid, uint64_t from)
{
	const struct profile_data *pd = r->pd;
	size_t lo = 0, hi = pd->nr_samples;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct profile_sample *s = &pd->samples[r->samples[mid]];

		if (s->tid < tid || (s->tid == tid && s->time_ns < from))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The host was elsewhere: blame what its launching thread was sampled doing in the gap. */
static int blame_host(struct gpu_report *r, const struct device *d, const struct corr_cpu_rec *l,
		      uint64_t from, uint64_t ns)
{
	const struct profile_data *pd = r->pd;
	uint32_t device = d->device;
	size_t i, k = 0;
	uint64_t chained = 0;
	int err = 0;

	/* Waits of the thread the chains that woke it explain: blamed where their time went. */
	if (r->woken) {
		err = gr_blame_chains(r, (size_t)(d - r->dev), l, from, ns, &chained);
		if (err || chained >= ns)
			return err;
		ns -= chained;
	}
	i = gr_first_sample(r, l->tid, from);
	for (size_t j = i; j < pd->nr_samples; j++, k++) {
		const struct profile_sample *s = &pd->samples[r->samples[j]];

		if (s->tid != l->tid || s->time_ns > l->time_ns)
			break;
	}
	if (!k) { /* no sample in the gap: spread as the thread's sampled gaps (gr_unsampled()) */
		if (vec_reserve(&r->unsampled, &r->cap_unsampled, r->nr_unsampled + 1))
			return -ENOMEM;
		r->unsampled[r->nr_unsampled++] =
			(struct unsampled){device, l->pid, l->tid, l->stack_id, ns};
		return 0;
	}
	for (size_t j = 0; j < k && !err; j++) {
		const struct profile_sample *s = &pd->samples[r->samples[i + j]];
		uint64_t part = ns / k + (j < ns % k);

		err = gr_blame(r, GPU_IDLE_HOST, device, s->pid, s->tid, s->stack_id, NULL, part,
			       j == 0);
	}
	return err;
}

/*
 * Host gaps no sample fell in (short gaps at a low frequency: at 19 Hz most 25 ms gaps) are
 * where the process's sampled host gaps on that device were, in the same shares: sampling is a
 * random draw of where the thread spends such gaps, so the time goes to the stacks the draw
 * found rather than to the launch that ended the gap. A process with no sampled host gap on
 * the device: the launch's own stack, where the thread was last seen.
 */
int gr_unsampled(struct gpu_report *r)
{
	size_t n = r->nr_blames;
	uint64_t *was = malloc((n ? n : 1) * sizeof(*was));
	int err = was ? 0 : -ENOMEM;

	for (size_t i = 0; i < n && !err; i++)
		was[i] = r->blames[i].cause == GPU_IDLE_HOST ? r->blames[i].ns : 0;
	for (size_t u = 0; u < r->nr_unsampled && !err; u++) {
		const struct unsampled *x = &r->unsampled[u];
		uint64_t total = 0, given = 0;
		size_t last = n;

		for (size_t i = 0; i < n; i++)
			if (was[i] && r->blames[i].device == x->device &&
			    r->blames[i].pid == x->pid) {
				total += was[i];
				last = i;
			}
		if (!total) {
			err = gr_blame(r, GPU_IDLE_HOST, x->device, x->pid, x->tid, x->stack_id,
				       NULL, x->ns, true);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			uint64_t part;

			if (!was[i] || r->blames[i].device != x->device ||
			    r->blames[i].pid != x->pid)
				continue;
			part = i == last
				       ? x->ns - given
				       : (uint64_t)((double)x->ns * (double)was[i] / (double)total);
			r->blames[i].ns += part;
			given += part;
		}
	}
	free(was);
	return err;
}

/* The latest wait of pid that returned within [from - slack, to], or NULL. */
static const struct profile_wait *sync_before(const struct gpu_report *r, uint32_t pid,
					      uint64_t from, uint64_t to)
{
	const struct profile_data *pd = r->pd;
	const struct profile_wait *best = NULL;
	uint64_t lo_t = from > GPU_REPORT_SYNC_SLACK_NS ? from - GPU_REPORT_SYNC_SLACK_NS : 0;
	size_t lo = 0, hi = pd->nr_waits;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct profile_wait *w = &pd->waits[r->waits[mid]];

		if (w->pid < pid || (w->pid == pid && w->end_ns < lo_t))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < pd->nr_waits; lo++) {
		const struct profile_wait *w = &pd->waits[r->waits[lo]];

		if (w->pid != pid || w->end_ns > to)
			break;
		best = w;
	}
	return best;
}

static int cmp_nvtx(const void *a, const void *b)
{
	const struct nvtx_range *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->s < y->s ? -1 : x->s > y->s;
}

static int cmp_pass(const void *a, const void *b)
{
	const struct profile_pass *x = *(const struct profile_pass *const *)a,
				  *y = *(const struct profile_pass *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* The NVTX ranges (and xsprof scopes) of the profile, by thread, each with its statistics'
 * entry (ranges of one domain and name share one). Marks (no duration) are left out. */
int gr_index_ranges(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;
	struct keymap *names = keymap__new();
	size_t n = r->nr_of_kind[CORR_GPU_NVTX]; /* at most */
	int err = names ? 0 : -ENOMEM;

	r->nvtx = calloc(n ? n : 1, sizeof(*r->nvtx));
	if (!r->nvtx)
		err = -ENOMEM;
	for (size_t i = 0; n && i < pd->nr_gpu && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		const char *dom = g->domain ? g->domain : "", *name = g->name ? g->name : "?";
		char key[512];
		size_t len;
		void *v;

		if (g->kind != CORR_GPU_NVTX || g->end_ns <= g->start_ns)
			continue;
		len = (size_t)snprintf(key, sizeof(key), "%s%c%s", dom, 0, name);
		len = len < sizeof(key) ? len : sizeof(key) - 1;
		v = keymap__get(names, key, len);
		if (!v) {
			if (vec_reserve(&r->ranges, &r->cap_ranges, r->nr_ranges + 1) ||
			    keymap__put(names, key, len, (void *)(r->nr_ranges + 1), NULL)) {
				err = -ENOMEM;
				break;
			}
			r->ranges[r->nr_ranges] =
				(struct range_stat){.domain = g->domain, .name = name};
			v = (void *)(++r->nr_ranges);
		}
		r->nvtx[r->nr_nvtx++] =
			(struct nvtx_range){g->pid, g->tid, g->start_ns, g->end_ns, (size_t)v - 1};
	}
	keymap__free(names);
	gr_sort(r->nvtx, r->nr_nvtx, sizeof(*r->nvtx), cmp_nvtx);
	if (!err && r->nr_nvtx && pd->nr_passes) {
		r->passes = calloc(pd->nr_passes, sizeof(*r->passes));
		if (!r->passes)
			return -ENOMEM;
		for (size_t i = 0; i < pd->nr_passes; i++)
			r->passes[r->nr_passes++] = &pd->passes[i];
		gr_sort(r->passes, r->nr_passes, sizeof(*r->passes), cmp_pass);
	}
	return err;
}

/* The innermost range thread tid of pid was in at t (the latest begun that has not ended), or
 * NULL. */
static struct range_stat *range_at(struct gpu_report *r, uint32_t pid, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = r->nr_nvtx;

	/* The first range of the thread that began after t. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct nvtx_range *x = &r->nvtx[mid];

		if (x->pid < pid ||
		    (x->pid == pid && (x->tid < tid || (x->tid == tid && x->s <= t))))
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0) {
		const struct nvtx_range *x = &r->nvtx[lo];

		if (x->pid != pid || x->tid != tid)
			break;
		if (x->e > t)
			return &r->ranges[x->stat];
	}
	return NULL;
}

/* How far back a lookup of the backward pass at a time looks past passes already ended
 * (passes of one process overlap only when several threads call backward() at once). */
#define PASS_LOOKBACK 64

/* The thread whose backward() call (the latest begun) was open in pid at t, when it is not
 * tid itself: tid works for it (an engine thread). 0: none. */
static uint32_t pass_caller(const struct gpu_report *r, uint32_t pid, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = r->nr_passes, seen = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct profile_pass *x = r->passes[mid];

		if (x->pid < pid || (x->pid == pid && x->start_ns <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo-- > 0 && seen++ < PASS_LOOKBACK) {
		const struct profile_pass *x = r->passes[lo];

		if (x->pid != pid)
			break;
		if (x->end_ns > t)
			return x->tid != tid ? x->tid : 0;
	}
	return 0;
}

/* The range work that thread tid of pid did at t counts in: the innermost range of its own,
 * else (an autograd engine thread) that of the thread whose backward pass it worked for. */
static struct range_stat *work_range(struct gpu_report *r, uint32_t pid, uint32_t tid, uint64_t t)
{
	struct range_stat *rs = range_at(r, pid, tid, t);
	uint32_t caller;

	if (rs || !r->nr_passes)
		return rs;
	caller = pass_caller(r, pid, tid, t);
	return caller ? range_at(r, pid, caller, t) : NULL;
}

/* The gap's idle time to the range its launching thread was in when the gap began. */
static void idle_in_range(struct gpu_report *r, const struct corr_cpu_rec *l, uint64_t s,
			  enum gpu_idle_cause c, uint64_t ns)
{
	struct range_stat *rs = l && r->nr_nvtx ? work_range(r, l->pid, l->tid, s) : NULL;

	if (rs)
		rs->idle[c] += ns;
}

/* GPU work by the range its launch was made in; GPU memory by the range it was allocated in. */
void gr_work_in_ranges(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;

	if (!r->nr_nvtx)
		return;
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		const struct corr_cpu_rec *l;
		struct range_stat *rs;

		if (!gr_is_work(g) || !r->launch_of[i] || g->end_ns <= g->start_ns)
			continue;
		l = &pd->launches[r->launch_of[i] - 1];
		rs = work_range(r, l->pid, l->tid, l->time_ns);
		if (rs)
			rs->gpu_ns += g->end_ns - g->start_ns;
	}
	for (size_t i = 0; i < pd->nr_mem; i++) {
		const struct profile_mem *m = &pd->mem[i];
		struct range_stat *rs;

		if (m->is_free || m->failed)
			continue;
		rs = work_range(r, m->pid, m->tid, m->time_ns);
		if (rs)
			rs->allocated += m->bytes;
	}
}

uint64_t gr_range_idle(const struct range_stat *x)
{
	uint64_t sum = 0;

	for (int c = 0; c < GPU_IDLE_NR; c++)
		sum += x->idle[c];
	return sum;
}

int gr_cmp_range(const void *a, const void *b)
{
	const struct range_stat *x = a, *y = b;
	uint64_t ix = gr_range_idle(x) + x->gpu_ns, iy = gr_range_idle(y) + y->gpu_ns;

	if (ix != iy)
		return ix > iy ? -1 : 1;
	return strcmp(x->name, y->name);
}

size_t gpu_report__gap_bucket(uint64_t ns)
{
	size_t b = 0;

	while (b < NR_GAP_BUCKETS - 1 && ns >= gr_gap_le_ns[b])
		b++;
	return b;
}

/* One idle stretch [s, e) of a device, ended by the work pd->gpu[next]. */
int gr_explain_gap(struct gpu_report *r, struct device *d, uint64_t s, uint64_t e, size_t next)
{
	const struct profile_data *pd = r->pd;
	const struct corr_gpu_rec *g = &pd->gpu[next];
	const struct corr_cpu_rec *l =
		r->launch_of[next] ? &pd->launches[r->launch_of[next] - 1] : NULL;
	const struct profile_wait *w;
	uint64_t ns = e - s;

	d->nr_gaps++;
	d->idle += ns;
	if (ns > d->longest_gap)
		d->longest_gap = ns;
	d->hist[gpu_report__gap_bucket(ns)]++;
	if (!l) {
		d->idle_by[GPU_IDLE_UNKNOWN] += ns;
		return gr_blame(r, GPU_IDLE_UNKNOWN, d->device, g->pid, 0, CORR_NO_STACK, NULL, ns,
				true);
	}
	/* Launched before the gap: it started as soon as a launch can (latency), or it waited. */
	if (l->time_ns <= s && e - l->time_ns > GPU_REPORT_LAUNCH_GAP_NS) {
		d->idle_by[GPU_IDLE_DEPENDENCY] += ns;
		idle_in_range(r, l, s, GPU_IDLE_DEPENDENCY, ns);
		return gr_blame(r, GPU_IDLE_DEPENDENCY, d->device, l->pid, l->tid, l->stack_id,
				NULL, ns, true);
	}
	w = sync_before(r, l->pid, s, l->time_ns);
	if (w) {
		d->idle_by[GPU_IDLE_SYNC] += ns;
		idle_in_range(r, l, s, GPU_IDLE_SYNC, ns);
		return gr_blame(r, GPU_IDLE_SYNC, d->device, w->pid, w->tid, w->stack_id, w->api,
				ns, true);
	}
	if (ns < GPU_REPORT_LAUNCH_GAP_NS || l->time_ns <= s) {
		d->idle_by[GPU_IDLE_LAUNCH] += ns;
		idle_in_range(r, l, s, GPU_IDLE_LAUNCH, ns);
		return gr_blame(r, GPU_IDLE_LAUNCH, d->device, l->pid, l->tid, l->stack_id, NULL,
				ns, true);
	}
	d->idle_by[GPU_IDLE_HOST] += ns;
	idle_in_range(r, l, s, GPU_IDLE_HOST, ns);
	return blame_host(r, d, l, s, ns);
}

/* Busy ns of [s, e) into the device's bins. */
