// SPDX-License-Identifier: Apache-2.0
/*
 * The flight recorder in the service (flight.h): what feeds it (the window's slices, NVTX
 * ranges, waiting CUDA calls, exits, GPU figures), its timer and the writer's fd on the event
 * loop, and its API: GET/POST /v1/dumps, GET /v1/dumps/NAME[/FILE], GET/POST /v1/triggers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "daemon/base/clock.h"
#include "daemon/cuda/cuda_api.h"
#include "daemon/gpu/cupti_server.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/log.h"
#include "daemon/options.h"
#include "daemon/service/flight.h"
#include "daemon/service/gpu_metrics.h"
#include "daemon/service/internal.h"
#include "daemon/service/status_doc.h"
#include "daemon/session/dump.h"
#include "daemon/session/frozen.h"
#include "daemon/session/host_labels.h"
#include "daemon/session/pid_uids.h"
#include "daemon/session/recording.h"

#define FLIGHT_TICK_US (100 * 1000ull)

/* ---- what feeds it ---- */

struct uid_pick {
	struct pid_uids *uids;
	uint32_t uid;
};

static bool is_uid(void *ctx, uint32_t pid)
{
	const struct uid_pick *p = ctx;

	return pid_uids__get(p->uids, pid) == p->uid;
}

static const char *labels_of(void *ctx, uint32_t pid)
{
	const char *l = host_labels__of(ctx, pid);

	return l && strcmp(l, HOST_LABELS_NONE) ? l : NULL;
}

static void add_uid(uint32_t *v, size_t *n, size_t cap, uint32_t uid)
{
	for (size_t i = 0; i < *n; i++)
		if (v[i] == uid)
			return;
	if (*n < cap)
		v[(*n)++] = uid;
}

/* The window's slice, frozen once per user whose processes had GPU work in it. */
static void keep_slice(void *ctx, const struct profile_data *pd, struct pid_uids *uids,
		       const uint32_t *pids, size_t nr_pids)
{
	struct service *s = ctx;
	uint32_t v[64];
	size_t n = 0;

	for (size_t i = 0; i < nr_pids; i++)
		add_uid(v, &n, 64, pid_uids__get(uids, pids[i]));
	for (size_t i = 0; i < n; i++) {
		struct uid_pick pick = {.uids = uids, .uid = v[i]};
		/* One user: all of it, without a look at each record's process. */
		struct frozen_opts o = {.accept_pid = n > 1 ? is_uid : NULL,
					.ctx = &pick,
					.labels = labels_of,
					.labels_ctx = s->flight_labels,
					.uid = v[i],
					.start_ns = pd->start_ns,
					.end_ns = pd->end_ns};
		struct frozen *part;

		if (frozen__make(pd, &o, &part)) {
			s->flight_freeze_failed++;
			continue;
		}
		flight__keep(s->flight, part);
	}
}

/* The window's GPU figures: to the metrics, and to the gpu-idle triggers. */
static void on_figures(void *ctx, struct slice_out *out)
{
	struct service *s = ctx;

	for (size_t i = 0; i < out->nr_figures; i++) {
		const struct slice_gpu_figure *fg = &out->figures[i];
		const struct slice_proc *p = NULL;

		for (size_t k = 0; k < out->nr_procs && !p; k++)
			if (out->procs[k].pid == fg->pid)
				p = &out->procs[k];
		flight__on_gpu_figures(s->flight, fg->pid, p ? p->uid : 0, p ? p->comm : "",
				       fg->f.device, s->machine.slice_start_ns, clock__mono_ns(),
				       fg->f.busy_ns, fg->f.idle_ns);
	}
	gpu_metrics__add_slice(s->gpu_metrics, out);
}

static void on_range(void *ctx, const struct gpu_activity *a)
{
	struct service *s = ctx;

	flight__on_range(s->flight, a->pid, a->uid, a->name, a->start_ns, a->end_ns);
}

static uint32_t uid_of(uint32_t pid)
{
	uid_t uid = 0;
	uint64_t start;

	if (permissions__pid_identity((pid_t)pid, &uid, &start))
		return 0;
	return (uint32_t)uid;
}

static void on_cuda_wait(void *ctx, uint32_t tgid, uint32_t tid, unsigned int api,
			 uint64_t entry_ns, uint64_t return_ns)
{
	struct service *s = ctx;
	uint32_t uid = 0;

	/* A call's entry matters to a hang trigger only (its uid: a read of /proc). */
	if (!s->flight || (!return_ns && !flight__watches(s->flight, FLIGHT_HANG, "")))
		return;
	if (!return_ns && !flight__knows(s->flight, tgid, &uid))
		uid = uid_of(tgid);
	flight__on_wait(s->flight, tgid, tid, uid, cuda_api__name(api), entry_ns, return_ns);
}

static void on_scope(void *ctx, uint32_t tgid, uint32_t tid, const char *name, uint64_t start_ns,
		     uint64_t end_ns)
{
	struct service *s = ctx;
	uint32_t uid = 0;

	(void)tid;
	/* Every scope's end comes here: looked at only when a slow-step trigger watches it. */
	if (!s->flight || !flight__watches(s->flight, FLIGHT_SLOW_STEP, name))
		return;
	if (!flight__knows(s->flight, tgid, &uid))
		uid = uid_of(tgid);
	flight__on_range(s->flight, tgid, uid, name, start_ns, end_ns);
}

static int has_record(void *ctx, const struct gpu_activity *a)
{
	*(uint32_t *)ctx = a->uid;
	return 1; /* one is enough */
}

static void on_exit_signal(void *ctx, uint32_t tgid, uint64_t time_ns, int signal)
{
	struct service *s = ctx;
	uint32_t uid = UINT32_MAX;

	if (!s->flight)
		return;
	/* A process with GPU records still held is one with GPU work. */
	if (signal && s->cupti)
		gpu_store__for_each(cupti_server__store(s->cupti), tgid, has_record, &uid);
	flight__on_exit(s->flight, tgid, uid == UINT32_MAX ? 0 : uid, NULL, signal, time_ns,
			uid != UINT32_MAX);
}

void flight_api__recording_opts(struct service *s, struct recording_opts *ro)
{
	if (!s->flight)
		return;
	ro->on_exit = on_exit_signal;
	ro->on_cuda_wait = on_cuda_wait;
	ro->on_scope = on_scope;
	ro->on_new_process_ctx = s;
}

void flight_api__cupti_opts(struct service *s, struct cupti_server_opts *co)
{
	if (!s->flight)
		return;
	co->on_range = on_range;
	co->range_ctx = s;
}

/* ---- on the loop ---- */

struct open_ctx {
	struct service *s;
	uint64_t now;
};

static int open_range(void *ctx, const struct gpu_activity *a)
{
	struct open_ctx *o = ctx;

	flight__on_open_range(o->s->flight, a->pid, a->uid, a->tid, a->name, a->start_ns, o->now);
	return 0;
}

static int on_tick(sd_event_source *src, uint64_t usec, void *ctx)
{
	struct service *s = ctx;
	uint64_t now = clock__mono_ns();
	struct open_ctx oc = {.s = s, .now = now};

	(void)usec;
	flight__tick(s->flight, now);
	if (s->cupti && flight__watches_open_ranges(s->flight))
		gpu_store__for_each_open(cupti_server__store(s->cupti), 0, open_range, &oc);
	if (flight__next_due(s->flight) <= now) {
		/* The ring reaches now: the slice so far is closed (and frozen) first. */
		slices__close(s);
		flight__start_due(s->flight, clock__mono_ns());
	}
	sd_event_source_set_time_relative(src, FLIGHT_TICK_US);
	return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

static int on_written(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	struct service *s = ctx;

	(void)src;
	(void)fd;
	(void)revents;
	flight__reap(s->flight);
	return 0;
}

int flight_api__start(struct service *s)
{
	const struct xsprofd_opts *o = s->opts;
	char host[256] = "", msg[512];
	struct flight_opts fo = {
		.max_bytes = (size_t)o->flight_mb << 20,
		.max_age_ns = (uint64_t)o->flight_s * 1000000000ull,
		.dir = o->dump_dir,
		.keep = o->dump_keep,
		.keep_bytes = (uint64_t)o->dump_keep_mb << 20,
		.host = host,
	};
	int err;

	if (!o->flight_mb) {
		if (o->nr_triggers)
			log_warn("--trigger: the flight recorder is off (--flight-mb 0); no dumps");
		return 0;
	}
	gethostname(host, sizeof(host) - 1);
	s->flight = flight__new(&fo, msg, sizeof(msg));
	if (!s->flight) {
		log_err("the flight recorder: %s (--dump-dir; or --flight-mb 0 to turn it off)",
			msg);
		return -EINVAL;
	}
	for (int i = 0; i < o->nr_triggers; i++) {
		struct flight_rule r;

		if (flight_rule__parse(o->triggers[i], &r, msg, sizeof(msg)) ||
		    flight__add_rule(s->flight, &r, NULL)) {
			log_err("--trigger %s: %s", o->triggers[i], msg);
			return -EINVAL;
		}
	}
	s->flight_labels = host_labels__new(NULL, NULL, 0);
	if (!s->flight_labels)
		return -ENOMEM;
	s->machine.keep = keep_slice;
	s->machine.keep_ctx = s;
	s->machine.on_gpu_figures = on_figures;
	s->machine.figures_ctx = s;
	err = sd_event_add_time_relative(s->ev, &s->flight_timer, CLOCK_MONOTONIC, FLIGHT_TICK_US,
					 0, on_tick, s);
	if (err >= 0)
		err = sd_event_add_io(s->ev, &s->flight_io, flight__fd(s->flight), EPOLLIN,
				      on_written, s);
	if (err < 0) {
		log_err("the flight recorder: %s", strerror(-err));
		return err;
	}
	log_info("flight recorder: keeping the last %u s of GPU processes (at most %u MiB); %d "
		 "trigger%s; dumps in %s",
		 o->flight_s, o->flight_mb, o->nr_triggers, o->nr_triggers == 1 ? "" : "s",
		 o->dump_dir);
	return 0;
}

void flight_api__free(struct service *s)
{
	sd_event_source_disable_unref(s->flight_timer);
	sd_event_source_disable_unref(s->flight_io);
	flight__free(s->flight);
	host_labels__free(s->flight_labels);
	s->flight = NULL;
	s->flight_labels = NULL;
}

/* ---- the API ---- */

static bool sees_all(const struct req *q)
{
	return q->authed; /* root, or the TCP token's holder */
}

static enum MHD_Result off(struct MHD_Connection *c)
{
	return reply__error(c, 404, "the flight recorder is off",
			    "start xsprofd with --flight-mb N (it is on by default)");
}

/* A number of seconds from the body's key, in [0, max]; absent: def. */
static int body_seconds(struct json_object *body, const char *key, double def, double max,
			double *ret)
{
	struct json_object *v;

	*ret = def;
	if (!json_object_object_get_ex(body, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return -EINVAL;
	*ret = json_object_get_double(v);
	return *ret >= 0 && *ret <= max ? 0 : -EINVAL;
}

static enum MHD_Result request_dump(struct service *s, struct req *q, struct MHD_Connection *c)
{
	struct json_object *body = json_tokener_parse(q->body && q->len ? q->body : "{}"), *v, *o;
	double age = (double)s->opts->flight_s, before, after;
	const char *note = NULL;
	char name[FLIGHT_NAME_LEN], msg[200];
	uint64_t at = clock__mono_ns();
	int err;

	if (!body || !json_object_is_type(body, json_type_object)) {
		json_object_put(body);
		return reply__error(c, 400, "the body must be a JSON object",
				    "{\"before_s\": 60, \"after_s\": 0, \"note\": \"...\"}");
	}
	if (body_seconds(body, "before_s", age < 60 ? age : 60, age, &before) ||
	    body_seconds(body, "after_s", 0, 60, &after)) {
		json_object_put(body);
		snprintf(msg, sizeof(msg),
			 "before_s must be 0 to %.0f (the ring's reach, --flight-seconds) and "
			 "after_s 0 to 60",
			 age);
		return reply__error(c, 400, msg, NULL);
	}
	/* A moment of the wall clock (xsprofctl fleet --dump: the same on every host): within
	 * the ring's reach, and at most 60 s ahead. */
	if (json_object_object_get_ex(body, "at_unix_s", &v)) {
		double t = json_object_get_double(v);
		int64_t mono = (int64_t)(t * 1e9) - clock__realtime_offset_ns();

		if ((!json_object_is_type(v, json_type_double) &&
		     !json_object_is_type(v, json_type_int)) ||
		    !(t > 0) || mono <= 0 || (uint64_t)mono + 60000000000ull < clock__mono_ns() ||
		    (uint64_t)mono > clock__mono_ns() + 60000000000ull) {
			json_object_put(body);
			return reply__error(c, 400,
					    "at_unix_s must be a wall-clock time within the last "
					    "minute or the next",
					    NULL);
		}
		at = (uint64_t)mono;
	}
	if (json_object_object_get_ex(body, "note", &v)) {
		note = json_object_get_string(v);
		if (!json_object_is_type(v, json_type_string) || strlen(note) > 200) {
			json_object_put(body);
			return reply__error(c, 400, "note must be a string of at most 200 bytes",
					    NULL);
		}
	}
	err = flight__request(s->flight, q->uid, sees_all(q), before, after, note, at, name,
			      sizeof(name));
	json_object_put(body);
	if (err == -EAGAIN)
		return reply__error(c, 429,
				    "too many dumps asked for: at most 6 an hour and 2 pending for "
				    "a member (60 and 4 for root)",
				    "xsprofctl dumps lists the ones made");
	if (err)
		return reply__error(
			c, 503, err == -ENOSPC ? "16 dumps are pending already" : strerror(-err),
			NULL);
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "before_s", json_object_new_double(before));
	json_object_object_add(o, "after_s", json_object_new_double(after));
	json_object_object_add(
		o, "at_unix_s",
		json_object_new_double((double)((int64_t)at + clock__realtime_offset_ns()) / 1e9));
	json_object_object_add(
		o, "due_in_s",
		json_object_new_double(
			at + (uint64_t)(after * 1e9) > clock__mono_ns()
				? (double)(at + (uint64_t)(after * 1e9) - clock__mono_ns()) / 1e9
				: 0));
	return reply__json(c, 202, o);
}

static enum MHD_Result get_dump(struct service *s, struct req *q, struct MHD_Connection *c,
				const char *rest)
{
	char name[FLIGHT_NAME_LEN], path[PATH_MAX], error[200], file[PATH_MAX];
	const char *slash = strchr(rest, '/'), *state;
	size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
	struct stat sb;
	int fd;

	if (!len || len >= sizeof(name))
		return reply__error(c, 404, "no such dump", "xsprofctl dumps lists them");
	memcpy(name, rest, len);
	name[len] = '\0';
	state = flight__find(s->flight, name, q->uid, sees_all(q), path, sizeof(path), error,
			     sizeof(error));
	if (!state)
		return reply__error(c, 404, "no such dump (or not yours)",
				    "xsprofctl dumps lists them");
	if (!slash || !slash[1]) {
		struct json_object *o = json_object_new_object(), *m;

		json_object_object_add(o, "name", json_object_new_string(name));
		json_object_object_add(o, "state", json_object_new_string(state));
		if (error[0])
			json_object_object_add(o, "error", json_object_new_string(error));
		if (!strcmp(state, "done")) {
			m = snprintf(file, sizeof(file), "%s/manifest.json", path) <
					    (int)sizeof(file)
				    ? json_object_from_file(file)
				    : NULL;
			if (m)
				json_object_object_add(o, "manifest", m);
			json_object_object_add(o, "path", json_object_new_string(path));
		}
		return reply__json(c, 200, o);
	}
	if (!dump__content_type(slash + 1))
		return reply__error(c, 404, "a dump has no such file",
				    "manifest.json lists its files");
	if (strcmp(state, "done"))
		return reply__error(c, 409, "the dump is not written (yet)",
				    error[0] ? error : NULL);
	fd = snprintf(file, sizeof(file), "%s/%s", path, slash + 1) < (int)sizeof(file)
		     ? open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
		     : -1;
	if (fd < 0)
		return reply__error(c, 404, "this dump has no such file",
				    "manifest.json lists its files");
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return reply__error(c, 404, "this dump has no such file", NULL);
	}
	return reply__file(c, fd, (uint64_t)sb.st_size, dump__content_type(slash + 1));
}

enum MHD_Result flight_api__dumps(struct service *s, struct req *q, struct MHD_Connection *c,
				  const char *method, const char *rest)
{
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");

	if (!s->flight)
		return off(c);
	if (!*rest) {
		if (post)
			return request_dump(s, q, c);
		if (get)
			return reply__json(c, 200,
					   flight__list_json(s->flight, q->uid, sees_all(q)));
		return reply__error(c, 405, "use GET to list dumps, POST to ask for one", NULL);
	}
	if (*rest != '/' || !get)
		return reply__error(c, 405, "use GET for a dump", NULL);
	return get_dump(s, q, c, rest + 1);
}

enum MHD_Result flight_api__triggers(struct service *s, struct req *q, struct MHD_Connection *c,
				     const char *method)
{
	struct json_object *body, *v;
	char msg[256];
	int err;

	if (!s->flight)
		return off(c);
	if (!strcmp(method, "GET"))
		return reply__json(c, 200, flight__rules_json(s->flight));
	if (strcmp(method, "POST"))
		return reply__error(c, 405, "use GET to list triggers, POST to add or remove one",
				    NULL);
	if (!q->authed)
		return reply__error(c, 403, "only root sets triggers",
				    "a member may ask for a dump: xsprofctl dump");
	body = json_tokener_parse(q->body ? q->body : "");
	if (body && json_object_object_get_ex(body, "add", &v) &&
	    json_object_is_type(v, json_type_string)) {
		struct flight_rule r;
		unsigned int id;
		struct json_object *o;

		err = flight_rule__parse(json_object_get_string(v), &r, msg, sizeof(msg));
		json_object_put(body);
		if (err)
			return reply__error(c, 400, msg, "see xsprofd --help: --trigger");
		if (flight__add_rule(s->flight, &r, &id))
			return reply__error(c, 409, "8 triggers are set already",
					    "remove one first: xsprofctl triggers remove ID");
		o = json_object_new_object();
		json_object_object_add(o, "id", json_object_new_uint64(id));
		return reply__json(c, 201, o);
	}
	if (body && json_object_object_get_ex(body, "remove", &v) &&
	    json_object_is_type(v, json_type_int)) {
		int64_t id = json_object_get_int64(v);

		json_object_put(body);
		if (id <= 0 || id > UINT32_MAX || flight__remove_rule(s->flight, (unsigned)id))
			return reply__error(c, 404, "no trigger of that id", "xsprofctl triggers");
		return reply__json(c, 200, json_object_new_object());
	}
	json_object_put(body);
	return reply__error(c, 400, "the body must be {\"add\": SPEC} or {\"remove\": ID}", NULL);
}

struct json_object *flight_api__status(struct service *s)
{
	struct json_object *o;
	struct flight_stats st;

	if (!s->flight)
		return NULL;
	flight__stats(s->flight, &st);
	o = json_object_new_object();
	status_doc__add_u64(o, "ring_bytes", st.bytes);
	status_doc__add_u64(o, "ring_cap_bytes", (uint64_t)s->opts->flight_mb << 20);
	status_doc__add_u64(o, "ring_parts", st.parts);
	status_doc__add_u64(o, "ring_users", st.users);
	json_object_object_add(
		o, "ring_reach_s",
		json_object_new_double(
			st.oldest_ns ? (double)(clock__mono_ns() - st.oldest_ns) / 1e9 : 0));
	status_doc__add_u64(o, "evicted_cap", st.evicted_cap);
	status_doc__add_u64(o, "evicted_age", st.evicted_age);
	status_doc__add_u64(o, "freeze_failed", s->flight_freeze_failed);
	status_doc__add_u64(o, "tables_full", st.tables_full);
	status_doc__add_u64(o, "log_lines_held_back", st.log_lines_held_back);
	status_doc__add_u64(o, "dumps", st.dumps);
	status_doc__add_u64(o, "dump_bytes", st.dump_bytes);
	status_doc__add_u64(o, "dumps_pending", st.pending);
	status_doc__add_u64(o, "dumps_writing", st.writing);
	status_doc__add_u64(o, "dumps_failed", st.dumps_failed);
	status_doc__add_u64(o, "dumps_partial", st.dumps_partial);
	status_doc__add_u64(o, "dumps_removed", st.dumps_removed);
	{
		struct json_object *w = json_object_new_object(), *x = json_object_new_object();

		for (enum flight_kind k = 0; k < FLIGHT_NR_KINDS; k++) {
			char key[32];

			/* Metric-friendly keys: gpu_idle, slow_step. */
			flight_kind__key(k, key, sizeof(key));
			status_doc__add_u64(w, key, st.dumps_written[k]);
			status_doc__add_u64(x, key, st.suppressed[k]);
		}
		json_object_object_add(o, "dumps_by_trigger", w);
		json_object_object_add(o, "suppressed_by_trigger", x);
	}
	json_object_object_add(o, "dump_dir", json_object_new_string(s->opts->dump_dir));
	json_object_object_add(o, "triggers", flight__rules_json(s->flight));
	return o;
}
