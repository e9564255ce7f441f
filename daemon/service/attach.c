// SPDX-License-Identifier: Apache-2.0
/*
 * Attachments: a lasting profile of one process tree (POST /v1/attach), at its own frequency,
 * with its CUDA launches joined to their GPU work every slice; fetched any time through
 * GET /v1/profile?pid=N, ended by POST /v1/detach. One that exits is kept until it is fetched
 * or its window has aged out.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <json-c/json.h>
#include <microhttpd.h>
#include <systemd/sd-event.h>

#include "daemon/base/clock.h"
#include "daemon/gpu/cupti_server.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/log.h"
#include "daemon/options.h"
#include "daemon/probes/sampler.h"
#include "daemon/service/http.h"
#include "daemon/service/internal.h"
#include "daemon/service/status_doc.h"
#include "daemon/session/lasting.h"
#include "daemon/session/plan.h"
#include "daemon/session/report_window.h"
#include "daemon/session/window.h"
#include "daemon/session/recording.h"
#include "daemon/session/session_mode.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "output/model/calltree.h"
#include "output/output.h"
#include "output/model/profile.h"

/*
 * An attach loads its BPF sampler (~0.1 s of verification) on a thread of its own, so the
 * loop goes on answering (root's status among others) meanwhile; the request waits, parked,
 * and is answered when the load is done. The attachment holds its slot from the start.
 */
struct attach_job {
	struct service *s;
	struct attachment *a; /* NULL once it went (detached, or the daemon stopping) */
	struct req *q;	      /* the waiting request; NULL once it went */
	struct MHD_Connection *conn;
	struct recording_opts ro;
	struct unwinder_maps um;
	struct sampler_opts sopts;
	struct sampler *sampler; /* the thread's result */
	int err;
	pthread_t thread;
	bool joined;
	int efd;
	sd_event_source *done_src;
};

/* Start deadline for the parked request: the load takes well under a second. */
#define ATTACH_WAIT_NS (30ull * 1000000000)

static void *attach_load(void *arg)
{
	struct attach_job *j = arg;
	uint64_t one = 1;

	j->sampler = sampler__new(&j->sopts, NULL, NULL);
	j->err = j->sampler ? 0 : -errno;
	if (write(j->efd, &one, sizeof(one)) < 0)
		j->err = j->err ? j->err : -errno;
	return NULL;
}

static void job_free(struct attach_job *j)
{
	if (!j)
		return;
	if (!j->joined)
		pthread_join(j->thread, NULL);
	sampler__free(j->sampler);
	sd_event_source_disable_unref(j->done_src);
	close(j->efd);
	free(j);
}

static struct attachment *find_attachment(struct service *s, pid_t pid)
{
	for (int i = 0; i < s->nr_attached; i++)
		if (s->attached[i]->pid == pid)
			return s->attached[i];
	return NULL;
}

static void attachment_free(struct attachment *a)
{
	if (!a)
		return;
	sd_event_source_disable_unref(a->exit_watch);
	if (a->pidfd >= 0)
		close(a->pidfd);
	lasting__release(&a->prof);
	free(a);
}

static void remove_attachment(struct service *s, struct attachment *a)
{
	for (int i = 0; i < s->nr_attached; i++) {
		if (s->attached[i] != a)
			continue;
		if (a->job) {
			/* Still loading (the daemon is stopping): wait for the thread. */
			struct attach_job *j = a->job;

			if (j->q) {
				j->q->attach = NULL;
				j->q->attach_done = true;
				j->q->attach_status = 503;
			}
			job_free(j);
			a->job = NULL;
		}
		s->attached[i] = s->attached[--s->nr_attached];
		/* Its root's snapshot stays: the window may still name it in its open slice. */
		attachment_free(a);
		return;
	}
}

static void close_one(struct service *s, struct attachment *a, uint64_t end)
{
	struct gpu_store *gs = s->cupti ? cupti_server__store(s->cupti) : NULL;

	lasting__close_slice(&a->prof, s->sym, gs, NULL, &s->corr[0], end);
}

/* The last slice, then the sampler goes: what was recorded stays until fetched or aged out. */
static void end_attachment(struct service *s, struct attachment *a, const char *why)
{
	struct gpu_store *gs = s->cupti ? cupti_server__store(s->cupti) : NULL;

	if (a->ended_ns)
		return;
	/* Sampling stops first: what is queued is read and the scopes still open end now. */
	recording__stop(a->prof.recording);
	if (s->cupti)
		cupti_server__drain(s->cupti, CUPTI_DRAIN_BATCHES);
	lasting__close_last(&a->prof, s->sym, gs, NULL, &s->corr[0], clock__mono_ns());
	lasting__stop(&a->prof);
	sd_event_source_disable_unref(a->exit_watch);
	a->exit_watch = NULL;
	if (a->pidfd >= 0)
		close(a->pidfd);
	a->pidfd = -1;
	a->ended_ns = clock__mono_ns();
	snprintf(a->note, sizeof(a->note), "%s", why);
	log_info("%s ended: %s; kept until fetched or %u s old", a->name, why, s->opts->window_s);
}

static int on_attached_exit(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	struct attachment *a = ctx;

	end_attachment(a->svc, a, "the process exited");
	return 0;
}

void attachments__close_slices(struct service *s, const struct gpu_store *gs, uint64_t end)
{
	for (int i = 0; i < s->nr_attached;) {
		struct attachment *a = s->attached[i];

		lasting__close_slice(&a->prof, s->sym, gs, NULL, &s->corr[0], end);
		/* Ended and nobody came for it: gone once its window would have forgotten it. */
		if (a->ended_ns && end - a->ended_ns > s->opts->window_s * 1000000000ull) {
			log_info("%s: dropped, not fetched within %u s of its end", a->name,
				 s->opts->window_s);
			s->refused.attach_dead_pruned++;
			remove_attachment(s, a);
			continue;
		}
		i++;
	}
}

uint64_t attachments__oldest_slice(struct service *s, uint64_t cutoff)
{
	for (int i = 0; i < s->nr_attached; i++) {
		const struct lasting *l = &s->attached[i]->prof;
		uint64_t oldest = lasting__oldest_ns(l);

		if (l->recording && oldest < cutoff)
			cutoff = oldest;
	}
	return cutoff;
}

/* A user's process that is no longer theirs (setuid exec, pid reused): its attachment ends. */
void attachments__recheck(struct service *s)
{
	for (int i = 0; i < s->nr_attached; i++) {
		struct attachment *a = s->attached[i];

		/* (An exited process's exit watch ends its attachment.) */
		if (a->by_root || a->ended_ns || permissions__still_owns(a->by, a->pid, a->start))
			continue;
		s->refused.detached_owner_changed++;
		end_attachment(s, a, "the process changed owner or was replaced");
	}
}

struct json_object *attachments__json(struct service *s)
{
	struct json_object *arr = json_object_new_array();
	uint64_t now = clock__mono_ns();

	for (int i = 0; i < s->nr_attached; i++) {
		const struct attachment *a = s->attached[i];
		struct json_object *o = json_object_new_object();
		struct window_stats cs, gs;
		struct report_window_stats rs;
		struct xsprof_owner_stats lo;

		window__stats(a->prof.cpu, &cs);
		window__stats(a->prof.gpu, &gs);
		report_window__stats(a->prof.reports, &rs);
		status_doc__add_u64(o, "pid", (uint64_t)a->pid);
		status_doc__add_u64(o, "uid", a->by);
		status_doc__add_u64(o, "freq_hz", a->prof.freq_hz);
		json_object_object_add(o, "children", json_object_new_boolean(a->children));
		json_object_object_add(o, "state",
				       json_object_new_string(a->job	    ? "starting"
							      : a->ended_ns ? "ended"
									    : "running"));
		if (a->ended_ns)
			json_object_object_add(o, "note", json_object_new_string(a->note));
		status_doc__add_u64(o, "age_s", (now - a->attached_ns) / 1000000000ull);
		status_doc__add_u64(o, "samples", cs.samples);
		status_doc__add_u64(o, "slices", cs.slices + gs.slices);
		status_doc__add_u64(o, "bytes", cs.bytes + gs.bytes + rs.bytes);
		status_doc__add_u64(o, "gpu_reports", rs.reports);
		status_doc__add_u64(o, "dropped_slices", cs.dropped_slices + gs.dropped_slices);
		if (a->prof.group_by) {
			json_object_object_add(
				o, "group_by",
				json_object_new_string(session_group__name(a->prof.group_by)));
			if (a->prof.range_domain[0])
				json_object_object_add(
					o, "range_domain",
					json_object_new_string(a->prof.range_domain));
			status_doc__add_u64(o, "range_dropped", a->prof.range_dropped);
		}
		lasting__left_out(&a->prof, &lo);
		status_doc__add_left_out(o, &lo);
		json_object_array_add(arr, o);
	}
	return arr;
}

/* "group_by": "range" or "outer-range", and "range_domain": what the windows are grouped by. */
static int parse_group(struct json_object *body, struct attachment *a, char *msg, size_t size)
{
	struct json_object *v;
	const char *str;

	if (json_object_object_get_ex(body, "group_by", &v)) {
		str = json_object_get_string(v);
		if (session_group__from_name(str ? str : "", &a->prof.group_by) ||
		    !session_group__is_range(a->prof.group_by)) {
			snprintf(
				msg, size,
				"an attachment's group_by is range or outer-range (unit, container "
				"and comm: a recording's)");
			return -EINVAL;
		}
	}
	if (json_object_object_get_ex(body, "range_domain", &v)) {
		str = json_object_get_string(v);
		if (!a->prof.group_by || !str || !*str ||
		    strlen(str) >= sizeof(a->prof.range_domain)) {
			snprintf(msg, size,
				 "range_domain goes with group_by range or outer-range: an NVTX "
				 "domain's name, at most %zu bytes",
				 sizeof(a->prof.range_domain) - 1);
			return -EINVAL;
		}
		snprintf(a->prof.range_domain, sizeof(a->prof.range_domain), "%s", str);
	}
	return 0;
}

/* {"pid": N, "freq_hz": HZ, "children": bool, "group_by": G, "range_domain": D}: all but pid
 * optional. */
static int parse_attach_body(struct req *q, struct attachment *a, char *msg, size_t size)
{
	struct json_object *body = json_tokener_parse(q->body ? q->body : ""), *v;
	int64_t n;
	int err = -EINVAL;

	a->prof.freq_hz = XSPROFD_ONESHOT_FREQ;
	a->children = true;
	snprintf(msg, size,
		 "expected {\"pid\": N} (optional: \"freq_hz\", \"children\", \"group_by\", "
		 "\"range_domain\")");
	if (!body || !json_object_is_type(body, json_type_object) ||
	    !json_object_object_get_ex(body, "pid", &v) || !json_object_is_type(v, json_type_int))
		goto out;
	n = json_object_get_int64(v);
	if (n <= 0 || n > INT32_MAX)
		goto out;
	a->pid = (pid_t)n;
	if (json_object_object_get_ex(body, "freq_hz", &v)) {
		n = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
		if (n < 1 || n > 10000) {
			snprintf(msg, size, "freq_hz must be 1..10000");
			goto out;
		}
		a->prof.freq_hz = (unsigned int)n;
	}
	if (json_object_object_get_ex(body, "children", &v))
		a->children = json_object_get_boolean(v);
	if (parse_group(body, a, msg, size))
		goto out;
	err = 0;
out:
	json_object_put(body);
	return err;
}

/* Caps: in all, per user, and slots only root may take. 0, or an error already replied. */
static bool attach_allowed(struct service *s, struct req *q, struct MHD_Connection *c,
			   enum MHD_Result *ret)
{
	int users = 0, mine = 0;
	char msg[160];

	for (int j = 0; j < s->nr_attached; j++) {
		users += !s->attached[j]->by_root;
		mine += !s->attached[j]->by_root && s->attached[j]->by == q->uid;
	}
	if (!q->authed && mine >= ATTACHED_PER_UID) {
		s->refused.attach_uid++;
		snprintf(msg, sizeof(msg),
			 "you already have %d processes attached (at most %d per user)", mine,
			 ATTACHED_PER_UID);
		*ret = reply__error(c, 429, msg, "detach some first (xsprofctl status lists them)");
		return false;
	}
	if (s->nr_attached == MAX_ATTACHED ||
	    (!q->authed && users >= MAX_ATTACHED - ATTACHED_ROOT_SLOTS)) {
		s->refused.attach_full++;
		*ret = reply__error(c, 429, "too many attached processes",
				    "detach some first (xsprofctl status lists them)");
		return false;
	}
	return permissions__start_allowed(s, q, c, ret);
}

/*
 * The recording an attachment runs: its own sampler on the process tree, at its frequency,
 * grouped as asked, keeping each slice's samples for its GPU reports (and, grouped by range,
 * for the ranges).
 */
static void attachment_opts(struct service *s, const struct attachment *a,
			    struct recording_opts *ret)
{
	const struct session_view view = {
		.freq_hz = a->prof.freq_hz,
		.cpu_mode = SESSION_MODE_CPU,
		.group_by = a->prof.group_by,
	};
	static const enum output_format reports = OUTPUT_GPU_REPORT;
	struct session_plan_base base;
	struct session_plan plan;

	session_plan_base__of_flags(s->opts, s->unwinder, &base);
	base.pids = &a->pid;
	base.nr_pids = 1;
	base.children = a->children;
	/* A member's: only their own threads (as recordings). */
	base.only_uid = !a->by_root;
	base.uid = (uint32_t)a->by;
	base.max_timeline = ATTACH_MAX_TIMELINE;
	session_plan__of(&view, &base, &reports, 1, &plan);
	*ret = plan.ro;
}

/* Windows like the service's (before the sampler: the attachment is listed meanwhile). */
static int attachment_windows(struct attachment *a, struct service *s)
{
	struct window_opts wo = {.window_s = s->opts->window_s,
				 .cap_bytes = (size_t)ATTACH_WINDOW_MB << 20};

	snprintf(a->name, sizeof(a->name), "pid %d's attachment", (int)a->pid);
	a->prof.name = a->name;
	a->prof.root_pid = a->pid;
	a->prof.cpu = window__new(&wo);
	a->prof.gpu = window__new(&wo);
	wo.cap_bytes = REPORT_WINDOW_BYTES(wo.cap_bytes);
	a->prof.reports = report_window__new(&wo);
	return a->prof.cpu && a->prof.gpu && a->prof.reports ? 0 : -ENOMEM;
}

/* Its recording on the sampler loaded (taken over), an exit watch, started. */
static int attachment_start(struct service *s, struct attachment *a, struct sampler *sampler,
			    const char **ret_what)
{
	struct recording_opts ro;
	int err;

	attachment_opts(s, a, &ro);
	/* Loaded on the job's thread: only this caller has it. */
	ro.sampler = sampler;
	a->prof.recording = recording__new(s->ev, &ro, s->sym, ret_what);
	if (!a->prof.recording)
		return -errno;
	*ret_what = "watching it for its exit";
	a->pidfd = (int)syscall(SYS_pidfd_open, a->pid, 0);
	if (a->pidfd < 0)
		return -errno;
	err = sd_event_add_io(s->ev, &a->exit_watch, a->pidfd, EPOLLIN, on_attached_exit, a);
	if (err)
		return err;
	*ret_what = "starting its sampler";
	err = recording__start(a->prof.recording);
	if (err)
		return err;
	service__govern(s, a->prof.recording);
	a->prof.slice_start_ns = a->attached_ns = clock__mono_ns();
	a->prof.seen_seq = s->cupti ? gpu_store__last_seq(cupti_server__store(s->cupti)) : 0;
	/* Map it now: its names survive it exiting. */
	symbolizer__add_process(s->sym, a->pid);
	return 0;
}

/* The sampler loaded: the attachment starts, the waiting request gets its answer. */
static int on_job_done(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	struct attach_job *j = ctx;
	struct attachment *a = j->a;
	struct service *s = j->s;
	struct json_object *out = NULL;
	const char *what = "loading its BPF sampler";
	unsigned int status = 200;
	char msg[240];
	int err = j->err;

	pthread_join(j->thread, NULL);
	j->joined = true;
	if (a) {
		a->job = NULL;
		if (!err) {
			err = attachment_start(s, a, j->sampler, &what);
			j->sampler = NULL; /* taken over */
		}
		if (err) {
			status = 500;
			snprintf(msg, sizeof(msg), "attaching pid %d failed while %s: %s",
				 (int)a->pid, what, strerror(-err));
			log_warn("%s", msg);
			remove_attachment(s, a);
			out = json_object_new_object();
			json_object_object_add(out, "error", json_object_new_string(msg));
			json_object_object_add(out, "hint",
					       json_object_new_string("see the daemon's journal"));
		} else {
			log_info("attached pid %d at %u Hz%s%s%s, for uid %u", (int)a->pid,
				 a->prof.freq_hz, a->children ? " with its descendants" : "",
				 a->prof.group_by ? ", grouped by " : "",
				 session_group__name(a->prof.group_by), (unsigned int)a->by);
			out = json_object_new_object();
			status_doc__add_u64(out, "pid", (uint64_t)a->pid);
			json_object_object_add(out, "attached", json_object_new_boolean(true));
			status_doc__add_u64(out, "freq_hz", a->prof.freq_hz);
			json_object_object_add(out, "children",
					       json_object_new_boolean(a->children));
			if (a->prof.group_by)
				json_object_object_add(out, "group_by",
						       json_object_new_string(session_group__name(
							       a->prof.group_by)));
			json_object_object_add(out, "cuda",
					       json_object_new_boolean(
						       recording__cuda(a->prof.recording) != NULL));
		}
	}
	if (j->q) {
		j->q->attach = NULL;
		j->q->attach_done = true;
		j->q->attach_status = out ? status : 503;
		j->q->attach_body =
			out ? strdup(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY))
			    : NULL;
		http__resume(j->conn);
		/* Resumed connections are only served when MHD runs again: run it now. */
		http_server__run(s->unix_http);
		http_server__run(s->tcp_http);
	}
	json_object_put(out);
	job_free(j);
	return 0;
}

/* Load a's sampler on a thread; q waits for it. */
static int attach_begin(struct service *s, struct req *q, struct MHD_Connection *c,
			struct attachment *a)
{
	struct attach_job *j = calloc(1, sizeof(*j));
	int err;

	if (!j)
		return -ENOMEM;
	j->s = s;
	j->a = a;
	j->q = q;
	j->conn = c;
	j->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (j->efd < 0) {
		err = -errno;
		free(j);
		return err;
	}
	attachment_opts(s, a, &j->ro);
	if (s->unwinder)
		unwinder__maps(s->unwinder, &j->um);
	recording__sampler_opts(&j->ro, s->unwinder ? &j->um : NULL, &j->sopts);
	j->joined = true; /* until the thread exists */
	err = sd_event_add_io(s->ev, &j->done_src, j->efd, EPOLLIN, on_job_done, j);
	if (!err)
		err = -pthread_create(&j->thread, NULL, attach_load, j);
	if (!err)
		j->joined = false;
	if (err) {
		sd_event_source_disable_unref(j->done_src);
		close(j->efd);
		free(j);
		return err;
	}
	a->job = j;
	q->attach = j;
	return 0;
}

enum MHD_Result attachments__reply(struct req *q, struct MHD_Connection *c)
{
	if (q->attach) /* the wait's deadline came first */
		return reply__error(c, 503, "the attach did not finish in time",
				    "xsprofctl status shows whether it started");
	q->attach_done = false;
	if (!q->attach_body)
		return reply__error(c, 503, "the daemon is stopping", NULL);
	return reply__send(c, q->attach_status, "application/json", q->attach_body,
			   strlen(q->attach_body));
}

void attachments__forget(struct req *q)
{
	if (q->attach) {
		q->attach->q = NULL;
		q->attach = NULL;
	}
}

static enum MHD_Result attach(struct service *s, struct req *q, struct MHD_Connection *c,
			      struct attachment *a)
{
	struct json_object *out;
	enum MHD_Result ret;
	const char *what = "";
	uid_t owner = 0;
	char msg[200];
	int err;

	if (!permissions__may_profile(q, c, &a->pid, 1, &ret))
		return ret;
	if (permissions__pid_identity(a->pid, &owner, &a->start)) {
		snprintf(msg, sizeof(msg), "no such process: %d", (int)a->pid);
		return reply__error(c, 404, msg, "check the pid with ps");
	}
	if (find_attachment(s, a->pid))
		return reply__error(c, 409, "that process is already attached",
				    "detach it first to attach it with other settings");
	if (!attach_allowed(s, q, c, &ret))
		return ret;
	a->svc = s;
	a->by = q->uid;
	a->by_root = q->authed;
	a->pidfd = -1;
	err = attachment_windows(a, s);
	if (!err)
		err = attach_begin(s, q, c, a);
	if (err) {
		snprintf(msg, sizeof(msg), "attaching pid %d failed while %s: %s", (int)a->pid,
			 err == -ENOMEM ? "keeping its window" : "starting its sampler's load",
			 strerror(-err));
		return reply__error(c, 500, msg, "see the daemon's journal");
	}
	/* Listed (its slot held) while its sampler loads; the request waits for it. */
	s->attached[s->nr_attached++] = a;
	http__suspend(c, clock__mono_ns() + ATTACH_WAIT_NS);
	(void)out;
	(void)what;
	return MHD_YES;
}

enum MHD_Result attachments__api_attach(struct service *s, struct req *q, struct MHD_Connection *c,
					bool attaching)
{
	struct attachment *a = calloc(1, sizeof(*a)), *old;
	struct json_object *out;
	pid_t pid;
	enum MHD_Result ret;
	char msg[160];

	if (!a)
		return reply__error(c, 500, "out of memory", NULL);
	a->pidfd = -1;
	if (parse_attach_body(q, a, msg, sizeof(msg))) {
		free(a);
		return reply__error(c, 400, msg, NULL);
	}
	if (attaching) {
		ret = attach(s, q, c, a);
		if (find_attachment(s, a->pid) != a)
			attachment_free(a);
		return ret;
	}
	old = find_attachment(s, a->pid);
	free(a);
	if (!old)
		return reply__error(c, 404, "that pid is not attached", NULL);
	if (!q->authed && (old->by_root || old->by != q->uid))
		return reply__error(c, 403, "another user attached that process", NULL);
	if (old->job)
		return reply__error(c, 409, "that process is being attached",
				    "try again in a moment");
	pid = old->pid;
	remove_attachment(s, old);
	log_info("detached pid %d", (int)pid);
	out = json_object_new_object();
	status_doc__add_u64(out, "pid", (uint64_t)pid);
	json_object_object_add(out, "attached", json_object_new_boolean(false));
	return reply__json(c, 200, out);
}

struct attachment *attachments__to_read(struct service *s, struct req *q, struct MHD_Connection *c,
					const char *pid_str, enum MHD_Result *ret)
{
	struct attachment *a;
	unsigned long pid;
	char *end;

	errno = 0;
	pid = strspn(pid_str, "0123456789") == strlen(pid_str) ? strtoul(pid_str, &end, 10) : 0;
	if (errno || !pid || pid > INT32_MAX) {
		*ret = reply__error(c, 400, "pid must be a process id", NULL);
		return NULL;
	}
	a = find_attachment(s, (pid_t)pid);
	if (!a) {
		*ret = reply__error(c, 404, "that process is not attached",
				    "attach it first: xsprofctl attach PID; or record it: "
				    "xsprofctl record --pid PID");
		return NULL;
	}
	if (!q->authed && (a->by_root || a->by != q->uid)) {
		*ret = reply__error(c, 403, "another user attached that process", NULL);
		return NULL;
	}
	/* Exited, its exit not read yet: ended now, its last slices whole. */
	if (a->pidfd >= 0 && poll(&(struct pollfd){.fd = a->pidfd, .events = POLLIN}, 1, 0) > 0)
		end_attachment(s, a, "the process exited");
	/* Include the slice being recorded. */
	if (a->prof.recording) {
		if (s->cupti)
			cupti_server__drain(s->cupti, CUPTI_DRAIN_BATCHES);
		close_one(s, a, clock__mono_ns());
	}
	return a;
}

/* GET /v1/profile?pid=N: the attachment's slices in [since_ns, until_ns), in format f. */
/* Whether the attachment's windows answer group (none: the plain view of any). */
static bool group_answered(const struct attachment *a, enum session_group group,
			   struct MHD_Connection *c, enum MHD_Result *ret)
{
	char msg[200];

	if (!group || group == a->prof.group_by)
		return true;
	if (!a->prof.group_by)
		snprintf(msg, sizeof(msg), "pid %d's attachment is not grouped by %s", (int)a->pid,
			 session_group__name(group));
	else
		snprintf(msg, sizeof(msg), "pid %d's attachment is grouped by %s, not %s",
			 (int)a->pid, session_group__name(a->prof.group_by),
			 session_group__name(group));
	*ret = reply__error(c, 400, msg,
			    "an attachment groups as it was attached: detach it and attach it "
			    "again with --group-by range or outer-range");
	return false;
}

enum MHD_Result attachments__api_profile(struct service *s, struct req *q, struct MHD_Connection *c,
					 const char *pid_str, uint64_t since_ns, uint64_t until_ns,
					 enum gpu_mode mode, enum weight_unit unit,
					 enum session_group group, enum output_format f)
{
	struct output_meta meta = {.unit = profile__unit_name(unit)};
	struct calltree *tree;
	struct attachment *a;
	char title[200], *buf = NULL;
	uint64_t from = 0, now;
	size_t len = 0;
	enum MHD_Result ret;
	FILE *out;
	int err;

	a = attachments__to_read(s, q, c, pid_str, &ret);
	if (!a || !group_answered(a, group, c, &ret))
		return ret;
	now = clock__mono_ns();
	if (reply__is_report(f)) {
		/* Whoever may read the attachment reads all of it (a member's has only theirs). */
		ret = reply__gpu_report(c, &a->prof, since_ns, until_ns, true, 0, f,
					a->ended_ns ? a->ended_ns : now);
		goto fetched;
	}
	tree = calltree__new();
	err = tree ? lasting__query(&a->prof, since_ns, until_ns, mode, unit, true, 0, tree, &from)
		   : -ENOMEM;
	/* Asked without its group: the plain view, the range level gone. */
	if (!err && a->prof.group_by && !group)
		err = lasting__drop_root(&tree);
	snprintf(title, sizeof(title), "xsprof: pid %d%s, %.0f s at %u Hz%s", (int)a->pid,
		 a->children ? " and its descendants" : "", from ? (now - from) / 1e9 : 0.0,
		 a->prof.freq_hz, a->ended_ns ? " (ended)" : "");
	meta.title = title;
	out = err ? NULL : open_memstream(&buf, &len);
	if (!err && !out)
		err = -errno;
	if (!err)
		err = reply__write_tree(tree, f, out, &meta, a->prof.freq_hz, unit, from, now,
					symbolizer__sites(s->sym));
	if (out && fclose(out) && !err)
		err = -EIO;
	calltree__free(tree);
	if (err) {
		free(buf);
		return reply__error(c, 500, "building the profile failed", strerror(-err));
	}
	ret = reply__span(c, reply__content_type(f), buf, len, from,
			  a->ended_ns ? a->ended_ns : now);
	free(buf);
fetched:
	/* Fetched after it ended: nothing more will come, so it goes now. */
	if (a->ended_ns && ret == MHD_YES) {
		log_info("%s fetched after its end: dropped", a->name);
		remove_attachment(s, a);
	}
	return ret;
}

void attachments__free(struct service *s)
{
	while (s->nr_attached)
		remove_attachment(s, s->attached[0]);
}
