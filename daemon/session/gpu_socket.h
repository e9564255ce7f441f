/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CUPTI socket served on a session's event loop (one-shot's and the service's): what each
 * loop does when the socket is readable, and the one place its problems are logged.
 */
#ifndef XSPROF_DAEMON_SESSION_GPU_SOCKET_H
#define XSPROF_DAEMON_SESSION_GPU_SOCKET_H

#include <stdint.h>

struct cupti_server;

/*
 * Read what is ready on srv and log what went wrong since the counts already logged: a read
 * error, connections dropped for sending malformed data (*malformed_seen), senders refused as
 * outside the session (*foreign_seen; NULL where the server refuses none).
 */
void gpu_socket__serve(struct cupti_server *srv, uint64_t *malformed_seen, uint64_t *foreign_seen);

#endif
