/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a session's profile weighs (--mode, a recording's "mode") and the root level it is
 * grouped by (--group-by, "group_by"), with the names the command line and the API share.
 * Inline, so the option parser uses them without linking the session stage.
 */
#ifndef XSPROF_DAEMON_SESSION_SESSION_MODE_H
#define XSPROF_DAEMON_SESSION_SESSION_MODE_H

#include <errno.h>
#include <stdbool.h>
#include <string.h>

enum session_mode {
	SESSION_MODE_CPU = 0, /* samples of running threads */
	SESSION_MODE_OFFCPU,  /* time threads spent off the CPU (blocked, or runnable) */
	SESSION_MODE_WALL,    /* both, in microseconds: each thread's wall time */
};

enum session_group {
	SESSION_GROUP_NONE = 0,
	SESSION_GROUP_UNIT,	   /* the systemd unit (from the cgroup) */
	SESSION_GROUP_CONTAINER,   /* the container (from the cgroup) */
	SESSION_GROUP_COMM,	   /* the process's name */
	SESSION_GROUP_RANGE,	   /* the innermost NVTX range the thread was in */
	SESSION_GROUP_OUTER_RANGE, /* the outermost one */
	SESSION_GROUP_RANK,	   /* the rank its launcher gave it (RANK, SLURM_PROCID, ...) */
	SESSION_GROUP_JOB,	   /* the job id (TORCHELASTIC_RUN_ID, SLURM_JOB_ID) */
};

static inline bool session_group__is_range(enum session_group g)
{
	return g == SESSION_GROUP_RANGE || g == SESSION_GROUP_OUTER_RANGE;
}

/* "cpu", "offcpu", "wall". */
static inline const char *session_mode__name(enum session_mode m)
{
	switch (m) {
	case SESSION_MODE_OFFCPU:
		return "offcpu";
	case SESSION_MODE_WALL:
		return "wall";
	default:
		return "cpu";
	}
}

/* 0, or -EINVAL for a name that is none of session_mode__name's. */
static inline int session_mode__from_name(const char *name, enum session_mode *ret_mode)
{
	for (enum session_mode m = SESSION_MODE_CPU; m <= SESSION_MODE_WALL; m++) {
		if (!strcmp(name, session_mode__name(m))) {
			*ret_mode = m;
			return 0;
		}
	}
	return -EINVAL;
}

/* "unit", "container", "comm", "range", "outer-range", "rank", "job"; "" for none. */
static inline const char *session_group__name(enum session_group g)
{
	static const char *const names[] = {"",	     "unit",	    "container", "comm",
					    "range", "outer-range", "rank",	 "job"};

	return g <= SESSION_GROUP_JOB ? names[g] : "";
}

/* 0, or -EINVAL for a name that is none of session_group__name's (none included). */
static inline int session_group__from_name(const char *name, enum session_group *ret_group)
{
	for (enum session_group g = SESSION_GROUP_UNIT; g <= SESSION_GROUP_JOB; g++) {
		if (!strcmp(name, session_group__name(g))) {
			*ret_group = g;
			return 0;
		}
	}
	return -EINVAL;
}

#endif
