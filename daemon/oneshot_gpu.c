// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "daemon/cuda_probes.h"
#include "daemon/cupti_server.h"
#include "daemon/launch_store.h"
#include "daemon/log.h"
#include "daemon/oneshot_gpu.h"
#include "daemon/stack_names.h"
#include "output/profile.h"

struct oneshot_gpu {
	struct cupti_server *srv;
	sd_event_source *io;
	uint64_t malformed_seen, foreign_seen;
	struct corr_cpu_rec *cpu;
	size_t nr_cpu;
	struct corr_gpu_rec *gpu;
	size_t nr_gpu, gpu_cap;
	struct profile_join *joins;
	size_t nr_joins, joins_cap;
	int err; /* from a callback */
};

static int on_cupti(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	struct oneshot_gpu *g = ctx;
	struct cupti_server_stats cs;
	int n = cupti_server__process(g->srv);

	if (n < 0)
		log_err("CUPTI pipe: %s", strerror(-n));
	cupti_server__stats(g->srv, &cs);
	if (cs.malformed != g->malformed_seen) {
		log_warn("dropped a CUPTI connection that sent malformed data (%s)",
			 cs.last_malformed);
		g->malformed_seen = cs.malformed;
	}
	if (cs.foreign != g->foreign_seen) {
		log_warn("refused GPU records from a process outside this run (%llu connections "
			 "so far): only the profiled processes may send them",
			 (unsigned long long)cs.foreign);
		g->foreign_seen = cs.foreign;
	}
	return 0;
}

struct oneshot_gpu *oneshot_gpu__new(sd_event *ev, const char *socket_path,
				     bool (*accept_pid)(void *ctx, pid_t pid), void *ctx)
{
	struct cupti_server_opts co = {
		.socket_path = socket_path, .accept_pid = accept_pid, .accept_ctx = ctx};
	struct oneshot_gpu *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return NULL;
	g->srv = cupti_server__new(&co);
	if (!g->srv) {
		free(g);
		return NULL;
	}
	err = sd_event_add_io(ev, &g->io, cupti_server__fd(g->srv), EPOLLIN, on_cupti, g);
	if (err < 0) {
		oneshot_gpu__free(g);
		errno = -err;
		return NULL;
	}
	return g;
}

void oneshot_gpu__free(struct oneshot_gpu *g)
{
	if (!g)
		return;
	sd_event_source_disable_unref(g->io);
	cupti_server__free(g->srv);
	free(g->cpu);
	free(g->gpu);
	free(g->joins);
	free(g);
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

static int convert_launches(struct oneshot_gpu *g, const struct launch_store *ls)
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

static int convert_gpu(void *ctx, const struct gpu_activity *a)
{
	struct oneshot_gpu *g = ctx;
	static const uint8_t kinds[] = {
		[GPU_ACT_KERNEL] = CORR_GPU_KERNEL, [GPU_ACT_MEMCPY] = CORR_GPU_MEMCPY,
		[GPU_ACT_MEMSET] = CORR_GPU_MEMSET, [GPU_ACT_SYNC] = CORR_GPU_SYNC,
		[GPU_ACT_NVTX] = CORR_GPU_NVTX,	    [GPU_ACT_GRAPH] = CORR_GPU_GRAPH,
	};
	uint8_t kind;

	if (a->kind == GPU_ACT_API)
		kind = a->api_domain == 1 ? CORR_GPU_DRIVER_API : CORR_GPU_RUNTIME_API;
	else if (a->kind < sizeof(kinds) && kinds[a->kind])
		kind = kinds[a->kind];
	else
		return 0;
	if (g->nr_gpu == g->gpu_cap) {
		size_t ncap = g->gpu_cap ? g->gpu_cap * 2 : 1024;
		struct corr_gpu_rec *n = realloc(g->gpu, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		g->gpu = n;
		g->gpu_cap = ncap;
	}
	g->gpu[g->nr_gpu] = (struct corr_gpu_rec){
		.kind = kind,
		.copy_kind = a->kind == GPU_ACT_MEMCPY ? a->copy_kind : 0,
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
		.name = a->name,
		.user = g->nr_gpu,
	};
	g->nr_gpu++;
	return 0;
}

static void on_join(void *ctx, const struct corr_cpu_rec *cpu, const struct corr_gpu_rec *gpu)
{
	struct oneshot_gpu *g = ctx;

	if (g->nr_joins == g->joins_cap) {
		size_t ncap = g->joins_cap ? g->joins_cap * 2 : 1024;
		struct profile_join *n = realloc(g->joins, ncap * sizeof(*n));

		if (!n) {
			g->err = -ENOMEM;
			return;
		}
		g->joins = n;
		g->joins_cap = ncap;
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

int oneshot_gpu__correlate(struct oneshot_gpu *g, const struct launch_store *ls,
			   const char *strategy, struct profile_data *pd,
			   struct correlate_stats *ret_stats)
{
	struct correlate_cb cb = {.on_join = on_join, .ctx = g};
	struct correlate_config cfg;
	struct correlator *c;
	size_t i = 0, j = 0;
	int err = 0;

	/* Whatever the command sent before exiting is still queued. */
	while (g->srv && cupti_server__process(g->srv) > 0)
		;
	if (ls && (err = convert_launches(g, ls)))
		return err;
	if (g->srv && (err = gpu_store__for_each(cupti_server__store(g->srv), 0, convert_gpu, g)))
		return err;
	/* Offline: feed both sides in time order, so nothing waits longer than it must. */
	qsort(g->cpu, g->nr_cpu, sizeof(*g->cpu), cmp_cpu);
	qsort(g->gpu, g->nr_gpu, sizeof(*g->gpu), cmp_gpu);
	for (size_t k = 0; k < g->nr_cpu; k++)
		g->cpu[k].user = k;
	for (size_t k = 0; k < g->nr_gpu; k++)
		g->gpu[k].user = k;
	correlate_config__default(&cfg);
	c = correlator__new(strategy, &cfg, &cb);
	if (!c)
		return -errno;
	while (!err && (i < g->nr_cpu || j < g->nr_gpu)) {
		if (j == g->nr_gpu || (i < g->nr_cpu && g->cpu[i].time_ns <= g->gpu[j].start_ns))
			err = correlator__feed_cpu(c, &g->cpu[i++]);
		else
			err = correlator__feed_gpu(c, &g->gpu[j++]);
		err = err == -EINVAL ? 0 : err; /* malformed: skipped */
	}
	if (!err)
		err = correlator__flush(c, CORR_FLUSH_ALL);
	correlator__stats(c, ret_stats);
	correlator__free(c);
	if (!err)
		err = g->err;
	if (err)
		return err;
	pd->launches = g->cpu;
	pd->nr_launches = g->nr_cpu;
	pd->gpu = g->gpu;
	pd->nr_gpu = g->nr_gpu;
	pd->joins = g->joins;
	pd->nr_joins = g->nr_joins;
	return 0;
}
