// SPDX-License-Identifier: Apache-2.0
/*
 * The injection library's transport, driven directly: with no daemon, a daemon that never
 * reads, and a daemon that restarts. The application's side must never wait, only count.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cupti_inject/transport.h"
#include "daemon/gpu/cupti_server.h"
#include "tests/lib/cupti_wire_build.h"

static char tmpdir[64];
static char sock_path[128];
static uint8_t rec[XSPROF_WIRE_RECORD_MAX];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/xsprof-cupti-tr-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(sock_path, sizeof(sock_path), "%s/cupti.sock", tmpdir);
}

static void teardown(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(cupti_transport, .init = setup, .fini = teardown, .timeout = 60);

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct cupti_transport *transport(size_t max_buffered, uint32_t reconnect_ms)
{
	struct cupti_transport_opts o = {
		.socket_path = sock_path,
		.max_buffered = max_buffered,
		.reconnect_ms = reconnect_ms,
		.clock_id = CLOCK_MONOTONIC,
	};
	struct cupti_transport *t = cupti_transport__new(&o);

	cr_assert_not_null(t);
	return t;
}

static int append_kernel(struct cupti_transport *t, uint64_t i)
{
	size_t n = wb_kernel(rec, "_Z6kernelv", i + 1, i + 2, (uint32_t)i);

	return cupti_transport__append(t, rec, n);
}

static void serve(struct cupti_server *s, int ms)
{
	uint64_t end = mono_ns() + (uint64_t)ms * 1000000ull;

	while (mono_ns() < end) {
		struct pollfd p = {.fd = cupti_server__fd(s), .events = POLLIN};

		if (poll(&p, 1, 5) > 0)
			cr_assert_geq(cupti_server__process(s), 0);
	}
}

Test(cupti_transport, no_daemon_never_blocks_and_counts)
{
	struct cupti_transport *t = transport(64 << 10, 0);
	struct cupti_transport_stats st;
	int refused = 0;

	for (uint64_t i = 0; i < 5000; i++) {
		if (append_kernel(t, i) == -ENOBUFS)
			refused++;
		if (i % 100 == 0)
			cr_assert_eq(cupti_transport__flush(t, 0), -ENOTCONN);
	}
	cupti_transport__stats(t, &st);
	cr_assert_gt(refused, 0);
	cr_assert_eq(st.dropped_full, (uint64_t)refused);
	cr_assert_eq(st.queued + st.dropped_full, 5000);
	cr_assert_leq(st.buffered, 64 << 10, "bounded");
	cr_assert_eq(st.connect_failures, 50);
	cr_assert_eq(st.connected, 0);
	cupti_transport__free(t);
}

Test(cupti_transport, rejects_bad_records)
{
	struct cupti_transport *t = transport(0, 0);
	size_t n = wb_kernel(rec, "x", 1, 2, 1);

	cr_assert_eq(cupti_transport__append(t, rec, n - 8), -EINVAL, "length disagrees");
	cr_assert_eq(cupti_transport__append(t, rec, 4), -EINVAL);
	cupti_transport__free(t);
}

Test(cupti_transport, reconnect_is_rate_limited)
{
	struct cupti_transport *t = transport(0, 60000);
	struct cupti_transport_stats st;

	for (int i = 0; i < 100; i++)
		cr_assert_eq(cupti_transport__flush(t, 0), -ENOTCONN);
	cupti_transport__stats(t, &st);
	cr_assert_eq(st.connect_failures, 1, "one attempt per interval, not per flush");
	cupti_transport__free(t);
}

/* A daemon that accepts and then never reads: the socket buffer fills up. */
Test(cupti_transport, stalled_daemon_never_blocks)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct cupti_transport *t = transport(256 << 10, 0);
	struct cupti_transport_stats st;
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(a.sun_path, sock_path);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(lfd, 4), 0);
	for (uint64_t i = 0; i < 50000; i++) {
		append_kernel(t, i);
		/* A flush that blocked on the full socket would never return (nobody reads it):
		 * each one answers at once, sent or -EAGAIN. */
		if (i % 64 == 0) {
			int r = cupti_transport__flush(t, 0);

			cr_assert(r == 0 || r == -EAGAIN, "flush: %d", r);
		}
	}
	cupti_transport__stats(t, &st);
	cr_assert_eq(st.connected, 1);
	cr_assert_gt(st.dropped_full, 0, "a full socket and buffer drop records");
	cr_assert_gt(st.sent, 0);
	cr_assert_leq(st.buffered, 256 << 10);
	/* Even the exit linger gives up when what it is given has passed. */
	cr_assert_eq(cupti_transport__flush(t, 50), -EAGAIN);
	cupti_transport__free(t);
	close(lfd);
}

static bool all_stored(struct cupti_server *s, uint64_t n, int ms)
{
	struct cupti_server_stats st;
	uint64_t end = mono_ns() + (uint64_t)ms * 1000000ull;

	do {
		serve(s, 5);
		cupti_server__stats(s, &st);
	} while (st.store.added < n && mono_ns() < end);
	return st.store.added >= n;
}

Test(cupti_transport, delivers_and_reconnects_after_daemon_restart)
{
	struct cupti_server_opts so = {.socket_path = sock_path};
	struct cupti_transport *t = transport(0, 0);
	struct cupti_transport_stats st;
	struct cupti_server_stats ss;
	struct cupti_server *s;

	/* Records queued before any daemon exists are kept and sent once one appears. */
	for (uint64_t i = 0; i < 10; i++)
		cr_assert_eq(append_kernel(t, i), 0);
	cr_assert_eq(cupti_transport__flush(t, 0), -ENOTCONN);
	s = cupti_server__new(&so);
	cr_assert_not_null(s);
	for (uint64_t i = 10; i < 100; i++)
		cr_assert_eq(append_kernel(t, i), 0);
	cr_assert_eq(cupti_transport__flush(t, 0), 0);
	cr_assert(all_stored(s, 100, 3000));
	cupti_server__stats(s, &ss);
	cr_assert_eq(ss.malformed, 0, "%s", ss.last_malformed);
	cupti_server__free(s);

	/* The daemon is gone: sends fail, nothing blocks, records wait or drop. */
	for (uint64_t i = 100; i < 200; i++)
		append_kernel(t, i);
	for (int i = 0; i < 3; i++)
		cupti_transport__flush(t, 0);
	cupti_transport__stats(t, &st);
	cr_assert_eq(st.connected, 0);
	cr_assert_geq(st.disconnects, 1);

	/* A new daemon on the same path: the next flush reconnects with a fresh hello. */
	s = cupti_server__new(&so);
	cr_assert_not_null(s);
	for (uint64_t i = 200; i < 300; i++)
		append_kernel(t, i);
	cr_assert_eq(cupti_transport__flush(t, 0), 0);
	cr_assert(all_stored(s, 100, 3000));
	cupti_server__stats(s, &ss);
	cr_assert_eq(ss.malformed, 0, "a reconnect starts on a record boundary: %s",
		     ss.last_malformed);
	cr_assert_eq(ss.records[XSPROF_WIRE_STATS] > 0, 1, "the sender reports its counters");
	cupti_transport__stats(t, &st);
	cr_assert_eq(st.connects, 2);
	cr_assert_eq(st.buffered, 0);
	cr_assert_eq(st.sent + st.dropped_full, 300, "every record is sent or counted as dropped");
	cupti_transport__free(t);
	cupti_server__free(s);
}

Test(cupti_transport, after_fork_forgets_the_parent)
{
	struct cupti_server_opts so = {.socket_path = sock_path};
	struct cupti_server *s = cupti_server__new(&so);
	struct cupti_transport *t = transport(0, 0);
	struct cupti_transport_stats st;

	cr_assert_not_null(s);
	append_kernel(t, 1);
	cr_assert_eq(cupti_transport__flush(t, 0), 0);
	append_kernel(t, 2);
	cupti_transport__after_fork(t, 4242);
	cupti_transport__stats(t, &st);
	cr_assert_eq(st.connected, 0);
	cr_assert_eq(st.buffered, 0);
	cr_assert_eq(st.queued, 0);
	cupti_transport__free(t);
	cupti_server__free(s);
}
