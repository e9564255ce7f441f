// SPDX-License-Identifier: Apache-2.0
#include "daemon/base/clock.h"
#include "daemon/gpu/cupti_server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "daemon/gpu/cupti_wire.h"
#include "daemon/base/path_lock.h"

#define DEFAULT_MAX_CONNS	  256u
#define DEFAULT_MAX_CONNS_PER_UID 64u
#define DEFAULT_CONN_BUFFER	  (64u << 10)
#define EVENTS_PER_CALL		  64
#define ACCEPTS_PER_CALL	  32
#define READS_PER_EVENT		  4 /* then yield to other clients; level-triggered brings us back */
#define DEFAULT_IDLE_MS		  60000u
#define DEFAULT_HELLO_MS	  5000u
#define SWEEP_MS		  1000 /* how often idle connections are looked for */

/* A user's connections, for the cap on reading (cupti_server__set_uid_cap). */
struct share {
	uint32_t uid;
	unsigned conns;	       /* open connections of uid; 0: the slot is free */
	uint64_t win_records;  /* charged to this window: read in it, plus what the last overran */
	uint64_t rate;	       /* records a second over the last whole window */
	bool paused;	       /* its connections are out of epoll's readiness until the next */
	uint64_t paused_since; /* CLOCK_MONOTONIC */
};

struct conn {
	int fd;
	unsigned slot;	/* index in cupti_server.conns */
	unsigned share; /* index in cupti_server.shares */
	uint32_t pid;
	uint32_t uid;
	bool hello_done;
	uint64_t accepted_ns, last_ns; /* CLOCK_MONOTONIC: when accepted, when it last sent */
	int64_t clock_shift;	       /* added to a sender's times to make them CLOCK_MONOTONIC */
	/* The sender's latest cumulative drop counters, to add deltas to the totals. */
	uint64_t drop_full, drop_cupti, drop_other;
	size_t fill;
	uint8_t buf[];
};

struct cupti_server {
	int epfd;
	int lfd;
	int tfd; /* the idle sweep's timer, in epfd */
	uint64_t idle_ns, hello_ns;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct sock_file file;
	int lock_fd;
	bool (*accept_pid)(void *ctx, pid_t pid);
	void *accept_ctx;
	void (*on_range)(void *ctx, const struct gpu_activity *a);
	void *range_ctx;
	unsigned max_conns;
	unsigned max_per_uid;
	size_t conn_buf;
	struct conn **conns;		 /* max_conns slots */
	struct share *shares;		 /* max_conns slots: one per user with a connection */
	uint64_t cap_per_s, cap_per_win; /* 0: reads not capped */
	uint64_t win_start_ns, last_sweep_ns;
	struct gpu_store *store;
	struct cupti_server_stats st;
};

/* mkdir -p, with mode only on the directories we create (an existing one is the admin's). */
static int make_dirs(const char *path, mode_t mode)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1;; p++) {
		bool last = *p == '\0';

		if (*p == '/' || last) {
			*p = '\0';
			if (mkdir(dir, mode) == 0) {
				/* The umask must not narrow who can connect; by its fd, not a
				 * path another could swap for a link meanwhile. */
				int dfd =
					open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

				if (dfd >= 0) {
					fchmod(dfd, mode);
					close(dfd);
				}
			} else if (errno != EEXIST) {
				return -errno;
			}
			if (last)
				return 0;
			*p = '/';
		}
	}
}

struct cupti_server *cupti_server__new(const struct cupti_server_opts *opts)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	const char *path =
		opts && opts->socket_path ? opts->socket_path : XSPROF_WIRE_DEFAULT_SOCKET;
	mode_t mode = opts && opts->socket_mode ? opts->socket_mode : 0666;
	struct epoll_event ev = {.events = EPOLLIN};
	struct cupti_server *s;
	int err;

	if (!path[0] || strlen(path) >= sizeof(addr.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->epfd = s->lfd = s->lock_fd = s->tfd = -1;
	s->idle_ns = (uint64_t)(opts && opts->idle_ms ? opts->idle_ms : DEFAULT_IDLE_MS) * 1000000;
	s->hello_ns =
		(uint64_t)(opts && opts->hello_ms ? opts->hello_ms : DEFAULT_HELLO_MS) * 1000000;
	s->accept_pid = opts ? opts->accept_pid : NULL;
	s->accept_ctx = opts ? opts->accept_ctx : NULL;
	s->on_range = opts ? opts->on_range : NULL;
	s->range_ctx = opts ? opts->range_ctx : NULL;
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->max_conns = opts && opts->max_conns ? opts->max_conns : DEFAULT_MAX_CONNS;
	s->max_per_uid = opts && opts->max_conns_per_uid ? opts->max_conns_per_uid
							 : DEFAULT_MAX_CONNS_PER_UID;
	s->conn_buf = opts && opts->max_conn_buffer ? opts->max_conn_buffer : DEFAULT_CONN_BUFFER;
	if (s->conn_buf < 2 * XSPROF_WIRE_RECORD_MAX)
		s->conn_buf = 2 * XSPROF_WIRE_RECORD_MAX;
	s->conns = calloc(s->max_conns, sizeof(*s->conns));
	s->shares = calloc(s->max_conns, sizeof(*s->shares));
	s->store = gpu_store__new(opts ? &opts->store : NULL);
	s->win_start_ns = s->last_sweep_ns = clock__mono_ns();
	if (!s->conns || !s->shares || !s->store) {
		err = -ENOMEM;
		goto fail;
	}
	err = make_dirs(path, 0755);
	if (err < 0)
		goto fail;
	/* One owner per path: nothing is unlinked or bound before the lock is ours. */
	err = path_lock__take(path, &s->lock_fd, NULL);
	if (err < 0)
		goto fail;
	err = sock_file__remove_stale(path);
	if (err < 0)
		goto fail;
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0) {
		err = -errno;
		goto fail;
	}
	err = sock_file__bind(s->lfd, path, mode, (gid_t)-1, &s->file);
	if (err < 0)
		goto fail;
	if (listen(s->lfd, 128) < 0) {
		err = -errno;
		goto fail;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.ptr = NULL; /* NULL marks the listening socket; clients carry their conn */
	if (s->epfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev) < 0) {
		err = -errno;
		goto fail;
	}
	/* The sweep's timer marks itself with the server (conns are never at its address). */
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	ev.data.ptr = s;
	if (s->tfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->tfd, &ev) < 0 ||
	    timerfd_settime(s->tfd, 0,
			    &(struct itimerspec){
				    .it_interval = {SWEEP_MS / 1000, SWEEP_MS % 1000 * 1000000L},
				    .it_value = {SWEEP_MS / 1000, SWEEP_MS % 1000 * 1000000L}},
			    NULL) < 0) {
		err = -errno;
		goto fail;
	}
	return s;
fail:
	sock_file__remove_if_ours(&s->file, path);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->tfd >= 0)
		close(s->tfd);
	gpu_store__free(s->store);
	free(s->conns);
	free(s->shares);
	free(s);
	errno = -err;
	return NULL;
}

static void close_conn(struct cupti_server *s, unsigned slot)
{
	struct conn *c = s->conns[slot];

	struct share *sh = &s->shares[c->share];

	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (--sh->conns == 0 && sh->paused)
		s->st.intake_paused_ns += clock__mono_ns() - sh->paused_since;
	free(c);
	s->conns[slot] = NULL;
	s->st.conns--;
}

void cupti_server__free(struct cupti_server *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->max_conns; i++) {
		if (s->conns[i])
			close_conn(s, i);
	}
	close(s->lfd);
	close(s->epfd);
	close(s->tfd);
	/* Only our own socket file goes; then the lock. */
	sock_file__remove_if_ours(&s->file, s->path);
	close(s->lock_fd);
	gpu_store__free(s->store);
	free(s->conns);
	free(s->shares);
	free(s);
}

int cupti_server__fd(const struct cupti_server *s)
{
	return s->epfd;
}

struct gpu_store *cupti_server__store(struct cupti_server *s)
{
	return s->store;
}

void cupti_server__stats(const struct cupti_server *s, struct cupti_server_stats *ret)
{
	uint64_t now = clock__mono_ns();

	*ret = s->st;
	for (unsigned i = 0; i < s->max_conns; i++)
		if (s->shares[i].conns && s->shares[i].paused)
			ret->intake_paused_ns += now - s->shares[i].paused_since;
	gpu_store__stats(s->store, &ret->store);
}

/* The timer: every CUPTI_INTAKE_WINDOW_MS while reads are capped, else every SWEEP_MS. */
static int arm_timer(struct cupti_server *s)
{
	long ms = s->cap_per_win ? CUPTI_INTAKE_WINDOW_MS : SWEEP_MS;
	struct timespec t = {ms / 1000, ms % 1000 * 1000000L};

	return timerfd_settime(s->tfd, 0, &(struct itimerspec){.it_interval = t, .it_value = t},
			       NULL);
}

static void set_readable(struct cupti_server *s, struct conn *c, bool on)
{
	struct epoll_event ev = {.events = on ? EPOLLIN | EPOLLRDHUP : 0, .data.ptr = c};

	epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* A held user's connections read again. */
static void intake_resume(struct cupti_server *s, unsigned share, uint64_t now)
{
	struct share *sh = &s->shares[share];

	sh->paused = false;
	s->st.intake_paused_ns += now - sh->paused_since;
	for (unsigned j = 0; j < s->max_conns; j++) {
		struct conn *c = s->conns[j];

		/* Held, not idle: its silence was ours. */
		if (c && c->share == share) {
			c->last_ns = now;
			set_readable(s, c, true);
		}
	}
}

/* A new window: each user's rate over the last one; the held ones read again. A read is
 * parsed whole, so the window that reached the cap may have run past it by a read's records:
 * the next window starts owing those, which keeps a flooder's rate at the cap over time. */
static void intake_roll(struct cupti_server *s, uint64_t now)
{
	uint64_t span = now - s->win_start_ns;

	if (span < CUPTI_INTAKE_WINDOW_MS * 1000000ull)
		return;
	for (unsigned i = 0; i < s->max_conns; i++) {
		struct share *sh = &s->shares[i];

		if (!sh->conns)
			continue;
		sh->rate = (uint64_t)((double)sh->win_records * 1e9 / (double)span);
		sh->win_records = s->cap_per_win && sh->win_records > s->cap_per_win
					  ? sh->win_records - s->cap_per_win
					  : 0;
		if (sh->paused && sh->win_records < s->cap_per_win)
			intake_resume(s, i, now);
	}
	s->win_start_ns = now;
}

/* uid's connections reached the window's cap: none is read again until the next window. */
static void intake_pause(struct cupti_server *s, unsigned share)
{
	struct share *sh = &s->shares[share];

	if (sh->paused)
		return;
	sh->paused = true;
	sh->paused_since = clock__mono_ns();
	s->st.intake_pauses++;
	s->st.intake_last_paused_uid = sh->uid;
	for (unsigned j = 0; j < s->max_conns; j++) {
		struct conn *c = s->conns[j];

		if (c && c->share == share)
			set_readable(s, c, false);
	}
}

void cupti_server__set_uid_cap(struct cupti_server *s, uint64_t per_s)
{
	uint64_t now = clock__mono_ns();

	if (!s || per_s == s->cap_per_s)
		return;
	s->cap_per_s = per_s;
	s->cap_per_win = per_s ? (per_s * CUPTI_INTAKE_WINDOW_MS + 999) / 1000 : 0;
	/* Lifted or raised: the users held under the old cap but not the new one read again. */
	for (unsigned i = 0; i < s->max_conns; i++)
		if (s->shares[i].conns && s->shares[i].paused &&
		    (!s->cap_per_win || s->shares[i].win_records < s->cap_per_win))
			intake_resume(s, i, now);
	if (arm_timer(s) < 0)
		s->st.accept_errors++;
}

uint64_t cupti_server__top_uid_rate(const struct cupti_server *s, uint32_t *ret_uid)
{
	uint64_t top = 0;

	for (unsigned i = 0; s && i < s->max_conns; i++) {
		const struct share *sh = &s->shares[i];

		if (sh->conns && sh->rate > top) {
			top = sh->rate;
			if (ret_uid)
				*ret_uid = sh->uid;
		}
	}
	return top;
}

/* Close the connections that sent nothing for idle_ns, or no hello within hello_ns. */
static void sweep_idle(struct cupti_server *s)
{
	uint64_t now = clock__mono_ns(), ticks;

	if (read(s->tfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		s->st.accept_errors++;
	intake_roll(s, now);
	if (now - s->last_sweep_ns < SWEEP_MS * 1000000ull)
		return;
	s->last_sweep_ns = now;
	for (unsigned i = 0; i < s->max_conns; i++) {
		const struct conn *c = s->conns[i];

		if (c && !s->shares[c->share].paused &&
		    (now - c->last_ns > s->idle_ns ||
		     (!c->hello_done && now - c->accepted_ns > s->hello_ns))) {
			s->st.idle_closed++;
			close_conn(s, i);
		}
	}
}

/* uid's share slot: its own, or a free one (there are as many as connections, and this
 * connection's slot is free, so one is). */
static unsigned share_of(struct cupti_server *s, uint32_t uid)
{
	unsigned free_slot = s->max_conns;

	for (unsigned i = 0; i < s->max_conns; i++) {
		if (s->shares[i].conns && s->shares[i].uid == uid)
			return i;
		if (!s->shares[i].conns && free_slot == s->max_conns)
			free_slot = i;
	}
	s->shares[free_slot] = (struct share){.uid = uid};
	return free_slot;
}

static void accept_some(struct cupti_server *s)
{
	for (int i = 0; i < ACCEPTS_PER_CALL; i++) {
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};
		struct ucred cred;
		socklen_t len = sizeof(cred);
		unsigned slot = s->max_conns, same_uid = 0;
		struct conn *c;
		int fd;

		fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				s->st.accept_errors++; /* EMFILE and friends: retried next call */
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0) {
			s->st.accept_errors++;
			close(fd);
			continue;
		}
		for (unsigned j = 0; j < s->max_conns; j++) {
			if (!s->conns[j]) {
				if (slot == s->max_conns)
					slot = j;
			} else if (s->conns[j]->uid == cred.uid) {
				same_uid++;
			}
		}
		/* Only the session's processes may add to its GPU records. */
		if (s->accept_pid && !s->accept_pid(s->accept_ctx, cred.pid)) {
			s->st.foreign++;
			close(fd);
			continue;
		}
		if (slot == s->max_conns || same_uid >= s->max_per_uid) {
			s->st.rejected++;
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c) + s->conn_buf);
		if (!c) {
			s->st.accept_errors++;
			close(fd);
			continue;
		}
		c->fd = fd;
		c->slot = slot;
		c->share = share_of(s, (uint32_t)cred.uid);
		c->accepted_ns = c->last_ns = clock__mono_ns();
		c->pid = (uint32_t)cred.pid;
		c->uid = (uint32_t)cred.uid;
		ev.data.ptr = c;
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			s->st.accept_errors++;
			free(c);
			close(fd);
			continue;
		}
		s->conns[slot] = c;
		s->shares[c->share].conns++;
		s->st.conns++;
		s->st.accepted++;
		/* A held user's new connection waits with the others. */
		if (s->shares[c->share].paused)
			set_readable(s, c, false);
	}
}

static int64_t realtime_to_monotonic_shift(void)
{
	return -clock__realtime_offset_ns();
}

static uint64_t shift_time(uint64_t t, int64_t shift)
{
	if (!t || !shift)
		return t; /* 0 = not measured: keep it recognisable */
	if (shift < 0 && t < (uint64_t)-shift)
		return 1;
	return t + (uint64_t)shift;
}

/* Senders send cumulative counters; a hostile one sends anything: the total saturates. */
static void add_delta(uint64_t *total, uint64_t *last, uint64_t now)
{
	if (now > *last) {
		uint64_t d = now - *last;

		*total = *total + d < *total ? UINT64_MAX : *total + d;
	}
	*last = now;
}

/* One validated item. Returns 1 when a record was stored. */
static int take_item(struct cupti_server *s, struct conn *c, struct cupti_wire_item *it)
{
	s->st.records[it->type]++;
	if (it->type == XSPROF_WIRE_STATS) {
		add_delta(&s->st.sender_dropped_full, &c->drop_full, it->dropped_full);
		add_delta(&s->st.sender_dropped_cupti, &c->drop_cupti, it->dropped_cupti);
		add_delta(&s->st.sender_dropped_other, &c->drop_other, it->dropped_other);
		return 0;
	}
	it->act.pid = c->pid;
	it->act.uid = c->uid;
	it->act.start_ns = shift_time(it->act.start_ns, c->clock_shift);
	it->act.end_ns = shift_time(it->act.end_ns, c->clock_shift);
	if (gpu_store__add(s->store, &it->act) < 0) {
		s->st.store_rejected++;
		return 0;
	}
	if (s->on_range && it->act.kind == GPU_ACT_NVTX && !(it->act.flags & XSPROF_WIRE_F_OPEN) &&
	    it->act.end_ns > it->act.start_ns)
		s->on_range(s->range_ctx, &it->act);
	return 1;
}

/* Parse what is buffered. Returns records stored, or -EBADMSG to close the connection. */
static int parse_buffered(struct cupti_server *s, struct conn *c)
{
	const char *why = "invalid data";
	size_t off = 0;
	int stored = 0;

	while (off < c->fill) {
		long n;

		if (!c->hello_done) {
			struct cupti_wire_hello h;

			n = cupti_wire__parse_hello(c->buf + off, c->fill - off, &h, &why);
			if (n > 0) {
				c->hello_done = true;
				s->st.policy[h.policy]++;
				if (h.clock_id == CLOCK_REALTIME)
					c->clock_shift = realtime_to_monotonic_shift();
			}
		} else {
			struct cupti_wire_item it;

			n = cupti_wire__parse_record(c->buf + off, c->fill - off, &it, &why);
			if (n > 0)
				stored += take_item(s, c, &it);
		}
		if (n < 0) {
			snprintf(s->st.last_malformed, sizeof(s->st.last_malformed), "pid %u: %s",
				 c->pid, why);
			return -EBADMSG;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	memmove(c->buf, c->buf + off, c->fill - off);
	c->fill -= off;
	return stored;
}

/*
 * The sender closed its end: it exited (or exec'd), so the NVTX ranges it left open end now,
 * unless another of its connections is still open.
 */
static void sender_gone(struct cupti_server *s, unsigned slot)
{
	uint32_t pid = s->conns[slot]->pid;

	for (unsigned i = 0; i < s->max_conns; i++) {
		if (i != slot && s->conns[i] && s->conns[i]->pid == pid)
			return;
	}
	gpu_store__end_open(s->store, pid, clock__mono_ns());
}

static int conn_readable(struct cupti_server *s, unsigned slot)
{
	struct conn *c = s->conns[slot];
	int stored = 0;

	for (int i = 0; i < READS_PER_EVENT; i++) {
		/* Whatever is left after parsing is under one record, so there is always room. */
		ssize_t n = read(c->fd, c->buf + c->fill, s->conn_buf - c->fill);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return stored;
		if (n <= 0) {
			if (c->fill > 0)
				s->st.truncated++;
			sender_gone(s, slot);
			close_conn(s, slot);
			return stored;
		}
		s->st.bytes += (uint64_t)n;
		c->fill += (size_t)n;
		c->last_ns = clock__mono_ns();
		r = parse_buffered(s, c);
		if (r < 0) {
			s->st.malformed++;
			close_conn(s, slot);
			return stored;
		}
		stored += r;
		s->shares[c->share].win_records += (uint64_t)r;
		if (s->cap_per_win && s->shares[c->share].win_records >= s->cap_per_win) {
			intake_pause(s, c->share);
			return stored;
		}
	}
	return stored;
}

/* One batch of ready fds: the records stored, or -errno; *ret_ready: how many fds were ready. */
static int process_batch(struct cupti_server *s, int *ret_ready)
{
	struct epoll_event ev[EVENTS_PER_CALL];
	int n, stored = 0;
	bool sweep = false;

	*ret_ready = 0;
	intake_roll(s, clock__mono_ns());
	n = epoll_wait(s->epfd, ev, EVENTS_PER_CALL, 0);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	*ret_ready = n;
	for (int i = 0; i < n; i++) {
		const struct conn *c = ev[i].data.ptr;

		/* Each fd appears once per batch; the sweep comes last, so every conn of this
		 * batch is still open when its turn comes. */
		if (ev[i].data.ptr == s)
			sweep = true;
		else if (c)
			stored += conn_readable(s, c->slot);
		else
			accept_some(s);
	}
	if (sweep)
		sweep_idle(s);
	return stored;
}

int cupti_server__process(struct cupti_server *s)
{
	int ready;

	return process_batch(s, &ready);
}

int cupti_server__drain(struct cupti_server *s, unsigned int max_batches)
{
	int ready = 1, stored = 0;

	/* Until nothing is ready: a batch that only accepted a connection stores nothing, yet
	 * that connection's records are already queued. */
	for (unsigned int i = 0; s && ready && i < max_batches; i++) {
		int n = process_batch(s, &ready);

		if (n < 0)
			return n;
		stored += n;
	}
	return stored;
}
