// SPDX-License-Identifier: Apache-2.0
/*
 * Recordings on request alone (daemon/service/recordings.c compiled in, the HTTP answers and
 * the permission checks replaced by recorders): a request's fields, their defaults and every
 * refusal; the caps on running recordings; a recording's states (running, done, failed) and
 * what GET /v1/recordings/ID answers in each; which finished ones are let go; and which
 * processes' GPU records a recording of processes takes.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <microhttpd.h>
#include <systemd/sd-event.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cuda/launch_store.h"
#include "daemon/options.h"
#include "daemon/service/internal.h"
#include "daemon/session/recording.h"
#include "output/output.h"

static struct {
	unsigned int status;
	char error[256], hint[256];
	const char *type;
	char body[64];
	unsigned int suspended, resumed;
	uint64_t deadline_ns;
} answer;

enum MHD_Result reply__error(struct MHD_Connection *c, unsigned int status, const char *error,
			     const char *hint)
{
	(void)c;
	answer.status = status;
	snprintf(answer.error, sizeof(answer.error), "%s", error);
	snprintf(answer.hint, sizeof(answer.hint), "%s", hint ? hint : "");
	return MHD_YES;
}

enum MHD_Result reply__send(struct MHD_Connection *c, unsigned int status, const char *type,
			    const void *body, size_t len)
{
	(void)c;
	answer.status = status;
	answer.type = type;
	snprintf(answer.body, sizeof(answer.body), "%.*s", (int)len, (const char *)body);
	return MHD_YES;
}

enum MHD_Result reply__json(struct MHD_Connection *c, unsigned int status, struct json_object *j)
{
	(void)c;
	answer.status = status;
	json_object_put(j);
	return MHD_YES;
}

const char *reply__content_type(enum output_format f)
{
	return output__format_info(f)->content_type;
}

void http__suspend(struct MHD_Connection *c, uint64_t deadline_ns)
{
	(void)c;
	answer.suspended++;
	answer.deadline_ns = deadline_ns;
}

void http__resume(struct MHD_Connection *c)
{
	(void)c;
	answer.resumed++;
}

void http_server__run(struct http_server *s)
{
	(void)s;
}

/* Every process exists and is the caller's; the budget always allows: the caps alone. */
bool permissions__may_profile(struct req *q, struct MHD_Connection *c, const pid_t *pids, int n,
			      enum MHD_Result *ret)
{
	(void)q, (void)c, (void)pids, (void)n, (void)ret;
	return true;
}

int permissions__pid_identity(pid_t pid, uid_t *ret_uid, uint64_t *ret_start)
{
	(void)pid;
	*ret_uid = 0;
	*ret_start = 1;
	return 0;
}

bool permissions__start_allowed(struct service *s, struct req *q, struct MHD_Connection *c,
				enum MHD_Result *ret)
{
	(void)s, (void)q, (void)c, (void)ret;
	return true;
}

bool permissions__still_owns(uid_t uid, pid_t pid, uint64_t start)
{
	(void)uid, (void)pid, (void)start;
	return true;
}

/* --max-cpu's ceiling (service.c): none here. */
void service__govern(struct service *s, struct recording *r)
{
	(void)s, (void)r;
}

static struct xsprofd_opts opts = {.max_record_s = 600};

/* A request body's fields into a fresh recording: 0, or the refusal in msg (and *hint). */
static int parse(const char *json, struct svc_recording *r, bool *until_exit, char *msg,
		 const char **hint)
{
	struct service s = {.opts = &opts};
	struct json_object *body = json ? json_tokener_parse(json) : NULL;
	int err;

	cr_assert(!json || body, "bad test JSON: %s", json);
	memset(r, 0, sizeof(*r));
	*hint = NULL;
	msg[0] = '\0';
	err = recordings__parse_body(&s, body, r, until_exit, msg, 200, hint);
	json_object_put(body);
	return err;
}

Test(recordings_request, defaults)
{
	struct svc_recording r;
	const char *hint;
	bool until_exit = true;
	char msg[200];

	cr_assert_eq(parse(NULL, &r, &until_exit, msg, &hint), 0, "%s", msg);
	cr_expect_eq(r.duration_s, 10);
	cr_expect_eq(r.freq_hz, XSPROFD_ONESHOT_FREQ);
	cr_expect_eq(r.format, OUTPUT_FOLDED);
	cr_expect(r.children, "descendants are followed unless asked not to");
	cr_expect_str_eq(r.view.strategy, "auto");
	cr_expect_eq(r.view.freq_hz, XSPROFD_ONESHOT_FREQ);
	cr_expect_eq(r.nr_pids, 0, "the whole machine");
	cr_expect_not(until_exit);

	cr_assert_eq(
		parse("{\"duration_s\": 2.5, \"freq_hz\": 49, \"pids\": [7],"
		      "\"until_exit\": true, \"children\": false, \"correlate\": \"stream\","
		      "\"mode\": \"cpu\", \"group_by\": \"range\", \"range_domain\": \"xsprof\"}",
		      &r, &until_exit, msg, &hint),
		0, "%s", msg);
	cr_expect_eq(r.duration_s, 2.5);
	cr_expect_eq(r.freq_hz, 49);
	cr_expect_eq(r.nr_pids, 1);
	cr_expect_eq(r.pids[0], 7);
	cr_expect(until_exit);
	cr_expect_not(r.children);
	cr_expect_str_eq(r.view.strategy, "stream");
	cr_expect_str_eq(r.view.range_domain, "xsprof");
	cr_expect_not(job_filter__on(&r.job_filter), "no job or rank: every process");

	/* "job" and "rank": only those processes, both together. */
	cr_assert_eq(parse("{\"job\": \"xsjob-compute\", \"rank\": \"0,2-3\"}", &r, &until_exit,
			   msg, &hint),
		     0, "%s", msg);
	cr_expect_str_eq(r.job_filter.job, "xsjob-compute");
	cr_assert_eq(r.job_filter.nr_ranks, 3);
	cr_expect_eq(r.job_filter.ranks[2], 3);
	cr_expect(job_filter__matches(&r.job_filter, "job.id=xsjob-compute\x1fjob.rank=2"));
	cr_expect_not(job_filter__matches(&r.job_filter, "job.id=xsjob-compute\x1fjob.rank=1"));
}

/* Each bad field: 400's words, the field named, and what to send instead. */
Test(recordings_request, refusals_name_the_field)
{
	static const struct {
		const char *body, *says;
	} bad[] = {
		{"{\"duration_s\": 0}",
		 "duration_s must be a finite number of seconds in (0, 600]"},
		{"{\"duration_s\": -1}", "duration_s must be"},
		{"{\"duration_s\": 601}", "duration_s must be"},
		{"{\"duration_s\": \"10\"}", "duration_s must be"},
		{"{\"freq_hz\": 0}", "freq_hz must be 1..10000"},
		{"{\"freq_hz\": 10001}", "freq_hz must be 1..10000"},
		{"{\"freq_hz\": 99.5}", "freq_hz must be 1..10000"},
		{"{\"pids\": 5}", "pids must be an array of at most 64 process ids"},
		{"{\"pids\": [0]}", "pids must be positive integers"},
		{"{\"pids\": [\"1\"]}", "pids must be positive integers"},
		{"{\"pids\": [4294967296]}", "pids must be positive integers"},
		{"{\"until_exit\": true}", "until_exit needs exactly one pid"},
		{"{\"until_exit\": true, \"pids\": [1, 2]}", "until_exit needs exactly one pid"},
		{"{\"gpu_mode\": \"both\"}", "gpu_mode must be cpu, gpu or merged"},
		{"{\"weight\": 3}", "weight must be samples or us"},
		{"{\"correlate\": \"guess\"}", "correlate must be auto, id, timestamp or stream"},
		{"{\"mode\": \"idle\"}", "mode must be cpu, offcpu or wall"},
		{"{\"group_by\": \"host\"}",
		 "group_by must be unit, container, comm, rank, job, range"},
		{"{\"mode\": \"offcpu\", \"group_by\": \"range\"}",
		 "group_by range works with mode cpu"},
		{"{\"range_domain\": \"d\"}",
		 "range_domain goes with group_by range or outer-range"},
		{"{\"group_by\": \"range\", \"range_domain\": \"\"}", "range_domain goes with"},
		{"{\"job\": \"\"}", "job must be a job id as its launcher set it"},
		{"{\"job\": 1234}", "job must be a job id"},
		{"{\"job\": \"a\\nb\"}", "job must be a job id"},
		{"{\"rank\": \"\"}", "rank must be ranks and ranges by commas, like 0,2-3 (at most "
				     "64 ranks)"},
		{"{\"rank\": 1}", "rank must be ranks and ranges"},
		{"{\"rank\": \"0-64\"}", "rank must be ranks and ranges"},
		{"{\"rank\": \"1,,2\"}", "rank must be ranks and ranges"},
		{"{\"rank\": \"3-1\"}", "rank must be ranks and ranges"},
	};
	struct svc_recording r;
	const char *hint;
	bool until_exit;
	char msg[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(parse(bad[i].body, &r, &until_exit, msg, &hint), -EINVAL, "%s passed",
			     bad[i].body);
		cr_expect(strstr(msg, bad[i].says), "%s: '%s', not '%s'", bad[i].body, msg,
			  bad[i].says);
	}
	/* The duration's limit is the daemon's: the hint says which flag sets it. */
	parse("{\"duration_s\": 601}", &r, &until_exit, msg, &hint);
	cr_expect(hint && strstr(hint, "--max-record"), "%s", hint ? hint : "(none)");
	/* An unknown format lists the ones a recording gives. */
	cr_expect_eq(parse("{\"format\": \"gif\"}", &r, &until_exit, msg, &hint), -EINVAL);
	cr_expect_str_eq(msg, "unknown format");
	cr_assert_not_null(hint);
	cr_expect(strstr(hint, "use ") && strstr(hint, "folded") && strstr(hint, "pprof"), "%s",
		  hint);
	/* A pid list at its cap passes; one more does not. */
	{
		char body[1024] = "{\"pids\": [1";

		for (int i = 2; i <= MAX_REQUEST_PIDS; i++)
			snprintf(body + strlen(body), sizeof(body) - strlen(body), ", %d", i);
		strcat(body, "]}");
		cr_expect_eq(parse(body, &r, &until_exit, msg, &hint), 0, "%s", msg);
		cr_expect_eq(r.nr_pids, MAX_REQUEST_PIDS);
		strcpy(body + strlen(body) - 2, ", 65]}");
		cr_expect_eq(parse(body, &r, &until_exit, msg, &hint), -EINVAL);
	}
}

static struct svc_recording *rec(enum recording_state state, uid_t owner, bool root,
				 double duration_s, struct svc_recording *next)
{
	struct svc_recording *r = calloc(1, sizeof(*r));

	cr_assert_not_null(r);
	r->state = state;
	r->owner = owner;
	r->owner_root = root;
	r->duration_s = duration_s;
	r->pidfd = -1;
	r->next = next;
	return r;
}

static void free_list(struct svc_recording *r)
{
	while (r) {
		struct svc_recording *next = r->next;

		recordings__free(r);
		r = next;
	}
}

Test(recordings_caps, running_recordings_are_capped)
{
	struct svc_recording *list = NULL;
	unsigned int mine;
	double seconds;

	cr_expect_eq(recordings__cap(NULL, 1000, false, 10, 600, &mine, &seconds),
		     RECORDING_CAP_OK);
	cr_expect_eq(mine, 0);
	cr_expect_eq(seconds, 10);
	/* A member's: at most RECORDINGS_PER_UID, their seconds together under the limit. */
	list = rec(RECORDING_RUNNING, 1000, false, 300, list);
	cr_expect_eq(recordings__cap(list, 1000, false, 300, 600, &mine, &seconds),
		     RECORDING_CAP_OK);
	cr_expect_eq(recordings__cap(list, 1000, false, 301, 600, &mine, &seconds),
		     RECORDING_CAP_UID_SECONDS);
	cr_expect_eq(mine, 1);
	cr_expect_eq(seconds, 601);
	/* Another member's seconds are theirs; finished recordings count for nobody. */
	cr_expect_eq(recordings__cap(list, 1001, false, 600, 600, &mine, &seconds),
		     RECORDING_CAP_OK);
	list = rec(RECORDING_DONE, 1000, false, 300, list);
	list = rec(RECORDING_FAILED, 1000, false, 300, list);
	cr_expect_eq(recordings__cap(list, 1000, false, 10, 600, &mine, &seconds),
		     RECORDING_CAP_OK);
	list = rec(RECORDING_RUNNING, 1000, false, 1, list);
	cr_expect_eq(recordings__cap(list, 1000, false, 1, 600, &mine, &seconds),
		     RECORDING_CAP_UID);
	cr_expect_eq(mine, RECORDINGS_PER_UID);
	/* Root has no per-user caps, and root's own recordings count for no member. */
	cr_expect_eq(recordings__cap(list, 1000, true, 600, 600, &mine, &seconds),
		     RECORDING_CAP_OK);
	list = rec(RECORDING_RUNNING, 1000, true, 600, list);
	cr_expect_eq(recordings__cap(list, 1002, false, 1, 600, &mine, &seconds),
		     RECORDING_CAP_FULL, "the last slot is root's");
	cr_expect_eq(recordings__cap(list, 0, true, 1, 600, &mine, &seconds), RECORDING_CAP_OK);
	list = rec(RECORDING_RUNNING, 0, true, 1, list);
	cr_expect_eq(recordings__cap(list, 0, true, 1, 600, &mine, &seconds), RECORDING_CAP_FULL,
		     "MAX_RECORDINGS run");
	free_list(list);
}

/* Each refusal is counted and said with its figures (429). */
Test(recordings_caps, refusals_are_said_and_counted)
{
	struct service s = {.opts = &opts};
	struct req member = {.uid = 1000};
	enum MHD_Result ret;

	s.recordings = rec(RECORDING_RUNNING, 1000, false, 500, NULL);
	cr_expect_not(recordings__allowed(&s, &member, 200, NULL, &ret));
	cr_expect_eq(answer.status, 429);
	cr_expect_str_eq(answer.error,
			 "your running recordings would add up to 700 s, over 600 s per user");
	cr_expect_eq(s.refused.record_seconds_uid, 1);
	s.recordings = rec(RECORDING_RUNNING, 1000, false, 1, s.recordings);
	cr_expect_not(recordings__allowed(&s, &member, 1, NULL, &ret));
	cr_expect_str_eq(answer.error,
			 "you already have 2 recordings running (at most 2 per user)");
	cr_expect_eq(s.refused.recordings_uid, 1);
	s.recordings = rec(RECORDING_RUNNING, 0, true, 1, s.recordings);
	member.uid = 1001;
	cr_expect_not(recordings__allowed(&s, &member, 1, NULL, &ret));
	cr_expect_str_eq(answer.error, "too many recordings running");
	cr_expect(strstr(answer.hint, "xsprofctl status"), "%s", answer.hint);
	cr_expect_eq(s.refused.recordings_full, 1);
	free_list(s.recordings);
}

Test(recordings_state, a_running_recording_ends_once)
{
	struct svc_recording r = {.state = RECORDING_RUNNING};

	cr_expect(recordings__settle(&r, 0, 5000));
	cr_expect_eq(r.state, RECORDING_DONE);
	cr_expect_eq(r.finished_ns, 5000);
	cr_expect_str_eq(r.error, "");
	/* Done is final: a late timer or exit changes nothing. */
	cr_expect_not(recordings__settle(&r, -EIO, 6000));
	cr_expect_eq(r.state, RECORDING_DONE);
	cr_expect_eq(r.finished_ns, 5000);

	r = (struct svc_recording){.state = RECORDING_RUNNING};
	cr_expect(recordings__settle(&r, -ENOMEM, 7000));
	cr_expect_eq(r.state, RECORDING_FAILED);
	cr_expect_str_eq(r.error, "building the profile failed: Cannot allocate memory");
	cr_expect_not(recordings__settle(&r, 0, 8000));
	cr_expect_eq(r.state, RECORDING_FAILED, "failed is final too");
	/* Finishing one that is not running does nothing (no recording to stop). */
	recordings__finish(NULL, &r);
	cr_expect_eq(r.state, RECORDING_FAILED);
}

/* GET /v1/recordings/ID in each state, and to whom. */
Test(recordings_state, what_a_result_request_answers)
{
	struct service s = {.opts = &opts};
	struct req owner = {.uid = 1000}, other = {.uid = 1001}, root = {.authed = true};
	struct svc_recording *r = rec(RECORDING_RUNNING, 1000, false, 20, NULL);
	struct MHD_Connection *c = (struct MHD_Connection *)&s;

	r->id = 3;
	r->started_ns = 1000000000ull;
	s.recordings = r;
	memset(&answer, 0, sizeof(answer));
	recordings__api_result(&s, &owner, c, "4");
	cr_expect_eq(answer.status, 404);
	recordings__api_result(&s, &owner, c, "3x");
	cr_expect_eq(answer.status, 404, "a number, whole");
	recordings__api_result(&s, &owner, c, "");
	cr_expect_eq(answer.status, 404);
	recordings__api_result(&s, &other, c, "3");
	cr_expect_eq(answer.status, 403);
	cr_expect_str_eq(answer.error, "that recording belongs to another user");

	/* Running: the request waits, until the recording's end and a grace at most. */
	answer.status = 0;
	cr_expect_eq(recordings__api_result(&s, &owner, c, "3"), MHD_YES);
	cr_expect_eq(answer.status, 0, "nothing answered yet");
	cr_expect_eq(answer.suspended, 1);
	cr_expect_eq(answer.deadline_ns,
		     1000000000ull + 20 * 1000000000ull + WAIT_GRACE_S * 1000000000ull);
	cr_expect_eq(owner.waiting, r);
	for (int i = 1; i < MAX_WAITERS; i++)
		recordings__api_result(&s, &root, c, "3");
	cr_expect_eq(r->nr_waiters, MAX_WAITERS);
	recordings__api_result(&s, &root, c, "3");
	cr_expect_eq(answer.status, 429, "the waiters are capped");
	/* Its end wakes every waiter once. */
	recordings__wake_waiters(&s, r);
	cr_expect_eq(answer.resumed, MAX_WAITERS);
	cr_expect_eq(r->nr_waiters, 0);

	/* Failed: the error, said; done: the profile in its format's type. */
	recordings__settle(r, -EIO, 2);
	recordings__api_result(&s, &owner, c, "3");
	cr_expect_eq(answer.status, 500);
	cr_expect_str_eq(answer.error, "building the profile failed: Input/output error");
	r->state = RECORDING_DONE;
	r->format = OUTPUT_FOLDED;
	r->result = strdup("main;work 3\n");
	r->result_len = strlen(r->result);
	recordings__api_result(&s, &root, c, "3");
	cr_expect_eq(answer.status, 200);
	cr_expect_str_eq(answer.body, "main;work 3\n");
	cr_expect_str_eq(answer.type, reply__content_type(OUTPUT_FOLDED));
	free_list(s.recordings);
}

static unsigned int ids(const struct service *s, unsigned int *out)
{
	unsigned int n = 0;

	for (const struct svc_recording *r = s->recordings; r; r = r->next)
		out[n++] = r->id;
	return n;
}

Test(recordings_state, finished_ones_are_let_go)
{
	const uint64_t s_ns = 1000000000ull, now = 10000 * s_ns;
	struct service s = {.opts = &opts};
	unsigned int kept[64], n;

	/* Newest first, as the service keeps them. */
	for (unsigned int id = 1; id <= 6; id++) {
		s.recordings = rec(RECORDING_DONE, 1000, false, 1, s.recordings);
		s.recordings->id = id;
		s.recordings->finished_ns = now - 10 * s_ns;
	}
	s.recordings = rec(RECORDING_RUNNING, 1000, false, 1, s.recordings);
	s.recordings->id = 7;
	recordings__prune_at(&s, now);
	/* A member's finished ones: FINISHED_PER_UID, the newest; a running one stays. */
	n = ids(&s, kept);
	cr_assert_eq(n, 1 + FINISHED_PER_UID);
	cr_expect_eq(kept[0], 7);
	cr_expect_eq(kept[1], 6);
	cr_expect_eq(kept[FINISHED_PER_UID], 3);

	/* Past FINISHED_KEEP_S: gone, unless a client waits on it. */
	for (struct svc_recording *r = s.recordings->next; r; r = r->next)
		r->finished_ns = now - FINISHED_KEEP_S * s_ns - 1;
	s.recordings->next->nr_waiters = 1;
	recordings__prune_at(&s, now);
	n = ids(&s, kept);
	cr_assert_eq(n, 2);
	cr_expect_eq(kept[0], 7);
	cr_expect_eq(kept[1], 6, "a waited-on result stays");

	/* Root's are not a member's: only MAX_FINISHED in all bounds them. */
	free_list(s.recordings);
	s.recordings = NULL;
	for (unsigned int id = 1; id <= MAX_FINISHED + 3; id++) {
		s.recordings = rec(RECORDING_DONE, 0, true, 1, s.recordings);
		s.recordings->id = id;
		s.recordings->finished_ns = now;
	}
	recordings__prune_at(&s, now);
	n = ids(&s, kept);
	cr_expect_eq(n, MAX_FINISHED);
	cr_expect_eq(kept[n - 1], 4, "the oldest went");
	free_list(s.recordings);
}

Test(recordings_gpu, a_recording_of_processes_takes_what_they_launched)
{
	struct launch_event ev[4] = {{.tgid = 40}, {.tgid = 40}, {.tgid = 20}, {.tgid = 50}};
	struct svc_recording r = {.nr_pids = 2, .pids = {30, 10}};

	recordings__launch_pids(&r, ev, 4);
	cr_assert_not_null(r.launch_pids);
	cr_assert_eq(r.nr_launch_pids, 5);
	for (size_t i = 1; i < r.nr_launch_pids; i++)
		cr_expect_lt(r.launch_pids[i - 1], r.launch_pids[i], "sorted, each once");
	for (uint32_t pid = 1; pid <= 60; pid++)
		cr_expect_eq(recordings__accepts(&r, pid),
			     pid == 10 || pid == 20 || pid == 30 || pid == 40 || pid == 50,
			     "pid %u", pid);
	/* Again at the end: the list is made anew, not grown. */
	recordings__launch_pids(&r, NULL, 0);
	cr_expect_eq(r.nr_launch_pids, 2);
	cr_expect_not(recordings__accepts(&r, 40));
	free(r.launch_pids);

	/* The whole machine: any process's. */
	r = (struct svc_recording){0};
	cr_expect(recordings__accepts(&r, 12345));
}
