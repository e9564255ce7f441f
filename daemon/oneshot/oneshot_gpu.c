// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>

#include <systemd/sd-event.h>

#include "daemon/gpu/cupti_server.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/oneshot/oneshot_gpu.h"
#include "daemon/session/gpu_socket.h"

struct oneshot_gpu {
	struct cupti_server *srv;
	sd_event_source *io;
	uint64_t malformed_seen, foreign_seen;
};

static int on_cupti(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	struct oneshot_gpu *g = ctx;

	gpu_socket__serve(g->srv, &g->malformed_seen, &g->foreign_seen);
	return 0;
}

struct oneshot_gpu *oneshot_gpu__new(sd_event *ev, const char *socket_path, unsigned int store_mb,
				     bool (*accept_pid)(void *ctx, pid_t pid), void *ctx)
{
	struct cupti_server_opts co = {
		.socket_path = socket_path, .accept_pid = accept_pid, .accept_ctx = ctx};
	struct oneshot_gpu *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return NULL;
	gpu_store_opts__sized(&co.store, store_mb);
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
	free(g);
}

const struct gpu_store *oneshot_gpu__store(struct oneshot_gpu *g)
{
	/* Whatever the command sent before exiting is still queued. */
	cupti_server__drain(g->srv, CUPTI_DRAIN_BATCHES);
	return cupti_server__store(g->srv);
}
