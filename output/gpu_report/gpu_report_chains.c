// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "output/gpu_report/gpu_report.h"
#include "output/gpu_report/gpu_report_internal.h"
#include "output/model/frame_names.h"
#include "output/model/profile.h"

/*
 * Host idle time followed through wait chains (profile_data.woken, from --wakers): while the
 * launching thread waited, the time is the work of the thread at the end of the chain that
 * woke it (a DataLoader worker behind its feeder thread and the pin-memory thread), so it is
 * blamed on that thread's samples over the wait, not on the wait itself.
 */

struct woken_key {
	uint32_t tid;
	uint64_t end;
	size_t i;
};

static int cmp_woken_key(const void *a, const void *b)
{
	const struct woken_key *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

int gr_index_woken(struct gpu_report *r)
{
	const struct profile_data *pd = r->pd;
	struct woken_key *k;

	if (!pd->nr_woken)
		return 0;
	k = malloc(pd->nr_woken * sizeof(*k));
	r->woken = malloc(pd->nr_woken * sizeof(*r->woken));
	r->chain_ix = keymap__new();
	if (!k || !r->woken || !r->chain_ix) {
		free(k);
		return -ENOMEM;
	}
	for (size_t i = 0; i < pd->nr_woken; i++)
		k[i] = (struct woken_key){pd->woken[i].tid, pd->woken[i].end_ns, i};
	qsort(k, pd->nr_woken, sizeof(*k), cmp_woken_key);
	for (size_t i = 0; i < pd->nr_woken; i++)
		r->woken[i] = k[i].i;
	free(k);
	return 0;
}

/* The first woken stretch of tid that ended after t (pd->nr_woken: none). */
static size_t first_woken(const struct gpu_report *r, uint32_t tid, uint64_t t)
{
	const struct profile_data *pd = r->pd;
	size_t lo = 0, hi = pd->nr_woken;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct profile_woken *w = &pd->woken[r->woken[mid]];

		if (w->tid < tid || (w->tid == tid && w->end_ns <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The chain's statistics (a new one at 0; NULL past GR_MAX_CHAINS or without memory). */
static struct chain_stat *chain_of(struct gpu_report *r, uint32_t device,
				   const struct profile_woken *w, const struct profile_hop *hops)
{
	struct chain_stat key = {.device = device, .pid = w->pid, .tid = w->tid};
	size_t len = offsetof(struct chain_stat, wait_stack);
	void *v;

	key.nr_hops = w->nr_hops < GR_CHAIN_HOPS ? w->nr_hops : GR_CHAIN_HOPS;
	for (uint32_t h = 0; h < key.nr_hops; h++) {
		key.hop_pid[h] = hops[h].pid;
		key.hop_tid[h] = hops[h].tid;
	}
	v = keymap__get(r->chain_ix, &key, len);
	if (v)
		return &r->chains[(size_t)v - 1];
	if (r->nr_chains >= GR_MAX_CHAINS ||
	    vec_reserve(&r->chains, &r->cap_chains, r->nr_chains + 1) ||
	    keymap__put(r->chain_ix, &key, len, (void *)(r->nr_chains + 1), NULL))
		return NULL;
	key.wait_stack = w->stack_id;
	for (uint32_t h = 0; h < key.nr_hops; h++)
		key.hop_stack[h] = hops[h].stack_id;
	r->chains[r->nr_chains] = key;
	return &r->chains[r->nr_chains++];
}

/*
 * ns of the gap blamed on the samples of the chain's last hop h from when it began running (or
 * the wait's start, if later) to when it woke the next one; none there: its stack where it
 * woke it. *ret_worked: whether samples took it.
 */
static int blame_work(struct gpu_report *r, uint32_t device, const struct profile_woken *w,
		      const struct profile_hop *h, uint64_t ns, bool *ret_worked)
{
	const struct profile_data *pd = r->pd;
	uint64_t from = h->run_ns > w->start_ns ? h->run_ns : w->start_ns;
	size_t i = gr_first_sample(r, h->tid, from), k = 0;
	int err = 0;

	for (size_t j = i; j < pd->nr_samples; j++, k++) {
		const struct profile_sample *s = &pd->samples[r->samples[j]];

		if (s->tid != h->tid || s->time_ns > h->wake_ns)
			break;
	}
	*ret_worked = k > 0;
	if (!k)
		return gr_blame(r, GPU_IDLE_HOST, device, h->pid, h->tid, h->stack_id, NULL, ns,
				true);
	for (size_t j = 0; j < k && !err; j++) {
		const struct profile_sample *s = &pd->samples[r->samples[i + j]];

		err = gr_blame(r, GPU_IDLE_HOST, device, s->pid, s->tid, s->stack_id, NULL,
			       ns / k + (j < ns % k), j == 0);
	}
	return err;
}

int gr_blame_chains(struct gpu_report *r, size_t dev, const struct corr_cpu_rec *l, uint64_t from,
		    uint64_t ns, uint64_t *ret_chained)
{
	const struct profile_data *pd = r->pd;
	uint32_t device = r->dev[dev].device;
	uint64_t to = l->time_ns, chained = 0;
	int err = 0;

	*ret_chained = 0;
	/* The devices are all known once gaps are explained. */
	if (!r->chained_ns) {
		r->chained_ns = calloc(r->nr_dev, sizeof(*r->chained_ns));
		r->worked_ns = calloc(r->nr_dev, sizeof(*r->worked_ns));
		if (!r->chained_ns || !r->worked_ns)
			return -ENOMEM;
	}
	for (size_t i = first_woken(r, l->tid, from); i < pd->nr_woken && !err; i++) {
		const struct profile_woken *w = &pd->woken[r->woken[i]];
		uint64_t s = w->start_ns > from ? w->start_ns : from;
		uint64_t e = w->end_ns < to ? w->end_ns : to, part;
		const struct profile_hop *hops;
		struct chain_stat *c;
		bool worked = false;

		if (w->tid != l->tid || w->start_ns >= to)
			break;
		if (w->pid != l->pid || !w->nr_hops || e <= s ||
		    (size_t)w->first_hop + w->nr_hops > pd->nr_hops)
			continue;
		part = e - s;
		if (part > ns - chained)
			part = ns - chained;
		if (!part)
			break;
		hops = &pd->hops[w->first_hop];
		err = blame_work(r, device, w, &hops[w->nr_hops - 1], part, &worked);
		chained += part;
		r->chained_ns[dev] += part;
		r->worked_ns[dev] += worked ? part : 0;
		if (!err && (c = chain_of(r, device, w, hops))) {
			c->ns += part;
			c->work_ns += worked ? part : 0;
		}
	}
	*ret_chained = chained;
	return err;
}

static int cmp_chain(const void *a, const void *b)
{
	const struct chain_stat *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int gr_resolve_chains(struct gpu_report *r)
{
	int err = 0;

	keymap__free(r->chain_ix);
	r->chain_ix = NULL;
	free(r->woken);
	r->woken = NULL;
	if (r->nr_chains)
		qsort(r->chains, r->nr_chains, sizeof(*r->chains), cmp_chain);
	for (size_t i = 0; i < r->nr_chains && !err; i++) {
		struct chain_stat *c = &r->chains[i];

		err = gr_frames_of(r->pd, c->pid, c->wait_stack, &c->wait_frames,
				   &c->nr_wait_frames);
		for (uint32_t h = 0; h < c->nr_hops && !err; h++) {
			err = gr_frames_of(r->pd, c->hop_pid[h], c->hop_stack[h], &c->hop_frames[h],
					   &c->nr_hop_frames[h]);
			c->hop_names[h] =
				r->pd->name ? r->pd->name(r->pd->ctx, c->hop_pid[h], 0) : NULL;
		}
	}
	return err;
}

void gr_free_chains(struct gpu_report *r)
{
	for (size_t i = 0; i < r->nr_chains; i++) {
		free(r->chains[i].wait_frames);
		for (uint32_t h = 0; h < GR_CHAIN_HOPS; h++)
			free(r->chains[i].hop_frames[h]);
	}
	free(r->chains);
	r->chains = NULL;
	r->nr_chains = r->cap_chains = 0;
	keymap__free(r->chain_ix);
	r->chain_ix = NULL;
	free(r->woken);
	r->woken = NULL;
	free(r->chained_ns);
	free(r->worked_ns);
	r->chained_ns = r->worked_ns = NULL;
}

/* Whether blame b ran under function fn (its length n). */
static bool under(const struct blame *b, const char *fn, size_t n)
{
	return frame__has_fn((const char *const *)b->frames, b->nr_frames, fn, n);
}

/* The host blames' time of pid on device under a frame of function fn (len n). */
static uint64_t fn_time(const struct gpu_report *r, uint32_t device, uint32_t pid, const char *fn,
			size_t n)
{
	uint64_t t = 0;

	for (size_t i = 0; i < r->nr_blames; i++) {
		const struct blame *b = &r->blames[i];

		if (b->cause == GPU_IDLE_HOST && b->device == device && b->pid == pid &&
		    under(b, fn, n))
			t += b->ns;
	}
	return t;
}

/*
 * Where the last hop's time went: from the innermost frame of its heaviest stack outwards,
 * the first Python function (else any) that half its host time on the device ran under;
 * its share of that time into *ret_share. NULL: none.
 */
static const char *work_frame(const struct gpu_report *r, uint32_t device, uint32_t pid,
			      double *ret_share)
{
	const struct blame *top = NULL;
	uint64_t total = 0;

	for (size_t i = 0; i < r->nr_blames; i++) {
		const struct blame *b = &r->blames[i];

		if (b->cause != GPU_IDLE_HOST || b->device != device || b->pid != pid)
			continue;
		total += b->ns;
		if (!top && b->nr_frames)
			top = b; /* blames are sorted, heaviest first */
	}
	if (!top || !total)
		return NULL;
	for (int python = 1; python >= 0; python--)
		for (size_t k = top->nr_frames; k-- > 0;) {
			const char *fr = top->frames[k];
			uint64_t t;

			if (python && !frame__is_python(fr))
				continue;
			t = fn_time(r, device, pid, fr, frame__fn_len(fr));
			if (2 * t >= total) {
				*ret_share = gr_share_of(t, total);
				return fr;
			}
		}
	return NULL;
}

void gr_chain_finding(struct gpu_report *r, struct finding *f, const struct device *d)
{
	size_t dev = (size_t)(d - r->dev);
	const struct chain_stat *c = NULL;
	uint32_t last;
	char name[64], wait[512];
	const char *pname;
	int len;

	if (!r->chained_ns || !r->chained_ns[dev] || !d->idle_by[GPU_IDLE_HOST])
		return;
	for (size_t i = 0; i < r->nr_chains && !c; i++)
		if (r->chains[i].device == d->device && r->chains[i].nr_hops)
			c = &r->chains[i];
	f->explained = gr_share_of(r->worked_ns[dev], d->idle_by[GPU_IDLE_HOST]);
	if (f->nr_fig < sizeof(f->fig) / sizeof(f->fig[0]))
		f->fig[f->nr_fig++] = (struct figure){
			.key = "chained_share",
			.is_ratio = true,
			.d = gr_share_of(r->chained_ns[dev], d->idle_by[GPU_IDLE_HOST])};
	if (!c)
		return;
	f->chain = c;
	last = c->nr_hops - 1;
	f->work_frame = work_frame(r, d->device, c->hop_pid[last], &f->work_share);
	pname = c->hop_names[last];
	if (!pname) {
		snprintf(name, sizeof(name), "pid %u", c->hop_pid[last]);
		pname = name;
	}
	len = snprintf(f->why, sizeof(f->why),
		       "the launching thread waited in %s, woken by %s %u (thread %u) through %u "
		       "thread%s",
		       frame__wait_site((const char *const *)c->wait_frames, c->nr_wait_frames,
					wait, sizeof(wait)),
		       pname, c->hop_pid[last], c->hop_tid[last], c->nr_hops,
		       c->nr_hops == 1 ? "" : "s");
	if (len > 0 && (size_t)len < sizeof(f->why) && f->work_frame)
		snprintf(f->why + len, sizeof(f->why) - (size_t)len,
			 ", whose time went to %s %.0f%%", f->work_frame, 100 * f->work_share);
	/* It points at the work: the heaviest stack under its frame, the one that must change. */
	if (f->work_frame) {
		for (size_t i = 0; i < r->nr_blames; i++)
			if (r->blames[i].cause == GPU_IDLE_HOST &&
			    r->blames[i].device == d->device &&
			    r->blames[i].pid == c->hop_pid[last] &&
			    under(&r->blames[i], f->work_frame, frame__fn_len(f->work_frame))) {
				f->pid = r->blames[i].pid;
				f->frames = (const char *const *)r->blames[i].frames;
				f->nr_frames = r->blames[i].nr_frames;
				break;
			}
	}
}
