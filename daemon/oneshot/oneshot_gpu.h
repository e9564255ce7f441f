/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU correlation for one-shot mode: the CUPTI pipe served on the run's event loop, and at the
 * end the launches and GPU records joined by the correlator into a profile_data.
 */
#ifndef XSPROF_DAEMON_ONESHOT_GPU_H
#define XSPROF_DAEMON_ONESHOT_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "correlate/correlate.h"

typedef struct sd_event sd_event;
struct launch_store;
struct oneshot_gpu;
struct profile_data;

/*
 * Listen on socket_path (NULL: the default) from ev, taking records only from senders whose pid
 * accept_pid accepts (NULL: all; refused ones are counted). NULL with errno set.
 */
struct oneshot_gpu *oneshot_gpu__new(sd_event *ev, const char *socket_path,
				     bool (*accept_pid)(void *ctx, pid_t pid), void *ctx);
void oneshot_gpu__free(struct oneshot_gpu *g);

/*
 * Read what is still queued, convert the launches of ls (may be NULL; stack ids are
 * STACK_NAMES_LAUNCH | stack index) and the GPU records received, join them with the named
 * strategy, and point pd's launches, gpu and joins at the result (owned by g). 0 or -errno.
 */
int oneshot_gpu__correlate(struct oneshot_gpu *g, const struct launch_store *ls,
			   const char *strategy, struct profile_data *pd,
			   struct correlate_stats *ret_stats);

#endif
