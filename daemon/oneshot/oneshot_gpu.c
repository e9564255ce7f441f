// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-event.h>

#include "daemon/cuda/cuda_probes.h"
#include "daemon/gpu/cupti_server.h"
#include "daemon/session/gpu_join.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/log.h"
#include "daemon/oneshot/oneshot_gpu.h"
#include "daemon/session/stack_names.h"
#include "output/profile.h"

struct oneshot_gpu {
	struct cupti_server *srv;
	sd_event_source *io;
	uint64_t malformed_seen, foreign_seen;
	struct gpu_join *join;
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
	g->join = gpu_join__new();
	g->srv = g->join ? cupti_server__new(&co) : NULL;
	if (!g->srv) {
		gpu_join__free(g->join);
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
	gpu_join__free(g->join);
	free(g);
}

int oneshot_gpu__correlate(struct oneshot_gpu *g, const struct launch_store *ls,
			   const char *strategy, struct profile_data *pd,
			   struct correlate_stats *ret_stats)
{
	/* Whatever the command sent before exiting is still queued. */
	cupti_server__drain(g->srv, CUPTI_DRAIN_BATCHES);
	return gpu_join__run(g->join, ls, g->srv ? cupti_server__store(g->srv) : NULL, NULL,
			     strategy, pd, ret_stats);
}
