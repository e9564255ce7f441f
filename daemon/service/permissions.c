// SPDX-License-Identifier: Apache-2.0
/* Who may profile which process, checked at each request and again while it runs. */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

#include "daemon/base/clock.h"
#include "daemon/base/proc_stat.h"
#include "daemon/service/internal.h"

static int permissions__pid_owner(pid_t pid, uid_t *ret)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st))
		return -errno;
	*ret = st.st_uid;
	return 0;
}

/* Owner and start time (clock ticks since boot) of pid: who it is now, and which process. */
int permissions__pid_identity(pid_t pid, uid_t *ret_uid, uint64_t *ret_start)
{
	struct proc_stat ps;
	int err = proc_stat__read(NULL, pid, &ps);

	if (err)
		return err;
	*ret_uid = ps.uid;
	*ret_start = ps.start_ticks;
	return 0;
}

/* 0, or an error already replied through *ret (for the caller to return). */
bool permissions__may_profile(struct req *q, struct MHD_Connection *c, const pid_t *pids, int n,
			      enum MHD_Result *ret)
{
	char msg[160];
	uid_t owner = 0;

	for (int i = 0; i < n; i++) {
		if (permissions__pid_owner(pids[i], &owner)) {
			snprintf(msg, sizeof(msg), "no such process: %d", (int)pids[i]);
			*ret = reply__error(c, 404, msg, "check the pid with ps");
			return false;
		}
		if (!q->authed && owner != q->uid) {
			snprintf(msg, sizeof(msg), "process %d belongs to another user",
				 (int)pids[i]);
			*ret = reply__error(c, 403, msg,
					    "members of group xsprof may profile only their own "
					    "processes; ask root for others");
			return false;
		}
	}
	if (!n && !q->authed) {
		*ret = reply__error(c, 403, "whole-machine recordings need root",
				    "name your own processes with pids (xsprofctl record --pid)");
		return false;
	}
	return true;
}

/* The member's budget, refilled up to now; the one used longest ago goes for a new member. */
static struct start_budget *start_budget_of(struct service *s, uid_t uid, uint64_t now)
{
	struct start_budget *b = NULL, *oldest = &s->starts[0];

	for (int i = 0; i < MAX_START_USERS && !b; i++) {
		if (s->starts[i].at_ns && s->starts[i].uid == uid)
			b = &s->starts[i];
		else if (s->starts[i].at_ns < oldest->at_ns)
			oldest = &s->starts[i];
	}
	if (!b) {
		b = oldest;
		*b = (struct start_budget){.uid = uid, .tokens = START_BURST, .at_ns = now};
	}
	while (b->tokens < START_BURST && now - b->at_ns >= START_REFILL_NS) {
		b->tokens++;
		b->at_ns += START_REFILL_NS;
	}
	if (b->tokens == START_BURST)
		b->at_ns = now;
	return b;
}

bool permissions__start_allowed(struct service *s, struct req *q, struct MHD_Connection *c,
				enum MHD_Result *ret)
{
	uint64_t now = clock__mono_ns();
	struct start_budget *b;
	char msg[160];

	if (q->authed)
		return true;
	b = start_budget_of(s, q->uid, now);
	if (b->tokens) {
		b->tokens--;
		return true;
	}
	s->refused.start_rate++;
	snprintf(msg, sizeof(msg),
		 "too many attachments and recordings started: %d at once, then one per %llu s "
		 "per user; the next in %.1f s",
		 START_BURST, START_REFILL_NS / 1000000000ull,
		 (double)(b->at_ns + START_REFILL_NS - now) / 1e9);
	*ret = reply__error(c, 429, msg, "wait, then try again");
	return false;
}

/*
 * Ownership, again: whether pid is still the process of uid that started at start (what a
 * recording or attachment took it as). A process that execs a setuid program, or a pid reused
 * by another user's process, is no longer uid's; an exited one still counts as its (nothing
 * more is sampled of it). Only decides: the recordings and attachments act on it.
 */
bool permissions__still_owns(uid_t uid, pid_t pid, uint64_t start)
{
	uint64_t now_start;
	uid_t owner;
	int err = permissions__pid_identity(pid, &owner, &now_start);

	if (err == -ENOENT || err == -ESRCH)
		return true;
	return !err && owner == uid && now_start == start;
}
