// SPDX-License-Identifier: Apache-2.0
/*
 * The service's permissions alone (daemon/service/permissions.c, compiled in with the HTTP
 * answer replaced by a recorder): who may profile which process (404 gone, 403 another user's,
 * 403 a member's whole-machine recording), a member's start budget (a burst, then 429 saying
 * when the next one comes; each user their own; root never limited), and whether a process is
 * still the one a recording took it as (owner and start time).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/service/internal.h"

static unsigned int last_status;
static char last_error[256], last_hint[256];

/* The answer the service would send, recorded. */
enum MHD_Result reply__error(struct MHD_Connection *c, unsigned int status, const char *error,
			     const char *hint)
{
	(void)c;
	last_status = status;
	snprintf(last_error, sizeof(last_error), "%s", error);
	snprintf(last_hint, sizeof(last_hint), "%s", hint ? hint : "");
	return MHD_YES;
}

Test(permissions, who_may_profile_what)
{
	struct req member = {.uid = 4242}, root = {.authed = true};
	pid_t init = 1, self = getpid(), gone = 4194000;
	enum MHD_Result ret;

	/* The test runs as root: a member may not profile root's processes. */
	cr_assert_eq(getuid(), 0, "run as root");
	cr_expect_not(permissions__may_profile(&member, NULL, &init, 1, &ret));
	cr_expect_eq(last_status, 403);
	cr_expect_str_eq(last_error, "process 1 belongs to another user");
	cr_expect(strstr(last_hint, "only their own processes"), "%s", last_hint);
	cr_expect_not(permissions__may_profile(&member, NULL, &gone, 1, &ret));
	cr_expect_eq(last_status, 404);
	cr_expect_str_eq(last_error, "no such process: 4194000");
	cr_expect_not(permissions__may_profile(&member, NULL, NULL, 0, &ret));
	cr_expect_eq(last_status, 403);
	cr_expect_str_eq(last_error, "whole-machine recordings need root");
	/* Root may; a member may profile their own (root's own here: uid 0). */
	last_status = 0;
	cr_expect(permissions__may_profile(&root, NULL, &init, 1, &ret));
	cr_expect(permissions__may_profile(&root, NULL, NULL, 0, &ret));
	member.uid = 0;
	cr_expect(permissions__may_profile(&member, NULL, &self, 1, &ret));
	cr_expect_eq(last_status, 0, "nothing refused");
}

Test(permissions, a_members_starts_are_budgeted)
{
	struct service *s = calloc(1, sizeof(*s));
	struct req a = {.uid = 1001}, b = {.uid = 1002}, root = {.authed = true};
	enum MHD_Result ret;

	cr_assert_not_null(s);
	for (int i = 0; i < START_BURST; i++)
		cr_expect(permissions__start_allowed(s, &a, NULL, &ret), "start %d of the burst",
			  i);
	cr_expect_not(permissions__start_allowed(s, &a, NULL, &ret));
	cr_expect_eq(last_status, 429);
	cr_expect(strstr(last_error, "too many attachments and recordings started: 6 at once, then "
				     "one per 10 s per user; the next in"),
		  "%s", last_error);
	cr_expect_eq(s->refused.start_rate, 1, "the refusal is counted");
	/* Another user has a budget of their own; root has none. */
	cr_expect(permissions__start_allowed(s, &b, NULL, &ret));
	for (int i = 0; i < 3 * START_BURST; i++)
		cr_expect(permissions__start_allowed(s, &root, NULL, &ret));
	cr_expect_eq(s->refused.start_rate, 1);
	/* A refill: a's oldest start taken a period ago gives one back. */
	for (int i = 0; i < MAX_START_USERS; i++)
		if (s->starts[i].uid == a.uid)
			s->starts[i].at_ns -= START_REFILL_NS;
	cr_expect(permissions__start_allowed(s, &a, NULL, &ret));
	cr_expect_not(permissions__start_allowed(s, &a, NULL, &ret));
	free(s);
}

Test(permissions, a_process_is_still_the_one_taken)
{
	uid_t uid = 0;
	uint64_t start = 0;

	cr_assert_eq(permissions__pid_identity(getpid(), &uid, &start), 0);
	cr_expect_eq(uid, getuid());
	cr_expect(permissions__still_owns(uid, getpid(), start));
	cr_expect_not(permissions__still_owns(uid + 1, getpid(), start), "another user's now");
	cr_expect_not(permissions__still_owns(uid, getpid(), start + 1),
		      "a pid reused by another process");
	cr_expect(permissions__still_owns(uid, 4194000, 1), "an exited one still counts as its");
}
