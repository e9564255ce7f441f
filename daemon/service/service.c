// SPDX-License-Identifier: Apache-2.0
/*
 * The service: an always-on recording folded into the rolling window every slice, recordings on
 * request, and the control API, all on one sd-event loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "bpf/xsprof_events.h"
#include "daemon/base/clock.h"
#include "daemon/base/secret.h"
#include "daemon/gpu/cupti_server.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/log.h"
#include "daemon/options.h"
#include "daemon/probes/preflight.h"
#include "daemon/probes/sampler.h"
#include "daemon/service/export.h"
#include "daemon/service/http.h"
#include "daemon/session/ceiling.h"
#include "daemon/session/host_labels.h"
#include "daemon/probes/stop_ledger.h"
#include "daemon/service/gpu_metrics.h"
#include "daemon/service/internal.h"
#include "daemon/session/lasting.h"
#include "daemon/session/report_window.h"
#include "daemon/service/service.h"
#include "daemon/session/window.h"
#include "daemon/session/gpu_socket.h"
#include "daemon/session/recording.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "output/model/frame_sites.h"

/* ---- request plumbing ---- */

static bool token_ok(struct service *s, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");

	return s->token && h && !strncasecmp(h, "Bearer ", 7) && secret__equal(h + 7, s->token);
}

/*
 * GET /v1/clock: this host's clocks now, for a client that puts hosts on one clock by a round
 * trip (xsprofctl fleet --report straggler); CLOCK_MONOTONIC as the job parts give it.
 */
static struct json_object *clock_json(void)
{
	struct json_object *j = json_object_new_object();
	int64_t shift = clock__export_shift_ns();

	json_object_object_add(j, "monotonic_ns",
			       json_object_new_int64((int64_t)clock__mono_ns() + shift));
	json_object_object_add(j, "realtime_offset_ns",
			       json_object_new_int64(clock__realtime_offset_ns() - shift));
	return j;
}

static enum MHD_Result route(struct service *s, struct req *q, struct MHD_Connection *c,
			     const char *method, const char *url)
{
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
	enum MHD_Result ret;

	if (s->stopping)
		return reply__error(c, 503, "the daemon is stopping", NULL);
	if (!remote__may(s, q, method, c, &ret))
		return ret;
	if (!strcmp(url, "/debug/pprof/profile"))
		return get ? scrape__api(s, q, c)
			   : reply__error(c, 405, "use GET for /debug/pprof/profile", NULL);
	if (!strcmp(url, "/metrics"))
		return get ? metrics__api(s, c)
			   : reply__error(c, 405, "use GET for /metrics", NULL);
	if (!strcmp(url, "/v1/clock"))
		return get ? reply__json(c, 200, clock_json())
			   : reply__error(c, 405, "use GET for /v1/clock", NULL);
	if (!strcmp(url, "/v1/status"))
		return get ? reply__json(c, 200, status__json(s))
			   : reply__error(c, 405, "use GET for /v1/status", NULL);
	if (!strcmp(url, "/v1/profile"))
		return get ? window_api__profile(s, q, c)
			   : reply__error(c, 405, "use GET for /v1/profile", NULL);
	if (!strcmp(url, "/v1/timeline"))
		return get ? window_api__timeline(s, q, c)
			   : reply__error(c, 405, "use GET for /v1/timeline", NULL);
	if (!strcmp(url, "/v1/attach") || !strcmp(url, "/v1/detach"))
		return post ? attachments__api_attach(s, q, c, url[4] == 'a')
			    : reply__error(c, 405, "use POST", NULL);
	if (!strncmp(url, "/v1/dumps", 9) && (!url[9] || url[9] == '/'))
		return flight_api__dumps(s, q, c, method, url + 9);
	if (!strcmp(url, "/v1/triggers"))
		return flight_api__triggers(s, q, c, method);
	if (!strcmp(url, "/v1/recordings"))
		return post ? recordings__api_start(s, q, c)
			    : reply__error(c, 405, "use POST to start a recording", NULL);
	if (!strncmp(url, "/v1/recordings/", 15))
		return get ? recordings__api_result(s, q, c, url + 15)
			   : reply__error(c, 405, "use GET to fetch a recording", NULL);
	return reply__error(c, 404, "no such endpoint",
			    "see xsprofd's API.md: /v1/status, /metrics, /ui/, ...");
}

static enum MHD_Result on_request(void *ctx, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct service *s = ctx;
	struct req *q = *con_cls;

	if (!q) {
		struct http_peer peer;
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		q = calloc(1, sizeof(*q));
		if (!q)
			return MHD_NO;
		*con_cls = q;
		q->tcp = ci && ci->client_addr && ci->client_addr->sa_family != AF_UNIX;
		if (q->tcp) {
			q->authed =
				token_ok(s, c) || remote__basic_ok(s, c) || remote__cert_ok(s, c);
			q->uid = 0;
			/* Only credentials that were sent and wrong count against the address. */
			q->backoff = http__authenticated(
				c, q->authed,
				MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization") !=
					NULL);
		} else if (!http__peer(c, s->group, &peer)) {
			q->uid = peer.uid;
			q->authed = peer.uid == 0;
			q->member = peer.in_group;
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (!q->too_big && q->len + *upload_size <= MAX_BODY) {
			char *nb = realloc(q->body, q->len + *upload_size + 1);

			if (!nb)
				return MHD_NO;
			q->body = nb;
			memcpy(q->body + q->len, upload, *upload_size);
			q->len += *upload_size;
			q->body[q->len] = '\0';
		} else {
			q->too_big = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (q->attach || q->attach_done) {
		/* Resumed: the attach's sampler is loaded (or the wait ended). */
		if (http__expired(c))
			return MHD_NO; /* closed; on_completed lets the load go on alone */
		return attachments__reply(q, c);
	}
	if (q->waiting) {
		/* Resumed: the recording it waited on has ended, or the wait did. */
		struct svc_recording *r = q->waiting;

		if (http__expired(c))
			return MHD_NO; /* closed; on_completed takes it off the waiter list */

		q->waiting = NULL;
		return r->state == RECORDING_FAILED ? reply__error(c, 500, r->error, NULL)
		       : r->state == RECORDING_DONE
			       ? reply__send(c, 200, reply__content_type(r->format), r->result,
					     r->result_len)
			       : reply__error(c, 503, "the daemon is stopping", NULL);
	}
	if (q->too_big)
		return reply__error(c, 413, "request body over 64 KiB", NULL);
	if (ui__path(url))
		return ui__api(c, method, url);
	if (q->tcp && q->backoff)
		return reply__error(c, 503,
				    "too many wrong tokens from your address: try again in 30 s",
				    "the right token is served meanwhile");
	if (q->tcp && !q->authed)
		return reply__error(c, 401, "missing or wrong token",
				    "send Authorization: Bearer TOKEN (the daemon's --token-file)");
	if (!q->authed && !q->member)
		return reply__error(c, 403, "permission denied",
				    "join group xsprof (e.g. adduser USER xsprof) or use root");
	return route(s, q, c, method, url);
}

static void on_completed(void *ctx, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct req *q = *con_cls;

	if (!q)
		return;
	/* A client that gave up while parked: take it off the waiter list. */
	if (q->waiting) {
		struct svc_recording *r = q->waiting;

		for (int i = 0; i < r->nr_waiters; i++)
			if (r->waiters[i] == c)
				r->waiters[i] = r->waiters[--r->nr_waiters];
	}
	attachments__forget(q);
	free(q->attach_body);
	free(q->body);
	free(q);
	*con_cls = NULL;
}

/* ---- GPU timing ---- */

static int on_cupti(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	struct service *s = ctx;

	/* Every process may send: none is refused as foreign. */
	gpu_socket__serve(s->cupti, &s->cupti_malformed_seen, NULL);
	slices__check_gpu(s);
	return 0;
}

/* --max-cpu: the GPU records read, capped per user while the heaviest one costs us over it. */
static uint64_t intake_top_rate(void *ctx)
{
	return cupti_server__top_uid_rate(ctx, NULL);
}

static void intake_set_cap(void *ctx, uint64_t per_s)
{
	cupti_server__set_uid_cap(ctx, per_s);
}

static void start_cupti(struct service *s)
{
	struct cupti_server_opts co = {.socket_path = s->opts->cupti_socket};
	int err;

	if (s->opts->gpu_store_mb)
		gpu_store_opts__sized(&co.store, s->opts->gpu_store_mb);
	flight_api__cupti_opts(s, &co);
	s->cupti = cupti_server__new(&co);
	if (!s->cupti) {
		log_warn("GPU timing is off: cannot listen on %s: %s", s->opts->cupti_socket,
			 strerror(errno));
		return;
	}
	err = sd_event_add_io(s->ev, &s->cupti_io, cupti_server__fd(s->cupti), EPOLLIN, on_cupti,
			      s);
	if (err < 0) {
		log_warn("GPU timing is off: %s", strerror(-err));
		cupti_server__free(s->cupti);
		s->cupti = NULL;
		return;
	}
	if (s->ceiling)
		ceiling__set_intake(s->ceiling,
				    &(struct ceiling_intake){.top_rate = intake_top_rate,
							     .set_cap = intake_set_cap,
							     .ctx = s->cupti});
}

/* ---- lifecycle ---- */

static int read_token(const char *path, char **ret)
{
	char buf[512];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	/* A secret others can read is no secret: refuse it rather than serve TCP with it. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_mode & 0077)) {
		close(fd);
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	if (n < 16)
		return -EINVAL;
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
}

static int start_http(struct service *s)
{
	struct group *g = getgrnam(s->opts->socket_group);
	const struct http_tls *tls;
	int fd, err;

	s->group = g ? g->gr_gid : (gid_t)-1;
	if (!g)
		log_warn("group %s does not exist: only root can use %s (create it: addgroup "
			 "--system %s)",
			 s->opts->socket_group, s->opts->socket_path, s->opts->socket_group);
	err = http__unix_listen(s->opts->socket_path, s->group, &s->unix_sock);
	if (err == -EADDRINUSE) {
		log_err("another xsprofd (pid %d) serves %s: stop it first, or give this one other "
			"paths (--socket, --cupti-socket); nothing was changed",
			(int)s->unix_sock.holder, s->opts->socket_path);
		return err;
	}
	if (err) {
		log_err("cannot listen on %s: %s", s->opts->socket_path, strerror(-err));
		return err;
	}
	s->unix_http = http_server__new(s->ev, s->unix_sock.fd, on_request, on_completed, s);
	if (!s->unix_http) {
		log_err("cannot start the HTTP server on %s", s->opts->socket_path);
		return -EIO;
	}
	if (!s->opts->listen_addr)
		return 0;
	err = read_token(s->opts->token_file, &s->token);
	if (err) {
		log_err("--token-file %s: %s", s->opts->token_file,
			err == -EINVAL	? "the token must be at least 16 characters"
			: err == -EPERM ? "not a regular file, or readable or writable by group or "
					  "others: chmod 600 it (and keep it owned by root)"
					: strerror(-err));
		return err;
	}
	err = http__tcp_listen(s->opts->listen_addr, &fd);
	if (err) {
		log_err("--listen %s: %s", s->opts->listen_addr, strerror(-err));
		return err;
	}
	err = remote__tls(s, &s->tls, &tls);
	if (err) {
		close(fd);
		return err;
	}
	s->tcp_http = http_server__new_tls(s->ev, fd, on_request, on_completed, s, tls);
	if (!s->tcp_http)
		return -EIO;
	log_info("also serving the API on TCP %s (%s, token%s required; %s)", s->opts->listen_addr,
		 tls ? "TLS" : "plain HTTP", s->opts->tls_client_ca ? " or client certificate" : "",
		 s->opts->listen_allow_writes ? "reads and writes" : "read-only");
	return 0;
}

/* Every second: who still owns what each user profiles (permissions decide, the owners act). */
static int on_owner_check(sd_event_source *src, uint64_t usec, void *ctx)
{
	struct service *s = ctx;

	(void)usec;
	recordings__recheck_owners(s);
	attachments__recheck(s);
	sd_event_source_set_time_relative(src, OWNER_CHECK_US);
	return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

static int on_term(sd_event_source *src, const struct signalfd_siginfo *si, void *ctx)
{
	struct service *s = ctx;

	log_info("%s: stopping", strsignal(si->ssi_signo));
	sd_notify(0, "STOPPING=1");
	s->stopping = true;
	return sd_event_exit(s->ev, 0);
}

static int on_reload(sd_event_source *src, const struct signalfd_siginfo *si, void *ctx)
{
	struct service *s = ctx;
	unsigned int old_freq = s->opts->freq_hz;
	enum session_group old_group = s->opts->window_group_by;
	struct window_opts so;
	int err;

	sd_notify(0, "RELOADING=1");
	if (xsprofd_opts__reload(s->opts, s->argc, s->argv)) {
		log_err("reload: the config has errors (above); keeping the running settings");
		sd_notify(0, "READY=1");
		return 0;
	}
	/* The window's slices are kept (or not) grouped as it started: a restart changes that. */
	if (s->opts->window_group_by != old_group) {
		log_warn("reload: window-group-by changes at the next start; the window stays %s",
			 old_group ? session_group__name(old_group) : "ungrouped");
		s->opts->window_group_by = old_group;
	}
	so.window_s = s->opts->window_s;
	so.cap_bytes = (size_t)s->opts->store_mb << 20;
	window__configure(s->machine.cpu, &so);
	window__configure(s->machine.gpu, &so);
	so.cap_bytes = REPORT_WINDOW_BYTES(so.cap_bytes);
	report_window__configure(s->machine.reports, &so);
	if (s->opts->freq_hz != old_freq && s->machine.recording) {
		struct recording_stats rs;

		slices__close(s);
		recording__stop(s->machine.recording);
		recording__stats(s->machine.recording, &rs);
		xsprof_cpu_stats__add(&s->totals, &rs.bpf);
		s->totals_bad += rs.bad_records;
		recording__free(s->machine.recording);
		s->machine.recording = NULL;
		err = slices__start(s);
		if (err)
			log_err("reload: could not restart sampling at %u Hz; sampling is off until "
				"the next reload",
				s->opts->freq_hz);
	}
	s->machine.late_ns = (uint64_t)s->opts->window_range_wait_s * 1000000000ull;
	log_info("reloaded %s: %u Hz, window %u s, store cap %u MiB",
		 s->opts->config_path ? s->opts->config_path : "(no config file)", s->opts->freq_hz,
		 s->opts->window_s, s->opts->store_mb);
	sd_notify(0, "READY=1");
	status__notify(s);
	return 0;
}

/*
 * Ours alone once the socket's lock is held: what a previous instance left stopped goes on, and
 * our stops are pinned (into pin) where the unit's ExecStopPost finds them should we be killed
 * together with our watchdog. Whether the pin was made.
 */
static bool claim_ledger(const char *socket_path, char *pin, size_t size)
{
	int err = stop_ledger__claim(stop_ledger__pin_path(socket_path, pin, size));

	if (err)
		log_warn("pinning the stop ledger at %s: %s (bpffs is mounted when missing; where "
			 "that is refused, run 'mount -t bpf bpf /sys/fs/bpf'); if xsprofd and its "
			 "watchdog are killed together, a process stopped for its probes waits for "
			 "the next xsprofd",
			 pin, strerror(-err));
	return !err;
}

/* The export sinks (--export): refused at the start when a setting is bad. */
static int start_export(struct service *s)
{
	const struct xsprofd_opts *o = s->opts;
	char err[512] = "";
	int rc;

	s->exporter = exporter__new(o->exports, (size_t)o->nr_exports, o->export_labels,
				    (size_t)o->nr_export_labels, o->export_queue_kb, o->freq_hz,
				    err, sizeof(err));
	if (!s->exporter) {
		log_err("%s", err[0] ? err : strerror(errno));
		return -EINVAL;
	}
	s->export_labels = host_labels__new(NULL, NULL, 0);
	if (!s->export_labels) {
		log_err("out of memory setting up the export labels");
		return -ENOMEM;
	}
	if (o->window_group_by)
		log_warn("--export: a window grouped by range (--window-group-by) is not exported");
	s->machine.on_slice = exporter__on_slice;
	s->machine.on_slice_ctx = s->exporter;
	s->machine.labels = host_labels__of;
	s->machine.labels_ctx = s->export_labels;
	rc = exporter__start(s->exporter);
	if (rc)
		log_err("starting the export thread: %s", strerror(-rc));
	return rc;
}

void service__govern(struct service *s, struct recording *r)
{
	int err = s->ceiling ? ceiling__add(s->ceiling, r) : 0;

	if (err)
		log_warn("--max-cpu: a recording could not be put under the ceiling: %s",
			 strerror(-err));
}

/* Signals, the watchdog and the two timers on the loop. 0, or -1 (said). */
static int setup_loop(struct service *s)
{
	sigset_t mask;
	int err;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	err = sd_event_new(&s->ev);
	if (err >= 0)
		err = sd_event_add_signal(s->ev, NULL, SIGTERM, on_term, s);
	if (err >= 0)
		err = sd_event_add_signal(s->ev, NULL, SIGINT, on_term, s);
	if (err >= 0)
		err = sd_event_add_signal(s->ev, NULL, SIGHUP, on_reload, s);
	/* Keep-alives to systemd from the loop itself: a stuck loop gets us restarted. */
	if (err >= 0)
		err = sd_event_set_watchdog(s->ev, true);
	if (err >= 0)
		err = sd_event_add_time_relative(s->ev, &s->slice_timer, CLOCK_MONOTONIC, SLICE_US,
						 0, slices__on_timer, s);
	if (err >= 0)
		err = sd_event_add_time_relative(s->ev, &s->owner_timer, CLOCK_MONOTONIC,
						 OWNER_CHECK_US, 0, on_owner_check, s);
	if (err < 0) {
		log_err("setting up the event loop: %s", strerror(-err));
		return -1;
	}
	return 0;
}

/* The symbolizer, the window's stores and the GPU metrics. 0, or -1 (said). */
static int setup_stores(struct service *s)
{
	const struct xsprofd_opts *opts = s->opts;
	struct symbolizer_opts yopts = {
		.no_demangle = opts->no_demangle,
		.debug_dirs = opts->nr_debug_dirs ? opts->debug_dirs : NULL,
		.nr_debug_dirs = (size_t)opts->nr_debug_dirs,
		.debuginfod = opts->debuginfod,
		.cache_bytes = (uint64_t)(opts->symbol_cache_mb ? opts->symbol_cache_mb
								: XSPROFD_SERVICE_SYMBOL_CACHE_MB)
			       << 20,
		.hot_bytes = XSPROFD_SERVICE_SYMBOL_HOT_MB << 20,
		.debug_info = opts->debug_info,
	};
	struct window_opts so = {.window_s = opts->window_s,
				 .cap_bytes = (size_t)opts->store_mb << 20};

	s->sym = symbolizer__new(&yopts);
	/* Any reply may be pprof: the names keep where they came from (capped, see status). */
	s->sites = frame_sites__new(XSPROFD_SERVICE_SITES_BYTES);
	if (s->sym)
		symbolizer__set_sites(s->sym, s->sites);
	s->machine.cpu = window__new(&so);
	s->machine.gpu = window__new(&so);
	so.cap_bytes = REPORT_WINDOW_BYTES(so.cap_bytes);
	s->machine.reports = report_window__new(&so);
	s->machine.name = "the rolling window";
	s->machine.freq_hz = opts->freq_hz;
	s->machine.group_by = opts->window_group_by;
	s->machine.late_ns = (uint64_t)opts->window_range_wait_s * 1000000000ull;
	s->gpu_metrics = gpu_metrics__new();
	s->machine.on_gpu_figures = gpu_metrics__add_slice;
	s->machine.figures_ctx = s->gpu_metrics;
	if (!s->sym || !s->sites || !s->machine.cpu || !s->machine.gpu || !s->machine.reports ||
	    !s->gpu_metrics) {
		log_err("out of memory setting up");
		return -1;
	}
	return 0;
}

/* Everything let go, in order; ledger_pin: the stop ledger's pin to remove, or NULL. */
static void teardown(struct service *s, const char *ledger_pin)
{
	s->stopping = true;
	/* Parked clients get an answer (503) before the server goes. */
	for (struct svc_recording *r = s->recordings; r; r = r->next)
		recordings__wake_waiters(s, r);
	http_server__run(s->unix_http);
	http_server__run(s->tcp_http);
	http_server__free(s->unix_http);
	/* Only our own socket file goes; the lock is released last. */
	http__unix_release(&s->unix_sock, s->opts->socket_path);
	if (ledger_pin)
		stop_ledger__unpin(ledger_pin);
	http_server__free(s->tcp_http);
	while (s->recordings) {
		struct svc_recording *r = s->recordings;

		s->recordings = r->next;
		recordings__free(r);
	}
	attachments__free(s);
	lasting__stop(&s->machine);  /* the slices waiting for their ranges too */
	ceiling__free(s->ceiling);   /* recordings still governed let go of it */
	flight_api__free(s);	     /* after the last slice it may be handed */
	exporter__free(s->exporter); /* after the last slice it may be handed */
	host_labels__free(s->export_labels);
	sd_event_source_disable_unref(s->cupti_io);
	cupti_server__free(s->cupti);
	sd_event_source_disable_unref(s->slice_timer);
	sd_event_source_disable_unref(s->owner_timer);
	window__free(s->machine.cpu);
	window__free(s->machine.gpu);
	report_window__free(s->machine.reports);
	gpu_metrics__free(s->gpu_metrics);
	unwinder__free(s->unwinder); /* after every recording that used it */
	symbolizer__free(s->sym);
	frame_sites__free(s->sites);
	free(s->token);
	remote__tls_free(&s->tls);
	sd_event_unref(s->ev);
	free(s);
}

int service__run(struct xsprofd_opts *opts, int argc, char **argv)
{
	struct service *s = calloc(1, sizeof(*s));
	char ledger_pin[96];
	bool ledger_pinned = false;
	int err, status = 1;

	if (!s)
		return 1;
	s->unix_sock.lock_fd = -1;
	s->opts = opts;
	s->argc = argc;
	s->argv = argv;
	s->started_ns = clock__mono_ns();
	libbpf_set_print(preflight__libbpf_log);
	if (preflight__kernel() || setup_loop(s) || setup_stores(s))
		goto out;
	if (opts->nr_exports && start_export(s))
		goto out;
	if (flight_api__start(s))
		goto out;
	/* One set of tables for every recording: a file's table is built once, whoever asks. */
	if (opts->unwind != XSPROF_UNWIND_FP) {
		struct unwinder_opts uo = {.table_mb = opts->unwind_mb};

		s->unwinder = unwinder__new(&uo);
		if (!s->unwinder) {
			log_err("making the unwind table maps (--unwind-mb %u): %s",
				opts->unwind_mb ? opts->unwind_mb : UNWINDER_DEFAULT_MB,
				strerror(errno));
			goto out;
		}
	}
	if (slices__start(s) || start_http(s))
		goto out;
	/* After loading: what it costs is the ceiling's from here. */
	if (opts->max_cpu_pct > 0) {
		s->ceiling = ceiling__new(s->ev, opts->max_cpu_pct);
		if (!s->ceiling) {
			log_err("--max-cpu: setting up the ceiling failed: %s", strerror(errno));
			goto out;
		}
		service__govern(s, s->machine.recording);
	}
	ledger_pinned = claim_ledger(opts->socket_path, ledger_pin, sizeof(ledger_pin));
	start_cupti(s);

	log_info("xsprofd %s serving %s: sampling all CPUs at %u Hz, keeping %u s (at most %u "
		 "MiB)",
		 XSPROF_VERSION, opts->socket_path, opts->freq_hz, opts->window_s, opts->store_mb);
	if (s->ceiling)
		log_info("--max-cpu: xsprofd's cost held under %g%% of the machine, shedding work "
			 "when over it",
			 opts->max_cpu_pct);
	sd_notify(0, "READY=1");
	status__notify(s);

	err = sd_event_loop(s->ev);
	status = err < 0 ? 1 : 0;
	if (err < 0)
		log_err("event loop failed: %s", strerror(-err));
	/* What it counted, before the recording goes: the end-of-run report. */
	if (status__end_report(s) && !status)
		status = 1;
out:
	teardown(s, ledger_pinned ? ledger_pin : NULL);
	if (status == 0)
		log_info("stopped; all BPF programs detached");
	return status;
}
