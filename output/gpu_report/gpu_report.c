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
#include "output/model/shelf.h"

/*
 * The GPU report's facts: each device's busy time, gaps and streams, kernels and launches,
 * copies; and the report's life (facts, then causes and findings, finished, freed). Causes are
 * in gpu_report_causes.c, findings in gpu_report_findings.c, keep/merge in gpu_report_keep.c,
 * the writers in gpu_report_text.c and gpu_report_json.c.
 */

/* Upper bounds of the gap histogram's buckets (the last is open). */
const uint64_t gr_gap_le_ns[NR_GAP_BUCKETS - 1] = {10000, 100000, MS, 10 * MS, 100 * MS};
const char *const gr_gap_label[NR_GAP_BUCKETS] = {"<10us", "<100us", "<1ms",
						  "<10ms", "<100ms", ">=100ms"};
const char *const gr_cause_names[GPU_IDLE_NR] = {"host", "launch", "sync", "dependency", "unknown"};

bool gr_is_work(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_KERNEL || g->kind == CORR_GPU_MEMCPY ||
	       g->kind == CORR_GPU_MEMSET;
}

static bool is_comm(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_KERNEL && g->name && strcasestr(g->name, "nccl");
}

/* qsort, for arrays that may be empty (and NULL): qsort must not be given NULL. */
void gr_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	const char *p = base;
	size_t i = 1;

	/* Records mostly come in order: a pass costs much less than qsort's copies. */
	while (i < n && cmp(p + (i - 1) * size, p + i * size) <= 0)
		i++;
	if (i < n)
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

int gr_cmp_work(const void *a, const void *b)
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
	gr_sort(v, n, sizeof(*v), cmp);
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
int gr_frames_of(const struct profile_data *pd, uint32_t pid, uint32_t stack_id, const char ***ret,
		 size_t *ret_n)
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

/* Busy time [s, e) into d's bins; *at: the bin s fell in last time (s only grows along the
 * sorted work, so the bin is found by stepping from there, not by a division per record). */
static void add_busy(struct device *d, uint64_t s, uint64_t e, size_t *at)
{
	size_t i = *at;

	d->busy += e - s;
	if (!d->nr_bins)
		return;
	while (i + 1 < d->nr_bins && s >= d->first + (i + 1) * d->bin_ns)
		i++;
	while (s < e) {
		uint64_t bin_end = d->first + (i + 1) * d->bin_ns;
		uint64_t to = e < bin_end || i + 1 == d->nr_bins ? e : bin_end;

		d->bins[i] += to - s;
		s = to;
		if (s < e)
			i++;
	}
	*at = i;
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
size_t gr_merge(struct work *w, size_t n)
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

static int communication(struct device *d, const struct work *w, size_t n)
{
	size_t comm_bytes, comp_bytes, first = 0;
	struct work *comm, *comp;
	size_t nc = 0, np = 0;

	while (first < n && !w[first].comm) /* none (no NCCL): nothing to split */
		first++;
	if (first == n)
		return 0;
	comm = shelf__take(n * sizeof(*comm), &comm_bytes);
	comp = shelf__take(n * sizeof(*comp), &comp_bytes);
	if (!comm || !comp) {
		shelf__put(comm, comm_bytes);
		shelf__put(comp, comp_bytes);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (w[i].comm)
			comm[nc++] = w[i];
		else
			comp[np++] = w[i];
	}
	if (nc) {
		nc = gr_merge(comm, nc);
		np = gr_merge(comp, np);
		for (size_t i = 0; i < nc; i++)
			d->comm_ns += comm[i].e - comm[i].s;
		d->comm_overlap_ns = overlap(comm, nc, comp, np);
	}
	shelf__put(comm, comm_bytes);
	shelf__put(comp, comp_bytes);
	return 0;
}

/* A device's work (sorted by start): busy, gaps explained, utilisation, communication. */
static int device_facts(struct gpu_report *r, struct device *d, struct work *w, size_t n)
{
	uint64_t end = 0;
	size_t bin = 0;
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
	err = communication(d, w, n);
	for (size_t i = 0; i < n && !err; i++) {
		d->kernels += w[i].kind == CORR_GPU_KERNEL;
		d->copies += w[i].kind == CORR_GPU_MEMCPY;
		d->memsets += w[i].kind == CORR_GPU_MEMSET;
		if (i && w[i].s > end)
			err = gr_explain_gap(r, d, end, w[i].s, w[i].gpu);
		if (w[i].e > end) {
			add_busy(d, w[i].s > end ? w[i].s : end, w[i].e, &bin);
			end = w[i].e;
		}
	}
	return err;
}

/*
 * Each device's work: one pass over the records (their work, with what device_facts and
 * communication ask of each, so that neither goes back to pd->gpu), then per device its own,
 * sorted by start (the one device's in place, the common case).
 */
static int devices(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;
	size_t all_bytes, w_bytes = 0, n = 0;
	struct work *all = shelf__take((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*all), &all_bytes);
	struct work *w = NULL;
	const char *last = NULL; /* names are interned: one look per run of a name */
	bool last_comm = false;
	int err = 0;

	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_gpu && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		struct device *d;

		if (!gr_is_work(g) || g->end_ns <= g->start_ns)
			continue;
		if (!(d = device_of(r, g->device))) {
			err = -ENOMEM;
			break;
		}
		if (r->nr_dev > UINT16_MAX) { /* struct work's dev */
			err = -EOVERFLOW;
			break;
		}
		if (!last || g->name != last || g->kind != CORR_GPU_KERNEL) {
			last_comm = is_comm(g);
			last = g->kind == CORR_GPU_KERNEL ? g->name : NULL;
		}
		all[n++] = (struct work){.s = g->start_ns,
					 .e = g->end_ns,
					 .gpu = (uint32_t)i,
					 .dev = (uint16_t)(d - r->dev),
					 .kind = g->kind,
					 .comm = last_comm};
	}
	if (!err && r->nr_dev > 1 && !(w = shelf__take(n * sizeof(*w), &w_bytes)))
		err = -ENOMEM;
	for (size_t k = 0; k < r->nr_dev && !err; k++) {
		struct work *dw = all;
		size_t dn = n;

		if (r->nr_dev > 1) {
			dw = w;
			dn = 0;
			for (size_t i = 0; i < n; i++)
				if (all[i].dev == k)
					w[dn++] = all[i];
		}
		gr_sort(dw, dn, sizeof(*dw), gr_cmp_work);
		err = device_facts(r, &r->dev[k], dw, dn);
		if (!err)
			err = gpu_clock__measure(pd, r->launch_of, r->dev[k].device,
						 &r->dev[k].clock);
	}
	shelf__put(w, w_bytes);
	shelf__put(all, all_bytes);
	return err;
}

/* Launch-to-start delay per stream, and the kernels by name with their heaviest stack. */
static int joined_facts(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;
	struct keymap *names = keymap__new(), *stacks = keymap__new();
	int err = names && stacks ? 0 : -ENOMEM;
	const char *last_name = NULL; /* names are interned: runs of one skip the lookup */
	void *last_v = NULL;
	struct stream_stat *last_st = NULL;

	for (size_t i = 0; i < pd->nr_gpu && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		const struct corr_cpu_rec *l =
			r->launch_of[i] ? &pd->launches[r->launch_of[i] - 1] : NULL;
		struct stream_stat *st;
		uint64_t dur = g->end_ns > g->start_ns ? g->end_ns - g->start_ns : 0;

		if (!gr_is_work(g))
			continue;
		st = last_st && last_st->device == g->device && last_st->stream == g->stream_id
			     ? last_st
			     : stream_of(r, g->device, g->stream_id);
		last_st = st;
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
			void *v =
				name == last_name ? last_v : keymap__get(names, name, strlen(name));
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
			last_name = name;
			last_v = v;
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

		gr_sort(st->delay, st->n, sizeof(*st->delay), cmp_u64);
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
	gr_sort(r->streams, r->nr_streams, sizeof(*r->streams), cmp_stream);
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
	/* Without joins no kernel has a launch: no pass over the slice's records for none. */
	for (size_t i = 0; pd->nr_joins && i < pd->nr_gpu; i++) {
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
	gr_sort(k, n, sizeof(*k), cmp_klaunch);
	for (size_t i = 0; i + 1 < n; i++) {
		if (k[i].tid != k[i + 1].tid)
			continue;
		iv[ni++] = k[i + 1].t - k[i].t;
		lf->shorter += k[i].dur < k[i + 1].t - k[i].t;
	}
	gr_sort(iv, ni, sizeof(*iv), cmp_u64);
	gr_sort(dur, n, sizeof(*dur), cmp_u64);
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
	for (size_t i = 0;
	     r->nr_of_kind[CORR_GPU_RUNTIME_API] + r->nr_of_kind[CORR_GPU_DRIVER_API] &&
	     i < pd->nr_gpu && !err;
	     i++) {
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

	/* Without joins no copy has a launching stack. */
	for (size_t i = 0; pd->nr_joins && r->nr_of_kind[CORR_GPU_MEMCPY] && i < pd->nr_gpu && !err;
	     i++) {
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

	for (size_t i = 0; r->nr_of_kind[CORR_GPU_MEMCPY] && i < pd->nr_gpu; i++) {
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

static int resolve_frames(struct gpu_report *r)
{
	int err = 0;

	for (size_t i = 0; i < r->nr_blames && !err; i++)
		err = gr_frames_of(r->pd, r->blames[i].pid, r->blames[i].stack_id,
				   &r->blames[i].frames, &r->blames[i].nr_frames);
	if (!err)
		err = gpu_report__merge_blames(r);
	for (size_t i = 0; i < 2 && !err; i++)
		if (r->copy_blame[i].ns)
			err = gr_frames_of(r->pd, r->copy_blame[i].pid, r->copy_blame[i].stack_id,
					   &r->copy_blame[i].frames, &r->copy_blame[i].nr_frames);
	for (size_t i = 0; i < r->nr_kernels && !err; i++)
		if (r->kernels[i].stack_ns)
			err = gr_frames_of(r->pd, r->kernels[i].pid, r->kernels[i].stack_id,
					   &r->kernels[i].frames, &r->kernels[i].nr_frames);
	return err;
}

static int index_inputs(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;
	size_t bytes = (pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*r->launch_of);

	/* Not cleared: a shelved buffer is the last slice's. */
	r->launch_of = shelf__take(bytes, &r->launch_of_bytes);
	if (r->launch_of)
		memset(r->launch_of, 0, bytes);
	r->samples = sorted_index(pd->nr_samples, cmp_sample, pd);
	r->waits = sorted_index(pd->nr_waits, cmp_wait, pd);
	r->blame_ix = keymap__new();
	if (!r->launch_of || !r->samples || !r->waits || !r->blame_ix)
		return -ENOMEM;
	/* One look at each record's kind, for the passes that want one kind only. */
	memset(r->nr_of_kind, 0, sizeof(r->nr_of_kind));
	for (size_t i = 0; i < pd->nr_gpu; i++)
		if (pd->gpu[i].kind <= CORR_GPU_NVTX)
			r->nr_of_kind[pd->gpu[i].kind]++;
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
		err = gr_index_ranges(r);
	if (!err && !keep)
		err = gr_index_woken(r);
	if (!err)
		err = devices(r);
	if (!err)
		err = gr_unsampled(r);
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
	gr_work_in_ranges(r);
	err = resolve_frames(r); /* blames merged by their frames, heaviest first */
	if (!err)
		err = gr_resolve_chains(r);
	/* The indexes into pd are of no more use. */
	shelf__put(r->launch_of, r->launch_of_bytes);
	free(r->samples);
	free(r->waits);
	free(r->nvtx);
	free(r->passes);
	keymap__free(r->blame_ix);
	free(r->unsampled);
	r->unsampled = NULL;
	r->nr_unsampled = r->cap_unsampled = 0;
	r->launch_of = r->samples = r->waits = NULL;
	r->nvtx = NULL;
	r->nr_nvtx = 0;
	r->passes = NULL;
	r->nr_passes = 0;
	r->blame_ix = NULL;
	r->last_blame = 0;
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
	gr_sort(r->streams, r->nr_streams, sizeof(*r->streams), cmp_stream);
	gr_sort(r->ranges, r->nr_ranges, sizeof(*r->ranges), gr_cmp_range);
	gr_sort(r->kernels, r->nr_kernels, sizeof(*r->kernels), gr_cmp_kernel);
	err = gpu_report__merge_blames(r); /* merged reports: the same stacks from each slice */
	if (err)
		return err;
	for (size_t i = 0; i < r->nr_dev; i++) {
		gr_device_findings(r, &r->dev[i]);
		if (r->dev[i].last - r->dev[i].first > longest)
			longest = r->dev[i].last - r->dev[i].first;
	}
	gr_copy_findings(r, longest);
	err = r->strs ? gpu_report__calls_memory(r) : gpu_memory__build(r->pd, &r->mem);
	if (err)
		return err;
	gr_memory_findings(r);
	return 0;
}

int gpu_report__build(const struct profile_data *pd, struct gpu_report **ret)
{
	struct gpu_report *r = calloc(1, sizeof(*r));

	*ret = NULL;
	if (!r)
		return -ENOMEM;
	return gpu_report__finished(r, gpu_report__facts(r, pd, false), ret);
}

int gpu_report__finished(struct gpu_report *r, int err, struct gpu_report **ret)
{
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
	gr_free_chains(r);
	keymap__free(r->blame_ix);
	gpu_memory__free(r->mem);
	free(r->nvtx);
	free(r->passes);
	free(r->ranges);
	free(r->dev);
	free(r->streams);
	free(r->blames);
	free(r->kernels);
	shelf__put(r->launch_of, r->launch_of_bytes);
	free(r->samples);
	free(r->waits);
	free(r->unsampled);
	free(r);
}

size_t gpu_report__nr_devices(const struct gpu_report *r)
{
	return r->nr_dev;
}

const char *gpu_report__cause_name(enum gpu_idle_cause c)
{
	return c < GPU_IDLE_NR ? gr_cause_names[c] : "unknown";
}

void gpu_report__for_each_blame(const struct gpu_report *r,
				void (*fn)(void *ctx, const struct gpu_blame_view *b), void *ctx)
{
	for (size_t i = 0; i < r->nr_blames; i++) {
		const struct blame *b = &r->blames[i];
		struct gpu_blame_view v = {.cause = (enum gpu_idle_cause)b->cause,
					   .device = b->device,
					   .pid = b->pid,
					   .tid = b->tid,
					   .api = b->api,
					   .frames = b->frames,
					   .nr_frames = b->nr_frames,
					   .ns = b->ns};

		fn(ctx, &v);
	}
}
