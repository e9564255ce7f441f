// SPDX-License-Identifier: Apache-2.0
/*
 * Talking to xsprofd: one HTTP request over its Unix socket (a long one watched for the daemon
 * going away), and the results written where the user asked.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "daemon/base/api_socket.h"
#include "daemon/base/atomic_file.h"
#include "daemon/base/clock.h"
#include "daemon/ctl/client.h"
#include "daemon/ctl/ctl.h"
#include "daemon/ctl/reply_buf.h"

static struct ctl_opts opts = {.timeout_s = CTL_DEFAULT_TIMEOUT_S};

struct ctl_opts *ctl_opts(void)
{
	return &opts;
}

/* ---- HTTP over the Unix socket ---- */

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	return reply_buf__append(ctx, p, size * n, MAX_REPLY);
}

/* The one response header read: how many seconds a window profile covers. */
static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	static const char name[] = XSPROF_SPAN_HEADER ":";
	struct reply_buf *b = ctx;
	size_t len = size * n;
	char v[32];

	if (len > sizeof(name) - 1 && len - (sizeof(name) - 1) < sizeof(v) &&
	    !strncasecmp(p, name, sizeof(name) - 1)) {
		memcpy(v, p + sizeof(name) - 1, len - (sizeof(name) - 1));
		v[len - (sizeof(name) - 1)] = '\0';
		b->span_s = strtod(v, NULL);
	}
	return len;
}

/* The daemon's state letter from /proc (R, S, T, ...); 0 when gone, '?' when unreadable. */
static char daemon_state(pid_t pid)
{
	char path[64], buf[512], *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] ? rp[2] : '?';
}

/*
 * A long wait (a recording) ends when the daemon cannot answer any more: gone (its socket
 * closes then too, unless a child holds it), or stopped (SIGSTOP, a debugger) for longer than
 * --timeout. Checked once a second.
 */
static bool daemon_lost(struct progress *p, double now)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char st;

	if (now - p->last_check < 1)
		return false;
	p->last_check = now;
	/* Connected by now (the peer's credentials are those it had at connect). */
	if (!p->daemon && p->fd >= 0 && !getsockopt(p->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		p->daemon = cred.pid;
	if (p->daemon <= 0)
		return false;
	st = daemon_state(p->daemon);
	if (!st || st == 'Z' || st == 'X') {
		snprintf(p->gave_up, sizeof(p->gave_up), "xsprofd (pid %d) is gone",
			 (int)p->daemon);
		return true;
	}
	if (st != 'T' && st != 't') {
		p->stopped_since = 0;
		return false;
	}
	if (!p->stopped_since)
		p->stopped_since = now;
	if (now - p->stopped_since < opts.timeout_s)
		return false;
	snprintf(p->gave_up, sizeof(p->gave_up),
		 "xsprofd (pid %d) has been stopped for %.0f s (--timeout)", (int)p->daemon,
		 now - p->stopped_since);
	return true;
}

static int on_socket(void *ctx, curl_socket_t fd, curlsocktype purpose)
{
	struct progress *p = ctx;

	p->fd = fd;
	p->daemon = 0;
	return CURL_SOCKOPT_OK;
}

static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct progress *p = ctx;
	double now = clock__mono_s(), el = now - p->start;

	if (daemon_lost(p, now))
		return 1; /* CURLE_ABORTED_BY_CALLBACK */
	if (!p->draw || now - p->last < 0.25)
		return 0;
	p->last = now;
	if (p->total_s > 0)
		fprintf(stderr, "\r%s: %.0f/%.0f s ", p->what, el < p->total_s ? el : p->total_s,
			p->total_s);
	else
		fprintf(stderr, "\r%s: %.0f s ", p->what, el);
	return 0;
}

/* Explain why the socket cannot be reached; returns the exit status. */
static int unreachable(void)
{
	struct stat st;

	if (stat(opts.sock_path, &st)) {
		fprintf(stderr,
			"xsprofctl: xsprofd is not running (no socket at %s): start it with "
			"'systemctl start xsprofd'\n",
			opts.sock_path);
		return EXIT_UNREACHABLE;
	}
	if (access(opts.sock_path, R_OK | W_OK) && errno == EACCES) {
		fprintf(stderr,
			"xsprofctl: permission denied on %s: join group xsprof ('sudo adduser "
			"$USER xsprof', then log in again) or run as root\n",
			opts.sock_path);
		return EXIT_DENIED;
	}
	fprintf(stderr,
		"xsprofctl: cannot connect to %s: is xsprofd running? ('systemctl status "
		"xsprofd')\n",
		opts.sock_path);
	return EXIT_UNREACHABLE;
}

int ctl_request(const char *method, const char *path, const char *body, struct reply_buf *reply,
		struct progress *prog)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char url[512];
	long code = 0;
	CURLcode rc;
	int status;

	if (!h)
		return EXIT_DAEMON_ERROR;
	memset(reply, 0, sizeof(*reply));
	snprintf(url, sizeof(url), "http://localhost%s", path);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, opts.sock_path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, reply);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, reply);
	/* Every wait is bounded: connecting, and the whole exchange (a recording's on top). */
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(opts.timeout_s * 1000));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
			 (long)((opts.timeout_s + (prog ? prog->wait_s : 0)) * 1000));
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	}
	if (prog) {
		prog->draw = prog->what && !opts.quiet && isatty(STDERR_FILENO);
		prog->fd = -1;
		prog->gave_up[0] = '\0';
		curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, on_socket);
		curl_easy_setopt(h, CURLOPT_SOCKOPTDATA, prog);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, prog);
	}
	rc = curl_easy_perform(h);
	if (prog && prog->draw)
		fputs("\r\033[K", stderr);
	if (prog)
		prog->fd = -1;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
		return unreachable();
	if (reply->overflow) {
		fprintf(stderr, "xsprofctl: the reply is over %u MiB; ask for a shorter window\n",
			MAX_REPLY >> 20);
		return EXIT_DAEMON_ERROR;
	}
	if (rc == CURLE_ABORTED_BY_CALLBACK && prog && prog->gave_up[0]) {
		fprintf(stderr, "xsprofctl: %s: no answer will come\n", prog->gave_up);
		return EXIT_UNREACHABLE;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		fprintf(stderr,
			"xsprofctl: xsprofd did not answer within %.0f s (raise --timeout, or check "
			"'systemctl status xsprofd')\n",
			opts.timeout_s + (prog ? prog->wait_s : 0));
		return EXIT_UNREACHABLE;
	}
	if (rc != CURLE_OK) {
		fprintf(stderr, "xsprofctl: talking to xsprofd failed: %s\n",
			curl_easy_strerror(rc));
		return EXIT_DAEMON_ERROR;
	}
	if (code >= 200 && code < 300)
		return EXIT_OK;
	status = code == 403 || code == 401 ? EXIT_DENIED : EXIT_DAEMON_ERROR;
	{
		struct json_object *j = json_tokener_parse(reply->data ? reply->data : ""), *e,
				   *hint;

		if (j && json_object_object_get_ex(j, "error", &e)) {
			fprintf(stderr, "xsprofctl: %s", json_object_get_string(e));
			if (json_object_object_get_ex(j, "hint", &hint))
				fprintf(stderr, " (%s)", json_object_get_string(hint));
			fputc('\n', stderr);
		} else {
			fprintf(stderr, "xsprofctl: xsprofd answered HTTP %ld\n", code);
		}
		json_object_put(j);
	}
	if (opts.json_out && reply->data)
		fputs(reply->data, stdout);
	free(reply->data);
	reply->data = NULL;
	return status;
}

/* ---- writing results ---- */

struct blob {
	const char *data;
	size_t len;
};

static int write_blob(FILE *f, void *ctx)
{
	const struct blob *b = ctx;

	return fwrite(b->data, 1, b->len, f) == b->len ? 0 : -EIO;
}

/* The one atomic writer (temp file, fsync, rename; mode from the umask), or stdout for "-". */
static int write_atomic(const char *path, const char *data, size_t len)
{
	struct blob b = {data, len};

	if (!strcmp(path, "-"))
		return fwrite(data, 1, len, stdout) == len ? 0 : -EIO;
	return atomic_file__write(path, write_blob, &b);
}

int ctl_save(const char *path, struct reply_buf *b, const char *what)
{
	int err = write_atomic(path, b->data ? b->data : "", b->len);

	if (err) {
		fprintf(stderr, "xsprofctl: writing %s failed: %s\n", path, strerror(-err));
		return EXIT_DAEMON_ERROR;
	}
	if (opts.json_out) {
		/* The path as a JSON string: a quote or backslash in it is escaped. */
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "output", json_object_new_string(path));
		json_object_object_add(o, "bytes", json_object_new_uint64(b->len));
		printf("%s\n",
		       json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED |
								 JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else if (strcmp(path, "-"))
		fprintf(stderr, "xsprofctl: wrote %s (%s, %zu bytes)\n", path, what, b->len);
	return EXIT_OK;
}

/* Before ui listens: xsprofd answers, and answers this user. */
int ctl_check_daemon(void)
{
	struct reply_buf b;
	int st = ctl_request("GET", "/v1/status", NULL, &b, NULL);

	if (!st)
		free(b.data);
	return st;
}
