/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUPTI pipe of a one-shot run, served on its event loop; at the end, the GPU records it
 * received for the session's profile (daemon/session/profile.c joins them to the launches).
 */
#ifndef XSPROF_DAEMON_ONESHOT_ONESHOT_GPU_H
#define XSPROF_DAEMON_ONESHOT_ONESHOT_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct sd_event sd_event;
struct gpu_store;
struct oneshot_gpu;

/*
 * Listen on socket_path (NULL: the default) from ev, taking records only from senders whose pid
 * accept_pid accepts (NULL: all; refused ones are counted), keeping store_mb MiB of them. NULL
 * with errno set.
 */
struct oneshot_gpu *oneshot_gpu__new(sd_event *ev, const char *socket_path, unsigned int store_mb,
				     bool (*accept_pid)(void *ctx, pid_t pid), void *ctx);
void oneshot_gpu__free(struct oneshot_gpu *g);

/* Read what is still queued, and the GPU records received (g keeps owning them). */
const struct gpu_store *oneshot_gpu__store(struct oneshot_gpu *g);

#endif
