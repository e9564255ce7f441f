// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl ui: a proxy on 127.0.0.1 that lets a browser on this machine reach xsprofd's
 * read-only web view. xsprofd answers on a Unix socket, by the caller's uid, which a browser
 * cannot speak to; a loopback port, though, is open to every local user and (by DNS rebinding)
 * to web pages. So: GET and HEAD only, a Host of 127.0.0.1 or localhost, and for everything but
 * the static page under /ui/ a random key that only the printed address carries (in its
 * fragment: never sent to a server, never in a Referer). A thread per connection, since a
 * scrape (/debug/pprof/profile?seconds=N) holds its connection for N seconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>
#include <microhttpd.h>

#include "daemon/base/api_socket.h"
#include "daemon/base/clock.h"
#include "daemon/base/secret.h"
#include "daemon/ctl/reply_buf.h"
#include "daemon/ctl/client.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/ctl.h"
#include "daemon/ctl/ui_history.h"
#include "daemon/service/ui_assets.h"

#define UI_MAX_CONNECTIONS 64 /* a thread each */
/* Connections that have not shown the key yet: at most this many (a newcomer past it closes
 * the oldest), each closed this long after it opened. Any local user can connect to the
 * loopback port: half-sent requests held open must not take the slots of the page. */
#define UI_UNKEYED_MAX 16
#define UI_UNKEYED_S   3
#define UI_IDLE_S      30   /* an idle connection is closed (not one waiting on xsprofd) */
#define UI_MAX_TARGET  8192 /* the path and query sent on */
#define UI_MAX_HEADER  4096 /* a header value passed back */
#define UI_MAX_SECONDS (7 * 24 * 3600.0) /* a scrape's own wait; xsprofd's limit is lower */
#define UI_KEY_BYTES   16

static const char ui_usage[] =
	"Usage: xsprofctl [--socket PATH] [--timeout S] ui [--port N] [--history STORE]\n"
	"Serve xsprofd's read-only web view to a browser on this machine: a proxy on 127.0.0.1\n"
	"that forwards GET requests to xsprofd's socket (with your access: root sees every\n"
	"process, a member of group xsprof their own). It prints the address to open; the key in\n"
	"it keeps other local users and other web pages out. Ctrl-C stops.\n"
	"      --port N   the loopback port, 0..65535 (default 0: a free one)\n"
	"      --history STORE\n"
	"                 also show the history of benchmark runs that xsprof-history keeps in\n"
	"                 STORE (its --db: a file, sqlite:PATH or postgresql://...): each\n"
	"                 figure's steps over commits, its trend plot, and the differential\n"
	"                 flamegraph of the runs either side of a step. Without xsprofd it\n"
	"                 serves the page itself, with the history only\n"
	"  -h, --help     this text\n"
	"Exit status: 0 stopped by Ctrl-C or SIGTERM; 1 the port cannot be had; 2 usage error;\n"
	"3 xsprofd cannot be reached; 4 permission denied.\n";

/* The response headers of xsprofd passed on to the browser. */
enum { UI_CONTENT_TYPE, UI_SPAN, UI_CSP, UI_FRAME, UI_CACHE_CONTROL, UI_NR_PASSED };
static const char *const ui_passed[UI_NR_PASSED] = {
	[UI_CONTENT_TYPE] = "Content-Type",   [UI_SPAN] = XSPROF_SPAN_HEADER,
	[UI_CSP] = "Content-Security-Policy", [UI_FRAME] = "X-Frame-Options",
	[UI_CACHE_CONTROL] = "Cache-Control",
};

/* A browser's connection, from its start to its close. */
struct ui_conn {
	int fd;
	uint64_t since_ns;
	bool keyed; /* a request on it carried the key */
	bool cut;   /* shut down for a newcomer or at its deadline */
	struct ui_conn *prev, *next;
};

struct ui {
	const char *sock_path;
	double timeout_s;
	unsigned int port;
	char host_ip[32], host_name[32]; /* the Host headers a browser sends here */
	char key[2 * UI_KEY_BYTES + 1];
	atomic_bool stopping;
	struct ui_history *history; /* --history's store, or NULL */
	bool history_only;	    /* no xsprofd: the page from here, and the history */
	pthread_mutex_t lock;	    /* conns, unkeyed */
	struct ui_conn *conns;
	unsigned int unkeyed;
};

/* One request forwarded to xsprofd. */
struct ui_fetch {
	struct ui *ui;
	int client_fd; /* the browser's connection, -1 if unknown */
	struct reply_buf body;
	char *passed[UI_NR_PASSED];
};

static int ui_usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "xsprofctl ui: %s%s%s\nTry 'xsprofctl ui --help'.\n", msg, arg ? " " : "",
		arg ? arg : "");
	return 2;
}

/* ---- replies of the proxy itself ---- */

static enum MHD_Result ui_queue(struct MHD_Connection *c, unsigned int status,
				struct MHD_Response *r)
{
	enum MHD_Result ret;

	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* {"error": ..., "hint": ...} as xsprofd's own errors; name: value is one more header. */
static enum MHD_Result ui_error(struct MHD_Connection *c, unsigned int status, const char *error,
				const char *hint, const char *name, const char *value)
{
	struct json_object *j = json_object_new_object();
	struct MHD_Response *r;
	const char *s;

	json_object_object_add(j, "error", json_object_new_string(error));
	if (hint)
		json_object_object_add(j, "hint", json_object_new_string(hint));
	s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
						      JSON_C_TO_STRING_NOSLASHESCAPE);
	r = MHD_create_response_from_buffer(strlen(s), (void *)s, MHD_RESPMEM_MUST_COPY);
	json_object_put(j);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (name)
		MHD_add_response_header(r, name, value);
	return ui_queue(c, status, r);
}

static enum MHD_Result ui_redirect(struct MHD_Connection *c, const char *to)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Location", to);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	return ui_queue(c, 302, r);
}

/* ---- what a request must show ---- */

/* The Host a browser sends for this address: anything else is a page under another name. */
static bool ui_host_ok(const struct ui *ui, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);

	if (!h)
		return false;
	if (!strcasecmp(h, ui->host_ip) || !strcasecmp(h, ui->host_name))
		return true;
	/* On port 80 a browser leaves the port out. */
	return ui->port == 80 && (!strcasecmp(h, "127.0.0.1") || !strcasecmp(h, "localhost"));
}

static bool ui_key_ok(const struct ui *ui, struct MHD_Connection *c)
{
	const char *h =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);

	return h && !strncasecmp(h, "Bearer ", 7) && secret__equal(h + 7, ui->key);
}

/* "." and ".." segments: libcurl would resolve /ui/../v1/status to a path that needs the key. */
static bool ui_dot_segment(const char *path)
{
	for (const char *s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
		size_t n = strcspn(s + 1, "/");

		if ((n == 1 && s[1] == '.') || (n == 2 && s[1] == '.' && s[2] == '.'))
			return true;
	}
	return false;
}

/* The static page: no data in it, so no key (the page reads the key from its address). */
static bool ui_is_page(const char *path)
{
	return !strcmp(path, "/ui") || !strncmp(path, "/ui/", 4);
}

/* ---- forwarding ---- */

struct ui_target {
	CURL *h;
	char s[UI_MAX_TARGET];
	size_t len;
	int nr_args;
	bool too_long;
};

static void ui_target_add(struct ui_target *t, const char *s)
{
	size_t n = strlen(s);

	if (t->too_long || t->len + n >= sizeof(t->s)) {
		t->too_long = true;
		return;
	}
	memcpy(t->s + t->len, s, n + 1);
	t->len += n;
}

/* MHD hands over the path decoded: encoded again, every byte but unreserved ones and '/'. */
static void ui_target_path(struct ui_target *t, const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	char e[4];

	for (const unsigned char *p = (const unsigned char *)path; *p && !t->too_long; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/", *p)) {
			e[0] = (char)*p;
			e[1] = '\0';
		} else {
			e[0] = '%';
			e[1] = hex[*p >> 4];
			e[2] = hex[*p & 15];
			e[3] = '\0';
		}
		ui_target_add(t, e);
	}
}

/* One query argument, decoded by MHD, encoded again. */
static enum MHD_Result ui_target_arg(void *ctx, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	struct ui_target *t = ctx;
	char *k = curl_easy_escape(t->h, key, 0),
	     *v = value ? curl_easy_escape(t->h, value, 0) : NULL;

	if (!k || (value && !v))
		t->too_long = true;
	ui_target_add(t, t->nr_args++ ? "&" : "?");
	ui_target_add(t, k ? k : "");
	if (v) {
		ui_target_add(t, "=");
		ui_target_add(t, v);
	}
	curl_free(k);
	curl_free(v);
	return t->too_long ? MHD_NO : MHD_YES;
}

static size_t ui_on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct ui_fetch *f = ctx;

	return reply_buf__append(&f->body, p, size * n, MAX_REPLY);
}

static void ui_fetch_forget_headers(struct ui_fetch *f)
{
	for (size_t i = 0; i < UI_NR_PASSED; i++) {
		free(f->passed[i]);
		f->passed[i] = NULL;
	}
}

static size_t ui_on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct ui_fetch *f = ctx;
	size_t len = size * n;

	/* A status line starts a response: headers of one before it are not this one's. */
	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		ui_fetch_forget_headers(f);
		return len;
	}
	for (size_t i = 0; i < UI_NR_PASSED; i++) {
		size_t k = strlen(ui_passed[i]);
		const char *v = p + k + 1, *end = p + len;

		if (len <= k || p[k] != ':' || strncasecmp(p, ui_passed[i], k))
			continue;
		while (v < end && (*v == ' ' || *v == '\t'))
			v++;
		while (end > v && strchr(" \t\r\n", end[-1]))
			end--;
		if (end - v < UI_MAX_HEADER) {
			free(f->passed[i]);
			f->passed[i] = strndup(v, (size_t)(end - v));
		}
	}
	return len;
}

/* Called at least once a second: a non-zero return ends the transfer. */
static int ui_on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct ui_fetch *f = ctx;
	struct pollfd p = {.fd = f->client_fd, .events = POLLRDHUP};

	if (atomic_load(&f->ui->stopping))
		return 1;
	/* The browser left (a tab closed during a scrape): xsprofd need not go on either. */
	return f->client_fd >= 0 && poll(&p, 1, 0) > 0 &&
	       (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The seconds a scrape's answer takes on top of the timeout: its seconds=N. */
static double ui_wait_s(struct MHD_Connection *c)
{
	const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds");
	char *end;
	double v;

	if (!s)
		return 0;
	v = strtod(s, &end);
	/* NaN fails both comparisons: no wait added. */
	return end != s && v > 0 && v <= UI_MAX_SECONDS ? v : 0;
}

/* Why the transfer failed, to the browser. */
static enum MHD_Result ui_fetch_failed(struct ui_fetch *f, struct MHD_Connection *c, CURLcode rc,
				       double limit_s)
{
	const char *sock = f->ui->sock_path;
	char msg[PATH_MAX + 160];

	if (f->body.overflow) {
		snprintf(msg, sizeof(msg), "xsprofd's reply is over %u MiB", MAX_REPLY >> 20);
		return ui_error(c, 502, msg, "ask for a shorter window", NULL, NULL);
	}
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
		snprintf(msg, sizeof(msg), "xsprofd cannot be reached at %s", sock);
		return ui_error(c, 502, msg, "is it running? 'systemctl status xsprofd'", NULL,
				NULL);
	}
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(msg, sizeof(msg), "xsprofd at %s did not answer within %.0f s", sock,
			 limit_s);
		return ui_error(c, 504, msg, "raise xsprofctl's --timeout", NULL, NULL);
	}
	if (rc == CURLE_ABORTED_BY_CALLBACK)
		return ui_error(c, 503, "xsprofctl ui is stopping", NULL, NULL, NULL);
	snprintf(msg, sizeof(msg), "talking to xsprofd at %s failed: %s", sock,
		 curl_easy_strerror(rc));
	return ui_error(c, 502, msg, NULL, NULL, NULL);
}

/* xsprofd's answer, as it gave it; the body goes to MHD. */
static enum MHD_Result ui_fetch_reply(struct ui_fetch *f, struct MHD_Connection *c, long code)
{
	struct MHD_Response *r;

	if (code < 100 || code > 599)
		return ui_error(c, 502, "xsprofd sent no HTTP status", NULL, NULL, NULL);
	if (f->body.data)
		r = MHD_create_response_from_buffer(f->body.len, f->body.data,
						    MHD_RESPMEM_MUST_FREE);
	else
		r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	f->body.data = NULL;
	for (size_t i = 0; i < UI_NR_PASSED; i++)
		if (f->passed[i])
			MHD_add_response_header(r, ui_passed[i], f->passed[i]);
	if (!f->passed[UI_CACHE_CONTROL])
		MHD_add_response_header(r, "Cache-Control", "no-store");
	return ui_queue(c, (unsigned int)code, r);
}

/* GET path?query from xsprofd, over its socket; HEAD too (MHD sends no body for it). */
static enum MHD_Result ui_forward(struct ui *ui, struct MHD_Connection *c, const char *path)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct ui_fetch f = {.ui = ui, .client_fd = ci ? ci->connect_fd : -1};
	struct ui_target t = {.h = curl_easy_init()};
	double limit_s = ui->timeout_s + ui_wait_s(c);
	char url[sizeof(t.s) + 32];
	enum MHD_Result ret;
	long code = 0;
	CURLcode rc;

	if (!t.h)
		return ui_error(c, 500, "out of memory", NULL, NULL, NULL);
	ui_target_path(&t, path);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, ui_target_arg, &t);
	if (t.too_long) {
		curl_easy_cleanup(t.h);
		return ui_error(c, 414, "the path and query are too long to forward", NULL, NULL,
				NULL);
	}
	snprintf(url, sizeof(url), "http://localhost%s", t.s);
	curl_easy_setopt(t.h, CURLOPT_UNIX_SOCKET_PATH, ui->sock_path);
	curl_easy_setopt(t.h, CURLOPT_URL, url);
	curl_easy_setopt(t.h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(t.h, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(t.h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(t.h, CURLOPT_WRITEFUNCTION, ui_on_data);
	curl_easy_setopt(t.h, CURLOPT_WRITEDATA, &f);
	curl_easy_setopt(t.h, CURLOPT_HEADERFUNCTION, ui_on_header);
	curl_easy_setopt(t.h, CURLOPT_HEADERDATA, &f);
	curl_easy_setopt(t.h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(t.h, CURLOPT_XFERINFOFUNCTION, ui_on_progress);
	curl_easy_setopt(t.h, CURLOPT_XFERINFODATA, &f);
	/* Every wait is bounded: connecting, and the whole exchange (a scrape's seconds on top). */
	curl_easy_setopt(t.h, CURLOPT_CONNECTTIMEOUT_MS, (long)(ui->timeout_s * 1000));
	curl_easy_setopt(t.h, CURLOPT_TIMEOUT_MS, (long)(limit_s * 1000));
	rc = curl_easy_perform(t.h);
	curl_easy_getinfo(t.h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(t.h);
	ret = rc == CURLE_OK ? ui_fetch_reply(&f, c, code) : ui_fetch_failed(&f, c, rc, limit_s);
	free(f.body.data);
	ui_fetch_forget_headers(&f);
	return ret;
}

/* With ui->lock held: close x (its thread sees the end of the stream and lets it go). */
static void ui_cut(struct ui_conn *x)
{
	x->cut = true;
	shutdown(x->fd, SHUT_RDWR);
}

/* Connections in order of arrival; a newcomer past UI_UNKEYED_MAX closes the oldest unkeyed. */
static void ui_on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
			     enum MHD_ConnectionNotificationCode code)
{
	struct ui *ui = cls;
	struct ui_conn *x = *socket_ctx, *old = NULL;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		x = calloc(1, sizeof(*x));
		if (!x || !ci) {
			free(x);
			return;
		}
		x->fd = ci->connect_fd;
		x->since_ns = clock__mono_ns();
		pthread_mutex_lock(&ui->lock);
		for (struct ui_conn *y = ui->conns; y && ui->unkeyed >= UI_UNKEYED_MAX; y = y->next)
			if (!y->keyed && !y->cut)
				old = y; /* the list is newest first: the last one found is the oldest */
		if (old)
			ui_cut(old);
		x->next = ui->conns;
		if (ui->conns)
			ui->conns->prev = x;
		ui->conns = x;
		ui->unkeyed++;
		pthread_mutex_unlock(&ui->lock);
		*socket_ctx = x;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || !x)
		return;
	pthread_mutex_lock(&ui->lock);
	if (x->prev)
		x->prev->next = x->next;
	else
		ui->conns = x->next;
	if (x->next)
		x->next->prev = x->prev;
	if (!x->keyed)
		ui->unkeyed--;
	pthread_mutex_unlock(&ui->lock);
	*socket_ctx = NULL;
	free(x);
}

/* The connection showed the key: its slot is kept. */
static void ui_keyed(struct ui *ui, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct ui_conn *x = ci ? ci->socket_context : NULL;

	if (!x)
		return;
	pthread_mutex_lock(&ui->lock);
	if (!x->keyed) {
		x->keyed = true;
		ui->unkeyed--;
	}
	pthread_mutex_unlock(&ui->lock);
}

/* Unkeyed connections past their UI_UNKEYED_S are closed (every half second). */
static void ui_sweep(struct ui *ui)
{
	uint64_t now = clock__mono_ns();

	pthread_mutex_lock(&ui->lock);
	for (struct ui_conn *x = ui->conns; x; x = x->next)
		if (!x->keyed && !x->cut && now - x->since_ns > UI_UNKEYED_S * 1000000000ull)
			ui_cut(x);
	pthread_mutex_unlock(&ui->lock);
}

/* Without xsprofd (--history, history only): the page's files from here; the rest of the API
 * is not here. */
static enum MHD_Result ui_local(struct MHD_Connection *c, const char *url)
{
	const struct ui_asset *a = ui_asset__at(url);
	struct MHD_Response *r;

	if (!a && !strncmp(url, "/ui/", 4))
		return ui_error(c, 404, "no such file of the web view", "open /ui/", NULL, NULL);
	if (!a)
		return ui_error(c, 503, "no xsprofd here: xsprofctl ui serves the history only",
				"start xsprofd, then xsprofctl ui, for the live view", NULL, NULL);
	r = MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", a->type);
	MHD_add_response_header(r, "Content-Security-Policy", UI_PAGE_CSP);
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Cache-Control", "no-cache");
	return ui_queue(c, 200, r);
}

static enum MHD_Result ui_on_request(void *cls, struct MHD_Connection *c, const char *url,
				     const char *method, const char *version,
				     const char *upload_data, size_t *upload_data_size,
				     void **con_cls)
{
	struct ui *ui = cls;
	bool reader = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	/* A reader's answer waits for the end of its request, so the connection can be kept. */
	if (reader && !*con_cls) {
		*con_cls = ui;
		return MHD_YES;
	}
	if (*upload_data_size) { /* a GET with a body: not read */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (!ui_host_ok(ui, c))
		return ui_error(c, 403, "the Host header must be 127.0.0.1:PORT or localhost:PORT",
				"open the address xsprofctl ui printed", NULL, NULL);
	if (!reader)
		return ui_error(c, 405, "only GET and HEAD: the web view only reads", NULL, "Allow",
				"GET, HEAD");
	if (!strcmp(url, "/"))
		return ui_redirect(c, "/ui/");
	if (url[0] != '/' || ui_dot_segment(url))
		return ui_error(c, 400, "the path must start with / and have no . or .. segments",
				NULL, NULL, NULL);
	if (ui_key_ok(ui, c))
		ui_keyed(ui, c);
	else if (!ui_is_page(url))
		return ui_error(c, 401, "the key is missing or wrong",
				"open the address xsprofctl ui printed (http://127.0.0.1:PORT/ui/"
				"#token=...): the page sends its key",
				"WWW-Authenticate", "Bearer");
	if (ui_history__path(url))
		return ui_history__answer(ui->history, c, url, !ui->history_only);
	if (ui->history_only)
		return ui_local(c, url);
	return ui_forward(ui, c, url);
}

/* ---- the command ---- */

static int ui_parse(int argc, char **argv, unsigned int *ret_port, const char **ret_history)
{
	static const struct option lo[] = {{"port", required_argument, NULL, 'P'},
					   {"history", required_argument, NULL, 'H'},
					   {"help", no_argument, NULL, 'h'},
					   {}};
	unsigned long port = 0;
	char *end;
	int c;

	optind = 0; /* glibc: 0 re-initialises getopt (main stopped at the command with "+") */
	while ((c = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
		if (c == 'h') {
			fputs(ui_usage, stdout);
			return -1;
		}
		if (c == 'H') {
			if (!*optarg)
				return ui_usage_error("--history: expected a store, not", "''");
			*ret_history = optarg;
			continue;
		}
		if (c != 'P')
			return ui_usage_error("takes --port N and --history STORE only; unknown "
					      "option or missing value:",
					      argv[optind - 1]);
		errno = 0;
		port = strtoul(optarg, &end, 10);
		if (errno || !*optarg || *end || *optarg == '-' || port > 65535)
			return ui_usage_error("--port: expected 0..65535, not", optarg);
	}
	if (optind < argc)
		return ui_usage_error("unexpected argument", argv[optind]);
	*ret_port = (unsigned int)port;
	return 0;
}

/* A listening socket on 127.0.0.1:port (0: the kernel picks), and the port it got. */
static int ui_listen(unsigned int port, unsigned int *ret_port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, err;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&sa, &len)) {
		err = -errno;
		close(fd);
		return err;
	}
	*ret_port = ntohs(sa.sin_port);
	return fd;
}

static bool ui_make_key(struct ui *ui)
{
	unsigned char rnd[UI_KEY_BYTES];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return false;
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(ui->key + 2 * i, 3, "%02x", rnd[i]);
	explicit_bzero(rnd, sizeof(rnd));
	return true;
}

int ctl_ui(int argc, char **argv)
{
	const struct ctl_opts *o = ctl_opts();
	struct ui ui = {.sock_path = o->sock_path,
			.timeout_s = o->timeout_s,
			.lock = PTHREAD_MUTEX_INITIALIZER};
	struct MHD_Daemon *d;
	sigset_t stop, old;
	const char *history = NULL;
	unsigned int port;
	int fd, st, sig;

	st = ui_parse(argc, argv, &port, &history);
	if (st)
		return st < 0 ? 0 : st;
	st = ctl_check_daemon();
	if (st == EXIT_UNREACHABLE && history) {
		fprintf(stderr,
			"xsprofctl ui: serving the history only (the web view's live panels "
			"need xsprofd)\n");
		ui.history_only = true;
		st = 0;
	} else if (st) {
		return st;
	}
	if (history) {
		char err[512] = "";

		if (ui_history__open(history, &ui.history, err, sizeof(err))) {
			fprintf(stderr, "xsprofctl ui: --history %s: %s\n", history, err);
			return 1;
		}
	}
	if (!ui_make_key(&ui)) {
		fprintf(stderr, "xsprofctl ui: no random key: %s\n", strerror(errno));
		ui_history__close(ui.history);
		return 1;
	}
	fd = ui_listen(port, &ui.port);
	if (fd < 0) {
		fprintf(stderr,
			"xsprofctl ui: cannot listen on 127.0.0.1:%u: %s (choose another --port, or "
			"0 for a free one)\n",
			port, strerror(-fd));
		ui_history__close(ui.history);
		return 1;
	}
	snprintf(ui.host_ip, sizeof(ui.host_ip), "127.0.0.1:%u", ui.port);
	snprintf(ui.host_name, sizeof(ui.host_name), "localhost:%u", ui.port);
	/* Blocked before MHD's threads start, so they inherit it: only sigwait sees them. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	signal(SIGPIPE, SIG_IGN); /* a browser gone mid-answer is an error return, not an exit */
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
				     MHD_USE_AUTO,
			     0, NULL, NULL, ui_on_request, &ui, MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)UI_MAX_CONNECTIONS,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)UI_IDLE_S,
			     MHD_OPTION_NOTIFY_CONNECTION, ui_on_connection, &ui, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "xsprofctl ui: cannot serve 127.0.0.1:%u\n", ui.port);
		close(fd);
		ui_history__close(ui.history);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return 1;
	}
	printf("http://127.0.0.1:%u/ui/#token=%s\n", ui.port, ui.key);
	if (fflush(stdout)) {
		fprintf(stderr, "xsprofctl ui: cannot print the address: %s\n", strerror(errno));
		st = 1;
	} else {
		if (!o->quiet)
			fprintf(stderr,
				"xsprofctl: serving %s on 127.0.0.1:%u: open the address above in "
				"a browser on this machine; Ctrl-C stops\n",
				ui.history_only ? "the history's web view" : "xsprofd's web view",
				ui.port);
		const struct timespec tick = {0, 500 * 1000 * 1000};

		while ((sig = sigtimedwait(&stop, NULL, &tick)) < 0 &&
		       (errno == EAGAIN || errno == EINTR))
			ui_sweep(&ui);
	}
	/* Transfers under way end at their next progress call, within a second. */
	atomic_store(&ui.stopping, true);
	MHD_stop_daemon(d);
	explicit_bzero(ui.key, sizeof(ui.key));
	ui_history__close(ui.history);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return st;
}
