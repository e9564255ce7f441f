// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "daemon/http.h"
#include "daemon/log.h"

/* Bounds on what a client can make us hold. */
#define MAX_CONNECTIONS	  64
#define CONN_MEMORY_LIMIT (128 * 1024)
#define CONN_IDLE_TIMEOUT 30 /* seconds; suspended (waiting) requests are exempt */
#define MAX_PEER_GROUPS	  256

struct http_server {
	struct MHD_Daemon *mhd;
	sd_event_source *io, *timer;
};

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

int http__unix_listen(const char *path, gid_t gid, int *ret_fd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	err = mkdir_parents(path);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A socket file left by a previous run that died: nobody listens on it any more. */
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(path, gid != (gid_t)-1 ? 0660 : 0600) ||
	    (gid != (gid_t)-1 && chown(path, 0, gid)) || listen(fd, 64)) {
		err = -errno;
		close(fd);
		unlink(path);
		return err;
	}
	*ret_fd = fd;
	return 0;
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
	log_warn("http: %s", msg);
}

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

struct http_server *http_server__new(sd_event *ev, int listen_fd, MHD_AccessHandlerCallback handler,
				     MHD_RequestCompletedCallback completed, void *ctx)
{
	struct http_server *s = calloc(1, sizeof(*s));
	const union MHD_DaemonInfo *info;
	int err;

	if (!s) {
		close(listen_fd);
		return NULL;
	}
	/* No thread of MHD's own: it runs when its epoll fd is ready, on our loop. */
	s->mhd = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0,
				  NULL, NULL, handler, ctx,
				  /* first, so every message of MHD goes through our log */
				  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_CONNECTION_LIMIT,
				  (unsigned int)MAX_CONNECTIONS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				  (size_t)CONN_MEMORY_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned int)CONN_IDLE_TIMEOUT, MHD_OPTION_NOTIFY_COMPLETED,
				  completed, ctx, MHD_OPTION_END);
	if (!s->mhd) {
		close(listen_fd);
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
		err = sd_event_add_time_relative(ev, &s->timer, CLOCK_MONOTONIC, 1000000, 0,
						 on_timer, s);
	if (err)
		goto fail;
	sd_event_source_set_enabled(s->timer, SD_EVENT_OFF);
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
	sd_event_source_disable_unref(s->timer);
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
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
