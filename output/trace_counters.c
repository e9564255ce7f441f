// SPDX-License-Identifier: Apache-2.0
/* The Chrome trace's counter tracks of each GPU, made from the GPU report's facts of its work. */
#include <errno.h>
#include <stdlib.h>

#include "output/chrome_trace.h"
#include "output/gpu_memory.h"
#include "output/gpu_report_internal.h"
#include "output/profile.h"

#define COUNTER_BIN_NS	 (10 * MS)
#define MAX_COUNTER_EVTS 200000 /* queue-depth changes per device in a trace */

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

		if (!gr_is_work(g) || g->end_ns <= g->start_ns || g->device != device)
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
	gr_sort(q, nq, sizeof(*q), cmp_qev);
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

int chrome_trace__gpu_counters(const struct profile_data *pd, struct chrome_trace *t)
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

		if (!gr_is_work(&pd->gpu[i]))
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
