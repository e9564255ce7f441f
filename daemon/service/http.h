/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control API's transport: libmicrohttpd driven from the sd-event loop (its epoll fd and
 * timeout), on a Unix socket we create (group and mode set here) and optionally on TCP.
 *
 * We accept connections ourselves and hand them to MHD, so the listener is always drained: a
 * peer over its share, or anyone while the server is full, gets a 503 and is closed at once,
 * and a few slots are kept for root. Deadlines MHD lacks are kept here: a request must arrive
 * whole within HTTP_HEADER_DEADLINE_S of the connection opening (or of the previous answer),
 * however slowly it trickles; a parked request (http__suspend) ends at its own deadline or when
 * its client hangs up.
 */
#ifndef XSPROF_DAEMON_SERVICE_HTTP_H
#define XSPROF_DAEMON_SERVICE_HTTP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <microhttpd.h>

typedef struct sd_event sd_event;
struct http_server;

/* Connection caps, per server (Unix socket and TCP each). */
#define HTTP_MAX_CONNECTIONS	      64
#define HTTP_ROOT_RESERVE	      8 /* slots only root (on the Unix socket) may take */
#define HTTP_MAX_CONNECTIONS_PER_PEER 8 /* per uid (Unix) or per address (TCP) */
#define HTTP_HEADER_DEADLINE_S	      10
/* TCP: connections that have not shown a valid token yet may hold at most this many slots;
 * the rest are for clients that have. Past it, one of them idle for a second or more is
 * closed for a newcomer; such a connection has HTTP_TCP_HANDSHAKE_S for its TLS handshake and
 * first request. */
#define HTTP_TCP_UNAUTH_MAX  40
#define HTTP_TCP_HANDSHAKE_S 3
/* TCP: an address that sent this many wrong tokens within a minute has its wrong tokens refused
 * (503) for 30 s; the right token from it is served all the while. */
#define HTTP_TOKEN_FAILS_MAX 5
#define HTTP_TOKEN_BACKOFF_S 30

#include "daemon/base/path_lock.h"

/* The Unix socket and the lock that makes it ours. */
struct http_unix_socket {
	int fd;
	int lock_fd;
	struct sock_file file;
	pid_t holder; /* on -EADDRINUSE: the pid that holds the lock (0: unknown) */
};

/*
 * Create the Unix socket: parent directory, lock "path.lock" (-EADDRINUSE when another daemon
 * holds it: nothing is touched then), a stale socket file removed, bind, mode 0660, group gid.
 */
int http__unix_listen(const char *path, gid_t gid, struct http_unix_socket *ret);
/* Remove the socket file if it is still ours, and release the lock. */
void http__unix_release(struct http_unix_socket *u, const char *path);
/* "ADDR:PORT" (":PORT" binds 127.0.0.1) to a listening TCP socket. */
int http__tcp_listen(const char *addr_port, int *ret_fd);

/* Serve requests arriving on listen_fd (taken over) with handler; NULL with errno set. */
struct http_server *http_server__new(sd_event *ev, int listen_fd, MHD_AccessHandlerCallback handler,
				     MHD_RequestCompletedCallback completed, void *ctx);
/* PEM texts for a TLS listener; ca set: client certificates are asked for (not required). */
struct http_tls {
	char *cert, *key, *ca;
};
/* As http_server__new, over TLS when tls is given. */
struct http_server *http_server__new_tls(sd_event *ev, int listen_fd,
					 MHD_AccessHandlerCallback handler,
					 MHD_RequestCompletedCallback completed, void *ctx,
					 const struct http_tls *tls);
void http_server__free(struct http_server *s);
/* Serve whatever is ready now (e.g. resumed requests before shutting down). NULL is a no-op. */
void http_server__run(struct http_server *s);

struct http_server_stats {
	uint64_t accepted;
	uint64_t refused_full;	  /* at the connection limit (or the root reserve) */
	uint64_t refused_share;	  /* the peer already held its share */
	uint64_t header_timeouts; /* closed: no whole request within the header deadline */
	uint64_t wait_timeouts;	  /* parked requests ended by their deadline */
	uint64_t waiters_hung_up; /* parked requests whose client went away */
	uint64_t accept_errors;	  /* accept() failed (out of fds): retried after 100 ms */
	uint64_t evicted_unauth;  /* TCP: closed for a newcomer, no valid token after 1 s */
	uint64_t token_failures;  /* TCP: requests with a missing or wrong token */
	uint64_t refused_backoff; /* TCP: refused, the address sent too many wrong tokens */
	unsigned int conns;	  /* open now */
};
void http_server__stats(const struct http_server *s, struct http_server_stats *ret);
/* What the service found of a TCP request's credentials: a connection that showed a valid
 * one keeps its slot; wrong ones (sent: credentials were there) are counted per address
 * (HTTP_TOKEN_FAILS_MAX). true: wrong, from an address in its backoff: answer 503. A right
 * one is never refused. */
bool http__authenticated(struct MHD_Connection *mc, bool ok, bool sent);

/*
 * Park a request (MHD_suspend_connection) until http__resume, deadline_ns (CLOCK_MONOTONIC) or
 * the client hanging up, whichever comes first. When the handler runs again, http__expired says
 * it was the deadline or the hang-up: return MHD_NO then.
 */
void http__suspend(struct MHD_Connection *c, uint64_t deadline_ns);
void http__resume(struct MHD_Connection *c);
bool http__expired(struct MHD_Connection *c);

/* Who is on the other end of a Unix-socket connection. */
struct http_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool in_group; /* member of the control group (primary or supplementary) */
};
int http__peer(struct MHD_Connection *conn, gid_t group, struct http_peer *ret);

#endif
