/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The processes a --job/--rank filter (base/job_filter.h) keeps in a session's profile, asked
 * by pid at its end (session_view.keep): each process's label set (host_labels.h, read while
 * it ran) against the filter. Each pid's answer is remembered and counted once, for the
 * report of how many processes the filter kept and left out (at most JOB_KEEP_MAX_PROCS are
 * remembered; past that, asked again each time and not counted).
 */
#ifndef XSPROF_DAEMON_SESSION_JOB_KEEP_H
#define XSPROF_DAEMON_SESSION_JOB_KEEP_H

#include <stdbool.h>
#include <stdint.h>

#define JOB_KEEP_MAX_PROCS 65536

struct host_labels;
struct job_filter;

struct job_keep;

/* f is copied; labels must outlive the keep. NULL with errno set. */
struct job_keep *job_keep__new(const struct job_filter *f, struct host_labels *labels);
void job_keep__free(struct job_keep *k);

/* Whether process pid is kept: a fold_accept_fn, and profile__take's accept. */
bool job_keep__accepts(void *k, uint32_t pid);

struct job_keep_stats {
	uint64_t kept, left_out; /* processes asked about */
	uint64_t uncounted;	 /* answers past JOB_KEEP_MAX_PROCS, not remembered */
};
void job_keep__stats(const struct job_keep *k, struct job_keep_stats *ret);

#endif
