// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_inject/xsprof_wire.h"
#include "daemon/base/vec.h"
#include "daemon/cuda/cuda_api.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/session/gpu_join.h"
#include "daemon/session/pid_uids.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/session/stack_names.h"
#include "output/model/profile.h"
#include "output/model/shelf.h"

struct gpu_join {
	struct corr_cpu_rec *cpu;
	size_t nr_cpu;
	struct corr_gpu_rec *gpu;
	size_t nr_gpu, gpu_cap;
	struct profile_join *joins;
	size_t nr_joins, joins_cap;
	const struct gpu_join_scope *scope; /* while converting */
	bool gpu_unsorted;		    /* converted out of start order */
	size_t nr_activity;		    /* of the GPU records: GPU work (no API, no NVTX) */
	int err;			    /* from a callback */
};

struct gpu_join *gpu_join__new(void)
{
	return calloc(1, sizeof(struct gpu_join));
}

void gpu_join__free(struct gpu_join *j)
{
	if (!j)
		return;
	free(j->cpu);
	shelf__put(j->gpu, j->gpu_cap * sizeof(*j->gpu));
	free(j->joins);
	free(j);
}

void correlate_stats__add(struct correlate_stats *a, const struct correlate_stats *b)
{
	uint64_t *x = (uint64_t *)a;
	const uint64_t *y = (const uint64_t *)b;

	_Static_assert(sizeof(*a) % sizeof(uint64_t) == 0, "counters only");
	for (size_t i = 0; i < sizeof(*a) / sizeof(uint64_t); i++)
		x[i] += y[i];
}

/* What an API asks of the GPU, from its symbol. */
static enum corr_api_kind api_kind(const char *name)
{
	if (!name)
		return CORR_API_OTHER;
	if (strstr(name, "GraphLaunch"))
		return CORR_API_GRAPH;
	if (strstr(name, "LaunchHostFunc"))
		return CORR_API_OTHER;
	if (strstr(name, "Launch"))
		return CORR_API_KERNEL;
	if (strstr(name, "Memcpy"))
		return CORR_API_MEMCPY;
	if (strstr(name, "Memset"))
		return CORR_API_MEMSET;
	if (strstr(name, "Synchronize"))
		return CORR_API_SYNC;
	return CORR_API_OTHER;
}

static bool is_ptsz(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	return n > 5 && (!strcmp(name + n - 5, "_ptsz") || !strcmp(name + n - 5, "_ptds"));
}

static int convert_launches(struct gpu_join *g, const struct launch_store *ls)
{
	const struct launch_event *ev = launch_store__events(ls);
	size_t n = launch_store__nr_events(ls);

	g->cpu = calloc(n ? n : 1, sizeof(*g->cpu));
	if (!g->cpu)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct launch_event *e = &ev[i];
		bool usdt = e->kind == LAUNCH_USDT;
		const char *name = usdt ? cupti_api__name(e->api) : cuda_api__name(e->api);

		/* Memory calls put no work on a GPU: nothing to join (the GPU report has them). */
		if (!usdt && (cuda_api__allocates(e->api) || cuda_api__frees(e->api)))
			continue;
		g->cpu[g->nr_cpu++] = (struct corr_cpu_rec){
			.kind = usdt ? CORR_CPU_USDT : CORR_CPU_UPROBE,
			.api_kind = api_kind(name),
			.flags = is_ptsz(name) ? CORR_CPU_F_PTSZ : 0,
			.api_id = e->api,
			.pid = e->tgid,
			.tid = e->tid,
			.time_ns = e->time_ns,
			.stream = usdt ? 0 : e->arg,
			.corr_id = usdt ? (uint32_t)e->arg : 0,
			.stack_id = e->stack == UINT32_MAX ? CORR_NO_STACK
							   : STACK_NAMES_LAUNCH | e->stack,
			.api_name = name,
			.user = g->nr_cpu,
		};
	}
	return 0;
}

/* CUPTI's ten directions (the wire's) as the correlator's five: arrays are device memory. */
static uint8_t copy_kind_of(uint8_t wire)
{
	switch (wire) {
	case XSPROF_COPY_HTOD:
	case XSPROF_COPY_HTOA:
		return CORR_COPY_HTOD;
	case XSPROF_COPY_DTOH:
	case XSPROF_COPY_ATOH:
		return CORR_COPY_DTOH;
	case XSPROF_COPY_DTOD:
	case XSPROF_COPY_ATOA:
	case XSPROF_COPY_ATOD:
	case XSPROF_COPY_DTOA:
		return CORR_COPY_DTOD;
	case XSPROF_COPY_HTOH:
		return CORR_COPY_HTOH;
	case XSPROF_COPY_PTOP:
		return CORR_COPY_PTOP;
	default:
		return CORR_COPY_UNKNOWN;
	}
}

/* The host side of a copy: its source for HtoD, its destination for DtoH. */
static uint8_t host_mem_of(const struct gpu_activity *a)
{
	uint8_t dir = copy_kind_of(a->copy_kind);
	uint8_t m = dir == CORR_COPY_HTOD ? a->src_kind : dir == CORR_COPY_DTOH ? a->dst_kind : 0;

	return m == XSPROF_MEM_PAGEABLE ? CORR_HOST_MEM_PAGEABLE
	       : m == XSPROF_MEM_PINNED ? CORR_HOST_MEM_PINNED
					: CORR_HOST_MEM_UNKNOWN;
}

static int convert_gpu(void *ctx, const struct gpu_activity *a)
{
	struct gpu_join *g = ctx;
	static const uint8_t kinds[] = {
		[GPU_ACT_KERNEL] = CORR_GPU_KERNEL, [GPU_ACT_MEMCPY] = CORR_GPU_MEMCPY,
		[GPU_ACT_MEMSET] = CORR_GPU_MEMSET, [GPU_ACT_SYNC] = CORR_GPU_SYNC,
		[GPU_ACT_NVTX] = CORR_GPU_NVTX,	    [GPU_ACT_GRAPH] = CORR_GPU_GRAPH,
	};
	uint8_t kind;

	if (g->scope && ((g->scope->by_arrival ? a->seq <= g->scope->after_seq
					       : a->end_ns < g->scope->since_ns) ||
			 (g->scope->accept_pid && !g->scope->accept_pid(g->scope->ctx, a->pid))))
		return 0;
	if (a->kind == GPU_ACT_API)
		kind = a->api_domain == 1 ? CORR_GPU_DRIVER_API : CORR_GPU_RUNTIME_API;
	else if (a->kind < sizeof(kinds) && kinds[a->kind])
		kind = kinds[a->kind];
	else
		return 0;
	if (vec_reserve(&g->gpu, &g->gpu_cap, g->nr_gpu + 1))
		return -ENOMEM;
	if (g->scope && g->scope->uids && pid_uids__note(g->scope->uids, a->pid, a->uid))
		return -ENOMEM;
	/* Seen here, not by a pass of its own over a flood's array. */
	if (g->nr_gpu && a->start_ns < g->gpu[g->nr_gpu - 1].start_ns)
		g->gpu_unsorted = true;
	g->nr_activity += corr_gpu_kind__is_activity(kind);
	g->gpu[g->nr_gpu] = (struct corr_gpu_rec){
		.kind = kind,
		.copy_kind = a->kind == GPU_ACT_MEMCPY ? copy_kind_of(a->copy_kind) : 0,
		.host_mem = a->kind == GPU_ACT_MEMCPY ? host_mem_of(a) : 0,
		.flags = (a->flags & XSPROF_WIRE_F_ASYNC ? CORR_GPU_F_ASYNC : 0) |
			 (a->flags & XSPROF_WIRE_F_OPEN ? CORR_GPU_F_OPEN : 0),
		.pid = a->pid,
		.tid = a->tid,
		.device = a->device,
		.context = a->context,
		.stream_id = a->stream,
		.corr_id = a->correlation_id,
		.cbid = a->api_cbid,
		.graph_id = a->graph_id,
		.start_ns = a->start_ns,
		.end_ns = a->end_ns,
		.bytes = a->bytes,
		/* API records: named when a launch API (the GPU report's time in launch calls) */
		.name = a->kind == GPU_ACT_API && !a->name
				? cupti_api__name((uint32_t)a->api_domain << 16 | a->api_cbid)
				: a->name,
		.domain = a->kind == GPU_ACT_NVTX ? a->domain : NULL,
		.user = g->nr_gpu,
	};
	g->nr_gpu++;
	return 0;
}

/* An NVTX range still open at the session's end: a range ending there. */
static int convert_open(void *ctx, const struct gpu_activity *a)
{
	struct gpu_join *g = ctx;
	struct gpu_activity r = *a;

	if (a->start_ns >= g->scope->until_ns)
		return 0;
	r.end_ns = g->scope->until_ns;
	return convert_gpu(g, &r);
}

/* The xsprof scopes its processes closed, as NVTX ranges of domain "xsprof" (never joined). */
static int convert_scopes(struct gpu_join *g, const struct launch_store *ls)
{
	const struct launch_range *r = launch_store__ranges(ls);
	size_t n = launch_store__nr_ranges(ls);

	for (size_t i = 0; i < n; i++) {
		struct gpu_activity a = {
			.kind = GPU_ACT_NVTX,
			.pid = r[i].tgid,
			.tid = r[i].tid,
			.start_ns = r[i].start_ns,
			.end_ns = r[i].end_ns,
			.name = r[i].name,
			.domain = GPU_JOIN_SCOPE_DOMAIN,
			/* The session's own (its launch store's): taken whatever arrived when. */
			.seq = UINT64_MAX,
		};
		int err = convert_gpu(g, &a);

		if (err)
			return err;
	}
	return 0;
}

static void on_join(void *ctx, const struct corr_cpu_rec *cpu, const struct corr_gpu_rec *gpu)
{
	struct gpu_join *g = ctx;

	if (vec_reserve(&g->joins, &g->joins_cap, g->nr_joins + 1)) {
		g->err = -ENOMEM;
		return;
	}
	g->joins[g->nr_joins++] = (struct profile_join){.launch = cpu->user, .gpu = gpu->user};
}

static int cmp_cpu(const void *a, const void *b)
{
	const struct corr_cpu_rec *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

static int cmp_gpu(const void *a, const void *b)
{
	const struct corr_gpu_rec *x = a, *y = b;

	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* True when v needs no sort: a pass is much cheaper than qsort's copies of big records. */
static bool is_sorted(const void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	const char *p = v;

	for (size_t i = 1; i < n; i++)
		if (cmp(p + (i - 1) * size, p + i * size) > 0)
			return false;
	return true;
}

/* What the join made, into the profile (g keeps owning it). */
static void publish(const struct gpu_join *g, struct profile_data *pd)
{
	pd->launches = g->cpu;
	pd->nr_launches = g->nr_cpu;
	pd->gpu = g->gpu;
	pd->nr_gpu = g->nr_gpu;
	pd->joins = g->joins;
	pd->nr_joins = g->nr_joins;
}

int gpu_join__feed(struct correlator *c, const struct corr_cpu_rec *cpu, size_t nr_cpu,
		   const struct corr_gpu_rec *gpu, size_t nr_gpu)
{
	size_t i = 0, j = 0;
	int err = 0;

	/* Offline: both sides in time order, so nothing waits longer than it must. */
	while (!err && (i < nr_cpu || j < nr_gpu)) {
		if (j == nr_gpu || (i < nr_cpu && cpu[i].time_ns <= gpu[j].start_ns))
			err = correlator__feed_cpu(c, &cpu[i++]);
		else
			err = correlator__feed_gpu(c, &gpu[j++]);
		err = err == -EINVAL ? 0 : err; /* malformed: skipped */
	}
	return err ? err : correlator__flush(c, CORR_FLUSH_ALL);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The distinct pids of the launches, sorted (NULL and 0 when there are none). */
static uint32_t *launch_pids(const struct corr_cpu_rec *cpu, size_t n, size_t *ret_n)
{
	uint32_t *v = n ? malloc(n * sizeof(*v)) : NULL;
	size_t k = 0;

	*ret_n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!k || v[k - 1] != cpu[i].pid) /* runs of one process are common */
			v[k++] = cpu[i].pid;
	qsort(v, k, sizeof(*v), cmp_u32);
	*ret_n = 0;
	for (size_t i = 0; i < k; i++)
		if (!*ret_n || v[*ret_n - 1] != v[i])
			v[(*ret_n)++] = v[i];
	return v;
}

/*
 * gpu_join__feed, but the GPU work (kernels, copies, syncs, graphs) of processes that made no
 * launch here is left out: every strategy joins a process's work to its own launches, so it
 * cannot join. It stays out of the strategy's tables and time (a flood of GPU records without
 * launches costs a pass), counted as fed and unmatched; other records (API calls, NVTX) are
 * fed as before, for the strategies' own counts.
 */
static int feed_launchers(struct correlator *c, const struct corr_cpu_rec *cpu, size_t nr_cpu,
			  const struct corr_gpu_rec *gpu, size_t nr_gpu, uint64_t *ret_skipped)
{
	size_t np, i = 0, j = 0;
	uint32_t *pids = launch_pids(cpu, nr_cpu, &np);
	int err = 0;

	*ret_skipped = 0;
	if (nr_cpu && !pids)
		return -ENOMEM;
	while (!err && (i < nr_cpu || j < nr_gpu)) {
		if (j == nr_gpu || (i < nr_cpu && cpu[i].time_ns <= gpu[j].start_ns)) {
			err = correlator__feed_cpu(c, &cpu[i++]);
		} else if (corr_gpu_kind__is_activity(gpu[j].kind) &&
			   (!np || !bsearch(&gpu[j].pid, pids, np, sizeof(*pids), cmp_u32))) {
			(*ret_skipped)++;
			j++;
			continue;
		} else {
			err = correlator__feed_gpu(c, &gpu[j++]);
		}
		err = err == -EINVAL ? 0 : err; /* malformed: skipped */
	}
	free(pids);
	return err ? err : correlator__flush(c, CORR_FLUSH_ALL);
}

int gpu_join__run(struct gpu_join *g, const struct launch_store *ls, const struct gpu_store *gs,
		  const struct gpu_join_scope *scope, const char *strategy, struct profile_data *pd,
		  struct correlate_stats *ret_stats)
{
	struct correlate_cb cb = {.on_join = on_join, .ctx = g};
	struct correlate_stats cs = {};
	struct correlate_config cfg;
	uint64_t skipped;
	struct correlator *c;
	int err = 0;

	free(g->cpu);
	g->cpu = NULL;
	g->nr_cpu = g->nr_gpu = g->nr_joins = 0;
	g->gpu_unsorted = false;
	g->nr_activity = 0;
	g->err = 0;
	if (ls && (err = convert_launches(g, ls)))
		return err;
	g->scope = scope;
	if (gs) {
		struct gpu_store_stats st;

		/* Room for every record held at once: a flood's array is not grown by copies. */
		gpu_store__stats(gs, &st);
		if (!g->gpu && st.records) {
			size_t bytes;

			/* A flood's slices, one after another: the last one's pages. */
			g->gpu = shelf__take(st.records * sizeof(*g->gpu), &bytes);
			if (!g->gpu)
				return -ENOMEM;
			g->gpu_cap = bytes / sizeof(*g->gpu);
		}
		if (vec_reserve(&g->gpu, &g->gpu_cap, g->nr_gpu + st.records))
			return -ENOMEM;
	}
	if (gs && (err = gpu_store__for_each(gs, 0, convert_gpu, g)))
		return err;
	if (gs && scope && scope->until_ns &&
	    (err = gpu_store__for_each_open(gs, 0, convert_open, g)))
		return err;
	if (ls && (err = convert_scopes(g, ls)))
		return err;
	g->scope = NULL;
	/* Sorted for gpu_join__feed; the GPU records mostly arrive in order already (each
	 * already has its index as user: converted in order). */
	if (!is_sorted(g->cpu, g->nr_cpu, sizeof(*g->cpu), cmp_cpu))
		qsort(g->cpu, g->nr_cpu, sizeof(*g->cpu), cmp_cpu);
	for (size_t k = 0; k < g->nr_cpu; k++)
		g->cpu[k].user = k;
	if (g->gpu_unsorted) {
		qsort(g->gpu, g->nr_gpu, sizeof(*g->gpu), cmp_gpu);
		for (size_t k = 0; k < g->nr_gpu; k++)
			g->gpu[k].user = k;
	}
	if (!g->nr_gpu || (!g->nr_cpu && g->nr_activity == g->nr_gpu)) {
		/* No GPU record to join: every launch stays unmatched, without the strategy's
		 * tables (for a million launches, tens of MiB of them); the launches still go in
		 * the profile (the Chrome trace's cuda_launch slices). Or GPU work only, and no
		 * launch to join it to: all of it unmatched, as feed_launchers would count it,
		 * without a pass over it (a flood of GPU records from processes not probed). */
		cs.cpu_in = cs.unmatched_cpu = g->nr_cpu;
		cs.gpu_in = cs.unmatched_gpu = g->nr_cpu ? 0 : g->nr_gpu;
		correlate_stats__add(ret_stats, &cs);
		if (g->err)
			return g->err;
		publish(g, pd);
		return 0;
	}
	correlate_config__default(&cfg);
	c = correlator__new(strategy ? strategy : "auto", &cfg, &cb);
	if (!c)
		return -errno;
	err = feed_launchers(c, g->cpu, g->nr_cpu, g->gpu, g->nr_gpu, &skipped);
	correlator__stats(c, &cs);
	correlator__free(c);
	cs.gpu_in += skipped;
	cs.unmatched_gpu += skipped;
	correlate_stats__add(ret_stats, &cs);
	if (!err)
		err = g->err;
	if (err)
		return err;
	publish(g, pd);
	return 0;
}
