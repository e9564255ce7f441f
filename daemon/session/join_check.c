// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/session/gpu_join.h"
#include "daemon/session/join_check.h"
#include "output/model/profile.h"

static bool is_work(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_KERNEL || g->kind == CORR_GPU_MEMCPY ||
	       g->kind == CORR_GPU_MEMSET || g->kind == CORR_GPU_GRAPH;
}

/* A call that puts work on a GPU (what xsprof:launch reports). */
static bool launches(const struct corr_cpu_rec *l)
{
	return l->api_kind == CORR_API_KERNEL || l->api_kind == CORR_API_GRAPH ||
	       l->api_kind == CORR_API_MEMCPY || l->api_kind == CORR_API_MEMSET;
}

static void on_join(void *ctx, const struct corr_cpu_rec *cpu, const struct corr_gpu_rec *gpu)
{
	size_t *of = ctx;

	of[gpu->user] = (size_t)cpu->user + 1;
}

/* The launches of one kind, in time order, each with its index in pd->launches. */
static struct corr_cpu_rec *launches_of(const struct profile_data *pd, uint8_t kind, size_t *ret_n)
{
	struct corr_cpu_rec *v = malloc((pd->nr_launches ? pd->nr_launches : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return NULL;
	for (size_t i = 0; i < pd->nr_launches; i++)
		if (pd->launches[i].kind == kind) {
			v[n] = pd->launches[i];
			v[n++].user = i;
		}
	*ret_n = n;
	return v;
}

/* of[gpu index] = launch index + 1 as strategy joins cpu to pd's GPU records (gpu: a copy of
 * them with user = index). */
static int join_with(const char *strategy, const struct corr_cpu_rec *cpu, size_t nr_cpu,
		     const struct corr_gpu_rec *gpu, size_t nr_gpu, size_t *of)
{
	struct correlate_cb cb = {.on_join = on_join, .ctx = of};
	struct correlate_config cfg;
	struct correlator *c;
	int err;

	correlate_config__default(&cfg);
	c = correlator__new(strategy, &cfg, &cb);
	if (!c)
		return -errno;
	err = gpu_join__feed(c, cpu, nr_cpu, gpu, nr_gpu);
	correlator__free(c);
	return err;
}

static const struct profile_data *sort_pd; /* qsort has no context argument in C11 */

/* By thread, then time; at the same time the uprobe (the call's entry) first. */
static int cmp_call(const void *a, const void *b)
{
	const struct corr_cpu_rec *x = &sort_pd->launches[*(const size_t *)a];
	const struct corr_cpu_rec *y = &sort_pd->launches[*(const size_t *)b];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return (x->kind == CORR_CPU_USDT) - (y->kind == CORR_CPU_USDT);
}

/* pair[uprobe index] = index + 1 of the USDT record of the same call; counts into ret. */
static int pair_calls(const struct profile_data *pd, size_t *pair, struct join_check *ret)
{
	size_t *ix = malloc((pd->nr_launches ? pd->nr_launches : 1) * sizeof(*ix));
	size_t n = 0, open[CORR_API_SYNC + 1], waiting[CORR_API_SYNC + 1];
	const struct corr_cpu_rec *prev = NULL;

	if (!ix)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_launches; i++)
		if (launches(&pd->launches[i]))
			ix[n++] = i;
	sort_pd = pd;
	qsort(ix, n, sizeof(*ix), cmp_call);
	for (size_t k = 0; k < n; k++) {
		const struct corr_cpu_rec *l = &pd->launches[ix[k]];

		if (!prev || prev->pid != l->pid || prev->tid != l->tid) {
			memset(open, 0, sizeof(open));
			memset(waiting, 0, sizeof(waiting));
		}
		prev = l;
		if (l->kind == CORR_CPU_UPROBE) {
			ret->uprobes++;
			if (waiting[l->api_kind]) {
				/* Inside a call whose xsprof:launch came first: the driver call that a
				 * CUDA runtime linked into a library (cuBLASLt) makes, the only probed
				 * function on its way. */
				pair[ix[k]] = waiting[l->api_kind];
				waiting[l->api_kind] = 0;
				ret->paired++;
			} else {
				open[l->api_kind] = ix[k] + 1; /* an older one unpaired stays so */
			}
		} else if (l->kind == CORR_CPU_USDT) {
			ret->usdt++;
			waiting[l->api_kind] = 0;
			if (open[l->api_kind]) {
				pair[open[l->api_kind] - 1] = ix[k] + 1;
				open[l->api_kind] = 0;
				ret->paired++;
			} else {
				waiting[l->api_kind] = ix[k] + 1;
			}
		}
	}
	free(ix);
	return 0;
}

static void count_miss(struct join_check_counts *c, const char *api)
{
	size_t k;

	for (k = 0; k < JOIN_CHECK_APIS && c->miss[k].api; k++)
		if (api && !strcmp(c->miss[k].api, api))
			break;
	if (k < JOIN_CHECK_APIS && !c->miss[k].api)
		c->miss[k].api = api;
	c->miss[k < JOIN_CHECK_APIS && api ? k : JOIN_CHECK_APIS].n++;
}

static void compare(const struct profile_data *pd, const size_t *id, const size_t *other,
		    const size_t *pair, struct join_check_counts *ret)
{
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		bool same = id[i] && other[i] && pair[other[i] - 1] == id[i];

		if (!is_work(&pd->gpu[i]))
			continue;
		if (id[i] && !same)
			count_miss(ret, pd->launches[id[i] - 1].api_name);
		if (!other[i])
			continue;
		ret->joined++;
		if (same)
			ret->agree++;
		else
			ret->differ++;
	}
}

int join_check__run(const struct profile_data *pd, struct join_check *ret)
{
	size_t n = pd->nr_gpu ? pd->nr_gpu : 1, nr_usdt = 0, nr_up = 0;
	size_t *id = calloc(n, sizeof(*id)), *ts = calloc(n, sizeof(*ts));
	size_t *st = calloc(n, sizeof(*st));
	size_t *pair = calloc(pd->nr_launches ? pd->nr_launches : 1, sizeof(*pair));
	struct corr_gpu_rec *gpu = malloc(n * sizeof(*gpu));
	struct corr_cpu_rec *usdt = launches_of(pd, CORR_CPU_USDT, &nr_usdt);
	struct corr_cpu_rec *up = launches_of(pd, CORR_CPU_UPROBE, &nr_up);
	int err = id && ts && st && pair && gpu && usdt && up ? 0 : -ENOMEM;

	*ret = (struct join_check){0};
	for (size_t i = 0; !err && i < pd->nr_gpu; i++) {
		gpu[i] = pd->gpu[i];
		gpu[i].user = i;
		ret->work += is_work(&gpu[i]);
	}
	if (!err)
		err = join_with("id", usdt, nr_usdt, gpu, pd->nr_gpu, id);
	if (!err)
		err = join_with("timestamp", up, nr_up, gpu, pd->nr_gpu, ts);
	if (!err)
		err = join_with("stream", up, nr_up, gpu, pd->nr_gpu, st);
	if (!err)
		err = pair_calls(pd, pair, ret);
	if (!err) {
		for (size_t i = 0; i < pd->nr_gpu; i++)
			ret->id.joined += is_work(&pd->gpu[i]) && id[i];
		ret->id.agree = ret->id.joined;
		compare(pd, id, ts, pair, &ret->timestamp);
		compare(pd, id, st, pair, &ret->stream);
	}
	free(id);
	free(ts);
	free(st);
	free(pair);
	free(gpu);
	free(usdt);
	free(up);
	return err;
}
