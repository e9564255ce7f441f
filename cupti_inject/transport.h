/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sending end of the CUPTI pipe, kept free of CUPTI so it can be tested without a GPU.
 * Records are queued whole into one bounded buffer and written to a non-blocking Unix socket;
 * nothing here ever waits unless the caller asks for a bounded linger (process exit).
 * Not thread-safe: the injection library calls it under its own lock.
 */
#ifndef XSPROF_CUPTI_INJECT_TRANSPORT_H
#define XSPROF_CUPTI_INJECT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

struct cupti_transport;

struct cupti_transport_opts {
	const char *socket_path; /* required */
	size_t max_buffered;	 /* bytes held while the daemon is absent or slow; 0 = 4 MiB */
	uint32_t reconnect_ms;	 /* least time between connection attempts */
	uint32_t clock_id;	 /* for the hello */
	uint32_t cupti_version;	 /* for the hello */
	uint32_t policy;	 /* for the hello: enum xsprof_wire_policy */
};

struct cupti_transport_stats {
	uint64_t queued;	   /* records accepted into the buffer */
	uint64_t sent;		   /* records fully written to a connection */
	uint64_t dropped_full;	   /* records refused (buffer full) or cut by a lost connection */
	uint64_t connects;	   /* connections made, hello sent */
	uint64_t connect_failures; /* attempts that found no daemon */
	uint64_t disconnects;	   /* connections lost while sending */
	size_t buffered;	   /* bytes waiting now */
	int connected;
};

struct cupti_transport *cupti_transport__new(const struct cupti_transport_opts *opts);
void cupti_transport__free(struct cupti_transport *t);

/*
 * Queue one whole wire record (copied; hdr.length must equal len). Never does I/O.
 * -ENOBUFS when it does not fit: the record is dropped and counted. -EINVAL for a bad record.
 */
int cupti_transport__append(struct cupti_transport *t, const void *rec, size_t len);

/*
 * Connect when due (rate-limited), then write what the socket takes without blocking.
 * wait_ms > 0 lets it wait up to that long in total for the socket to drain (process exit).
 * 0: nothing left queued; -EAGAIN: bytes remain; -ENOTCONN: no daemon to send to.
 */
int cupti_transport__flush(struct cupti_transport *t, int wait_ms);

/* Counters the sender reports to the daemon in its stats record, beside its own drops. */
void cupti_transport__set_drops(struct cupti_transport *t, uint64_t dropped_cupti,
				uint64_t dropped_other);

/* In a forked child: forget the parent's connection and queued records, start afresh. */
void cupti_transport__after_fork(struct cupti_transport *t, uint32_t pid);

void cupti_transport__stats(const struct cupti_transport *t, struct cupti_transport_stats *ret);

/* The connection's socket (to poll for room), -1 while not connected. */
int cupti_transport__fd(const struct cupti_transport *t);

#endif
