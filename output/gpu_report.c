// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/base/sort.h"
#include "daemon/base/keymap.h"
#include "daemon/base/strset.h"
#include "daemon/base/vec.h"
#include "output/chrome_trace.h"
#include "output/gpu_memory.h"
#include "output/gpu_report.h"
#include "output/gpu_report_internal.h"
#include "output/profile.h"

#define TOP		 10 /* kernels, idle causes, syncs listed */
#define TEXT_FRAMES	 8  /* innermost frames a text report shows of a stack */
#define COUNTER_BIN_NS	 (10 * MS)
#define MAX_COUNTER_EVTS 200000 /* queue-depth changes per device in a trace */

/* Upper bounds of the gap histogram's buckets (the last is open). */
static const uint64_t gap_le_ns[NR_GAP_BUCKETS - 1] = {10000, 100000, MS, 10 * MS, 100 * MS};
static const char *const gap_label[NR_GAP_BUCKETS] = {"<10us", "<100us", "<1ms",
						      "<10ms", "<100ms", ">=100ms"};
static const char *const cause_names[GPU_IDLE_NR] = {"host", "launch", "sync", "dependency",
						     "unknown"};

static bool is_work(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_KERNEL || g->kind == CORR_GPU_MEMCPY ||
	       g->kind == CORR_GPU_MEMSET;
}

static bool is_comm(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_KERNEL && g->name && strcasestr(g->name, "nccl");
}

/* qsort, for arrays that may be empty (and NULL): qsort must not be given NULL. */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static void free_val(const void *key, size_t len, void *val, void *ctx)
{
	(void)key;
	(void)len;
	(void)ctx;
	free(val);
}

/* The counter under key in m, a new one at 0, or NULL without memory (free_val frees them). */
static uint64_t *counter_of(struct keymap *m, const void *key, size_t len)
{
	uint64_t *c = keymap__get(m, key, len);

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (c && keymap__put(m, key, len, c, NULL)) {
		free(c);
		c = NULL;
	}
	return c;
}

static int cmp_work(const void *a, const void *b)
{
	const struct work *x = a, *y = b;

	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return x->e < y->e ? -1 : x->e > y->e;
}

static const struct profile_data *sort_pd; /* qsort has no context argument in C11 */

static int cmp_sample(const void *a, const void *b)
{
	const struct profile_sample *x = &sort_pd->samples[*(const size_t *)a];
	const struct profile_sample *y = &sort_pd->samples[*(const size_t *)b];

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

static int cmp_wait(const void *a, const void *b)
{
	const struct profile_wait *x = &sort_pd->waits[*(const size_t *)a];
	const struct profile_wait *y = &sort_pd->waits[*(const size_t *)b];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

static size_t *sorted_index(size_t n, int (*cmp)(const void *, const void *),
			    const struct profile_data *pd)
{
	size_t *v = malloc((n ? n : 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = i;
	sort_pd = pd;
	sort(v, n, sizeof(*v), cmp);
	return v;
}

static uint64_t percentile(const uint64_t *sorted, size_t n, unsigned int pct)
{
	return n ? sorted[(n - 1) * pct / 100] : 0;
}

static struct device *device_of(struct gpu_report *r, uint32_t device)
{
	for (size_t i = 0; i < r->nr_dev; i++)
		if (r->dev[i].device == device)
			return &r->dev[i];
	if (vec_reserve(&r->dev, &r->cap_dev, r->nr_dev + 1))
		return NULL;
	r->dev[r->nr_dev] = (struct device){.device = device, .first = UINT64_MAX};
	gpu_clock__init(&r->dev[r->nr_dev].clock);
	return &r->dev[r->nr_dev++];
}

static struct stream_stat *stream_of(struct gpu_report *r, uint32_t device, uint32_t stream)
{
	for (size_t i = 0; i < r->nr_streams; i++)
		if (r->streams[i].device == device && r->streams[i].stream == stream)
			return &r->streams[i];
	if (vec_reserve(&r->streams, &r->cap_streams, r->nr_streams + 1))
		return NULL;
	r->streams[r->nr_streams] = (struct stream_stat){.device = device, .stream = stream};
	return &r->streams[r->nr_streams++];
}

/* The frames of a stack, copied (the resolver reuses its array). */
static int frames_of(const struct profile_data *pd, uint32_t pid, uint32_t stack_id,
		     const char ***ret, size_t *ret_n)
{
	const char *const *frames;
	size_t n;

	*ret = NULL;
	*ret_n = 0;
	if (stack_id == CORR_NO_STACK || !pd->stack ||
	    pd->stack(pd->ctx, pid, stack_id, &frames, &n) || !n)
		return 0;
	*ret = malloc(n * sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	memcpy(*ret, frames, n * sizeof(**ret));
	*ret_n = n;
	return 0;
}

static int blame(struct gpu_report *r, enum gpu_idle_cause cause, uint32_t device, uint32_t pid,
		 uint32_t tid, uint32_t stack_id, const char *api, uint64_t ns, bool new_gap)
{
	struct {
		uint32_t cause, device, pid, stack_id;
		const char *api;
	} key = {cause, device, pid, stack_id, api};
	void *v = keymap__get(r->blame_ix, &key, sizeof(key));
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
	b = &r->blames[(size_t)v - 1];
	b->ns += ns;
	b->gaps += new_gap;
	return 0;
}

/* Samples of tid in [from, to], through the (tid, time) index: the first one's position. */
static size_t first_sample(const struct gpu_report *r, uint32_t tid, uint64_t from)
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
static int blame_host(struct gpu_report *r, uint32_t device, const struct corr_cpu_rec *l,
		      uint64_t from, uint64_t ns)
{
	const struct profile_data *pd = r->pd;
	size_t i = first_sample(r, l->tid, from), k = 0;
	int err = 0;

	for (size_t j = i; j < pd->nr_samples; j++, k++) {
		const struct profile_sample *s = &pd->samples[r->samples[j]];

		if (s->tid != l->tid || s->time_ns > l->time_ns)
			break;
	}
	if (!k) { /* no sample in the gap: spread as the thread's sampled gaps (unsampled()) */
		if (vec_reserve(&r->unsampled, &r->cap_unsampled, r->nr_unsampled + 1))
			return -ENOMEM;
		r->unsampled[r->nr_unsampled++] =
			(struct unsampled){device, l->pid, l->tid, l->stack_id, ns};
		return 0;
	}
	for (size_t j = 0; j < k && !err; j++) {
		const struct profile_sample *s = &pd->samples[r->samples[i + j]];
		uint64_t part = ns / k + (j < ns % k);

		err = blame(r, GPU_IDLE_HOST, device, s->pid, s->tid, s->stack_id, NULL, part,
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
static int unsampled(struct gpu_report *r)
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
			err = blame(r, GPU_IDLE_HOST, x->device, x->pid, x->tid, x->stack_id, NULL,
				    x->ns, true);
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

/* The NVTX ranges (and xsprof scopes) of the profile, by thread, each with its statistics'
 * entry (ranges of one domain and name share one). Marks (no duration) are left out. */
static int index_ranges(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;
	struct keymap *names = keymap__new();
	size_t n = 0;
	int err = names ? 0 : -ENOMEM;

	for (size_t i = 0; i < pd->nr_gpu; i++)
		n += pd->gpu[i].kind == CORR_GPU_NVTX && pd->gpu[i].end_ns > pd->gpu[i].start_ns;
	r->nvtx = calloc(n ? n : 1, sizeof(*r->nvtx));
	if (!r->nvtx)
		err = -ENOMEM;
	for (size_t i = 0; i < pd->nr_gpu && !err; i++) {
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
	sort(r->nvtx, r->nr_nvtx, sizeof(*r->nvtx), cmp_nvtx);
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

/* The gap's idle time to the range its launching thread was in when the gap began. */
static void idle_in_range(struct gpu_report *r, const struct corr_cpu_rec *l, uint64_t s,
			  enum gpu_idle_cause c, uint64_t ns)
{
	struct range_stat *rs = l && r->nr_nvtx ? range_at(r, l->pid, l->tid, s) : NULL;

	if (rs)
		rs->idle[c] += ns;
}

/* GPU work by the range its launch was made in; GPU memory by the range it was allocated in. */
static void work_in_ranges(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;

	if (!r->nr_nvtx)
		return;
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		const struct corr_cpu_rec *l;
		struct range_stat *rs;

		if (!is_work(g) || !r->launch_of[i] || g->end_ns <= g->start_ns)
			continue;
		l = &pd->launches[r->launch_of[i] - 1];
		rs = range_at(r, l->pid, l->tid, l->time_ns);
		if (rs)
			rs->gpu_ns += g->end_ns - g->start_ns;
	}
	for (size_t i = 0; i < pd->nr_mem; i++) {
		const struct profile_mem *m = &pd->mem[i];
		struct range_stat *rs;

		if (m->is_free || m->failed)
			continue;
		rs = range_at(r, m->pid, m->tid, m->time_ns);
		if (rs)
			rs->allocated += m->bytes;
	}
}

static uint64_t range_idle(const struct range_stat *x)
{
	uint64_t sum = 0;

	for (int c = 0; c < GPU_IDLE_NR; c++)
		sum += x->idle[c];
	return sum;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range_stat *x = a, *y = b;
	uint64_t ix = range_idle(x) + x->gpu_ns, iy = range_idle(y) + y->gpu_ns;

	if (ix != iy)
		return ix > iy ? -1 : 1;
	return strcmp(x->name, y->name);
}

size_t gpu_report__gap_bucket(uint64_t ns)
{
	size_t b = 0;

	while (b < NR_GAP_BUCKETS - 1 && ns >= gap_le_ns[b])
		b++;
	return b;
}

/* One idle stretch [s, e) of a device, ended by the work pd->gpu[next]. */
static int explain_gap(struct gpu_report *r, struct device *d, uint64_t s, uint64_t e, size_t next)
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
		return blame(r, GPU_IDLE_UNKNOWN, d->device, g->pid, 0, CORR_NO_STACK, NULL, ns,
			     true);
	}
	/* Launched before the gap: it started as soon as a launch can (latency), or it waited. */
	if (l->time_ns <= s && e - l->time_ns > GPU_REPORT_LAUNCH_GAP_NS) {
		d->idle_by[GPU_IDLE_DEPENDENCY] += ns;
		idle_in_range(r, l, s, GPU_IDLE_DEPENDENCY, ns);
		return blame(r, GPU_IDLE_DEPENDENCY, d->device, l->pid, l->tid, l->stack_id, NULL,
			     ns, true);
	}
	w = sync_before(r, l->pid, s, l->time_ns);
	if (w) {
		d->idle_by[GPU_IDLE_SYNC] += ns;
		idle_in_range(r, l, s, GPU_IDLE_SYNC, ns);
		return blame(r, GPU_IDLE_SYNC, d->device, w->pid, w->tid, w->stack_id, w->api, ns,
			     true);
	}
	if (ns < GPU_REPORT_LAUNCH_GAP_NS || l->time_ns <= s) {
		d->idle_by[GPU_IDLE_LAUNCH] += ns;
		idle_in_range(r, l, s, GPU_IDLE_LAUNCH, ns);
		return blame(r, GPU_IDLE_LAUNCH, d->device, l->pid, l->tid, l->stack_id, NULL, ns,
			     true);
	}
	d->idle_by[GPU_IDLE_HOST] += ns;
	idle_in_range(r, l, s, GPU_IDLE_HOST, ns);
	return blame_host(r, d->device, l, s, ns);
}

/* Busy ns of [s, e) into the device's bins. */
static void add_busy(struct device *d, uint64_t s, uint64_t e)
{
	d->busy += e - s;
	while (s < e && d->nr_bins) {
		size_t i = (size_t)((s - d->first) / d->bin_ns);
		uint64_t bin_end = d->first + (i + 1) * d->bin_ns, to = e < bin_end ? e : bin_end;

		if (i >= d->nr_bins)
			i = d->nr_bins - 1;
		d->bins[i] += to - s;
		s = to;
	}
}

/* Length of the intersection of two sorted, merged interval lists. */
static uint64_t overlap(const struct work *a, size_t na, const struct work *b, size_t nb)
{
	uint64_t sum = 0;

	for (size_t i = 0, j = 0; i < na && j < nb;) {
		uint64_t s = a[i].s > b[j].s ? a[i].s : b[j].s,
			 e = a[i].e < b[j].e ? a[i].e : b[j].e;

		if (e > s)
			sum += e - s;
		if (a[i].e < b[j].e)
			i++;
		else
			j++;
	}
	return sum;
}

/* Merge sorted intervals in place; returns the count left. */
static size_t merge(struct work *w, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (k && w[i].s <= w[k - 1].e) {
			if (w[i].e > w[k - 1].e)
				w[k - 1].e = w[i].e;
			continue;
		}
		w[k++] = w[i];
	}
	return k;
}

static int communication(struct device *d, const struct profile_data *pd, const struct work *w,
			 size_t n)
{
	struct work *comm = malloc((n ? n : 1) * sizeof(*comm));
	struct work *comp = malloc((n ? n : 1) * sizeof(*comp));
	size_t nc = 0, np = 0;

	if (!comm || !comp) {
		free(comm);
		free(comp);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (is_comm(&pd->gpu[w[i].gpu]))
			comm[nc++] = w[i];
		else
			comp[np++] = w[i];
	}
	if (nc) {
		nc = merge(comm, nc);
		np = merge(comp, np);
		for (size_t i = 0; i < nc; i++)
			d->comm_ns += comm[i].e - comm[i].s;
		d->comm_overlap_ns = overlap(comm, nc, comp, np);
	}
	free(comm);
	free(comp);
	return 0;
}

/* A device's work (sorted by start): busy, gaps explained, utilisation, communication. */
static int device_facts(struct gpu_report *r, struct device *d, struct work *w, size_t n)
{
	const struct profile_data *pd = r->pd;
	uint64_t end = 0;
	int err;

	d->first = w[0].s;
	for (size_t i = 0; i < n; i++)
		if (w[i].e > d->last)
			d->last = w[i].e;
	d->bin_ns = S;
	if ((d->last - d->first) / S >= MAX_BINS)
		d->bin_ns = (d->last - d->first) / MAX_BINS + 1;
	d->nr_bins = (size_t)((d->last - d->first + d->bin_ns - 1) / d->bin_ns);
	if (!d->nr_bins)
		d->nr_bins = 1;
	d->bins = calloc(d->nr_bins, sizeof(*d->bins));
	if (!d->bins)
		return -ENOMEM;
	err = communication(d, pd, w, n);
	for (size_t i = 0; i < n && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[w[i].gpu];

		d->kernels += g->kind == CORR_GPU_KERNEL;
		d->copies += g->kind == CORR_GPU_MEMCPY;
		d->memsets += g->kind == CORR_GPU_MEMSET;
		if (i && w[i].s > end)
			err = explain_gap(r, d, end, w[i].s, w[i].gpu);
		if (w[i].e > end) {
			add_busy(d, w[i].s > end ? w[i].s : end, w[i].e);
			end = w[i].e;
		}
	}
	return err;
}

static int devices(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;
	struct work *w = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*w));
	int err = 0;

	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_gpu && !err; i++)
		if (is_work(&pd->gpu[i]) && pd->gpu[i].end_ns > pd->gpu[i].start_ns &&
		    !device_of(r, pd->gpu[i].device))
			err = -ENOMEM;
	for (size_t k = 0; k < r->nr_dev && !err; k++) {
		size_t n = 0;

		for (size_t i = 0; i < pd->nr_gpu; i++) {
			const struct corr_gpu_rec *g = &pd->gpu[i];

			if (is_work(g) && g->end_ns > g->start_ns && g->device == r->dev[k].device)
				w[n++] = (struct work){g->start_ns, g->end_ns, i};
		}
		sort(w, n, sizeof(*w), cmp_work);
		err = device_facts(r, &r->dev[k], w, n);
		if (!err)
			err = gpu_clock__measure(pd, r->launch_of, r->dev[k].device,
						 &r->dev[k].clock);
	}
	free(w);
	return err;
}

/* Launch-to-start delay per stream, and the kernels by name with their heaviest stack. */
static int joined_facts(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;
	struct keymap *names = keymap__new(), *stacks = keymap__new();
	int err = names && stacks ? 0 : -ENOMEM;

	for (size_t i = 0; i < pd->nr_gpu && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		const struct corr_cpu_rec *l =
			r->launch_of[i] ? &pd->launches[r->launch_of[i] - 1] : NULL;
		struct stream_stat *st;
		uint64_t dur = g->end_ns > g->start_ns ? g->end_ns - g->start_ns : 0;

		if (!is_work(g))
			continue;
		st = stream_of(r, g->device, g->stream_id);
		if (!st)
			return -ENOMEM;
		st->work++;
		if (l) {
			if (vec_reserve(&st->delay, &st->cap, st->n + 1))
				err = -ENOMEM;
			else
				st->delay[st->n++] =
					g->start_ns > l->time_ns ? g->start_ns - l->time_ns : 0;
		}
		if (g->kind == CORR_GPU_KERNEL && !err) {
			const char *name = g->name ? g->name : "[kernel]";
			void *v = keymap__get(names, name, strlen(name));
			struct kernel_stat *k;
			struct {
				uint64_t kernel;
				uint32_t pid, stack_id;
			} key;
			uint64_t *acc;

			if (!v) {
				const void *copy;

				if (vec_reserve(&r->kernels, &r->cap_kernels, r->nr_kernels + 1) ||
				    keymap__put(names, name, strlen(name),
						(void *)(r->nr_kernels + 1), &copy)) {
					err = -ENOMEM;
					break;
				}
				r->kernels[r->nr_kernels] = (struct kernel_stat){.name = name};
				v = (void *)(++r->nr_kernels);
			}
			k = &r->kernels[(size_t)v - 1];
			k->count++;
			k->total += dur;
			if (dur > k->max)
				k->max = dur;
			if (!l)
				continue;
			key.kernel = (size_t)v;
			key.pid = l->pid;
			key.stack_id = l->stack_id;
			acc = counter_of(stacks, &key, sizeof(key));
			if (!acc) {
				err = -ENOMEM;
				break;
			}
			*acc += dur;
			if (*acc > k->stack_ns) {
				k->stack_ns = *acc;
				k->pid = l->pid;
				k->stack_id = l->stack_id;
			}
		}
	}
	if (stacks)
		keymap__for_each(stacks, free_val, NULL);
	keymap__free(stacks);
	keymap__free(names);
	return err;
}

static int cmp_stream(const void *a, const void *b)
{
	const struct stream_stat *x = a, *y = b;

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return x->stream < y->stream ? -1 : x->stream > y->stream;
}

/* Each stream's delays: mean, p50, p99, max (and, for a kept report, their histogram). */
static int stream_delays(struct gpu_report *r, bool keep)
{
	for (size_t i = 0; i < r->nr_streams; i++) {
		struct stream_stat *st = &r->streams[i];

		sort(st->delay, st->n, sizeof(*st->delay), cmp_u64);
		st->sum = 0;
		for (size_t k = 0; k < st->n; k++)
			st->sum += st->delay[k];
		st->mean = st->n ? st->sum / st->n : 0;
		st->p50 = percentile(st->delay, st->n, 50);
		st->p99 = percentile(st->delay, st->n, 99);
		st->max = st->n ? st->delay[st->n - 1] : 0;
		if (!keep)
			continue;
		st->hist = calloc(HIST_BUCKETS, sizeof(*st->hist));
		if (!st->hist)
			return -ENOMEM;
		for (size_t k = 0; k < st->n; k++)
			gpu_hist__add(st->hist, st->delay[k]);
		free(st->delay); /* the histogram stands for them now */
		st->delay = NULL;
		st->cap = 0;
	}
	sort(r->streams, r->nr_streams, sizeof(*r->streams), cmp_stream);
	return 0;
}

struct klaunch {
	uint32_t tid;
	uint64_t t, dur;
};

static int cmp_klaunch(const void *a, const void *b)
{
	const struct klaunch *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* Kernels against their launch interval, the launch rate, the time in launch calls (and, for
 * a kept report, the histograms of kernel durations and launch intervals). */
static int launch_facts(struct gpu_report *r, bool keep)
{
	const struct profile_data *pd = r->pd;
	struct launch_facts *lf = &r->launch;
	struct klaunch *k = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*k));
	uint64_t *iv = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*iv));
	uint64_t *dur = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*dur));
	struct keymap *api = keymap__new();
	uint64_t first = UINT64_MAX, last = 0;
	size_t n = 0, ni = 0;
	int err = 0;

	if (!k || !iv || !dur || !api) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		const struct corr_cpu_rec *l;

		if (g->kind != CORR_GPU_KERNEL || !r->launch_of[i])
			continue;
		l = &pd->launches[r->launch_of[i] - 1];
		k[n] = (struct klaunch){l->tid, l->time_ns,
					g->end_ns > g->start_ns ? g->end_ns - g->start_ns : 0};
		dur[n] = k[n].dur;
		n++;
		first = l->time_ns < first ? l->time_ns : first;
		last = l->time_ns > last ? l->time_ns : last;
	}
	sort(k, n, sizeof(*k), cmp_klaunch);
	for (size_t i = 0; i + 1 < n; i++) {
		if (k[i].tid != k[i + 1].tid)
			continue;
		iv[ni++] = k[i + 1].t - k[i].t;
		lf->shorter += k[i].dur < k[i + 1].t - k[i].t;
	}
	sort(iv, ni, sizeof(*iv), cmp_u64);
	sort(dur, n, sizeof(*dur), cmp_u64);
	lf->kernels = n;
	lf->intervals = ni;
	lf->median_kernel_ns = percentile(dur, n, 50);
	lf->median_interval_ns = percentile(iv, ni, 50);
	lf->rate_per_s = n > 1 && last > first ? (double)(n - 1) * 1e9 / (double)(last - first) : 0;
	lf->first_ns = n ? first : 0;
	lf->last_ns = last;
	if (keep) {
		lf->kernel_hist = calloc(HIST_BUCKETS, sizeof(*lf->kernel_hist));
		lf->interval_hist = calloc(HIST_BUCKETS, sizeof(*lf->interval_hist));
		if (!lf->kernel_hist || !lf->interval_hist) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			gpu_hist__add(lf->kernel_hist, dur[i]);
		for (size_t i = 0; i < ni; i++)
			gpu_hist__add(lf->interval_hist, iv[i]);
	}
	/* Time in launch calls: API records the report can name are launch APIs. */
	for (size_t i = 0; i < pd->nr_gpu && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		uint64_t *acc;

		if ((g->kind != CORR_GPU_RUNTIME_API && g->kind != CORR_GPU_DRIVER_API) ||
		    !g->name || g->end_ns <= g->start_ns)
			continue;
		acc = counter_of(api, &g->tid, sizeof(g->tid));
		if (!acc) {
			err = -ENOMEM;
			break;
		}
		*acc += g->end_ns - g->start_ns;
		if (*acc > lf->api_ns) {
			lf->api_ns = *acc;
			lf->api_tid = g->tid;
		}
	}
out:
	if (api)
		keymap__for_each(api, free_val, NULL);
	keymap__free(api);
	free(k);
	free(iv);
	free(dur);
	return err;
}

/* Which copy finding a copy counts for: 0 pageable async, 1 blocking, -1 neither. */
static int copy_class(const struct corr_gpu_rec *g)
{
	if (!(g->flags & CORR_GPU_F_ASYNC))
		return 1;
	if (g->host_mem == CORR_HOST_MEM_PAGEABLE &&
	    (g->copy_kind == CORR_COPY_HTOD || g->copy_kind == CORR_COPY_DTOH))
		return 0;
	return -1;
}

/* The launching stack of most copy time, per copy finding. */
static int copy_stacks(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;
	struct keymap *m = keymap__new();
	int err = m ? 0 : -ENOMEM;

	for (size_t i = 0; i < pd->nr_gpu && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		const struct corr_cpu_rec *l;
		struct {
			uint32_t cls, pid, stack_id;
		} key;
		struct blame *b;
		uint64_t *acc;

		if (g->kind != CORR_GPU_MEMCPY || !r->launch_of[i] || copy_class(g) < 0)
			continue;
		l = &pd->launches[r->launch_of[i] - 1];
		key.cls = (uint32_t)copy_class(g);
		key.pid = l->pid;
		key.stack_id = l->stack_id;
		acc = counter_of(m, &key, sizeof(key));
		if (!acc) {
			err = -ENOMEM;
			break;
		}
		*acc += g->end_ns > g->start_ns ? g->end_ns - g->start_ns : 1;
		b = &r->copy_blame[key.cls];
		if (*acc > b->ns)
			*b = (struct blame){.cause = GPU_IDLE_NR,
					    .device = g->device,
					    .pid = l->pid,
					    .tid = l->tid,
					    .stack_id = l->stack_id,
					    .ns = *acc};
	}
	if (m)
		keymap__for_each(m, free_val, NULL);
	keymap__free(m);
	return err;
}

static void copy_facts(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;

	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		struct copy_stat *c;
		bool async = g->flags & CORR_GPU_F_ASYNC;

		if (g->kind != CORR_GPU_MEMCPY || g->copy_kind > CORR_COPY_PTOP ||
		    g->host_mem > CORR_HOST_MEM_PINNED)
			continue;
		c = &r->copies[(g->copy_kind * 3 + g->host_mem) * 2 + async];
		c->dir = g->copy_kind;
		c->host_mem = g->host_mem;
		c->async = async;
		c->count++;
		c->bytes += g->bytes;
		c->ns += g->end_ns > g->start_ns ? g->end_ns - g->start_ns : 0;
	}
}

static int cmp_blame(const void *a, const void *b)
{
	const struct blame *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->cause < y->cause ? -1 : x->cause > y->cause;
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct kernel_stat *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The heaviest blame of a cause on a device (blames are sorted), or NULL. */
static const struct blame *top_blame(const struct gpu_report *r, enum gpu_idle_cause c,
				     uint32_t device)
{
	for (size_t i = 0; i < r->nr_blames; i++)
		if (r->blames[i].cause == c && r->blames[i].device == device)
			return &r->blames[i];
	return NULL;
}

static struct finding *finding(struct gpu_report *r, const char *kind, double share,
			       uint32_t device, const char *advice)
{
	struct finding *f;

	if (r->nr_findings >= sizeof(r->findings) / sizeof(r->findings[0]))
		return NULL;
	f = &r->findings[r->nr_findings++];
	*f = (struct finding){.kind = kind,
			      .severity = share >= 0.4	  ? "high"
					  : share >= 0.15 ? "medium"
							  : "low",
			      .advice = advice,
			      .device = device};
	return f;
}

static void point_at(struct finding *f, const struct blame *b);

/* At least this share of a cause's time must run through a frame for its path to go on. */
#define DOMINANT_SHARE 0.8

/*
 * The frames most of a cause's time on a device runs through, outermost first: from the root,
 * each next frame is the one DOMINANT_SHARE of the cause's time was blamed under, so the path
 * stops where the time splits (the loop in the user's function, the line that calls it) rather
 * than at one sample's leaf, which may be any syscall the loop makes. 0 or -ENOMEM; *ret_n 0
 * when the blames share no root.
 */
static int dominant_path(struct gpu_report *r, enum gpu_idle_cause c, uint32_t device, uint32_t pid,
			 const char ***ret, size_t *ret_n)
{
	size_t *in = malloc((r->nr_blames ? r->nr_blames : 1) * sizeof(*in)), n = 0, depth = 0;
	const char **path = NULL;
	size_t cap = 0;
	uint64_t total = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!in)
		return -ENOMEM;
	for (size_t i = 0; i < r->nr_blames; i++)
		if (r->blames[i].cause == c && r->blames[i].device == device &&
		    r->blames[i].pid == pid) {
			in[n++] = i;
			total += r->blames[i].ns;
		}
	while (n && total) {
		const char *best = NULL;
		uint64_t best_ns = 0;
		size_t k = 0;

		/* The heaviest frame at this depth (a few candidates: blames sorted, heavy first). */
		for (size_t i = 0; i < n; i++) {
			const struct blame *b = &r->blames[in[i]];
			uint64_t sum = 0;

			if (b->nr_frames <= depth || (best && !strcmp(best, b->frames[depth])))
				continue;
			for (size_t j = 0; j < n; j++) {
				const struct blame *o = &r->blames[in[j]];

				if (o->nr_frames > depth &&
				    !strcmp(o->frames[depth], b->frames[depth]))
					sum += o->ns;
			}
			if (sum > best_ns) {
				best_ns = sum;
				best = b->frames[depth];
			}
			if (best_ns * 2 > total)
				break; /* a majority: no other frame can beat it */
		}
		if (!best || (double)best_ns < DOMINANT_SHARE * (double)total)
			break;
		if (vec_reserve(&path, &cap, depth + 1)) {
			free(in);
			free(path);
			return -ENOMEM;
		}
		path[depth++] = best;
		for (size_t i = 0; i < n; i++)
			if (r->blames[in[i]].nr_frames > depth - 1 &&
			    !strcmp(r->blames[in[i]].frames[depth - 1], best))
				in[k++] = in[i];
		n = k;
	}
	free(in);
	*ret = path;
	*ret_n = depth;
	return 0;
}

/* The finding points at the dominant path of the top blame's process (its stack when none). */
static void point_at_path(struct gpu_report *r, struct finding *f, enum gpu_idle_cause c,
			  uint32_t device)
{
	const struct blame *b = top_blame(r, c, device);
	const char **path;
	size_t n;

	if (!b)
		return;
	point_at(f, b);
	if (r->nr_paths >= sizeof(r->paths) / sizeof(r->paths[0]) ||
	    dominant_path(r, c, device, b->pid, &path, &n) || !n)
		return;
	r->paths[r->nr_paths++] = path;
	f->frames = path;
	f->nr_frames = n;
}

/* The finding points at a blame's stack (NULL: at none). */
static void point_at(struct finding *f, const struct blame *b)
{
	if (!b)
		return;
	f->pid = b->pid;
	f->api = b->api;
	f->frames = (const char *const *)b->frames;
	f->nr_frames = b->nr_frames;
}

static void fig_ns(struct finding *f, const char *key, uint64_t ns)
{
	if (f->nr_fig < sizeof(f->fig) / sizeof(f->fig[0]))
		f->fig[f->nr_fig++] = (struct figure){.key = key, .u = ns};
}

static void fig_ratio(struct finding *f, const char *key, double v)
{
	if (f->nr_fig < sizeof(f->fig) / sizeof(f->fig[0]))
		f->fig[f->nr_fig++] = (struct figure){.key = key, .is_ratio = true, .d = v};
}

static double share_of(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0;
}

/* The GPU's times are off the CPU's by more than GPU_REPORT_CLOCK_SKEW_NS: work that starts
 * before its launch, or a device-wide synchronize that returns before its work ended. */
static void clock_finding(struct gpu_report *r, const struct device *d)
{
	const struct gpu_clock *c = &d->clock;
	const int64_t skew = (int64_t)GPU_REPORT_CLOCK_SKEW_NS;
	bool early = c->leads && c->lead_min_ns < -skew;
	bool late = c->drains && c->drain_min_ns < -skew;
	struct finding *f;

	if ((!early && !late) ||
	    !(f = finding(
		      r, "clock_skew", 1, d->device,
		      "The GPU's times (CUPTI's conversion of the device clock) and the CPU's "
		      "(BPF, CLOCK_MONOTONIC) disagree, so gaps and launch delays are off by as "
		      "much. Check that the injection library set CUPTI's timestamp callback "
		      "(XSPROF_CUPTI_VERBOSE=1 says which clock it records), and that the "
		      "machine's clocksource is stable (dmesg: clocksource).")))
		return;
	snprintf(f->summary, sizeof(f->summary),
		 "device %u: its times read at least %.1f us %s the CPU's (%s)", d->device,
		 (early ? -c->lead_min_ns : -c->drain_min_ns) / 1e3, early ? "early" : "late",
		 early ? "work started before the call that launched it"
		       : "a device synchronize returned before its work ended");
	fig_ns(f, "launches", c->leads);
	if (c->leads)
		fig_ratio(f, "launch_to_start_min_ns", (double)c->lead_min_ns);
	fig_ns(f, "syncs", c->drains);
	if (c->drains)
		fig_ratio(f, "sync_return_after_end_min_ns", (double)c->drain_min_ns);
}

static void device_findings(struct gpu_report *r, const struct device *d)
{
	uint64_t active = d->last - d->first;
	const struct launch_facts *lf = &r->launch;
	double util = share_of(d->busy, active);
	struct finding *f;

	if (active < 10 * MS)
		return; /* too little to judge */
	if (share_of(d->idle_by[GPU_IDLE_HOST], active) >= 0.2 &&
	    (f = finding(r, "host_bound", share_of(d->idle_by[GPU_IDLE_HOST], active), d->device,
			 "The GPU waited while the thread that feeds it did other work (the stack "
			 "below). Prepare the next batch ahead of time (a DataLoader with "
			 "num_workers > 0 and prefetching), move this work to another thread or "
			 "process, or onto the GPU."))) {
		point_at_path(r, f, GPU_IDLE_HOST, d->device);
		snprintf(f->summary, sizeof(f->summary),
			 "device %u idled %.1f%% of its active time while the host was not "
			 "submitting work",
			 d->device, 100 * share_of(d->idle_by[GPU_IDLE_HOST], active));
		fig_ns(f, "idle_ns", d->idle_by[GPU_IDLE_HOST]);
		fig_ns(f, "active_ns", active);
		fig_ratio(f, "share", share_of(d->idle_by[GPU_IDLE_HOST], active));
	}
	if (lf->kernels >= 200 && lf->median_kernel_ns < lf->median_interval_ns &&
	    share_of(lf->shorter, lf->intervals) >= 0.5 &&
	    share_of(d->idle_by[GPU_IDLE_LAUNCH] + d->idle_by[GPU_IDLE_HOST], active) >= 0.2 &&
	    (f = finding(
		     r, "launch_bound", 1 - util, d->device,
		     "Kernels finish faster than the host launches them: the GPU waits on "
		     "launch overhead. Fuse small kernels (torch.compile), capture the loop in "
		     "a CUDA graph (torch.cuda.CUDAGraph, cudaGraphLaunch), or give each kernel "
		     "more work (larger batches)."))) {
		point_at_path(r, f,
			      top_blame(r, GPU_IDLE_LAUNCH, d->device) ? GPU_IDLE_LAUNCH
								       : GPU_IDLE_HOST,
			      d->device);
		snprintf(f->summary, sizeof(f->summary),
			 "%.0f%% of %" PRIu64 " kernels ran shorter than the time between "
			 "their launches (median %.1f us vs %.1f us)",
			 100 * share_of(lf->shorter, lf->intervals), lf->kernels,
			 lf->median_kernel_ns / 1e3, lf->median_interval_ns / 1e3);
		fig_ns(f, "median_kernel_ns", lf->median_kernel_ns);
		fig_ns(f, "median_launch_interval_ns", lf->median_interval_ns);
		fig_ns(f, "kernels", lf->kernels);
		fig_ratio(f, "launches_per_s", lf->rate_per_s);
		fig_ratio(f, "utilisation", util);
	}
	if (share_of(d->idle_by[GPU_IDLE_SYNC], active) >= 0.1 &&
	    (f = finding(r, "sync_bound", share_of(d->idle_by[GPU_IDLE_SYNC], active), d->device,
			 "The host waits for the GPU to finish, then the GPU waits for the host's "
			 "next launch. Remove the synchronisation from the loop or make it rarer: "
			 ".item(), .cpu(), printing a tensor, torch.cuda.synchronize(), blocking "
			 "copies; use non_blocking=True copies and CUDA events."))) {
		point_at_path(r, f, GPU_IDLE_SYNC, d->device);
		snprintf(f->summary, sizeof(f->summary),
			 "device %u idled %.1f%% of its active time after synchronising calls",
			 d->device, 100 * share_of(d->idle_by[GPU_IDLE_SYNC], active));
		fig_ns(f, "idle_ns", d->idle_by[GPU_IDLE_SYNC]);
		fig_ns(f, "active_ns", active);
		fig_ratio(f, "share", share_of(d->idle_by[GPU_IDLE_SYNC], active));
	}
	if (share_of(d->idle_by[GPU_IDLE_DEPENDENCY], active) >= 0.1 &&
	    (f = finding(r, "dependency_bound", share_of(d->idle_by[GPU_IDLE_DEPENDENCY], active),
			 d->device,
			 "Work was launched but waited for other work (an event, another stream or "
			 "device) while the device idled. Check cross-stream waits and the order "
			 "work is queued in."))) {
		point_at_path(r, f, GPU_IDLE_DEPENDENCY, d->device);
		snprintf(f->summary, sizeof(f->summary),
			 "device %u idled %.1f%% of its active time with work queued behind a "
			 "dependency",
			 d->device, 100 * share_of(d->idle_by[GPU_IDLE_DEPENDENCY], active));
		fig_ns(f, "idle_ns", d->idle_by[GPU_IDLE_DEPENDENCY]);
		fig_ratio(f, "share", share_of(d->idle_by[GPU_IDLE_DEPENDENCY], active));
	}
	if (d->comm_ns >= active / 20 && share_of(d->comm_overlap_ns, d->comm_ns) < 0.5 &&
	    (f = finding(r, "communication_exposed",
			 share_of(d->comm_ns - d->comm_overlap_ns, active), d->device,
			 "Communication kernels (NCCL) mostly ran alone: overlap them with "
			 "computation (DDP bucketing, async collectives)."))) {
		snprintf(f->summary, sizeof(f->summary),
			 "device %u: %.0f%% of its communication time overlapped computation",
			 d->device, 100 * share_of(d->comm_overlap_ns, d->comm_ns));
		fig_ns(f, "communication_ns", d->comm_ns);
		fig_ns(f, "overlap_ns", d->comm_overlap_ns);
	}
	clock_finding(r, d);
	if (util < 0.5 && (f = finding(r, "low_utilisation", 1 - util, d->device,
				       "The device was busy less than half of the time between its "
				       "first and last work: see its idle time by cause."))) {
		snprintf(f->summary, sizeof(f->summary), "device %u was busy %.1f%% of %.3f s",
			 d->device, 100 * util, active / 1e9);
		fig_ns(f, "busy_ns", d->busy);
		fig_ns(f, "active_ns", active);
		fig_ratio(f, "utilisation", util);
	}
}

/* Copies: pageable host memory behind an async copy, and blocking copies. */
static void copy_findings(struct gpu_report *r, uint64_t active)
{
	uint64_t pg_n = 0, pg_bytes = 0, pg_ns = 0, sync_n = 0, sync_ns = 0;
	struct finding *f;

	for (size_t i = 0; i < sizeof(r->copies) / sizeof(r->copies[0]); i++) {
		const struct copy_stat *c = &r->copies[i];

		if (c->async && c->host_mem == CORR_HOST_MEM_PAGEABLE &&
		    (c->dir == CORR_COPY_HTOD || c->dir == CORR_COPY_DTOH)) {
			pg_n += c->count;
			pg_bytes += c->bytes;
			pg_ns += c->ns;
		}
		if (!c->async && c->count) {
			sync_n += c->count;
			sync_ns += c->ns;
		}
	}
	if (pg_n && (pg_bytes >= (1u << 20) || pg_ns >= active / 100) &&
	    (f = finding(r, "pageable_copy", share_of(pg_ns, active), 0,
			 "Asynchronous copies from or to pageable host memory are staged through "
			 "a pinned buffer and do not overlap: pin the host memory (pin_memory=True "
			 "in the DataLoader, tensor.pin_memory(), cudaHostAlloc)."))) {
		point_at(f, r->copy_blame[0].ns ? &r->copy_blame[0] : NULL);
		snprintf(f->summary, sizeof(f->summary),
			 "%" PRIu64 " asynchronous copies (%.1f MiB) used pageable host memory",
			 pg_n, pg_bytes / 1048576.0);
		fig_ns(f, "copies", pg_n);
		fig_ns(f, "bytes", pg_bytes);
		fig_ns(f, "copy_ns", pg_ns);
		fig_ratio(f, "gb_per_s", pg_ns ? (double)pg_bytes / (double)pg_ns : 0);
	}
	if (sync_n >= 10 &&
	    (f = finding(r, "synchronous_copy", share_of(sync_ns, active), 0,
			 "Blocking copies hold the host until the GPU is done: use "
			 "cudaMemcpyAsync (non_blocking=True) from pinned memory."))) {
		point_at(f, r->copy_blame[1].ns ? &r->copy_blame[1] : NULL);
		snprintf(f->summary, sizeof(f->summary),
			 "%" PRIu64 " blocking copies took %.1f ms of GPU time", sync_n,
			 sync_ns / 1e6);
		fig_ns(f, "copies", sync_n);
		fig_ns(f, "copy_ns", sync_ns);
	}
}

/*
 * Blames whose stacks read the same (a stack kept twice: walked, then reused; one stack in
 * two recordings' tables) made one, so each line of the report is a different place.
 */
int gpu_report__merge_blames(struct gpu_report *r)
{
	struct keymap *m = keymap__new();
	char *key = NULL;
	size_t cap = 0, k = 0, i;
	int err = m ? 0 : -ENOMEM;

	for (i = 0; i < r->nr_blames && !err; i++) {
		struct blame *b = &r->blames[i];
		size_t len = 0, need = 64 + (b->api ? strlen(b->api) : 0);
		void *v;

		for (size_t f = 0; f < b->nr_frames; f++)
			need += strlen(b->frames[f]) + 1;
		if (vec_reserve(&key, &cap, need)) {
			err = -ENOMEM;
			break; /* b is not moved: freed below */
		}
		len = (size_t)snprintf(key, cap, "%u|%u|%u|%s|", b->cause, b->device, b->pid,
				       b->api ? b->api : "");
		for (size_t f = 0; f < b->nr_frames; f++)
			len += (size_t)snprintf(key + len, cap - len, "%s;", b->frames[f]);
		v = keymap__get(m, key, len);
		if (v) {
			r->blames[(size_t)v - 1].ns += b->ns;
			r->blames[(size_t)v - 1].gaps += b->gaps;
			free(b->frames);
			continue;
		}
		if (keymap__put(m, key, len, (void *)(k + 1), NULL)) {
			err = -ENOMEM;
			break;
		}
		r->blames[k++] = *b;
	}
	for (; err && i < r->nr_blames; i++) /* not moved: their frames go now */
		free(r->blames[i].frames);
	r->nr_blames = k;
	free(key);
	keymap__free(m);
	sort(r->blames, r->nr_blames, sizeof(*r->blames), cmp_blame);
	return err;
}

static void point_at_place(struct finding *f, const struct gpu_mem_stack *s)
{
	f->pid = s->pid;
	f->api = s->api;
	f->frames = s->frames;
	f->nr_frames = s->nr_frames;
}

/* GPU memory still allocated at the end, and allocations that failed. */
static void memory_findings(struct gpu_report *r)
{
	for (size_t i = 0; r->mem && i < r->mem->nr_procs; i++) {
		const struct gpu_mem_proc *p = &r->mem->procs[i];
		struct finding *f;

		if (p->failed &&
		    (f = finding(
			     r, "allocation_failed", 1, p->device > 0 ? (uint32_t)p->device : 0,
			     "A GPU allocation failed: usually out of memory. See what was live "
			     "at the peak; free caches (torch.cuda.empty_cache()), lower the batch "
			     "size, or let PyTorch's allocator grow in place "
			     "(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)."))) {
			snprintf(f->summary, sizeof(f->summary),
				 "%" PRIu64 " GPU allocation%s of process %u on device %d failed",
				 p->failed, p->failed == 1 ? "" : "s", p->pid, p->device);
			fig_ns(f, "failed", p->failed);
			fig_ns(f, "peak_bytes", p->peak);
			if (p->failed_at)
				point_at_place(f, p->failed_at);
		}
		if (p->end >= (1u << 20) && p->nr_at_end &&
		    (f = finding(
			     r, "memory_unfreed", share_of(p->end, p->peak),
			     p->device > 0 ? (uint32_t)p->device : 0,
			     "GPU memory allocated here was still allocated when the profile ended: "
			     "at the process's exit, a leak (or memory the driver frees for it); "
			     "while it runs, memory held on purpose (weights, caches) or growth to "
			     "check."))) {
			snprintf(f->summary, sizeof(f->summary),
				 "%.1f MiB of process %u's memory on device %d (%" PRIu64
				 " allocations) was never freed, %.1f MiB from the place below",
				 p->end / 1048576.0, p->pid, p->device, p->end_allocs,
				 p->at_end[0]->live / 1048576.0);
			fig_ns(f, "bytes", p->end);
			fig_ns(f, "allocations", p->end_allocs);
			fig_ns(f, "peak_bytes", p->peak);
			point_at_place(f, p->at_end[0]);
		}
	}
}

static int resolve_frames(struct gpu_report *r)
{
	int err = 0;

	for (size_t i = 0; i < r->nr_blames && !err; i++)
		err = frames_of(r->pd, r->blames[i].pid, r->blames[i].stack_id,
				&r->blames[i].frames, &r->blames[i].nr_frames);
	if (!err)
		err = gpu_report__merge_blames(r);
	for (size_t i = 0; i < 2 && !err; i++)
		if (r->copy_blame[i].ns)
			err = frames_of(r->pd, r->copy_blame[i].pid, r->copy_blame[i].stack_id,
					&r->copy_blame[i].frames, &r->copy_blame[i].nr_frames);
	for (size_t i = 0; i < r->nr_kernels && !err; i++)
		if (r->kernels[i].stack_ns)
			err = frames_of(r->pd, r->kernels[i].pid, r->kernels[i].stack_id,
					&r->kernels[i].frames, &r->kernels[i].nr_frames);
	return err;
}

static int index_inputs(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;

	r->launch_of = calloc(pd->nr_gpu ? pd->nr_gpu : 1, sizeof(*r->launch_of));
	r->samples = sorted_index(pd->nr_samples, cmp_sample, pd);
	r->waits = sorted_index(pd->nr_waits, cmp_wait, pd);
	r->blame_ix = keymap__new();
	if (!r->launch_of || !r->samples || !r->waits || !r->blame_ix)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_joins; i++)
		if (pd->joins[i].gpu < pd->nr_gpu && pd->joins[i].launch < pd->nr_launches)
			r->launch_of[pd->joins[i].gpu] = pd->joins[i].launch + 1;
	return 0;
}

int gpu_report__facts(struct gpu_report *r, const struct profile_data *pd, bool keep)
{
	int err;

	r->pd = pd;
	r->start_ns = pd->start_ns;
	r->end_ns = pd->end_ns;
	err = index_inputs(r);
	if (!err)
		err = index_ranges(r);
	if (!err)
		err = devices(r);
	if (!err)
		err = unsampled(r);
	if (!err)
		err = joined_facts(r);
	if (!err)
		err = launch_facts(r, keep);
	if (!err)
		err = copy_stacks(r);
	if (!err)
		err = stream_delays(r, keep);
	if (err)
		return err;
	copy_facts(r);
	work_in_ranges(r);
	err = resolve_frames(r); /* blames merged by their frames, heaviest first */
	/* The indexes into pd are of no more use. */
	free(r->launch_of);
	free(r->samples);
	free(r->waits);
	free(r->nvtx);
	keymap__free(r->blame_ix);
	free(r->unsampled);
	r->unsampled = NULL;
	r->nr_unsampled = r->cap_unsampled = 0;
	r->launch_of = r->samples = r->waits = NULL;
	r->nvtx = NULL;
	r->nr_nvtx = 0;
	r->blame_ix = NULL;
	return err;
}

/* A merged report's percentiles, medians and rate, from its histograms. */
static void approximate(struct gpu_report *r)
{
	struct launch_facts *lf = &r->launch;

	for (size_t i = 0; i < r->nr_streams; i++) {
		struct stream_stat *st = &r->streams[i];

		if (!st->approx || !st->hist)
			continue;
		st->mean = st->n ? st->sum / st->n : 0;
		st->p50 = st->n ? gpu_hist__at(st->hist, st->n, (st->n - 1) * 50 / 100) : 0;
		st->p99 = st->n ? gpu_hist__at(st->hist, st->n, (st->n - 1) * 99 / 100) : 0;
		if (st->p50 > st->max)
			st->p50 = st->max;
		if (st->p99 > st->max)
			st->p99 = st->max;
	}
	if (!lf->approx || !lf->kernel_hist || !lf->interval_hist)
		return;
	lf->median_kernel_ns =
		lf->kernels ? gpu_hist__at(lf->kernel_hist, lf->kernels, (lf->kernels - 1) / 2) : 0;
	lf->median_interval_ns = lf->intervals ? gpu_hist__at(lf->interval_hist, lf->intervals,
							      (lf->intervals - 1) / 2)
					       : 0;
	lf->rate_per_s =
		lf->kernels > 1 && lf->last_ns > lf->first_ns
			? (double)(lf->kernels - 1) * 1e9 / (double)(lf->last_ns - lf->first_ns)
			: 0;
}

int gpu_report__finish(struct gpu_report *r)
{
	uint64_t longest = 0;
	int err;

	if (r->finished)
		return 0;
	r->finished = true;
	if (r->start_ns > r->end_ns) /* nothing merged into a new one */
		r->start_ns = r->end_ns = 0;
	approximate(r);
	sort(r->streams, r->nr_streams, sizeof(*r->streams), cmp_stream);
	sort(r->ranges, r->nr_ranges, sizeof(*r->ranges), cmp_range);
	sort(r->kernels, r->nr_kernels, sizeof(*r->kernels), cmp_kernel);
	err = gpu_report__merge_blames(r); /* merged reports: the same stacks from each slice */
	if (err)
		return err;
	for (size_t i = 0; i < r->nr_dev; i++) {
		device_findings(r, &r->dev[i]);
		if (r->dev[i].last - r->dev[i].first > longest)
			longest = r->dev[i].last - r->dev[i].first;
	}
	copy_findings(r, longest);
	err = r->strs ? gpu_report__calls_memory(r) : gpu_memory__build(r->pd, &r->mem);
	if (err)
		return err;
	memory_findings(r);
	return 0;
}

int gpu_report__build(const struct profile_data *pd, struct gpu_report **ret)
{
	struct gpu_report *r = calloc(1, sizeof(*r));
	int err;

	*ret = NULL;
	if (!r)
		return -ENOMEM;
	err = gpu_report__facts(r, pd, false);
	if (!err)
		err = gpu_report__finish(r);
	if (err) {
		gpu_report__free(r);
		return err;
	}
	*ret = r;
	return 0;
}

void gpu_report__free(struct gpu_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nr_dev; i++)
		free(r->dev[i].bins);
	for (size_t i = 0; i < r->nr_streams; i++) {
		free(r->streams[i].delay);
		free(r->streams[i].hist);
	}
	free(r->launch.kernel_hist);
	free(r->launch.interval_hist);
	for (size_t i = 0; i < r->nr_calls; i++)
		free(r->calls[i].frames);
	free(r->calls);
	strset__free(r->strs);
	for (size_t i = 0; i < r->nr_blames; i++)
		free(r->blames[i].frames);
	for (size_t i = 0; i < r->nr_kernels; i++)
		free(r->kernels[i].frames);
	free(r->copy_blame[0].frames);
	free(r->copy_blame[1].frames);
	for (size_t i = 0; i < r->nr_paths; i++)
		free(r->paths[i]);
	keymap__free(r->blame_ix);
	gpu_memory__free(r->mem);
	free(r->nvtx);
	free(r->ranges);
	free(r->dev);
	free(r->streams);
	free(r->blames);
	free(r->kernels);
	free(r->launch_of);
	free(r->samples);
	free(r->waits);
	free(r->unsampled);
	free(r);
}

size_t gpu_report__nr_devices(const struct gpu_report *r)
{
	return r->nr_dev;
}

/* ---- text ---- */

static const char *fmt_ns(char *buf, size_t size, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%" PRIu64 " ns", ns);
	else if (ns < MS)
		snprintf(buf, size, "%.1f us", ns / 1e3);
	else if (ns < S)
		snprintf(buf, size, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, size, "%.3f s", ns / 1e9);
	return buf;
}

#define NS(x) fmt_ns((char[24]){0}, 24, (x))

/* A line of at most 80 columns: longer ones are cut (at a UTF-8 character's start). */
__attribute__((format(printf, 2, 3))) static void line(FILE *f, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n = strlen(buf);
	if (n > 80) {
		n = 80;
		while (n && ((unsigned char)buf[n] & 0xC0) == 0x80)
			n--;
		buf[n] = 0;
	}
	fprintf(f, "%s\n", buf);
}

/* Words of text wrapped at 80 columns: the first line after lead, the others indented as far. */
static void wrap(FILE *f, const char *lead, const char *text)
{
	char buf[81], indent[41];
	size_t len = 0, ind = strlen(lead) < 40 ? strlen(lead) : 40;
	const char *p = text;

	memset(indent, ' ', ind);
	indent[ind] = 0;
	while (*p) {
		const char *w = p;
		size_t wl;

		while (*p && *p != ' ')
			p++;
		wl = (size_t)(p - w);
		while (*p == ' ')
			p++;
		if (len && len + 1 + wl > 80) {
			fprintf(f, "%.*s\n", (int)len, buf);
			len = 0;
		}
		if (!len) {
			len = ind;
			memcpy(buf, lead ? lead : indent, len);
			lead = indent;
		} else {
			buf[len++] = ' ';
		}
		if (wl > 80 - len)
			wl = 80 - len;
		memcpy(buf + len, w, wl);
		len += wl;
	}
	if (len)
		fprintf(f, "%.*s\n", (int)len, buf);
}

/* "f3 < f2 < f1": innermost first, on one line of at most 80 columns. */
static void stack_line(FILE *f, const char *lead, const char *const *frames, size_t n)
{
	char buf[1024];
	size_t len = (size_t)snprintf(buf, sizeof(buf), "%s", lead);

	if (!n)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "[no stack]");
	for (size_t i = n; i-- > 0 && len < sizeof(buf) - 1;)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", frames[i],
					i ? " < " : "");
	line(f, "%s", buf);
}

/* A stack, one frame a line, innermost first, at most TEXT_FRAMES. */
static void stack_lines(FILE *f, const char *indent, const char *const *frames, size_t n)
{
	if (!n)
		line(f, "%s[no stack known]", indent);
	for (size_t i = n, k = 0; i-- > 0 && k < TEXT_FRAMES; k++)
		line(f, "%s%s", indent, frames[i]);
	if (n > TEXT_FRAMES)
		line(f, "%s... %zu outer frames", indent, n - TEXT_FRAMES);
}

static const char *dir_name(uint8_t dir)
{
	static const char *const names[] = {"copy", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};

	return dir < sizeof(names) / sizeof(names[0]) ? names[dir] : "copy";
}

static const char *host_mem_name(uint8_t m)
{
	return m == CORR_HOST_MEM_PAGEABLE ? "pageable"
	       : m == CORR_HOST_MEM_PINNED ? "pinned"
					   : "-";
}

/* The profiled window, when known (else 0: shares of it are 0). */
static uint64_t profile_span(const struct gpu_report *r)
{
	return r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
}

/* How far the device's times may be from the CPU's (output/gpu_clock.h). */
static void text_clock(const struct gpu_clock *c, FILE *f)
{
	int64_t lo, hi;

	if (gpu_clock__bound(c, &lo, &hi))
		line(f,
		     "  clock: GPU times within %+.1f..%+.1f us of the CPU's (%" PRIu64
		     " launches, %" PRIu64 " device syncs)",
		     lo / 1e3, hi / 1e3, c->leads, c->drains);
	else if (c->leads)
		line(f,
		     "  clock: GPU times at most %+.1f us late (%" PRIu64 " launches; no "
		     "device-wide sync for the other bound)",
		     c->lead_min_ns / 1e3, c->leads);
}

static void text_device(const struct gpu_report *r, const struct device *d, FILE *f)
{
	uint64_t active = d->last - d->first;
	char buf[128];
	size_t len = 0;

	line(f, "Device %u: busy %s of %s active (%.1f%%; %.1f%% of the profile)", d->device,
	     NS(d->busy), NS(active), 100 * share_of(d->busy, active),
	     100 * share_of(d->busy, profile_span(r)));
	line(f, "  work: %" PRIu64 " kernels, %" PRIu64 " copies, %" PRIu64 " memsets", d->kernels,
	     d->copies, d->memsets);
	line(f, "  idle: %s in %" PRIu64 " gaps, longest %s", NS(d->idle), d->nr_gaps,
	     NS(d->longest_gap));
	line(f, "    host %s (%.1f%%), launch %s (%.1f%%), sync %s (%.1f%%)",
	     NS(d->idle_by[GPU_IDLE_HOST]), 100 * share_of(d->idle_by[GPU_IDLE_HOST], active),
	     NS(d->idle_by[GPU_IDLE_LAUNCH]), 100 * share_of(d->idle_by[GPU_IDLE_LAUNCH], active),
	     NS(d->idle_by[GPU_IDLE_SYNC]), 100 * share_of(d->idle_by[GPU_IDLE_SYNC], active));
	line(f, "    dependency %s (%.1f%%), unknown %s (%.1f%%)",
	     NS(d->idle_by[GPU_IDLE_DEPENDENCY]),
	     100 * share_of(d->idle_by[GPU_IDLE_DEPENDENCY], active),
	     NS(d->idle_by[GPU_IDLE_UNKNOWN]),
	     100 * share_of(d->idle_by[GPU_IDLE_UNKNOWN], active));
	line(f,
	     "  gaps: %s %" PRIu64 ", %s %" PRIu64 ", %s %" PRIu64 ", %s %" PRIu64 ", %s %" PRIu64
	     ", %s %" PRIu64,
	     gap_label[0], d->hist[0], gap_label[1], d->hist[1], gap_label[2], d->hist[2],
	     gap_label[3], d->hist[3], gap_label[4], d->hist[4], gap_label[5], d->hist[5]);
	len = (size_t)snprintf(buf, sizeof(buf), "  busy per %s:", NS(d->bin_ns));
	for (size_t i = 0; i < d->nr_bins; i++) {
		uint64_t width =
			i + 1 < d->nr_bins ? d->bin_ns : d->last - d->first - i * d->bin_ns;

		if (len + 5 > 80) {
			line(f, "%s", buf);
			len = (size_t)snprintf(buf, sizeof(buf), "   ");
		}
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %.0f%%",
					100 * share_of(d->bins[i], width));
	}
	line(f, "%s", buf);
	text_clock(&d->clock, f);
	if (d->comm_ns)
		line(f, "  communication (NCCL): %s, %.1f%% of it overlapped computation",
		     NS(d->comm_ns), 100 * share_of(d->comm_overlap_ns, d->comm_ns));
	for (size_t i = 0; i < r->nr_streams; i++) {
		const struct stream_stat *st = &r->streams[i];

		if (st->device != d->device)
			continue;
		line(f, "  stream %u: %" PRIu64 " pieces of work; launch to start p50 %s,",
		     st->stream, st->work, NS(st->p50));
		line(f, "    p99 %s, max %s (%" PRIu64 " joined)", NS(st->p99), NS(st->max), st->n);
	}
}

static void text_finding(const struct finding *x, size_t i, FILE *f)
{
	char buf[1024];
	size_t len = 0;

	line(f, "%2zu. [%s] %s", i + 1, x->severity, x->kind);
	wrap(f, "    ", x->summary);
	for (size_t k = 0; k < x->nr_fig; k++) {
		const struct figure *g = &x->fig[k];

		if (g->is_ratio)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s %s=%.3g",
						k ? "," : "", g->key, g->d);
		else if (strstr(g->key, "_ns"))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s %.*s=%s",
						k ? "," : "", (int)(strlen(g->key) - 3), g->key,
						NS(g->u));
		else
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s %s=%" PRIu64,
						k ? "," : "", g->key, g->u);
	}
	if (len)
		wrap(f, "    ", buf + 1);
	if (x->pid) {
		line(f, "    where (pid %u%s%s), innermost first:", x->pid, x->api ? ", in " : "",
		     x->api ? x->api : "");
		stack_lines(f, "      ", x->frames, x->nr_frames);
	}
	wrap(f, "    fix: ", x->advice);
}

/* The NVTX ranges (and xsprof scopes) the GPU's idle and busy time fell in. */
static void text_ranges(const struct gpu_report *r, FILE *f)
{
	size_t shown = 0;

	for (size_t i = 0; i < r->nr_ranges && shown < TOP; i++) {
		const struct range_stat *x = &r->ranges[i];

		if (!range_idle(x) && !x->gpu_ns && !x->allocated)
			continue;
		if (!shown++) {
			line(f, "%s", "");
			line(f, "By NVTX range (innermost, on the launching thread)");
			line(f, "%10s %10s %10s %10s  %s", "idle", "of it host", "GPU work",
			     "allocated", "range");
		}
		line(f, "%10s %10s %10s %6.1f MiB  %s%s%s", NS(range_idle(x)),
		     NS(x->idle[GPU_IDLE_HOST]), NS(x->gpu_ns), x->allocated / 1048576.0,
		     x->domain ? x->domain : "", x->domain ? ": " : "", x->name);
	}
}

/* GPU memory per process and device: the peak and what was live then, what was left at the
 * end. */
static void text_memory(const struct gpu_report *r, FILE *f)
{
	for (size_t i = 0; r->mem && i < r->mem->nr_procs; i++) {
		const struct gpu_mem_proc *p = &r->mem->procs[i];
		char dev[32] = "an unknown device";

		if (p->device >= 0)
			snprintf(dev, sizeof(dev), "device %d", p->device);
		line(f, "%s", "");
		line(f, "GPU memory of process %u on %s:", p->pid, dev);
		line(f,
		     "  %" PRIu64 " allocations (%.1f MiB), %" PRIu64 " frees, %" PRIu64 " failed",
		     p->allocs, p->allocated / 1048576.0, p->frees, p->failed);
		line(f,
		     "  peak %.1f MiB at %s; %.1f MiB in %" PRIu64 " allocations left at the end",
		     p->peak / 1048576.0,
		     NS(p->peak_ns > r->start_ns ? p->peak_ns - r->start_ns : 0),
		     p->end / 1048576.0, p->end_allocs);
		if (p->unknown_frees)
			line(f, "  %" PRIu64 " frees of memory allocated before the profile",
			     p->unknown_frees);
		if (p->nr_at_peak)
			line(f, "  live at the peak, by allocating stack:");
		for (size_t k = 0; k < p->nr_at_peak && k < TOP; k++) {
			char lead[64];

			snprintf(lead, sizeof(lead), "%11.1f MiB %s < ",
				 p->at_peak[k]->at_peak / 1048576.0,
				 p->at_peak[k]->api ? p->at_peak[k]->api : "?");
			stack_line(f, lead, p->at_peak[k]->frames, p->at_peak[k]->nr_frames);
		}
		if (p->nr_at_end)
			line(f, "  still allocated at the end, by allocating stack:");
		for (size_t k = 0; k < p->nr_at_end && k < TOP; k++) {
			char lead[64];

			snprintf(lead, sizeof(lead), "%11.1f MiB %s < ",
				 p->at_end[k]->live / 1048576.0,
				 p->at_end[k]->api ? p->at_end[k]->api : "?");
			stack_line(f, lead, p->at_end[k]->frames, p->at_end[k]->nr_frames);
		}
	}
	if (r->mem && r->mem->untracked)
		line(f, "  %" PRIu64 " allocations not tracked (%d live at once at most)",
		     r->mem->untracked, GPU_MEMORY_MAX_LIVE);
}

int gpu_report__write_text(const struct gpu_report *r, FILE *f)
{
	const struct launch_facts *lf = &r->launch;
	size_t shown = 0;

	line(f, "xsprof GPU report: %zu device%s, %zu finding%s", r->nr_dev,
	     r->nr_dev == 1 ? "" : "s", r->nr_findings, r->nr_findings == 1 ? "" : "s");
	if (!r->nr_dev && !r->mem)
		line(f, "No GPU work was recorded (is libxsprof_cupti.so loaded? see xsprofd(8)).");
	for (size_t i = 0; i < r->nr_dev; i++) {
		line(f, "%s", "");
		text_device(r, &r->dev[i], f);
	}
	if (r->nr_findings) {
		line(f, "%s", "");
		line(f, "Findings");
	}
	for (size_t i = 0; i < r->nr_findings; i++)
		text_finding(&r->findings[i], i, f);
	if (r->nr_blames) {
		line(f, "%s", "");
		line(f, "Idle time by cause and stack (top %d)", TOP);
	}
	for (size_t i = 0; i < r->nr_blames && shown < TOP; i++, shown++) {
		const struct blame *b = &r->blames[i];
		char lead[96];

		snprintf(lead, sizeof(lead), "%9s %-10s dev %u pid %u: %s%s", NS(b->ns),
			 cause_names[b->cause], b->device, b->pid, b->api ? b->api : "",
			 b->api ? " < " : "");
		stack_line(f, lead, (const char *const *)b->frames, b->nr_frames);
	}
	if (r->nr_kernels) {
		line(f, "%s", "");
		line(f, "Kernels by total time (top %d)", TOP);
		line(f, "%8s %10s %10s %10s  %s", "count", "total", "mean", "max", "name");
	}
	for (size_t i = 0; i < r->nr_kernels && i < TOP; i++) {
		const struct kernel_stat *k = &r->kernels[i];

		line(f, "%8" PRIu64 " %10s %10s %10s  %s", k->count, NS(k->total),
		     NS(k->count ? k->total / k->count : 0), NS(k->max), k->name);
		if (k->nr_frames)
			stack_line(f, "         from ", (const char *const *)k->frames,
				   k->nr_frames);
	}
	if (lf->kernels) {
		line(f, "%s", "");
		line(f, "Launches: %" PRIu64 " kernels joined to their launch, %.0f a second",
		     lf->kernels, lf->rate_per_s);
		line(f, "  median kernel %s, median time between launches %s",
		     NS(lf->median_kernel_ns), NS(lf->median_interval_ns));
		line(f,
		     "  %.1f%% of kernels ran shorter than the time to their thread's next launch",
		     100 * share_of(lf->shorter, lf->intervals));
		if (lf->api_ns)
			line(f, "  %s in launch calls on the busiest thread (tid %u)",
			     NS(lf->api_ns), lf->api_tid);
	}
	for (size_t i = 0, first = 1; i < sizeof(r->copies) / sizeof(r->copies[0]); i++) {
		const struct copy_stat *c = &r->copies[i];

		if (!c->count)
			continue;
		if (first) {
			line(f, "%s", "");
			line(f, "Copies");
			first = 0;
		}
		line(f, "  %s %-8s %-5s %6" PRIu64 " copies %10.1f MiB %10s %7.2f GB/s",
		     dir_name(c->dir), host_mem_name(c->host_mem), c->async ? "async" : "sync",
		     c->count, c->bytes / 1048576.0, NS(c->ns),
		     c->ns ? (double)c->bytes / (double)c->ns : 0);
	}
	text_ranges(r, f);
	text_memory(r, f);
	return ferror(f) ? -EIO : 0;
}

/* ---- JSON ---- */

static void json_frames(FILE *f, const char *const *frames, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		chrome_trace__put_string(f, frames[i]);
	}
	fputc(']', f);
}

static void json_i64_or_null(FILE *f, bool known, int64_t v)
{
	if (known)
		fprintf(f, "%" PRId64, v);
	else
		fputs("null", f);
}

static void json_clock(const struct gpu_clock *c, FILE *f)
{
	int64_t lo, hi;
	bool bound = gpu_clock__bound(c, &lo, &hi);

	fprintf(f, "\"clock\":{\"launch_to_start_min_ns\":");
	json_i64_or_null(f, c->leads, c->lead_min_ns);
	fprintf(f, ",\"launches\":%" PRIu64 ",\"sync_return_after_end_min_ns\":", c->leads);
	json_i64_or_null(f, c->drains, c->drain_min_ns);
	fprintf(f, ",\"syncs\":%" PRIu64 ",\"offset_bound_ns\":", c->drains);
	if (bound)
		fprintf(f, "[%" PRId64 ",%" PRId64 "]}", lo, hi);
	else
		fputs("null}", f);
}

static void json_device(const struct gpu_report *r, const struct device *d, FILE *f)
{
	uint64_t active = d->last - d->first;
	bool first = true;

	fprintf(f,
		"{\"device\":%u,\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64
		",\"active_ns\":%" PRIu64 ",\"busy_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64
		",\"utilisation\":%.6f,\"profile_utilisation\":%.6f,\"kernels\":%" PRIu64
		",\"copies\":%" PRIu64 ",\"memsets\":%" PRIu64 ",",
		d->device, d->first, d->last, active, d->busy, d->idle, share_of(d->busy, active),
		share_of(d->busy, profile_span(r)), d->kernels, d->copies, d->memsets);
	fprintf(f, "\"idle_by_cause\":{");
	for (int c = 0; c < GPU_IDLE_NR; c++)
		fprintf(f, "%s\"%s_ns\":%" PRIu64, c ? "," : "", cause_names[c], d->idle_by[c]);
	fprintf(f,
		"},\"gaps\":{\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"longest_ns\":%" PRIu64
		",\"histogram\":[",
		d->nr_gaps, d->idle, d->longest_gap);
	for (int b = 0; b < NR_GAP_BUCKETS; b++) {
		if (b < NR_GAP_BUCKETS - 1)
			fprintf(f, "%s{\"below_ns\":%" PRIu64 ",\"count\":%" PRIu64 "}",
				b ? "," : "", gap_le_ns[b], d->hist[b]);
		else
			fprintf(f, ",{\"below_ns\":null,\"count\":%" PRIu64 "}", d->hist[b]);
	}
	fprintf(f, "]},\"utilisation_series\":{\"bin_ns\":%" PRIu64 ",\"busy\":[", d->bin_ns);
	for (size_t i = 0; i < d->nr_bins; i++) {
		uint64_t width = i + 1 < d->nr_bins ? d->bin_ns : active - i * d->bin_ns;

		fprintf(f, "%s%.4f", i ? "," : "", share_of(d->bins[i], width));
	}
	fprintf(f, "]},\"communication\":{\"busy_ns\":%" PRIu64 ",\"overlap_ns\":%" PRIu64 "},",
		d->comm_ns, d->comm_overlap_ns);
	json_clock(&d->clock, f);
	fprintf(f, ",\"streams\":[");
	for (size_t i = 0; i < r->nr_streams; i++) {
		const struct stream_stat *st = &r->streams[i];

		if (st->device != d->device)
			continue;
		fprintf(f,
			"%s{\"stream\":%u,\"work\":%" PRIu64 ",\"joined\":%" PRIu64
			",\"launch_to_start\":{\"mean_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64
			",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}}",
			first ? "" : ",", st->stream, st->work, st->n, st->mean, st->p50, st->p99,
			st->max);
		first = false;
	}
	fprintf(f, "]}");
}

static void json_finding(const struct finding *x, FILE *f)
{
	fprintf(f, "{\"kind\":\"%s\",\"severity\":\"%s\",\"device\":%u,\"summary\":", x->kind,
		x->severity, x->device);
	chrome_trace__put_string(f, x->summary);
	fprintf(f, ",\"figures\":{");
	for (size_t k = 0; k < x->nr_fig; k++) {
		if (x->fig[k].is_ratio)
			fprintf(f, "%s\"%s\":%.6g", k ? "," : "", x->fig[k].key, x->fig[k].d);
		else
			fprintf(f, "%s\"%s\":%" PRIu64, k ? "," : "", x->fig[k].key, x->fig[k].u);
	}
	fprintf(f, "},\"pid\":%u,\"api\":", x->pid);
	if (x->api)
		chrome_trace__put_string(f, x->api);
	else
		fputs("null", f);
	fprintf(f, ",\"stack\":");
	json_frames(f, x->frames, x->nr_frames);
	fprintf(f, ",\"advice\":");
	chrome_trace__put_string(f, x->advice);
	fputc('}', f);
}

static void json_places(FILE *f, const struct gpu_mem_stack *const *v, size_t n, bool at_peak)
{
	fputc('[', f);
	for (size_t k = 0; k < n; k++) {
		fprintf(f, "%s{\"bytes\":%" PRIu64 ",\"allocations\":%" PRIu64 ",\"api\":",
			k ? "," : "", at_peak ? v[k]->at_peak : v[k]->live, v[k]->allocs);
		chrome_trace__put_string(f, v[k]->api ? v[k]->api : "");
		fprintf(f, ",\"stack\":");
		json_frames(f, v[k]->frames, v[k]->nr_frames);
		fputc('}', f);
	}
	fputc(']', f);
}

static void json_ranges(const struct gpu_report *r, FILE *f)
{
	for (size_t i = 0; i < r->nr_ranges; i++) {
		const struct range_stat *x = &r->ranges[i];

		fprintf(f, "%s{\"domain\":", i ? "," : "");
		if (x->domain)
			chrome_trace__put_string(f, x->domain);
		else
			fputs("null", f);
		fprintf(f, ",\"name\":");
		chrome_trace__put_string(f, x->name);
		fprintf(f, ",\"gpu_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64 ",\"idle_by_cause\":{",
			x->gpu_ns, range_idle(x));
		for (int c = 0; c < GPU_IDLE_NR; c++)
			fprintf(f, "%s\"%s_ns\":%" PRIu64, c ? "," : "", cause_names[c],
				x->idle[c]);
		fprintf(f, "},\"allocated_bytes\":%" PRIu64 "}", x->allocated);
	}
}

static void json_memory(const struct gpu_report *r, FILE *f)
{
	for (size_t i = 0; r->mem && i < r->mem->nr_procs; i++) {
		const struct gpu_mem_proc *p = &r->mem->procs[i];

		fprintf(f, "%s{\"pid\":%u,\"device\":", i ? "," : "", p->pid);
		if (p->device >= 0)
			fprintf(f, "%d", p->device);
		else
			fputs("null", f);
		fprintf(f,
			",\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"failed\":%" PRIu64
			",\"unknown_frees\":%" PRIu64 ",\"allocated_bytes\":%" PRIu64
			",\"peak_bytes\":%" PRIu64 ",\"peak_ns\":%" PRIu64 ",\"end_bytes\":%" PRIu64
			",\"end_allocations\":%" PRIu64 ",\"at_peak\":",
			p->allocs, p->frees, p->failed, p->unknown_frees, p->allocated, p->peak,
			p->peak_ns, p->end, p->end_allocs);
		json_places(f, p->at_peak, p->nr_at_peak, true);
		fprintf(f, ",\"at_end\":");
		json_places(f, p->at_end, p->nr_at_end, false);
		fprintf(f, ",\"failed_at\":");
		if (p->failed_at)
			json_places(f, &p->failed_at, 1, false);
		else
			fputs("[]", f);
		fprintf(f, ",\"untracked\":%" PRIu64 "}", r->mem->untracked);
	}
}

int gpu_report__write_json(const struct gpu_report *r, FILE *f)
{
	const struct launch_facts *lf = &r->launch;
	bool first = true;

	fprintf(f,
		"{\"schema\":\"%s\",\"version\":%d,\"window\":{\"start_ns\":%" PRIu64
		",\"end_ns\":%" PRIu64 "},\"thresholds\":{\"launch_gap_ns\":%llu,"
		"\"sync_slack_ns\":%llu},\"devices\":[",
		GPU_REPORT_SCHEMA, GPU_REPORT_VERSION, r->start_ns, r->end_ns,
		GPU_REPORT_LAUNCH_GAP_NS, GPU_REPORT_SYNC_SLACK_NS);
	for (size_t i = 0; i < r->nr_dev; i++) {
		if (i)
			fputc(',', f);
		json_device(r, &r->dev[i], f);
	}
	fprintf(f, "],\"findings\":[");
	for (size_t i = 0; i < r->nr_findings; i++) {
		if (i)
			fputc(',', f);
		json_finding(&r->findings[i], f);
	}
	fprintf(f, "],\"idle_causes\":[");
	for (size_t i = 0; i < r->nr_blames; i++) {
		const struct blame *b = &r->blames[i];

		fprintf(f,
			"%s{\"cause\":\"%s\",\"device\":%u,\"pid\":%u,\"tid\":%u,\"ns\":%" PRIu64
			",\"gaps\":%" PRIu64 ",\"api\":",
			i ? "," : "", cause_names[b->cause], b->device, b->pid, b->tid, b->ns,
			b->gaps);
		if (b->api)
			chrome_trace__put_string(f, b->api);
		else
			fputs("null", f);
		fprintf(f, ",\"stack\":");
		json_frames(f, (const char *const *)b->frames, b->nr_frames);
		fputc('}', f);
	}
	fprintf(f, "],\"kernels\":[");
	for (size_t i = 0; i < r->nr_kernels; i++) {
		const struct kernel_stat *k = &r->kernels[i];

		fprintf(f, "%s{\"name\":", i ? "," : "");
		chrome_trace__put_string(f, k->name);
		fprintf(f,
			",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
			",\"pid\":%u,\"stack\":",
			k->count, k->total, k->max, k->pid);
		json_frames(f, (const char *const *)k->frames, k->nr_frames);
		fputc('}', f);
	}
	fprintf(f,
		"],\"launches\":{\"kernels\":%" PRIu64 ",\"intervals\":%" PRIu64
		",\"shorter_than_interval\":%" PRIu64 ",\"median_kernel_ns\":%" PRIu64
		",\"median_interval_ns\":%" PRIu64 ",\"per_s\":%.3f,\"api_ns\":%" PRIu64
		",\"api_tid\":%u},\"copies\":[",
		lf->kernels, lf->intervals, lf->shorter, lf->median_kernel_ns,
		lf->median_interval_ns, lf->rate_per_s, lf->api_ns, lf->api_tid);
	for (size_t i = 0; i < sizeof(r->copies) / sizeof(r->copies[0]); i++) {
		const struct copy_stat *c = &r->copies[i];

		if (!c->count)
			continue;
		fprintf(f,
			"%s{\"direction\":\"%s\",\"host_memory\":\"%s\",\"async\":%s,\"count\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"ns\":%" PRIu64 ",\"gb_per_s\":%.4f}",
			first ? "" : ",", dir_name(c->dir),
			c->host_mem == CORR_HOST_MEM_UNKNOWN ? "unknown"
							     : host_mem_name(c->host_mem),
			c->async ? "true" : "false", c->count, c->bytes, c->ns,
			c->ns ? (double)c->bytes / (double)c->ns : 0);
		first = false;
	}
	fprintf(f, "],\"ranges\":[");
	json_ranges(r, f);
	fprintf(f, "],\"memory\":[");
	json_memory(r, f);
	fprintf(f, "]}\n");
	return ferror(f) ? -EIO : 0;
}

/* ---- Chrome trace counters ---- */

struct qev {
	uint64_t t;
	int64_t d;
};

static int cmp_qev(const void *a, const void *b)
{
	const struct qev *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

static int device_counters(const struct profile_data *pd, const size_t *launch_of, uint32_t device,
			   struct chrome_trace *t, struct work *w, struct qev *q)
{
	int64_t pid = chrome_trace__gpu_pid(device);
	size_t n = 0, nq = 0, emitted = 0;
	uint64_t first, last, bin;
	int64_t depth = 0;

	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];

		if (!is_work(g) || g->end_ns <= g->start_ns || g->device != device)
			continue;
		w[n++] = (struct work){g->start_ns, g->end_ns, i};
		if (launch_of[i]) {
			q[nq++] = (struct qev){pd->launches[launch_of[i] - 1].time_ns, 1};
			q[nq++] = (struct qev){g->end_ns, -1};
		}
	}
	if (!n)
		return 0;
	sort(w, n, sizeof(*w), cmp_work);
	n = merge(w, n);
	first = w[0].s;
	last = w[n - 1].e;
	bin = COUNTER_BIN_NS;
	if ((last - first) / bin > MAX_COUNTER_EVTS)
		bin = (last - first) / MAX_COUNTER_EVTS + 1;
	for (uint64_t b = first, k = 0; b < last; b += bin) {
		uint64_t e = b + bin < last ? b + bin : last, busy = 0;

		while (k < n && w[k].e <= b)
			k++;
		for (size_t j = k; j < n && w[j].s < e; j++) {
			uint64_t s0 = w[j].s > b ? w[j].s : b, e0 = w[j].e < e ? w[j].e : e;

			busy += e0 > s0 ? e0 - s0 : 0;
		}
		chrome_trace__counter(
			t, pid, "busy %", b,
			&(struct chrome_arg){.key = "busy",
					     .type = CHROME_ARG_DOUBLE,
					     .d = 100.0 * (double)busy / (double)(e - b)},
			1);
	}
	chrome_trace__counter(t, pid, "busy %", last,
			      &(struct chrome_arg){.key = "busy", .type = CHROME_ARG_DOUBLE}, 1);
	sort(q, nq, sizeof(*q), cmp_qev);
	for (size_t i = 0; i < nq && emitted < MAX_COUNTER_EVTS; i++) {
		depth += q[i].d;
		if (i + 1 < nq && q[i + 1].t == q[i].t)
			continue;
		chrome_trace__counter(t, pid, "queue depth", q[i].t,
				      &(struct chrome_arg){.key = "work",
							   .type = CHROME_ARG_INT,
							   .i = depth < 0 ? 0 : depth},
				      1);
		emitted++;
	}
	return chrome_trace__error(t);
}

int gpu_report__counters(const struct profile_data *pd, struct chrome_trace *t)
{
	size_t *launch_of = calloc(pd->nr_gpu ? pd->nr_gpu : 1, sizeof(*launch_of));
	struct work *w = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*w));
	struct qev *q = calloc(pd->nr_gpu ? pd->nr_gpu : 1, 2 * sizeof(*q));
	uint32_t *devs = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*devs));
	size_t nd = 0;
	int err = 0;

	if (!launch_of || !w || !q || !devs) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < pd->nr_joins; i++)
		if (pd->joins[i].gpu < pd->nr_gpu && pd->joins[i].launch < pd->nr_launches)
			launch_of[pd->joins[i].gpu] = pd->joins[i].launch + 1;
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		size_t k = 0;

		if (!is_work(&pd->gpu[i]))
			continue;
		while (k < nd && devs[k] != pd->gpu[i].device)
			k++;
		if (k == nd)
			devs[nd++] = pd->gpu[i].device;
	}
	for (size_t k = 0; k < nd && !err; k++)
		err = device_counters(pd, launch_of, devs[k], t, w, q);
	if (!err)
		err = gpu_memory__counters(pd, t);
out:
	free(launch_of);
	free(w);
	free(q);
	free(devs);
	return err;
}
