// SPDX-License-Identifier: Apache-2.0
/*
 * The CUPTI pipe server over real Unix sockets, fed by producers in this test: what is valid
 * is kept, what is not closes only the connection that sent it, and the caps hold.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/gpu/cupti_server.h"
#include "daemon/base/path_lock.h"
#include "tests/lib/cupti_wire_build.h"

static char tmpdir[64];
static char sock_path[128];
static uint8_t rec[XSPROF_WIRE_RECORD_MAX];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/xsprof-cupti-srv-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(sock_path, sizeof(sock_path), "%s/run/cupti.sock", tmpdir);
}

static void teardown(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(cupti_server, .init = setup, .fini = teardown, .timeout = 60);

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct cupti_server *start(struct cupti_server_opts *o)
{
	struct cupti_server_opts def = {0};
	struct cupti_server *s;

	if (!o)
		o = &def;
	o->socket_path = sock_path;
	s = cupti_server__new(o);
	cr_assert_not_null(s, "cupti_server__new: %s", strerror(errno));
	return s;
}

static int client(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	strcpy(a.sun_path, sock_path);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s",
		     strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static void pump_once(struct cupti_server *s, int wait_ms)
{
	struct pollfd p = {.fd = cupti_server__fd(s), .events = POLLIN};

	if (poll(&p, 1, wait_ms) > 0)
		cr_assert_geq(cupti_server__process(s), 0);
}

/* Serve until cond holds (or 5 s pass). */
static bool pump_until(struct cupti_server *s,
		       bool (*cond)(const struct cupti_server_stats *, uint64_t), uint64_t arg)
{
	uint64_t deadline = mono_ns() + 5000000000ull;
	struct cupti_server_stats st;

	for (;;) {
		cupti_server__stats(s, &st);
		if (cond(&st, arg))
			return true;
		if (mono_ns() > deadline)
			return false;
		pump_once(s, 20);
	}
}

static bool stored_at_least(const struct cupti_server_stats *st, uint64_t n)
{
	return st->store.added >= n;
}

static bool malformed_at_least(const struct cupti_server_stats *st, uint64_t n)
{
	return st->malformed >= n;
}

static bool conns_closed(const struct cupti_server_stats *st, uint64_t n)
{
	return st->conns == n;
}

static bool accepted_at_least(const struct cupti_server_stats *st, uint64_t n)
{
	return st->accepted + st->rejected >= n;
}

/* Blocking sends could deadlock against our own single-threaded server: pump while waiting. */
static void send_pumping(struct cupti_server *s, int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else {
			cr_assert(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), "send: %s",
				  strerror(errno));
			pump_once(s, 5);
		}
	}
}

static void send_hello(struct cupti_server *s, int fd, uint32_t claimed_pid)
{
	size_t n = wb_hello(rec, claimed_pid);

	send_pumping(s, fd, rec, n);
}

static void send_kernel(struct cupti_server *s, int fd, const char *name, uint64_t t)
{
	size_t n = wb_kernel(rec, name, t, t + 10, (uint32_t)t);

	send_pumping(s, fd, rec, n);
}

/* The server closed fd: reading it finds EOF (or a reset). */
static bool peer_closed(int fd)
{
	char c;
	ssize_t n = read(fd, &c, 1);

	return n == 0 || (n < 0 && errno == ECONNRESET);
}

struct kinds {
	int n[GPU_ACT_GRAPH + 1];
	uint32_t pid;
	int total;
};

static int count_kinds(void *ctx, const struct gpu_activity *a)
{
	struct kinds *k = ctx;

	k->n[a->kind]++;
	k->pid = a->pid;
	k->total++;
	return 0;
}

Test(cupti_server, socket_and_directory_modes)
{
	struct cupti_server *s;
	struct stat sb;
	char dir[160];

	umask(077); /* the daemon's umask must not lock profiled processes out */
	s = start(NULL);
	cr_assert_eq(stat(sock_path, &sb), 0);
	cr_assert(S_ISSOCK(sb.st_mode));
	cr_assert_eq(sb.st_mode & 0777, 0666);
	snprintf(dir, sizeof(dir), "%s/run", tmpdir);
	cr_assert_eq(stat(dir, &sb), 0);
	cr_assert_eq(sb.st_mode & 0777, 0755);
	cupti_server__free(s);
	cr_assert_neq(stat(sock_path, &sb), 0, "socket removed on free");
}

Test(cupti_server, refuses_to_clobber)
{
	struct cupti_server *s, *s2;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd;

	s = start(NULL);
	s2 = cupti_server__new(&(struct cupti_server_opts){.socket_path = sock_path});
	cr_assert_null(s2);
	cr_assert_eq(errno, EADDRINUSE, "a live daemon keeps its socket");
	cupti_server__free(s);

	/* A stale socket (its daemon died without cleaning up) is replaced. */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(a.sun_path, sock_path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
	s = start(NULL);
	cupti_server__free(s);

	/* Anything that is not a socket is not ours to delete. */
	fd = open(sock_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	close(fd);
	s2 = cupti_server__new(&(struct cupti_server_opts){.socket_path = sock_path});
	cr_assert_null(s2);
	cr_assert_eq(errno, EEXIST);
}

Test(cupti_server, valid_records_of_every_type)
{
	struct cupti_server *s = start(NULL);
	struct cupti_server_stats st;
	struct kinds k = {0};
	int fd = client();
	uint64_t t = mono_ns();
	size_t n;

	send_hello(s, fd, 1); /* a lie: SO_PEERCRED decides */
	send_kernel(s, fd, "_Z4gemmv", t);
	n = wb_memcpy(rec, XSPROF_COPY_DTOH, 1 << 20, t, t + 5, 2);
	send_pumping(s, fd, rec, n);
	n = wb_memset(rec, 64, t, t + 1);
	send_pumping(s, fd, rec, n);
	n = wb_api(rec, XSPROF_API_RUNTIME, 211, 77, t, t + 3, 1);
	send_pumping(s, fd, rec, n);
	n = wb_sync(rec, XSPROF_SYNC_CONTEXT, t, t + 8);
	send_pumping(s, fd, rec, n);
	n = wb_nvtx(rec, "epoch", "train", t, t + 100, 0);
	send_pumping(s, fd, rec, n);
	n = wb_graph(rec, 3, t, t + 50);
	send_pumping(s, fd, rec, n);
	n = wb_stats(rec, 5, 2);
	send_pumping(s, fd, rec, n);
	cr_assert(pump_until(s, stored_at_least, 7));
	pump_once(s, 20);

	cupti_server__stats(s, &st);
	cr_assert_eq(st.malformed, 0, "%s", st.last_malformed);
	cr_assert_eq(st.records[XSPROF_WIRE_KERNEL], 1);
	cr_assert_eq(st.records[XSPROF_WIRE_STATS], 1);
	cr_assert_eq(st.sender_dropped_full, 5);
	cr_assert_eq(st.sender_dropped_cupti, 2);
	gpu_store__for_each(cupti_server__store(s), 0, count_kinds, &k);
	cr_assert_eq(k.total, 7);
	for (int kind = GPU_ACT_KERNEL; kind <= GPU_ACT_GRAPH; kind++)
		cr_assert_eq(k.n[kind], 1, "kind %d", kind);
	cr_assert_eq(k.pid, (uint32_t)getpid(), "pid from SO_PEERCRED, not the hello");
	close(fd);
	cr_assert(pump_until(s, conns_closed, 0));
	cupti_server__stats(s, &st);
	cr_assert_eq(st.truncated, 0);
	cupti_server__free(s);
}

Test(cupti_server, byte_by_byte)
{
	struct cupti_server *s = start(NULL);
	int fd = client();
	size_t n;

	n = wb_hello(rec, 0);
	n += wb_nvtx(rec + n, "slow sender", NULL, 1, 2, 0);
	for (size_t i = 0; i < n; i++) {
		send_pumping(s, fd, rec + i, 1);
		pump_once(s, 1);
	}
	cr_assert(pump_until(s, stored_at_least, 1));
	close(fd);
	cupti_server__free(s);
}

Test(cupti_server, truncated_connection_keeps_what_was_whole)
{
	struct cupti_server *s = start(NULL);
	struct cupti_server_stats st;
	int fd = client();
	size_t n;

	send_hello(s, fd, 0);
	send_kernel(s, fd, "whole", 100);
	n = wb_kernel(rec, "cut short", 200, 300, 2);
	send_pumping(s, fd, rec, n / 2);
	close(fd);
	cr_assert(pump_until(s, stored_at_least, 1));
	cr_assert(pump_until(s, conns_closed, 0));
	cupti_server__stats(s, &st);
	cr_assert_eq(st.truncated, 1);
	cr_assert_eq(st.malformed, 0);
	cr_assert_eq(st.store.records, 1);
	cupti_server__free(s);
}

Test(cupti_server, bad_hello_is_dropped)
{
	struct cupti_server *s = start(NULL);
	struct cupti_server_stats st;
	struct xsprof_wire_hello h;
	int fd;

	fd = client();
	wb_hello(&h, 0);
	h.magic = 0x46544547; /* "GETF": say, an HTTP client on the wrong socket */
	send_pumping(s, fd, &h, sizeof(h));
	cr_assert(pump_until(s, malformed_at_least, 1));
	cr_assert(peer_closed(fd));
	close(fd);
	cupti_server__stats(s, &st);
	cr_assert(strstr(st.last_malformed, "magic"), "%s", st.last_malformed);

	fd = client();
	wb_hello(&h, 0);
	h.version = 99;
	send_pumping(s, fd, &h, sizeof(h));
	cr_assert(pump_until(s, malformed_at_least, 2));
	cr_assert(peer_closed(fd));
	close(fd);
	cupti_server__stats(s, &st);
	cr_assert(strstr(st.last_malformed, "version"), "%s", st.last_malformed);
	cr_assert_eq(st.store.records, 0);
	cupti_server__free(s);
}

/* Each case writes one malformed record into rec and returns its length. */
static size_t bad_lying_length(void)
{
	size_t n = wb_kernel(rec, "liar", 1, 2, 1);
	struct xsprof_wire_hdr *h = (struct xsprof_wire_hdr *)rec;

	h->length += 8;
	return n + 8;
}

static size_t bad_oversized(void)
{
	wb_kernel(rec, "huge", 1, 2, 1);
	((struct xsprof_wire_hdr *)rec)->length = 64u << 20;
	return sizeof(struct xsprof_wire_hdr); /* refused on the header alone */
}

static size_t bad_enum(void)
{
	return wb_memcpy(rec, 200, 10, 1, 2, 1);
}

static size_t bad_unterminated(void)
{
	size_t n = wb_kernel(rec, "abc", 1, 2, 1);

	rec[sizeof(struct xsprof_wire_kernel) + 3] = 'd';
	return n;
}

static size_t bad_time(void)
{
	return wb_api(rec, XSPROF_API_DRIVER, 307, 1, 500, 400, 1);
}

static size_t bad_type(void)
{
	size_t n = wb_sync(rec, 1, 1, 2);

	((struct xsprof_wire_hdr *)rec)->type = 0x7777;
	return n;
}

Test(cupti_server, malformed_records_close_only_their_connection)
{
	static size_t (*const cases[])(void) = {
		bad_lying_length, bad_oversized, bad_enum, bad_unterminated, bad_time, bad_type,
	};
	const unsigned nr = sizeof(cases) / sizeof(cases[0]);
	struct cupti_server *s = start(NULL);
	struct cupti_server_stats st;
	int good = client();

	send_hello(s, good, 0);
	for (unsigned i = 0; i < nr; i++) {
		int fd = client();
		size_t n;

		send_hello(s, fd, 0);
		send_kernel(s, fd, "before", 1000 + i);
		n = cases[i]();
		send_pumping(s, fd, rec, n);
		/* Never read: a record sent after the bad one. */
		send(fd, rec, 8, MSG_DONTWAIT | MSG_NOSIGNAL);
		cr_assert(pump_until(s, malformed_at_least, i + 1), "case %u", i);
		cr_assert(peer_closed(fd), "case %u", i);
		close(fd);
		/* The good connection, interleaved, goes on regardless. */
		send_kernel(s, good, "good", 2000 + i);
	}
	cr_assert(pump_until(s, stored_at_least, 2 * nr));
	cupti_server__stats(s, &st);
	cr_assert_eq(st.malformed, nr);
	cr_assert_eq(st.store.records, 2 * nr, "valid records before each bad one are kept");
	cr_assert_eq(st.conns, 1, "the good connection is still open");
	send_kernel(s, good, "still good", 9999);
	cr_assert(pump_until(s, stored_at_least, 2 * nr + 1));
	close(good);
	cupti_server__free(s);
}

Test(cupti_server, garbage_alongside_a_busy_good_client)
{
	struct cupti_server *s = start(NULL);
	struct cupti_server_stats st;
	int good = client(), bad = client();
	uint8_t junk[4096];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 131 + 7);
	send_hello(s, good, 0);
	for (int i = 0; i < 500; i++) {
		send_kernel(s, good, "k", (uint64_t)i + 1);
		if (i == 250)
			send_pumping(s, bad, junk, sizeof(junk));
	}
	cr_assert(pump_until(s, stored_at_least, 500));
	cupti_server__stats(s, &st);
	cr_assert_eq(st.malformed, 1);
	cr_assert_eq(st.store.records, 500);
	close(good);
	close(bad);
	cupti_server__free(s);
}

Test(cupti_server, connection_caps)
{
	struct cupti_server_opts o = {.max_conns = 4};
	struct cupti_server *s = start(&o);
	struct cupti_server_stats st;
	int fds[6];

	for (int i = 0; i < 6; i++)
		fds[i] = client();
	cr_assert(pump_until(s, accepted_at_least, 6));
	cupti_server__stats(s, &st);
	cr_assert_eq(st.accepted, 4);
	cr_assert_eq(st.rejected, 2);
	cr_assert(peer_closed(fds[5]), "the refused are told by EOF");
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	cupti_server__free(s);

	o = (struct cupti_server_opts){.max_conns = 8, .max_conns_per_uid = 2};
	s = start(&o);
	for (int i = 0; i < 3; i++)
		fds[i] = client();
	cr_assert(pump_until(s, accepted_at_least, 3));
	cupti_server__stats(s, &st);
	cr_assert_eq(st.accepted, 2);
	cr_assert_eq(st.rejected, 1, "one uid cannot take every slot");
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	cupti_server__free(s);
}

/* Slots are not held by silent clients: no hello within hello_ms, or nothing for idle_ms,
 * closes the connection; one that keeps sending stays. */
Test(cupti_server, silent_connections_are_closed)
{
	struct cupti_server_opts o = {.idle_ms = 1500, .hello_ms = 500};
	struct cupti_server *s = start(&o);
	struct cupti_server_stats st;
	int mute = client(), quiet = client(), busy = client();
	uint64_t end;

	cr_assert(pump_until(s, accepted_at_least, 3));
	send_hello(s, quiet, 0);
	send_hello(s, busy, 0);
	end = mono_ns() + 3500000000ull;
	for (uint64_t t = 1; mono_ns() < end; t++) {
		send_kernel(s, busy, "k", t * 100);
		for (int i = 0; i < 10; i++)
			pump_once(s, 20);
	}
	cupti_server__stats(s, &st);
	cr_assert_eq(st.idle_closed, 2, "closed for silence: %llu",
		     (unsigned long long)st.idle_closed);
	cr_assert_eq(st.conns, 1, "the sending client stays");
	cr_assert(peer_closed(mute), "no hello: closed");
	cr_assert(peer_closed(quiet), "hello, then nothing: closed");
	cr_assert_gt(st.store.added, 5, "the sending client's records kept");
	close(mute);
	close(quiet);
	close(busy);
	cupti_server__free(s);
}

Test(cupti_server, record_flood_stays_within_caps)
{
	struct cupti_server_opts o = {.store = {.max_records = 100}, .max_conn_buffer = 1};
	struct cupti_server *s = start(&o);
	struct cupti_server_stats st;
	const size_t total = 20000;
	uint8_t *burst = malloc(total * 128);
	size_t len = 0;
	int fd = client();

	len += wb_hello(burst, 0);
	for (size_t i = 0; i < total; i++)
		len += wb_kernel(burst + len, "flood", i + 1, i + 2, (uint32_t)i);
	send_pumping(s, fd, burst, len);
	cr_assert(pump_until(s, stored_at_least, total));
	cupti_server__stats(s, &st);
	cr_assert_eq(st.malformed, 0);
	cr_assert_eq(st.store.records, 100);
	cr_assert_eq(st.store.evicted, total - 100);
	cr_assert_eq(st.conns, 1, "a busy sender is not a bad one");
	close(fd);
	free(burst);
	cupti_server__free(s);
}

Test(cupti_server, pid_comes_from_peercred)
{
	struct cupti_server *s = start(NULL);
	struct kinds k = {0};
	int status;
	pid_t child;

	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		int fd = client();
		size_t n = wb_hello(rec, (uint32_t)getppid()); /* claims to be its parent */

		n += wb_kernel(rec + n, "from the child", 10, 20, 1);
		if (send(fd, rec, n, MSG_NOSIGNAL) != (ssize_t)n)
			_exit(1);
		close(fd);
		_exit(0);
	}
	cr_assert(pump_until(s, stored_at_least, 1));
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	gpu_store__for_each(cupti_server__store(s), 0, count_kinds, &k);
	cr_assert_eq(k.total, 1);
	cr_assert_eq(k.pid, (uint32_t)child);
	cupti_server__free(s);
}

/* A sender whose connection closes (it exited or was killed) can no longer end the ranges it
 * opened: they end then, as ranges; those it ended are not doubled. */
Test(cupti_server, a_closed_connection_ends_its_open_ranges)
{
	struct cupti_server *s = start(NULL);
	struct cupti_server_stats st;
	struct kinds k = {0};
	uint64_t t0 = mono_ns();
	int fd = client();
	size_t n = wb_hello(rec, 0);

	n += wb_nvtx(rec + n, "epoch", NULL, t0, t0, XSPROF_WIRE_F_OPEN);
	n += wb_nvtx(rec + n, "step", NULL, t0 + 10, t0 + 10, XSPROF_WIRE_F_OPEN);
	n += wb_nvtx(rec + n, "step", NULL, t0 + 10, t0 + 20, 0);
	send_pumping(s, fd, rec, n);
	cr_assert(pump_until(s, stored_at_least, 1));
	cupti_server__stats(s, &st);
	cr_expect_eq(st.store.open, 1, "epoch is open, step ended");
	close(fd);
	cr_assert(pump_until(s, conns_closed, 0));
	cupti_server__stats(s, &st);
	cr_expect_eq(st.store.open, 0);
	cr_expect_eq(st.store.open_ended_at_exit, 1);
	gpu_store__for_each(cupti_server__store(s), 0, count_kinds, &k);
	cr_expect_eq(k.n[GPU_ACT_NVTX], 2, "step, and epoch ended at the close");
	cupti_server__free(s);
}

static int first_start(void *ctx, const struct gpu_activity *a)
{
	*(uint64_t *)ctx = a->start_ns;
	return 1;
}

Test(cupti_server, realtime_sender_is_converted)
{
	struct cupti_server *s = start(NULL);
	struct xsprof_wire_hello h;
	struct timespec rt;
	uint64_t real_ns, got = 0, mono_before, mono_after;
	int fd = client();

	wb_hello(&h, 0);
	h.clock_id = CLOCK_REALTIME;
	send_pumping(s, fd, &h, sizeof(h));
	mono_before = mono_ns();
	clock_gettime(CLOCK_REALTIME, &rt);
	real_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
	send_kernel(s, fd, "rt", real_ns);
	cr_assert(pump_until(s, stored_at_least, 1));
	mono_after = mono_ns();
	gpu_store__for_each(cupti_server__store(s), 0, first_start, &got);
	cr_assert(got + 50000000ull >= mono_before && got <= mono_after + 50000000ull,
		  "converted %llu not within [%llu, %llu]", (unsigned long long)got,
		  (unsigned long long)mono_before, (unsigned long long)mono_after);
	close(fd);
	cupti_server__free(s);
}

static bool stats_at_least(const struct cupti_server_stats *st, uint64_t n)
{
	return st->records[XSPROF_WIRE_STATS] >= n || st->malformed;
}

/* A sender's cumulative counters are whatever it says: the totals saturate, never wrap. */
Test(cupti_server, sender_drops_saturate)
{
	struct cupti_server *s = start(NULL);
	struct cupti_server_stats st;
	int fd = client();
	size_t n;

	send_hello(s, fd, 0);
	/* Up to almost 2^64, back to 0, up again: the deltas add up past 2^64. */
	n = wb_stats(rec, UINT64_MAX - 1, 0);
	send_pumping(s, fd, rec, n);
	n = wb_stats(rec, 0, 0);
	send_pumping(s, fd, rec, n);
	n = wb_stats(rec, UINT64_MAX - 1, 0);
	send_pumping(s, fd, rec, n);
	cr_assert(pump_until(s, stats_at_least, 3));
	close(fd);
	cupti_server__stats(s, &st);
	cr_assert_eq(st.malformed, 0, "%s", st.last_malformed);
	cr_assert_eq(st.sender_dropped_full, UINT64_MAX, "wrapped to %llu",
		     (unsigned long long)st.sender_dropped_full);
	cupti_server__free(s);
}

static bool only_pid(void *ctx, pid_t pid)
{
	return pid == *(const pid_t *)ctx;
}

static bool foreign_at_least(const struct cupti_server_stats *st, uint64_t n)
{
	return st->foreign >= n;
}

/* A session takes GPU records from its own processes only: others are refused and counted. */
Test(cupti_server, senders_outside_the_session_are_refused)
{
	pid_t nobody = 1, me = getpid();
	struct cupti_server_opts o = {.accept_pid = only_pid, .accept_ctx = &nobody};
	struct cupti_server *s = start(&o);
	struct cupti_server_stats st;
	int fd = client();

	cr_assert(pump_until(s, foreign_at_least, 1));
	cr_assert(peer_closed(fd), "a foreign sender is disconnected");
	close(fd);
	cupti_server__stats(s, &st);
	cr_assert_eq(st.accepted, 0);
	cr_assert_eq(st.store.added, 0);
	cupti_server__free(s);

	o = (struct cupti_server_opts){.accept_pid = only_pid, .accept_ctx = &me};
	s = start(&o);
	fd = client();
	send_hello(s, fd, 0);
	send_kernel(s, fd, "mine", mono_ns());
	cr_assert(pump_until(s, stored_at_least, 1));
	cupti_server__stats(s, &st);
	cr_assert_eq(st.foreign, 0);
	close(fd);
	cupti_server__free(s);
}

/* While another process holds the path's lock, nothing at the path is touched. */
Test(cupti_server, locked_path_is_left_alone)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct cupti_server *s;
	struct stat before, after;
	int lock_fd, fd;
	pid_t holder = 0;
	char dir[160];

	snprintf(dir, sizeof(dir), "%s/run", tmpdir);
	cr_assert_eq(mkdir(dir, 0755), 0);
	cr_assert_eq(path_lock__take(sock_path, &lock_fd, &holder), 0);
	/* A socket nobody listens on: without the lock it would pass for stale. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	strcpy(a.sun_path, sock_path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
	cr_assert_eq(lstat(sock_path, &before), 0);
	s = cupti_server__new(&(struct cupti_server_opts){.socket_path = sock_path});
	cr_assert_null(s);
	cr_assert_eq(errno, EADDRINUSE);
	cr_assert_eq(lstat(sock_path, &after), 0, "the holder's socket was unlinked");
	cr_assert_eq(after.st_ino, before.st_ino);
	/* A second taker learns who holds it. */
	cr_assert_eq(path_lock__take(sock_path, &fd, &holder), -EADDRINUSE);
	cr_assert_eq(holder, getpid());
	close(lock_fd);
	s = start(NULL);
	cupti_server__free(s);
}

/*
 * The socket appears at its path with its mode already set: bound in a directory of the
 * daemon's own, then renamed into place (one IN_MOVED_TO, never an IN_CREATE of it there), so
 * no chmod by a path that another user could swap for a link (issue 39). The same helper binds
 * the API socket with its group.
 */
Test(cupti_server, socket_appears_with_its_mode)
{
	char dir[160], buf[4096] __attribute__((aligned(8)));
	bool created = false, moved = false;
	struct cupti_server *s;
	struct stat st;
	int in;
	ssize_t n;

	snprintf(dir, sizeof(dir), "%s/run", tmpdir);
	cr_assert_eq(mkdir(dir, 0755), 0);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	cr_assert_geq(in, 0);
	cr_assert_geq(inotify_add_watch(in, dir, IN_CREATE | IN_MOVED_TO), 0);
	s = start(&(struct cupti_server_opts){.socket_mode = 0666});
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			if (e->len && !strcmp(e->name, "cupti.sock")) {
				created |= !!(e->mask & IN_CREATE);
				moved |= !!(e->mask & IN_MOVED_TO);
			}
			p += sizeof(*e) + e->len;
		}
	}
	close(in);
	cr_expect(moved && !created, "cupti.sock %s",
		  created ? "was created in place" : "never moved");
	cr_assert_eq(lstat(sock_path, &st), 0);
	cr_expect(S_ISSOCK(st.st_mode));
	cr_expect_eq(st.st_mode & 07777, 0666, "mode %o", st.st_mode & 07777);
	cupti_server__free(s);
	/* Nothing left of the private directory beside it (the lock file stays, by design). */
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd),
			 "test -z \"$(ls -A '%s' | grep -v '^cupti.sock.lock$')\"", dir);
		cr_expect_eq(system(cmd), 0, "files left in %s", dir);
	}
}

struct by_uid {
	uint64_t root, other;
};

static int count_by_uid(void *ctx, const struct gpu_activity *a)
{
	struct by_uid *u = ctx;

	if (a->uid == 0)
		u->root++;
	else
		u->other++;
	return 0;
}

/* --max-cpu's cap on reading (issue 53, H8): a user flooding the socket is read at the cap and
 * no faster, counted under its uid; a light sender beside it is read in full; lifting the cap
 * reads what waited, nothing lost. Root only (the flooder is another uid). */
Test(cupti_server, a_capped_flooder_waits_and_a_light_sender_does_not)
{
	struct cupti_server_opts o = {.max_conn_buffer = 1};
	struct cupti_server *s = start(&o);
	struct cupti_server_stats st;
	const size_t total = 20000;
	struct by_uid u = {0};
	uint64_t t_cap, t0, rate, elapsed_ms, most;
	uint32_t top_uid = 0;
	int status, fd;
	pid_t child;

	cr_assert_eq(geteuid(), 0, "needs root: the flooder runs as another user");
	cr_assert_eq(chmod(tmpdir, 0755), 0);
	cupti_server__set_uid_cap(s, 1000);
	t_cap = mono_ns();
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		uint8_t *burst = malloc(total * 128);
		size_t len = 0;
		int cfd;

		if (!burst || setgid(65534) || setuid(65534))
			_exit(3);
		cfd = client();
		len += wb_hello(burst, 0);
		for (size_t i = 0; i < total; i++)
			len += wb_kernel(burst + len, "flood", i + 1, i + 2, (uint32_t)i);
		for (size_t off = 0; off < len;) {
			ssize_t n = send(cfd, burst + off, len - off, MSG_NOSIGNAL);

			if (n <= 0)
				_exit(1);
			off += (size_t)n;
		}
		close(cfd);
		_exit(0);
	}
	fd = client();
	send_hello(s, fd, 0);
	for (int i = 0; i < 10; i++)
		send_kernel(s, fd, "light", 100 + (uint64_t)i);
	/* Half a second at 1000 a second: five windows of 100 (and the one under way). */
	t0 = mono_ns();
	while (mono_ns() - t0 < 500000000ull)
		pump_once(s, 10);
	cupti_server__stats(s, &st);
	gpu_store__for_each(cupti_server__store(s), 0, count_by_uid, &u);
	/* The light sends pump too, and on a loaded machine take a while: the flooder is read
	 * from the moment the cap is set, so the bound counts from there: a window's cap for
	 * each window begun (and the one under way when the cap was set), and one read's overrun
	 * (a read is parsed whole; the next window pays it back). */
	elapsed_ms = (mono_ns() - t_cap) / 1000000ull;
	most = (elapsed_ms / CUPTI_INTAKE_WINDOW_MS + 2) * 100 + 50;
	cr_log_info("flooder: %llu read in %llu ms, at most %llu", (unsigned long long)u.other,
		    (unsigned long long)elapsed_ms, (unsigned long long)most);
	cr_assert_eq(u.root, 10, "the light sender's 10 records, all read (%llu)",
		     (unsigned long long)u.root);
	cr_assert(
		u.other >= 300 && u.other <= most,
		"the flooder read at about the cap: %llu in %llu ms at 1000 a second (at most %llu)",
		(unsigned long long)u.other, (unsigned long long)elapsed_ms,
		(unsigned long long)most);
	cr_assert_gt(st.intake_pauses, 0);
	cr_assert_eq(st.intake_last_paused_uid, 65534);
	cr_assert_gt(st.intake_paused_ns, 100000000ull, "held most of the time: %llu ns",
		     (unsigned long long)st.intake_paused_ns);
	rate = cupti_server__top_uid_rate(s, &top_uid);
	cr_assert(rate >= 500 && rate <= 2000, "the top rate %llu is about the cap",
		  (unsigned long long)rate);
	cr_assert_eq(top_uid, 65534);
	/* Lifted: what waited in the socket is read, nothing lost. */
	cupti_server__set_uid_cap(s, 0);
	cr_assert(pump_until(s, stored_at_least, total + 10), "all of the flood once lifted");
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the flooder's sends");
	cupti_server__stats(s, &st);
	cr_assert_eq(st.malformed, 0);
	close(fd);
	cupti_server__free(s);
}
