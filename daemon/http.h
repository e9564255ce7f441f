/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control API's transport: libmicrohttpd driven from the sd-event loop (its epoll fd and
 * timeout), on a Unix socket we create (group and mode set here) and optionally on TCP.
 */
#ifndef XSPROF_DAEMON_HTTP_H
#define XSPROF_DAEMON_HTTP_H

#include <stdbool.h>
#include <sys/types.h>

#include <microhttpd.h>

typedef struct sd_event sd_event;
struct http_server;

/* Create the Unix socket: parent directory, stale file removed, mode 0660, group gid. */
int http__unix_listen(const char *path, gid_t gid, int *ret_fd);
/* "ADDR:PORT" (":PORT" binds 127.0.0.1) to a listening TCP socket. */
int http__tcp_listen(const char *addr_port, int *ret_fd);

/* Serve requests arriving on listen_fd (taken over) with handler; NULL with errno set. */
struct http_server *http_server__new(sd_event *ev, int listen_fd, MHD_AccessHandlerCallback handler,
				     MHD_RequestCompletedCallback completed, void *ctx);
void http_server__free(struct http_server *s);
/* Serve whatever is ready now (e.g. resumed requests before shutting down). NULL is a no-op. */
void http_server__run(struct http_server *s);

/* Who is on the other end of a Unix-socket connection. */
struct http_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool in_group; /* member of the control group (primary or supplementary) */
};
int http__peer(struct MHD_Connection *conn, gid_t group, struct http_peer *ret);

#endif
