// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/gpu_report/gpu_clock.h"
#include "output/model/profile.h"

/* A joined piece of work, by the thread that launched it. */
struct launched {
	uint32_t pid, tid, device;
	/* end_ns: after sorting, the latest end over the thread's run of launches on this
	 * device up to this one (a synchronize of the device waits for all of them) */
	uint64_t launch_ns, end_ns;
};

static int cmp_launched(const void *a, const void *b)
{
	const struct launched *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->launch_ns < y->launch_ns ? -1 : x->launch_ns > y->launch_ns;
}

static bool is_work(uint8_t kind)
{
	return kind == CORR_GPU_KERNEL || kind == CORR_GPU_MEMCPY || kind == CORR_GPU_MEMSET;
}

/* Waits for everything the process queued on the device, whatever the stream. */
static bool device_wide(const char *api)
{
	return api && (strstr(api, "DeviceSynchronize") || strstr(api, "CtxSynchronize"));
}

void gpu_clock__init(struct gpu_clock *c)
{
	*c = (struct gpu_clock){.lead_min_ns = INT64_MAX, .drain_min_ns = INT64_MAX};
}

/* The last entry of (pid, tid) launched before t, or NULL. */
static const struct launched *last_before(const struct launched *v, size_t n, uint32_t pid,
					  uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct launched *m = &v[mid];

		if (m->pid < pid ||
		    (m->pid == pid && (m->tid < tid || (m->tid == tid && m->launch_ns < t))))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || v[lo - 1].pid != pid || v[lo - 1].tid != tid)
		return NULL;
	return &v[lo - 1];
}

int gpu_clock__measure(const struct profile_data *pd, const size_t *launch_of, uint32_t device,
		       struct gpu_clock *ret)
{
	struct launched *v = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*v));
	size_t n = 0;

	gpu_clock__init(ret);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		const struct corr_cpu_rec *l;
		int64_t lead;

		if (!launch_of[i] || !is_work(g->kind))
			continue;
		l = &pd->launches[launch_of[i] - 1];
		v[n++] = (struct launched){l->pid, l->tid, g->device, l->time_ns, g->end_ns};
		if (g->device != device)
			continue;
		lead = (int64_t)(g->start_ns - l->time_ns);
		if (lead < ret->lead_min_ns)
			ret->lead_min_ns = lead;
		ret->leads++;
	}
	qsort(v, n, sizeof(*v), cmp_launched);
	for (size_t i = 1; i < n; i++)
		if (v[i].pid == v[i - 1].pid && v[i].tid == v[i - 1].tid &&
		    v[i].device == v[i - 1].device && v[i - 1].end_ns > v[i].end_ns)
			v[i].end_ns = v[i - 1].end_ns;
	for (size_t i = 0; i < pd->nr_waits; i++) {
		const struct profile_wait *w = &pd->waits[i];
		const struct launched *last;
		int64_t drain;

		if (!device_wide(w->api))
			continue;
		/* The thread's last launch before the synchronize was made on its current
		 * device, the one it waits for: work it left on another device may run on. */
		last = last_before(v, n, w->pid, w->tid, w->start_ns);
		if (!last || last->device != device)
			continue;
		drain = (int64_t)(w->end_ns - last->end_ns);
		if (drain < ret->drain_min_ns)
			ret->drain_min_ns = drain;
		ret->drains++;
	}
	free(v);
	return 0;
}

void gpu_clock__merge(struct gpu_clock *a, const struct gpu_clock *b)
{
	if (b->lead_min_ns < a->lead_min_ns)
		a->lead_min_ns = b->lead_min_ns;
	if (b->drain_min_ns < a->drain_min_ns)
		a->drain_min_ns = b->drain_min_ns;
	a->leads += b->leads;
	a->drains += b->drains;
}

bool gpu_clock__bound(const struct gpu_clock *c, int64_t *ret_lo, int64_t *ret_hi)
{
	if (!c->leads || !c->drains)
		return false;
	*ret_lo = -c->drain_min_ns;
	*ret_hi = c->lead_min_ns;
	return true;
}
