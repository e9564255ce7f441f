/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's end of the CUPTI pipe: a Unix socket that every profiled process may connect to,
 * served without blocking from whatever event loop owns it. The loop waits on one fd
 * (cupti_server__fd) and calls cupti_server__process when it is readable; the listening socket
 * and the clients live in the server's own epoll set behind that fd.
 *
 * Senders are identified by SO_PEERCRED, never by what they send. A connection that sends
 * anything malformed is closed and counted; others are unaffected. Records that passed
 * validation go to a gpu_store (per pid, bounded) for correlation to pick up.
 */
#ifndef XSPROF_DAEMON_GPU_CUPTI_SERVER_H
#define XSPROF_DAEMON_GPU_CUPTI_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cupti_inject/xsprof_wire.h"
#include "daemon/gpu/gpu_records.h"

struct cupti_server;

struct cupti_server_opts {
	const char *socket_path;    /* NULL = XSPROF_WIRE_DEFAULT_SOCKET (/run/xsprof/cupti.sock) */
	unsigned socket_mode;	    /* 0 = 0666: processes of every user may send */
	unsigned max_conns;	    /* 0 = 256; more are accepted and closed at once, counted */
	unsigned max_conns_per_uid; /* 0 = 64: one user cannot take every slot */
	size_t max_conn_buffer;	    /* bytes read ahead per connection; 0 = 64 KiB, at least 2
				       maximal records */
	/*
	 * NULL: every sender. Otherwise called with each sender's pid (SO_PEERCRED) when it
	 * connects; false closes the connection and counts it as foreign.
	 */
	bool (*accept_pid)(void *ctx, pid_t pid);
	void *accept_ctx;
	struct gpu_store_opts store;
	/* Called with each NVTX range that ended (not an opening, not a mark), once stored;
	 * may be NULL. */
	void (*on_range)(void *ctx, const struct gpu_activity *a);
	void *range_ctx;
	/* A connection that sends nothing for idle_ms (0 = 60 s), or no hello within hello_ms
	 * (0 = 5 s), is closed and counted: a slot is not held by a silent client. The injection
	 * library connects again when it next has records (nothing is lost: a send to a closed
	 * connection fails before it is taken). */
	unsigned idle_ms;
	unsigned hello_ms;
};

struct cupti_server_stats {
	uint64_t accepted;	/* connections taken */
	uint64_t rejected;	/* connections refused by max_conns / max_conns_per_uid */
	uint64_t foreign;	/* connections refused by accept_pid: not the session's processes */
	uint64_t malformed;	/* connections closed for sending something invalid */
	uint64_t truncated;	/* connections that ended in the middle of a record */
	uint64_t accept_errors; /* accept() or SO_PEERCRED failures (fd limits, ...) */
	uint64_t idle_closed;	/* connections closed for sending nothing (idle_ms, hello_ms) */
	uint64_t bytes;		/* bytes read from clients */
	uint64_t records[XSPROF_WIRE_TYPE_END]; /* valid records by enum xsprof_wire_type */
	uint64_t store_rejected; /* valid records the store could not take (no memory) */
	/* Senders' own drops (sum over connections of their latest cumulative counters). */
	uint64_t sender_dropped_full;
	uint64_t sender_dropped_cupti;
	uint64_t sender_dropped_other;
	/* --max-cpu's cap on reading (cupti_server__set_uid_cap): a user's connections were
	 * left unread for the rest of a window this many times, for this long in all (their
	 * records wait in the socket; the sender's library drops and counts what does not fit). */
	uint64_t intake_pauses;
	uint64_t intake_paused_ns;
	uint32_t intake_last_paused_uid; /* valid when intake_pauses */
	/* Connections by the GPU timing policy their hello said (enum xsprof_wire_policy). */
	uint64_t policy[XSPROF_WIRE_POLICY_END];
	unsigned conns;		  /* open now */
	char last_malformed[160]; /* "pid N: why" for the latest malformed connection */
	struct gpu_store_stats store;
};

/*
 * Create the socket's directory (0755) if missing, lock "path.lock" (EADDRINUSE while another
 * process serves the path: nothing is touched then), replace a stale socket (never another kind
 * of file: EEXIST), bind, listen. NULL with errno set on failure.
 */
struct cupti_server *cupti_server__new(const struct cupti_server_opts *opts);

/* Closes every connection, removes the socket file if it is still ours, releases the lock. */
void cupti_server__free(struct cupti_server *s);

/* The one fd to wait on for readability (an epoll fd, level-triggered). */
int cupti_server__fd(const struct cupti_server *s);

/*
 * Accept and read whatever is ready, without blocking, within a per-call budget (the fd stays
 * readable while more is pending). Returns the records stored, or -errno if the server's own
 * epoll fails.
 */
int cupti_server__process(struct cupti_server *s);
/*
 * Everything already sent, e.g. by processes that just exited: batches until no fd is ready,
 * at most max_batches (a sender that never stops cannot hold the caller). Records stored, or
 * -errno. NULL s: 0.
 */
/* Batches of 64 ready fds: every connection, several times over. */
#define CUPTI_DRAIN_BATCHES 1024
int cupti_server__drain(struct cupti_server *s, unsigned int max_batches);

void cupti_server__stats(const struct cupti_server *s, struct cupti_server_stats *ret);

/*
 * Records read from each user's connections, a second, over the windows of
 * CUPTI_INTAKE_WINDOW_MS. 0 (the default): as fast as they come. Otherwise a user whose
 * connections reach per_s * window within a window is not read again until the next one: the
 * heaviest sender is held first and alone, a light one never reaches the cap. What it sends
 * meanwhile waits in its sockets (its library drops what does not fit, and counts it).
 */
#define CUPTI_INTAKE_WINDOW_MS 100
void cupti_server__set_uid_cap(struct cupti_server *s, uint64_t per_s);
/* The most records a second one user's connections sent over the last whole window (capped
 * reads count what was read), and whose. 0 when none sent. */
uint64_t cupti_server__top_uid_rate(const struct cupti_server *s, uint32_t *ret_uid);

/* The records received so far; the server keeps ownership. */
struct gpu_store *cupti_server__store(struct cupti_server *s);

#endif
