// SPDX-License-Identifier: Apache-2.0
/* Each GPU's busy share and queue depth over time, made from the GPU report's facts of its work. */
#include <errno.h>
#include <stdlib.h>

#include "output/gpu_report/gpu_activity.h"
#include "output/gpu_report/gpu_report_internal.h"
#include "output/model/profile.h"

#define BUSY_BIN_NS (10 * MS)
#define MAX_POINTS  200000 /* busy bins and queue-depth changes per device */

struct qev {
	uint64_t t;
	int64_t d;
};

static int cmp_qev(const void *a, const void *b)
{
	const struct qev *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

/* The busy share of each bin over the device's work w[0..n) (merged, by start). */
static int busy_bins(const struct work *w, size_t n, struct gpu_device_activity *da)
{
	uint64_t first = w[0].s, last = w[n - 1].e, bin = BUSY_BIN_NS;
	size_t nr = 0;

	if ((last - first) / bin > MAX_POINTS)
		bin = (last - first) / MAX_POINTS + 1;
	da->busy = malloc(((last - first) / bin + 2) * sizeof(*da->busy));
	if (!da->busy)
		return -ENOMEM;
	for (uint64_t b = first, k = 0; b < last; b += bin) {
		uint64_t e = b + bin < last ? b + bin : last, busy = 0;

		while (k < n && w[k].e <= b)
			k++;
		for (size_t j = k; j < n && w[j].s < e; j++) {
			uint64_t s0 = w[j].s > b ? w[j].s : b, e0 = w[j].e < e ? w[j].e : e;

			busy += e0 > s0 ? e0 - s0 : 0;
		}
		da->busy[nr++] = (struct gpu_busy_bin){b, 100.0 * (double)busy / (double)(e - b)};
	}
	da->busy[nr++] = (struct gpu_busy_bin){last, 0};
	da->nr_busy = nr;
	return 0;
}

/* The queue depth at each change (q: +1 at each launch, -1 at its work's end). */
static int queue_depths(struct qev *q, size_t nq, struct gpu_device_activity *da)
{
	int64_t depth = 0;

	gr_sort(q, nq, sizeof(*q), cmp_qev);
	da->queue = malloc((nq ? nq : 1) * sizeof(*da->queue));
	if (!da->queue)
		return -ENOMEM;
	for (size_t i = 0; i < nq && da->nr_queue < MAX_POINTS; i++) {
		depth += q[i].d;
		if (i + 1 < nq && q[i + 1].t == q[i].t)
			continue;
		da->queue[da->nr_queue++] = (struct gpu_queue_depth){q[i].t, depth < 0 ? 0 : depth};
	}
	return 0;
}

static int device_activity(const struct profile_data *pd, const size_t *launch_of,
			   struct gpu_device_activity *da, struct work *w, struct qev *q)
{
	size_t n = 0, nq = 0;
	int err;

	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];

		if (!gr_is_work(g) || g->end_ns <= g->start_ns || g->device != da->device)
			continue;
		w[n++] = (struct work){.s = g->start_ns, .e = g->end_ns, .gpu = (uint32_t)i};
		if (launch_of[i]) {
			q[nq++] = (struct qev){pd->launches[launch_of[i] - 1].time_ns, 1};
			q[nq++] = (struct qev){g->end_ns, -1};
		}
	}
	if (!n)
		return 0;
	gr_sort(w, n, sizeof(*w), gr_cmp_work);
	n = gr_merge(w, n);
	err = busy_bins(w, n, da);
	return err ? err : queue_depths(q, nq, da);
}

/* The devices that ran work, in the order their first work came. */
static int find_devices(const struct profile_data *pd, struct gpu_activity *a)
{
	a->devices = calloc(pd->nr_gpu ? pd->nr_gpu : 1, sizeof(*a->devices));
	if (!a->devices)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		size_t k = 0;

		if (!gr_is_work(&pd->gpu[i]))
			continue;
		while (k < a->nr_devices && a->devices[k].device != pd->gpu[i].device)
			k++;
		if (k == a->nr_devices)
			a->devices[a->nr_devices++].device = pd->gpu[i].device;
	}
	return 0;
}

int gpu_activity__build(const struct profile_data *pd, struct gpu_activity **ret)
{
	size_t *launch_of = calloc(pd->nr_gpu ? pd->nr_gpu : 1, sizeof(*launch_of));
	struct work *w = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*w));
	struct qev *q = calloc(pd->nr_gpu ? pd->nr_gpu : 1, 2 * sizeof(*q));
	struct gpu_activity *a = calloc(1, sizeof(*a));
	int err = 0;

	if (!launch_of || !w || !q || !a) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < pd->nr_joins; i++)
		if (pd->joins[i].gpu < pd->nr_gpu && pd->joins[i].launch < pd->nr_launches)
			launch_of[pd->joins[i].gpu] = pd->joins[i].launch + 1;
	err = find_devices(pd, a);
	for (size_t k = 0; k < a->nr_devices && !err; k++)
		err = device_activity(pd, launch_of, &a->devices[k], w, q);
out:
	free(launch_of);
	free(w);
	free(q);
	if (err) {
		gpu_activity__free(a);
		return err;
	}
	*ret = a;
	return 0;
}

void gpu_activity__free(struct gpu_activity *a)
{
	if (!a)
		return;
	for (size_t k = 0; k < a->nr_devices; k++) {
		free(a->devices[k].busy);
		free(a->devices[k].queue);
	}
	free(a->devices);
	free(a);
}
