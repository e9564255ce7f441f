// SPDX-License-Identifier: Apache-2.0
/* Recordings on request: POST /v1/recordings, GET /v1/recordings/ID. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <microhttpd.h>
#include <systemd/sd-event.h>

#include "bpf/xsprof_events.h"
#include "daemon/base/clock.h"
#include "daemon/base/sort.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/gpu/cupti_server.h"
#include "daemon/log.h"
#include "daemon/options.h"
#include "daemon/service/http.h"
#include "daemon/service/internal.h"
#include "daemon/service/status_doc.h"
#include "daemon/session/gpu_join.h"
#include "daemon/session/group_by.h"
#include "daemon/session/host_labels.h"
#include "daemon/session/job_keep.h"
#include "daemon/session/plan.h"
#include "daemon/session/profile.h"
#include "daemon/session/source.h"
#include "daemon/session/recording.h"
#include "output/analyses.h"
#include "output/model/calltree.h"
#include "output/output.h"
#include "output/model/profile.h"

/* The correlation strategies a session may ask for; their counters are kept per name. */
const char *const recordings__strategies[] = {"auto", "id", "timestamp", "stream"};

static int strategy_index(const char *name)
{
	for (int i = 0; i < NR_STRATEGIES; i++)
		if (name && !strcmp(name, recordings__strategies[i]))
			return i;
	return -1;
}

static struct svc_recording *recordings__find(struct service *s, unsigned int id)
{
	for (struct svc_recording *r = s->recordings; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

void recordings__wake_waiters(struct service *s, struct svc_recording *r)
{
	if (!r->nr_waiters)
		return;
	for (int i = 0; i < r->nr_waiters; i++)
		http__resume(r->waiters[i]);
	r->nr_waiters = 0;
	/* Resumed connections are only served when MHD runs again: run it now. */
	http_server__run(s->unix_http);
	http_server__run(s->tcp_http);
}

void recordings__launch_pids(struct svc_recording *r, const struct launch_event *ev, size_t n)
{
	size_t k = 0;

	free(r->launch_pids);
	r->nr_launch_pids = 0;
	r->launch_pids = malloc((n + r->nr_pids + 1) * sizeof(uint32_t));
	if (!r->launch_pids)
		return;
	for (int i = 0; i < r->nr_pids; i++)
		r->launch_pids[k++] = (uint32_t)r->pids[i];
	for (size_t i = 0; i < n; i++)
		if (!k || r->launch_pids[k - 1] != ev[i].tgid)
			r->launch_pids[k++] = ev[i].tgid;
	qsort(r->launch_pids, k, sizeof(uint32_t), cmp_u32);
	r->nr_launch_pids = k;
}

bool recordings__accepts(void *ctx, uint32_t pid)
{
	const struct svc_recording *r = ctx;

	if (!r->nr_pids)
		return true; /* whole machine */
	return r->launch_pids &&
	       bsearch(&pid, r->launch_pids, r->nr_launch_pids, sizeof(pid), cmp_u32);
}

/* What "job" and "rank" kept, in the log and the recording's note. */
static void keep_report(struct svc_recording *r)
{
	struct job_keep_stats ks;
	char what[192];

	job_keep__stats(r->keep, &ks);
	job_filter__describe(&r->job_filter, what, sizeof(what));
	log_info("recording %u: %s: kept %llu processes, left out %llu", r->id, what,
		 (unsigned long long)ks.kept, (unsigned long long)ks.left_out);
	if (!ks.kept && !r->note[0])
		snprintf(r->note, sizeof(r->note), "%.80s: no process was kept", what);
}

/* A stopped recording's profile in its format, into r->result. */
static int recordings__render(struct service *s, struct svc_recording *r, uint64_t *ret_samples)
{
	struct output_meta meta = {.unit = profile__unit_name(r->view.cpu_mode != SESSION_MODE_CPU
								      ? WEIGHT_US
								      : r->view.unit)};
	struct gpu_join_scope scope = {
		.accept_pid = recordings__accepts, .ctx = r, .since_ns = r->started_ns};
	struct cuda_probes *cp = recording__cuda(r->recording);
	const struct launch_store *ls = cp ? cuda_probes__store(cp) : NULL;
	struct output_analyses an = {0};
	struct session_profile sp;
	struct session_source src;
	char title[160];
	FILE *f;
	int err, si = strategy_index(r->view.strategy);

	/* What the processes sent before exiting is still queued. */
	cupti_server__drain(s->cupti, CUPTI_DRAIN_BATCHES);
	recordings__launch_pids(r, ls ? launch_store__events(ls) : NULL,
				ls ? launch_store__nr_events(ls) : 0);
	session_source__of_recording(&src, r->recording,
				     s->cupti ? cupti_server__store(s->cupti) : NULL);
	err = session_profile__build(&sp, &src, s->sym, &scope, &r->view,
				     &s->corr[si < 0 ? 0 : si]);
	snprintf(title, sizeof(title), "xsprof recording %u: %.1f s %s at %u Hz", r->id,
		 (r->finished_ns - r->started_ns) / 1e9,
		 r->view.cpu_mode == SESSION_MODE_OFFCPU ? "off-CPU time"
		 : r->view.cpu_mode == SESSION_MODE_WALL ? "wall time"
							 : "on-CPU samples",
		 r->freq_hz);
	meta.title = title;
	meta.cpu_mode =
		r->view.cpu_mode != SESSION_MODE_CPU ? session_mode__name(r->view.cpu_mode) : NULL;
	sp.pd.start_ns = r->started_ns;
	sp.pd.end_ns = r->finished_ns;
	sp.pd.realtime_offset_ns = clock__realtime_offset_ns();
	sp.pd.process_labels = r->labels ? host_labels__of : NULL;
	sp.pd.process_labels_ctx = r->labels;
	if (sp.timeline_dropped)
		log_warn("recording %u: %llu samples left off its trace (at most %u)", r->id,
			 (unsigned long long)sp.timeline_dropped, RECORD_MAX_TIMELINE);
	if (!err)
		err = output_analyses__build(&sp.pd, output_analyses__needs(r->format), &an);
	meta.an = &an;
	f = err ? NULL : open_memstream(&r->result, &r->result_len);
	if (!err)
		err = f ? output__write_profile(&sp.pd, r->format, f, &meta) : -errno;
	if (f && fclose(f) && !err)
		err = -EIO;
	output_analyses__release(&an);
	if (sp.tree)
		*ret_samples = calltree__total(sp.tree);
	if (sp.pd.nr_launches || sp.pd.nr_gpu)
		log_info("recording %u: %zu launches, %zu GPU records, %zu joined (%s)", r->id,
			 sp.pd.nr_launches, sp.pd.nr_gpu, sp.pd.nr_joins, r->view.strategy);
	if (r->keep)
		keep_report(r);
	session_profile__release(&sp);
	return err;
}

bool recordings__settle(struct svc_recording *r, int err, uint64_t now_ns)
{
	if (r->state != RECORDING_RUNNING)
		return false;
	r->finished_ns = now_ns;
	if (err) {
		r->state = RECORDING_FAILED;
		snprintf(r->error, sizeof(r->error), "building the profile failed: %s",
			 strerror(-err));
	} else {
		r->state = RECORDING_DONE;
	}
	return true;
}

void recordings__finish(struct service *s, struct svc_recording *r)
{
	uint64_t samples = 0;
	int err;

	if (r->state != RECORDING_RUNNING)
		return;
	recording__stop(r->recording);
	sd_event_source_disable_unref(r->end);
	sd_event_source_disable_unref(r->exit_watch);
	r->end = r->exit_watch = NULL;
	if (r->pidfd >= 0)
		close(r->pidfd);
	r->pidfd = -1;
	r->finished_ns = clock__mono_ns();
	err = recordings__render(s, r, &samples);
	if (recordings__settle(r, err, r->finished_ns) && !err)
		log_info("recording %u done: %llu samples", r->id, (unsigned long long)samples);
	{
		struct recording_stats rs;
		const __u64 *d = rs.owner.dropped;

		recording__stats(r->recording, &rs);
		r->left_out = rs.owner;
		r->lost = rs.bpf.drop_ringbuf;
		r->stalled_ns = rs.stalled_ns;
		if (r->lost || rs.stalls) {
			log_warn(
				"recording %u: %llu samples lost (ring buffer full); xsprofd did not "
				"run for %.1f s of it (%llu stalls: stopped, or starved)",
				r->id, (unsigned long long)r->lost, rs.stalled_ns / 1e9,
				(unsigned long long)rs.stalls);
			if (!r->note[0])
				snprintf(r->note, sizeof(r->note),
					 "%llu samples lost; xsprofd did not run for %.1f s of it",
					 (unsigned long long)r->lost, rs.stalled_ns / 1e9);
		}
		if (d[XSPROF_OWNER_SAMPLE] || d[XSPROF_OWNER_OFFCPU] || d[XSPROF_OWNER_CUDA_CALL] ||
		    d[XSPROF_OWNER_USDT])
			log_info(
				"recording %u: left out as not uid %u's: %llu samples, %llu off-CPU "
				"stretches, %llu CUDA calls, %llu launches (setuid programs its "
				"processes ran)",
				r->id, (unsigned int)r->owner,
				(unsigned long long)d[XSPROF_OWNER_SAMPLE],
				(unsigned long long)d[XSPROF_OWNER_OFFCPU],
				(unsigned long long)d[XSPROF_OWNER_CUDA_CALL],
				(unsigned long long)d[XSPROF_OWNER_USDT]);
	}
	/* Detach its BPF now; only the result is kept. */
	recording__free(r->recording);
	r->recording = NULL;
	free(r->launch_pids);
	r->launch_pids = NULL;
	/* Its processes' snapshots stay: the window may still name them in its open slice (it
	 * forgets what it named; exited ones go at the symbolizer's trim). */
	recordings__wake_waiters(s, r);
}

void recordings__free(struct svc_recording *r)
{
	recording__free(r->recording);
	group_by__free(r->view.groups);
	job_keep__free(r->keep);
	host_labels__free(r->labels);
	sd_event_source_disable_unref(r->end);
	sd_event_source_disable_unref(r->exit_watch);
	if (r->pidfd >= 0)
		close(r->pidfd);
	free(r->result);
	free(r->launch_pids);
	free(r);
}

void recordings__prune(struct service *s)
{
	recordings__prune_at(s, clock__mono_ns());
}

void recordings__prune_at(struct service *s, uint64_t now)
{
	struct svc_recording **pp = &s->recordings;
	int kept = 0;

	/* Newest first: past the caps, older results go, and one user's only push out its own. */
	while (*pp) {
		struct svc_recording *r = *pp;
		int mine = 0;
		bool old;

		for (struct svc_recording *o = s->recordings; o != r; o = o->next)
			mine += o->state != RECORDING_RUNNING && !o->owner_root && !r->owner_root &&
				o->owner == r->owner;
		old = r->state != RECORDING_RUNNING &&
		      (now - r->finished_ns > FINISHED_KEEP_S * 1000000000ull ||
		       kept >= MAX_FINISHED || mine >= FINISHED_PER_UID);

		if (old && !r->nr_waiters) {
			*pp = r->next;
			recordings__free(r);
			continue;
		}
		if (r->state != RECORDING_RUNNING)
			kept++;
		pp = &r->next;
	}
}

static int recordings__on_timer(sd_event_source *src, uint64_t usec, void *ctx)
{
	struct recording_ctx *rc = ctx;

	recordings__finish(rc->s, rc->r);
	return 0;
}

static int recordings__on_exit(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	struct recording_ctx *rc = ctx;

	log_info("recording %u: process %d exited", rc->r->id, (int)rc->r->pids[0]);
	recordings__finish(rc->s, rc->r);
	return 0;
}

enum recording_cap recordings__cap(const struct svc_recording *list, uid_t uid, bool root,
				   double duration_s, unsigned int max_record_s,
				   unsigned int *ret_mine, double *ret_seconds)
{
	unsigned int all = 0, mine = 0;
	double seconds = duration_s;

	for (const struct svc_recording *r = list; r; r = r->next) {
		if (r->state != RECORDING_RUNNING)
			continue;
		all++;
		if (!r->owner_root && r->owner == uid) {
			mine++;
			seconds += r->duration_s;
		}
	}
	*ret_mine = mine;
	*ret_seconds = seconds;
	if (all >= MAX_RECORDINGS || (!root && all >= MAX_RECORDINGS - RECORDINGS_ROOT_SLOTS))
		return RECORDING_CAP_FULL;
	if (root)
		return RECORDING_CAP_OK;
	if (mine >= RECORDINGS_PER_UID)
		return RECORDING_CAP_UID;
	return seconds > max_record_s ? RECORDING_CAP_UID_SECONDS : RECORDING_CAP_OK;
}

bool recordings__allowed(struct service *s, struct req *q, double duration_s,
			 struct MHD_Connection *c, enum MHD_Result *ret)
{
	unsigned int mine;
	double seconds;
	char msg[200];

	switch (recordings__cap(s->recordings, q->uid, q->authed, duration_s, s->opts->max_record_s,
				&mine, &seconds)) {
	case RECORDING_CAP_FULL:
		s->refused.recordings_full++;
		*ret = reply__error(c, 429, "too many recordings running",
				    "wait for one to finish (xsprofctl status lists them)");
		return false;
	case RECORDING_CAP_UID:
		s->refused.recordings_uid++;
		snprintf(msg, sizeof(msg),
			 "you already have %u recordings running (at most %u per user)", mine,
			 RECORDINGS_PER_UID);
		*ret = reply__error(c, 429, msg, "wait for one to finish");
		return false;
	case RECORDING_CAP_UID_SECONDS:
		s->refused.record_seconds_uid++;
		snprintf(msg, sizeof(msg),
			 "your running recordings would add up to %.0f s, over %u s per user",
			 seconds, s->opts->max_record_s);
		*ret = reply__error(c, 429, msg, "record for less time, or wait for one to finish");
		return false;
	case RECORDING_CAP_OK:
		break;
	}
	return permissions__start_allowed(s, q, c, ret);
}

/* children, gpu_mode, weight and correlate of a request (all optional) into r. */
static int recordings__parse_view(struct json_object *body, struct svc_recording *r, char *msg,
				  size_t size)
{
	struct json_object *v;
	const char *str;

	r->children = true;
	r->view.strategy = "auto";
	r->view.freq_hz = r->freq_hz;
	if (body && json_object_object_get_ex(body, "children", &v))
		r->children = json_object_get_boolean(v);
	if (body && json_object_object_get_ex(body, "gpu_mode", &v)) {
		str = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		if (profile__mode_from_name(str, &r->view.mode)) {
			snprintf(msg, size, "gpu_mode must be cpu, gpu or merged");
			return -EINVAL;
		}
		r->view.mode_set = true;
	}
	if (body && json_object_object_get_ex(body, "weight", &v)) {
		str = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		if (profile__unit_from_name(str, &r->view.unit)) {
			snprintf(msg, size, "weight must be samples or us");
			return -EINVAL;
		}
	}
	if (body && json_object_object_get_ex(body, "correlate", &v)) {
		int i = strategy_index(
			json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "");

		if (i < 0) {
			snprintf(msg, size, "correlate must be auto, id, timestamp or stream");
			return -EINVAL;
		}
		r->view.strategy = recordings__strategies[i];
	}
	if (body && json_object_object_get_ex(body, "mode", &v)) {
		str = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		if (session_mode__from_name(str, &r->view.cpu_mode)) {
			snprintf(msg, size, "mode must be cpu, offcpu or wall");
			return -EINVAL;
		}
	}
	if (body && json_object_object_get_ex(body, "group_by", &v)) {
		str = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		if (session_group__from_name(str, &r->view.group_by)) {
			snprintf(
				msg, size,
				"group_by must be unit, container, comm, rank, job, range or outer-range");
			return -EINVAL;
		}
		/* Ranges are matched sample by sample; off-CPU stretches are not kept so. */
		if (session_group__is_range(r->view.group_by) &&
		    r->view.cpu_mode != SESSION_MODE_CPU) {
			snprintf(msg, size, "group_by %s works with mode cpu", str);
			return -EINVAL;
		}
	}
	if (body && json_object_object_get_ex(body, "range_domain", &v))
		return recordings__set_range_domain(
			r,
			json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "",
			msg, size);
	return 0;
}

int recordings__set_range_domain(struct svc_recording *r, const char *domain, char *msg,
				 size_t size)
{
	if (!session_group__is_range(r->view.group_by) || !*domain ||
	    strlen(domain) >= sizeof(r->range_domain)) {
		snprintf(msg, size,
			 "range_domain goes with group_by range or outer-range: an NVTX domain's "
			 "name (default: NVTX's default domain; xsprof: the scopes), at most %zu "
			 "bytes",
			 sizeof(r->range_domain) - 1);
		return -EINVAL;
	}
	snprintf(r->range_domain, sizeof(r->range_domain), "%s", domain);
	r->view.range_domain = r->range_domain;
	return 0;
}

int recordings__set_job_filter(struct svc_recording *r, const char *job, const char *rank,
			       char *msg, size_t size)
{
	if (job && job_filter__set_job(&r->job_filter, job)) {
		snprintf(msg, size, "job must be %s", JOB_FILTER_JOB_HELP);
		return -EINVAL;
	}
	if (rank && job_filter__set_ranks(&r->job_filter, rank)) {
		snprintf(msg, size, "rank must be %s", JOB_FILTER_RANK_HELP);
		return -EINVAL;
	}
	return 0;
}

/* "job": "ID" and "rank": "LIST" (strings) into r. 0, or -EINVAL with msg. */
static int parse_job_filter(struct json_object *body, struct svc_recording *r, char *msg,
			    size_t size)
{
	struct json_object *v;
	const char *job = NULL, *rank = NULL;

	/* Anything but a string is refused as an empty one is. */
	if (body && json_object_object_get_ex(body, "job", &v))
		job = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	if (body && json_object_object_get_ex(body, "rank", &v))
		rank = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	return recordings__set_job_filter(r, job, rank, msg, size);
}

/* "pids": [...] into r. 0, or -EINVAL with msg. */
static int parse_pids(struct json_object *body, struct svc_recording *r, char *msg, size_t size)
{
	struct json_object *v;

	if (!body || !json_object_object_get_ex(body, "pids", &v))
		return 0;
	if (!json_object_is_type(v, json_type_array) ||
	    json_object_array_length(v) > MAX_REQUEST_PIDS) {
		snprintf(msg, size, "pids must be an array of at most %d process ids",
			 MAX_REQUEST_PIDS);
		return -EINVAL;
	}
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		struct json_object *p = json_object_array_get_idx(v, i);
		int64_t pid = json_object_get_int64(p);

		if (!json_object_is_type(p, json_type_int) || pid <= 0 || pid > INT32_MAX) {
			snprintf(msg, size, "pids must be positive integers");
			return -EINVAL;
		}
		r->pids[r->nr_pids++] = (pid_t)pid;
	}
	return 0;
}

int recordings__parse_body(struct service *s, struct json_object *body, struct svc_recording *r,
			   bool *ret_until_exit, char *msg, size_t size, const char **ret_hint)
{
	const char *fmt = "folded";
	struct json_object *v;
	int err;

	r->freq_hz = XSPROFD_ONESHOT_FREQ;
	r->duration_s = 10;
	*ret_until_exit = false;
	if (body && json_object_object_get_ex(body, "duration_s", &v)) {
		r->duration_s = json_object_get_double(v);
		if (!json_object_is_type(v, json_type_int) &&
		    !json_object_is_type(v, json_type_double))
			r->duration_s = -1;
	}
	if (body && json_object_object_get_ex(body, "freq_hz", &v))
		r->freq_hz = json_object_is_type(v, json_type_int) ? json_object_get_int(v) : 0;
	if (body && json_object_object_get_ex(body, "format", &v))
		fmt = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	if (body && json_object_object_get_ex(body, "until_exit", &v))
		*ret_until_exit = json_object_get_boolean(v);
	err = recordings__parse_view(body, r, msg, size);
	if (!err)
		err = parse_pids(body, r, msg, size);
	if (!err)
		err = parse_job_filter(body, r, msg, size);
	if (err)
		return err;
	/* NaN compares false with everything: only a finite number in range passes. */
	if (!isfinite(r->duration_s) || !(r->duration_s > 0) ||
	    r->duration_s > s->opts->max_record_s) {
		snprintf(msg, size, "duration_s must be a finite number of seconds in (0, %u]",
			 s->opts->max_record_s);
		*ret_hint = "the daemon's --max-record sets the limit";
		return -EINVAL;
	}
	if (r->freq_hz < 1 || r->freq_hz > 10000) {
		snprintf(msg, size, "freq_hz must be 1..10000");
		return -EINVAL;
	}
	if (output__format_from_name(fmt, &r->format) ||
	    !output__format_allowed(r->format, OUTPUT_IN_RECORDING)) {
		/* The hint outlives this call (the caller answers with it): static, as its
		 * constant strings are. */
		static char hint[192];
		char list[160];

		snprintf(msg, size, "unknown format");
		snprintf(hint, sizeof(hint), "use %s",
			 output__format_list(OUTPUT_IN_RECORDING, false, list, sizeof(list)));
		*ret_hint = hint;
		return -EINVAL;
	}
	if (*ret_until_exit && r->nr_pids != 1) {
		snprintf(msg, size, "until_exit needs exactly one pid");
		return -EINVAL;
	}
	return 0;
}

/*
 * A user's recording that names a process no longer the user's (permissions__still_owns) ends
 * at once: what was recorded before is theirs, the note says why.
 */
void recordings__recheck_owners(struct service *s)
{
	for (struct svc_recording *r = s->recordings; r; r = r->next) {
		if (r->state != RECORDING_RUNNING || r->owner_root)
			continue;
		for (int i = 0; i < r->nr_pids; i++) {
			if (permissions__still_owns(r->owner, r->pids[i], r->pid_starts[i]))
				continue;
			s->refused.ended_owner_changed++;
			log_warn(
				"recording %u: process %d is no longer uid %u's (a setuid exec, or "
				"its pid reused): recording ended",
				r->id, (int)r->pids[i], (unsigned int)r->owner);
			snprintf(r->note, sizeof(r->note),
				 "ended early: process %d changed owner or was replaced",
				 (int)r->pids[i]);
			recordings__finish(s, r);
			break;
		}
	}
}
/* A new process of a recording: its group (--group-by) and its job and rank (the job report)
 * read while it runs. */
static void note_process(void *ctx, uint32_t tgid)
{
	struct svc_recording *r = ctx;

	if (r->view.groups)
		group_by__note(r->view.groups, tgid);
	if (r->labels)
		host_labels__of(r->labels, tgid);
}

void recordings__note_exec(struct service *s, uint32_t tgid)
{
	/* Read again only where it was read: execs anywhere on the machine come here. */
	for (struct svc_recording *r = s->recordings; r; r = r->next)
		if (r->state == RECORDING_RUNNING && host_labels__forget(r->labels, tgid))
			host_labels__of(r->labels, tgid);
}

/* Its recording, its end (a timer; the process's exit with until_exit), started. */
static int recordings__start(struct service *s, struct svc_recording *r, struct recording_ctx *rc,
			     bool until_exit, char *msg, size_t size)
{
	struct session_plan_base base;
	struct session_plan plan;
	const char *what;
	int err;

	session_plan_base__of_flags(s->opts, s->unwinder, &base);
	base.pids = r->pids;
	base.nr_pids = r->nr_pids;
	base.children = r->children;
	/* The whole machine: the CUDA libraries the window probes (--cuda-lib) too. */
	base.cuda_libs = r->nr_pids ? NULL : s->opts->cuda_libs;
	base.nr_cuda_libs = r->nr_pids ? 0 : s->opts->nr_cuda_libs;
	base.offcpu_min_ns = 10000; /* off-CPU and wall recordings: 10 us minimum block */
	/* A member's recording: only their own threads, whatever its processes run. */
	base.only_uid = !r->owner_root;
	base.uid = (uint32_t)r->owner;
	base.max_timeline = RECORD_MAX_TIMELINE;
	/* "job" and "rank": its ctx, the job_keep, once the labels it reads are there. */
	r->view.keep = job_filter__on(&r->job_filter) ? job_keep__accepts : NULL;
	session_plan__of(&r->view, &base, &r->format, 1, &plan);
	/* --group-by: each process's unit or container read while it runs. */
	if (plan.groups && !(r->view.groups = group_by__new(r->view.group_by))) {
		snprintf(msg, size, "out of memory");
		return -ENOMEM;
	}
	/* The job report, "job" and "rank": each process's place in its job, from its
	 * environment. (pprof's frame sites are the service's, always kept.) */
	if (plan.labels && !(r->labels = host_labels__new(NULL, NULL, 0))) {
		snprintf(msg, size, "out of memory");
		return -ENOMEM;
	}
	if (r->view.keep) {
		r->keep = job_keep__new(&r->job_filter, r->labels);
		if (!r->keep) {
			snprintf(msg, size, "out of memory");
			return -ENOMEM;
		}
		r->view.keep_ctx = r->keep;
	}
	/* The callbacks are the recording's own. */
	plan.ro.on_new_process = r->view.groups || r->labels ? note_process : NULL;
	plan.ro.on_new_process_ctx = r;

	r->recording = recording__new(s->ev, &plan.ro, s->sym, &what);
	if (!r->recording) {
		snprintf(msg, size, "%s failed: %s", what, strerror(errno));
		return -errno;
	}
	rc->s = s;
	rc->r = r;
	if (until_exit) {
		r->pidfd = (int)syscall(SYS_pidfd_open, r->pids[0], 0);
		err = r->pidfd < 0 ? -errno
				   : sd_event_add_io(s->ev, &r->exit_watch, r->pidfd, EPOLLIN,
						     recordings__on_exit, rc);
		if (err) {
			snprintf(msg, size, "watching pid %d failed: %s", (int)r->pids[0],
				 strerror(-err));
			return err;
		}
	}
	err = recording__start(r->recording);
	/* Its end counts from its start, by the clock: not from the loop's time, which is as old
	 * as this request's turn of the loop, and loading the programs can take seconds (a
	 * busy or emulated machine; the kernel matrix's guests), which would end it at once. */
	if (!err)
		err = sd_event_add_time(s->ev, &r->end, CLOCK_MONOTONIC,
					clock__mono_ns() / 1000 + (uint64_t)(r->duration_s * 1e6),
					0, recordings__on_timer, rc);
	if (err) {
		snprintf(msg, size, "starting the recording failed: %s", strerror(-err));
		recording__stop(r->recording);
	} else {
		service__govern(s, r->recording);
	}
	return err;
}

/* A started recording into the service's list, owned by the requester; rc now belongs to r. */
static void recordings__register(struct service *s, struct svc_recording *r,
				 struct recording_ctx *rc, struct req *q)
{
	(void)rc;
	/* The timer and watch hold rc; it lives as long as r (freed with the daemon). */
	sd_event_source_set_destroy_callback(r->end, free);
	r->id = ++s->next_id;
	r->owner = q->uid;
	r->owner_root = q->authed;
	r->started_ns = clock__mono_ns();
	r->next = s->recordings;
	s->recordings = r;
}

/*
 * A parsed request r made a running recording: the caller may profile its processes, they
 * exist, the caps allow it, it starts and is registered (rc then belongs to it). False with
 * the error replied through *ret.
 */
bool recordings__admit(struct service *s, struct req *q, struct MHD_Connection *c,
		       struct svc_recording *r, struct recording_ctx *rc, bool until_exit,
		       enum MHD_Result *ret)
{
	char msg[200];

	if (!permissions__may_profile(q, c, r->pids, r->nr_pids, ret))
		return false;
	for (int i = 0; i < r->nr_pids; i++) {
		uid_t owner;

		if (permissions__pid_identity(r->pids[i], &owner, &r->pid_starts[i])) {
			snprintf(msg, sizeof(msg), "no such process: %d", (int)r->pids[i]);
			*ret = reply__error(c, 404, msg, "check the pid with ps");
			return false;
		}
	}
	recordings__prune(s);
	if (!recordings__allowed(s, q, r->duration_s, c, ret))
		return false;
	/* Whose it is, before it starts: a member's samples only that member's threads. */
	r->owner = q->uid;
	r->owner_root = q->authed;
	if (recordings__start(s, r, rc, until_exit, msg, sizeof(msg))) {
		*ret = reply__error(c, 500, msg, "see the daemon's journal");
		return false;
	}
	recordings__register(s, r, rc, q);
	return true;
}

void recordings__discard(struct svc_recording *r, struct recording_ctx *rc)
{
	if (r) {
		/* rc is freed here, not by the end timer that may hold it. */
		if (r->end)
			sd_event_source_set_destroy_callback(r->end, NULL);
		recordings__free(r);
	}
	free(rc);
}

void recordings__park(struct req *q, struct MHD_Connection *c, struct svc_recording *r)
{
	r->waiters[r->nr_waiters++] = c;
	q->waiting = r;
	http__suspend(c, r->started_ns + (uint64_t)(r->duration_s * 1e9) +
				 WAIT_GRACE_S * 1000000000ull);
}

enum MHD_Result recordings__api_start(struct service *s, struct req *q, struct MHD_Connection *c)
{
	struct json_object *body = NULL, *out;
	struct svc_recording *r = NULL;
	struct recording_ctx *rc = NULL;
	enum MHD_Result ret;
	const char *hint = NULL;
	bool until_exit = false;
	char msg[200];

	if (q->len) {
		body = json_tokener_parse(q->body);
		if (!body || !json_object_is_type(body, json_type_object)) {
			json_object_put(body);
			return reply__error(c, 400, "the body is not a JSON object",
					    "send e.g. {\"duration_s\": 10, \"pids\": [1234]}");
		}
	}
	r = calloc(1, sizeof(*r));
	rc = calloc(1, sizeof(*rc));
	if (!r || !rc) {
		ret = reply__error(c, 500, "out of memory", NULL);
		goto out;
	}
	r->pidfd = -1;
	if (recordings__parse_body(s, body, r, &until_exit, msg, sizeof(msg), &hint)) {
		ret = reply__error(c, 400, msg, hint);
		goto out;
	}
	if (!recordings__admit(s, q, c, r, rc, until_exit, &ret))
		goto out;
	rc = NULL;
	log_info("recording %u started: %s, %g s at %u Hz, for uid %u", r->id,
		 r->nr_pids ? "selected processes" : "whole machine", r->duration_s, r->freq_hz,
		 (unsigned int)q->uid);
	out = json_object_new_object();
	status_doc__add_u64(out, "id", r->id);
	json_object_object_add(out, "duration_s", json_object_new_double(r->duration_s));
	json_object_object_add(out, "until_exit", json_object_new_boolean(until_exit));
	r = NULL;
	ret = reply__json(c, 201, out);
out:
	recordings__discard(r, rc);
	json_object_put(body);
	return ret;
}

enum MHD_Result recordings__api_result(struct service *s, struct req *q, struct MHD_Connection *c,
				       const char *id_str)
{
	char *end;
	unsigned long id = strtoul(id_str, &end, 10);
	struct svc_recording *r = *end || !*id_str ? NULL : recordings__find(s, (unsigned int)id);

	if (!r)
		return reply__error(c, 404, "no such recording",
				    "recordings are kept 5 minutes after they end");
	if (!q->authed && r->owner != q->uid)
		return reply__error(c, 403, "that recording belongs to another user", NULL);
	if (r->state == RECORDING_RUNNING) {
		if (r->nr_waiters == MAX_WAITERS)
			return reply__error(c, 429, "too many clients waiting on this recording",
					    NULL);
		recordings__park(q, c, r);
		return MHD_YES;
	}
	if (r->state == RECORDING_FAILED)
		return reply__error(c, 500, r->error, "see the daemon's journal");
	return reply__send(c, 200, reply__content_type(r->format), r->result, r->result_len);
}
