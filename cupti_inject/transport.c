// SPDX-License-Identifier: Apache-2.0
#include "daemon/base/clock.h"
#include "cupti_inject/transport.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cupti_inject/xsprof_wire.h"

#define DEFAULT_MAX_BUFFERED (4u << 20)

struct cupti_transport {
	struct sockaddr_un addr;
	int fd; /* -1 while disconnected */
	uint8_t *buf;
	size_t cap;
	size_t head;	  /* start of the oldest queued record */
	size_t head_sent; /* bytes of that record already written to the current connection */
	size_t tail;
	uint64_t next_attempt_ns;
	uint32_t reconnect_ms;
	struct xsprof_wire_hello hello;
	struct cupti_transport_stats st;
	uint64_t dropped_cupti;
	uint64_t dropped_other;
	bool stats_dirty; /* counters changed since the daemon last heard them */
};

struct cupti_transport *cupti_transport__new(const struct cupti_transport_opts *opts)
{
	struct cupti_transport *t;

	if (!opts || !opts->socket_path || !opts->socket_path[0]) {
		errno = EINVAL;
		return NULL;
	}
	if (strlen(opts->socket_path) >= sizeof(t->addr.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->cap = opts->max_buffered ? opts->max_buffered : DEFAULT_MAX_BUFFERED;
	/* Below one maximal record the buffer could refuse a record it must carry. */
	if (t->cap < XSPROF_WIRE_RECORD_MAX + sizeof(struct xsprof_wire_stats))
		t->cap = XSPROF_WIRE_RECORD_MAX + sizeof(struct xsprof_wire_stats);
	t->buf = malloc(t->cap);
	if (!t->buf) {
		free(t);
		return NULL;
	}
	t->addr.sun_family = AF_UNIX;
	strcpy(t->addr.sun_path, opts->socket_path);
	t->fd = -1;
	t->reconnect_ms = opts->reconnect_ms;
	t->hello.magic = XSPROF_WIRE_MAGIC;
	t->hello.version = XSPROF_WIRE_VERSION;
	t->hello.length = sizeof(t->hello);
	t->hello.pid = (uint32_t)getpid();
	t->hello.clock_id = opts->clock_id;
	t->hello.cupti_version = opts->cupti_version;
	t->hello.policy = opts->policy;
	return t;
}

void cupti_transport__free(struct cupti_transport *t)
{
	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	free(t->buf);
	free(t);
}

static struct xsprof_wire_hdr hdr_at(const struct cupti_transport *t, size_t off)
{
	struct xsprof_wire_hdr h;

	memcpy(&h, t->buf + off, sizeof(h));
	return h;
}

static uint32_t rec_len_at(const struct cupti_transport *t, size_t off)
{
	return hdr_at(t, off).length;
}

int cupti_transport__append(struct cupti_transport *t, const void *rec, size_t len)
{
	struct xsprof_wire_hdr h;

	if (len < sizeof(h) || len > XSPROF_WIRE_RECORD_MAX || len % XSPROF_WIRE_ALIGN)
		return -EINVAL;
	memcpy(&h, rec, sizeof(h));
	if (h.length != len)
		return -EINVAL;
	if (t->cap - t->tail < len && t->head > 0) {
		/* Compact only when needed: the common case appends without moving anything. */
		memmove(t->buf, t->buf + t->head, t->tail - t->head);
		t->tail -= t->head;
		t->head = 0;
	}
	if (t->cap - t->tail < len) {
		t->st.dropped_full++;
		t->stats_dirty = true;
		return -ENOBUFS;
	}
	memcpy(t->buf + t->tail, rec, len);
	t->tail += len;
	t->st.queued++;
	return 0;
}

static void drop_connection(struct cupti_transport *t)
{
	close(t->fd);
	t->fd = -1;
	t->st.disconnects++;
	/* The next connection must start on a record boundary: the cut record is lost. */
	if (t->head_sent) {
		if (hdr_at(t, t->head).type != XSPROF_WIRE_STATS)
			t->st.dropped_full++;
		t->head += rec_len_at(t, t->head);
		t->head_sent = 0;
	}
	t->stats_dirty = true;
	t->next_attempt_ns = clock__mono_ns() + (uint64_t)t->reconnect_ms * 1000000ull;
}

static int try_connect(struct cupti_transport *t)
{
	uint64_t now = clock__mono_ns();
	ssize_t n;
	int fd;

	if (now < t->next_attempt_ns)
		return -ENOTCONN;
	t->next_attempt_ns = now + (uint64_t)t->reconnect_ms * 1000000ull;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -ENOTCONN;
	/* A Unix connect never waits: it succeeds, or fails with EAGAIN when the backlog is full. */
	if (connect(fd, (const struct sockaddr *)&t->addr, sizeof(t->addr)) < 0)
		goto fail;
	n = send(fd, &t->hello, sizeof(t->hello), MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n != (ssize_t)sizeof(t->hello))
		goto fail;
	t->fd = fd;
	t->st.connects++;
	t->stats_dirty = true;
	return 0;
fail:
	close(fd);
	t->st.connect_failures++;
	return -ENOTCONN;
}

static void queue_stats(struct cupti_transport *t)
{
	struct xsprof_wire_stats s = {
		.hdr = {.type = XSPROF_WIRE_STATS, .version = 1, .length = sizeof(s)},
	};

	s.dropped_full = t->st.dropped_full;
	s.dropped_cupti = t->dropped_cupti;
	s.dropped_other = t->dropped_other;
	s.connects = t->st.connects;
	/* Not counted as a queued record: it reports on the others. */
	if (t->cap - t->tail < sizeof(s) && t->head > 0) {
		memmove(t->buf, t->buf + t->head, t->tail - t->head);
		t->tail -= t->head;
		t->head = 0;
	}
	if (t->cap - t->tail < sizeof(s))
		return;
	memcpy(t->buf + t->tail, &s, sizeof(s));
	t->tail += sizeof(s);
	t->stats_dirty = false;
}

/* Advance past what the kernel took, record by record. */
static void consume(struct cupti_transport *t, size_t n)
{
	while (n > 0) {
		size_t left = rec_len_at(t, t->head) - t->head_sent;

		if (n < left) {
			t->head_sent += n;
			return;
		}
		n -= left;
		if (hdr_at(t, t->head).type != XSPROF_WIRE_STATS)
			t->st.sent++;
		t->head += rec_len_at(t, t->head);
		t->head_sent = 0;
	}
	if (t->head == t->tail)
		t->head = t->tail = 0;
}

static int send_some(struct cupti_transport *t)
{
	while (t->head < t->tail) {
		size_t off = t->head + t->head_sent;
		ssize_t n = send(t->fd, t->buf + off, t->tail - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			consume(t, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return -EAGAIN;
		drop_connection(t); /* EPIPE, ECONNRESET: the daemon went away */
		return -ENOTCONN;
	}
	return 0;
}

int cupti_transport__flush(struct cupti_transport *t, int wait_ms)
{
	uint64_t deadline = clock__mono_ns() + (uint64_t)(wait_ms > 0 ? wait_ms : 0) * 1000000ull;
	int err;

	for (;;) {
		if (t->fd < 0 && try_connect(t) < 0) {
			/* Nothing to send to: keep the records while they fit, and say so. */
			return -ENOTCONN;
		}
		if (t->stats_dirty)
			queue_stats(t);
		err = send_some(t);
		if (err != -EAGAIN)
			return err;
		uint64_t now = clock__mono_ns();
		if (wait_ms <= 0 || now >= deadline)
			return -EAGAIN;
		struct pollfd p = {.fd = t->fd, .events = POLLOUT};
		int left = (int)((deadline - now + 999999) / 1000000);
		if (poll(&p, 1, left) < 0 && errno != EINTR)
			return -EAGAIN;
	}
}

void cupti_transport__set_drops(struct cupti_transport *t, uint64_t dropped_cupti,
				uint64_t dropped_other)
{
	if (dropped_cupti != t->dropped_cupti || dropped_other != t->dropped_other)
		t->stats_dirty = true;
	t->dropped_cupti = dropped_cupti;
	t->dropped_other = dropped_other;
}

void cupti_transport__after_fork(struct cupti_transport *t, uint32_t pid)
{
	/* close, not shutdown: the parent still uses the socket we inherited. */
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	t->head = t->head_sent = t->tail = 0;
	t->next_attempt_ns = 0;
	memset(&t->st, 0, sizeof(t->st));
	t->dropped_cupti = t->dropped_other = 0;
	t->stats_dirty = false;
	t->hello.pid = pid;
}

int cupti_transport__fd(const struct cupti_transport *t)
{
	return t->fd;
}

void cupti_transport__stats(const struct cupti_transport *t, struct cupti_transport_stats *ret)
{
	*ret = t->st;
	ret->buffered = t->tail - t->head;
	ret->connected = t->fd >= 0;
}
