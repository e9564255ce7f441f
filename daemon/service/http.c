// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <microhttpd.h>
#include <systemd/sd-event.h>

#include "daemon/base/clock.h"
#include "daemon/base/path_lock.h"
#include "daemon/log.h"
#include "daemon/service/http.h"

/* Bounds on what a client can make us hold (the connection caps are in http.h). */
#define CONN_MEMORY_LIMIT  (128 * 1024)
#define CONN_IDLE_TIMEOUT  30 /* seconds without traffic; suspended requests are exempt */
#define MAX_PEER_GROUPS	   256
#define ACCEPTS_PER_WAKEUP 32 /* then the loop serves others; level-triggered brings us back */
#define SWEEP_US	   (1000 * 1000ull)

static int mkdir_parents(const char *path)
{
	char dir[PATH_MAX];
	char *p;

	if (strlen(path) >= sizeof(dir))
		return -ENAMETOOLONG;
	strcpy(dir, path);
	p = strrchr(dir, '/');
	if (!p || p == dir)
		return 0;
	*p = '\0';
	for (p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

int http__unix_listen(const char *path, gid_t gid, struct http_unix_socket *ret)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	pid_t holder = 0;
	int fd, lock_fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	err = mkdir_parents(path);
	if (err)
		return err;
	/* One owner per path: nothing is unlinked or bound before the lock is ours. */
	err = path_lock__take(path, &lock_fd, &holder);
	if (err) {
		ret->holder = holder;
		return err;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		err = -errno;
		close(lock_fd);
		return err;
	}
	/* With the lock held, a socket file there was left by a daemon that died. */
	err = sock_file__remove_stale(path);
	if (err) {
		close(fd);
		close(lock_fd);
		return err;
	}
	ret->file = (struct sock_file){};
	err = sock_file__bind(fd, path, gid != (gid_t)-1 ? 0660 : 0600, gid, &ret->file);
	if (!err && listen(fd, 64))
		err = -errno;
	if (err) {
		close(fd);
		sock_file__remove_if_ours(&ret->file, path);
		close(lock_fd);
		return err;
	}
	ret->fd = fd;
	ret->lock_fd = lock_fd;
	return 0;
}

void http__unix_release(struct http_unix_socket *u, const char *path)
{
	if (u->lock_fd < 0)
		return;
	sock_file__remove_if_ours(&u->file, path);
	close(u->lock_fd);
	u->lock_fd = -1;
}

int http__tcp_listen(const char *addr_port, int *ret_fd)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char host[64];
	const char *colon = strrchr(addr_port, ':');
	unsigned long port;
	char *end;
	int fd, one = 1, err;

	if (!colon || (size_t)(colon - addr_port) >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr_port, colon - addr_port);
	host[colon - addr_port] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (*end || !port || port > 65535)
		return -EINVAL;
	if (inet_pton(AF_INET, host[0] ? host : "127.0.0.1", &sa.sin_addr) != 1)
		return -EINVAL;
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		err = -errno;
		close(fd);
		return err;
	}
	*ret_fd = fd;
	return 0;
}

static void mhd_log(void *ctx, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	/* Connections we hand over may be Unix sockets, where TCP options do not apply. */
	/* Nor does a client that went away, one we cut off or one that does not speak TLS deserve
	 * a warning each (a flood would fill the journal). */
	if (strstr(msg, "TCP_NODELAY") || strstr(msg, "TCP_CORK") ||
	    strstr(msg, "push the data from buffers") || strstr(msg, "connection closure") ||
	    strstr(msg, "Application reported internal error") || strstr(msg, "handshake") ||
	    strstr(msg, "TLS"))
		log_debug("http: %s", msg);
	else
		log_warn("http: %s", msg);
}

/* A connection as we see it: who, and which deadline applies to it now. */
enum conn_phase {
	PHASE_HEADERS,	 /* waiting for (the rest of) a request: the header deadline runs */
	PHASE_ANSWERING, /* answered or being answered: MHD's idle timeout applies */
	PHASE_WAITING,	 /* suspended on something the service waits for: its own deadline */
};

struct http_conn {
	struct http_server *srv;
	struct MHD_Connection *mhd;
	int fd;
	uint64_t key; /* whose share it counts against: uid, or TCP peer address */
	bool privileged;
	enum conn_phase phase;
	uint64_t since_ns; /* start of the current header phase */
	uint64_t wait_deadline_ns;
	bool expired;	      /* resumed by us (deadline or hang-up), not by the service */
	bool timed_out;	      /* shut down for the header deadline (or evicted) */
	bool authed;	      /* TCP: a request on it showed a valid token */
	const char *refusing; /* TLS: over a cap; its first request is answered 503 with this */
	struct http_conn *prev, *next;
};

/* TCP addresses that sent wrong tokens lately. */
#define TOKEN_PEERS 64
struct token_peer {
	uint64_t key;
	uint32_t fails;
	uint64_t first_ns, until_ns; /* the minute the fails count in; refused until then */
};

/* TLS connections handed to MHD only to be told 503 (in TLS), each for a second or two. */
#define MAX_REFUSING 8

struct http_server {
	struct MHD_Daemon *mhd;
	sd_event_source *io, *timer, *listen, *sweep, *backoff;
	int listen_fd;
	bool tcp;
	MHD_AccessHandlerCallback handler;
	MHD_RequestCompletedCallback completed;
	void *ctx;
	struct http_conn *conns, *adding;
	bool tls;
	struct token_peer bad[TOKEN_PEERS];
	struct http_server_stats st;
};

static int run_mhd(struct http_server *s)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (MHD_run(s->mhd) != MHD_YES)
		log_debug("http: MHD_run reported an error");
	/* Re-arm the timer for MHD's own timeouts (idle connections). */
	if (MHD_get_timeout(s->mhd, &ms) == MHD_YES) {
		sd_event_source_set_time_relative(s->timer, ms * 1000 + 1);
		sd_event_source_set_enabled(s->timer, SD_EVENT_ONESHOT);
	} else {
		sd_event_source_set_enabled(s->timer, SD_EVENT_OFF);
	}
	/* The deadline sweep runs while there is anything to sweep. */
	if (s->conns && sd_event_source_get_enabled(s->sweep, NULL) == 0) {
		sd_event_source_set_time_relative(s->sweep, SWEEP_US);
		sd_event_source_set_enabled(s->sweep, SD_EVENT_ONESHOT);
	}
	return 0;
}

static int on_io(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	return run_mhd(ctx);
}

static int on_timer(sd_event_source *src, uint64_t usec, void *ctx)
{
	return run_mhd(ctx);
}

static struct http_conn *conn_of(struct MHD_Connection *mc)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Connections that hold a slot (not closing, not being refused), key's, and unauthenticated
 * ones (TCP). */
static unsigned int share_used(const struct http_server *s, uint64_t key, unsigned int *ret_total,
			       unsigned int *ret_unauth)
{
	unsigned int n = 0, total = 0, unauth = 0;

	for (const struct http_conn *c = s->conns; c; c = c->next) {
		if (c->timed_out || c->refusing)
			continue;
		total++;
		n += c->key == key;
		unauth += !c->authed;
	}
	*ret_total = total;
	*ret_unauth = unauth;
	return n;
}

/* Unauthenticated connections that are in line for eviction, of key. */
static unsigned int unauth_of(const struct http_server *s, uint64_t key)
{
	unsigned int n = 0;

	for (const struct http_conn *c = s->conns; c; c = c->next)
		n += c->key == key && !c->authed && !c->timed_out && !c->refusing &&
		     c->phase == PHASE_HEADERS;
	return n;
}

/*
 * TCP, all slots taken: close one connection that has not shown a token and waits for its
 * request, for a newcomer. The address holding most of them gives up its oldest: a flood
 * from a few addresses makes room from itself, and a client with the token, which has one
 * connection at most in that state for a moment, keeps it.
 */
static bool evict_unauth(struct http_server *s)
{
	struct http_conn *best = NULL;
	unsigned int best_n = 0;

	for (struct http_conn *c = s->conns; c; c = c->next) {
		unsigned int n;

		if (c->authed || c->timed_out || c->refusing || c->phase != PHASE_HEADERS)
			continue;
		n = unauth_of(s, c->key);
		if (n > best_n || (n == best_n && c->since_ns < best->since_ns)) {
			best = c;
			best_n = n;
		}
	}
	if (!best)
		return false;
	best->timed_out = true;
	shutdown(best->fd, SHUT_RDWR);
	s->st.evicted_unauth++;
	return true;
}

static struct token_peer *token_peer(struct http_server *s, uint64_t key, bool add)
{
	struct token_peer *old = &s->bad[0];

	for (int i = 0; i < TOKEN_PEERS; i++) {
		if (s->bad[i].key == key && s->bad[i].first_ns)
			return &s->bad[i];
		if (s->bad[i].first_ns < old->first_ns)
			old = &s->bad[i];
	}
	if (!add)
		return NULL;
	*old = (struct token_peer){.key = key};
	return old;
}

bool http__authenticated(struct MHD_Connection *mc, bool ok, bool sent)
{
	struct http_conn *c = conn_of(mc);
	struct http_server *s = c ? c->srv : NULL;
	struct token_peer *p;
	uint64_t now = clock__mono_ns();

	if (!c || !s->tcp)
		return false;
	if (ok) {
		c->authed = true;
		return false;
	}
	if (!sent)
		return false;
	p = token_peer(s, c->key, true);
	if (p->until_ns > now) {
		s->st.refused_backoff++;
		return true;
	}
	s->st.token_failures++;
	if (now - p->first_ns > 60000000000ull) {
		p->first_ns = now;
		p->fails = 0;
	}
	if (++p->fails >= HTTP_TOKEN_FAILS_MAX)
		p->until_ns = now + HTTP_TOKEN_BACKOFF_S * 1000000000ull;
	return false;
}

/* A refusal's body (a line of JSON, as the service's errors: error and hint) into buf. */
static int refusal_body(const char *why, char *buf, size_t size)
{
	struct json_object *o = json_object_new_object();
	int n;

	json_object_object_add(o, "error", json_object_new_string(why));
	json_object_object_add(o, "hint",
			       json_object_new_string("close idle connections or try again later"));
	n = snprintf(buf, size, "%s\n",
		     json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return n < (int)size ? n : (int)size - 1;
}

/* Refuse on the spot, with an answer a client can show, and never wait for the peer. */
static void refuse(int fd, const char *why)
{
	char msg[512];
	int body, n;

	body = refusal_body(why, msg, 256);
	n = snprintf(msg + body, sizeof(msg) - (size_t)body,
		     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
		     "Connection: close\r\nContent-Length: %d\r\n\r\n",
		     body);
	/* Headers first: build them after the body to know its length, then send both. */
	{
		struct iovec iov[2] = {{msg + body, (size_t)n}, {msg, (size_t)body}};
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};

		if (sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			(void)0; /* a client that cannot take 200 bytes gets nothing */
	}
	close(fd);
}

/* Who is knocking: the key of its share, and whether it is root on the Unix socket. */
static int peer_key(struct http_server *s, int fd, const struct sockaddr_storage *sa,
		    uint64_t *ret_key, bool *ret_privileged)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (s->tcp) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		*ret_key =
			sa->ss_family == AF_INET ? (1ull << 32) | in->sin_addr.s_addr : 1ull << 33;
		*ret_privileged = false;
		return 0;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len))
		return -errno;
	*ret_key = uc.uid;
	*ret_privileged = uc.uid == 0;
	return 0;
}

static unsigned int refusing_now(const struct http_server *s)
{
	unsigned int n = 0;

	for (const struct http_conn *c = s->conns; c; c = c->next)
		n += c->refusing != NULL;
	return n;
}

/* Why a newcomer cannot have a slot (NULL: it can), after making room where allowed. */
static const char *admit(struct http_server *s, uint64_t key, bool privileged, uint64_t now)
{
	unsigned int total, mine, unauth;

	/* Wrong tokens are refused once their request shows them (http__authenticated): a
	 * refusal here, before any request, would refuse the right token from the same
	 * address (the same host, a NAT) too. */
	mine = share_used(s, key, &total, &unauth);
	/* TCP: room for a newcomer is taken from connections idle without a token. */
	if (s->tcp && mine < HTTP_MAX_CONNECTIONS_PER_PEER &&
	    (total >= HTTP_MAX_CONNECTIONS - HTTP_ROOT_RESERVE || unauth >= HTTP_TCP_UNAUTH_MAX) &&
	    evict_unauth(s)) {
		total--;
		unauth--;
	}
	/* Root always finds a slot that no one else can take; nobody else more than a share. */
	if (total >= HTTP_MAX_CONNECTIONS ||
	    (!privileged && total >= HTTP_MAX_CONNECTIONS - HTTP_ROOT_RESERVE) ||
	    (s->tcp && unauth >= HTTP_TCP_UNAUTH_MAX)) {
		s->st.refused_full++;
		return "the daemon is at its connection limit";
	}
	if (!privileged && mine >= HTTP_MAX_CONNECTIONS_PER_PEER) {
		s->st.refused_share++;
		return s->tcp ? "too many connections from your address"
			      : "too many connections from your user";
	}
	return NULL;
}

static void accept_one(struct http_server *s, int fd, const struct sockaddr_storage *sa,
		       socklen_t salen)
{
	struct http_conn *c;
	bool privileged = false;
	uint64_t key = 0, now = clock__mono_ns();
	const char *why;

	if (peer_key(s, fd, sa, &key, &privileged)) {
		s->st.refused_full++;
		close(fd);
		return;
	}
	why = admit(s, key, privileged, now);
	/* Said in the listener's own language: in TLS on a TLS port (MHD does the handshake, a
	 * few at a time, with the short deadline); plain HTTP otherwise. */
	if (why && (!s->tls || refusing_now(s) >= MAX_REFUSING)) {
		refuse(fd, why);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		s->st.refused_full++;
		close(fd);
		return;
	}
	c->srv = s;
	c->fd = fd;
	c->key = key;
	c->privileged = privileged;
	c->refusing = why;
	c->phase = PHASE_HEADERS;
	c->since_ns = now;
	s->adding = c;
	/* MHD takes fd (closing it on failure) and reports the start through on_notify. */
	if (MHD_add_connection(s->mhd, fd, (const struct sockaddr *)sa, salen) != MHD_YES)
		s->st.refused_full++;
	if (s->adding) {
		/* Never started: not counted. */
		s->adding = NULL;
		free(c);
		return;
	}
	s->st.accepted++;
}

static int on_backoff(sd_event_source *src, uint64_t usec, void *ctx)
{
	struct http_server *s = ctx;

	return sd_event_source_set_enabled(s->listen, SD_EVENT_ON);
}

/* Our own listener: always drained, so the API never stops answering at a limit. */
static int on_listen(sd_event_source *src, int lfd, uint32_t revents, void *ctx)
{
	struct http_server *s = ctx;

	for (int i = 0; i < ACCEPTS_PER_WAKEUP; i++) {
		struct sockaddr_storage sa;
		socklen_t len = sizeof(sa);
		int fd = accept4(lfd, (struct sockaddr *)&sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			/* Out of fds: the socket stays readable; look again shortly, not in a spin. */
			s->st.accept_errors++;
			sd_event_source_set_enabled(s->listen, SD_EVENT_OFF);
			sd_event_source_set_time_relative(s->backoff, 100 * 1000);
			sd_event_source_set_enabled(s->backoff, SD_EVENT_ONESHOT);
			break;
		}
		accept_one(s, fd, &sa, len);
	}
	return run_mhd(s);
}

static bool peer_hung_up(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Deadlines MHD does not keep: the whole header phase, and parked requests. */
static int on_sweep(sd_event_source *src, uint64_t usec, void *ctx)
{
	struct http_server *s = ctx;
	uint64_t now = clock__mono_ns();

	for (struct http_conn *c = s->conns; c; c = c->next) {
		if (c->phase == PHASE_WAITING) {
			bool late = now >= c->wait_deadline_ns, gone = !late && peer_hung_up(c->fd);

			if (!late && !gone)
				continue;
			late ? s->st.wait_timeouts++ : s->st.waiters_hung_up++;
			c->expired = true;
			c->phase = PHASE_ANSWERING;
			MHD_resume_connection(c->mhd);
		} else if (c->phase == PHASE_HEADERS && !c->timed_out &&
			   now - c->since_ns >= (s->tcp && !c->authed ? HTTP_TCP_HANDSHAKE_S
								      : HTTP_HEADER_DEADLINE_S) *
							1000000000ull) {
			/* Trickling a byte now and then does not reset this one. */
			s->st.header_timeouts++;
			c->timed_out = true;
			shutdown(c->fd, SHUT_RDWR);
		}
	}
	run_mhd(s);
	if (s->conns) {
		sd_event_source_set_time_relative(src, SWEEP_US);
		sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	}
	return 0;
}

static void on_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *s = cls;
	struct http_conn *c;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		c = s->adding;
		s->adding = NULL;
		if (!c)
			return; /* not ours: cannot happen, MHD listens on nothing */
		c->mhd = mc;
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		*socket_context = c;
		return;
	}
	c = *socket_context;
	if (!c)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
	*socket_context = NULL;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *mc, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls)
{
	struct http_server *s = cls;
	struct http_conn *c = conn_of(mc);
	/* The last call of a request: headers and body are in, the service answers (or parks). */
	bool last = *con_cls && !*upload_size;
	enum MHD_Result ret;

	if (c && c->refusing) {
		static char json[256];
		struct MHD_Response *r;
		int n = refusal_body(c->refusing, json, sizeof(json));

		if (!*con_cls) {
			*con_cls = c; /* headers in; answer once the body is */
			return MHD_YES;
		}
		*upload_size = 0;
		r = MHD_create_response_from_buffer((size_t)n, json, MHD_RESPMEM_MUST_COPY);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, "Content-Type", "application/json");
		MHD_add_response_header(r, "Connection", "close");
		ret = MHD_queue_response(mc, 503, r);
		MHD_destroy_response(r);
		return ret;
	}
	ret = s->handler(s->ctx, mc, url, method, version, upload, upload_size, con_cls);

	if (c && last && c->phase == PHASE_HEADERS)
		c->phase = PHASE_ANSWERING;
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct http_server *s = cls;
	struct http_conn *c = conn_of(mc);

	if (c && c->refusing) {
		*con_cls = NULL; /* ours, not the service's */
		return;
	}
	if (c) {
		/* Keep-alive: the next request has the same deadline to arrive. */
		c->phase = PHASE_HEADERS;
		c->since_ns = clock__mono_ns();
		c->expired = false;
	}
	if (s->completed)
		s->completed(s->ctx, mc, con_cls, code);
}

void http__suspend(struct MHD_Connection *mc, uint64_t deadline_ns)
{
	struct http_conn *c = conn_of(mc);

	if (c) {
		c->phase = PHASE_WAITING;
		c->wait_deadline_ns = deadline_ns;
		c->expired = false;
	}
	MHD_suspend_connection(mc);
}

void http__resume(struct MHD_Connection *mc)
{
	struct http_conn *c = conn_of(mc);

	if (c && c->phase == PHASE_WAITING)
		c->phase = PHASE_ANSWERING;
	MHD_resume_connection(mc);
}

bool http__expired(struct MHD_Connection *mc)
{
	struct http_conn *c = conn_of(mc);

	return c && c->expired;
}

void http_server__stats(const struct http_server *s, struct http_server_stats *ret)
{
	unsigned int n = 0;

	*ret = s->st;
	for (const struct http_conn *c = s->conns; c; c = c->next)
		n++;
	ret->conns = n;
}

struct http_server *http_server__new(sd_event *ev, int listen_fd, MHD_AccessHandlerCallback handler,
				     MHD_RequestCompletedCallback completed, void *ctx)
{
	return http_server__new_tls(ev, listen_fd, handler, completed, ctx, NULL);
}

struct http_server *http_server__new_tls(sd_event *ev, int listen_fd,
					 MHD_AccessHandlerCallback handler,
					 MHD_RequestCompletedCallback completed, void *ctx,
					 const struct http_tls *tls)
{
	struct MHD_OptionItem tls_opts[4] = {{MHD_OPTION_END, 0, NULL}};
	int nt = 0;
	struct http_server *s = calloc(1, sizeof(*s));
	const union MHD_DaemonInfo *info;
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	int err;

	if (!s) {
		close(listen_fd);
		return NULL;
	}
	s->listen_fd = listen_fd;
	s->handler = handler;
	s->completed = completed;
	s->ctx = ctx;
	s->tcp = !getsockname(listen_fd, (struct sockaddr *)&sa, &salen) && sa.ss_family != AF_UNIX;
	s->tls = tls != NULL;
	/*
	 * No thread of MHD's own: it runs when its epoll fd is ready, on our loop. It listens on
	 * nothing: we accept, so that we can count each peer's share and always answer root.
	 */
	if (tls) {
		tls_opts[nt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, tls->cert};
		tls_opts[nt++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, tls->key};
		if (tls->ca)
			tls_opts[nt++] =
				(struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, tls->ca};
		tls_opts[nt] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
	}
	s->mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
			MHD_USE_NO_LISTEN_SOCKET | (tls ? MHD_USE_TLS : 0),
		0, NULL, NULL, on_access, s,
		/* first, so every message of MHD goes through our log */
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned int)HTTP_MAX_CONNECTIONS + MAX_REFUSING + 1,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY_LIMIT,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)CONN_IDLE_TIMEOUT,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
		on_notify, s, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
	if (!s->mhd) {
		err = -EIO;
		goto fail;
	}
	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		err = -EIO;
		goto fail;
	}
	err = sd_event_add_io(ev, &s->io, info->epoll_fd, EPOLLIN, on_io, s);
	if (!err)
		err = sd_event_add_io(ev, &s->listen, listen_fd, EPOLLIN, on_listen, s);
	if (!err)
		err = sd_event_add_time_relative(ev, &s->timer, CLOCK_MONOTONIC, 1000000, 0,
						 on_timer, s);
	if (!err)
		err = sd_event_add_time_relative(ev, &s->sweep, CLOCK_MONOTONIC, SWEEP_US, 0,
						 on_sweep, s);
	if (!err)
		err = sd_event_add_time_relative(ev, &s->backoff, CLOCK_MONOTONIC, 100000, 0,
						 on_backoff, s);
	if (err)
		goto fail;
	sd_event_source_set_enabled(s->timer, SD_EVENT_OFF);
	sd_event_source_set_enabled(s->sweep, SD_EVENT_OFF);
	sd_event_source_set_enabled(s->backoff, SD_EVENT_OFF);
	return s;
fail:
	http_server__free(s);
	errno = -err;
	return NULL;
}

void http_server__run(struct http_server *s)
{
	if (s)
		run_mhd(s);
}

void http_server__free(struct http_server *s)
{
	if (!s)
		return;
	sd_event_source_disable_unref(s->io);
	sd_event_source_disable_unref(s->listen);
	sd_event_source_disable_unref(s->timer);
	sd_event_source_disable_unref(s->sweep);
	sd_event_source_disable_unref(s->backoff);
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	close(s->listen_fd);
	free(s);
}

int http__peer(struct MHD_Connection *conn, gid_t group, struct http_peer *ret)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct ucred uc;
	socklen_t len = sizeof(uc);
	gid_t groups[MAX_PEER_GROUPS];
	socklen_t glen = sizeof(groups);

	if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &uc, &len))
		return -errno ? -errno : -ENOTCONN;
	ret->pid = uc.pid;
	ret->uid = uc.uid;
	ret->gid = uc.gid;
	ret->in_group = group != (gid_t)-1 && uc.gid == group;
	if (!ret->in_group && group != (gid_t)-1 &&
	    !getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen)) {
		for (size_t i = 0; i < glen / sizeof(gid_t); i++)
			if (groups[i] == group)
				ret->in_group = true;
	}
	return 0;
}
