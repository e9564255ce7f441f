// SPDX-License-Identifier: Apache-2.0
/*
 * GPU reports kept past their profile and merged: the service keeps one per window slice and
 * user, and a query merges those it asks for. Sums stay exact; the percentiles and medians of
 * a merged report come from histograms (within 1/16 of the value); see GPU_REPORT.md.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/keymap.h"
#include "daemon/base/strset.h"
#include "daemon/base/vec.h"
#include "output/gpu_report/gpu_memory.h"
#include "output/gpu_report/gpu_report.h"
#include "output/gpu_report/gpu_report_internal.h"
#include "output/model/profile.h"

/* ---- histograms ---- */

static size_t hist_index(uint64_t ns)
{
	unsigned int e;

	if (ns < HIST_SUB)
		return (size_t)ns;
	e = 63u - (unsigned int)__builtin_clzll(ns); /* >= 4 */
	if (e >= 40)
		return HIST_BUCKETS - 1;
	return HIST_SUB + (size_t)(e - 4) * HIST_SUB + (size_t)((ns >> (e - 4)) & (HIST_SUB - 1));
}

/* The middle of bucket i. */
static uint64_t hist_value(size_t i)
{
	size_t e;
	uint64_t width;

	if (i < HIST_SUB)
		return i;
	e = (i - HIST_SUB) / HIST_SUB + 4;
	width = 1ull << (e - 4);
	return (HIST_SUB + (i - HIST_SUB) % HIST_SUB) * width + width / 2;
}

void gpu_hist__add(uint32_t *h, uint64_t ns)
{
	h[hist_index(ns)]++;
}

uint64_t gpu_hist__at(const uint32_t *h, uint64_t n, uint64_t rank)
{
	uint64_t seen = 0;

	for (size_t i = 0; i < HIST_BUCKETS && seen < n; i++) {
		seen += h[i];
		if (seen > rank)
			return hist_value(i);
	}
	return 0;
}

/* into += from, bucket by bucket; into made when NULL. 0 or -ENOMEM. */
static int hist_merge(uint32_t **into, const uint32_t *from)
{
	if (!from)
		return 0;
	if (!*into && !(*into = calloc(HIST_BUCKETS, sizeof(**into))))
		return -ENOMEM;
	for (size_t i = 0; i < HIST_BUCKETS; i++)
		(*into)[i] += from[i];
	return 0;
}

/* ---- strings ---- */

static int intern(struct strset *s, const char **p)
{
	const char *c;

	if (!*p)
		return 0;
	c = strset__intern(s, *p);
	if (!c)
		return -ENOMEM;
	*p = c;
	return 0;
}

/* A copy of n frames as s's strings (*ret NULL when n is 0). */
static int intern_frames(struct strset *s, const char *const *frames, size_t n, const char ***ret)
{
	const char **v;

	*ret = NULL;
	if (!n)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = frames[i];
		if (intern(s, &v[i])) {
			free(v);
			return -ENOMEM;
		}
	}
	*ret = v;
	return 0;
}

/* Frames in place as s's strings. */
static int intern_in_place(struct strset *s, const char **frames, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (intern(s, &frames[i]))
			return -ENOMEM;
	return 0;
}

/* Two stacks of one report's strings read the same (interned: compared by address). */
static bool same_frames(const char *const *a, size_t na, const char *const *b, size_t nb)
{
	return na == nb && (!na || !memcmp(a, b, na * sizeof(*a)));
}

/* ---- a report of pd's processes that accept takes ---- */

/* Every string r names as its own, and pd's memory calls kept with their stacks. */
static int own(struct gpu_report *r, const struct profile_data *pd)
{
	struct strset *s = r->strs;
	int err = 0;

	for (size_t i = 0; i < r->nr_blames && !err; i++)
		if (intern(s, &r->blames[i].api) ||
		    intern_in_place(s, r->blames[i].frames, r->blames[i].nr_frames))
			err = -ENOMEM;
	for (size_t i = 0; i < r->nr_kernels && !err; i++)
		if (intern(s, &r->kernels[i].name) ||
		    intern_in_place(s, r->kernels[i].frames, r->kernels[i].nr_frames))
			err = -ENOMEM;
	for (size_t i = 0; i < 2 && !err; i++)
		err = intern_in_place(s, r->copy_blame[i].frames, r->copy_blame[i].nr_frames);
	for (size_t i = 0; i < r->nr_ranges && !err; i++)
		if (intern(s, &r->ranges[i].domain) || intern(s, &r->ranges[i].name))
			err = -ENOMEM;
	if (!err && pd->nr_mem && !(r->calls = calloc(pd->nr_mem, sizeof(*r->calls))))
		err = -ENOMEM;
	r->cap_calls = pd->nr_mem;
	for (size_t i = 0; i < pd->nr_mem && !err; i++) {
		struct mem_call *c = &r->calls[r->nr_calls];
		const char *const *frames = NULL;
		size_t n = 0;

		c->m = pd->mem[i];
		if (c->m.stack_id == CORR_NO_STACK || !pd->stack ||
		    pd->stack(pd->ctx, c->m.pid, c->m.stack_id, &frames, &n))
			n = 0;
		if (intern(s, &c->m.api) || intern_frames(s, frames, n, &c->frames))
			err = -ENOMEM;
		c->nr_frames = err ? 0 : n;
		c->m.stack_id = n ? (uint32_t)r->nr_calls : CORR_NO_STACK;
		r->nr_calls++;
	}
	return err;
}

struct gpu_report *gpu_report__new(void)
{
	struct gpu_report *r = calloc(1, sizeof(*r));

	if (r && !(r->strs = strset__new(0))) {
		free(r);
		return NULL;
	}
	if (r)
		r->start_ns = UINT64_MAX; /* no span until a report is merged in */
	return r;
}

int gpu_report__collect(const struct profile_data *pd, bool (*accept)(void *ctx, uint32_t pid),
			void *ctx, struct gpu_report **ret)
{
	struct gpu_report *r = gpu_report__new();
	struct profile_taken t = {0};
	int err = r ? 0 : -ENOMEM;

	*ret = NULL;
	if (!err) {
		err = profile__take(pd, accept, ctx, &t);
		pd = &t.pd;
	}
	if (!err)
		err = gpu_report__facts(r, pd, true);
	if (!err)
		err = own(r, pd);
	profile_taken__release(&t);
	if (r)
		r->pd = NULL; /* its strings are its own now */
	if (err) {
		gpu_report__free(r);
		return err;
	}
	*ret = r;
	return 0;
}

void gpu_report__device_figures(const struct gpu_report *r, struct gpu_device_figures *out,
				size_t max, size_t *ret_n)
{
	*ret_n = 0;
	for (size_t i = 0; i < r->nr_dev; i++) {
		const struct device *d = &r->dev[i];

		if (i < max) {
			out[i] = (struct gpu_device_figures){.device = d->device,
							     .busy_ns = d->busy,
							     .idle_ns = d->idle,
							     .kernels = d->kernels,
							     .copies = d->copies,
							     .memsets = d->memsets};
			memcpy(out[i].idle_by, d->idle_by, sizeof(out[i].idle_by));
		}
		(*ret_n)++;
	}
}

int gpu_report__figures(const struct profile_data *pd, bool (*accept)(void *ctx, uint32_t pid),
			void *ctx, struct gpu_device_figures *out, size_t max, size_t *ret_n)
{
	struct gpu_report *r = gpu_report__new();
	struct profile_taken t = {0};
	int err = r ? profile__take(pd, accept, ctx, &t) : -ENOMEM;

	*ret_n = 0;
	if (!err)
		err = gpu_report__facts(r, &t.pd, false);
	if (!err)
		gpu_report__device_figures(r, out, max, ret_n);
	profile_taken__release(&t);
	if (r)
		r->pd = NULL;
	gpu_report__free(r);
	return err;
}

/* ---- merging ---- */

/* Busy ns per bin of [first, last), bin_ns wide, spread over to's (wider or as wide) bins by
 * how much of each falls in them. */
static void rebin(struct device *to, const uint64_t *bins, size_t nr, uint64_t first, uint64_t last,
		  uint64_t bin_ns)
{
	for (size_t i = 0; i < nr; i++) {
		uint64_t s0 = first + i * bin_ns, e = i + 1 < nr ? s0 + bin_ns : last;
		uint64_t s = s0, left = bins[i];

		while (left && s < e) {
			size_t k = (size_t)((s - to->first) / to->bin_ns);
			uint64_t k_end, part;

			if (k >= to->nr_bins)
				break;
			k_end = to->first + (k + 1) * to->bin_ns;
			part = k_end >= e ? left
					  : (uint64_t)((double)bins[i] * (double)(k_end - s) /
						       (double)(e - s0));
			part = part < left ? part : left;
			to->bins[k] += part;
			left -= part;
			s = k_end;
		}
		to->bins[to->nr_bins - 1] += left; /* rounding, or past the end */
	}
}

/* A device of from into into's d (d->first == UINT64_MAX: new). */
static int merge_device(struct device *d, const struct device *e)
{
	struct device old = *d;
	uint64_t span;

	if (old.first != UINT64_MAX && e->first > old.last) {
		/* The device idled between the slices: nothing in either explains it. */
		uint64_t ns = e->first - old.last;

		d->nr_gaps++;
		d->idle += ns;
		d->idle_by[GPU_IDLE_UNKNOWN] += ns;
		d->hist[gpu_report__gap_bucket(ns)]++;
		if (ns > d->longest_gap)
			d->longest_gap = ns;
	}
	d->first = e->first < old.first ? e->first : old.first;
	d->last = e->last > old.last || old.first == UINT64_MAX ? e->last : old.last;
	span = d->last - d->first;
	d->bin_ns = S;
	if (span / S >= MAX_BINS)
		d->bin_ns = span / MAX_BINS + 1;
	d->nr_bins = (size_t)((span + d->bin_ns - 1) / d->bin_ns);
	if (!d->nr_bins)
		d->nr_bins = 1;
	d->bins = calloc(d->nr_bins, sizeof(*d->bins));
	if (!d->bins) {
		*d = old;
		return -ENOMEM;
	}
	if (old.first != UINT64_MAX)
		rebin(d, old.bins, old.nr_bins, old.first, old.last, old.bin_ns);
	rebin(d, e->bins, e->nr_bins, e->first, e->last, e->bin_ns);
	free(old.bins);
	d->busy += e->busy;
	d->kernels += e->kernels;
	d->copies += e->copies;
	d->memsets += e->memsets;
	d->nr_gaps += e->nr_gaps;
	d->idle += e->idle;
	if (e->longest_gap > d->longest_gap)
		d->longest_gap = e->longest_gap;
	for (int b = 0; b < NR_GAP_BUCKETS; b++)
		d->hist[b] += e->hist[b];
	for (int c = 0; c < GPU_IDLE_NR; c++)
		d->idle_by[c] += e->idle_by[c];
	d->comm_ns += e->comm_ns;
	d->comm_overlap_ns += e->comm_overlap_ns;
	gpu_clock__merge(&d->clock, &e->clock);
	return 0;
}

static int merge_devices(struct gpu_report *into, const struct gpu_report *from)
{
	for (size_t i = 0; i < from->nr_dev; i++) {
		struct device *d = NULL;

		for (size_t k = 0; k < into->nr_dev && !d; k++)
			if (into->dev[k].device == from->dev[i].device)
				d = &into->dev[k];
		if (!d) {
			if (vec_reserve(&into->dev, &into->cap_dev, into->nr_dev + 1))
				return -ENOMEM;
			d = &into->dev[into->nr_dev++];
			*d = (struct device){.device = from->dev[i].device, .first = UINT64_MAX};
			gpu_clock__init(&d->clock);
		}
		if (merge_device(d, &from->dev[i]))
			return -ENOMEM;
	}
	return 0;
}

static int merge_streams(struct gpu_report *into, const struct gpu_report *from)
{
	for (size_t i = 0; i < from->nr_streams; i++) {
		const struct stream_stat *e = &from->streams[i];
		struct stream_stat *st = NULL;

		for (size_t k = 0; k < into->nr_streams && !st; k++)
			if (into->streams[k].device == e->device &&
			    into->streams[k].stream == e->stream)
				st = &into->streams[k];
		if (!st) {
			if (vec_reserve(&into->streams, &into->cap_streams, into->nr_streams + 1))
				return -ENOMEM;
			st = &into->streams[into->nr_streams++];
			/* The first report of a stream keeps its exact figures. */
			*st = *e;
			st->delay = NULL;
			st->cap = 0;
			st->hist = NULL;
			if (hist_merge(&st->hist, e->hist))
				return -ENOMEM;
			continue;
		}
		if (hist_merge(&st->hist, e->hist))
			return -ENOMEM;
		st->approx = true;
		st->work += e->work;
		st->n += e->n;
		st->sum += e->sum;
		if (e->max > st->max)
			st->max = e->max;
	}
	return 0;
}

/* A stack from another report, as into's strings. */
static int frames_into(struct gpu_report *into, const char *const *frames, size_t n,
		       const char ***ret)
{
	return intern_frames(into->strs, frames, n, ret);
}

static int merge_blames(struct gpu_report *into, const struct gpu_report *from)
{
	if (vec_reserve(&into->blames, &into->cap_blames, into->nr_blames + from->nr_blames))
		return -ENOMEM;
	for (size_t i = 0; i < from->nr_blames; i++) {
		struct blame b = from->blames[i];

		if (intern(into->strs, &b.api) ||
		    frames_into(into, (const char *const *)from->blames[i].frames, b.nr_frames,
				&b.frames))
			return -ENOMEM;
		into->blames[into->nr_blames++] = b;
	}
	return 0;
}

/* A place's time (a kernel's or a copy class's heaviest stack) from another report: summed
 * when both name the same stack, else the heavier one stays. */
static int merge_place(struct gpu_report *into, uint32_t *pid, uint64_t *ns, const char ***frames,
		       size_t *nr, uint32_t e_pid, uint64_t e_ns, const char *const *e_frames,
		       size_t e_nr)
{
	const char **v;

	if (!e_ns)
		return 0;
	if (frames_into(into, e_frames, e_nr, &v))
		return -ENOMEM;
	if (*ns && *pid == e_pid && same_frames((const char *const *)*frames, *nr, v, e_nr)) {
		*ns += e_ns;
		free(v);
		return 0;
	}
	if (e_ns <= *ns) {
		free(v);
		return 0;
	}
	free(*frames);
	*frames = v;
	*nr = e_nr;
	*pid = e_pid;
	*ns = e_ns;
	return 0;
}

static int merge_kernels(struct gpu_report *into, const struct gpu_report *from)
{
	struct keymap *ix = keymap__new();
	int err = ix ? 0 : -ENOMEM;

	for (size_t i = 0; i < into->nr_kernels && !err; i++)
		err = keymap__put(ix, &into->kernels[i].name, sizeof(const char *), (void *)(i + 1),
				  NULL);
	for (size_t i = 0; i < from->nr_kernels && !err; i++) {
		const struct kernel_stat *e = &from->kernels[i];
		const char *name = e->name;
		struct kernel_stat *k;
		void *v;

		err = intern(into->strs, &name);
		if (err)
			break;
		v = keymap__get(ix, &name, sizeof(name));
		if (!v) {
			if (vec_reserve(&into->kernels, &into->cap_kernels, into->nr_kernels + 1) ||
			    keymap__put(ix, &name, sizeof(name), (void *)(into->nr_kernels + 1),
					NULL)) {
				err = -ENOMEM;
				break;
			}
			into->kernels[into->nr_kernels] = (struct kernel_stat){.name = name};
			v = (void *)(++into->nr_kernels);
		}
		k = &into->kernels[(size_t)v - 1];
		k->count += e->count;
		k->total += e->total;
		if (e->max > k->max)
			k->max = e->max;
		err = merge_place(into, &k->pid, &k->stack_ns, &k->frames, &k->nr_frames, e->pid,
				  e->stack_ns, (const char *const *)e->frames, e->nr_frames);
	}
	keymap__free(ix);
	return err;
}

static int merge_copies(struct gpu_report *into, const struct gpu_report *from)
{
	for (size_t i = 0; i < sizeof(into->copies) / sizeof(into->copies[0]); i++) {
		struct copy_stat *c = &into->copies[i];
		const struct copy_stat *e = &from->copies[i];

		if (!e->count)
			continue;
		c->dir = e->dir;
		c->host_mem = e->host_mem;
		c->async = e->async;
		c->count += e->count;
		c->bytes += e->bytes;
		c->ns += e->ns;
	}
	for (size_t i = 0; i < 2; i++) {
		struct blame *b = &into->copy_blame[i];
		const struct blame *e = &from->copy_blame[i];
		uint64_t was = b->ns;

		if (merge_place(into, &b->pid, &b->ns, &b->frames, &b->nr_frames, e->pid, e->ns,
				(const char *const *)e->frames, e->nr_frames))
			return -ENOMEM;
		if (b->ns != was && b->ns == e->ns) { /* from's stack took the place */
			b->cause = e->cause;
			b->device = e->device;
			b->tid = e->tid;
		}
	}
	return 0;
}

static int merge_ranges(struct gpu_report *into, const struct gpu_report *from)
{
	for (size_t i = 0; i < from->nr_ranges; i++) {
		struct range_stat e = from->ranges[i], *x = NULL;

		if (intern(into->strs, &e.domain) || intern(into->strs, &e.name))
			return -ENOMEM;
		for (size_t k = 0; k < into->nr_ranges && !x; k++)
			if (into->ranges[k].domain == e.domain && into->ranges[k].name == e.name)
				x = &into->ranges[k];
		if (!x) {
			if (vec_reserve(&into->ranges, &into->cap_ranges, into->nr_ranges + 1))
				return -ENOMEM;
			into->ranges[into->nr_ranges++] = e;
			continue;
		}
		x->gpu_ns += e.gpu_ns;
		x->allocated += e.allocated;
		for (int c = 0; c < GPU_IDLE_NR; c++)
			x->idle[c] += e.idle[c];
	}
	return 0;
}

static int merge_launches(struct gpu_report *into, const struct gpu_report *from)
{
	struct launch_facts *lf = &into->launch;
	const struct launch_facts *e = &from->launch;

	if (!e->kernels && !e->api_ns)
		return 0;
	if (hist_merge(&lf->kernel_hist, e->kernel_hist) ||
	    hist_merge(&lf->interval_hist, e->interval_hist))
		return -ENOMEM;
	if (!lf->kernels && !lf->api_ns) { /* the first: exact */
		uint32_t *kh = lf->kernel_hist, *ih = lf->interval_hist;

		*lf = *e;
		lf->kernel_hist = kh;
		lf->interval_hist = ih;
		return 0;
	}
	lf->approx = true;
	if (e->kernels && (!lf->kernels || e->first_ns < lf->first_ns))
		lf->first_ns = e->first_ns;
	if (e->last_ns > lf->last_ns)
		lf->last_ns = e->last_ns;
	lf->kernels += e->kernels;
	lf->intervals += e->intervals;
	lf->shorter += e->shorter;
	if (e->api_tid == lf->api_tid)
		lf->api_ns += e->api_ns;
	else if (e->api_ns > lf->api_ns) {
		lf->api_ns = e->api_ns;
		lf->api_tid = e->api_tid;
	}
	return 0;
}

static int merge_calls(struct gpu_report *into, const struct gpu_report *from)
{
	if (!from->nr_calls)
		return 0;
	if (vec_reserve(&into->calls, &into->cap_calls, into->nr_calls + from->nr_calls))
		return -ENOMEM;
	for (size_t i = 0; i < from->nr_calls; i++) {
		struct mem_call c = from->calls[i];

		if (intern(into->strs, &c.m.api) ||
		    frames_into(into, (const char *const *)from->calls[i].frames, c.nr_frames,
				&c.frames))
			return -ENOMEM;
		c.m.stack_id = c.nr_frames ? (uint32_t)into->nr_calls : CORR_NO_STACK;
		into->calls[into->nr_calls++] = c;
	}
	return 0;
}

int gpu_report__merge(struct gpu_report *into, const struct gpu_report *from)
{
	int err;

	if (!into->strs || into->finished || !from->strs)
		return -EINVAL; /* only kept reports, before their findings */
	if (from->start_ns < into->start_ns)
		into->start_ns = from->start_ns;
	if (from->end_ns > into->end_ns)
		into->end_ns = from->end_ns;
	err = merge_devices(into, from);
	if (!err)
		err = merge_streams(into, from);
	if (!err)
		err = merge_blames(into, from);
	if (!err)
		err = merge_kernels(into, from);
	if (!err)
		err = merge_copies(into, from);
	if (!err)
		err = merge_ranges(into, from);
	if (!err)
		err = merge_launches(into, from);
	if (!err)
		err = merge_calls(into, from);
	return err;
}

/* ---- what a kept report is worth ---- */

static int call_stack(void *ctx, uint32_t pid, uint32_t stack_id, const char *const **ret,
		      size_t *ret_n)
{
	const struct gpu_report *r = ctx;

	(void)pid;
	if (stack_id >= r->nr_calls)
		return -ENOENT;
	*ret = (const char *const *)r->calls[stack_id].frames;
	*ret_n = r->calls[stack_id].nr_frames;
	return 0;
}

int gpu_report__calls_memory(struct gpu_report *r)
{
	struct profile_mem *mem;
	struct profile_data pd = {.stack = call_stack, .ctx = r, .start_ns = r->start_ns};
	int err;

	if (!r->nr_calls)
		return 0;
	mem = malloc(r->nr_calls * sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	for (size_t i = 0; i < r->nr_calls; i++)
		mem[i] = r->calls[i].m;
	pd.mem = mem;
	pd.nr_mem = r->nr_calls;
	err = gpu_memory__build(&pd, &r->mem);
	free(mem);
	return err;
}

bool gpu_report__empty(const struct gpu_report *r)
{
	return !r->nr_dev && !r->nr_calls && !r->mem;
}

size_t gpu_report__bytes(const struct gpu_report *r)
{
	size_t n =
		sizeof(*r) + (r->strs ? strset__bytes(r->strs) + 32 * strset__count(r->strs) : 0);

	n += r->cap_dev * sizeof(*r->dev) + r->cap_streams * sizeof(*r->streams) +
	     r->cap_blames * sizeof(*r->blames) + r->cap_kernels * sizeof(*r->kernels) +
	     r->cap_ranges * sizeof(*r->ranges) + r->cap_calls * sizeof(*r->calls);
	for (size_t i = 0; i < r->nr_dev; i++)
		n += r->dev[i].nr_bins * sizeof(uint64_t);
	for (size_t i = 0; i < r->nr_streams; i++)
		n += r->streams[i].hist ? HIST_BUCKETS * sizeof(uint32_t) : 0;
	n += (r->launch.kernel_hist ? HIST_BUCKETS * sizeof(uint32_t) : 0) * 2;
	for (size_t i = 0; i < r->nr_blames; i++)
		n += r->blames[i].nr_frames * sizeof(char *);
	for (size_t i = 0; i < r->nr_kernels; i++)
		n += r->kernels[i].nr_frames * sizeof(char *);
	for (size_t i = 0; i < r->nr_calls; i++)
		n += r->calls[i].nr_frames * sizeof(char *);
	return n;
}
